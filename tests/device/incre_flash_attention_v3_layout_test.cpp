// Tests of the IncreFlashAttentionV3 device images (attention-and-ffn.md §1.3): where pack puts each
// KV row for every layout, the tensor list and both page caches, and what it poisons. Expected
// positions are worked out by hand from the §1.3 formulas in each comment.
#include "device/layout/incre_flash_attention_v3.h"

#include <gtest/gtest.h>

#include "tests/device/incre_flash_attention_v3_testing.h"

namespace opgate::layout::incre_flash_attention_v3 {
namespace {

using incre_flash_attention_v3_testing::ifa_cases::Builder;
using incre_flash_attention_v3_testing::make_inputs;
using incre_flash_attention_v3_testing::values_of;

// Canonical key (B, N2, S, D = 1) holding 100*b + 10*n2 + t, so every row names its origin.
std::vector<double> tagged(int64_t b_n, int64_t n2_n, int64_t s_n) {
  std::vector<double> v;
  for (int64_t b = 0; b < b_n; ++b) {
    for (int64_t n2 = 0; n2 < n2_n; ++n2) {
      for (int64_t t = 0; t < s_n; ++t) v.push_back(static_cast<double>(100 * b + 10 * n2 + t));
    }
  }
  return v;
}

TEST(IncreFlashAttentionV3Layout, query_and_output_share_one_memory_order) {
  // S = 1: BSH (B, 1, N*D), BNSD (B, N, 1, D) and BSND (B, 1, N, D) all store (b, n, d) at
  // (b*N + n)*D + d, so the image is the canonical bytes under another shape.
  for (const char* lay : {"BSH", "BNSD", "BSND"}) {
    const auto p = Builder().batch(2).heads(3).head_dim(2).seq(1).layout(lay).build().first;
    std::vector<double> q(12);
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<double>(i);
    const TensorMap images = pack(p, make_inputs(p, {{"query", q}}));
    EXPECT_EQ(images.at("query").shape(), ref::incre_flash_attention_v3::specs(p).at("query").shape) << lay;
    EXPECT_EQ(values_of(images.at("query")), q) << lay;
  }
}

TEST(IncreFlashAttentionV3Layout, bsh_and_bsnd_are_t_major) {
  // B = 1, N2 = 2, S = 3, D = 1: BNSD order (n2, t) = 0, 1, 2, 10, 11, 12; BSH/BSND order (t, n2):
  // row (t*N2 + n2) -> 0, 10, 1, 11, 2, 12.
  for (const char* lay : {"BSH", "BSND", "BNSD"}) {
    const auto p = Builder().batch(1).heads(2).head_dim(1).seq(3).layout(lay).build().first;
    const TensorMap images = pack(p, make_inputs(p, {{"key", tagged(1, 2, 3)}, {"value", tagged(1, 2, 3)}}));
    const std::vector<double> want = std::string(lay) == "BNSD" ? std::vector<double>{0, 1, 2, 10, 11, 12}
                                                                : std::vector<double>{0, 10, 1, 11, 2, 12};
    EXPECT_EQ(values_of(images.at("key")), want) << lay;
    EXPECT_EQ(values_of(images.at("value")), want) << lay;
  }
}

TEST(IncreFlashAttentionV3Layout, positions_past_the_length_are_poisoned) {
  // S = 3, L = 1: rows t = 1, 2 are never read. Key poison points along sign(q) of the group's first
  // head (q = [-1, 2] -> [-64, 64]); value poison is 4096.
  const auto p = Builder().batch(1).heads(1).head_dim(2).seq(3).layout("BNSD").lengths({1}).build().first;
  const TensorMap images = pack(p, make_inputs(p, {{"query", {-1, 2}}, {"key", {1, 2, 3, 4, 5, 6}}, {"value", {1, 2, 3, 4, 5, 6}}}));
  EXPECT_EQ(values_of(images.at("key")), (std::vector<double>{1, 2, -64, 64, -64, 64}));
  EXPECT_EQ(values_of(images.at("value")), (std::vector<double>{1, 2, 4096, 4096, 4096, 4096}));
}

TEST(IncreFlashAttentionV3Layout, tensor_list_gets_one_tensor_per_batch) {
  // kvSeqLens [2, 3], BSH, N2 = 1, D = 1: key.0 is (1, 2, 1) with rows 0, 1; key.1 is (1, 3, 1) with
  // rows 100, 101, 102 (canonical capacity 3, so batch 0's canonical row 2 is not packed).
  const auto p = Builder().batch(2).heads(1).head_dim(1).layout("BSH").list({2, 3}).build().first;
  const TensorMap images = pack(p, make_inputs(p, {{"key", tagged(2, 1, 3)}, {"value", tagged(2, 1, 3)}}));
  EXPECT_EQ(images.count("key"), 0u);
  EXPECT_EQ(images.at("key.0").shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(values_of(images.at("key.0")), (std::vector<double>{0, 1}));
  EXPECT_EQ(values_of(images.at("value.1")), (std::vector<double>{100, 101, 102}));
}

// Two batches with L = [20, 5], blockSize 16, N2 = 2, D = 1 and the hand-made table
// [[3, 0], [1, -1]] over 4 blocks; block 2 is used by nobody.
struct PagedCase {
  Params p;
  TensorMap images;
};

PagedCase paged(bool four_d) {
  const auto p = Builder().batch(2).heads(2).head_dim(1).layout("BNSD").paged(16, four_d).lengths({20, 5})
                     .blocks(2, 4).build().first;
  const TensorMap in = make_inputs(p, {{"query", {1, 1, 1, 1}}, {"key", tagged(2, 2, 32)}, {"value", tagged(2, 2, 32)},
                                       {"blocktable", {3, 0, 1, -1}}});
  return {p, pack(p, in)};
}

TEST(IncreFlashAttentionV3Layout, paged_3d_cache_rows) {
  // 3-D cache (blocknum, blockSize, H2): element (blk*16 + r)*N2 + n2 (D = 1).
  const PagedCase c = paged(false);
  const Tensor& k = c.images.at("key");
  EXPECT_EQ(k.shape(), (Shape{4, 16, 2}));
  // b 0, t 3 -> table[0][0] = 3, r 3: rows (51)*2 + n2 -> 3 and 13.
  EXPECT_EQ(k.get((3 * 16 + 3) * 2 + 0), 3);
  EXPECT_EQ(k.get((3 * 16 + 3) * 2 + 1), 13);
  // b 0, t 19 -> table[0][1] = 0, r 3 -> row (0*16 + 3)*2 + 1 = 7 holds 10 + 19 = 29.
  EXPECT_EQ(k.get(7), 29);
  // b 1, t 4 -> table[1][0] = 1, r 4 -> (16 + 4)*2 = 40 holds 104.
  EXPECT_EQ(k.get(40), 104);
  // b 0, t 20 (past L = 20, still in block 0) and b 1, t 5 hold the batch's own key poison +64.
  EXPECT_EQ(k.get((0 * 16 + 4) * 2), 64);
  EXPECT_EQ(c.images.at("value").get((16 + 5) * 2 + 1), 4096);
  // Block 2 is unreferenced: shared poison everywhere.
  for (int64_t r = 0; r < 32; ++r) EXPECT_EQ(k.get(2 * 32 + r), 64);
}

TEST(IncreFlashAttentionV3Layout, paged_4d_cache_rows) {
  // 4-D cache (blocknum, N2, blockSize, D): element ((blk*N2 + n2)*16 + r)*D.
  const PagedCase c = paged(true);
  const Tensor& v = c.images.at("value");
  EXPECT_EQ(v.shape(), (Shape{4, 2, 16, 1}));
  // b 0, n2 1, t 17 -> blk 0, r 1 -> (0*2 + 1)*16 + 1 = 17 holds 10 + 17 = 27.
  EXPECT_EQ(v.get(17), 27);
  // b 1, n2 0, t 2 -> blk 1, r 2 -> (1*2 + 0)*16 + 2 = 34 holds 102.
  EXPECT_EQ(v.get(34), 102);
  // b 0, n2 0, t 0 -> blk 3, r 0 -> (3*2)*16 = 96 holds 0.
  EXPECT_EQ(v.get(96), 0);
}

TEST(IncreFlashAttentionV3Layout, optional_tensors_take_their_call_shapes) {
  const auto p = Builder().kv_dtype(DType::kI8).out_dtype(DType::kI8).batch(2).heads(4, 2).head_dim(8).seq(5)
                     .layout("BSND").mask(DType::kBool, 3).antiquant("per-channel", true).set("antiquantShape", "21ND")
                     .quant("per-channel", false).set("quantShape", "1ND").build().first;
  const TensorMap images = pack(p, make_inputs(p, {}));
  EXPECT_EQ(images.at("attenMask").shape(), (Shape{2, 1, 5}));
  EXPECT_EQ(images.at("antiquantScale").shape(), (Shape{2, 1, 2, 8}));
  EXPECT_EQ(images.at("antiquantOffset").shape(), (Shape{2, 1, 2, 8}));
  EXPECT_EQ(images.at("quantScale2").shape(), (Shape{1, 4, 8}));
  EXPECT_EQ(images.count("quantOffset2"), 0u);
  EXPECT_EQ(output_images(p, ref::incre_flash_attention_v3::specs(p)).at("attentionOut").shape, (Shape{2, 1, 4, 8}));
}

}  // namespace
}  // namespace opgate::layout::incre_flash_attention_v3
