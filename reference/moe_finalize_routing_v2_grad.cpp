// Double-precision reference of aclnnMoeFinalizeRoutingV2Grad (routing-ops.md §3.2), the aclnn and
// tiling validation of §3.4 with its error codes, and the data checks for inputs on which the A2/A3
// kernel is undefined (out-of-range expert ids, duplicate rows).
#include "reference/moe_finalize_routing_v2_grad.h"
#include "core/aclnn_codes.h"
#include "core/parallel.h"
#include "reference/math/shared_range.h"
#include "reference/math/shared_simd.h"
#include "reference/math/shared_validate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace opgate::ref::moe_finalize_routing_v2_grad {
namespace {

constexpr const char* kGradY = "gradY";
constexpr const char* kRowIdx = "expandedRowIdx";
constexpr const char* kExpandedX = "expandedXOptional";
constexpr const char* kScales = "scalesOptional";
constexpr const char* kExpertIdx = "expertIdxOptional";
constexpr const char* kBias = "biasOptional";
constexpr const char* kGradX = "gradExpandedXOut";
constexpr const char* kGradScales = "gradScalesOut";

bool is_io_float(DType t) { return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32; }

int rank(const TensorSpec* t) { return static_cast<int>(t->shape.size()); }

bool float_like(const TensorSpec* t, DType like) {
  return is_io_float(t->dtype) && t->dtype == like;
}

Status inner(const std::string& what, const char* rule) {
  return reject(aclnn::kInnerNullptr, what, rule);
}

// The descriptors of one call; nullptr = the argument is a null pointer.
struct Args {
  const TensorSpec *gy, *idx, *x, *sc, *ei, *b, *gx, *gs;
};

Args args_of(const SpecMap& s) {
  return {present_spec(s, kGradY),  present_spec(s, kRowIdx),    present_spec(s, kExpandedX),
          present_spec(s, kScales), present_spec(s, kExpertIdx), present_spec(s, kBias),
          present_spec(s, kGradX),  present_spec(s, kGradScales)};
}

// aclnn layer: null checks, then dtypes of non-empty tensors.
Status aclnn_checks(const Args& a) {
  const std::pair<const char*, const TensorSpec*> required[] = {
      {kGradY, a.gy}, {kRowIdx, a.idx}, {kGradX, a.gx}, {kGradScales, a.gs}};
  for (const auto& [name, t] : required) {
    if (t == nullptr) {
      return reject(aclnn::kParamNullptr, fmt::format("{} is a null pointer", name),
                    "aclnn: 'gradY, expandedRowIdx, gradExpandedXOut, gradScalesOut not null'");
    }
  }
  const DType t = a.gy->dtype;
  const struct {
    const char* name;
    const TensorSpec* spec;
    bool ok;
    const char* rule;
  } rules[] = {
      {kGradY, a.gy, is_io_float(t), "aclnn: 'gradY FLOAT16, BFLOAT16 or FLOAT32'"},
      {kRowIdx, a.idx, a.idx->dtype == DType::kI32, "aclnn: 'expandedRowIdx INT32'"},
      {kExpandedX, a.x, !a.x || float_like(a.x, t), "aclnn: 'expandedXOptional float, = gradY'"},
      {kScales, a.sc, !a.sc || is_io_float(a.sc->dtype), "aclnn: 'scalesOptional float'"},
      {kExpertIdx, a.ei, !a.ei || a.ei->dtype == DType::kI32, "aclnn: 'expertIdxOptional INT32'"},
      {kBias, a.b, !a.b || float_like(a.b, t), "aclnn: 'biasOptional float, = gradY'"},
      {kGradX, a.gx, float_like(a.gx, t), "aclnn: 'gradExpandedXOut float, = gradY'"},
      {kGradScales, a.gs, is_io_float(a.gs->dtype), "aclnn: 'gradScalesOut float'"},
  };
  for (const auto& r : rules) {
    if (r.spec != nullptr && numel_sat(r.spec->shape) > 0 && !r.ok) {
      return reject(aclnn::kParamInvalid,
                    fmt::format("{} dtype {} not allowed", r.name, dtype_name(r.spec->dtype)),
                    r.rule);
    }
  }
  return Status::ok();
}

// Tiling checks on scales, expandedX, expertIdx and bias (§3.4 items 4-6).
Status tiling_input_checks(const Params& p, const Args& a, int64_t rows, int64_t hidden,
                           int64_t slots, int64_t d0) {
  const int64_t mode = p.drop_pad_mode;
  if (a.sc == nullptr) {
    if (rows == slots) return Status::ok();
    return inner(
        fmt::format("gradY.dim0 ({}) != expandedRowIdx.dim0 ({}) without scales", rows, slots),
        "tiling: 'scalesOptional null requires K = 1'");
  }
  if (a.x == nullptr) {
    return inner("scalesOptional present but expandedXOptional is null",
                 "doc: 'expandedXOptional must not be null when scalesOptional is not null'");
  }
  if (a.b != nullptr && a.ei == nullptr) {
    return inner("biasOptional present but expertIdxOptional is null",
                 "doc: 'expertIdxOptional must not be null when biasOptional is not null'");
  }
  const int x_rank = mode == 0 ? 2 : 3;
  if (rank(a.x) != x_rank || rank(a.sc) != 2 ||
      (a.b != nullptr && (rank(a.ei) != 2 || rank(a.b) != 2))) {
    return inner(fmt::format("ranks: expandedXOptional {}-D (needs {}-D), scalesOptional {}-D",
                             rank(a.x), x_rank, rank(a.sc)),
                 "tiling: 'expandedX (D0, H) or (E, C, H); scales, expertIdx, bias 2-D'");
  }
  const int64_t x_rows = mode == 0 ? a.x->shape[0] : mul_sat(a.x->shape[0], a.x->shape[1]);
  if (x_rows != d0) {
    return inner(
        fmt::format("expandedXOptional rows ({}) != D0 ({}) in dropPadMode {}", x_rows, d0, mode),
        "tiling: 'mode 0: dim0 != D0; mode 1: dim0*dim1 != E*C'");
  }
  if (a.x->shape.back() != hidden) {
    return inner(
        fmt::format("expandedXOptional last dim ({}) != H ({})", a.x->shape.back(), hidden),
        "tiling: 'expandedX last dim == gradY.dim1'");
  }
  for (const auto& [name, t] :
       {std::pair{kScales, a.sc}, std::pair{kExpertIdx, a.b ? a.ei : nullptr}}) {
    if (t != nullptr && (t->shape[0] != rows || numel_sat(t->shape) != slots)) {
      return inner(fmt::format("{} {} is not (R = {}, K) with R*K = {}", name,
                               shape_to_string(t->shape), rows, slots),
                   "tiling: 'dim0 == R and numel == numel(expandedRowIdx)'");
    }
  }
  if (a.b != nullptr && (a.b->shape[0] <= 0 || (mode == 1 && a.b->shape[0] != p.expert_num) ||
                         a.b->shape[1] != hidden)) {
    return inner(fmt::format("biasOptional {} with expertNum {} and H {}",
                             shape_to_string(a.b->shape), p.expert_num, hidden),
                 "tiling: 'bias.dim0 > 0, mode 1: bias.dim0 == expertNum, bias.dim1 == H'");
  }
  const DType t = a.gy->dtype;
  if (a.sc->dtype != t || a.x->dtype != t ||
      (a.b != nullptr && (a.b->dtype != t || a.ei->dtype != a.idx->dtype))) {
    return inner(fmt::format("scales {}, expandedX {} vs gradY {}", dtype_name(a.sc->dtype),
                             dtype_name(a.x->dtype), dtype_name(t)),
                 "tiling A2/A3: 'scales, expandedX, bias dtype == gradY; expertIdx == rowIdx'");
  }
  return Status::ok();
}

// Tiling checks on the outputs (§3.4 item 7).
Status tiling_output_checks(const Args& a, int64_t mode, int64_t rows, int64_t hidden, int64_t d0) {
  const Shape& gx = a.gx->shape;
  if (gx.size() != 2 && gx.size() != 3) {
    return inner(fmt::format("gradExpandedXOut is {}-D", gx.size()),
                 "tiling: 'gradExpandedXOut rank 2 or 3'");
  }
  if (mode == 0 && gx[0] != d0) {
    return inner(fmt::format("gradExpandedXOut.dim0 ({}) != D0 ({}) in dropPadMode 0", gx[0], d0),
                 "tiling: 'mode 0: dim0 != D0 or dim1 != H'");
  }
  if (mode == 0 && gx[1] != hidden) {
    return inner(
        fmt::format("gradExpandedXOut.dim1 ({}) != H ({}) in dropPadMode 0", gx[1], hidden),
        "tiling: 'mode 0: dim0 != D0 or dim1 != H'");
  }
  if (mode == 1 && (gx.size() != 3 || mul_sat(gx[0], gx[1]) != d0 || gx[2] != hidden)) {
    return inner(fmt::format("gradExpandedXOut {} is not (E, C, H) with E*C = {}, H = {} in "
                             "dropPadMode 1",
                             shape_to_string(gx), d0, hidden),
                 "tiling: 'mode 1: dim0*dim1 != E*C or dim2 != H'");
  }
  if (a.gx->dtype != a.gy->dtype) {
    return inner(fmt::format("gradExpandedXOut dtype {}", dtype_name(a.gx->dtype)),
                 "tiling: 'gradExpandedXOut dtype == gradY'");
  }
  const TensorSpec* gs = a.gs;
  if (a.sc != nullptr &&
      (rank(gs) != 2 || gs->shape[0] != rows || numel_sat(gs->shape) != numel_sat(a.sc->shape) ||
       gs->dtype != a.sc->dtype)) {
    return inner(fmt::format("gradScalesOut {} {} does not match scalesOptional {} {}",
                             dtype_name(gs->dtype), shape_to_string(gs->shape),
                             dtype_name(a.sc->dtype), shape_to_string(a.sc->shape)),
                 "tiling: 'gradScales 2-D, dim0 == R, numel == R*K, dtype == scales'");
  }
  return Status::ok();
}

Status check_input(const TensorMap& inputs, const std::string& name, const TensorSpec& spec) {
  const auto it = inputs.find(name);
  if (it == inputs.end() || !it->second.defined()) {
    return invalid_case(fmt::format("input {} is missing", name));
  }
  const Tensor& t = it->second;
  if (t.dtype() != spec.dtype || t.shape() != spec.shape) {
    return invalid_case(fmt::format("input {} is {} {}, specs say {} {}", name,
                                    dtype_name(t.dtype()), shape_to_string(t.shape()),
                                    dtype_name(spec.dtype), shape_to_string(spec.shape)));
  }
  return Status::ok();
}

}  // namespace

bool Params::operator==(const Params& o) const {
  return num_rows == o.num_rows && top_k == o.top_k && hidden == o.hidden && dtype == o.dtype &&
         has_scales == o.has_scales && has_bias == o.has_bias && drop_pad_mode == o.drop_pad_mode &&
         active_num == o.active_num && expert_num == o.expert_num &&
         expert_capacity == o.expert_capacity;
}

int64_t expanded_rows(const Params& p) {
  if (p.drop_pad_mode == 1) return mul_sat(p.expert_num, p.expert_capacity);
  const int64_t slots = mul_sat(p.num_rows, p.top_k);
  return p.drop_pad_mode == 0 && p.active_num > 0 && p.active_num < slots ? p.active_num : slots;
}

SpecMap specs(const Params& p) {
  const int64_t r = p.num_rows;
  const int64_t k = p.top_k;
  const int64_t h = p.hidden;
  const Shape expanded =
      p.drop_pad_mode == 1 ? Shape{p.expert_num, p.expert_capacity, h} : Shape{expanded_rows(p), h};
  SpecMap s;
  s[kGradY] = {p.dtype, {r, h}, true};
  s[kRowIdx] = {DType::kI32, {mul_sat(r, k)}, true};
  s[kExpandedX] = {p.dtype, expanded, p.has_scales};
  s[kScales] = {p.dtype, {r, k}, p.has_scales};
  s[kExpertIdx] = {DType::kI32, {r, k}, p.has_bias};
  s[kBias] = {p.dtype, {p.expert_num, h}, p.has_bias};
  s[kGradX] = {p.dtype, expanded, true};
  s[kGradScales] = {p.dtype, {r, p.has_scales ? k : 1}, true};
  return s;
}

Status validate(const Params& p, const SpecMap& s) {
  for (const auto& [name, t] : s) {
    if (t.present && std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; })) {
      return invalid_case(
          fmt::format("{} has a negative extent: {}", name, shape_to_string(t.shape)));
    }
  }
  const Args a = args_of(s);
  OPGATE_TRY(aclnn_checks(a));
  // The aclnn layer launches nothing when both outputs are empty.
  if (numel_sat(a.gx->shape) == 0 && numel_sat(a.gs->shape) == 0) return Status::ok();
  const int64_t mode = p.drop_pad_mode;
  if (mode != 0 && mode != 1) {
    return inner(fmt::format("dropPadMode {} not in {{0, 1}}", mode),
                 "doc: 'dropPadMode 0 (dropless) or 1 (drop/pad)'");
  }
  if (mode == 1 && (p.expert_num <= 0 || p.expert_capacity <= 0)) {
    return inner(fmt::format("expertNum {}, expertCapacity {} in dropPadMode 1", p.expert_num,
                             p.expert_capacity),
                 "doc: 'mode 1: expertNum > 0 and expertCapacity > 0'");
  }
  if (rank(a.gy) != 2 || rank(a.idx) != 1) {
    return inner(fmt::format("gradY is {}-D, expandedRowIdx is {}-D", rank(a.gy), rank(a.idx)),
                 "infershape: 'grad_y must be 2D and expanded_row_idx must be 1D'");
  }
  if (!is_io_float(a.gy->dtype) || a.idx->dtype != DType::kI32) {
    return inner(fmt::format("gradY {}, expandedRowIdx {}", dtype_name(a.gy->dtype),
                             dtype_name(a.idx->dtype)),
                 "tiling: 'gradY FLOAT16/BFLOAT16/FLOAT32, expandedRowIdx INT32'");
  }
  const int64_t rows = a.gy->shape[0];
  const int64_t hidden = a.gy->shape[1];
  const int64_t slots = a.idx->shape[0];
  const int64_t d0 = mode == 1 ? mul_sat(p.expert_num, p.expert_capacity)
                               : (p.active_num > 0 && p.active_num < slots ? p.active_num : slots);
  OPGATE_TRY(tiling_input_checks(p, a, rows, hidden, slots, d0));
  return tiling_output_checks(a, mode, rows, hidden, d0);
}

Status check_data(const Params& p, const TensorMap& inputs) {
  const SpecMap s = specs(p);
  for (const char* name : {kGradY, kRowIdx, kExpandedX, kScales, kExpertIdx, kBias}) {
    if (s.at(name).present) OPGATE_TRY(check_input(inputs, name, s.at(name)));
  }
  const Tensor& idx = inputs.at(kRowIdx);
  const int64_t slots = idx.numel();
  const int64_t d0 = expanded_rows(p);
  const int64_t hi = p.drop_pad_mode == 1 ? d0 - 1 : slots - 1;
  std::vector<int64_t> writer(static_cast<size_t>(d0), -1);
  for (int64_t i = 0; i < slots; ++i) {
    const auto row = static_cast<int64_t>(idx.get(i));
    if (row < -1 || row > hi) {
      return invalid_case(
          fmt::format("expandedRowIdx[{}] = {} outside [-1, {}] (doc: 'mode 0: [0, R*K-1]; mode 1: "
                      "[-1, expertNum*expertCapacity-1]')",
                      i, row, hi));
    }
    if (row < 0 || row >= d0) continue;
    if (writer[static_cast<size_t>(row)] >= 0) {
      return invalid_case(fmt::format(
          "expandedRowIdx[{}] and [{}] both address row {}; the kernel's last writer is "
          "nondeterministic (doc: 'no duplicate indices except -1')",
          writer[static_cast<size_t>(row)], i, row));
    }
    writer[static_cast<size_t>(row)] = i;
  }
  if (p.has_scales && p.has_bias) {
    const Tensor& ei = inputs.at(kExpertIdx);
    for (int64_t i = 0; i < ei.numel(); ++i) {
      const double e = ei.get(i);
      if (e < 0 || e >= static_cast<double>(p.expert_num)) {
        return invalid_case(fmt::format(
            "expertIdxOptional[{}] = {} outside [0, {}) (doc: 'values in [0, E-1]'); the kernel "
            "would read bias out of bounds",
            i, e, p.expert_num));
      }
    }
  }
  return Status::ok();
}

// K = scales.dim1 (1 without scales); i = r*K + k; row = expandedRowIdx[i]; valid = 0 <= row < D0
// gradExpandedX[row, j] = s_i * gradY[r, j]                            (valid rows; else 0)
// gradScales[i] = sum_j ((valid ? expandedX[row, j] : 0) + (bias ? bias[expertIdx[i], j] : 0))
//                        * gradY[r, j]                                  (scales only)
RefOutputs reference(const Params& p, const TensorMap& inputs) {
  const SpecMap s = specs(p);
  const int64_t k_slots = p.has_scales ? p.top_k : 1;
  const int64_t h = p.hidden;
  const int64_t d0 = expanded_rows(p);
  const bool use_bias = p.has_scales && p.has_bias;
  const Tensor& gy = inputs.at(kGradY);
  const Tensor& idx = inputs.at(kRowIdx);
  const Tensor* x = p.has_scales ? &inputs.at(kExpandedX) : nullptr;
  const Tensor* sc = p.has_scales ? &inputs.at(kScales) : nullptr;
  const Tensor* ei = use_bias ? &inputs.at(kExpertIdx) : nullptr;
  const Tensor* b = use_bias ? &inputs.at(kBias) : nullptr;

  // Every byte of gradExpandedX and its care mask is written once below: addressed rows by their
  // slot, the others as zeros (U8 care: 1 = compare; unaddressed rows are compared in dropPadMode 1).
  Tensor gx = Tensor::empty(DType::kF64, s.at(kGradX).shape);
  Tensor gx_care = Tensor::empty(DType::kU8, s.at(kGradX).shape);
  const Shape gs_shape = s.at(kGradScales).shape;
  Tensor gs = Tensor::zeros(DType::kF64, gs_shape);
  Tensor gs_mag = Tensor::zeros(DType::kF64, gs_shape);
  Tensor gs_care = Tensor::full(DType::kU8, gs_shape, p.has_scales ? 1.0 : 0.0);

  // Rows as doubles: fp16/bf16 by the exact vector conversion, other dtypes element by element.
  auto elements = [](const Tensor& t, int64_t first, int64_t n, double* dst) {
    if (t.dtype() == DType::kF16 || t.dtype() == DType::kBF16) {
      math::kernels().halves_to_double(t.ptr<uint16_t>() + first, n, t.dtype() == DType::kBF16, dst);
      return;
    }
    for (int64_t j = 0; j < n; ++j) dst[j] = t.get(first + j);
  };
  // Each token r owns its slots i = r*K + k: their gradScales and the gradExpandedX rows they
  // address (distinct, check_data); tokens run in parallel when no row is addressed twice.
  const int64_t slots = idx.numel();
  const int64_t tokens = k_slots > 0 ? (slots + k_slots - 1) / k_slots : 0;  // K = 0: no slots
  std::vector<int64_t> rows(static_cast<size_t>(slots));
  std::vector<char> written(static_cast<size_t>(std::max<int64_t>(d0, 0)), 0);
  bool distinct = true;
  for (int64_t i = 0; i < slots; ++i) {
    const auto row = static_cast<int64_t>(idx.get(i));
    rows[static_cast<size_t>(i)] = row;
    if (row >= 0 && row < d0) {
      distinct = distinct && written[static_cast<size_t>(row)] == 0;
      written[static_cast<size_t>(row)] = 1;
    }
  }
  double* gx_data = gx.ptr<double>();
  uint8_t* gx_care_data = gx_care.ptr<uint8_t>();
  double* gs_data = gs.ptr<double>();
  double* gs_mag_data = gs_mag.ptr<double>();
  uint8_t* gs_care_data = gs_care.ptr<uint8_t>();
  const math::Kernels& kn = math::kernels();
  // gradScales of up to 8 slots at once, each its own sum over j in order (shared_simd.h
  // slot8_dot), over column tiles whose rows are stored interleaved: element j of lane s at
  // [j * 8 + s]. A lane without a slot, or a slot the kernel skips, adds zeros and is not written.
  constexpr int64_t kCols = 256;
  // bf16 / fp32 x + bias may overflow fp32 before the product (fp16 values cannot): only then
  // are the sums of the loaded columns checked.
  const bool sum_can_overflow = use_bias && x->dtype() != DType::kF16;
  auto token = [&](int64_t r) {
    std::vector<double> g(static_cast<size_t>(h)), row(static_cast<size_t>(kCols));
    std::vector<double> xt(static_cast<size_t>(kCols * 8)), bt(xt.size());
    elements(gy, r * h, h, g.data());
    const int64_t first = r * k_slots;
    const int64_t last = std::min(slots, first + k_slots);
    for (int64_t i = first; i < last; ++i) {
      const int64_t dst = rows[static_cast<size_t>(i)];
      if (dst < 0 || dst >= d0) continue;
      const double scale = sc != nullptr ? sc->get(i) : 1.0;
      double* out_row = gx_data + dst * h;
      for (int64_t j = 0; j < h; ++j) out_row[j] = scale * g[static_cast<size_t>(j)];
      std::memset(gx_care_data + dst * h, 1, static_cast<size_t>(h));
    }
    if (!p.has_scales) return;
    for (int64_t i0 = first; i0 < last; i0 += 8) {
      const int64_t lanes = std::min<int64_t>(8, last - i0);
      int64_t xrow[8], brow[8];
      bool wanted[8];
      for (int64_t s = 0; s < 8; ++s) {
        const int64_t i = i0 + s;
        const int64_t src = s < lanes ? rows[static_cast<size_t>(i)] : -1;
        const bool valid = src >= 0 && src < d0;
        // A dropped slot without bias is skipped by the kernel: 0, even when gradY holds Inf or NaN.
        wanted[s] = s < lanes && (valid || use_bias);
        xrow[s] = wanted[s] && valid ? src : -1;
        brow[s] = -1;
        if (wanted[s] && use_bias) {
          brow[s] = static_cast<int64_t>(ei->get(i));
          OPGATE_CHECK(brow[s] >= 0 && brow[s] < p.expert_num,
                       fmt::format("expertIdx {} out of range: call check_data first", brow[s]));
        }
      }
      // sum_j |(x + b) * g| over the finite terms of one slot (rows as in xrow / brow, -1: none).
      auto finite_magnitude = [&](int64_t xr, int64_t br) {
        std::vector<double> xv(static_cast<size_t>(h), 0.0), bv(static_cast<size_t>(h), 0.0);
        if (xr >= 0) elements(*x, xr * h, h, xv.data());
        if (br >= 0) elements(*b, br * h, h, bv.data());
        double m = 0;
        for (int64_t j = 0; j < h; ++j) {
          const double t = (xv[static_cast<size_t>(j)] + bv[static_cast<size_t>(j)]) * g[static_cast<size_t>(j)];
          if (std::isfinite(t)) m += std::fabs(t);
        }
        return m;
      };
      double sum[8] = {0, 0, 0, 0, 0, 0, 0, 0}, mag[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      bool sum_overflows[8] = {false, false, false, false, false, false, false, false};
      for (int64_t j0 = 0; j0 < h; j0 += kCols) {
        const int64_t cols = std::min(kCols, h - j0);
        for (int64_t s = 0; s < 8; ++s) {
          for (auto [src, t, buf] : {std::tuple{xrow[s], x, &xt}, std::tuple{brow[s], b, &bt}}) {
            double* lane = buf->data() + s;
            if (src < 0) {
              for (int64_t j = 0; j < cols; ++j) lane[j * 8] = 0.0;
              continue;
            }
            elements(*t, src * h + j0, cols, row.data());
            for (int64_t j = 0; j < cols; ++j) lane[j * 8] = row[static_cast<size_t>(j)];
          }
        }
        kn.slot8_dot(xt.data(), bt.data(), g.data() + j0, cols, sum, mag);
        if (sum_can_overflow) {
          for (int64_t j = 0; j < cols * 8; ++j) {
            sum_overflows[j % 8] = sum_overflows[j % 8] || std::fabs(xt[j] + bt[j]) >= math::kF32OverflowAt;
          }
        }
      }
      for (int64_t s = 0; s < lanes; ++s) {
        if (!wanted[s]) continue;
        gs_data[i0 + s] = sum[s];
        gs_mag_data[i0 + s] = mag[s];
        // Beyond the kernel's range: an fp32 x + bias that is Inf (Inf * 0 is NaN, and Inf - Inf),
        // or products and partial sums that may reach Inf in some order (shared_range.h).
        // With Inf inputs (an expected +-Inf) the finite terms alone may overflow to the other
        // Inf in fp32 (then Inf - Inf = NaN): their magnitude is summed apart, rarely needed.
        const double finite_mag = std::isfinite(mag[s]) || std::isnan(sum[s]) ? mag[s] : finite_magnitude(xrow[s], brow[s]);
        if (sum_overflows[s] || (std::isfinite(finite_mag) && finite_mag >= math::kF32SafeMagnitude)) {
          gs_care_data[i0 + s] = 0;
        }
      }
    }
  };
  if (distinct) {
    math::parallel_for(tokens, token);
  } else {
    for (int64_t r = 0; r < tokens; ++r) token(r);
  }
  constexpr int64_t kRowsPerBlock = 64;
  const uint8_t unaddressed_care = p.drop_pad_mode == 1 ? 1 : 0;
  math::parallel_for((d0 + kRowsPerBlock - 1) / kRowsPerBlock, [&](int64_t blk) {
    for (int64_t row = blk * kRowsPerBlock; row < std::min(d0, (blk + 1) * kRowsPerBlock); ++row) {
      if (written[static_cast<size_t>(row)] != 0) continue;
      std::memset(gx_data + row * h, 0, static_cast<size_t>(h) * sizeof(double));
      std::memset(gx_care_data + row * h, unaddressed_care, static_cast<size_t>(h));
    }
  });

  RefOutputs out;
  if (p.has_scales) {
    const int64_t beyond = std::count(gs_care_data, gs_care_data + gs_care.numel(), uint8_t{0});
    if (beyond > 0) {
      out.beyond_range[kGradScales] = {beyond, "fp32 x + bias, or the products and partial sums of sum (x + bias) * "
                                               "gradY, can overflow (sum of |terms| >= FLT_MAX / 2): Inf or NaN "
                                               "are what a correct kernel may return"};
    }
  }
  out.expected[kGradX] = std::move(gx);
  out.expected[kGradScales] = std::move(gs);
  out.magnitude[kGradScales] = std::move(gs_mag);
  out.care[kGradX] = std::move(gx_care);
  out.care[kGradScales] = std::move(gs_care);
  return out;
}

}  // namespace opgate::ref::moe_finalize_routing_v2_grad
