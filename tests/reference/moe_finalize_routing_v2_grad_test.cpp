// Tests of the MoeFinalizeRoutingV2Grad reference (routing-ops.md §3): the documented example
// (§3.5), hand-computed cases, the validation codes of §3.4, and properties that check the
// gradient against the forward MoeFinalizeRoutingV2 of §2.2.
#include "reference/moe_finalize_routing_v2_grad.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "reference/math/moe_finalize_routing_v2.h"

namespace opgate::ref::moe_finalize_routing_v2_grad {
namespace {

namespace fwd = ref::moe_finalize_routing_v2;

// One call's input values in canonical order; tensors absent in specs(p) are skipped.
struct Values {
  std::vector<double> grad_y, row_idx, expanded_x, scales, expert_idx, bias;
};

TensorMap make_inputs(const Params& p, const Values& v) {
  const SpecMap s = specs(p);
  const std::pair<const char*, const std::vector<double>*> names[] = {
      {"gradY", &v.grad_y},
      {"expandedRowIdx", &v.row_idx},
      {"expandedXOptional", &v.expanded_x},
      {"scalesOptional", &v.scales},
      {"expertIdxOptional", &v.expert_idx},
      {"biasOptional", &v.bias}};
  TensorMap m;
  for (const auto& [name, vals] : names) {
    const TensorSpec& t = s.at(name);
    if (t.present) m[name] = Tensor::from_values(t.dtype, t.shape, *vals);
  }
  return m;
}

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

void expect_near_rel(const Tensor& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) {
    EXPECT_NEAR(got.get(i), want[static_cast<size_t>(i)],
                rel * std::fabs(want[static_cast<size_t>(i)]))
        << "element " << i;
  }
}

struct Problem {
  Params p;
  Values v;
};

// The forward (mode 2 for grad mode 0, mode 3 for grad mode 1) with float inputs in dtype `t`.
fwd::Params forward_params(const Params& p, DType t) {
  fwd::Params f;
  f.num_rows = p.num_rows;
  f.top_k = p.top_k;
  f.hidden = p.hidden;
  f.dtype = f.scales_dtype = t;
  f.drop_pad_mode = p.drop_pad_mode == 0 ? 2 : 3;
  f.expanded_rows = expanded_rows(p);
  f.expert_num = p.expert_num;
  f.expert_capacity = p.expert_capacity;
  f.has_scales = p.has_scales;
  f.has_bias = p.has_bias && p.has_scales;  // the grad reads bias only with scales
  return f;
}

// F(x, s) in double with the s*b dropped-slot convention the gradient differentiates; inputs are
// f64 unless `t` says otherwise.
std::vector<double> forward(const Problem& c, const std::vector<double>& x,
                            const std::vector<double>& s, DType t = DType::kF64) {
  const fwd::Params f = forward_params(c.p, t);
  const SpecMap fs = fwd::specs(f);
  const std::pair<const char*, const std::vector<double>*> names[] = {
      {"expandedX", &x},
      {"expandedRowIdx", &c.v.row_idx},
      {"scalesOptional", &s},
      {"expertIdxOptional", &c.v.expert_idx},
      {"biasOptional", &c.v.bias}};
  TensorMap in;
  for (const auto& [name, vals] : names) {
    const TensorSpec& spec = fs.at(name);
    if (spec.present) in[name] = Tensor::from_values(spec.dtype, spec.shape, *vals);
  }
  return values_of(fwd::reference(f, in, fwd::DroppedSlot::kScaledBias));
}

// <gradY, F(a) - F(b)> and the magnitude sum |gradY| (|F(a)| + |F(b)|) for its tolerance.
std::pair<double, double> grad_y_dot_diff(const Problem& c, const std::vector<double>& fa,
                                          const std::vector<double>& fb) {
  double dot = 0.0;
  double mag = 0.0;
  for (size_t j = 0; j < fa.size(); ++j) {
    dot += c.v.grad_y[j] * (fa[j] - fb[j]);
    mag += std::fabs(c.v.grad_y[j]) * (std::fabs(fa[j]) + std::fabs(fb[j]));
  }
  return {dot, mag};
}

Params doc_params(bool bias) {
  Params p;
  p.num_rows = 2;
  p.top_k = 2;
  p.hidden = 2;
  p.has_scales = true;
  p.has_bias = bias;
  p.expert_num = 2;
  return p;
}

// The official doc's example (seed 002), inputs stored as fp32.
Values doc_values() {
  return {{0.3816, 0.3939, 0.8474, 0.1652},
          {1, 3, 0, 2},
          {0.6049, 0.3315, 0.4954, 0.3284, 0.7060, 0.4359, 0.6514, 0.9476},
          {0.4708, 0.0656, 0.9652, 0.9512},
          {0, 1, 0, 1},
          {0.6452, 0.1981, 0.4159, 0.9575}};
}

TEST(MoeFinalizeRoutingV2GradReference, doc_example_with_bias) {
  const Params p = doc_params(true);
  const TensorMap in = make_inputs(p, doc_values());
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  ASSERT_TRUE(check_data(p, in).is_ok());
  const RefOutputs out = reference(p, in);
  expect_near_rel(
      out.expected.at("gradExpandedXOut"),
      {0.8179105, 0.159451, 0.1796573, 0.1854481, 0.8060469, 0.1571382, 0.02503296, 0.02583984},
      1e-6);
  expect_near_rel(out.expected.at("gradScalesOut"), {0.6426413, 1.157701, 1.146825, 1.180888},
                  1e-6);
  // Row 1 is slot 0: the exact product of the fp32 inputs, which the device rounds once.
  EXPECT_EQ(out.expected.at("gradExpandedXOut").get(2),
            static_cast<double>(0.4708f) * static_cast<double>(0.3816f));
}

TEST(MoeFinalizeRoutingV2GradReference, doc_example_without_bias) {
  const Params p = doc_params(false);
  const RefOutputs out = reference(p, make_inputs(p, doc_values()));
  expect_near_rel(out.expected.at("gradScalesOut"), {0.3184014, 0.6218339, 0.5673561, 0.670275},
                  1e-6);
  EXPECT_DOUBLE_EQ(out.magnitude.at("gradScalesOut").get(0),
                   out.expected.at("gradScalesOut").get(0));
}

TEST(MoeFinalizeRoutingV2GradReference, doc_example_forward_mode2) {
  const Problem c = {doc_params(true), doc_values()};
  const fwd::Params f = forward_params(c.p, DType::kF32);
  ASSERT_TRUE(fwd::validate(f, fwd::specs(f)).is_ok());
  const std::vector<double> want = {0.6070094, 0.3728508, 2.273748, 1.836572};
  const std::vector<double> got = forward(c, c.v.expanded_x, c.v.scales, DType::kF32);
  for (size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6 * want[j]) << j;
}

// Mode 1, E = C = 2, H = 2, K = 2; idx {2, -1, 0, -1}, expertIdx {1, 0, 0, 1}, bias [[.5, 0], [1,
// 2]]
//   slot 0 (r 0, row 2, s 2):   gradX[2] = 2*[1, 2] = [2, 4]; gradS = ([2, 1]+[1, 2]).[1, 2] = 9
//   slot 1 (r 0, dropped):      gradS = bias[0].[1, 2] = 0.5
//   slot 2 (r 1, row 0, s .5):  gradX[0] = .5*[3, 4] = [1.5, 2]; gradS = ([1, 1]+[.5, 0]).[3, 4]
//   = 8.5 slot 3 (r 1, dropped):      gradS = bias[1].[3, 4] = 11 rows 1 and 3 are addressed by
//   nobody: zero-filled and defined.
// Without bias: gradS = [[2, 1].[1, 2], 0, [1, 1].[3, 4], 0] = [4, 0, 7, 0].
TEST(MoeFinalizeRoutingV2GradReference, drop_pad_zero_fill_and_dropped_bias) {
  Params p = doc_params(true);
  p.drop_pad_mode = 1;
  p.expert_capacity = 2;
  const Values v = {{1, 2, 3, 4},  {2, -1, 0, -1}, {1, 1, 5, 5, 2, 1, 7, 7},
                    {2, 3, .5, 4}, {1, 0, 0, 1},   {.5, 0, 1, 2}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  ASSERT_TRUE(check_data(p, make_inputs(p, v)).is_ok());
  RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")),
            (std::vector<double>{1.5, 2, 0, 0, 2, 4, 0, 0}));
  EXPECT_EQ(values_of(out.care.at("gradExpandedXOut")), std::vector<double>(8, 1.0));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{9, 0.5, 8.5, 11}));
  p.has_bias = false;
  out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{4, 0, 7, 0}));
}

// Mode 0, R = 2, K = 2, H = 1, activeNum 3 (so D0 = 3); idx {3, 0, 2, 1}; gradY [2, 5];
// scales [1, 2, 3, 4]; expandedX [10, 20, 30].
//   slot 0: row 3 >= activeNum, dropped: gradS 0.   slot 1: gradX[0] = 2*2 = 4, gradS = 10*2 = 20
//   slot 2: gradX[2] = 3*5 = 15, gradS = 30*5 = 150  slot 3: gradX[1] = 4*5 = 20, gradS = 20*5 =
//   100
TEST(MoeFinalizeRoutingV2GradReference, active_num_drops_high_rows) {
  Params p = doc_params(false);
  p.hidden = 1;
  p.active_num = 3;
  const Values v = {{2, 5}, {3, 0, 2, 1}, {10, 20, 30}, {1, 2, 3, 4}, {}, {}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  ASSERT_TRUE(check_data(p, make_inputs(p, v)).is_ok());
  const RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")), (std::vector<double>{4, 20, 15}));
  EXPECT_EQ(values_of(out.care.at("gradExpandedXOut")), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{0, 20, 150, 100}));
}

// Mode 0, R = 1, K = 2, H = 2, idx {-1, 1}: row 0 is never written, so it is undefined (care 0).
TEST(MoeFinalizeRoutingV2GradReference, dropless_unaddressed_row_is_undefined) {
  Params p = doc_params(false);
  p.num_rows = 1;
  const Values v = {{1, 2}, {-1, 1}, {3, 4, 5, 6}, {2, 3}, {}, {}};
  const RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.care.at("gradExpandedXOut")), (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")), (std::vector<double>{0, 0, 3, 6}));
  // slot 1: [5, 6].[1, 2] = 17; slot 0 dropped without bias: 0.
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{0, 17}));
}

// The kernel skips a dropped slot without bias, so its gradScales is 0 even if gradY is Inf
// (0 * Inf would be NaN); the valid slot propagates the Inf: [5, 6].[Inf, 2] = Inf.
TEST(MoeFinalizeRoutingV2GradReference, dropped_slot_ignores_non_finite_grad_y) {
  Params p = doc_params(false);
  p.num_rows = 1;
  const double inf = std::numeric_limits<double>::infinity();
  const RefOutputs out =
      reference(p, make_inputs(p, {{inf, 2}, {-1, 1}, {3, 4, 5, 6}, {2, 3}, {}, {}}));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{0, inf}));
}

// No scales: K = 1, gradX[idx[r]] = gradY[r] (a copy), gradScalesOut (R, 1) is not written.
TEST(MoeFinalizeRoutingV2GradReference, no_scales_copies_grad_y) {
  Params p;
  p.num_rows = 3;
  p.hidden = 2;
  const Values v = {{1, 2, 3, 4, 5, 6}, {2, 0, 1}, {}, {}, {}, {}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  const RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")),
            (std::vector<double>{3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(out.care.at("gradScalesOut").shape(), (Shape{3, 1}));
  EXPECT_EQ(values_of(out.care.at("gradScalesOut")), (std::vector<double>{0, 0, 0}));
}

// Issue 13: bias and expertIdx without scales are a valid call (the tiling reads bias only under
// scales); the kernel copies gradY and ignores both, even an expert id it would read out of range.
TEST(MoeFinalizeRoutingV2GradReference, bias_without_scales_is_accepted_and_ignored) {
  Params p;
  p.num_rows = 3;
  p.hidden = 2;
  p.has_bias = true;
  p.expert_num = 2;
  const Values v = {{1, 2, 3, 4, 5, 6}, {2, 0, 1}, {}, {}, {0, 1, 7}, {10, 20, 30, 40}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  const TensorMap in = make_inputs(p, v);
  ASSERT_TRUE(check_data(p, in).is_ok());
  const RefOutputs out = reference(p, in);
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")), (std::vector<double>{3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(values_of(out.care.at("gradScalesOut")), (std::vector<double>{0, 0, 0}));
}

// A call whose descriptors were tampered with after specs(p).
struct Tampered {
  const char* what;
  Params p;
  std::function<void(SpecMap&)> edit;
};

void expect_rejected(int64_t code, const std::vector<Tampered>& calls) {
  for (const Tampered& c : calls) {
    SpecMap s = specs(c.p);
    if (c.edit) c.edit(s);
    const Status st = validate(c.p, s);
    EXPECT_EQ(st.code(), StatusCode::kAclnnError) << c.what << ": " << st.to_string();
    EXPECT_EQ(st.aclnn_code(), code) << c.what << ": " << st.to_string();
  }
}

TEST(MoeFinalizeRoutingV2GradReference, validate_accepts_well_formed_calls) {
  for (int64_t mode : {0, 1}) {
    for (bool bias : {false, true}) {
      for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
        Params p = doc_params(bias);
        p.drop_pad_mode = mode;
        p.dtype = t;
        p.expert_capacity = 3;
        p.active_num = 3;
        EXPECT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).to_string();
      }
    }
  }
}

TEST(MoeFinalizeRoutingV2GradReference, validate_null_tensors_161001) {
  const Params p = doc_params(true);
  expect_rejected(161001, {{"gradY", p, [](SpecMap& s) { s["gradY"].present = false; }},
                           {"gradScalesOut", p, [](SpecMap& s) { s.erase("gradScalesOut"); }}});
}

TEST(MoeFinalizeRoutingV2GradReference, validate_dtypes_161002) {
  const Params p = doc_params(true);
  expect_rejected(161002,
                  {{"gradY i32", p, [](SpecMap& s) { s["gradY"].dtype = DType::kI32; }},
                   {"rowIdx i64", p, [](SpecMap& s) { s["expandedRowIdx"].dtype = DType::kI64; }},
                   {"bias f16", p, [](SpecMap& s) { s["biasOptional"].dtype = DType::kF16; }}});
}

TEST(MoeFinalizeRoutingV2GradReference, validate_attrs_and_shapes_561103) {
  const Params p = doc_params(true);
  Params mode2 = p, no_capacity = p, pad = p, no_scales, empty = p;
  mode2.drop_pad_mode = 2;
  no_capacity.drop_pad_mode = 1;
  no_capacity.expert_capacity = 0;
  pad.drop_pad_mode = 1;
  pad.expert_capacity = 2;
  no_scales.num_rows = no_scales.top_k = 2;  // K must be 1 without scales
  empty.hidden = 0;  // expandedX is empty: the aclnn layer skips its dtype, tiling does not
  expect_rejected(
      561103,
      {{"dropPadMode 2", mode2, nullptr},
       {"expertCapacity 0", no_capacity, nullptr},
       {"K without scales", no_scales, nullptr},
       {"scales without x", p, [](SpecMap& s) { s["expandedXOptional"].present = false; }},
       {"bias without ids", p, [](SpecMap& s) { s["expertIdxOptional"].present = false; }},
       {"scales 1-D", p, [](SpecMap& s) { s["scalesOptional"].shape = {4}; }},
       {"bias dim1", p,
        [](SpecMap& s) {
          s["biasOptional"].shape = {2, 3};
        }},
       {"gradScales dtype", p, [](SpecMap& s) { s["gradScalesOut"].dtype = DType::kF16; }},
       {"mode 1 out 2-D", pad,
        [](SpecMap& s) {
          s["gradExpandedXOut"].shape = {4, 2};
        }},
       {"mode 1 bias rows", pad,
        [](SpecMap& s) {
          s["biasOptional"].shape = {3, 2};
        }},
       {"empty x dtype", empty, [](SpecMap& s) { s["expandedXOptional"].dtype = DType::kF16; }}});
  SpecMap s = specs(p);
  s["gradExpandedXOut"].shape = {5, 2};
  const Status st = validate(p, s);
  EXPECT_EQ(st.aclnn_code(), 561103);
  EXPECT_NE(st.message().find("gradExpandedXOut.dim0 (5) != D0 (4)"), std::string::npos)
      << st.to_string();
}

TEST(MoeFinalizeRoutingV2GradReference, check_data_rejects_undefined_inputs) {
  const Params p = doc_params(true);
  Values v = doc_values();
  v.expert_idx[2] = 2;  // E = 2
  EXPECT_EQ(check_data(p, make_inputs(p, v)).code(), StatusCode::kInvalidCase);
  v = doc_values();
  v.row_idx = {1, 3, 1, 2};  // row 1 written twice
  EXPECT_EQ(check_data(p, make_inputs(p, v)).code(), StatusCode::kInvalidCase);
  v.row_idx = {1, 3, 0, 4};  // beyond R*K - 1
  EXPECT_EQ(check_data(p, make_inputs(p, v)).code(), StatusCode::kInvalidCase);
  Params active = p;
  active.active_num = 2;  // rows 2, 3 are dropped, not out of range
  v = doc_values();
  v.expanded_x.resize(4);
  EXPECT_TRUE(check_data(active, make_inputs(active, v)).is_ok());
}

TEST(MoeFinalizeRoutingV2GradReference, forward_validate_codes) {
  fwd::Params f;
  f.num_rows = 2;
  f.top_k = 2;
  f.hidden = 3;
  f.has_scales = f.has_bias = f.has_x1 = true;
  f.expert_num = 2;
  for (int64_t mode : {0, 1, 2, 3}) {
    f.drop_pad_mode = mode;
    f.expanded_rows = 4;
    EXPECT_TRUE(fwd::validate(f, fwd::specs(f)).is_ok()) << mode;
  }
  SpecMap s = fwd::specs(f);
  s["out"].present = false;
  EXPECT_EQ(fwd::validate(f, s).aclnn_code(), 161001);
  s = fwd::specs(f);
  s["x1Optional"].dtype = DType::kF16;
  EXPECT_EQ(fwd::validate(f, s).aclnn_code(), 161002);
  f.drop_pad_mode = 4;
  EXPECT_EQ(fwd::validate(f, fwd::specs(f)).aclnn_code(), 561103);
}

// A categorical choice made at full size, so it is uniform from the first test on (RapidCheck
// scales ranges with its size ramp, which would otherwise pick the first option early).
template <class T>
T uniform(rc::Gen<T> g) {
  return *rc::gen::resize(100, std::move(g));
}

// Multiples of 1/8 in [-4, 4]: exact in every dtype, so double arithmetic stays (nearly) exact.
std::vector<double> small_values(int64_t n) {
  const auto q = uniform(
      rc::gen::container<std::vector<int>>(static_cast<size_t>(n), rc::gen::inRange(-32, 33)));
  std::vector<double> v(q.size());
  std::transform(q.begin(), q.end(), v.begin(), [](int x) { return x / 8.0; });
  return v;
}

std::vector<int64_t> random_permutation(int64_t n) {
  const auto keys = uniform(
      rc::gen::container<std::vector<int>>(static_cast<size_t>(n), rc::gen::arbitrary<int>()));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)];
  });
  return perm;
}

// Mode 0 routes a permutation of [0, R*K), mode 1 an injective map into [0, E*C); about a quarter
// of the slots are dropped (-1), and mode 0 may drop more through activeNum.
Problem gen_problem(bool force_scales, int force_mode) {
  Problem c;
  Params& p = c.p;
  p.drop_pad_mode = force_mode >= 0 ? force_mode : uniform(rc::gen::inRange<int64_t>(0, 2));
  p.has_scales = force_scales || uniform(rc::gen::weightedElement<bool>({{3, true}, {1, false}}));
  p.has_bias = uniform(rc::gen::arbitrary<bool>());  // without scales: passed and ignored
  p.num_rows = *rc::gen::inRange<int64_t>(1, 5);
  p.top_k = p.has_scales ? *rc::gen::inRange<int64_t>(1, 4) : 1;
  p.hidden = *rc::gen::inRange<int64_t>(1, 12);
  p.expert_num = *rc::gen::inRange<int64_t>(1, 4);
  p.expert_capacity = *rc::gen::inRange<int64_t>(1, 5);
  const int64_t slots = p.num_rows * p.top_k;
  const int64_t pad_rows = p.expert_num * p.expert_capacity;
  if (p.drop_pad_mode == 0) p.active_num = *rc::gen::inRange<int64_t>(-1, slots + 2);
  const std::vector<int64_t> perm =
      random_permutation(p.drop_pad_mode == 0 ? slots : std::max(slots, pad_rows));
  const auto drop = uniform(
      rc::gen::container<std::vector<int>>(static_cast<size_t>(slots), rc::gen::inRange(0, 4)));
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t row = perm[static_cast<size_t>(i)];
    const bool off = drop[static_cast<size_t>(i)] == 0 || (p.drop_pad_mode == 1 && row >= pad_rows);
    c.v.row_idx.push_back(off ? -1.0 : static_cast<double>(row));
  }
  c.v.grad_y = small_values(p.num_rows * p.hidden);
  c.v.expanded_x = small_values(expanded_rows(p) * p.hidden);
  c.v.scales = small_values(slots);
  c.v.bias = small_values(p.expert_num * p.hidden);
  const auto e = uniform(rc::gen::container<std::vector<int>>(
      static_cast<size_t>(slots), rc::gen::inRange<int>(0, static_cast<int>(p.expert_num))));
  c.v.expert_idx.assign(e.begin(), e.end());
  RC_CLASSIFY(p.drop_pad_mode == 1, "drop_pad");
  RC_CLASSIFY(p.has_bias, "bias");
  return c;
}

RC_GTEST_PROP(MoeFinalizeRoutingV2GradProps, adjoint_of_forward_in_expanded_x, ()) {
  const Problem c = gen_problem(false, -1);
  const RefOutputs g = reference(c.p, make_inputs(c.p, c.v));
  const std::vector<double> delta = small_values(static_cast<int64_t>(c.v.expanded_x.size()));
  std::vector<double> moved = c.v.expanded_x;
  for (size_t j = 0; j < moved.size(); ++j) moved[j] += delta[j];
  const auto [lhs, mag] =
      grad_y_dot_diff(c, forward(c, moved, c.v.scales), forward(c, c.v.expanded_x, c.v.scales));
  const Tensor& gx = g.expected.at("gradExpandedXOut");
  double rhs = 0.0;
  double rhs_mag = 0.0;
  for (int64_t j = 0; j < gx.numel(); ++j) {
    rhs += gx.get(j) * delta[static_cast<size_t>(j)];
    rhs_mag += std::fabs(gx.get(j) * delta[static_cast<size_t>(j)]);
  }
  RC_ASSERT(std::fabs(lhs - rhs) <= 1e-9 * (mag + rhs_mag) + 1e-300);
}

RC_GTEST_PROP(MoeFinalizeRoutingV2GradProps, grad_scales_is_forward_difference_quotient, ()) {
  const Problem c = gen_problem(true, -1);
  const RefOutputs g = reference(c.p, make_inputs(c.p, c.v));
  const std::vector<double> base = forward(c, c.v.expanded_x, c.v.scales);
  for (size_t i = 0; i < c.v.scales.size(); ++i) {
    std::vector<double> s = c.v.scales;
    s[i] += 1.0;  // the forward is linear in s, so a unit step gives the exact derivative
    const auto [dq, mag] = grad_y_dot_diff(c, forward(c, c.v.expanded_x, s), base);
    const double want = g.expected.at("gradScalesOut").get(static_cast<int64_t>(i));
    const double want_mag = g.magnitude.at("gradScalesOut").get(static_cast<int64_t>(i));
    RC_ASSERT(std::fabs(dq - want) <= 1e-9 * (mag + want_mag) + 1e-300);
  }
}

RC_GTEST_PROP(MoeFinalizeRoutingV2GradProps, linear_in_grad_y, ()) {
  Problem c = gen_problem(false, -1);
  const auto a = *rc::gen::inRange(-3, 4);
  const auto b = *rc::gen::inRange(-3, 4);
  const RefOutputs g1 = reference(c.p, make_inputs(c.p, c.v));
  const std::vector<double> y1 = c.v.grad_y;
  const std::vector<double> y2 = small_values(static_cast<int64_t>(y1.size()));
  c.v.grad_y = y2;
  const RefOutputs g2 = reference(c.p, make_inputs(c.p, c.v));
  for (size_t j = 0; j < y1.size(); ++j) c.v.grad_y[j] = a * y1[j] + b * y2[j];  // exact in fp32
  const RefOutputs g3 = reference(c.p, make_inputs(c.p, c.v));
  for (const char* name : {"gradExpandedXOut", "gradScalesOut"}) {
    const Tensor& e1 = g1.expected.at(name);
    const Tensor& e2 = g2.expected.at(name);
    const Tensor& e3 = g3.expected.at(name);
    for (int64_t j = 0; j < e3.numel(); ++j) {
      const double want = a * e1.get(j) + b * e2.get(j);
      RC_ASSERT(std::fabs(e3.get(j) - want) <=
                1e-12 * (std::fabs(a * e1.get(j)) + std::fabs(b * e2.get(j)) + 1.0));
    }
  }
}

RC_GTEST_PROP(MoeFinalizeRoutingV2GradProps, drop_pad_rows_not_addressed_are_zero, ()) {
  const Problem c = gen_problem(false, 1);
  const RefOutputs g = reference(c.p, make_inputs(c.p, c.v));
  const Tensor& gx = g.expected.at("gradExpandedXOut");
  const Tensor& care = g.care.at("gradExpandedXOut");
  const int64_t h = c.p.hidden;
  for (int64_t row = 0; row < expanded_rows(c.p); ++row) {
    const bool addressed =
        std::count(c.v.row_idx.begin(), c.v.row_idx.end(), static_cast<double>(row)) > 0;
    for (int64_t j = 0; j < h; ++j) {
      RC_ASSERT(care.get(row * h + j) == 1.0);
      if (!addressed) RC_ASSERT(gx.get(row * h + j) == 0.0);
    }
  }
}

RC_GTEST_PROP(MoeFinalizeRoutingV2GradProps, dropped_slot_grad_scales_is_bias_dot_grad_y, ()) {
  const Problem c = gen_problem(true, -1);
  const RefOutputs g = reference(c.p, make_inputs(c.p, c.v));
  const int64_t h = c.p.hidden;
  for (size_t i = 0; i < c.v.row_idx.size(); ++i) {
    const double row = c.v.row_idx[i];
    if (row >= 0 && row < static_cast<double>(expanded_rows(c.p))) continue;
    double want = 0.0;  // without bias a dropped slot contributes nothing
    if (c.p.has_bias) {
      const auto r = static_cast<int64_t>(i) / c.p.top_k;
      const auto e = static_cast<int64_t>(c.v.expert_idx[i]);
      for (int64_t j = 0; j < h; ++j) want += c.v.bias[e * h + j] * c.v.grad_y[r * h + j];
    }
    RC_ASSERT(g.expected.at("gradScalesOut").get(static_cast<int64_t>(i)) == want);
  }
}

}  // namespace
}  // namespace opgate::ref::moe_finalize_routing_v2_grad
