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
#include "reference/math/shared_round.h"
#include "reference/math/shared_simd.h"
#include "core/vector_memory.h"

// The vector helpers are always inlined, so their vector arguments never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

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
};

constexpr int64_t kFractal = 16;  // cube K depth of one fractal (ASSUMPTION, spec §1.4.7)
constexpr int64_t kRowBlock = 64;

Expected<Defect> parse_defect(const std::string& name) {
  return ::opgate::parse_defect(kDefects, Defect::kNone, name, "moe_ffn");
}

// Exact roundings by scaling with the quantum (shared_round.h: the values of round_to, without
// encoding to bits and back; they dominate the per-element work).
double r16(double v) { return math::round_fast(DType::kF16, v); }

// out[r][j] = fp32 sum of bias[j] and sum_k a[r][k] b[k][j]: a sequential fp32 sum inside each
// 16-deep fractal, each fractal sum then added to the accumulator. Vectorised across output
// columns (each lane one element's own sums, multiply and add separate: the device library has no
// FP contraction), blocked like reference/math/shared_gemm:
// rows packed in slivers of kMr, kKcF x kNr panels of b, the accumulators in registers across
// the fractals of a k block (kKcF is a multiple of the fractal, so blocks start on fractals).
// Vectors of the path's native width (wider generic vectors would be split through memory).
typedef float F4 __attribute__((vector_size(16)));
typedef float F8 __attribute__((vector_size(32)));
typedef float F16 __attribute__((vector_size(64)));
constexpr int64_t kKcF = 256;

using vec::load;
using vec::store;

template <typename V, int kMr, int kNv>
OPGATE_INLINE void tile_f32(const float* ap, const float* bp, int64_t kc, float* c, int64_t ldc, int64_t mr,
                            int64_t nr) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  constexpr int64_t kNr = kLanes * kNv;
  float edge[kMr * kNr] = {};
  const bool full = mr == kMr && nr == kNr;
  float* dst = full ? c : edge;
  const int64_t ld = full ? ldc : kNr;
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(c + r * ldc, nr, edge + r * kNr);
  V acc[kMr][kNv];
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) acc[r][v] = load<V>(dst + r * ld + kLanes * v);
  }
  for (int64_t f0 = 0; f0 < kc; f0 += kFractal) {
    V part[kMr][kNv] = {};
    for (int64_t k = f0; k < std::min(kc, f0 + kFractal); ++k) {
      V bv[kNv];
      for (int v = 0; v < kNv; ++v) bv[v] = load<V>(bp + k * kNr + kLanes * v);
      for (int r = 0; r < kMr; ++r) {
        const float av = ap[k * kMr + r];
        for (int v = 0; v < kNv; ++v) part[r][v] += bv[v] * av;
      }
    }
    for (int r = 0; r < kMr; ++r) {
      for (int v = 0; v < kNv; ++v) acc[r][v] += part[r][v];
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) store<V>(dst + r * ld + kLanes * v, acc[r][v]);
  }
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(edge + r * kNr, nr, c + r * ldc);
}

template <typename V, int kMr, int kNv>
OPGATE_INLINE void gemm_f32_blocked(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n,
                                    const float* bias, float* out) {
  constexpr int64_t kNr = static_cast<int64_t>(sizeof(V) / sizeof(float)) * kNv;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) out[r * n + j] = bias ? bias[j] : 0.0f;
  }
  static thread_local std::vector<float> apack, bpack;
  const int64_t slivers = (rows + kMr - 1) / kMr;
  apack.resize(static_cast<size_t>(slivers * kMr * std::min(kKcF, kdim)));
  bpack.resize(static_cast<size_t>(kKcF * kNr));
  for (int64_t pc = 0; pc < kdim; pc += kKcF) {
    const int64_t kc = std::min(kKcF, kdim - pc);
    for (int64_t s = 0; s < slivers; ++s) {
      float* dst = apack.data() + s * kMr * kc;
      for (int64_t r = 0; r < kMr; ++r) {
        const int64_t row = s * kMr + r;
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = row < rows ? a[row * kdim + pc + k] : 0.0f;
      }
    }
    for (int64_t jr = 0; jr < n; jr += kNr) {
      const int64_t nr = std::min(kNr, n - jr);
      for (int64_t k = 0; k < kc; ++k) {
        float* dst = bpack.data() + k * kNr;
        std::copy_n(b + (pc + k) * n + jr, nr, dst);
        std::fill(dst + nr, dst + kNr, 0.0f);
      }
      for (int64_t s = 0; s < slivers; ++s) {
        tile_f32<V, kMr, kNv>(apack.data() + s * kMr * kc, bpack.data(), kc, out + s * kMr * n + jr, n,
                           std::min<int64_t>(kMr, rows - s * kMr), nr);
      }
    }
  }
}

// Register tiles: accumulators and fractal sums of 3 x 8 (SSE2: 12 of 16 xmm), 3 x 16 (AVX2: 12 of
// 16 ymm), 6 x 32 (AVX-512: 24 of 32 zmm) outputs.
void gemm_f32_sse2(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n, const float* bias,
                   float* out) {
  gemm_f32_blocked<F4, 3, 2>(a, rows, kdim, b, n, bias, out);
}
__attribute__((target("avx2"))) void gemm_f32_avx2(const float* a, int64_t rows, int64_t kdim, const float* b,
                                                   int64_t n, const float* bias, float* out) {
  gemm_f32_blocked<F8, 3, 2>(a, rows, kdim, b, n, bias, out);
}
__attribute__((target("avx512f,avx2"))) void gemm_f32_avx512(const float* a, int64_t rows, int64_t kdim,
                                                             const float* b, int64_t n, const float* bias,
                                                             float* out) {
  gemm_f32_blocked<F16, 6, 2>(a, rows, kdim, b, n, bias, out);
}

void gemm_f32(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n, const float* bias,
              float* out) {
  switch (math::isa()) {
    // One formulation on every path (no dead plain loop for mutants to hide in): SSE2 is x86-64's
    // baseline, so the scalar setting runs the SSE2 code.
    case math::Isa::kNeon:
    case math::Isa::kScalar:
    case math::Isa::kSse2: return gemm_f32_sse2(a, rows, kdim, b, n, bias, out);
    case math::Isa::kAvx2: return gemm_f32_avx2(a, rows, kdim, b, n, bias, out);
    case math::Isa::kAvx512: return gemm_f32_avx512(a, rows, kdim, b, n, bias, out);
  }
}

// int32 cube accumulation of the int8 path: out = bias + a b in int32 sums that wrap like the
// hardware (mod 2^32; check_data keeps valid cases in range). Sums mod 2^32 are associative and
// commutative, so no blocking, vector width or order can change a bit: uint32 lanes across output
// columns (vpmulld / vpaddd; unsigned, so the wrap-around is defined), b packed once per expert
// into column panels of the path's tile width, the accumulators in registers across a k block.
typedef uint32_t U4 __attribute__((vector_size(16)));
typedef uint32_t U8 __attribute__((vector_size(32)));
typedef uint32_t U16 __attribute__((vector_size(64)));
constexpr int64_t kKcI = 256;

// SSE2 is x86-64's baseline, so the scalar setting runs the SSE2 code (one formulation on every
// path, no dead plain loop for mutants to hide in).
math::Isa int_path() {
  const math::Isa isa = math::isa();
  return isa == math::Isa::kScalar ? math::Isa::kSse2 : isa;
}

// Register tiles (rows x vectors of columns): SSE2 4 x 2 of 4 lanes (8 of 16 xmm), AVX2 6 x 2 of 8
// (12 of 16 ymm), AVX-512 6 x 4 of 16 (24 of 32 zmm); the panel width is the tile's columns.
int64_t panel_width(math::Isa isa) {
  return isa == math::Isa::kAvx512 ? 64 : isa == math::Isa::kAvx2 ? 16 : 8;
}

// c[r][j] += sum_{k < kc} a[r * lda + k] * bp[k * kNr + j] for r < mr, j < nr. Rows past mr read
// row mr - 1 again (their sums land in the discarded part of the edge tile).
template <typename V, int kMr, int kNv>
OPGATE_INLINE void tile_i32(const int32_t* a, int64_t lda, int64_t mr, const uint32_t* bp, int64_t kc, uint32_t* c,
                            int64_t ldc, int64_t nr) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(uint32_t);
  constexpr int64_t kNr = kLanes * kNv;
  uint32_t edge[kMr * kNr] = {};
  const bool full = mr == kMr && nr == kNr;
  uint32_t* dst = full ? c : edge;
  const int64_t ld = full ? ldc : kNr;
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(c + r * ldc, nr, edge + r * kNr);
  const int32_t* row[kMr];
  for (int r = 0; r < kMr; ++r) row[r] = a + std::min<int64_t>(r, mr - 1) * lda;
  V acc[kMr][kNv];
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) acc[r][v] = load<V>(dst + r * ld + kLanes * v);
  }
  for (int64_t k = 0; k < kc; ++k) {
    V bv[kNv];
    for (int v = 0; v < kNv; ++v) bv[v] = load<V>(bp + k * kNr + kLanes * v);
    for (int r = 0; r < kMr; ++r) {
      const auto av = static_cast<uint32_t>(row[r][k]);
      for (int v = 0; v < kNv; ++v) acc[r][v] += bv[v] * av;
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) store<V>(dst + r * ld + kLanes * v, acc[r][v]);
  }
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(edge + r * kNr, nr, c + r * ldc);
}

template <typename V, int kMr, int kNv>
OPGATE_INLINE void gemm_i32_blocked(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b,
                                    const int32_t* bias, int32_t* out) {
  constexpr int64_t kNr = static_cast<int64_t>(sizeof(V) / sizeof(uint32_t)) * kNv;
  const int64_t n = b.n;
  auto* c = reinterpret_cast<uint32_t*>(out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) c[r * n + j] = bias ? static_cast<uint32_t>(bias[j]) : 0u;
  }
  for (int64_t pc = 0; pc < b.kdim; pc += kKcI) {
    const int64_t kc = std::min(kKcI, b.kdim - pc);
    for (int64_t jr = 0; jr < n; jr += kNr) {
      const uint32_t* bp = b.data.data() + jr * b.kdim + pc * kNr;  // panel jr / kNr, row pc
      for (int64_t s = 0; s < rows; s += kMr) {
        tile_i32<V, kMr, kNv>(a + s * lda + pc, lda, std::min<int64_t>(kMr, rows - s), bp, kc, c + s * n + jr, n,
                              std::min(kNr, n - jr));
      }
    }
  }
}

void gemm_i32_sse2(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b, const int32_t* bias,
                   int32_t* out) {
  gemm_i32_blocked<U4, 4, 2>(a, rows, lda, b, bias, out);
}
__attribute__((target("avx2"))) void gemm_i32_avx2(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b,
                                                   const int32_t* bias, int32_t* out) {
  gemm_i32_blocked<U8, 6, 2>(a, rows, lda, b, bias, out);
}
__attribute__((target("avx512f,avx2"))) void gemm_i32_avx512(const int32_t* a, int64_t rows, int64_t lda,
                                                             const PackedInts& b, const int32_t* bias,
                                                             int32_t* out) {
  gemm_i32_blocked<U16, 6, 4>(a, rows, lda, b, bias, out);
}

}  // namespace

template <class T>
PackedInts pack_ints(const T* b, int64_t kdim, int64_t n, int64_t ld_k, int64_t ld_j) {
  PackedInts p;
  p.isa = int_path();
  p.kdim = kdim;
  p.n = n;
  p.nr = panel_width(p.isa);
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
  switch (b.isa) {
    case math::Isa::kNeon:
    case math::Isa::kScalar:
    case math::Isa::kSse2: return gemm_i32_sse2(a, rows, lda, b, bias, out);
    case math::Isa::kAvx2: return gemm_i32_avx2(a, rows, lda, b, bias, out);
    case math::Isa::kAvx512: return gemm_i32_avx512(a, rows, lda, b, bias, out);
  }
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
        const auto acc_f = static_cast<float>(v);
        const double deq = deq1[static_cast<size_t>(we * n + j)];
        double a16 = 0;
        if (path == Path::kQuantF16) {
          a16 = act_half(act, r16(static_cast<double>(acc_f) * deq), erf);  // fixpipe: one rounding
        } else {
          const float h = acc_f * static_cast<float>(deq);  // AscendDequant in fp32
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
      out[static_cast<size_t>(i)] = dequant_out(static_cast<float>(acc2[static_cast<size_t>(i)]), deq);
    }
    store_elements(y, row0 * k, out.data(), rows * k);
  }

  // y = fixpipe f16(acc * deq) (one rounding), or AscendDequant bf16(fp32(acc * deq)) with RINT.
  double dequant_out(float acc, double deq) const {
    if (path == Path::kQuantF16) return r16(static_cast<double>(acc) * deq);
    return math::round_fast(DType::kBF16, static_cast<double>(acc * static_cast<float>(deq)));
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
