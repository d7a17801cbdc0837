// Double-precision reference of aclnnMoeFFN (spec attention-and-ffn.md §2: the open-source FFN
// operator with expertTokens), with the validation of its aclnn layer and tiling (§2.9, F1-F19)
// and the per-element error budget its `bound` tolerance needs (§2.7).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/moe_ffn/moe_ffn_activation.h"

namespace opgate::ref::moe_ffn {

// Bumped whenever the reference's semantics change on purpose (golden-format.md).
constexpr int kReferenceVersion = 4;

// Problem descriptor. expertTokens and activation are the aclnn arguments verbatim; M, K1, N1 the
// problem dimensions (x is (M, K1), weight1 (E, K1, N1), weight2 (E, N1, K1), y (M, K1)).
struct Params {
  std::vector<int64_t> expert_tokens{1};  // tokens per expert (counts, not cumulative)
  bool expert_tokens_null = false;        // expertTokens passed as nullptr
  int64_t m = 1;
  int64_t k1 = 1;
  int64_t n1 = 1;
  DType dtype = DType::kF16;       // x, weight1, weight2: FLOAT16, BFLOAT16 or INT8
  DType y_dtype = DType::kF16;     // FLOAT16; BFLOAT16 for BFLOAT16 x and optionally for INT8 x
  DType deq_dtype = DType::kU64;   // deqScale1/2 (INT8 x): UINT64, INT64, FLOAT32; BFLOAT16 for y BF16
  std::string activation = "fastgelu";
  int64_t inner_precise = 1;       // aclnnFFN attribute: 1 high performance, 0 high precision
  bool has_bias1 = false;
  bool has_bias2 = false;
  bool per_channel_scale = false;  // scale (E, N1) instead of (E)
  // Elements of offset: 0 means E (its (E) shape). 1 with E > 1 is the no-experts (1) shape, which
  // CheckQuantScaleAndOffset rejects with experts (161002); the kernel reads offset[expert].
  int64_t offset_length = 0;
  bool operator==(const Params& o) const;
};

// The kernel path the call takes (tiling keys of spec §2.7).
enum class Path {
  kF16HighPerformance,  // fp16 hidden, activation in half (innerPrecise 1)
  kF16HighPrecision,    // fp32 hidden and activation, hidden rounded once to fp16 (innerPrecise 0)
  kBF16,                // fp32 hidden and activation, hidden rounded once to bf16
  kQuantF16,            // int8, fixpipe dequant to fp16, activation and AscendQuant in half
  kQuantBF16,           // int8, AscendDequant to fp32, AscendQuant via half, y bf16
};
Path path_of(const Params& p);
const char* path_name(Path path);

// E: experts, the length of expertTokens (1 when it is null).
int64_t num_experts(const Params& p);
// Bias dtype of the path: FLOAT16 (fp16 x), FLOAT32 (bf16 x), INT32 (int8 x).
DType bias_dtype(const Params& p);
// First row of each expert's block: offsets[e] = sum of counts before e (E + 1 entries).
std::vector<int64_t> expert_offsets(const std::vector<int64_t>& counts);
// The expert owning row r (r < M), given the offsets.
int64_t expert_of_row(const std::vector<int64_t>& offsets, int64_t r);
// The fp32 scale a deqScale element carries: its low 32 bits as fp32 bits (UINT64, INT64, FLOAT32;
// `truncate` keeps the top 19 bits the cube's fixpipe uses), or the BFLOAT16 value itself.
double deq_value(const Tensor& deq, int64_t i, bool truncate);

// Elements of offset the call passes: offset_length, or E when it is 0.
int64_t offset_elements(const Params& p);

// Descriptors of a well-formed call: x, weight1, bias1, weight2, bias2, scale, offset, deqScale1,
// deqScale2 (present per Params) and y.
SpecMap specs(const Params& p);

// The checks of the aclnn layer (161001 null, 161002 invalid) and of tiling (561002) in the order
// of aclnn_ffn.cpp / ffn_tiling.cpp, rules F1-F19 of spec §2.9 that apply with expertTokens.
// Ok, or kAclnnError with the code and a message quoting the violated rule.
Status validate(const Params& p, const SpecMap& specs);

// Inputs match specs(p), and the int8 path's int32 accumulators cannot overflow (the reference
// would not wrap). Ok or kInvalidCase.
Status check_data(const Params& p, const TensorMap& inputs);

// Expected y for valid inputs (names as in `specs`, device dtypes), rows split by expertTokens:
//   rows [off_e, off_e + count_e) use expert e; experts with no tokens are skipped
//   h[r,n] = sum_k x[r,k] * W1[e,k,n] + b1[e,n]
//   a[r,n] = act(h[r,n])
//   y[r,m] = sum_n a[r,n] * W2[e,n,m] + b2[e,m]
// int8 path: h = (sum_k x*W1 + b1) * deq1[e,n] (deq truncated to 19 bits),
//   aq = sat8(rne(a * scale + offset)), y = (sum_n aq*W2 + b2) * deq2[e,m].
// N1 = 0: y = b2 (int8: b2 * deq2 with the full fp32 deq bits, the vector dequant), or 0.
// magnitude[y] is the element's absolute error budget before the final rounding to y's dtype:
// the rounding errors of every step of the kernel's path propagated through the hidden layer
// (fp paths), or sum over hidden values within reach of an int8 rounding boundary of
// steps * |W2| * deq2 (int8 paths); see cases/moe_ffn/README.md. Precondition: validate and
// check_data are ok.
RefOutputs reference(const Params& p, const TensorMap& inputs);

}  // namespace opgate::ref::moe_ffn
