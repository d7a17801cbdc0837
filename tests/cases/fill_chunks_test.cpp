// The chunked, parallel fills: every element written once through store_elements, and the inputs of
// every ci case of every operator byte-identical at 1, 2 and 7 threads and on every RNG
// instruction-set path (values are functions of the element index, so nothing may depend on the
// split of the work or on the vector width).

#include "cases/fill_chunks.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cases/registry.h"
#include "core/case.h"
#include "core/fill_override.h"
#include "core/parallel.h"

namespace opgate {
namespace {

TEST(FillChunks, every_element_once_in_chunks_of_at_most_the_chunk_size) {
  const int64_t n = 3 * cases::kFillChunk + 17;  // three full chunks and a tail
  Tensor t = Tensor::zeros(DType::kF32, {n});
  std::vector<int> seen(static_cast<size_t>(n), 0);
  std::mutex m;
  cases::fill_chunks(t, [&](int64_t first, int64_t count, double* out) {
    EXPECT_LE(count, cases::kFillChunk);
    EXPECT_EQ(first % cases::kFillChunk, 0);
    std::lock_guard<std::mutex> lock(m);
    for (int64_t i = 0; i < count; ++i) {
      ++seen[static_cast<size_t>(first + i)];
      out[i] = static_cast<double>(first + i) + 0.25;
    }
  });
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(seen[static_cast<size_t>(i)], 1) << i;
    ASSERT_EQ(t.get(i), static_cast<double>(i) + 0.25) << i;  // exact in fp32 below 2^22
  }
}

TEST(FillChunks, empty_tensor_calls_nothing) {
  Tensor t = Tensor::zeros(DType::kBF16, {0, 5});
  bool called = false;
  cases::fill_chunks(t, [&](int64_t, int64_t, double*) { called = true; });
  EXPECT_FALSE(called);
}

std::map<std::string, std::vector<uint8_t>> input_bytes(const Problem& problem, const Case& c) {
  auto in = fill_case_inputs(problem, c);
  EXPECT_TRUE(in.has_value()) << c.id;
  std::map<std::string, std::vector<uint8_t>> out;
  if (!in.has_value()) return out;
  for (const auto& [name, t] : *in) out[name].assign(t.data(), t.data() + t.nbytes());
  return out;
}

TEST(FillChunks, ci_inputs_do_not_depend_on_threads_or_rng_path) {
  const int64_t saved_threads = math::threads();
  const RngPath saved_path = rng_path();
  int compared = 0;
  for (const OpInfo& op : all_ops()) {
    auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + op.stem + "/ci.json");
    ASSERT_TRUE(cases.has_value()) << op.stem;
    for (const Case& c : *cases) {
      auto problem = make_problem(c);
      ASSERT_TRUE(problem.has_value()) << c.id;
      math::set_threads(1);
      set_rng_path(RngPath::kScalar);
      const auto expected = input_bytes(**problem, c);
      for (const int64_t threads : {2, 7}) {
        for (RngPath path : rng_paths()) {
          math::set_threads(threads);
          set_rng_path(path);
          EXPECT_EQ(input_bytes(**problem, c), expected) << c.id << " threads " << threads << " " << rng_path_name(path);
        }
      }
      ++compared;
    }
  }
  math::set_threads(saved_threads);
  set_rng_path(saved_path);
  EXPECT_GT(compared, 20);
}

}  // namespace
}  // namespace opgate
