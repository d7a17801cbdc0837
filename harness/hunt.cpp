#include "harness/hunt.h"

#include <algorithm>

#include "core/rng.h"

namespace opgate::hunt {
namespace {

constexpr size_t kKeptPerOutput = 8;  // the corpus: each output's best candidates
constexpr uint8_t kInteresting[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xfe, 0xff};

class Draws {
 public:
  Draws(uint64_t seed, uint64_t& counter) : rng_(seed, "hunt"), counter_(counter) {}
  int64_t integer(int64_t lo, int64_t hi) { return rng_.integer(counter_++, lo, hi); }
  size_t index(size_t n) { return static_cast<size_t>(integer(0, static_cast<int64_t>(n) - 1)); }

 private:
  CounterRng rng_;
  uint64_t& counter_;
};

void mutate_once(Bytes& b, const Bytes& other, Draws& d, size_t max_len) {
  if (b.empty()) b.push_back(0);
  const size_t at = d.index(b.size());
  switch (d.integer(0, 7)) {
    case 0: b[at] ^= static_cast<uint8_t>(1u << d.integer(0, 7)); break;
    case 1: b[at] = static_cast<uint8_t>(d.integer(0, 255)); break;
    case 2: b[at] = static_cast<uint8_t>(b[at] + d.integer(-8, 8)); break;
    case 3: b[at] = kInteresting[d.index(sizeof kInteresting)]; break;
    case 4:
      if (b.size() < max_len) b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(d.integer(0, 255)));
      break;
    case 5: {
      const size_t n = std::min<size_t>(b.size() - at, static_cast<size_t>(d.integer(1, 8)));
      if (b.size() > n) b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
      break;
    }
    case 6: {  // a chunk of the other candidate, at the same offset (its choices line up with ours)
      if (other.size() <= at) break;
      const size_t n = std::min<size_t>(other.size() - at, static_cast<size_t>(d.integer(1, 16)));
      if (b.size() < at + n) b.resize(at + n);
      std::copy_n(other.begin() + static_cast<std::ptrdiff_t>(at), n, b.begin() + static_cast<std::ptrdiff_t>(at));
      break;
    }
    default: b[at] = b[d.index(b.size())]; break;
  }
  if (b.size() > max_len) b.resize(max_len);
}

Bytes random_candidate(uint64_t seed, uint64_t& counter, size_t max_len) {
  Draws d(seed, counter);
  Bytes b(static_cast<size_t>(d.integer(1, static_cast<int64_t>(max_len))));
  for (auto& x : b) x = static_cast<uint8_t>(d.integer(0, 255));
  return b;
}

// The search state: each output's best candidates (best first).
class Corpus {
 public:
  // Takes the candidate's scores into each output's kept candidates and best.
  void offer(const Bytes& bytes, const Scores& scores, std::map<std::string, Best>& best) {
    for (const auto& [name, score] : scores) {
      auto& kept = kept_[name];
      kept.push_back({score, bytes});
      std::stable_sort(kept.begin(), kept.end(), [](const Best& a, const Best& b) { return a.score > b.score; });
      if (kept.size() > kKeptPerOutput) kept.pop_back();
      Best& b = best[name];
      if (score > b.score) b = {score, bytes};
    }
  }
  bool empty() const { return kept_.empty(); }
  // A parent: one output at random, one of its kept candidates, the better ones more often.
  const Bytes& pick(Draws& d) const {
    auto it = kept_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(d.index(kept_.size())));
    const auto& kept = it->second;
    const size_t i = std::min(d.index(kept.size()), d.index(kept.size()));
    return kept[i].bytes;
  }

 private:
  std::map<std::string, std::vector<Best>> kept_;
};

using Clock = std::chrono::steady_clock;

bool phase_over(int64_t done, const SearchOptions& opt, Clock::time_point start) {
  if (done >= opt.evaluations) return true;
  return opt.seconds > 0 && std::chrono::duration<double>(Clock::now() - start).count() >= opt.seconds;
}

}  // namespace

Bytes mutate(const Bytes& parent, const Bytes& other, uint64_t seed, uint64_t& counter, size_t max_len) {
  Draws d(seed, counter);
  Bytes b = parent;
  const int64_t n = d.integer(1, 4);
  for (int64_t k = 0; k < n; ++k) mutate_once(b, other, d, max_len);
  return b;
}

SearchResult search(const Evaluate& evaluate, const SearchOptions& opt) {
  SearchResult out;
  Corpus corpus;
  uint64_t counter = 0;
  auto try_candidate = [&](const Bytes& b) {
    std::optional<Scores> scores = evaluate(b);
    if (!scores) {
      ++out.invalid;
      return;
    }
    corpus.offer(b, *scores, out.best);
  };
  const auto random_start = Clock::now();
  while (!phase_over(out.random_evals, opt, random_start)) {
    try_candidate(random_candidate(opt.seed, counter, opt.max_len));
    ++out.random_evals;
  }
  out.random = out.best;
  const auto hunt_start = Clock::now();
  while (!phase_over(out.hunt_evals, opt, hunt_start)) {
    if (!opt.hunt || corpus.empty()) {
      try_candidate(random_candidate(opt.seed, counter, opt.max_len));
    } else {
      Draws d(opt.seed, counter);
      const Bytes& parent = corpus.pick(d);
      const Bytes other = corpus.pick(d);
      try_candidate(mutate(parent, other, opt.seed, counter, opt.max_len));
    }
    ++out.hunt_evals;
  }
  return out;
}

}  // namespace opgate::hunt
