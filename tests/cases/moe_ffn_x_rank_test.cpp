// MoeFFN's x of rank 2..8 (spec §2.9 F5): the M tokens are the product of x's leading dims and y
// has the same leading dims (F4: y rank == x rank). A call of rank 3 or 8 is the rank-2 call with
// its rows regrouped: the same data, the same y element for element, and it passes on emu.
#include <string>

#include <gtest/gtest.h>

#include "cases/registry.h"
#include "core/aclnn_codes.h"
#include "harness/backends.h"
#include "harness/runner.h"
#include "tests/cases/one_case.h"

namespace opgate {
namespace {

// A case of 6 tokens (experts of 2 and 4), K1 = 16, with x and y given `x_shape` / `y_shape`
// ("" keeps the rank-2 default [6, 16]).
Case ffn_case(const std::string& x_shape, const std::string& y_shape) {
  std::string tensors;
  if (!x_shape.empty()) tensors += R"("x": {"shape": )" + x_shape + "}";
  if (!y_shape.empty()) tensors += std::string(tensors.empty() ? "" : ", ") + R"("y": {"shape": )" + y_shape + "}";
  const std::string text = R"({"op": "moe_ffn", "cases": [{"id": "mffn.x_rank_test.f16.001", "params": )"
                           R"({"expertTokens": [2, 4], "K1": 16, "N1": 24, "bias1": true, "bias2": true}, )"
                           R"("seed": 5, "fill": "realistic", "tensors": {)" +
                           tensors + "}}]}";
  return one_case(text, "x_rank_test");
}

RefOutputs reference_of(const Case& c) {
  auto problem = make_problem(c);
  EXPECT_TRUE(problem) << problem.status().message();
  if (!problem) return {};
  EXPECT_TRUE((*problem)->validate().is_ok()) << (*problem)->validate().message();
  auto inputs = (*problem)->fill(c.fill, c.seed);
  EXPECT_TRUE(inputs) << inputs.status().message();
  if (!inputs) return {};
  const Status data = (*problem)->check_data(*inputs);
  EXPECT_TRUE(data.is_ok()) << data.message();
  return (*problem)->reference(*inputs);
}

TEST(MoeFfnXRank, ranks_3_and_8_are_the_rank_2_call_with_its_rows_regrouped) {
  const RefOutputs flat = reference_of(ffn_case("", ""));
  ASSERT_EQ(flat.expected.at("y").shape(), (Shape{6, 16}));
  // 6 tokens as [2, 3] and as [1, 2, 1, 3, 1, 1, 1]: x of rank 3 and 8.
  for (const std::string shape : {"[2, 3, 16]", "[1, 2, 1, 3, 1, 1, 1, 16]"}) {
    const Case c = ffn_case(shape, shape);
    const RefOutputs grouped = reference_of(c);
    ASSERT_TRUE(grouped.expected.count("y")) << shape;
    const Tensor& y = grouped.expected.at("y");
    EXPECT_EQ(shape_to_string(y.shape()), shape);
    ASSERT_EQ(y.numel(), 6 * 16);
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_EQ(y.get(i), flat.expected.at("y").get(i)) << shape << " element " << i;
      ASSERT_EQ(grouped.magnitude.at("y").get(i), flat.magnitude.at("y").get(i)) << shape << " element " << i;
    }
    auto emu = make_backend("emu");
    ASSERT_TRUE(emu);
    RunOptions opt;
    opt.isolate = false;
    const CaseResult r = run_case(c, **emu, opt);
    EXPECT_EQ(r.verdict, Verdict::kPassed) << shape << ": " << r.reason;
  }
}

TEST(MoeFfnXRank, the_rank_rules_of_the_spec_still_reject) {
  auto code = [](const Case& c) {
    auto problem = make_problem(c);
    EXPECT_TRUE(problem) << problem.status().message();
    return problem ? (*problem)->validate().aclnn_code() : 0;
  };
  // F5: x rank 9 (and y rank 9), and rank 1, are 161002; F4: y rank 2 with x rank 3 is 161002.
  EXPECT_EQ(code(ffn_case("[1, 1, 2, 1, 3, 1, 1, 1, 16]", "[1, 1, 2, 1, 3, 1, 1, 1, 16]")), aclnn::kParamInvalid);
  EXPECT_EQ(code(ffn_case("[96]", "[96]")), aclnn::kParamInvalid);
  EXPECT_EQ(code(ffn_case("[2, 3, 16]", "")), aclnn::kParamInvalid);
  // The token count is the product of the leading dims: [2, 2, 16] holds 4, expertTokens sum to 6.
  EXPECT_EQ(code(ffn_case("[2, 2, 16]", "[2, 2, 16]")), aclnn::kParamInvalid);
  // Same rank, other leading dims: outside what the spec says the kernel writes, so not a valid call.
  auto problem = make_problem(ffn_case("[2, 3, 16]", "[3, 2, 16]"));
  ASSERT_TRUE(problem);
  const Status st = (*problem)->validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidCase) << st.message();
  EXPECT_NE(st.message().find("y is [3, 2, 16], x [2, 3, 16] makes y [2, 3, 16]"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace opgate
