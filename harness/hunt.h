// `opgate hunt`: a search for the valid inputs that drive each output's budget_used (the worst
// |error| / allowance of a case; 1 is at the tolerance) as high as it goes. A phase of random
// candidates measures what random generation reaches; the hunt then mutates the best candidates
// (per output) and keeps what raises any output's maximum, as a coverage-guided fuzzer keeps what
// raises coverage. On the emulator, which plays a correct kernel, a case that fails is a false
// alarm (an unsound bound); on a device, the hunt finds where a kernel comes closest to failing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace opgate::hunt {

using Bytes = std::vector<uint8_t>;
// Per output: budget_used of one candidate.
using Scores = std::map<std::string, double>;
// Scores of a candidate, or nullopt when its bytes decode to no valid case.
using Evaluate = std::function<std::optional<Scores>(const Bytes&)>;

struct SearchOptions {
  int64_t evaluations = 1000;  // per phase: random, then the hunt
  double seconds = 0;          // > 0: each phase also ends after this long
  bool hunt = true;            // false: the second phase is random too (the peer of the tests)
  uint64_t seed = 1;
  size_t max_len = 192;        // longest candidate in bytes
};

struct Best {
  double score = -1;
  Bytes bytes;
};

struct SearchResult {
  std::map<std::string, Best> random;  // per output: the best of the random phase
  std::map<std::string, Best> best;    // per output: the best of both phases
  int64_t random_evals = 0, hunt_evals = 0, invalid = 0;  // invalid: candidates decoding to no case
};

SearchResult search(const Evaluate& evaluate, const SearchOptions& opt);

// One to four stacked byte mutations of `parent` (bit flips, random and "interesting" bytes, small
// increments, insertions, erasures, a chunk spliced from `other`), at most `max_len` bytes.
// `counter` numbers the draws of `seed`'s random stream.
Bytes mutate(const Bytes& parent, const Bytes& other, uint64_t seed, uint64_t& counter, size_t max_len);

}  // namespace opgate::hunt
