// CPU emulation of the A2/A3 aclnnMoeFinalizeRoutingV2Grad kernel: scatter of routing-ops.md §3.2
// and the fp32 numerics of §3.3 (one RNE rounding of the product for gradExpandedX; fp32 block-wise
// reduction for gradScales), plus the defect catalogue used by the fault backend.
#include "device/emu/moe_finalize_routing_v2_grad.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/parallel.h"
#include "reference/math/shared_simd.h"

namespace opgate::emu::moe_finalize_routing_v2_grad {
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
// fp32 elements per 32-byte block, the unit of BlockReduceSum.
constexpr int64_t kBlock = 8;

Expected<Defect> parse_defect(const std::string& name) {
  return ::opgate::parse_defect(kDefects, Defect::kNone, name, "moe_finalize_routing_v2_grad");
}

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

// One chunk: block sums, then a sequential fp32 sum of the block sums (ReduceSum).
float reduce_chunk(const float* v, int64_t n) {
  float acc = 0.0f;
  for (int64_t o = 0; o < n; o += kBlock) acc += block_reduce_sum(v + o, std::min(kBlock, n - o));
  return acc;
}

// The fp32 value the kernel casts (RINT) into gradScalesOut; the defects change the order or dtype.
double reduce_products(const std::vector<float>& prod, DType out_dtype, Defect defect) {
  auto n = static_cast<int64_t>(prod.size());
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
    total += reduce_chunk(prod.data() + c, std::min(kHiddenPrePart, n - c));
  }
  return static_cast<double>(total);
}

// The defect's flush: every ordered compare with NaN is false, so the select yields 0 for NaN.
double nan_unsafe_select(double v) { return v >= -INFINITY ? v : 0.0; }

// Elements [start, start + n) of a float16, bfloat16 or float32 tensor (the operator's only float
// dtypes, §3.1) as fp32; the kernel's Cast to fp32 is exact. Half types go through the project's
// one bit-pattern table, not a per-element dtype dispatch: the emulator is what fuzzing runs, so it
// keeps near the reference's speed.
void load_floats(const Tensor& t, int64_t start, int64_t n, float* dst) {
  if (t.dtype() == DType::kF16 || t.dtype() == DType::kBF16) {
    const double* table = math::exact_half_values(t.dtype() == DType::kBF16);
    const uint16_t* src = t.ptr<uint16_t>() + start;
    for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<float>(table[src[j]]);
  } else {
    std::copy(t.ptr<float>() + start, t.ptr<float>() + start + n, dst);
  }
}

// Stores fp32 values into t[start, start + n) with one RNE rounding to t's dtype (the kernel's
// CAST_RINT); bf16 by the round-half-even carry on the fp32 bits, NaN through the shared encoder.
void store_floats(Tensor& t, int64_t start, int64_t n, const float* v) {
  if (t.dtype() == DType::kF32) {
    std::copy(v, v + n, t.ptr<float>() + start);
    return;
  }
  if (t.dtype() == DType::kBF16) {
    uint16_t* dst = t.ptr<uint16_t>() + start;
    for (int64_t j = 0; j < n; ++j) {
      uint32_t u = 0;
      std::memcpy(&u, &v[j], sizeof u);
      dst[j] = std::isnan(v[j]) ? bf16_from_double(static_cast<double>(v[j]))
                                : static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
    return;
  }
  for (int64_t j = 0; j < n; ++j) t.set(start + j, static_cast<double>(v[j]));
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
  Tensor gx = *gx_in;  // copies share storage: writes land in the caller's buffers
  Tensor gs = *gs_in;

  const bool active = p.drop_pad_mode == 0 && p.active_num > 0 && p.active_num < slots;
  const int64_t row_limit = active && defect == Defect::kActiveNumOffByOne ? d0 - 1 : d0;
  if (p.drop_pad_mode == 1 && defect != Defect::kZeroFillSkippedInDropPad) {
    std::fill(gx.data(), gx.data() + gx.nbytes(), uint8_t{0});  // +0 is all-zero bits in every float dtype
  }
  const auto row_of = [&](int64_t i) {
    const int64_t r = i / k_n;
    const int64_t slot = defect == Defect::kKMajorIndex ? (i % k_n) * r_n + r : i;
    return static_cast<int64_t>(idx->get(slot));
  };
  const auto is_valid = [&](int64_t row) { return row >= 0 && row < row_limit; };

  // gradExpandedX, serially in slot order (a later slot addressing the same row wins).
  std::vector<float> grad(static_cast<size_t>(h)), product(static_cast<size_t>(h));
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t r = i / k_n;
    const int64_t row = row_of(i);
    if (!is_valid(row)) continue;
    if (!p.has_scales) {  // a copy of the row's bits: gradExpandedX and gradY share the dtype T (§3.1)
      const size_t row_bytes = static_cast<size_t>(h) * dtype_size(gx.dtype());
      std::memcpy(gx.data() + static_cast<size_t>(row) * row_bytes, gy->data() + static_cast<size_t>(r) * row_bytes,
                  row_bytes);
      continue;
    }
    const auto scale = static_cast<float>(sc->get(i));
    load_floats(*gy, r * h, h, grad.data());
    for (int64_t j = 0; j < h; ++j) {
      const float g = grad[static_cast<size_t>(j)];
      const float prod = defect == Defect::kScaleNotApplied ? g : g * scale;
      product[static_cast<size_t>(j)] =
          defect == Defect::kNanFlushedToZero ? static_cast<float>(nan_unsafe_select(prod)) : prod;
    }
    store_floats(gx, row * h, h, product.data());
  }
  if (!p.has_scales) return Status::ok();

  // gradScales: each slot's fp32 products and block reduction; slots are independent outputs.
  math::parallel_for(r_n, [&](int64_t r) {
    std::vector<float> gyr(static_cast<size_t>(h)), xv(static_cast<size_t>(h)), bv(static_cast<size_t>(h)),
        prod(static_cast<size_t>(h));
    load_floats(*gy, r * h, h, gyr.data());
    for (int64_t i = r * k_n; i < (r + 1) * k_n; ++i) {
      const int64_t row = row_of(i);
      const bool valid = is_valid(row);
      if (!valid && (!use_bias || defect == Defect::kBiasIgnoredForDropped)) {
        gs.set(i, 0.0);
        continue;
      }
      const int64_t expert = use_bias ? static_cast<int64_t>(ei->get(i)) : -1;
      if (valid) load_floats(*x, row * h, h, xv.data());
      if (expert >= 0) load_floats(*b, expert * h, h, bv.data());
      for (int64_t j = 0; j < h; ++j) {
        const auto jj = static_cast<size_t>(j);
        float v = 0.0f;
        if (valid && expert >= 0) {
          v = xv[jj] + bv[jj];
        } else if (valid) {
          v = xv[jj];
        } else {
          v = bv[jj];
        }
        prod[jj] = v * gyr[jj];
      }
      gs.set(i, reduce_products(prod, gs.dtype(), defect),
             defect == Defect::kGradScalesCastHalfAway ? Rounding::kHalfAway : Rounding::kNearestEven);
    }
  });
  return Status::ok();
}

}  // namespace opgate::emu::moe_finalize_routing_v2_grad
