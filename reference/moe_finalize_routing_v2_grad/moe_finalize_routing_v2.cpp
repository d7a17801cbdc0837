// Double-precision forward MoeFinalizeRoutingV2 (routing-ops.md §2.2) and its aclnn/tiling
// validation (§2.4), kept compact: it serves the gradient checks of MoeFinalizeRoutingV2Grad.
#include "reference/moe_finalize_routing_v2_grad/moe_finalize_routing_v2.h"

#include <fmt/format.h>

namespace opgate::ref::moe_finalize_routing_v2_grad::forward {
namespace {

constexpr const char* kExpandedX = "expandedX";
constexpr const char* kRowIdx = "expandedRowIdx";
constexpr const char* kX1 = "x1Optional";
constexpr const char* kX2 = "x2Optional";
constexpr const char* kBias = "biasOptional";
constexpr const char* kScales = "scalesOptional";
constexpr const char* kExpertIdx = "expertIdxOptional";
constexpr const char* kOut = "out";

const TensorSpec* find(const SpecMap& s, const char* name) {
  const auto it = s.find(name);
  return it == s.end() || !it->second.present ? nullptr : &it->second;
}

bool is_io_float(DType t) { return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32; }

Status reject(int64_t code, const std::string& what) {
  return aclnn_error(code, fmt::format("{}: {}", code, what));
}

bool is_matrix(const TensorSpec* t, int64_t rows, int64_t cols) {
  return t->shape.size() == 2 && t->shape[0] == rows && t->shape[1] == cols;
}

}  // namespace

int64_t num_expanded_rows(const Params& p) {
  return p.drop_pad_mode == 1 || p.drop_pad_mode == 3 ? p.expert_num * p.expert_capacity
                                                      : p.expanded_rows;
}

SpecMap specs(const Params& p) {
  const int64_t r = p.num_rows;
  const int64_t k = p.has_scales ? p.top_k : 1;
  const int64_t h = p.hidden;
  const bool padded = p.drop_pad_mode == 1 || p.drop_pad_mode == 3;
  SpecMap s;
  s[kExpandedX] = {p.dtype,
                   padded ? Shape{p.expert_num, p.expert_capacity, h} : Shape{p.expanded_rows, h},
                   true};
  s[kRowIdx] = {DType::kI32, {r * k}, true};
  s[kX1] = {p.dtype, {r, h}, p.has_x1};
  s[kX2] = {p.dtype, {r, h}, p.has_x2};
  s[kBias] = {p.dtype, {p.expert_num, h}, p.has_bias};
  s[kScales] = {p.scales_dtype, {r, k}, p.has_scales};
  s[kExpertIdx] = {DType::kI32, {r, k}, p.has_bias};
  s[kOut] = {p.dtype, {r, h}, true};
  return s;
}

Status validate(const Params& p, const SpecMap& s) {
  const TensorSpec* x = find(s, kExpandedX);
  const TensorSpec* idx = find(s, kRowIdx);
  const TensorSpec* out = find(s, kOut);
  if (x == nullptr || idx == nullptr || out == nullptr) {
    return reject(161001, "expandedX, expandedRowIdx and out must not be null");
  }
  const TensorSpec* x1 = find(s, kX1);
  const TensorSpec* x2 = find(s, kX2);
  const TensorSpec* b = find(s, kBias);
  const TensorSpec* sc = find(s, kScales);
  const TensorSpec* ei = find(s, kExpertIdx);
  if (!is_io_float(x->dtype) || idx->dtype != DType::kI32 || (ei && ei->dtype != DType::kI32) ||
      (sc && !is_io_float(sc->dtype))) {
    return reject(161002, "dtypes: expandedX/scales FLOAT16/BFLOAT16/FLOAT32, indices INT32");
  }
  for (const TensorSpec* t : {x1, x2, b, out}) {
    if (t && t->dtype != x->dtype)
      return reject(161002, "x1, x2, bias, out dtype must equal expandedX");
  }
  const int64_t mode = p.drop_pad_mode;
  const size_t x_rank = mode == 1 || mode == 3 ? 3 : 2;
  if ((mode >= 0 && mode <= 3 && x->shape.size() != x_rank) || idx->shape.size() != 1 ||
      out->shape.size() != 2) {
    return reject(161002,
                  "expandedX 2-D (modes 0, 2) / 3-D (modes 1, 3), expandedRowIdx 1-D, out 2-D");
  }
  for (const TensorSpec* t : {x1, x2, b, sc, ei}) {
    if (t && t->shape.size() != 2) return reject(161002, "optional tensors must be 2-D");
  }
  if (mode < 0 || mode > 3)
    return reject(561103, fmt::format("dropPadMode {} not in [0, 3]", mode));
  const int64_t k = sc ? sc->shape[1] : 1;
  if (k <= 0 || idx->shape[0] % k != 0) {
    return reject(561103, fmt::format("K = {} does not divide numel(expandedRowIdx)", k));
  }
  const int64_t r = idx->shape[0] / k;
  const int64_t h = x->shape.back();
  if ((x1 && !is_matrix(x1, r, h)) || (x2 && !x1) || (x2 && !is_matrix(x2, r, h))) {
    return reject(561103, "x1 and x2 must be (R, H); x2 requires x1");
  }
  if (b) {
    const bool padded = mode == 1 || mode == 3;
    if (!ei || (padded && b->shape[0] != x->shape[0]) || b->shape[1] != h || b->shape[0] < k ||
        b->shape[0] == 0) {
      return reject(561103, "bias needs expertIdx and must be (E, H) with E >= K > 0");
    }
  }
  if (ei && !is_matrix(ei, r, k)) return reject(561103, "expertIdx must be (R, K)");
  if (!is_matrix(out, r, h) || out->dtype != x->dtype) {
    return reject(561103, "out must be (R, H) with the dtype of expandedX");
  }
  return Status::ok();
}

// idx(r,k) = expandedRowIdx[k*R + r] (modes 0/1) or [r*K + k] (modes 2/3); X = expandedX as
// (numRows, H); s(r,k) = scales[r,k] or 1; b(r,k) = bias[expertIdx[r,k], :] or 0
// out[r,:] = x1[r,:] + x2[r,:] + sum_k s(r,k) * (X[idx(r,k),:] + b(r,k))
// dropped slot (idx outside [0, numRows)): kSkip -> 0, kScaledBias -> s(r,k) * b(r,k)
Tensor reference(const Params& p, const TensorMap& in, DroppedSlot dropped) {
  const int64_t r_n = p.num_rows;
  const int64_t k_n = p.has_scales ? p.top_k : 1;
  const int64_t h = p.hidden;
  const int64_t rows = num_expanded_rows(p);
  const bool k_major = p.drop_pad_mode == 0 || p.drop_pad_mode == 1;
  const Tensor& x = in.at(kExpandedX);
  const Tensor& idx = in.at(kRowIdx);
  Tensor out = Tensor::zeros(DType::kF64, {r_n, h});
  for (int64_t r = 0; r < r_n; ++r) {
    for (int64_t j = 0; j < h; ++j) {
      double acc = 0.0;
      if (p.has_x1) acc += in.at(kX1).get(r * h + j);
      if (p.has_x2) acc += in.at(kX2).get(r * h + j);
      for (int64_t k = 0; k < k_n; ++k) {
        const int64_t slot = r * k_n + k;
        const auto row = static_cast<int64_t>(idx.get(k_major ? k * r_n + r : slot));
        const bool valid = row >= 0 && row < rows;
        if (!valid && (dropped == DroppedSlot::kSkip || !p.has_bias)) continue;
        double t = valid ? x.get(row * h + j) : 0.0;
        if (p.has_bias) {
          const auto e = static_cast<int64_t>(in.at(kExpertIdx).get(slot));
          OPGATE_CHECK(e >= 0 && e < p.expert_num, fmt::format("expertIdx {} out of range", e));
          t += in.at(kBias).get(e * h + j);
        }
        acc += (p.has_scales ? in.at(kScales).get(slot) : 1.0) * t;
      }
      out.set(r * h + j, acc);
    }
  }
  return out;
}

}  // namespace opgate::ref::moe_finalize_routing_v2_grad::forward
