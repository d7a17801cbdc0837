// Per-tensor fill overrides: every extreme class against bit patterns derived by hand from the
// IEEE layouts (sign | exponent | mantissa), their values against ldexp, value lists, and errors.
#include "core/fill_override.h"

#include "cases/registry.h"

#include "core/case.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace opgate {
namespace {

std::vector<uint64_t> pattern(ExtremeClass c, DType t) {
  auto p = extreme_pattern(c, t);
  EXPECT_TRUE(p) << p.status().message();
  return p ? *p : std::vector<uint64_t>{};
}

using Bits = std::vector<uint64_t>;

// fp16: 1 | 5 | 10.  Smallest subnormal 0x0001 = 2^-24, largest 0x03FF = 1023 * 2^-24, max 0x7BFF.
TEST(FillOverride, Float16Patterns) {
  EXPECT_EQ(pattern(ExtremeClass::kSubnormal, DType::kF16), (Bits{0x0001, 0x8001, 0x03FF, 0x83FF, 0x0200, 0x8200}));
  EXPECT_EQ(pattern(ExtremeClass::kNearMax, DType::kF16), (Bits{0x7BFF, 0xFBFF, 0x7BFE, 0xFBFE}));
  EXPECT_EQ(pattern(ExtremeClass::kSignedZero, DType::kF16), (Bits{0x0000, 0x8000}));
  EXPECT_EQ(pattern(ExtremeClass::kInf, DType::kF16), (Bits{0x7C00, 0xFC00}));
  EXPECT_EQ(pattern(ExtremeClass::kNan, DType::kF16), (Bits{0x7E00, 0xFE00}));
}

// bf16: 1 | 8 | 7.  Smallest subnormal 0x0001 = 2^-133, max 0x7F7F = (2 - 2^-7) * 2^127.
TEST(FillOverride, BFloat16Patterns) {
  EXPECT_EQ(pattern(ExtremeClass::kSubnormal, DType::kBF16), (Bits{0x0001, 0x8001, 0x007F, 0x807F, 0x0040, 0x8040}));
  EXPECT_EQ(pattern(ExtremeClass::kNearMax, DType::kBF16), (Bits{0x7F7F, 0xFF7F, 0x7F7E, 0xFF7E}));
  EXPECT_EQ(pattern(ExtremeClass::kSignedZero, DType::kBF16), (Bits{0x0000, 0x8000}));
  EXPECT_EQ(pattern(ExtremeClass::kInf, DType::kBF16), (Bits{0x7F80, 0xFF80}));
  EXPECT_EQ(pattern(ExtremeClass::kNan, DType::kBF16), (Bits{0x7FC0, 0xFFC0}));
}

// fp32: 1 | 8 | 23.  Smallest subnormal 0x00000001 = 2^-149, max 0x7F7FFFFF.
TEST(FillOverride, Float32Patterns) {
  EXPECT_EQ(pattern(ExtremeClass::kSubnormal, DType::kF32),
            (Bits{0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x80400000}));
  EXPECT_EQ(pattern(ExtremeClass::kNearMax, DType::kF32), (Bits{0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FFFFE, 0xFF7FFFFE}));
  EXPECT_EQ(pattern(ExtremeClass::kSignedZero, DType::kF32), (Bits{0x00000000, 0x80000000}));
  EXPECT_EQ(pattern(ExtremeClass::kInf, DType::kF32), (Bits{0x7F800000, 0xFF800000}));
  EXPECT_EQ(pattern(ExtremeClass::kNan, DType::kF32), (Bits{0x7FC00000, 0xFFC00000}));
}

// The patterns mean what their names say, read back through the dtype conversions.
TEST(FillOverride, PatternValues) {
  // Extremes go to the even flat indices: pattern entry j lands on element 2j.
  Tensor h = Tensor::zeros(DType::kF16, {12});
  ASSERT_TRUE(apply_fill_override({"x", true, ExtremeClass::kSubnormal, {}}, h).is_ok());
  EXPECT_EQ(h.get(0), std::ldexp(1.0, -24));
  EXPECT_EQ(h.get(2), -std::ldexp(1.0, -24));
  EXPECT_EQ(h.get(4), 1023 * std::ldexp(1.0, -24));
  EXPECT_EQ(h.get(8), std::ldexp(1.0, -15));
  Tensor b = Tensor::zeros(DType::kBF16, {8});
  ASSERT_TRUE(apply_fill_override({"x", true, ExtremeClass::kNearMax, {}}, b).is_ok());
  EXPECT_EQ(b.get(0), (2 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  EXPECT_EQ(b.get(4), (2 - std::ldexp(1.0, -6)) * std::ldexp(1.0, 127));
  Tensor f = Tensor::zeros(DType::kF32, {2});
  ASSERT_TRUE(apply_fill_override({"x", true, ExtremeClass::kSubnormal, {}}, f).is_ok());
  EXPECT_EQ(f.get(0), std::ldexp(1.0, -149));
  Tensor z = Tensor::full(DType::kF32, {4}, 5.0);
  ASSERT_TRUE(apply_fill_override({"x", true, ExtremeClass::kSignedZero, {}}, z).is_ok());
  EXPECT_FALSE(std::signbit(z.get(0)));
  EXPECT_TRUE(std::signbit(z.get(2)));
  EXPECT_EQ(z.get(2), 0.0);
}

// Every class for every float dtype has a pattern; integer dtypes have none.
TEST(FillOverride, EveryClassEveryFloatDtype) {
  int combinations = 0;
  for (DType t : {DType::kF16, DType::kBF16, DType::kF32}) {
    for (ExtremeClass c : kAllExtremeClasses) {
      auto p = extreme_pattern(c, t);
      ASSERT_TRUE(p) << extreme_class_name(c) << " " << dtype_name(t);
      combinations += !p->empty();
      auto back = parse_extreme_class(extreme_class_name(c));
      ASSERT_TRUE(back);
      EXPECT_EQ(*back, c);
    }
  }
  EXPECT_EQ(combinations, 15);
  for (DType t : {DType::kI8, DType::kI32, DType::kI64, DType::kBool}) {
    auto p = extreme_pattern(ExtremeClass::kSubnormal, t);
    ASSERT_FALSE(p);
    EXPECT_NE(p.status().message().find("extreme fills are for float tensors"), std::string::npos);
  }
}

// Every other element takes the next pattern entry; the operator's values stay in between.
TEST(FillOverride, PatternOnEveryOtherElement) {
  Tensor t = Tensor::full(DType::kF16, {2, 5}, 1.5);  // 1.5 = 0x3E00
  ASSERT_TRUE(apply_fill_override({"x", true, ExtremeClass::kInf, {}}, t).is_ok());
  const Bits want{0x7C00, 0x3E00, 0xFC00, 0x3E00, 0x7C00, 0x3E00, 0xFC00, 0x3E00, 0x7C00, 0x3E00};
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(t.bits(i), want[static_cast<size_t>(i)]) << i;
  // The two rows differ (row 0 starts with +Inf, row 1 with 1.5 then -Inf).
  EXPECT_NE(t.bits(0), t.bits(5));
}

Expected<std::vector<FillOverride>> parse(const char* text) {
  return parse_fill_overrides(nlohmann::json::parse(text));
}

// The issue's example: 1e-40 is an fp32 subnormal; nearest-even gives 71362 * 2^-149 (0x000116C2).
TEST(FillOverride, ValuesAreCycledAndRounded) {
  auto o = parse(R"({"x": {"fill": {"values": [0.0, -0.0, 1e-40]}}})");
  ASSERT_TRUE(o) << o.status().message();
  ASSERT_EQ(o->size(), 1u);
  Tensor t = Tensor::zeros(DType::kF32, {5});
  ASSERT_TRUE(apply_fill_override(o->front(), t).is_ok());
  EXPECT_EQ(t.bits(0), 0x00000000u);
  EXPECT_EQ(t.bits(1), 0x80000000u);
  EXPECT_EQ(t.bits(2), 0x000116C2u);
  EXPECT_EQ(t.bits(3), 0x00000000u);
  EXPECT_EQ(t.bits(4), 0x80000000u);
  auto special = parse(R"({"x": {"fill": {"values": ["nan", "inf", "-inf", 7]}}})");
  ASSERT_TRUE(special);
  Tensor h = Tensor::zeros(DType::kBF16, {4});
  ASSERT_TRUE(apply_fill_override(special->front(), h).is_ok());
  EXPECT_TRUE(std::isnan(h.get(0)));
  EXPECT_EQ(h.bits(1), 0x7F80u);
  EXPECT_EQ(h.bits(2), 0xFF80u);
  EXPECT_EQ(h.get(3), 7.0);
  Tensor i = Tensor::zeros(DType::kI32, {3});
  auto ints = parse(R"({"idx": {"fill": {"values": [-1, 2147483647]}}})");
  ASSERT_TRUE(apply_fill_override(ints->front(), i).is_ok());
  EXPECT_EQ(i.get(0), -1);
  EXPECT_EQ(i.get(1), 2147483647);
  EXPECT_EQ(i.get(2), -1);
}

std::string apply_error(const char* text, DType t, int64_t n) {
  auto o = parse(text);
  if (!o) return "parse: " + o.status().message();
  Tensor x = Tensor::zeros(t, {n});
  Status st = apply_fill_override(o->front(), x);
  return st.is_ok() ? "" : st.message();
}

TEST(FillOverride, UnrepresentableValuesAreErrors) {
  // 1e-40 is below half of fp16's smallest subnormal (2^-25): it would flush to zero.
  EXPECT_NE(apply_error(R"({"x": {"fill": {"values": [1e-40]}}})", DType::kF16, 4).find("values[0]: 1e-40 flushes to zero in float16"),
            std::string::npos);
  // 65520 is fp16's rounding boundary to Inf (max 65504 + half an ulp of 32).
  EXPECT_NE(apply_error(R"({"x": {"fill": {"values": [1, 65520]}}})", DType::kF16, 4).find("values[1]: 65520 overflows float16"),
            std::string::npos);
  EXPECT_EQ(apply_error(R"({"x": {"fill": {"values": [65519]}}})", DType::kF16, 4), "");  // rounds down to 65504
  EXPECT_NE(apply_error(R"({"x": {"fill": {"values": [1.5]}}})", DType::kI32, 4).find("not a int32 value"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"values": [128]}}})", DType::kI8, 4).find("not a int8 value"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"values": ["nan"]}}})", DType::kI64, 4).find("int64 has no NaN value"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"values": [1, 2, 3]}}})", DType::kF32, 2).find("3 values for a tensor of 2 elements"),
            std::string::npos);
}

TEST(FillOverride, SyntaxErrorsNameTheField) {
  auto message = [](const char* text) {
    auto o = parse(text);
    return o ? std::string() : o.status().message();
  };
  EXPECT_NE(message(R"({"x": {"fill": {"extreme": "tiny"}}})")
                .find("field 'tensors.x.fill.extreme': unknown extreme class 'tiny' (known: subnormal, near_max, "
                      "signed_zero, inf, nan)"),
            std::string::npos);
  EXPECT_NE(message(R"({"x": {"fill": {"values": []}}})").find("field 'tensors.x.fill.values': not a non-empty array"),
            std::string::npos);
  EXPECT_NE(message(R"({"x": {"fill": {"values": [1, "one"]}}})").find("field 'tensors.x.fill.values[1]'"),
            std::string::npos);
  EXPECT_NE(message(R"({"w": {"fill": "subnormal"}})").find("field 'tensors.w.fill': expected"), std::string::npos);
  EXPECT_NE(message(R"({"w": {"fill": {"values": [1], "extreme": "inf"}}})").find("field 'tensors.w.fill'"),
            std::string::npos);
  // Descriptor-only overrides hold no fill.
  auto none = parse(R"({"w": {"dtype": "float16"}})");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(FillOverride, CheckedAgainstTheCallsDtypes) {
  SpecMap specs;
  specs["x"] = TensorSpec{DType::kF16, {2, 2}, true};
  specs["idx"] = TensorSpec{DType::kI32, {3}, true};
  auto check = [&](const char* text) {
    Status st = check_fill_overrides(nlohmann::json::parse(text), specs);
    return st.is_ok() ? std::string() : st.message();
  };
  EXPECT_EQ(check(R"({"x": {"fill": {"extreme": "near_max"}}})"), "");
  EXPECT_NE(check(R"({"idx": {"fill": {"extreme": "subnormal"}}})").find("field 'tensors.idx.fill.extreme': extreme fills are for float tensors; this one is int32"),
            std::string::npos);
  EXPECT_NE(check(R"({"x": {"fill": {"values": [1e9]}}})").find("field 'tensors.x.fill': values[0]: 1e+09 overflows float16"),
            std::string::npos);
  EXPECT_NE(check(R"({"x": {"fill": {"values": [1, 2, 3, 4, 5]}}})").find("5 values for a tensor of 4 elements"),
            std::string::npos);
  // An index tensor may be given values; whether they break the call is the operator's check_data.
  EXPECT_EQ(check(R"({"idx": {"fill": {"values": [-1, 99]}}})"), "");
}

std::vector<double> filled(const char* text, DType t, int64_t n) {
  auto o = parse(text);
  EXPECT_TRUE(o) << o.status().message();
  if (!o) return {};
  Tensor x = Tensor::zeros(t, {n});
  Status st = apply_fill_override(o->front(), x);
  EXPECT_TRUE(st.is_ok()) << st.message();
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(x.get(i));
  return v;
}

TEST(FillOverride, RunsRepeatEachValueThenCycle) {
  EXPECT_EQ(filled(R"({"x": {"fill": {"runs": [[1.5, 2], [-3, 1]]}}})", DType::kF32, 5),
            (std::vector<double>{1.5, 1.5, -3, 1.5, 1.5}));
  EXPECT_EQ(filled(R"({"x": {"fill": {"runs": [["inf", 1], [0, 3]]}}})", DType::kF16, 4),
            (std::vector<double>{INFINITY, 0, 0, 0}));
  EXPECT_NE(apply_error(R"({"x": {"fill": {"runs": [[1, 0]]}}})", DType::kF32, 4).find("field 'tensors.x.fill.runs[0]': count is not an integer >= 1"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"runs": [[1, 2, 3]]}}})", DType::kF32, 4).find("runs[0]': not a [value, count] pair"),
            std::string::npos);
  // A typo'd count fails at parse time instead of allocating it.
  EXPECT_NE(apply_error(R"({"x": {"fill": {"runs": [[1, 60000000], [2, 60000000]]}}})", DType::kF32, 4).find("runs[1]': more than"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"runs": [[1, 3], [2, 3]]}}})", DType::kF32, 5).find("6 values for a tensor of 5 elements"),
            std::string::npos);
}

TEST(FillOverride, SweepListsEveryValueOfTheDtypeInRange) {
  // fp16 spacing is 2^-10 on [1, 2) and 2^-9 on [2, 4).
  const double u = std::ldexp(1.0, -10);
  EXPECT_EQ(filled(R"({"x": {"fill": {"sweep": {"from": 1.0, "to": 1.004}}}})", DType::kF16, 5),
            (std::vector<double>{1, 1 + u, 1 + 2 * u, 1 + 3 * u, 1 + 4 * u}));
  EXPECT_EQ(filled(R"({"x": {"fill": {"sweep": {"from": 1.999, "to": 2.002}}}})", DType::kF16, 3),
            (std::vector<double>{2 - u, 2, 2 + 2 * u}));
  // Through zero: the two smallest negative subnormals, -0, +0, the smallest positive (2^-24).
  const double s = std::ldexp(1.0, -24);
  const std::vector<double> zero = filled(R"({"x": {"fill": {"sweep": {"from": -1.2e-7, "to": 6e-8}}}})", DType::kF16, 5);
  EXPECT_EQ(zero, (std::vector<double>{-2 * s, -s, 0, 0, s}));
  ASSERT_EQ(zero.size(), 5u);
  EXPECT_TRUE(std::signbit(zero[2]));
  EXPECT_FALSE(std::signbit(zero[3]));
  // bf16 spacing 2^-7 on [1, 2); int8 takes the integers.
  EXPECT_EQ(filled(R"({"x": {"fill": {"sweep": {"from": 1.0, "to": 1.03125}}}})", DType::kBF16, 5),
            (std::vector<double>{1, 1.0078125, 1.015625, 1.0234375, 1.03125}));
  EXPECT_EQ(filled(R"({"x": {"fill": {"sweep": {"from": -1.5, "to": 2}}}})", DType::kI8, 4),
            (std::vector<double>{-1, 0, 1, 2}));
  // The top of fp16: 65504 is the largest finite value; the sweep stops there.
  EXPECT_EQ(filled(R"({"x": {"fill": {"sweep": {"from": 65460, "to": 1e9}}}})", DType::kF16, 2),
            (std::vector<double>{65472, 65504}));
}

TEST(FillOverride, SweepErrorsNameTheRange) {
  EXPECT_NE(apply_error(R"({"x": {"fill": {"sweep": {"from": 1.0001, "to": 1.0002}}}})", DType::kF16, 4).find("sweep: no float16 value in"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"sweep": {"from": 1, "to": 2}}}})", DType::kF16, 4).find("sweep: more than 4 float16 values"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"sweep": {"from": 2, "to": 1}}}})", DType::kF16, 4).find("field 'tensors.x.fill.sweep': from 2 is above to 1"),
            std::string::npos);
  EXPECT_NE(apply_error(R"({"x": {"fill": {"sweep": {"from": 1}}}})", DType::kF16, 4).find("field 'tensors.x.fill.sweep': expected"),
            std::string::npos);
  SpecMap specs;
  specs["x"] = TensorSpec{DType::kF16, {4}, true};
  Status st = check_fill_overrides(nlohmann::json::parse(R"({"x": {"fill": {"sweep": {"from": 1, "to": 2}}}})"), specs);
  EXPECT_NE(st.message().find("field 'tensors.x.fill.sweep': sweep: more than 4"), std::string::npos) << st.message();
}

// Through a real operator: the override lands in the inputs the reference and the device get,
// after the operator's fill (the odd elements keep the operator's values).
TEST(FillOverride, CaseInputsCarryTheOverride) {
  auto cases = parse_cases_text(R"({"op": "moe_finalize_routing_v2_grad", "cases": [
      {"id": "mfrg.t.f32", "params": {"dtype": "float32", "R": 4, "H": 16, "expertNum": 2}, "seed": 1, "fill": "exact",
       "tensors": {"gradY": {"fill": {"extreme": "subnormal"}}}},
      {"id": "mfrg.u.f32", "params": {"dtype": "float32", "R": 4, "H": 16, "expertNum": 2}, "seed": 1, "fill": "exact"}]})",
                                "<test>");
  ASSERT_TRUE(cases) << cases.status().message();
  auto with = make_problem((*cases)[0]);
  auto without = make_problem((*cases)[1]);
  ASSERT_TRUE(with && without);
  auto in = fill_case_inputs(**with, (*cases)[0]);
  auto plain = fill_case_inputs(**without, (*cases)[1]);
  ASSERT_TRUE(in && plain) << (in ? plain.status().message() : in.status().message());
  const Tensor& g = in->at("gradY");
  const Tensor& p = plain->at("gradY");
  ASSERT_EQ(g.numel(), 64);
  EXPECT_EQ(g.bits(0), 0x00000001u);
  EXPECT_EQ(g.bits(2), 0x80000001u);
  EXPECT_EQ(g.bits(4), 0x007FFFFFu);
  for (int64_t i = 1; i < 64; i += 2) EXPECT_EQ(g.bits(i), p.bits(i)) << i;
  for (const auto& [name, t] : *plain) {
    if (name != "gradY") {
      EXPECT_TRUE(t.bytes_equal(in->at(name))) << name;
    }
  }
  // An override naming something that is not an input of the call.
  Case bad = (*cases)[1];
  bad.tensors = {{"gradExpandedXOut", {{"fill", {{"extreme", "inf"}}}}}};
  auto p2 = make_problem(bad);
  if (p2) {
    auto filled = fill_case_inputs(**p2, bad);
    ASSERT_FALSE(filled);
    EXPECT_NE(filled.status().message().find("field 'tensors.gradExpandedXOut.fill': not an input of this call"),
              std::string::npos)
        << filled.status().message();
  }
}

}  // namespace
}  // namespace opgate
