// Double-precision reference of aclnnMoeFFN (spec attention-and-ffn.md §2.3, §2.5) and the aclnn and
// tiling validation of §2.9 with its error codes, in the order of aclnn_ffn.cpp
// (GetFFNResultByL0Api) and ffn_tiling.cpp (FFNParamsCheck, GetInputShape, GetBs).
#include "reference/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/aclnn_codes.h"
#include "reference/math/shared_validate.h"
#include "reference/moe_ffn/moe_ffn_forward.h"

namespace opgate::ref::moe_ffn {
namespace {

constexpr int64_t kMaxK = 65535;
constexpr int64_t kMaxExperts = 256;
constexpr uint32_t kFixpipeMask = 0xFFFFE000u;

Status invalid(const std::string& what, const char* rule) { return reject(aclnn::kParamInvalid, what, rule); }

int rank(const TensorSpec* t) { return static_cast<int>(t->shape.size()); }
int64_t dim(const TensorSpec* t, int i) { return t->shape[static_cast<size_t>(i)]; }
const char* dn(const TensorSpec* t) { return dtype_name(t->dtype); }

// The descriptors of one call; nullptr = the argument is a null pointer.
struct Args {
  const TensorSpec *x, *w1, *b1, *w2, *b2, *scale, *offset, *deq1, *deq2, *y;
};

Args args_of(const SpecMap& s) {
  return {present_spec(s, "x"),     present_spec(s, "weight1"), present_spec(s, "bias1"),     present_spec(s, "weight2"),   present_spec(s, "bias2"),
          present_spec(s, "scale"), present_spec(s, "offset"),  present_spec(s, "deqScale1"), present_spec(s, "deqScale2"), present_spec(s, "y")};
}

bool quant_empty(const Args& a) {
  return a.scale == nullptr && a.offset == nullptr && a.deq1 == nullptr && a.deq2 == nullptr;
}

// CheckExpertTokens: counts >= 0 and their sum == M (the product of x's dims but the last).
Status check_expert_tokens(const Params& p, int64_t bs) {
  int64_t total = 0;
  for (size_t e = 0; e < p.expert_tokens.size(); ++e) {
    const int64_t c = p.expert_tokens[e];
    if (c < 0) {
      return invalid(fmt::format("expertTokens[{}] = {} is negative", e, c),
                     "aclnn CheckExpertTokens: 'Expert tokens should not be smaller than zero'");
    }
    total = __builtin_add_overflow(total, c, &total) ? std::numeric_limits<int64_t>::max() : total;
  }
  if (total != bs) {
    return invalid(fmt::format("sum of expertTokens ({}) != M ({})", total, bs),
                   "aclnn CheckExpertTokens: 'Total number of expert tokens should be equal to the product of "
                   "all x dimensions excluding the last one'");
  }
  return Status::ok();
}

// CheckY, CheckFmapWeightShape (non-GLU and GLU forms) and CheckBias.
Status check_shapes(const Args& a, int64_t experts, bool glu) {
  if (rank(a.y) != rank(a.x)) {
    return invalid(fmt::format("y is {}-D, x is {}-D", rank(a.y), rank(a.x)), "aclnn CheckY: 'y dimNum == x dimNum'");
  }
  if (rank(a.x) < 2 || rank(a.x) > 8) {
    return invalid(fmt::format("x is {}-D", rank(a.x)), "aclnn CheckFmapWeightShape: 'x dim should within 2 ~ 8'");
  }
  const int w_rank = experts > 0 ? 3 : 2;
  if (rank(a.w1) != w_rank || rank(a.w2) != w_rank) {
    return invalid(fmt::format("weight1 is {}-D, weight2 is {}-D, need {}-D", rank(a.w1), rank(a.w2), w_rank),
                   "aclnn CheckFmapWeightShape: 'weight dim 3 with experts, 2 without'");
  }
  const int64_t k1 = dim(a.w1, w_rank - 2), n1 = dim(a.w1, w_rank - 1);
  const int64_t k2 = dim(a.w2, w_rank - 2), n2 = dim(a.w2, w_rank - 1);
  if (k1 > kMaxK || k2 > kMaxK) {
    return invalid(fmt::format("weight1 K {} / weight2 K {}", k1, k2),
                   "aclnn CheckFmapWeightShape: 'kDimValue of weight1 and weight2 <= 65535'");
  }
  if (a.x->shape.back() != k1) {
    return invalid(fmt::format("x last dim {} != weight1 K {}", a.x->shape.back(), k1),
                   "aclnn CheckFmapWeightShape: 'x KDimValue == weight1 kDimValue'");
  }
  if (glu) {
    if (n1 % 2 != 0 || k2 != n1 / 2) {
      return invalid(fmt::format("GLU shapes: weight1 N {}, weight2 K {}", n1, k2),
                     "aclnn GluShapeCheck: 'N1 even and K2 == N1 / 2'");
    }
    return Status::ok();
  }
  if (k1 != n2 || n1 != k2) {
    return invalid(fmt::format("weight1 (K {}, N {}) vs weight2 (K {}, N {})", k1, n1, k2, n2),
                   "aclnn CheckFmapWeightShape: 'weight1 K == weight2 N and weight1 N == weight2 K'");
  }
  if (experts > 0 && (dim(a.w1, 0) != experts || dim(a.w2, 0) != experts)) {
    return invalid(fmt::format("weight1 dim0 {}, weight2 dim0 {}, expertTokens length {}", dim(a.w1, 0),
                               dim(a.w2, 0), experts),
                   "aclnn CheckFmapWeightShape: 'weight dim0 == expertTokens length'");
  }
  const int b_rank = experts > 0 ? 2 : 1;
  for (const auto& [name, b, w] : {std::tuple{"bias1", a.b1, a.w1}, std::tuple{"bias2", a.b2, a.w2}}) {
    if (b == nullptr) continue;
    if (rank(b) != b_rank || b->shape.back() != w->shape.back() || (experts > 0 && dim(b, 0) != experts)) {
      return invalid(fmt::format("{} {} with weight N {} and {} experts", name, shape_to_string(b->shape),
                                 w->shape.back(), experts),
                     "aclnn CheckBiasDimNum: 'bias (E, N) with experts, last dim == weight N, dim0 == E'");
    }
  }
  return Status::ok();
}

// CheckQuant: the int8 path's quantisation parameters (F14, F15).
Status check_quant(const Args& a, int64_t experts) {
  if (a.scale == nullptr || a.offset == nullptr || a.deq1 == nullptr || a.deq2 == nullptr) {
    return invalid("scale, offset, deqScale1 and deqScale2 must all be present for int8 x",
                   "aclnn CheckQuant: OP_CHECK_NULL(scale/offset/deqScale1/deqScale2)");
  }
  const DType dq = a.deq1->dtype;
  const bool deq_ok = a.y->dtype == DType::kBF16 ? dq == DType::kBF16
                                                 : dq == DType::kU64 || dq == DType::kI64 || dq == DType::kF32;
  if (!deq_ok || a.deq2->dtype != dq) {
    return invalid(fmt::format("deqScale1 {}, deqScale2 {} with y {}", dn(a.deq1), dn(a.deq2), dn(a.y)),
                   "aclnn CheckQuant: 'deqScale BFLOAT16 for y BFLOAT16, else UINT64/INT64/FLOAT; both alike'");
  }
  if (a.scale->dtype != DType::kF32 || a.offset->dtype != DType::kF32) {
    return invalid(fmt::format("scale {}, offset {}", dn(a.scale), dn(a.offset)),
                   "aclnn CheckQuant: 'scale and offset FLOAT'");
  }
  const int d_rank = experts > 0 ? 2 : 1;
  if (rank(a.deq1) != d_rank || rank(a.deq2) != d_rank || rank(a.offset) != 1 ||
      a.deq1->shape.back() != a.w1->shape.back() || a.deq2->shape.back() != a.w2->shape.back()) {
    return invalid(fmt::format("deqScale1 {}, deqScale2 {}, offset {}", shape_to_string(a.deq1->shape),
                               shape_to_string(a.deq2->shape), shape_to_string(a.offset->shape)),
                   "aclnn CheckQuantDimNumAndShape: 'deqScale (E, N) matching its weight, offset 1-D'");
  }
  const int64_t n1 = a.w1->shape.back();
  const int64_t need = experts > 0 ? experts : 1;
  const int s_rank = rank(a.scale);
  bool scale_ok = s_rank == 1 || (experts > 0 && s_rank == 2);
  scale_ok = scale_ok && dim(a.scale, 0) == need;
  if (s_rank == 2) scale_ok = scale_ok && dim(a.scale, 1) == n1 && dq != DType::kF32;
  if (!scale_ok) {
    return invalid(fmt::format("scale {} with {} experts, N1 {}, deqScale {}", shape_to_string(a.scale->shape),
                               experts, n1, dtype_name(dq)),
                   "aclnn CheckQuantScaleAndOffset: 'scale (E) or (E, N1) (per-channel not with FLOAT deqScale)'");
  }
  // No broadcast: a one-element offset is the no-experts (1) shape; the kernel reads offset[expert].
  if (dim(a.offset, 0) != need) {
    return invalid(fmt::format("offset {} with {} experts", shape_to_string(a.offset->shape), experts),
                   "aclnn CheckQuantScaleAndOffset: 'offset length should be E' (no broadcast of a one-element offset)");
  }
  if (experts > 0 && (dim(a.deq1, 0) != experts || dim(a.deq2, 0) != experts)) {
    return invalid(fmt::format("deqScale dim0 {} / {} with {} experts", dim(a.deq1, 0), dim(a.deq2, 0), experts),
                   "aclnn CheckQuantDimNumAndShape: 'deqScale dim0 == expertTokens length'");
  }
  return Status::ok();
}

// CheckOptionalParams for the element-wise activations (F12-F16, F18).
Status check_dtypes(const Params& p, const Args& a, int64_t experts) {
  const DType x = a.x->dtype, w = a.w1->dtype;
  if (x != DType::kF16 && x != DType::kBF16 && x != DType::kI8) {
    return invalid(fmt::format("x dtype {}", dn(a.x)), "aclnn CheckOptionalParams: 'x FLOAT16, BFLOAT16 or INT8'");
  }
  if (a.w2->dtype != w || (w != DType::kF16 && w != DType::kBF16 && w != DType::kI8)) {
    return invalid(fmt::format("weight1 {}, weight2 {}", dn(a.w1), dn(a.w2)),
                   "aclnn CheckOptionalParams: 'weight1 == weight2 dtype, FLOAT16/BFLOAT16/INT8/INT4'");
  }
  auto bias_is = [&](DType t) {
    return (a.b1 == nullptr || a.b1->dtype == t) && (a.b2 == nullptr || a.b2->dtype == t);
  };
  if (x == DType::kI8) {
    if (w != DType::kI8 || !bias_is(DType::kI32) || (a.y->dtype != DType::kF16 && a.y->dtype != DType::kBF16)) {
      return invalid(fmt::format("int8 x with weights {}, bias {}/{}, y {}", dn(a.w1), a.b1 ? dn(a.b1) : "null",
                                 a.b2 ? dn(a.b2) : "null", dn(a.y)),
                     "aclnn CheckOptionalParams: 'INT8 x: INT8 weights, INT32 bias, y FLOAT16 or BFLOAT16' (Doc-004 "
                     "lists y FLOAT and bias INT8; the kernel supports neither)");
    }
    return check_quant(a, experts);
  }
  if (w == DType::kI8) {
    return invalid("fp x with int8 weights is the antiquant path; antiquantScale/Offset are not aclnnMoeFFN arguments",
                   "aclnn CheckAntiQuant: 'antiquant params must not be null'");
  }
  const DType want = x == DType::kBF16 ? DType::kBF16 : DType::kF16;
  if (a.y->dtype != want || w != want) {
    return invalid(fmt::format("x {}, weights {}, y {}", dn(a.x), dn(a.w1), dn(a.y)),
                   "aclnn CheckOptionalParams: 'FLOAT16 x: FLOAT16 weights and y; BFLOAT16 x: BFLOAT16 weights and y'");
  }
  if (x == DType::kBF16 && p.inner_precise != 0) {
    return invalid(fmt::format("innerPrecise {} with bfloat16", p.inner_precise),
                   "aclnn CheckOptionalParams: 'FFN bfloat16 is only support high precision now'");
  }
  if (!quant_empty(a)) {
    return invalid("scale/offset/deqScale given for a non-quantised call",
                   "aclnn IsQuantEmpty: 'quant inputs must be null without int8 x'");
  }
  if (!bias_is(x == DType::kBF16 ? DType::kF32 : DType::kF16)) {
    return invalid(fmt::format("bias dtype with x {}", dn(a.x)),
                   "aclnn CheckBiasDtype: 'bias FLOAT16 for FLOAT16 x, FLOAT for BFLOAT16 x'");
  }
  return Status::ok();
}

}  // namespace

bool Params::operator==(const Params& o) const {
  return expert_tokens == o.expert_tokens && expert_tokens_null == o.expert_tokens_null && m == o.m &&
         k1 == o.k1 && n1 == o.n1 && dtype == o.dtype && y_dtype == o.y_dtype && deq_dtype == o.deq_dtype &&
         activation == o.activation && inner_precise == o.inner_precise && has_bias1 == o.has_bias1 &&
         has_bias2 == o.has_bias2 && per_channel_scale == o.per_channel_scale && offset_length == o.offset_length;
}

Path path_of(const Params& p) {
  if (p.dtype == DType::kI8) return p.y_dtype == DType::kBF16 ? Path::kQuantBF16 : Path::kQuantF16;
  if (p.dtype == DType::kBF16) return Path::kBF16;
  return p.inner_precise == 0 ? Path::kF16HighPrecision : Path::kF16HighPerformance;
}

const char* path_name(Path path) {
  switch (path) {
    case Path::kF16HighPerformance: return "fp16 high-performance";
    case Path::kF16HighPrecision: return "fp16 high-precision";
    case Path::kBF16: return "bf16";
    case Path::kQuantF16: return "int8 -> fp16";
    case Path::kQuantBF16: return "int8 -> bf16";
  }
  return "?";
}

int64_t num_experts(const Params& p) {
  return p.expert_tokens_null ? 1 : static_cast<int64_t>(p.expert_tokens.size());
}

DType bias_dtype(const Params& p) {
  switch (p.dtype) {
    case DType::kI8: return DType::kI32;
    case DType::kBF16: return DType::kF32;
    default: return DType::kF16;
  }
}

std::vector<int64_t> expert_offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  for (size_t e = 0; e < counts.size(); ++e) off[e + 1] = off[e] + counts[e];
  return off;
}

int64_t expert_of_row(const std::vector<int64_t>& offsets, int64_t r) {
  const auto it = std::upper_bound(offsets.begin(), offsets.end(), r);
  return static_cast<int64_t>(it - offsets.begin()) - 1;
}

double deq_value(const Tensor& deq, int64_t i, bool truncate) {
  if (deq.dtype() == DType::kBF16) return deq.get(i);
  auto bits = static_cast<uint32_t>(deq.bits(i));
  if (truncate) bits &= kFixpipeMask;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return static_cast<double>(f);
}

int64_t offset_elements(const Params& p) { return p.offset_length > 0 ? p.offset_length : num_experts(p); }

namespace {

// x of any rank 2..8 (spec F5): its leading dims hold the M tokens, its last dim is K1.
bool x_shape_fits(const Params& p, const Shape& shape) {
  if (shape.size() < 2 || shape.size() > 8 || shape.back() != p.k1) return false;
  const Shape leading(shape.begin(), shape.end() - 1);
  return numel_sat(leading) == p.m;
}

// y has x's leading dims and K2 = K1 columns.
Shape y_shape_of(const Shape& x_shape, int64_t k1) {
  Shape y = x_shape;
  if (!y.empty()) y.back() = k1;
  return y;
}

}  // namespace

SpecMap specs(const Params& p) {
  const int64_t e = num_experts(p);
  const bool quant = p.dtype == DType::kI8;
  SpecMap s;
  s["x"] = {p.dtype, {p.m, p.k1}, true};
  s["weight1"] = {p.dtype, {e, p.k1, p.n1}, true};
  s["bias1"] = {bias_dtype(p), {e, p.n1}, p.has_bias1};
  s["weight2"] = {p.dtype, {e, p.n1, p.k1}, true};
  s["bias2"] = {bias_dtype(p), {e, p.k1}, p.has_bias2};
  s["scale"] = {DType::kF32, p.per_channel_scale ? Shape{e, p.n1} : Shape{e}, quant};
  s["offset"] = {DType::kF32, {offset_elements(p)}, quant};
  s["deqScale1"] = {p.deq_dtype, {e, p.n1}, quant};
  s["deqScale2"] = {p.deq_dtype, {e, p.k1}, quant};
  s["y"] = {p.y_dtype, {p.m, p.k1}, true};
  return s;
}

Status validate(const Params& p, const SpecMap& s) {
  for (const auto& [name, t] : s) {
    if (t.present && std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; })) {
      return invalid_case(fmt::format("{} has a negative extent: {}", name, shape_to_string(t.shape)));
    }
  }
  const Args a = args_of(s);
  for (const auto& [name, t] : {std::pair{"x", a.x}, std::pair{"weight1", a.w1}, std::pair{"weight2", a.w2},
                                std::pair{"y", a.y}}) {
    if (t == nullptr) {
      return reject(aclnn::kParamNullptr, fmt::format("{} is a null pointer", name),
                    "aclnn CheckNotNull: 'x, weight1, weight2, y must not be nullptr'");
    }
  }
  if (p.expert_tokens_null) {
    return reject(aclnn::kParamNullptr, "expertTokens is a null pointer",
                  "Doc-004: '161001: x, expertTokens, weight1, y or executor is a null pointer'");
  }
  const auto experts = static_cast<int64_t>(p.expert_tokens.size());
  Shape batch = a.x->shape;
  if (!batch.empty()) batch.pop_back();
  const int64_t bs = numel_sat(batch);
  if (experts > 0) OPGATE_TRY(check_expert_tokens(p, bs));
  const Activation act = parse_activation(p.activation);
  OPGATE_TRY(check_shapes(a, experts, is_glu(act)));
  if (act == Activation::kInvalid) {
    return invalid(fmt::format("activation '{}'", p.activation),
                   "aclnn GetActiveType: 'fastgelu, relu, silu, gelu, geglu, swiglu, reglu'");
  }
  if (is_glu(act)) {
    return invalid(fmt::format("activation {} with expertTokens", p.activation),
                   "aclnn CheckGlu: 'Detected glu, expert tokens should be nullptr'");
  }
  if (experts == 0) {
    return invalid_case("expertTokens is empty: the call is aclnnFFN without experts, not aclnnMoeFFN");
  }
  OPGATE_TRY(check_dtypes(p, a, experts));
  // CheckY compares ranks only; the kernel writes y as x's M rows of K2 columns, so a y of another
  // shape is outside what the spec describes.
  if (a.y->shape != y_shape_of(a.x->shape, p.k1)) {
    return invalid_case(fmt::format("y is {}, x {} makes y {} (x's leading dims, then K2)", shape_to_string(a.y->shape),
                                    shape_to_string(a.x->shape), shape_to_string(y_shape_of(a.x->shape, p.k1))));
  }
  // An empty x returns before tiling (GetFFNResultByL0Api: x->IsEmpty()).
  if (numel_sat(a.x->shape) == 0) return Status::ok();
  if (p.inner_precise != 0 && p.inner_precise != 1) {
    return reject(aclnn::kInnerTiling, fmt::format("innerPrecise {}", p.inner_precise),
                  "tiling FFNParamsCheck: 'Attr inner_precise only support 0/1'");
  }
  if (experts > kMaxExperts) {
    return reject(aclnn::kInnerTiling, fmt::format("{} experts", experts),
                  "tiling GetInputShape: 'expertNum ... is larger than max value: 256'");
  }
  const int64_t per_block = 32 / static_cast<int64_t>(dtype_size(a.x->dtype));
  const int64_t max_bs = std::numeric_limits<int32_t>::max() / per_block * per_block;
  if (bs > max_bs) {
    return reject(aclnn::kInnerTiling, fmt::format("M = {} > {}", bs, max_bs),
                  "tiling GetBs: '32Byte-aligned M dim cannot be greater than INT32_MAX'");
  }
  return Status::ok();
}

Status check_data(const Params& p, const TensorMap& inputs) {
  const SpecMap s = specs(p);
  for (const auto& [name, spec] : s) {
    if (!spec.present || name == "y") continue;
    const auto it = inputs.find(name);
    if (it == inputs.end() || !it->second.defined()) return invalid_case(fmt::format("input {} is missing", name));
    const bool shape_ok = name == "x" ? x_shape_fits(p, it->second.shape()) : it->second.shape() == spec.shape;
    if (it->second.dtype() != spec.dtype || !shape_ok) {
      return invalid_case(fmt::format("input {} is {} {}, specs say {} {}", name, dtype_name(it->second.dtype()),
                                      shape_to_string(it->second.shape()), dtype_name(spec.dtype),
                                      shape_to_string(spec.shape)));
    }
  }
  if (p.dtype != DType::kI8) return Status::ok();
  // |sum x*W + b| <= depth * 128 * 128 + |b| must stay an int32 in both matmuls.
  constexpr double kInt32Max = 2147483647.0;
  for (const auto& [bias, depth] : {std::pair{"bias1", p.k1}, std::pair{"bias2", p.n1}}) {
    if (!s.at(bias).present) continue;
    const Tensor& b = inputs.at(bias);
    double largest = 0;
    for (int64_t i = 0; i < b.numel(); ++i) largest = std::max(largest, std::fabs(b.get(i)));
    if (largest > kInt32Max - static_cast<double>(depth) * 128.0 * 128.0) {
      return invalid_case(fmt::format("{}: |value| up to {} with depth {} may overflow the kernel's int32 "
                                      "accumulator (the reference does not wrap)",
                                      bias, largest, depth));
    }
  }
  return Status::ok();
}

// rows [off_e, off_e + count_e) use expert e (experts with no tokens are skipped)
// h = x W1[e] + b1[e];  a = act(h);  y = a W2[e] + b2[e]
// int8: h = (x W1[e] + b1[e]) * deq1[e]; aq = sat8(rne(a * scale + offset)); y = (aq W2[e] + b2[e]) * deq2[e]
RefOutputs reference(const Params& p, const TensorMap& inputs) {
  // forward writes every element (Tensor::empty: the pages are touched once, by the results).
  Tensor y = Tensor::empty(DType::kF64, {p.m, p.k1});
  Tensor magnitude = Tensor::empty(DType::kF64, {p.m, p.k1});
  forward(p, inputs, y, magnitude);
  // The M rows in x's leading dims (x of rank 2..8): the same elements in the same order.
  const Shape shape = y_shape_of(inputs.at("x").shape(), p.k1);
  RefOutputs out;
  // A finite expected value whose bound is infinite: a kernel intermediate (a hidden value in
  // fp16/bf16/fp32, an fp32 accumulation, the dequantised product) can overflow on the way, so Inf
  // or NaN are what a correct kernel may return there (with non-finite inputs the expected Inf or
  // NaN stays compared). Declared undefined, with a zero magnitude (golden files keep finite ones).
  // So is one whose bound spans every finite value of y's dtype (|e| + bound >= its largest).
  const double y_max = max_finite(p.y_dtype);
  const int64_t n = y.numel();
  double* yv = y.ptr<double>();
  double* mv = magnitude.ptr<double>();
  auto beyond_at = [&](int64_t i) { return std::isfinite(yv[i]) && !(mv[i] < y_max + std::fabs(yv[i])); };
  int64_t beyond = 0;
  for (int64_t i = 0; i < n; ++i) beyond += beyond_at(i) ? 1 : 0;
  if (beyond > 0) {
    Tensor care = Tensor::full(DType::kU8, {p.m, p.k1}, 1.0);
    uint8_t* c = care.ptr<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (beyond_at(i)) {
        c[i] = 0;
        mv[i] = 0.0;
      }
    }
    out.care["y"] = care.reshaped(shape);
    out.beyond_range["y"] = {beyond, "a hidden value or an fp32 accumulation of the kernel can overflow on the way "
                                     "(Inf or NaN are what a correct kernel may return), or the error bound spans "
                                     "every finite value of y's dtype"};
  }
  out.expected["y"] = y.reshaped(shape);
  out.magnitude["y"] = magnitude.reshaped(shape);
  return out;
}

}  // namespace opgate::ref::moe_ffn
