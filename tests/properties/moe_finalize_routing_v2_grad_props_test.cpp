// Properties of MoeFinalizeRoutingV2Grad (suite MoeFinalizeRoutingV2GradProps) on random valid
// routing: the reference against the forward MoeFinalizeRoutingV2 of routing-ops.md §2.2 (adjoint in
// expandedX, difference quotient in the scales), linear in gradY, drop-pad zero rows and dropped
// slots; and the emulator within the §4 bound, leaving undefined memory untouched.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "device/emu/moe_finalize_routing_v2_grad.h"
#include "reference/moe_finalize_routing_v2_grad.h"
#include "tests/device/moe_finalize_routing_v2_grad_testing.h"
#include "tests/reference/moe_finalize_routing_v2_grad_testing.h"

namespace opgate::ref::moe_finalize_routing_v2_grad {
namespace {

using moe_finalize_routing_v2_grad_testing::forward;
using moe_finalize_routing_v2_grad_testing::make_inputs;
using moe_finalize_routing_v2_grad_testing::Problem;

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

namespace opgate::emu::moe_finalize_routing_v2_grad {
namespace {

namespace grad_ref = ref::moe_finalize_routing_v2_grad;
using grad_ref::Params;
using moe_finalize_routing_v2_grad_testing::Case;
using moe_finalize_routing_v2_grad_testing::count_violations;
using moe_finalize_routing_v2_grad_testing::kGradScales;
using moe_finalize_routing_v2_grad_testing::kGradX;
using moe_finalize_routing_v2_grad_testing::make_inputs;
using moe_finalize_routing_v2_grad_testing::make_poisoned_outputs;
using moe_finalize_routing_v2_grad_testing::poison_bits;
using ref::moe_finalize_routing_v2_grad::uniform;  // the categorical choice of the reference properties above

std::vector<double> realistic_values(int64_t n) {
  const auto q = uniform(
      rc::gen::container<std::vector<int>>(static_cast<size_t>(n), rc::gen::inRange(-4096, 4097)));
  std::vector<double> v;
  for (int x : q) v.push_back(x / 1024.0 + x * 1e-7);  // not exact in f16/bf16: stored rounded
  return v;
}

// Random valid routing (mode 0 permutations with drops and activeNum; mode 1 injective maps).
Case gen_case() {
  Case c;
  Params& p = c.p;
  p.dtype = uniform(rc::gen::element(DType::kF32, DType::kF16, DType::kBF16));
  p.drop_pad_mode = uniform(rc::gen::inRange<int64_t>(0, 2));
  p.has_scales = uniform(rc::gen::weightedElement<bool>({{3, true}, {1, false}}));
  p.has_bias = uniform(rc::gen::arbitrary<bool>());  // without scales: passed and ignored
  p.num_rows = *rc::gen::inRange<int64_t>(1, 4);
  p.top_k = p.has_scales ? *rc::gen::inRange<int64_t>(1, 4) : 1;
  p.hidden = *rc::gen::inRange<int64_t>(1, 70);
  p.expert_num = *rc::gen::inRange<int64_t>(1, 4);
  p.expert_capacity = *rc::gen::inRange<int64_t>(1, 5);
  const int64_t slots = p.num_rows * p.top_k;
  const int64_t pad_rows = p.expert_num * p.expert_capacity;
  if (p.drop_pad_mode == 0) p.active_num = *rc::gen::inRange<int64_t>(0, slots + 1);
  const int64_t targets = p.drop_pad_mode == 0 ? slots : std::max(slots, pad_rows);
  // A random permutation of the targets: sort the row numbers by random keys.
  const auto keys = uniform(rc::gen::container<std::vector<int>>(static_cast<size_t>(targets),
                                                                 rc::gen::arbitrary<int>()));
  std::vector<int64_t> order(static_cast<size_t>(targets));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)];
  });
  const auto drop = uniform(
      rc::gen::container<std::vector<int>>(static_cast<size_t>(slots), rc::gen::inRange(0, 5)));
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t row = order[static_cast<size_t>(i)];
    const bool off = drop[static_cast<size_t>(i)] == 0 || (p.drop_pad_mode == 1 && row >= pad_rows);
    c.v.row_idx.push_back(off ? -1.0 : static_cast<double>(row));
  }
  c.v.grad_y = realistic_values(p.num_rows * p.hidden);
  c.v.expanded_x = realistic_values(grad_ref::expanded_rows(p) * p.hidden);
  c.v.scales = realistic_values(slots);
  c.v.bias = realistic_values(p.expert_num * p.hidden);
  for (int64_t i = 0; i < slots; ++i) {
    c.v.expert_idx.push_back(uniform(rc::gen::inRange<int64_t>(0, p.expert_num)));
  }
  return c;
}

RC_GTEST_PROP(MoeFinalizeRoutingV2GradProps, emu_matches_reference, ()) {
  const Case c = gen_case();
  RC_CLASSIFY(c.p.drop_pad_mode == 1, "drop_pad");
  RC_CLASSIFY(c.p.has_bias, "bias");
  RC_CLASSIFY(c.p.dtype != DType::kF32, "half");
  const TensorMap in = make_inputs(c);
  RC_ASSERT(grad_ref::validate(c.p, grad_ref::specs(c.p)).is_ok());
  RC_ASSERT(grad_ref::check_data(c.p, in).is_ok());
  TensorMap out = make_poisoned_outputs(c.p);
  RC_ASSERT(run(c.p, in, out, "").is_ok());
  RC_ASSERT(count_violations(c.p, in, out) == 0);
  // What the reference leaves undefined the kernel must not have touched.
  const RefOutputs r = grad_ref::reference(c.p, in);
  for (const char* name : {kGradX, kGradScales}) {
    const Tensor& care = r.care.at(name);
    for (int64_t j = 0; j < care.numel(); ++j) {
      if (care.get(j) == 0.0) RC_ASSERT(out.at(name).bits(j) == poison_bits(c.p.dtype));
    }
  }
}

}  // namespace
}  // namespace opgate::emu::moe_finalize_routing_v2_grad
