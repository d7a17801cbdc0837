// Cases of aclnnMoeFinalizeRoutingV2Grad: JSON binding, generator, fills, compare plan, and the
// Traits that bind the operator's layers into a Problem.
#include "cases/moe_finalize_routing_v2_grad.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "cases/fill_chunks.h"
#include "cases/param_reader.h"
#include "cases/problem_binding.h"
#include "core/rng.h"
#include "device/layout/moe_finalize_routing_v2_grad.h"

namespace opgate::cases::moe_finalize_routing_v2_grad {
namespace ref = ::opgate::ref::moe_finalize_routing_v2_grad;
namespace layout = ::opgate::layout::moe_finalize_routing_v2_grad;

namespace {

constexpr int64_t kMaxRows = 1 << 20;
constexpr int64_t kMaxTopK = 64;
constexpr int64_t kMaxHidden = 1 << 16;
constexpr int64_t kMaxExperts = 1 << 12;

// Expert ids and expanded row indices, as MoeInitRouting would produce them.
struct Routing {
  std::vector<int64_t> expert;  // [R*K]
  std::vector<int64_t> row;     // [R*K], -1 = dropped
};

Routing make_routing(const Params& p, const Knobs& k, uint64_t seed) {
  const int64_t n = p.num_rows * p.top_k;
  const int64_t experts = std::max<int64_t>(p.expert_num, 1);
  CounterRng pick(seed, "routing.expert");
  CounterRng hot(seed, "routing.hot");
  CounterRng drop(seed, "routing.drop");
  Routing r;
  r.expert.resize(static_cast<size_t>(n));
  r.row.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    r.expert[static_cast<size_t>(i)] =
        hot.bernoulli(static_cast<uint64_t>(i), k.skew) ? 0 : pick.integer(static_cast<uint64_t>(i), 0, experts - 1);
  }
  if (p.drop_pad_mode == 1) {
    // Capacity assignment in token order: slot c of expert e is row e*C + c; overflow is dropped.
    std::vector<int64_t> used(static_cast<size_t>(experts), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t e = r.expert[static_cast<size_t>(i)];
      int64_t& u = used[static_cast<size_t>(e)];
      r.row[static_cast<size_t>(i)] = u < p.expert_capacity ? e * p.expert_capacity + u++ : -1;
    }
  } else {
    // Dropless: the expanded rows are the slots sorted by expert (stable), a permutation of [0, R*K).
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return r.expert[static_cast<size_t>(a)] < r.expert[static_cast<size_t>(b)];
    });
    for (int64_t pos = 0; pos < n; ++pos) r.row[static_cast<size_t>(order[static_cast<size_t>(pos)])] = pos;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (drop.bernoulli(static_cast<uint64_t>(i), k.drop_rate)) r.row[static_cast<size_t>(i)] = -1;
  }
  return r;
}

// Value generators per fill mode. Exact: integers in [-4, 4] (products <= 32, sums over H <= 65536
// stay below 2^24, so fp32 accumulation is exact in any order) and power-of-two scales (products
// exact in every dtype). Realistic: N(0,1) activations and gradients, softmax-like scales in (0,1).
void fill_values(Tensor& t, FillMode mode, uint64_t seed, const char* stream, double scale) {
  const CounterRng rng(seed, stream);
  fill_chunks(t, [&](int64_t first, int64_t n, double* out) {
    const auto u = static_cast<uint64_t>(first);
    if (mode == FillMode::kExact) {
      integers(rng, u, n, -4, 4, out);
    } else {
      normals(rng, u, n, scale, out);
    }
  });
}

void fill_scales(Tensor& t, FillMode mode, uint64_t seed) {
  const CounterRng rng(seed, "scalesOptional");
  static const double kPowers[] = {0.25, 0.5, 1.0, 2.0, -0.5, -1.0};
  fill_chunks(t, [&](int64_t first, int64_t n, double* out) {
    const auto u = static_cast<uint64_t>(first);
    if (mode == FillMode::kExact) {
      integers(rng, u, n, 0, 5, out);
      for (int64_t i = 0; i < n; ++i) out[i] = kPowers[static_cast<size_t>(out[i])];
    } else {
      rng.uniform_block(u, n, 0.01, 1.0, out);
    }
  });
}

// Row 3 of the adversarial fill: every product gradY * scale lies exactly halfway between two
// values of the dtype, so the rounding of gradExpandedX is visible bit for bit. With p mantissa
// digits, g = m * 2^(1-p) for an odd m in [2^(p-1), 2^(p+1)/3) and s = +-1.5 * 2^-e: the exact
// product 3m/2 * 2^(1-p-e) needs p + 1 digits and ends in the half bit. About half of the lower
// neighbours are odd, so round-to-nearest-even, half-away and truncation all differ somewhere.
void make_ties(const Params& p, TensorMap& in, uint64_t seed) {
  const int digits = mantissa_digits(p.dtype);
  const int64_t lo = int64_t{1} << (digits - 1);
  const int64_t hi = ((int64_t{1} << (digits + 1)) - 1) / 3;  // 3m < 2^(p+1)
  CounterRng rng(seed, "adversarial.ties");
  Tensor& g = in.at("gradY");
  const int64_t base = 3 * p.hidden;
  for (int64_t j = 0; j < p.hidden; ++j) {
    const auto u = static_cast<uint64_t>(j);
    const int64_t m = rng.integer(u, lo / 2, (hi - 1) / 2) * 2 + 1;
    g.set(base + j, std::ldexp(static_cast<double>(j % 2 ? -m : m), 1 - digits));
  }
  Tensor& s = in.at("scalesOptional");
  for (int64_t k = 0; k < p.top_k; ++k) {
    const auto u = static_cast<uint64_t>(p.hidden + k);
    s.set(3 * p.top_k + k, std::ldexp(k % 2 ? -1.5 : 1.5, -static_cast<int>(rng.integer(u, 0, 2))));
  }
}

// Adversarial extras where the kernel's behaviour is defined by IEEE arithmetic: a NaN and an
// infinity in gradY row 0 (R >= 2); row 1 as large as the dtype allows without any sum overflowing (its
// gradScales sums |v|*big stay below max/8 in every order, so fp32 partial sums cannot overflow
// where the exact sum does not); zero scales (signed-zero products) in row 2; every slot of the
// last row dropped.
void make_adversarial(const Params& p, TensorMap& in, Routing& routing, uint64_t seed) {
  Tensor& g = in.at("gradY");
  // With one row its NaN would reach every gradScales element and leave nothing finite to compare.
  if (p.hidden >= 2 && p.num_rows >= 2) {
    g.set(0, std::nan(""));
    g.set(1, -INFINITY);
  }
  if (p.num_rows >= 2) {
    double sum_v = 1;  // max over the row's slots of sum_j |x + b|
    if (p.has_scales) {
      const Tensor& x = in.at("expandedXOptional");
      for (int64_t k = 0; k < p.top_k; ++k) {
        const int64_t row = routing.row[static_cast<size_t>(p.top_k + k)];
        if (row < 0 || row * p.hidden >= x.numel()) continue;
        double s = 0;
        for (int64_t j = 0; j < p.hidden; ++j) {
          double v = std::fabs(x.get(row * p.hidden + j));
          if (p.has_bias) v += std::fabs(in.at("biasOptional").get(routing.expert[static_cast<size_t>(p.top_k + k)] * p.hidden + j));
          s += v;
        }
        sum_v = std::max(sum_v, s);
      }
    }
    const double big = round_to(p.dtype, max_finite(p.dtype) / (8 * sum_v), Rounding::kTowardZero);
    for (int64_t j = 0; j < p.hidden; ++j) g.set(p.hidden + j, (j % 2 ? -big : big));
    if (p.has_scales) {
      // Scales at most 1 keep the row's products finite.
      Tensor& s = in.at("scalesOptional");
      for (int64_t k = 0; k < p.top_k; ++k) s.set(p.top_k + k, std::min(1.0, std::fabs(s.get(p.top_k + k))));
    }
  }
  if (p.has_scales && p.num_rows >= 3) {
    Tensor& s = in.at("scalesOptional");
    for (int64_t k = 0; k < p.top_k; ++k) s.set(2 * p.top_k + k, 0.0);
  }
  if (p.num_rows >= 4) {
    for (int64_t k = 0; k < p.top_k; ++k) routing.row[static_cast<size_t>((p.num_rows - 1) * p.top_k + k)] = -1;
  }
  if (p.has_scales && p.num_rows >= 5) make_ties(p, in, seed);
}

}  // namespace

// The accepted params: the one table the reader checks against, that `opgate list --params-of`
// prints and cases/moe_finalize_routing_v2_grad/README.md holds, and that the unknown-key error lists.
const std::vector<ParamDoc>& param_docs() {
  static const std::vector<ParamDoc> docs = {
      {"dtype", "dtype", "float32", "gradY, expandedX and the outputs: float16, bfloat16 or float32"},
      {"R", "integer", "1", "token rows"},
      {"K", "integer", "1", "top-k slots per row"},
      {"H", "integer", "1", "hidden size"},
      {"scales", "bool", "false", "pass scalesOptional (without it bias and expertIdx are passed and ignored)"},
      {"bias", "bool", "false", "pass biasOptional and expertIdxOptional"},
      {"dropPadMode", "integer", "0", "aclnn attribute: 0 dropless, 1 drop/pad"},
      {"activeNum", "integer", "0", "aclnn attribute: active rows of expandedX (dropless)"},
      {"expertNum", "integer", "1", "aclnn attribute: experts"},
      {"expertCapacity", "integer", "1", "aclnn attribute: rows per expert (drop/pad)"},
      {"dropRate", "real", "0", "knob: share of slots given index -1"},
      {"skew", "real", "0", "knob: share of slots sent to expert 0 (overflows its capacity in drop/pad)"},
  };
  return docs;
}

Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j) {
  ParamReader r(j, &param_docs());
  Params p;
  Knobs k;
  p.dtype = r.dtype("dtype", DType::kF32);
  p.num_rows = r.integer("R", 1, 0, kMaxRows);
  p.has_scales = r.boolean("scales", false);
  p.has_bias = r.boolean("bias", false);
  p.top_k = r.integer("K", 1, 0, kMaxTopK);
  p.hidden = r.integer("H", 1, 0, kMaxHidden);
  // Attributes keep the full int64 range: out-of-range values are what validate must reject.
  p.drop_pad_mode = r.integer("dropPadMode", 0, INT64_MIN, INT64_MAX);
  p.active_num = r.integer("activeNum", 0, INT64_MIN, INT64_MAX);
  p.expert_num = r.integer("expertNum", 1, -kMaxExperts, kMaxExperts);
  p.expert_capacity = r.integer("expertCapacity", 1, -kMaxRows, kMaxRows);
  k.drop_rate = r.real("dropRate", 0.0, 0.0, 1.0);
  k.skew = r.real("skew", 0.0, 0.0, 1.0);
  OPGATE_TRY(r.finish());
  if (!p.has_scales && p.top_k != 1) {
    return parse_error(fmt::format("field 'params.K': {} needs \"scales\": true (without scales K is 1)", p.top_k));
  }
  return std::make_pair(p, k);
}

nlohmann::json to_json(const Params& p, const Knobs& k) {
  return {{"dtype", dtype_name(p.dtype)}, {"R", p.num_rows},
          {"K", p.top_k},                 {"H", p.hidden},
          {"scales", p.has_scales},       {"bias", p.has_bias},
          {"dropPadMode", p.drop_pad_mode}, {"activeNum", p.active_num},
          {"expertNum", p.expert_num},    {"expertCapacity", p.expert_capacity},
          {"dropRate", k.drop_rate},      {"skew", k.skew}};
}

nlohmann::json generate(Chooser& c) {
  static const std::vector<DType> kDtypes = {DType::kF32, DType::kF16, DType::kBF16};
  Builder b;
  b.dtype(c.one_of(kDtypes, "dtype"));
  b.rows(c.integer(1, 64, "R"));
  const bool scales = c.flag(0.75, "scales");
  b.scales(scales);
  if (scales) b.top_k(c.integer(1, 16, "K"));
  // Without scales a bias is a valid argument the kernel ignores (README, issue 13).
  b.bias(c.flag(scales ? 0.5 : 0.25, "bias"));
  b.hidden(c.integer(1, 300, "H"));
  const int64_t experts = c.integer(1, 16, "expertNum");
  if (c.flag(0.5, "dropPadMode")) {
    b.drop_pad(experts, c.integer(1, 32, "expertCapacity"));
  } else {
    b.experts(experts);
    if (c.flag(0.3, "activeNum")) b.active_num(c.integer(-2, 1200, "activeNum"));
  }
  b.drop_rate(static_cast<double>(c.integer(0, 4, "dropRate")) / 8);
  b.skew(static_cast<double>(c.integer(0, 4, "skew")) / 4);
  return b.json();
}

Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed) {
  TensorMap in;
  for (const auto& [name, spec] : specs) {
    if (!spec.present || name == "gradExpandedXOut" || name == "gradScalesOut") continue;
    in[name] = Tensor::zeros(spec.dtype, spec.shape);
  }
  Routing routing = make_routing(p, k, seed);
  // Activations are O(1); in bf16 and fp16 that keeps products well inside the range.
  fill_values(in.at("gradY"), mode, seed, "gradY", 1.0);
  if (p.has_scales) {
    fill_values(in.at("expandedXOptional"), mode, seed, "expandedXOptional", 1.0);
    fill_scales(in.at("scalesOptional"), mode, seed);
  }
  if (p.has_bias) fill_values(in.at("biasOptional"), mode, seed, "biasOptional", 0.1);
  if (mode == FillMode::kAdversarial) make_adversarial(p, in, routing, seed);
  Tensor& rows = in.at("expandedRowIdx");
  for (int64_t i = 0; i < rows.numel(); ++i) rows.set(i, static_cast<double>(routing.row[static_cast<size_t>(i)]));
  if (p.has_bias) {
    Tensor& experts = in.at("expertIdxOptional");
    for (int64_t i = 0; i < experts.numel(); ++i) {
      experts.set(i, static_cast<double>(routing.expert[static_cast<size_t>(i)]));
    }
  }
  return in;
}

ComparePlan compare_plan(const Params& p, const RefOutputs& /*ref*/, FillMode mode) {
  ComparePlan plan;
  OutputCheck gx;
  gx.name = "gradExpandedXOut";
  gx.kind = CheckKind::kExact;
  gx.device_dtype = p.dtype;
  gx.rounding = Rounding::kNearestEven;
  gx.reason = p.has_scales
                  ? "the fp32 product of two values of the dtype is exact and cast once with CAST_RINT "
                    "(spec §3.3), so the result is the correctly rounded product"
                  : "without scales the kernel copies gradY rows (spec §3.2)";
  plan.outputs.push_back(gx);

  OutputCheck gs;
  gs.name = "gradScalesOut";
  gs.device_dtype = p.dtype;
  if (!p.has_scales) {
    gs.kind = CheckKind::kUndefined;
    gs.reason = "without scales gradScalesOut is (R, 1) and never written (spec §3.1)";
    plan.outputs.push_back(gs);
    return plan;
  }
  gs.kind = CheckKind::kTolerance;
  // Ascend's v0.3: a reduction of H products per element, floating compute (core/ascend_standard.h).
  gs.op_class = OpClass::kComputeFloat;
  gs.accumulations = p.hidden;
  gs.tol.standard = Standard::kBound;
  gs.tol.u_acc = 0x1p-24;
  gs.tol.out_ulps = 0.5;
  if (mode == FillMode::kExact) {
    // Every product and partial sum the exact fill generates is an integer below 2^24, so the fp32
    // total is the exact sum in any order and the only rounding is the final CAST_RINT: the bits
    // are determined, ties included (a half-away or truncating cast fails). A case whose values
    // are overridden is planned as realistic (plan_fill, core/case.h).
    gs.kind = CheckKind::kExact;
    gs.rounding = Rounding::kNearestEven;
    gs.reason = "exact fill: products and partial sums are integers below 2^24, exact in fp32 in any "
                "order; the final CAST_RINT is the only rounding, so the result is the RNE-rounded sum";
  } else {
    // Error of an fp32 sum of H products with an unknown reduction order (hardware BlockReduceSum
    // over 8-element blocks, then a ReduceSum of the block sums, then chunk additions): at most
    // (H/8 + log2 H + 2) roundings along any path, doubled for the x+b and x*g roundings and for
    // the unknown tree shape (spec §4).
    const double h = static_cast<double>(std::max<int64_t>(p.hidden, 1));
    gs.tol.c = 2 * (std::ceil(h / 8) + std::ceil(std::log2(h)) + 2);
    gs.reason = fmt::format(
        "fp32 accumulation of H={} products in hardware order: |err| <= {} * 2^-24 * sum|(x+b)*g| "
        "+ half an output ulp (spec §3.3, §4)",
        p.hidden, gs.tol.c);
  }
  plan.outputs.push_back(gs);
  return plan;
}

std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs) {
  if (index.empty()) {  // the first dimension (report.html's error picture)
    if (output == "gradExpandedXOut") return p.drop_pad_mode == 1 ? "expert" : "expandedX row";
    return output == "gradScalesOut" ? "token row r" : "";
  }
  const Tensor& rows = inputs.at("expandedRowIdx");
  if (output == "gradExpandedXOut" && !index.empty()) {
    const int64_t row = p.drop_pad_mode == 1 && index.size() == 3 ? index[0] * p.expert_capacity + index[1] : index[0];
    const int64_t col = index.back();
    for (int64_t i = 0; i < rows.numel(); ++i) {
      if (static_cast<int64_t>(rows.get(i)) == row) {
        return fmt::format("expandedX row {} = (r {}, k {}), col {}", row, i / p.top_k, i % p.top_k, col);
      }
    }
    return fmt::format("expandedX row {} (no token routed here), col {}", row, col);
  }
  if (output == "gradScalesOut" && index.size() == 2) {
    const int64_t i = index[0] * p.top_k + index[1];
    if (i >= rows.numel()) return fmt::format("r {}, k {}", index[0], index[1]);
    const int64_t row = static_cast<int64_t>(rows.get(i));
    std::string expert;
    if (auto e = inputs.find("expertIdxOptional"); e != inputs.end()) {
      expert = fmt::format(", expert {}", static_cast<int64_t>(e->second.get(i)));
    }
    return fmt::format("r {}, k {} -> expandedX row {}{}{}", index[0], index[1], row,
                       row < 0 || row >= ref::expanded_rows(p) ? " (dropped)" : "", expert);
  }
  return "";
}

OPGATE_BIND_PROBLEM(moe_finalize_routing_v2_grad, (std::vector<std::string>{"gradExpandedXOut", "gradScalesOut"}))

const OpInfo& op_info() {
  static const OpInfo info{"moe_finalize_routing_v2_grad", "MoeFinalizeRoutingV2Grad", "mfrg",
                           ref::kReferenceVersion, parse, generate};
  return info;
}

}  // namespace opgate::cases::moe_finalize_routing_v2_grad
