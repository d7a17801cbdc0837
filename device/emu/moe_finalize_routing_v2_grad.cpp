// CPU emulation of the A2/A3 aclnnMoeFinalizeRoutingV2Grad kernel: scatter of routing-ops.md §3.2
// and the fp32 numerics of §3.3 (one RNE rounding of the product for gradExpandedX; fp32 block-wise
// reduction for gradScales), plus the defect catalogue used by the fault backend.
#include "device/emu/moe_finalize_routing_v2_grad.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/parallel.h"
#include "device/emu/moe_finalize_routing_v2_grad_kernels.h"
#include "reference/math/shared_half.h"
#include "reference/math/shared_simd.h"

namespace opgate::emu::moe_finalize_routing_v2_grad {

namespace detail {

// bf16 bits of v with one RNE rounding (the carry on the fp32 bits); NaN keeps its sign and top
// payload bits and becomes quiet, as core/dtype.h's encoder does. Branch-free, so it vectorises.
uint16_t bf16_bits(float v) {
  uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  const auto rounded = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  const auto quiet_nan = static_cast<uint16_t>((u >> 16) | 0x40u);
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded;
}

uint16_t f16_bits(float v) {
  uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) {  // Inf, or NaN: quiet, sign and top 10 payload bits kept
    return static_cast<uint16_t>(a == 0x7F800000u ? sign | 0x7C00u : sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  }
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to Inf
  if (a >= 0x38800000u) {  // normal in fp16 (>= 2^-14): rebias, drop 13 bits, RNE (a carry may
                           // reach the exponent, which is the right result)
    uint32_t h = (a - 0x38000000u) >> 13;
    const uint32_t rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0)) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal in fp16: the count of 2^-24 quanta, RNE; 0x400 (rounded up to 2^-14) is the right bits.
  const uint32_t e = a >> 23;
  if (e < 102) return static_cast<uint16_t>(sign);  // < 2^-25: below half a quantum
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14 .. 24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u) != 0)) ++q;
  return static_cast<uint16_t>(sign | q);
}

}  // namespace detail

namespace {

// BlockReduceSum over one 32-byte block: a pairwise tree, the missing tail lanes being zero.
float block_reduce_sum(const float* v, int64_t n) {
  std::array<float, kBlock> lane{};
  std::copy(v, v + n, lane.begin());
  const float s01 = lane[0] + lane[1];
  const float s23 = lane[2] + lane[3];
  const float s45 = lane[4] + lane[5];
  const float s67 = lane[6] + lane[7];
  const float s0123 = s01 + s23;
  const float s4567 = s45 + s67;
  return s0123 + s4567;
}

// The scalar row: no vector stores, the block sums one tree at a time.
float add_full_blocks_scalar(float acc, const float* v, int64_t n) {
  for (int64_t o = 0; o + kBlock <= n; o += kBlock) acc += block_reduce_sum(v + o, kBlock);
  return acc;
}

const Kernels kScalarKernels = {nullptr, nullptr, add_full_blocks_scalar};

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles). SSE2 has no
// fp16 conversion, so its row has only the block sums; AVX-512 runs the AVX2 + F16C row.
const IsaRow<Kernels> kRows[] = {
    {Isa::kScalar, &kScalarKernels},
#if OPGATE_ARCH_X86_64
    {Isa::kSse2, &paths::sse2},
    {Isa::kAvx2, &paths::avx2},
    {Isa::kAvx512, &paths::avx2},
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &paths::neon},
#endif
};

// The row of each path, picked once: the stores and block sums run per tile of a row, where a pick
// per call would cost more than a short tile's work.
const Kernels& kernels() {
  static_assert(static_cast<int>(Isa::kNeon) == 4, "one entry per Isa value, kNeon the last");
  static const std::array<const Kernels*, 5> by_isa = [] {
    std::array<const Kernels*, 5> out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = &pick(kRows, static_cast<Isa>(i));
    return out;
  }();
  return *by_isa[static_cast<size_t>(math::isa())];
}

}  // namespace

namespace detail {

bool vector_stores() { return kernels().floats_to_f16 != nullptr; }

std::vector<math::Isa> kernel_isas() { return table_isas(kRows); }

// The vector path takes a prefix (whole vectors) and the scalar function the rest (every element
// on a path without vector stores): one tail loop for both, so the ci tier's short rows exercise
// it everywhere.
void floats_to_bf16(const float* v, int64_t n, uint16_t* dst) {
  const Kernels& k = kernels();
  for (int64_t j = k.floats_to_bf16 != nullptr ? k.floats_to_bf16(v, n, dst) : 0; j < n; ++j) dst[j] = bf16_bits(v[j]);
}

void floats_to_f16(const float* v, int64_t n, uint16_t* dst) {
  const Kernels& k = kernels();
  for (int64_t j = k.floats_to_f16 != nullptr ? k.floats_to_f16(v, n, dst) : 0; j < n; ++j) dst[j] = f16_bits(v[j]);
}

}  // namespace detail

namespace {

namespace grad_ref = ref::moe_finalize_routing_v2_grad;

enum class Defect {
  kNone,
  kScaleNotApplied,
  kBiasIgnoredForDropped,
  kZeroFillSkippedInDropPad,
  kActiveNumOffByOne,
  kKMajorIndex,
  kGradScalesHalfAccumulation,
  kLastBlockDropped,
  kNanFlushedToZero,
  kGradScalesCastHalfAway,
};

using DefectEntry = ::opgate::DefectEntry<Defect>;

constexpr DefectEntry kDefects[] = {
    {Defect::kScaleNotApplied, "mfrg.scale_not_applied",
     "gradExpandedX copies gradY without multiplying by the slot's scale"},
    {Defect::kBiasIgnoredForDropped, "mfrg.bias_ignored_for_dropped",
     "a dropped slot (-1, >= activeNum, >= E*C) gets gradScales 0 instead of sum bias*gradY"},
    {Defect::kZeroFillSkippedInDropPad, "mfrg.zero_fill_skipped_in_drop_pad",
     "dropPadMode 1 skips the zero initialisation, so rows no index addresses keep stale memory"},
    {Defect::kActiveNumOffByOne, "mfrg.active_num_off_by_one",
     "with an effective activeNum the row activeNum-1 is treated as dropped (row + 1 < activeNum)"},
    {Defect::kKMajorIndex, "mfrg.k_major_index",
     "slot (r, k) reads expandedRowIdx[k*R + r], the forward's K-major layout, not [r*K + k]"},
    {Defect::kGradScalesHalfAccumulation, "mfrg.grad_scales_half_accumulation",
     "gradScales is accumulated sequentially in the output dtype instead of fp32"},
    {Defect::kLastBlockDropped, "mfrg.last_block_dropped",
     "the gradScales reduction ignores the H % 8 elements after the last full 32-byte block"},
    {Defect::kNanFlushedToZero, "mfrg.nan_flushed_to_zero",
     "gradExpandedX passes a NaN-unsafe select (v >= -Inf ? v : 0, as a Compare/Select flush would) "
     "that turns NaN into 0; Inf is kept"},
    {Defect::kGradScalesCastHalfAway, "mfrg.grad_scales_cast_half_away",
     "the final fp32 -> T cast of gradScales rounds ties away from zero (CAST_ROUND) instead of "
     "CAST_RINT"},
};

// hiddenPrePart: elements per H-chunk of the gradScales reduction. The tiling derives it from the
// UB size, which the spec does not pin down; 4096 keeps common hidden sizes in one chunk (§3.3).
constexpr int64_t kHiddenPrePart = 4096;
// Columns the emulator converts and reduces at a time (not a kernel parameter: any multiple of
// kBlock dividing kHiddenPrePart gives the same sums).
constexpr int64_t kTile = 512;
static_assert(kHiddenPrePart % kTile == 0 && kTile % kBlock == 0, "tiles align with chunks and blocks");

Expected<Defect> parse_defect(const std::string& name) {
  return ::opgate::parse_defect(kDefects, Defect::kNone, name, "moe_finalize_routing_v2_grad");
}

// Adds the block sums of v[0, n) to acc in order: the sequential fp32 sum of a chunk (ReduceSum)
// continued over a piece of it. Whole blocks on the path's kernel (the same tree), the partial
// last one here.
float add_block_sums(float acc, const float* v, int64_t n) {
  acc = kernels().add_full_blocks(acc, v, n);
  const int64_t o = n - n % kBlock;
  if (o < n) acc += block_reduce_sum(v + o, n - o);
  return acc;
}

// The fp32 value the kernel casts (RINT) into gradScalesOut; the defects change the order or dtype.
double reduce_products(const float* prod, int64_t n, DType out_dtype, Defect defect) {
  if (defect == Defect::kLastBlockDropped) n -= n % kBlock;
  if (defect == Defect::kGradScalesHalfAccumulation) {
    double acc = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      acc = round_to(out_dtype, acc + round_to(out_dtype, static_cast<double>(prod[j])));
    }
    return acc;
  }
  float total = 0.0f;
  for (int64_t c = 0; c < n; c += kHiddenPrePart) {
    total += add_block_sums(0.0f, prod + c, std::min(kHiddenPrePart, n - c));
  }
  return static_cast<double>(total);
}

// The defect's flush: every ordered compare with NaN is false, so the select yields 0 for NaN.
float nan_unsafe_select(float v) { return v >= -INFINITY ? v : 0.0f; }

// Elements [start, start + n) of a float16, bfloat16 or float32 tensor (the operator's only float
// dtypes, §3.1) as fp32; the kernel's Cast to fp32 is exact (halves by the shared vector converter).
void load_floats(const Tensor& t, int64_t start, int64_t n, float* dst) {
  if (t.dtype() == DType::kF16 || t.dtype() == DType::kBF16) {
    math::halves_to_float(t.ptr<uint16_t>() + start, n, t.dtype() == DType::kBF16, dst);
  } else {
    std::copy(t.ptr<float>() + start, t.ptr<float>() + start + n, dst);
  }
}

// Stores fp32 values into t[start, start + n) with one RNE rounding to t's dtype (the kernel's
// CAST_RINT).
void store_floats(Tensor& t, int64_t start, int64_t n, const float* v) {
  if (t.dtype() == DType::kF32) {
    std::copy(v, v + n, t.ptr<float>() + start);
    return;
  }
  uint16_t* dst = t.ptr<uint16_t>() + start;
  if (t.dtype() == DType::kBF16) {
    detail::floats_to_bf16(v, n, dst);
    return;
  }
  detail::floats_to_f16(v, n, dst);
}

Status require(const TensorMap& m, const char* name, int64_t numel, const Tensor** t) {
  const auto it = m.find(name);
  if (it == m.end() || !it->second.defined() || it->second.numel() != numel) {
    return internal_error(
        fmt::format("emu moe_finalize_routing_v2_grad: tensor {} is missing or not of {} elements",
                    name, numel));
  }
  *t = &it->second;
  return Status::ok();
}

// The tensors and settings of one call, and the work of one token.
struct Call {
  const Tensor* gy = nullptr;
  const Tensor* x = nullptr;
  const Tensor* sc = nullptr;
  const Tensor* ei = nullptr;
  const Tensor* b = nullptr;
  Tensor gx, gs;  // copies share storage: writes land in the caller's buffers
  Defect defect = Defect::kNone;
  int64_t k_n = 1, h = 0, row_limit = 0;
  bool use_bias = false;
  std::vector<int64_t> row_of;  // the row slot i addresses
  std::vector<int64_t> writer;  // the last slot writing each row, -1 for none

  bool is_valid(int64_t row) const { return row >= 0 && row < row_limit; }
  bool writes(int64_t i) const {
    const int64_t row = row_of[static_cast<size_t>(i)];
    return is_valid(row) && writer[static_cast<size_t>(row)] == i;
  }
};

// Scratch of one token: its gradY row as fp32 and column tiles of kTile elements, which keep the
// converted rows in L1 (kTile divides kHiddenPrePart: a tile never straddles two chunks).
struct Scratch {
  std::vector<float> g, x, b, prod, full_row;
};

// gradExpandedX row of slot i: one RNE rounding of gradY * scale per element.
void write_grad_x(Call& c, int64_t i, Scratch& w) {
  const int64_t h = c.h;
  const int64_t row = c.row_of[static_cast<size_t>(i)];
  const auto scale = static_cast<float>(c.sc->get(i));
  float* pr = w.prod.data();
  for (int64_t j0 = 0; j0 < h; j0 += kTile) {
    const int64_t n = std::min(kTile, h - j0);
    const float* g = w.g.data() + j0;
    if (c.defect == Defect::kScaleNotApplied) {
      std::copy(g, g + n, pr);
    } else {
      for (int64_t j = 0; j < n; ++j) pr[j] = g[j] * scale;
    }
    if (c.defect == Defect::kNanFlushedToZero) {
      for (int64_t j = 0; j < n; ++j) pr[j] = nan_unsafe_select(pr[j]);
    }
    store_floats(c.gx, row * h + j0, n, pr);
  }
}

// gradScales[i] before its cast: the fp32 products (x + bias) * gradY and the block reduction.
double grad_scale(const Call& c, int64_t i, Scratch& w) {
  const int64_t h = c.h;
  const int64_t row = c.row_of[static_cast<size_t>(i)];
  const bool valid = c.is_valid(row);
  const int64_t expert = c.use_bias ? static_cast<int64_t>(c.ei->get(i)) : -1;
  // Defects that reorder or shorten the whole reduction take the products of the full row.
  const bool full_row = c.defect == Defect::kLastBlockDropped || c.defect == Defect::kGradScalesHalfAccumulation;
  const float* xr = w.x.data();
  const float* br = w.b.data();
  float* pr = w.prod.data();
  float total = 0.0f;
  float chunk = 0.0f;
  for (int64_t j0 = 0; j0 < h; j0 += kTile) {
    const int64_t n = std::min(kTile, h - j0);
    const float* g = w.g.data() + j0;
    if (valid) load_floats(*c.x, row * h + j0, n, w.x.data());
    if (expert >= 0) load_floats(*c.b, expert * h + j0, n, w.b.data());
    if (valid && expert >= 0) {
      for (int64_t j = 0; j < n; ++j) pr[j] = (xr[j] + br[j]) * g[j];
    } else if (valid) {
      for (int64_t j = 0; j < n; ++j) pr[j] = xr[j] * g[j];
    } else {
      for (int64_t j = 0; j < n; ++j) pr[j] = br[j] * g[j];
    }
    if (full_row) {
      w.full_row.resize(static_cast<size_t>(h));
      std::copy(pr, pr + n, w.full_row.data() + j0);
      continue;
    }
    chunk = add_block_sums(chunk, pr, n);
    if ((j0 + n) % kHiddenPrePart == 0 || j0 + n == h) {
      total += chunk;
      chunk = 0.0f;
    }
  }
  return full_row ? reduce_products(w.full_row.data(), h, c.gs.dtype(), c.defect) : static_cast<double>(total);
}

// Token r owns slots r*K .. r*K+K-1: the gradExpandedX rows they write last and their gradScales.
void run_token(Call& c, int64_t r) {
  const int64_t h = c.h;
  if (c.sc == nullptr) {  // no scales: a copy of the row's bits (gradExpandedX and gradY share T, §3.1)
    if (!c.writes(r)) return;
    const size_t row_bytes = static_cast<size_t>(h) * dtype_size(c.gx.dtype());
    std::memcpy(c.gx.data() + static_cast<size_t>(c.row_of[static_cast<size_t>(r)]) * row_bytes,
                c.gy->data() + static_cast<size_t>(r) * row_bytes, row_bytes);
    return;
  }
  Scratch w;
  w.g.resize(static_cast<size_t>(h));
  w.x.resize(kTile);
  w.b.resize(kTile);
  w.prod.resize(kTile);
  load_floats(*c.gy, r * h, h, w.g.data());
  const Rounding cast = c.defect == Defect::kGradScalesCastHalfAway ? Rounding::kHalfAway : Rounding::kNearestEven;
  for (int64_t i = r * c.k_n; i < (r + 1) * c.k_n; ++i) {
    if (c.writes(i)) write_grad_x(c, i, w);
    const bool valid = c.is_valid(c.row_of[static_cast<size_t>(i)]);
    if (!valid && (!c.use_bias || c.defect == Defect::kBiasIgnoredForDropped)) {
      c.gs.set(i, 0.0);
      continue;
    }
    c.gs.set(i, grad_scale(c, i, w), cast);
  }
}

}  // namespace

std::vector<DefectInfo> defects() {
  return defect_infos(kDefects);
}

Status run(const grad_ref::Params& p, const TensorMap& in, TensorMap& out,
           const std::string& defect_name) {
  OPGATE_ASSIGN_OR_RETURN(const Defect defect, parse_defect(defect_name));
  const int64_t r_n = p.num_rows;
  const int64_t k_n = p.has_scales ? p.top_k : 1;
  const int64_t h = p.hidden;
  const int64_t slots = r_n * k_n;
  const int64_t d0 = grad_ref::expanded_rows(p);
  const bool use_bias = p.has_scales && p.has_bias;

  const Tensor* gy = nullptr;
  const Tensor* idx = nullptr;
  const Tensor* x = nullptr;
  const Tensor* sc = nullptr;
  const Tensor* ei = nullptr;
  const Tensor* b = nullptr;
  const Tensor* gx_in = nullptr;
  const Tensor* gs_in = nullptr;
  OPGATE_TRY(require(in, "gradY", r_n * h, &gy));
  OPGATE_TRY(require(in, "expandedRowIdx", slots, &idx));
  OPGATE_TRY(require(out, "gradExpandedXOut", d0 * h, &gx_in));
  OPGATE_TRY(require(out, "gradScalesOut", p.has_scales ? slots : r_n, &gs_in));
  if (p.has_scales) {
    OPGATE_TRY(require(in, "expandedXOptional", d0 * h, &x));
    OPGATE_TRY(require(in, "scalesOptional", slots, &sc));
  }
  if (use_bias) {
    OPGATE_TRY(require(in, "expertIdxOptional", slots, &ei));
    OPGATE_TRY(require(in, "biasOptional", p.expert_num * h, &b));
    for (int64_t i = 0; i < slots; ++i) {
      const double e = ei->get(i);
      if (e < 0 || e >= static_cast<double>(p.expert_num)) {
        return invalid_case(
            fmt::format("expertIdxOptional[{}] = {} would read bias out of bounds", i, e));
      }
    }
  }
  Call c;
  c.gy = gy;
  c.x = x;
  c.sc = sc;
  c.ei = ei;
  c.b = b;
  c.gx = *gx_in;
  c.gs = *gs_in;
  c.defect = defect;
  c.k_n = k_n;
  c.h = h;
  c.use_bias = use_bias;
  const bool active = p.drop_pad_mode == 0 && p.active_num > 0 && p.active_num < slots;
  c.row_limit = active && defect == Defect::kActiveNumOffByOne ? d0 - 1 : d0;
  // The row each slot addresses, and each row's last writer: the kernel writes slots in order, every
  // write covers the whole row, so a later slot addressing the same row wins. Writing each row once
  // from its last writer gives the same bytes in any order, so tokens run in parallel.
  c.row_of.resize(static_cast<size_t>(slots));
  c.writer.assign(static_cast<size_t>(std::max<int64_t>(d0, 0)), -1);
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t r = i / k_n;
    const int64_t slot = defect == Defect::kKMajorIndex ? (i % k_n) * r_n + r : i;
    const auto row = static_cast<int64_t>(idx->get(slot));
    c.row_of[static_cast<size_t>(i)] = row;
    if (c.is_valid(row)) c.writer[static_cast<size_t>(row)] = i;
  }
  // dropPadMode 1 zero-initialises gradExpandedX; only rows no slot writes keep those zeros (+0 is
  // all-zero bits in every float dtype).
  if (p.drop_pad_mode == 1 && defect != Defect::kZeroFillSkippedInDropPad) {
    constexpr int64_t kRowsPerBlock = 64;
    const size_t row_bytes = static_cast<size_t>(h) * dtype_size(c.gx.dtype());
    math::parallel_for((d0 + kRowsPerBlock - 1) / kRowsPerBlock, [&](int64_t blk) {
      for (int64_t row = blk * kRowsPerBlock; row < std::min(d0, (blk + 1) * kRowsPerBlock); ++row) {
        if (c.writer[static_cast<size_t>(row)] < 0) std::memset(c.gx.data() + static_cast<size_t>(row) * row_bytes, 0, row_bytes);
      }
    });
  }
  math::parallel_for(r_n, [&](int64_t r) { run_token(c, r); });
  return Status::ok();
}

}  // namespace opgate::emu::moe_finalize_routing_v2_grad
