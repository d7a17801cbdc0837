// Tests of the MoeFinalizeRoutingV2Grad memory images (routing-ops.md §3.1: every argument is a
// dense ND tensor, so each image is its canonical tensor): pack copies every present input byte for
// byte into storage of its own, the output buffers are exactly the two outputs as specified, and
// unpack hands the images back unchanged.
#include "device/layout/moe_finalize_routing_v2_grad.h"

#include <gtest/gtest.h>

#include "cases/moe_finalize_routing_v2_grad.h"

namespace opgate::layout::moe_finalize_routing_v2_grad {
namespace {

namespace mfrg_cases = cases::moe_finalize_routing_v2_grad;

TEST(MoeFinalizeRoutingV2GradLayout, pack_copies_every_input_into_its_own_storage) {
  const auto [p, k] = mfrg_cases::Builder().dtype(DType::kF16).rows(4).top_k(2).hidden(8).scales().bias().build();
  const TensorMap in = mfrg_cases::fill(p, k, ref::moe_finalize_routing_v2_grad::specs(p), FillMode::kExact, 1).value();
  ASSERT_EQ(in.size(), 6u);  // gradY, expandedRowIdx, expandedX, scales, expertIdx, bias
  const TensorMap images = pack(p, in);
  ASSERT_EQ(images.size(), in.size());
  for (const auto& [name, t] : in) {
    ASSERT_EQ(images.count(name), 1u) << name;
    EXPECT_TRUE(images.at(name).bytes_equal(t)) << name;
    EXPECT_NE(images.at(name).data(), t.data()) << name << " shares the canonical tensor's storage";
  }
}

TEST(MoeFinalizeRoutingV2GradLayout, output_images_are_the_two_outputs_as_specified) {
  const auto [p, k] = mfrg_cases::Builder().dtype(DType::kBF16).drop_pad(3, 2).rows(2).top_k(2).hidden(5).scales().build();
  const SpecMap specs = ref::moe_finalize_routing_v2_grad::specs(p);
  const SpecMap out = output_images(p, specs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.at("gradExpandedXOut"), specs.at("gradExpandedXOut"));
  EXPECT_EQ(out.at("gradScalesOut"), specs.at("gradScalesOut"));
  // Mode 1: gradExpandedXOut is (E, C, H) = (3, 2, 5).
  EXPECT_EQ(out.at("gradExpandedXOut").shape, (Shape{3, 2, 5}));
}

TEST(MoeFinalizeRoutingV2GradLayout, unpack_returns_the_images) {
  const auto [p, k] = mfrg_cases::Builder().rows(2).top_k(1).hidden(3).build();
  const TensorMap images = {{"gradExpandedXOut", Tensor::from_values(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                            {"gradScalesOut", Tensor::from_values(DType::kF32, {2, 1}, {7, 8})}};
  const TensorMap out = unpack(p, images);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& [name, t] : images) EXPECT_TRUE(out.at(name).bytes_equal(t)) << name;
}

}  // namespace
}  // namespace opgate::layout::moe_finalize_routing_v2_grad
