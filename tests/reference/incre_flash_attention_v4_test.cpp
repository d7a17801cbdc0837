// Tests of the aclnnIncreFlashAttentionV4 reference: the windows of the V4 docs' formula by hand,
// a hand-computed attention over a shifted window (each value's arithmetic in a comment), and one
// call per kvPaddingSize validate code.
#include "reference/incre_flash_attention_v4.h"

#include <gtest/gtest.h>

#include "cases/incre_flash_attention_v4.h"

namespace opgate::ref::incre_flash_attention_v4 {
namespace {

using Builder = cases::incre_flash_attention_v4::Builder;

// BNSD, B = 2, N = 1, D = 16, S = 8, actualSeqLengths {3, 5}.
Builder two_batches() {
  Builder b;
  b.v3().batch(2).heads(1).head_dim(16).seq(8).layout("BNSD").lengths({3, 5}).scale(1.0);
  return b;
}

std::vector<std::pair<int64_t, int64_t>> spans(const Params& p) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const KvWindow& w : windows(p)) out.emplace_back(w.start, w.length);
  return out;
}

TEST(IncreFlashAttentionV4Reference, windows_end_at_s_minus_padding) {
  // p = 2: end = 8 - 2 = 6; b0: start 6 - 3 = 3; b1: start 6 - 5 = 1.
  const Params p = two_batches().padding(2).build().first;
  EXPECT_EQ(spans(p), (std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {1, 5}}));
  for (const KvWindow& w : windows(p)) EXPECT_EQ(w.aux_start, w.start) << "mask and pse at the keys' positions";
}

TEST(IncreFlashAttentionV4Reference, zero_padding_and_negative_padding_end_at_s) {
  // p = 0 and p = -3 (taken as 0): end = 8; starts 5 and 3.
  for (int64_t pad : {0, -3}) {
    const Params p = two_batches().padding(pad).build().first;
    EXPECT_EQ(spans(p), (std::vector<std::pair<int64_t, int64_t>>{{5, 3}, {3, 5}})) << pad;
  }
}

TEST(IncreFlashAttentionV4Reference, window_before_zero_is_empty) {
  // p = 4: end = 4; b0 start 4 - 3 = 1 (kept); b1 start 4 - 5 = -1 -> empty (all-zero row).
  EXPECT_EQ(spans(two_batches().padding(4).build().first), (std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {0, 0}}));
  // p = 9 > S: end = -1 < 0 -> both empty.
  EXPECT_EQ(spans(two_batches().padding(9).build().first), (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 0}}));
}

TEST(IncreFlashAttentionV4Reference, padding_ignored_without_lengths_list_or_pages) {
  // No actualSeqLengths: L_b = S = 8 and windows [0, 8) whatever p.
  Builder none;
  none.v3().batch(2).heads(1).head_dim(16).seq(8).layout("BNSD");
  EXPECT_EQ(spans(none.padding(2).build().first), (std::vector<std::pair<int64_t, int64_t>>{{0, 8}, {0, 8}}));
  // Tensor list and page attention: right padding, windows [0, L_b).
  Builder list;
  list.v3().batch(2).heads(1).head_dim(16).layout("BNSD").list({6, 7}).lengths({3, 5});
  EXPECT_EQ(spans(list.padding(2).build().first), (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {0, 5}}));
  Builder paged;
  paged.v3().batch(2).heads(1).head_dim(16).layout("BNSD").paged(16).lengths({3, 5});
  EXPECT_EQ(spans(paged.padding(2).build().first), (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {0, 5}}));
  // No kvPaddingSize tensor: V3's windows.
  EXPECT_EQ(spans(two_batches().build().first), (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {0, 5}}));
}

// One batch, N = 1, D = 16, S = 4, L = 2, p = 1: window [1, 3). q = e_0, scale 1; k_t[0] = 8, 0, 0, 8
// and v_t[0] = 100, 2, 4, 100 (other components 0). Inside the window both scores are 0, so
// o[0] = (2 + 4) / 2 = 3; a kernel reading position 0 or 3 (score 8) would get about 100.
TEST(IncreFlashAttentionV4Reference, hand_computed_shifted_window) {
  Builder b;
  b.v3().batch(1).heads(1).head_dim(16).seq(4).layout("BNSD").lengths({2}).scale(1.0);
  const Params p = b.padding(1).build().first;
  TensorMap in;
  for (const auto& [name, spec] : canonical_specs(p)) in[name] = Tensor::zeros(spec.dtype, spec.shape);
  in.at("query").set(0, 1.0);
  const double k0[] = {8, 0, 0, 8}, v0[] = {100, 2, 4, 100};
  for (int64_t t = 0; t < 4; ++t) {
    in.at("key").set(t * 16, k0[t]);
    in.at("value").set(t * 16, v0[t]);
  }
  in.at("kvPaddingSize").set(0, 1.0);
  ASSERT_TRUE(check_data(p, in).is_ok()) << check_data(p, in).to_string();
  const RefOutputs r = reference(p, in);
  EXPECT_DOUBLE_EQ(r.expected.at("attentionOut").get(0), 3.0);
  for (int64_t d = 1; d < 16; ++d) EXPECT_EQ(r.expected.at("attentionOut").get(d), 0.0) << d;
  // p = 3: end = 1, start = -1 -> the all-zero row.
  const Params far = b.padding(3).build().first;
  in.at("kvPaddingSize").set(0, 3.0);
  EXPECT_EQ(reference(far, in).expected.at("attentionOut").get(0), 0.0);
}

TEST(IncreFlashAttentionV4Reference, check_data_wants_the_case_padding) {
  const Params p = two_batches().padding(2).build().first;
  TensorMap in;
  for (const auto& [name, spec] : canonical_specs(p)) in[name] = Tensor::zeros(spec.dtype, spec.shape);
  EXPECT_EQ(check_data(p, in).code(), StatusCode::kInvalidCase) << "holds 0, the case says 2";
  in.at("kvPaddingSize").set(0, 2.0);
  EXPECT_TRUE(check_data(p, in).is_ok());
}

TEST(IncreFlashAttentionV4Reference, validate_codes) {
  const Params p = two_batches().padding(2).build().first;
  EXPECT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).to_string();
  SpecMap s = specs(p);
  s.at("kvPaddingSize").dtype = DType::kI32;
  EXPECT_EQ(validate(p, s).aclnn_code(), 161002) << "kvPaddingSize must be INT64";
  s = specs(p);
  s.at("kvPaddingSize").shape = {2};
  EXPECT_EQ(validate(p, s).aclnn_code(), 561002) << "kvPaddingSize must hold one element";
  s.at("kvPaddingSize").shape = {1, 1};
  EXPECT_EQ(validate(p, s).aclnn_code(), 561002) << "kvPaddingSize must be 1-D";
  // V3's checks still apply, in V3's order: a V3 tiling error with a bad kvPaddingSize dtype is 161002.
  s = specs(p);
  s.at("kvPaddingSize").dtype = DType::kF32;
  s.at("query").shape = {2, 1, 2, 16};  // query S = 2 (V8, 561002 alone)
  EXPECT_EQ(validate(p, s).aclnn_code(), 161002);
  s.at("kvPaddingSize").dtype = DType::kI64;
  EXPECT_EQ(validate(p, s).aclnn_code(), 561002);
}

}  // namespace
}  // namespace opgate::ref::incre_flash_attention_v4
