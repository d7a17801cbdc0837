// Tests of the aclnnIncreFlashAttentionV4 memory images: the slots of each batch's window hold the
// canonical rows, every other slot of a dense KV tensor is poisoned, and kvPaddingSize is passed on.
#include "device/layout/incre_flash_attention_v4.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "cases/incre_flash_attention_v4.h"
#include "device/layout/incre_flash_attention_v3.h"

namespace opgate::layout::incre_flash_attention_v4 {
namespace {

using Builder = cases::incre_flash_attention_v4::Builder;

TensorMap canonical_ramp(const Params& p) {
  TensorMap in;
  for (const auto& [name, spec] : ref::incre_flash_attention_v4::canonical_specs(p)) {
    in[name] = Tensor::zeros(spec.dtype, spec.shape);
  }
  for (const char* name : {"key", "value"}) {
    for (int64_t i = 0; i < in.at(name).numel(); ++i) in.at(name).set(i, static_cast<double>(i % 16 + 1));
  }
  in.at("query").set(0, 1.0);
  in.at("kvPaddingSize").set(0, static_cast<double>(p.kv_padding_size));
  return in;
}

// BNSD, B = 2, N = 1, D = 1, S = 6, L = {2, 3}, p = 1: windows [3, 5) and [2, 5). Canonical rows hold
// t + 1 (batch 1: 7 + t); slots outside the windows hold the poison (key +-64, value 4096).
TEST(IncreFlashAttentionV4Layout, window_slots_kept_others_poisoned) {
  Builder b;
  b.v3().batch(2).heads(1).head_dim(1).seq(6).layout("BNSD").lengths({2, 3});
  const Params p = b.padding(1).build().first;
  const TensorMap img = pack(p, canonical_ramp(p));
  const double x = incre_flash_attention_v3::kPoisonValue;
  std::vector<double> v;
  for (int64_t i = 0; i < 12; ++i) v.push_back(img.at("value").get(i));
  EXPECT_EQ(v, (std::vector<double>{x, x, x, 4, 5, x, x, x, 9, 10, 11, x}));
  for (int64_t i : {0, 1, 2, 5, 6, 7, 11}) EXPECT_EQ(std::fabs(img.at("key").get(i)), incre_flash_attention_v3::kPoisonKey) << i;
  EXPECT_EQ(img.at("kvPaddingSize").get(0), 1.0);
  EXPECT_EQ(img.at("kvPaddingSize").dtype(), DType::kI64);
}

// Without padding (no kvPaddingSize) the images are V3's, byte for byte.
TEST(IncreFlashAttentionV4Layout, no_padding_is_v3_pack) {
  Builder b;
  b.v3().batch(2).heads(2).head_dim(16).seq(6).layout("BSH").lengths({2, 3});
  const Params p = b.build().first;
  TensorMap in = canonical_ramp(b.padding(0).build().first);
  in.erase("kvPaddingSize");
  const TensorMap mine = pack(p, in);
  const TensorMap theirs = incre_flash_attention_v3::pack(p.base, in);
  ASSERT_EQ(mine.size(), theirs.size());
  for (const auto& [name, t] : theirs) {
    ASSERT_EQ(mine.at(name).nbytes(), t.nbytes()) << name;
    EXPECT_EQ(std::memcmp(mine.at(name).data(), t.data(), t.nbytes()), 0) << name;
  }
}

TEST(IncreFlashAttentionV4Layout, unpack_is_identity_on_attention_out) {
  Builder b;
  b.v3().batch(1).heads(1).head_dim(16).seq(4).lengths({2});
  const Params p = b.padding(1).build().first;
  const SpecMap imgs = output_images(p, ref::incre_flash_attention_v4::specs(p));
  ASSERT_EQ(imgs.count("attentionOut"), 1u);
  Tensor o = Tensor::zeros(DType::kF16, imgs.at("attentionOut").shape);
  o.set(3, 2.5);
  EXPECT_EQ(unpack(p, {{"attentionOut", o}}).at("attentionOut").get(3), 2.5);
}

}  // namespace
}  // namespace opgate::layout::incre_flash_attention_v4
