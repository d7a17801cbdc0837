// Tests of the MoeFFN memory images (attention-and-ffn.md §2: x, the weights, biases, scales and y
// are contiguous ND tensors, so each image is its canonical tensor): pack copies every present
// input byte for byte into storage of its own, the only output buffer is y as specified, and unpack
// hands the images back unchanged.
#include "device/layout/moe_ffn.h"

#include <gtest/gtest.h>

#include "cases/moe_ffn.h"

namespace opgate::layout::moe_ffn {
namespace {

namespace mffn_cases = cases::moe_ffn;

TEST(MoeFFNLayout, pack_copies_every_input_into_its_own_storage) {
  const auto [p, k] = mffn_cases::Builder().tokens({3, 0, 2}).k1(8).n1(16).bias1().bias2().build();
  const TensorMap in = mffn_cases::fill(p, k, ref::moe_ffn::specs(p), FillMode::kExact, 2).value();
  ASSERT_GE(in.size(), 5u);  // x, weight1, bias1, weight2, bias2 (and expertTokens when passed)
  const TensorMap images = pack(p, in);
  ASSERT_EQ(images.size(), in.size());
  for (const auto& [name, t] : in) {
    ASSERT_EQ(images.count(name), 1u) << name;
    EXPECT_TRUE(images.at(name).bytes_equal(t)) << name;
    EXPECT_NE(images.at(name).data(), t.data()) << name << " shares the canonical tensor's storage";
  }
}

TEST(MoeFFNLayout, output_images_are_y_as_specified) {
  const auto [p, k] = mffn_cases::Builder().tokens({4, 1}).k1(8).n1(16).build();
  const SpecMap specs = ref::moe_ffn::specs(p);
  const SpecMap out = output_images(p, specs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at("y"), specs.at("y"));
  EXPECT_EQ(out.at("y").shape, (Shape{5, 8}));  // (M, K1), M = 4 + 1 tokens
}

TEST(MoeFFNLayout, unpack_returns_the_images) {
  const auto [p, k] = mffn_cases::Builder().tokens({2}).k1(2).n1(4).build();
  const TensorMap images = {{"y", Tensor::from_values(DType::kF16, {2, 2}, {1, -2, 0.5, 4})}};
  const TensorMap out = unpack(p, images);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out.at("y").bytes_equal(images.at("y")));
}

}  // namespace
}  // namespace opgate::layout::moe_ffn
