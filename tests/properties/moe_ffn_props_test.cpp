// Properties of MoeFFN (suite MoeFFNProps) over the operator's own generator, driven by RapidCheck
// through the Chooser adaptor so failures shrink: the reference equals a dense per-token loop, is
// unchanged by zero-token experts, permutes rows with the experts, scales exactly with x under relu;
// and the faithful emulator stays within the reference's error budget (spec attention-and-ffn.md §2).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "cases/moe_ffn.h"
#include "core/compare.h"
#include "core/guard.h"
#include "device/emu/moe_ffn.h"
#include "reference/moe_ffn.h"
#include "tests/cases/rc_chooser.h"

namespace opgate::ref::moe_ffn {
namespace {

namespace mc = cases::moe_ffn;

struct Generated {
  Params p;
  mc::Knobs k;
  TensorMap in;
};

Generated generated_case() {
  opgate::testing::RcChooser c;
  auto pk = mc::from_json(mc::generate(c));
  RC_ASSERT(pk.has_value());
  Generated g{pk->first, pk->second, {}};
  const auto mode = *rc::gen::element(FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial);
  const auto seed = *rc::gen::inRange<uint64_t>(1, 1000000);
  RC_ASSERT(validate(g.p, specs(g.p)).is_ok());
  // The generator's rare large problems are for `opgate gen --size large`; properties stay quick.
  RC_PRE(g.p.m * g.p.k1 * std::max<int64_t>(g.p.n1, 1) <= (int64_t{1} << 21));
  g.in = mc::fill(g.p, g.k, specs(g.p), mode, seed).value();
  RC_ASSERT(check_data(g.p, g.in).is_ok());
  RC_CLASSIFY(g.p.dtype == DType::kI8, "int8");
  RC_CLASSIFY(g.p.n1 == 0, "N1 = 0");
  return g;
}

// A deqScale element's multiplier, read independently of deq_value: BFLOAT16 as is, else the fp32
// in the low word, optionally with the 13 low mantissa bits cleared.
double deq_of(const Tensor& t, int64_t i, bool truncate) {
  if (t.dtype() == DType::kBF16) return t.get(i);
  uint32_t bits = static_cast<uint32_t>(t.bits(i) & 0xFFFFFFFFu);
  if (truncate) bits = bits >> 13 << 13;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return static_cast<double>(f);
}

// y by the definition: a loop over tokens, each with its expert's weights, no tiling or threads.
// `scale` bounds the double rounding of the sums; `pinned` bounds how far the reference may move
// y by following the kernel's rounding where it is determined (reference version 2): each hidden
// value by one ulp of the dtype it is rounded to (fp16 h for the high-performance path, whose
// activations have slope < 1.2, fp16 / bf16 a otherwise), each int8 value by one step, and y by
// one fp32 (int8) or bf16 (N1 = 0 bf16 bias) rounding.
std::vector<double> dense_loop(const Params& p, const TensorMap& in, std::vector<double>* scale,
                               std::vector<double>* pinned) {
  const Tensor& x = in.at("x");
  const Tensor& w1 = in.at("weight1");
  const Tensor& w2 = in.at("weight2");
  const bool quant = p.dtype == DType::kI8;
  const Activation act = parse_activation(p.activation);
  const int64_t k = p.k1, n = p.n1;
  std::vector<double> y(static_cast<size_t>(p.m * k));
  scale->assign(y.size(), 0.0);
  pinned->assign(y.size(), 0.0);
  const Path path = path_of(p);
  const DType hidden_t = path == Path::kBF16 ? DType::kBF16 : DType::kF16;
  const std::vector<int64_t> off = expert_offsets(p.expert_tokens);
  for (int64_t r = 0; r < p.m; ++r) {
    const int64_t e = expert_of_row(off, r);
    std::vector<double> a(static_cast<size_t>(n)), moved(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      double h = 0;
      for (int64_t i = 0; i < k; ++i) h += x.get(r * k + i) * w1.get((e * k + i) * n + j);
      if (p.has_bias1) h += in.at("bias1").get(e * n + j);
      if (!quant) {
        a[static_cast<size_t>(j)] = activate(act, h);
        const double at = path == Path::kF16HighPerformance ? 1.2 * std::fabs(h) : std::fabs(a[static_cast<size_t>(j)]);
        moved[static_cast<size_t>(j)] = 1.2 * ulp(hidden_t, at);
        continue;
      }
      moved[static_cast<size_t>(j)] = 1;
      const double deq = deq_of(in.at("deqScale1"), e * n + j, true);
      const double s = in.at("scale").get(p.per_channel_scale ? e * n + j : e);
      const double q = activate(act, h * deq) * s + in.at("offset").get(e);
      a[static_cast<size_t>(j)] = std::clamp(std::nearbyint(q), -128.0, 127.0);
    }
    for (int64_t m = 0; m < k; ++m) {
      double acc = 0, mag = 0, move = 0;
      for (int64_t j = 0; j < n; ++j) {
        acc += a[static_cast<size_t>(j)] * w2.get((e * n + j) * k + m);
        mag += std::fabs(a[static_cast<size_t>(j)] * w2.get((e * n + j) * k + m));
        move += moved[static_cast<size_t>(j)] * std::fabs(w2.get((e * n + j) * k + m));
      }
      if (p.has_bias2) acc += in.at("bias2").get(e * k + m);
      // The fixpipe (N1 > 0) keeps 19 bits of a UINT64/INT64/FLOAT32 scale, the N1 = 0 vector dequant 32.
      const double deq = quant ? deq_of(in.at("deqScale2"), e * k + m, n > 0) : 1.0;
      y[static_cast<size_t>(r * k + m)] = acc * deq;
      (*scale)[static_cast<size_t>(r * k + m)] = (mag + std::fabs(acc) + 1) * deq;
      const double last = quant ? ulp(DType::kF32, (std::fabs(acc) + move) * deq)
                                : (n == 0 && path == Path::kBF16 ? ulp(DType::kBF16, std::fabs(acc)) : 0.0);
      (*pinned)[static_cast<size_t>(r * k + m)] = move * deq + last;
    }
  }
  return y;
}

RC_GTEST_PROP(MoeFFNProps, equals_dense_per_token_loop, ()) {
  const Generated g = generated_case();
  std::vector<double> scale, pinned;
  const std::vector<double> want = dense_loop(g.p, g.in, &scale, &pinned);
  const Tensor y = reference(g.p, g.in).expected.at("y");
  for (int64_t i = 0; i < y.numel(); ++i) {
    const auto u = static_cast<size_t>(i);
    RC_ASSERT(std::fabs(y.get(i) - want[u]) <= 1e-12 * scale[u] + pinned[u]);
  }
}

// Per-expert tensors (dim0 = E) and their slices.
const char* const kPerExpert[] = {"weight1", "bias1", "weight2", "bias2", "scale", "offset", "deqScale1", "deqScale2"};

void copy_slice(Tensor& dst, int64_t de, const Tensor& src, int64_t se) {
  const int64_t len = src.numel() / src.dim(0);
  for (int64_t i = 0; i < len; ++i) dst.set_bits(de * len + i, src.bits(se * len + i));
}

RC_GTEST_PROP(MoeFFNProps, zero_token_experts_change_nothing, ()) {
  const Generated g = generated_case();
  const auto e_n = static_cast<int64_t>(g.p.expert_tokens.size());
  RC_PRE(e_n < 256);
  const auto at = *rc::gen::inRange<int64_t>(0, e_n + 1);
  Params q = g.p;
  q.expert_tokens.insert(q.expert_tokens.begin() + at, 0);
  q.offset_length = 0;  // offset (E) again: one element is valid with one expert only
  // The new expert's weights are whatever another fill draws; the others are copied.
  TensorMap in = mc::fill(q, g.k, specs(q), FillMode::kRealistic, 99).value();
  in.at("x") = g.in.at("x").clone();
  for (const char* name : kPerExpert) {
    if (g.in.count(name) == 0) continue;
    for (int64_t e = 0; e < e_n; ++e) copy_slice(in.at(name), e < at ? e : e + 1, g.in.at(name), e);
  }
  const Tensor want = reference(g.p, g.in).expected.at("y");
  const Tensor got = reference(q, in).expected.at("y");
  RC_ASSERT(got.bytes_equal(want));
}

RC_GTEST_PROP(MoeFFNProps, permuting_experts_permutes_rows, ()) {
  const Generated g = generated_case();
  const auto e_n = static_cast<int64_t>(g.p.expert_tokens.size());
  std::vector<int64_t> perm(static_cast<size_t>(e_n));
  std::iota(perm.begin(), perm.end(), 0);
  const auto keys = *rc::gen::container<std::vector<int>>(perm.size(), rc::gen::arbitrary<int>());
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)];
  });
  // Expert i of the new call is expert perm[i] of the old one, with its token block.
  Params q = g.p;
  for (int64_t i = 0; i < e_n; ++i) q.expert_tokens[static_cast<size_t>(i)] = g.p.expert_tokens[static_cast<size_t>(perm[static_cast<size_t>(i)])];
  TensorMap in;
  for (const auto& [name, t] : g.in) in[name] = t.clone();
  for (const char* name : kPerExpert) {
    if (g.in.count(name) == 0) continue;
    for (int64_t i = 0; i < e_n; ++i) copy_slice(in.at(name), i, g.in.at(name), perm[static_cast<size_t>(i)]);
  }
  const std::vector<int64_t> old_off = expert_offsets(g.p.expert_tokens);
  const std::vector<int64_t> new_off = expert_offsets(q.expert_tokens);
  const int64_t k = g.p.k1;
  std::vector<int64_t> row_of(static_cast<size_t>(g.p.m));  // new row -> old row
  for (int64_t i = 0; i < e_n; ++i) {
    const int64_t src = perm[static_cast<size_t>(i)];
    for (int64_t j = 0; j < q.expert_tokens[static_cast<size_t>(i)]; ++j) {
      row_of[static_cast<size_t>(new_off[static_cast<size_t>(i)] + j)] = old_off[static_cast<size_t>(src)] + j;
    }
  }
  for (int64_t r = 0; r < g.p.m; ++r) {
    for (int64_t j = 0; j < k; ++j) in.at("x").set_bits(r * k + j, g.in.at("x").bits(row_of[static_cast<size_t>(r)] * k + j));
  }
  const Tensor old_y = reference(g.p, g.in).expected.at("y");
  const Tensor new_y = reference(q, in).expected.at("y");
  for (int64_t r = 0; r < g.p.m; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      RC_ASSERT(new_y.get(r * k + j) == old_y.get(row_of[static_cast<size_t>(r)] * k + j));
    }
  }
}

// relu is positively homogeneous: scaling x, bias1 and bias2 by 2^s scales y by exactly 2^s.
RC_GTEST_PROP(MoeFFNProps, scaling_x_by_power_of_two_scales_relu_output, ()) {
  Generated g = generated_case();
  Params p = g.p;
  p.activation = "relu";
  if (p.dtype == DType::kI8) {
    p.dtype = p.y_dtype = DType::kF16;
    p.inner_precise = 1;
    p.per_channel_scale = false;
  }
  const TensorMap in = mc::fill(p, g.k, specs(p), FillMode::kRealistic, 7).value();
  const int s = *rc::gen::inRange(-1, 4);
  TensorMap scaled;
  for (const auto& [name, t] : in) scaled[name] = t.clone();
  for (const char* name : {"x", "bias1", "bias2"}) {
    if (scaled.count(name) == 0) continue;
    Tensor& t = scaled.at(name);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = std::ldexp(in.at(name).get(i), s);
      RC_PRE(round_to(t.dtype(), v) == v);  // no underflow or overflow in the input dtype
      t.set(i, v);
    }
  }
  const Tensor y = reference(p, in).expected.at("y");
  const Tensor ys = reference(p, scaled).expected.at("y");
  // Rounding commutes with 2^s except on the fp16 subnormal grid (spacing 2^-24 at either scale),
  // where the reference pins a determined hidden value: each may then move by one such step.
  const std::vector<int64_t> off = expert_offsets(p.expert_tokens);
  const Tensor& w2 = in.at("weight2");
  const double step = p.dtype == DType::kBF16 ? 0.0 : std::ldexp(1.0, -24) * (1 + std::ldexp(1.0, s));
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t r = i / p.k1, m = i % p.k1, e = expert_of_row(off, r);
    double w = 0;
    for (int64_t j = 0; j < p.n1; ++j) w += std::fabs(w2.get((e * p.n1 + j) * p.k1 + m));
    RC_ASSERT(std::fabs(ys.get(i) - std::ldexp(y.get(i), s)) <= step * w);
  }
}

// y of the faithful emulator on a poisoned, guarded buffer.
Tensor run_emu(const Params& p, const TensorMap& in) {
  const TensorSpec y = specs(p).at("y");
  TensorMap out{{"y", make_guarded(y.dtype, y.shape).tensor}};
  const Status st = emu::moe_ffn::run(p, in, out, "");
  RC_ASSERT(st.is_ok());
  return out.at("y");
}

// The faithful emulator is one device the budget must cover on every generated case and fill.
RC_GTEST_PROP(MoeFFNProps, emulator_within_budget, ()) {
  const Generated g = generated_case();
  const RefOutputs r = reference(g.p, g.in);
  // The plan does not depend on the fill: the budget itself is 0 where a fill makes the chain exact.
  const OutputCheck check = mc::compare_plan(g.p, r, FillMode::kRealistic).outputs.at(0);
  const CompareResult cr = compare_output(check, r.expected.at("y"), run_emu(g.p, g.in), r.magnitude.at("y"), Tensor());
  RC_ASSERT(cr.passed);
}

}  // namespace
}  // namespace opgate::ref::moe_ffn
