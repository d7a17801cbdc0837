// Numbers in the units people use (reports/units.h). Every expected value is worked out by hand
// from the formats' definitions: fp16 has 10 stored significand bits (step 2^-10 in [1, 2),
// 2^-11 in [0.5, 1), smallest subnormal 2^-24, largest finite 65504), bf16 7 (step 2^-7 in [1, 2)),
// fp32 23 (step 2^-23 in [1, 2)).
#include "reports/units.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "reports/result_text.h"

namespace opgate {
namespace {

TEST(Units, UlpDistanceCountsTheDtypesValuesBetween) {
  EXPECT_EQ(ulp_distance(DType::kF16, 1.0, 1.0009765625), 1);           // 1 + 2^-10
  EXPECT_EQ(ulp_distance(DType::kF16, 1.0009765625, 1.0), 1);
  EXPECT_EQ(ulp_distance(DType::kF16, 1.0, 0.99951171875), 1);          // 1 - 2^-11: across a binade
  EXPECT_EQ(ulp_distance(DType::kF16, 0.99951171875, 1.0009765625), 2);
  EXPECT_EQ(ulp_distance(DType::kF16, -std::ldexp(1.0, -24), std::ldexp(1.0, -24)), 2);  // -0 = +0
  EXPECT_EQ(ulp_distance(DType::kF16, 0.0, -0.0), 0);
  EXPECT_EQ(ulp_distance(DType::kF16, 65504, std::numeric_limits<double>::infinity()), 1);
  EXPECT_EQ(ulp_distance(DType::kF16, 2.0, 4.0), 1024);                 // one binade: 2^10 values
  EXPECT_EQ(ulp_distance(DType::kBF16, 1.0, 1.0078125), 1);             // 1 + 2^-7
  EXPECT_EQ(ulp_distance(DType::kF32, 1.0, 1.0 + std::ldexp(1.0, -23)), 1);
  EXPECT_EQ(ulp_distance(DType::kF32, 1.0, 2.0), 8388608);              // 2^23
  EXPECT_EQ(ulp_distance(DType::kI32, 5, -3), 8);
  EXPECT_TRUE(std::isnan(ulp_distance(DType::kF16, std::nan(""), 1.0)));
}

TEST(Units, ValuesUseTheFewestDigitsTheirDtypeReadsBack) {
  // fp16's 0.1 is 0.0999755859375; "0.1" rounds to it again. 1.001 lies nearer 1 + 2^-10 than 1.
  EXPECT_EQ(value_text(DType::kF16, 0.0999755859375), "0.1");
  EXPECT_EQ(value_text(DType::kF16, 1.0009765625), "1.001");
  EXPECT_EQ(value_text(DType::kF16, 65504), "65504");
  EXPECT_EQ(value_text(DType::kBF16, 1.0078125), "1.01");               // 1.01 is 0.0022 from it, 0.0056 from 1.015625
  EXPECT_EQ(value_text(DType::kF32, 1.0 + std::ldexp(1.0, -23)), "1.0000001");
  EXPECT_EQ(value_text(DType::kF32, static_cast<double>(0.1f)), "0.1");
  EXPECT_EQ(value_text(DType::kI8, -3), "-3");
  EXPECT_EQ(value_text(DType::kF16, -std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(value_text(DType::kF32, std::nan("")), "nan");
  // A reference value keeps two digits more than its dtype can need: fp16 7, fp32 11.
  EXPECT_EQ(reference_text(DType::kF16, 1.0 / 3), "0.3333333");
  EXPECT_EQ(reference_text(DType::kF32, 1.0 / 3), "0.33333333333");
}

TEST(Units, BudgetUsedIsBoundedAndReadable) {
  EXPECT_EQ(budget_text(0), "0");
  EXPECT_EQ(budget_text(0.004), "<=0.01");
  EXPECT_EQ(budget_text(0.4321), "0.43");
  EXPECT_EQ(budget_text(1), "1.00");
  EXPECT_EQ(budget_text(2.07), "2.1x over");
  EXPECT_EQ(budget_text(43.5), "44x over");
  EXPECT_EQ(budget_text(2.07e40), ">1000x over");
  EXPECT_EQ(budget_text(std::numeric_limits<double>::infinity()), ">1000x over");
  EXPECT_EQ(budget_text(std::nan("")), "n/a");
}

TEST(Units, AnElementLineGivesItsUlpDistanceBesideTheValues) {
  ComparePoint p;
  p.expected = 1.0001;  // the fp64 reference; fp16 rounds it to 1 (step 2^-10 = 0.000977)
  p.expected_rounded = 1.0;
  p.got = 1.0009765625;
  p.abs_err = 0.0009765625 - 0.0001;
  p.allowed = 0.00048828125;
  EXPECT_EQ(point_text(DType::kF16, p), "expected 1 got 1.001 (1 ulp) diff 0.000877 allowed 0.000488; reference 1.0001");
  // An integer output: the plain difference.
  ComparePoint q;
  q.expected = q.expected_rounded = 7;
  q.got = 4;
  q.abs_err = 3;
  EXPECT_EQ(point_text(DType::kI8, q), "expected 7 got 4 (off by 3) diff 3 allowed 0; reference 7");
}

}  // namespace
}  // namespace opgate
