// The hunt's search (harness/hunt.h) on planted objectives, where the answer is known by
// construction: two outputs, each scored by how close four of the candidate's bytes are to a
// hidden target (1 at the target). Random sampling only gets near it by luck; the hunt must get
// closer than twice as many random candidates do.
#include "harness/hunt.h"

#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

namespace opgate::hunt {
namespace {

constexpr uint8_t kTargetA[] = {17, 200, 3, 99};
constexpr uint8_t kTargetB[] = {250, 0, 128, 64};

// 1 - (sum of |byte - target|) / (4 * 255) over bytes [at, at + 4); candidates shorter than 8 bytes
// decode to nothing (as invalid calls do).
double closeness(const Bytes& b, size_t at, const uint8_t* target) {
  double distance = 0;
  for (size_t i = 0; i < 4; ++i) distance += std::abs(int(b[at + i]) - int(target[i]));
  return 1.0 - distance / (4 * 255.0);
}

std::optional<Scores> planted(const Bytes& b) {
  if (b.size() < 8) return std::nullopt;
  return Scores{{"a", closeness(b, 0, kTargetA)}, {"b", closeness(b, 4, kTargetB)}};
}

SearchResult run(uint64_t seed, bool hunt, int64_t evaluations) {
  SearchOptions opt;
  opt.seed = seed;
  opt.hunt = hunt;
  opt.evaluations = evaluations;
  opt.max_len = 32;
  return search(planted, opt);
}

TEST(Hunt, BeatsTwiceAsManyRandomCandidatesOnAPlantedObjective) {
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    const SearchResult hunted = run(seed, true, 1000);
    const SearchResult random = run(seed, false, 1000);  // 2000 random candidates
    for (const char* out : {"a", "b"}) {
      EXPECT_GT(hunted.best.at(out).score, random.best.at(out).score) << "seed " << seed << " output " << out;
      // 4 exact bytes of 256 values each: random candidates of 2000 do not find them.
      EXPECT_LT(random.best.at(out).score, 1.0) << "seed " << seed;
      EXPECT_GE(hunted.best.at(out).score, 0.99) << "seed " << seed << " output " << out;
    }
  }
}

TEST(Hunt, TheBestOfEachOutputIsWhatItsBytesScore) {
  const SearchResult r = run(7, true, 300);
  for (const auto& [name, best] : r.best) {
    const auto scores = planted(best.bytes);
    ASSERT_TRUE(scores.has_value()) << name;
    EXPECT_EQ(scores->at(name), best.score) << name;
    EXPECT_GE(best.score, r.random.at(name).score) << name;  // the hunt starts from the random phase
  }
}

TEST(Hunt, CountsEvaluationsAndInvalidCandidates) {
  const SearchResult r = run(3, true, 200);
  EXPECT_EQ(r.random_evals, 200);
  EXPECT_EQ(r.hunt_evals, 200);
  EXPECT_GT(r.invalid, 0);  // random lengths 1..32: about 7 of 32 are shorter than 8 bytes
  EXPECT_LT(r.invalid, 400);
}

TEST(Hunt, TheSameSeedGivesTheSameSearch) {
  const SearchResult a = run(11, true, 300), b = run(11, true, 300);
  for (const auto& [name, best] : a.best) EXPECT_EQ(best.bytes, b.best.at(name).bytes) << name;
}

TEST(Hunt, MutationsStayWithinTheLengthAndChangeTheCandidate) {
  uint64_t counter = 0;
  const Bytes parent(16, 0x55), other(16, 0xaa);
  int changed = 0;
  for (int k = 0; k < 500; ++k) {
    const Bytes child = mutate(parent, other, 9, counter, 20);
    ASSERT_LE(child.size(), 20u);
    ASSERT_FALSE(child.empty());
    changed += child != parent;
  }
  EXPECT_GT(changed, 400);  // a mutation may undo itself (a byte copied onto its equal), rarely
}

}  // namespace
}  // namespace opgate::hunt
