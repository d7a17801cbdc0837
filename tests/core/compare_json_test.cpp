// The comparator's JSON (what reports, baselines and golden diffs read): every metric under its
// own key with its own value, non-finite numbers as strings, the optional point fields only when
// set, and the check description with exactly the fields of its standard.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/compare.h"
#include "core/result_json.h"

namespace opgate {
namespace {

// A result with every metric a different number, so a field written from the wrong member shows.
CompareResult hand_made_result() {
  CompareResult r;
  r.name = "y";
  r.standard = "bound";
  r.passed = false;
  r.message = "why";
  CompareMetrics& m = r.metrics;
  m.elements = 11;
  m.compared = 10;
  m.mismatches = 3;
  m.poison_left = 2;
  m.max_abs = 0.5;
  m.max_rel = 0.25;
  m.mere = 0.125;
  m.mare = 0.75;
  m.rmse = 0.375;
  m.determined = 7;
  m.error_balance = -0.2;
  m.balance_pos = 4;
  m.balance_neg = 6;
  m.balance_limit = std::numeric_limits<double>::infinity();
  m.cosine = 0.875;
  m.max_ulp = 9;
  m.budget_used = 1.5;
  m.ulp_hist = {1, 2, 3, 4, 5, 6, 7, 8};
  ComparePoint p;
  p.index = {1, 2};
  p.expected = 1.5;
  p.expected_rounded = 1.5;
  p.got = std::numeric_limits<double>::quiet_NaN();
  p.abs_err = std::numeric_limits<double>::infinity();
  p.rel_err = std::numeric_limits<double>::infinity();
  p.allowed = 0.0625;
  p.poison = true;
  p.interval = true;
  p.accepted_lo = 1.25;
  p.accepted_hi = -std::numeric_limits<double>::infinity();  // not a real interval; shows the sign
  p.where = "row 1, col 2";
  r.first_failures.push_back(p);
  ComparePoint q;
  q.index = {0, 0};
  q.expected = 2;
  q.expected_rounded = 2;
  q.got = 3;
  q.abs_err = 1;
  q.rel_err = 0.5;
  q.allowed = 4;
  r.worst.push_back(q);
  r.worst.push_back(p);
  return r;
}

TEST(CompareJson, every_metric_under_its_key) {
  const nlohmann::json j = to_json(hand_made_result());
  EXPECT_EQ(j["name"], "y");
  EXPECT_EQ(j["check"], "bound");
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["message"], "why");
  const nlohmann::json& m = j["metrics"];
  EXPECT_EQ(m["elements"], 11);
  EXPECT_EQ(m["compared"], 10);
  EXPECT_EQ(m["mismatches"], 3);
  EXPECT_EQ(m["poison_left"], 2);
  EXPECT_EQ(m["max_abs"], 0.5);
  EXPECT_EQ(m["max_rel"], 0.25);
  EXPECT_EQ(m["mere"], 0.125);
  EXPECT_EQ(m["mare"], 0.75);
  EXPECT_EQ(m["rmse"], 0.375);
  EXPECT_EQ(m["determined"], 7);
  EXPECT_EQ(m["error_balance"], -0.2);
  EXPECT_EQ(m["balance_pos"], 4);
  EXPECT_EQ(m["balance_neg"], 6);
  EXPECT_EQ(m["balance_limit"], "inf");
  EXPECT_EQ(m["cosine"], 0.875);
  EXPECT_EQ(m["max_ulp"], 9);
  EXPECT_EQ(m["budget_used"], 1.5);
  EXPECT_EQ(m["ulp_hist"], nlohmann::json({1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(CompareJson, points_with_and_without_their_optional_fields) {
  const nlohmann::json j = to_json(hand_made_result());
  ASSERT_EQ(j["first_failures"].size(), 1u);
  const nlohmann::json& p = j["first_failures"][0];
  EXPECT_EQ(p["index"], nlohmann::json({1, 2}));
  EXPECT_EQ(p["expected"], 1.5);
  EXPECT_EQ(p["expected_rounded"], 1.5);
  EXPECT_EQ(p["got"], "nan");
  EXPECT_EQ(p["abs_err"], "inf");
  EXPECT_EQ(p["rel_err"], "inf");
  EXPECT_EQ(p["allowed"], 0.0625);
  EXPECT_EQ(p["poison"], true);
  EXPECT_EQ(p["accepted"], nlohmann::json({1.25, "-inf"}));
  EXPECT_EQ(p["where"], "row 1, col 2");
  ASSERT_EQ(j["worst"].size(), 2u);
  const nlohmann::json& q = j["worst"][0];
  EXPECT_EQ(q["index"], nlohmann::json({0, 0}));
  EXPECT_EQ(q["got"], 3);
  EXPECT_EQ(q["abs_err"], 1);
  EXPECT_EQ(q["rel_err"], 0.5);
  EXPECT_EQ(q["allowed"], 4);
  EXPECT_FALSE(q.contains("poison"));
  EXPECT_FALSE(q.contains("accepted"));
  EXPECT_FALSE(q.contains("where"));
  EXPECT_EQ(j["worst"][1]["where"], "row 1, col 2");
}

TEST(CompareJson, a_clean_result_has_no_point_lists) {
  CompareResult r;
  r.name = "y";
  const nlohmann::json j = to_json(r);
  EXPECT_FALSE(j.contains("first_failures"));
  EXPECT_FALSE(j.contains("worst"));
}

TEST(CompareJson, a_check_names_the_fields_of_its_standard) {
  OutputCheck b;
  b.name = "y";
  b.kind = CheckKind::kTolerance;
  b.device_dtype = DType::kF16;
  b.reason = "two roundings";
  b.tol.standard = Standard::kBound;
  b.tol.c = 3;
  b.tol.u_acc = 0x1p-11;
  b.tol.out_ulps = 1;
  const nlohmann::json jb = to_json(b);
  EXPECT_EQ(jb["name"], "y");
  EXPECT_EQ(jb["kind"], "tolerance");
  EXPECT_EQ(jb["dtype"], dtype_name(DType::kF16));
  EXPECT_EQ(jb["reason"], "two roundings");
  EXPECT_EQ(jb["standard"], "bound");
  EXPECT_EQ(jb["c"], 3);
  EXPECT_EQ(jb["u_acc"], 0x1p-11);
  EXPECT_EQ(jb["out_ulps"], 1);
  EXPECT_FALSE(jb.contains("rtol"));
  EXPECT_FALSE(jb.contains("max_steps"));

  OutputCheck a = b;
  a.tol.standard = Standard::kAllclose;
  a.tol.rtol = 0.01;
  a.tol.atol = 0.002;
  a.tol.max_bad_fraction = 0.25;
  const nlohmann::json ja = to_json(a);
  EXPECT_EQ(ja["standard"], "allclose");
  EXPECT_EQ(ja["rtol"], 0.01);
  EXPECT_EQ(ja["atol"], 0.002);
  EXPECT_EQ(ja["max_bad_fraction"], 0.25);
  EXPECT_FALSE(ja.contains("c"));

  OutputCheck q;
  q.name = "z";
  q.kind = CheckKind::kQuantized;
  q.device_dtype = DType::kI8;
  q.max_steps = 2;
  const nlohmann::json jq = to_json(q);
  EXPECT_EQ(jq["kind"], "quantized");
  EXPECT_EQ(jq["max_steps"], 2);
  EXPECT_FALSE(jq.contains("standard"));

  OutputCheck e;
  e.name = "w";
  e.kind = CheckKind::kExact;
  const nlohmann::json je = to_json(e);
  EXPECT_EQ(je["kind"], "exact");
  EXPECT_FALSE(je.contains("standard"));
  EXPECT_FALSE(je.contains("max_steps"));
}

TEST(CompareJson, names_of_kinds_and_standards_round_trip) {
  EXPECT_STREQ(check_kind_name(CheckKind::kUndefined), "undefined");
  for (Standard s : {Standard::kBound, Standard::kAscendMixed, Standard::kMereMare, Standard::kDualThousandth,
                     Standard::kAllclose}) {
    ASSERT_TRUE(parse_standard(standard_name(s)).has_value());
    EXPECT_EQ(*parse_standard(standard_name(s)), s);
  }
  EXPECT_STREQ(standard_name(Standard::kAscendMixed), "ascend-mixed");
  EXPECT_STREQ(standard_name(Standard::kMereMare), "mere-mare");
  EXPECT_STREQ(standard_name(Standard::kDualThousandth), "dual-thousandth");
  EXPECT_FALSE(parse_standard("bounds").has_value());
}

}  // namespace
}  // namespace opgate
