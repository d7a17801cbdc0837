// CPU emulation of the A2/A3 aclnnMoeFFN kernel (FFN with expertTokens): the per-expert row blocks
// of ffn_base.h / ffn_quant.h and the numerics of spec §2.7 per path: fp32 cube accumulation in
// 16-deep fractals, fixpipe rounding to fp16 (RNE), the AscendC activation op sequences in half or
// fp32 (gelu_impl.h, silu_common_impl.h), AscendQuant in half (ascend_quant_pre_impl.h), the
// 19-bit fixpipe deqScale, AscendDequant for bf16 output; plus the defect catalogue.
#include "device/emu/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/dtype_convert.h"
#include "core/parallel.h"
#include "device/emu/moe_ffn_kernels.h"
#include "reference/math/shared_round.h"
#include "reference/math/shared_simd.h"

namespace opgate::emu::moe_ffn {
namespace {

namespace ffn = ref::moe_ffn;
using ffn::Activation;
using ffn::Path;

enum class Defect {
  kNone,
  kExpertTokensCumulative,
  kErfGelu,
  kBias2Dropped,
  kW1Transposed,
  kDeqScaleNotTruncated,
  kRequantHalfAway,
  kEmptyExpertShiftsWeights,
  kPerChannelScaleIgnored,
  kFixpipeTruncates,
  kHiddenCastRoundEven,
  kQuantScaleNotHalf,
  kAccNotConverted,
};

using DefectEntry = ::opgate::DefectEntry<Defect>;

constexpr DefectEntry kDefects[] = {
    {Defect::kExpertTokensCumulative, "mffn.expert_tokens_cumulative",
     "expertTokens are read as cumulative offsets (the V2/V3 index form) instead of counts"},
    {Defect::kErfGelu, "mffn.erf_gelu", "fastgelu is computed as the erf GELU x * Phi(x) instead of x / (1 + exp(-1.702 x))"},
    {Defect::kBias2Dropped, "mffn.bias2_dropped", "the second matmul clears its bias instead of adding bias2"},
    {Defect::kW1Transposed, "mffn.w1_transposed", "weight1 is read as (E, N1, K1), i.e. transposed"},
    {Defect::kDeqScaleNotTruncated, "mffn.deq_scale_not_truncated",
     "the fixpipe dequantises with all 32 bits of deqScale instead of the top 19"},
    {Defect::kRequantHalfAway, "mffn.requant_round_half_away",
     "the hidden re-quantisation rounds ties away from zero instead of to even"},
    {Defect::kEmptyExpertShiftsWeights, "mffn.empty_expert_shifts_weights",
     "an expert with no tokens is dropped from the expert list, so later experts use the next expert's weights"},
    {Defect::kPerChannelScaleIgnored, "mffn.per_channel_scale_ignored",
     "a per-channel (E, N1) scale is read as per-tensor: every channel uses scale[e, 0]"},
    {Defect::kFixpipeTruncates, "mffn.fixpipe_truncates",
     "the high-performance mm1 fixpipe converts the fp32 accumulator to fp16 by truncation instead of RNE"},
    {Defect::kHiddenCastRoundEven, "mffn.hidden_cast_round_even",
     "the fp32 hidden value is cast to fp16 / bf16 with RNE instead of CAST_ROUND (ties away)"},
    {Defect::kQuantScaleNotHalf, "mffn.quant_scale_not_half",
     "AscendQuant multiplies by the fp32 scale instead of its half cast"},
    {Defect::kAccNotConverted, "mffn.acc_not_converted",
     "the fp16 fixpipe dequantises the int32 accumulators as they are instead of float(acc) (spec §2.7), which "
     "differs once |acc| > 2^24"},
};

constexpr int64_t kRowBlock = 64;

Expected<Defect> parse_defect(const std::string& name) {
  return ::opgate::parse_defect(kDefects, Defect::kNone, name, "moe_ffn");
}

// Exact roundings by scaling with the quantum (shared_round.h: the values of round_to, without
// encoding to bits and back; they dominate the per-element work).
double r16(double v) { return math::round_fast(DType::kF16, v); }

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles). The narrowest
// row is a vector one (x86-64's SSE2 baseline, aarch64's NEON), and pick() gives it to the scalar
// setting too: one formulation on every path, no dead plain loop for mutants to hide in.
const IsaRow<Kernels> kRows[] = {
#if OPGATE_ARCH_X86_64
    {Isa::kSse2, &paths::sse2},
    {Isa::kAvx2, &paths::avx2},
    {Isa::kAvx512, &paths::avx512},
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &paths::neon},
#endif
};

// The row pick() chooses for the current path (math::isa()).
const IsaRow<Kernels>& current_row() {
  const Kernels* k = &pick(kRows, math::isa());
  for (const IsaRow<Kernels>& row : kRows) {
    if (row.kernels == k) return row;
  }
  return kRows[0];
}

}  // namespace

std::vector<math::Isa> kernel_isas() { return table_isas(kRows); }

void gemm_f32(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n, const float* bias, float* out) {
  pick(kRows, math::isa()).gemm_f32(a, rows, kdim, b, n, bias, out);
}

template <class T>
PackedInts pack_ints(const T* b, int64_t kdim, int64_t n, int64_t ld_k, int64_t ld_j) {
  PackedInts p;
  const IsaRow<Kernels>& row = current_row();
  p.isa = row.isa;
  p.kdim = kdim;
  p.n = n;
  p.nr = row.kernels->int_panel;
  const int64_t panels = (n + p.nr - 1) / p.nr;
  p.data.assign(static_cast<size_t>(panels * kdim * p.nr), 0u);
  for (int64_t panel = 0; panel < panels; ++panel) {
    const int64_t j0 = panel * p.nr, cols = std::min(p.nr, n - j0);
    uint32_t* dst = p.data.data() + panel * kdim * p.nr;
    for (int64_t k = 0; k < kdim; ++k) {
      for (int64_t j = 0; j < cols; ++j) dst[k * p.nr + j] = static_cast<uint32_t>(b[k * ld_k + (j0 + j) * ld_j]);
    }
  }
  return p;
}

template PackedInts pack_ints(const int8_t*, int64_t, int64_t, int64_t, int64_t);
template PackedInts pack_ints(const int32_t*, int64_t, int64_t, int64_t, int64_t);

void gemm_i32(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b, const int32_t* bias, int32_t* out) {
  const Kernels& k = pick(kRows, b.isa);
  OPGATE_CHECK(k.int_panel == b.nr, "gemm_i32: b was packed for another path's panels");
  k.gemm_i32(a, rows, lda, b, bias, out);
}

namespace {

// The AscendC activations evaluated in half: each vector op rounds to fp16 (RNE), with the
// coefficients as half constants (FasterGelu's -1.702 is -1.7021484375).
double act_half(Activation a, double x, bool erf_gelu) {
  switch (a) {
    case Activation::kRelu: return x > 0 ? x : 0.0;
    case Activation::kFastGelu:
    case Activation::kSilu: {
      if (erf_gelu && a == Activation::kFastGelu) return r16(x * 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))));
      const double c = a == Activation::kFastGelu ? r16(-1.702) : -1.0;
      const double d = r16(r16(std::exp(r16(x * c))) + 1.0);
      return r16(x / d);
    }
    case Activation::kGelu: {
      const double x3 = r16(x * r16(x * x));
      const double y = r16(r16(x + r16(x3 * r16(0.044715))) * r16(1.5957691216057308));
      const double upper = r16(std::exp(std::min(y, 0.0)));
      const double lower = r16(r16(std::exp(-std::fabs(y))) + 1.0);
      return r16(r16(x / lower) * upper);
    }
    default: return 0.0;
  }
}

// The same op sequences in fp32 (the high-precision and bf16 paths).
float act_f32(Activation a, float x, bool erf_gelu) {
  switch (a) {
    case Activation::kRelu: return x > 0 ? x : 0.0f;
    case Activation::kFastGelu:
    case Activation::kSilu: {
      if (erf_gelu && a == Activation::kFastGelu) return x * 0.5f * (1.0f + std::erf(x / std::sqrt(2.0f)));
      const float c = a == Activation::kFastGelu ? -1.702f : -1.0f;
      const float d = std::exp(x * c) + 1.0f;
      return x / d;
    }
    case Activation::kGelu: {
      const float x3 = x * (x * x);
      const float y = (x + x3 * 0.044715f) * 1.5957691216057308f;
      const float upper = std::exp(std::min(y, 0.0f));
      const float lower = std::exp(-std::fabs(y)) + 1.0f;
      return (x / lower) * upper;
    }
    default: return 0.0f;
  }
}

template <class T>
std::vector<T> values_as(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<T>(t.get(i));
  return v;
}

// The int8 (E, kdim, n) weights of every expert packed for gemm_i32; `transposed`: the
// w1_transposed defect's view, element (e, k, j) read from the memory of a (E, n, kdim) tensor.
std::vector<PackedInts> pack_experts(const Tensor& w, int64_t experts, int64_t kdim, int64_t n, bool transposed) {
  const int64_t ld_k = transposed ? 1 : n, ld_j = transposed ? kdim : 1;
  std::vector<PackedInts> out(static_cast<size_t>(experts));
  math::parallel_for(experts, [&](int64_t e) {
    out[static_cast<size_t>(e)] = pack_ints(w.ptr<int8_t>() + e * kdim * n, kdim, n, ld_k, ld_j);
  });
  return out;
}

const Tensor* find(const TensorMap& m, const char* name) {
  const auto it = m.find(name);
  return it == m.end() || !it->second.defined() ? nullptr : &it->second;
}

// The defect's view of weight1: element (e, k, n) read from the memory of a (E, N1, K1) tensor.
template <class T>
void transpose_experts(std::vector<T>& w, int64_t experts, int64_t rows, int64_t cols) {
  if (w.empty()) return;
  std::vector<T> t(w.size());
  for (int64_t e = 0; e < experts; ++e) {
    const T* src = w.data() + e * rows * cols;
    T* dst = t.data() + e * rows * cols;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
  }
  w = std::move(t);
}

// One launch of the kernel model.
struct Kernel {
  Kernel(const ffn::Params& params, Defect d, Tensor out)
      : p(params), path(ffn::path_of(params)), act(ffn::parse_activation(params.activation)), defect(d),
        k(params.k1), n(params.n1), y(std::move(out)) {}
  const ffn::Params& p;
  Path path;
  Activation act;
  Defect defect;
  int64_t k, n;
  Tensor y;
  std::vector<float> x, w1, w2, b1, b2, scale, offset, deq1, deq2;
  std::vector<int32_t> xi, b1i, b2i;
  std::vector<PackedInts> w1p, w2p;  // per expert

  bool quant() const { return path == Path::kQuantF16 || path == Path::kQuantBF16; }
  const float* bias1(int64_t e) const { return b1.empty() ? nullptr : b1.data() + e * n; }
  const float* bias2(int64_t e) const {
    return b2.empty() || defect == Defect::kBias2Dropped ? nullptr : b2.data() + e * k;
  }

  // Hidden value of the fp paths from the fp32 accumulator (spec §2.7 table).
  double hidden(float acc) const {
    const bool erf = defect == Defect::kErfGelu;
    const Rounding fixpipe = defect == Defect::kFixpipeTruncates ? Rounding::kTowardZero : Rounding::kNearestEven;
    const Rounding cast = defect == Defect::kHiddenCastRoundEven ? Rounding::kNearestEven : Rounding::kHalfAway;
    switch (path) {
      case Path::kF16HighPerformance: return act_half(act, math::round_fast(DType::kF16, acc, fixpipe), erf);
      case Path::kF16HighPrecision: return math::round_fast(DType::kF16, act_f32(act, acc, erf), cast);
      default: return math::round_fast(DType::kBF16, act_f32(act, acc, erf), cast);
    }
  }

  void float_block(int64_t we, int64_t row0, int64_t rows) {
    std::vector<float> h(static_cast<size_t>(rows * n));
    std::vector<float> out(static_cast<size_t>(rows * k));
    gemm_f32(x.data() + row0 * k, rows, k, w1.data() + we * k * n, n, bias1(we), h.data());
    for (float& v : h) v = static_cast<float>(hidden(v));
    gemm_f32(h.data(), rows, n, w2.data() + we * n * k, k, bias2(we), out.data());
    // Fixpipe fp32 -> fp16 / bf16 with RNE (ASSUMPTION, spec §2.7).
    const std::vector<double> wide(out.begin(), out.end());
    store_elements(y, row0 * k, wide.data(), rows * k);
  }

  // AscendQuant of one hidden value: t = f16(f16(a16 * f16(s)) + f16(o)), then sat8(rne(t)).
  int32_t requant(double a16, double s, double o) const {
    const double t = r16(r16(a16 * (defect == Defect::kQuantScaleNotHalf ? s : r16(s))) + r16(o));
    if (std::isnan(t)) return 0;  // ASSUMPTION: the int8 cast maps NaN to 0 (no valid case produces one)
    const double q = defect == Defect::kRequantHalfAway ? std::round(t) : std::nearbyint(t);
    return static_cast<int32_t>(std::clamp(q, -128.0, 127.0));
  }

  void quant_block(int64_t we, int64_t row0, int64_t rows) {
    std::vector<int32_t> acc(static_cast<size_t>(rows * n));
    std::vector<int32_t> acc2(static_cast<size_t>(rows * k));
    gemm_i32(xi.data() + row0 * k, rows, k, w1p[static_cast<size_t>(we)], b1i.empty() ? nullptr : b1i.data() + we * n,
             acc.data());
    const bool erf = defect == Defect::kErfGelu;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int32_t& v = acc[static_cast<size_t>(i * n + j)];
        const double acc_f = acc_value(v);
        const double deq = deq1[static_cast<size_t>(we * n + j)];
        double a16 = 0;
        if (path == Path::kQuantF16) {
          a16 = act_half(act, r16(acc_f * deq), erf);  // fixpipe: one rounding
        } else {
          const float h = static_cast<float>(acc_f) * static_cast<float>(deq);  // AscendDequant in fp32
          a16 = r16(act_f32(act, h, erf));
        }
        const bool channel = p.per_channel_scale && defect != Defect::kPerChannelScaleIgnored;
        const double s = p.per_channel_scale ? scale[static_cast<size_t>(we * n + (channel ? j : 0))]
                                             : scale[static_cast<size_t>(we)];
        v = requant(a16, s, offset[static_cast<size_t>(we)]);
      }
    }
    const bool drop_b2 = b2i.empty() || defect == Defect::kBias2Dropped;
    gemm_i32(acc.data(), rows, n, w2p[static_cast<size_t>(we)], drop_b2 ? nullptr : b2i.data() + we * k, acc2.data());
    std::vector<double> out(static_cast<size_t>(rows * k));
    for (int64_t i = 0; i < rows * k; ++i) {
      const double deq = deq2[static_cast<size_t>(we * k + i % k)];
      out[static_cast<size_t>(i)] = dequant_out(acc_value(acc2[static_cast<size_t>(i)]), deq);
    }
    store_elements(y, row0 * k, out.data(), rows * k);
  }

  // float(acc) of an int32 accumulator (RNE), as the cube hands it to the dequant (spec §2.7).
  double acc_value(int32_t acc) const {
    const bool raw = defect == Defect::kAccNotConverted && path == Path::kQuantF16;
    return raw ? static_cast<double>(acc) : static_cast<double>(static_cast<float>(acc));
  }

  // y = fixpipe f16(acc * deq) (one rounding), or AscendDequant bf16(fp32(acc * deq)) with RINT.
  double dequant_out(double acc, double deq) const {
    if (path == Path::kQuantF16) return r16(acc * deq);
    return math::round_fast(DType::kBF16, static_cast<double>(static_cast<float>(acc) * static_cast<float>(deq)));
  }

  // ProcessZeroN1: bias2 broadcast (cast, or vector dequant for int8), zeros without bias2.
  void zero_hidden(int64_t we, int64_t row0, int64_t rows) {
    for (int64_t j = 0; j < k; ++j) {
      double v = 0;
      if (quant() && !b2i.empty() && defect != Defect::kBias2Dropped) {
        const float prod = static_cast<float>(b2i[static_cast<size_t>(we * k + j)]) *
                           static_cast<float>(deq2[static_cast<size_t>(we * k + j)]);
        v = path == Path::kQuantF16 ? r16(prod) : math::round_fast(DType::kBF16, prod);
      } else if (!quant() && bias2(we) != nullptr) {
        const double b = bias2(we)[j];
        v = path == Path::kBF16 ? math::round_fast(DType::kBF16, b, Rounding::kHalfAway) : b;
      }
      for (int64_t r = row0; r < row0 + rows; ++r) y.set(r * k + j, v);
    }
  }
};

// Row blocks per expert: [start, end) and the weight slot the kernel uses for them.
struct Block {
  int64_t weights, row0, rows;
};

std::vector<Block> row_blocks(const ffn::Params& p, Defect defect, int64_t block) {
  std::vector<Block> out;
  int64_t start = 0, slot = 0;
  for (size_t e = 0; e < p.expert_tokens.size(); ++e) {
    const int64_t c = p.expert_tokens[e];
    int64_t begin = start, end = start + c;
    if (defect == Defect::kExpertTokensCumulative) {
      begin = e == 0 ? 0 : p.expert_tokens[e - 1];
      end = c;
    }
    start += c;
    if (end <= begin) continue;
    const int64_t w = defect == Defect::kEmptyExpertShiftsWeights ? slot++ : static_cast<int64_t>(e);
    for (int64_t r = begin; r < std::min(end, p.m); r += block) {
      out.push_back({w, r, std::min(block, std::min(end, p.m) - r)});
    }
  }
  return out;
}

}  // namespace

std::vector<DefectInfo> defects() {
  return defect_infos(kDefects);
}

Status run(const ffn::Params& p, const TensorMap& in, TensorMap& out, const std::string& defect_name) {
  OPGATE_ASSIGN_OR_RETURN(const Defect defect, parse_defect(defect_name));
  const SpecMap s = ffn::specs(p);
  for (const auto& [name, spec] : s) {
    const Tensor* t = name == "y" ? find(out, "y") : find(in, name.c_str());
    if (spec.present && (t == nullptr || t->numel() != shape_numel(spec.shape) || t->dtype() != spec.dtype)) {
      return internal_error(fmt::format("emu moe_ffn: tensor {} is missing or not {} of {} elements", name,
                                        dtype_name(spec.dtype), shape_numel(spec.shape)));
    }
  }
  Kernel kr(p, defect, *find(out, "y"));
  if (p.m == 0 || p.k1 == 0) return Status::ok();  // tiling launches nothing (bs, k1 or n2 is 0)
  if (kr.quant()) {
    kr.xi = values_as<int32_t>(in.at("x"));
    const int64_t experts = ffn::num_experts(p);
    kr.w1p = pack_experts(in.at("weight1"), experts, p.k1, p.n1, defect == Defect::kW1Transposed);
    kr.w2p = pack_experts(in.at("weight2"), experts, p.n1, p.k1, false);
    if (p.has_bias1) kr.b1i = values_as<int32_t>(in.at("bias1"));
    if (p.has_bias2) kr.b2i = values_as<int32_t>(in.at("bias2"));
    kr.scale = values_as<float>(in.at("scale"));
    kr.offset = values_as<float>(in.at("offset"));
    const bool fixpipe = kr.path == Path::kQuantF16 && p.n1 > 0 && defect != Defect::kDeqScaleNotTruncated;
    for (const auto& [name, dst] : {std::pair{"deqScale1", &kr.deq1}, std::pair{"deqScale2", &kr.deq2}}) {
      const Tensor& t = in.at(name);
      dst->resize(static_cast<size_t>(t.numel()));
      for (int64_t i = 0; i < t.numel(); ++i) {
        (*dst)[static_cast<size_t>(i)] = static_cast<float>(ffn::deq_value(t, i, fixpipe));
      }
    }
  } else {
    kr.x = values_as<float>(in.at("x"));
    kr.w1 = values_as<float>(in.at("weight1"));
    kr.w2 = values_as<float>(in.at("weight2"));
    if (p.has_bias1) kr.b1 = values_as<float>(in.at("bias1"));
    if (p.has_bias2) kr.b2 = values_as<float>(in.at("bias2"));
  }
  if (defect == Defect::kW1Transposed) {
    transpose_experts(kr.w1, ffn::num_experts(p), p.n1, p.k1);
  }
  const std::vector<Block> blocks = row_blocks(p, defect, kRowBlock);
  math::parallel_for(static_cast<int64_t>(blocks.size()), [&](int64_t b) {
    const Block& blk = blocks[static_cast<size_t>(b)];
    if (p.n1 == 0) {
      kr.zero_hidden(blk.weights, blk.row0, blk.rows);
    } else if (kr.quant()) {
      kr.quant_block(blk.weights, blk.row0, blk.rows);
    } else {
      kr.float_block(blk.weights, blk.row0, blk.rows);
    }
  });
  return Status::ok();
}

}  // namespace opgate::emu::moe_ffn
