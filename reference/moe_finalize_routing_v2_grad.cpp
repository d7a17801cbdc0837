// Double-precision reference of aclnnMoeFinalizeRoutingV2Grad (routing-ops.md §3.2), the aclnn and
// tiling validation of §3.4 with its error codes, and the data checks for inputs on which the A2/A3
// kernel is undefined (out-of-range expert ids, duplicate rows).
#include "reference/moe_finalize_routing_v2_grad.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

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

constexpr int64_t kNullptr = 161001;
constexpr int64_t kParamInvalid = 161002;
constexpr int64_t kInnerNullptr = 561103;

Status reject(int64_t code, const std::string& what, const char* rule) {
  return aclnn_error(code, fmt::format("{}: {} ({})", code, what, rule));
}

// Saturating product, so tampered extents cannot overflow int64.
int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

int64_t numel_sat(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = mul_sat(n, d);
  return n;
}

const TensorSpec* find(const SpecMap& s, const char* name) {
  const auto it = s.find(name);
  return it == s.end() || !it->second.present ? nullptr : &it->second;
}

bool is_io_float(DType t) { return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32; }

int rank(const TensorSpec* t) { return static_cast<int>(t->shape.size()); }

// The aclnn layer checks dtypes of non-empty tensors only.
Status dtype_rule(const char* name, const TensorSpec* t, bool ok, const char* rule) {
  if (t == nullptr || numel_sat(t->shape) == 0 || ok) return Status::ok();
  return reject(kParamInvalid, fmt::format("{} dtype {} not allowed", name, dtype_name(t->dtype)),
                rule);
}

Status aclnn_checks(const SpecMap& s) {
  const std::pair<const char*, const TensorSpec*> required[] = {
      {kGradY, find(s, kGradY)},
      {kRowIdx, find(s, kRowIdx)},
      {kGradX, find(s, kGradX)},
      {kGradScales, find(s, kGradScales)}};
  for (const auto& [name, t] : required) {
    if (t == nullptr) {
      return reject(
          kNullptr, fmt::format("{} is a null pointer", name),
          "aclnn: 'gradY, expandedRowIdx, gradExpandedXOut, gradScalesOut must not be null'");
    }
  }
  const TensorSpec* gy = find(s, kGradY);
  const TensorSpec* x = find(s, kExpandedX);
  const TensorSpec* sc = find(s, kScales);
  const TensorSpec* ei = find(s, kExpertIdx);
  const TensorSpec* b = find(s, kBias);
  const TensorSpec* gx = find(s, kGradX);
  const TensorSpec* gs = find(s, kGradScales);
  const DType t = gy->dtype;
  OPGATE_TRY(
      dtype_rule(kGradY, gy, is_io_float(t), "aclnn: 'gradY in FLOAT16, BFLOAT16, FLOAT32'"));
  OPGATE_TRY(dtype_rule(kRowIdx, find(s, kRowIdx), find(s, kRowIdx)->dtype == DType::kI32,
                        "aclnn: 'expandedRowIdx INT32'"));
  OPGATE_TRY(dtype_rule(kExpandedX, x, x == nullptr || (is_io_float(x->dtype) && x->dtype == t),
                        "aclnn: 'expandedXOptional in FLOAT16, BFLOAT16, FLOAT32 and = gradY'"));
  OPGATE_TRY(dtype_rule(kScales, sc, sc == nullptr || is_io_float(sc->dtype),
                        "aclnn: 'scalesOptional in FLOAT16, BFLOAT16, FLOAT32'"));
  OPGATE_TRY(dtype_rule(kExpertIdx, ei, ei == nullptr || ei->dtype == DType::kI32,
                        "aclnn: 'expertIdxOptional INT32'"));
  OPGATE_TRY(dtype_rule(kBias, b, b == nullptr || (is_io_float(b->dtype) && b->dtype == t),
                        "aclnn: 'biasOptional in FLOAT16, BFLOAT16, FLOAT32 and = gradY'"));
  OPGATE_TRY(dtype_rule(kGradX, gx, is_io_float(gx->dtype) && gx->dtype == t,
                        "aclnn: 'gradExpandedXOut in FLOAT16, BFLOAT16, FLOAT32 and = gradY'"));
  OPGATE_TRY(dtype_rule(kGradScales, gs, is_io_float(gs->dtype),
                        "aclnn: 'gradScalesOut in FLOAT16, BFLOAT16, FLOAT32'"));
  return Status::ok();
}

// Tiling checks on scales, expandedX, expertIdx and bias (§3.4 items 4-6).
Status tiling_input_checks(const Params& p, const SpecMap& s, int64_t rows, int64_t hidden,
                           int64_t slots, int64_t d0) {
  const TensorSpec* gy = find(s, kGradY);
  const TensorSpec* x = find(s, kExpandedX);
  const TensorSpec* sc = find(s, kScales);
  const TensorSpec* ei = find(s, kExpertIdx);
  const TensorSpec* b = find(s, kBias);
  const int64_t mode = p.drop_pad_mode;
  if (sc == nullptr) {
    if (rows != slots) {
      return reject(
          kInnerNullptr,
          fmt::format("gradY.dim0 ({}) != expandedRowIdx.dim0 ({}) without scales", rows, slots),
          "tiling: 'scalesOptional null requires K = 1'");
    }
    return Status::ok();
  }
  if (x == nullptr) {
    return reject(kInnerNullptr, "scalesOptional present but expandedXOptional is null",
                  "tiling: 'expandedXOptional must not be null when scalesOptional is not null'");
  }
  if (b != nullptr && ei == nullptr) {
    return reject(kInnerNullptr, "biasOptional present but expertIdxOptional is null",
                  "tiling: 'expertIdxOptional must not be null when biasOptional is not null'");
  }
  const int x_rank = mode == 0 ? 2 : 3;
  if (rank(x) != x_rank) {
    return reject(
        kInnerNullptr,
        fmt::format("expandedXOptional is {}-D, dropPadMode {} needs {}-D", rank(x), mode, x_rank),
        "tiling: 'expandedX (D0, H) in mode 0, (E, C, H) in mode 1'");
  }
  if (rank(sc) != 2) {
    return reject(kInnerNullptr, fmt::format("scalesOptional is {}-D", rank(sc)),
                  "tiling: 'scalesOptional (R, K)'");
  }
  if (b != nullptr && (rank(ei) != 2 || rank(b) != 2)) {
    return reject(kInnerNullptr,
                  fmt::format("expertIdxOptional is {}-D, biasOptional is {}-D", rank(ei), rank(b)),
                  "tiling: 'expertIdxOptional (R, K) and biasOptional (E, H)'");
  }
  const int64_t x_rows = mode == 0 ? x->shape[0] : mul_sat(x->shape[0], x->shape[1]);
  if (x_rows != d0) {
    return reject(
        kInnerNullptr,
        fmt::format("expandedXOptional rows ({}) != D0 ({}) in dropPadMode {}", x_rows, d0, mode),
        "tiling: 'mode 0: dim0 != D0; mode 1: dim0*dim1 != E*C'");
  }
  if (x->shape.back() != hidden) {
    return reject(kInnerNullptr,
                  fmt::format("expandedXOptional last dim ({}) != H ({})", x->shape.back(), hidden),
                  "tiling: 'expandedX last dim == gradY.dim1'");
  }
  if (sc->shape[0] != rows || numel_sat(sc->shape) != slots) {
    return reject(kInnerNullptr,
                  fmt::format("scalesOptional {} does not match R ({}) and R*K ({})",
                              shape_to_string(sc->shape), rows, slots),
                  "tiling: 'scales.dim0 == R and numel(scales) == numel(expandedRowIdx)'");
  }
  if (b != nullptr) {
    if (ei->shape[0] != rows || numel_sat(ei->shape) != slots) {
      return reject(kInnerNullptr,
                    fmt::format("expertIdxOptional {} does not match R ({}) and R*K ({})",
                                shape_to_string(ei->shape), rows, slots),
                    "tiling: 'expertIdx.dim0 == R and numel(expertIdx) == numel(expandedRowIdx)'");
    }
    if (b->shape[0] <= 0 || (mode == 1 && b->shape[0] != p.expert_num) || b->shape[1] != hidden) {
      return reject(kInnerNullptr,
                    fmt::format("biasOptional {} with expertNum {} and H {}",
                                shape_to_string(b->shape), p.expert_num, hidden),
                    "tiling: 'bias.dim0 > 0, mode 1: bias.dim0 == expertNum, bias.dim1 == H'");
    }
  }
  const DType t = gy->dtype;
  if (sc->dtype != t || x->dtype != t || (b != nullptr && b->dtype != t) ||
      (b != nullptr && ei->dtype != find(s, kRowIdx)->dtype)) {
    return reject(
        kInnerNullptr,
        fmt::format("scales/expandedX/bias dtypes differ from gradY ({}) or expertIdx "
                    "from expandedRowIdx",
                    dtype_name(t)),
        "tiling A2/A3: 'scales, expandedX, bias dtype == gradY; expertIdx == expandedRowIdx'");
  }
  return Status::ok();
}

Status tiling_output_checks(const SpecMap& s, int64_t mode, int64_t rows, int64_t hidden,
                            int64_t d0) {
  const TensorSpec* gx = find(s, kGradX);
  const TensorSpec* gs = find(s, kGradScales);
  const TensorSpec* sc = find(s, kScales);
  if (rank(gx) != 2 && rank(gx) != 3) {
    return reject(kInnerNullptr, fmt::format("gradExpandedXOut is {}-D", rank(gx)),
                  "tiling: 'gradExpandedXOut rank 2 or 3'");
  }
  if (mode == 0 && (gx->shape[0] != d0 || gx->shape[1] != hidden)) {
    return reject(kInnerNullptr,
                  fmt::format("gradExpandedXOut.dim0 ({}) != D0 ({}) or dim1 ({}) != H ({}) in "
                              "dropPadMode 0",
                              gx->shape[0], d0, gx->shape[1], hidden),
                  "tiling: 'mode 0: dim0 != D0 or dim1 != H'");
  }
  if (mode == 1 &&
      (rank(gx) != 3 || mul_sat(gx->shape[0], gx->shape[1]) != d0 || gx->shape[2] != hidden)) {
    return reject(kInnerNullptr,
                  fmt::format("gradExpandedXOut {} is not (E, C, H) with E*C = {}, H = {} in "
                              "dropPadMode 1",
                              shape_to_string(gx->shape), d0, hidden),
                  "tiling: 'mode 1: dim0*dim1 != E*C or dim2 != H'");
  }
  if (gx->dtype != find(s, kGradY)->dtype) {
    return reject(kInnerNullptr, fmt::format("gradExpandedXOut dtype {}", dtype_name(gx->dtype)),
                  "tiling: 'gradExpandedXOut dtype == gradY'");
  }
  if (sc == nullptr) return Status::ok();
  if (rank(gs) != 2 || gs->shape[0] != rows || numel_sat(gs->shape) != numel_sat(sc->shape) ||
      gs->dtype != sc->dtype) {
    return reject(kInnerNullptr,
                  fmt::format("gradScalesOut {} {} does not match scalesOptional {} {}",
                              dtype_name(gs->dtype), shape_to_string(gs->shape),
                              dtype_name(sc->dtype), shape_to_string(sc->shape)),
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

const Tensor* optional_input(const TensorMap& inputs, const char* name, bool present) {
  return present ? &inputs.at(name) : nullptr;
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
  s[kRowIdx] = {DType::kI32, {r * k}, true};
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
    for (int64_t d : t.shape) {
      if (t.present && d < 0) {
        return invalid_case(
            fmt::format("{} has a negative extent: {}", name, shape_to_string(t.shape)));
      }
    }
  }
  OPGATE_TRY(aclnn_checks(s));
  // The aclnn layer launches nothing when both outputs are empty.
  if (numel_sat(find(s, kGradX)->shape) == 0 && numel_sat(find(s, kGradScales)->shape) == 0) {
    return Status::ok();
  }
  const int64_t mode = p.drop_pad_mode;
  if (mode != 0 && mode != 1) {
    return reject(kInnerNullptr, fmt::format("dropPadMode {} not in {{0, 1}}", mode),
                  "doc: 'dropPadMode: 0 dropless, 1 drop/pad'");
  }
  if (mode == 1 && (p.expert_num <= 0 || p.expert_capacity <= 0)) {
    return reject(kInnerNullptr,
                  fmt::format("expertNum {} / expertCapacity {} in dropPadMode 1", p.expert_num,
                              p.expert_capacity),
                  "doc: 'mode 1: expertNum > 0 and expertCapacity > 0'");
  }
  const TensorSpec* gy = find(s, kGradY);
  const TensorSpec* idx = find(s, kRowIdx);
  if (rank(gy) != 2 || rank(idx) != 1) {
    return reject(kInnerNullptr,
                  fmt::format("gradY is {}-D, expandedRowIdx is {}-D", rank(gy), rank(idx)),
                  "infershape: 'grad_y must be 2D and expanded_row_idx must be 1D'");
  }
  if (!is_io_float(gy->dtype) || idx->dtype != DType::kI32) {
    return reject(
        kInnerNullptr,
        fmt::format("gradY {} / expandedRowIdx {}", dtype_name(gy->dtype), dtype_name(idx->dtype)),
        "tiling: 'gradY FLOAT16/BFLOAT16/FLOAT32, expandedRowIdx INT32'");
  }
  const int64_t rows = gy->shape[0];
  const int64_t hidden = gy->shape[1];
  const int64_t slots = idx->shape[0];
  const int64_t d0 = mode == 1 ? mul_sat(p.expert_num, p.expert_capacity)
                               : (p.active_num > 0 && p.active_num < slots ? p.active_num : slots);
  OPGATE_TRY(tiling_input_checks(p, s, rows, hidden, slots, d0));
  return tiling_output_checks(s, mode, rows, hidden, d0);
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
  const Tensor* x = optional_input(inputs, kExpandedX, p.has_scales);
  const Tensor* sc = optional_input(inputs, kScales, p.has_scales);
  const Tensor* ei = optional_input(inputs, kExpertIdx, use_bias);
  const Tensor* b = optional_input(inputs, kBias, use_bias);

  Tensor gx = Tensor::zeros(DType::kF64, s.at(kGradX).shape);
  Tensor gx_care = Tensor::full(DType::kU8, s.at(kGradX).shape, p.drop_pad_mode == 1 ? 1.0 : 0.0);
  const Shape gs_shape = s.at(kGradScales).shape;
  Tensor gs = Tensor::zeros(DType::kF64, gs_shape);
  Tensor gs_mag = Tensor::zeros(DType::kF64, gs_shape);
  Tensor gs_care = Tensor::full(DType::kU8, gs_shape, p.has_scales ? 1.0 : 0.0);

  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t r = i / k_slots;
    const auto row = static_cast<int64_t>(idx.get(i));
    const bool valid = row >= 0 && row < d0;
    const double scale = sc != nullptr ? sc->get(i) : 1.0;
    if (valid) {
      for (int64_t j = 0; j < h; ++j) {
        gx.set(row * h + j, scale * gy.get(r * h + j));
        gx_care.set(row * h + j, 1.0);
      }
    }
    if (!p.has_scales) continue;
    int64_t expert = -1;
    if (use_bias) {
      expert = static_cast<int64_t>(ei->get(i));
      OPGATE_CHECK(expert >= 0 && expert < p.expert_num,
                   fmt::format("expertIdx {} out of range: call check_data first", expert));
    }
    double sum = 0.0;
    double mag = 0.0;
    for (int64_t j = 0; j < h; ++j) {
      const double v =
          (valid ? x->get(row * h + j) : 0.0) + (expert >= 0 ? b->get(expert * h + j) : 0.0);
      const double t = v * gy.get(r * h + j);
      sum += t;
      mag += std::fabs(t);
    }
    gs.set(i, sum);
    gs_mag.set(i, mag);
  }

  RefOutputs out;
  out.expected[kGradX] = std::move(gx);
  out.expected[kGradScales] = std::move(gs);
  out.magnitude[kGradScales] = std::move(gs_mag);
  out.care[kGradX] = std::move(gx_care);
  out.care[kGradScales] = std::move(gs_care);
  return out;
}

}  // namespace opgate::ref::moe_finalize_routing_v2_grad
