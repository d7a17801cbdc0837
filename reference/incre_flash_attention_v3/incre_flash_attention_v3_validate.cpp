// Validation of an aclnnIncreFlashAttentionV3 call, rules V1-V25 of attention-and-ffn.md §1.6:
// the aclnn layer's null and dtype checks (161001, 161002) first, then the tiling checks (561002),
// reading the descriptors the way the host code does (dimensions from shapes and the layout).
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "reference/incre_flash_attention_v3.h"
#include "core/aclnn_codes.h"
#include "reference/math/shared_validate.h"

namespace opgate::ref::incre_flash_attention_v3 {
namespace {

Status tiling(const std::string& what, const char* rule) { return reject(aclnn::kInnerTiling, what, rule); }

bool is_half(DType t) { return t == DType::kF16 || t == DType::kBF16; }
int rank(const TensorSpec* t) { return static_cast<int>(t->shape.size()); }

// The key (or value) tensors of the list: key.0, key.1, ... or the single "key".
std::vector<const TensorSpec*> tensor_list(const SpecMap& s, const char* name) {
  std::vector<const TensorSpec*> out;
  for (size_t i = 0;; ++i) {
    const auto it = s.find(fmt::format("{}.{}", name, i));
    if (it == s.end()) break;
    out.push_back(it->second.present ? &it->second : nullptr);
  }
  if (out.empty()) out.push_back(present_spec(s, name));
  return out;
}

struct Dims {
  int64_t b = 0, n = 0, n2 = 0, d = 0;
  bool paged = false;
  int64_t table_cols = 0;
  std::vector<int64_t> kv_len;  // S_b per batch (non-paged)
};

// V1, V2: the aclnn layer.
Status aclnn_checks(const SpecMap& s, const std::vector<const TensorSpec*>& keys,
                    const std::vector<const TensorSpec*>& values) {
  const TensorSpec* q = present_spec(s, "query");
  const TensorSpec* out = present_spec(s, "attentionOut");
  const bool kv_missing = std::any_of(keys.begin(), keys.end(), [](auto* t) { return t == nullptr; }) ||
                          std::any_of(values.begin(), values.end(), [](auto* t) { return t == nullptr; });
  if (q == nullptr || out == nullptr || kv_missing) {
    return reject(aclnn::kParamNullptr, "query, key, value or attentionOut is a null pointer",
                  "V1, doc: 'required inputs and outputs must not be null'");
  }
  const DType qt = q->dtype;
  const DType kt = keys[0]->dtype;
  const DType ot = out->dtype;
  const auto kv_ok = [](const TensorSpec* t) { return is_half(t->dtype) || t->dtype == DType::kI8; };
  if (!is_half(qt) || !std::all_of(keys.begin(), keys.end(), kv_ok) ||
      !std::all_of(values.begin(), values.end(), kv_ok) || !(is_half(ot) || ot == DType::kI8)) {
    return reject(aclnn::kParamInvalid,
                  fmt::format("query {}, key {}, attentionOut {}", dtype_name(qt), dtype_name(kt), dtype_name(ot)),
                  "V2, doc: 'query FLOAT16/BFLOAT16; key, value FLOAT16/BFLOAT16/INT8; out FLOAT16/BFLOAT16/INT8'");
  }
  if ((kt != qt && kt != DType::kI8) || (ot != qt && ot != DType::kI8)) {
    return reject(aclnn::kParamInvalid,
                  fmt::format("(query, key, attentionOut) = ({}, {}, {})", dtype_name(qt), dtype_name(kt), dtype_name(ot)),
                  "V2, def.cpp: 'key and attentionOut are the query dtype or INT8'");
  }
  const TensorSpec* pse = present_spec(s, "pseShift");
  if (pse != nullptr && pse->dtype != qt) {
    return reject(aclnn::kParamInvalid, fmt::format("pseShift {} with query {}", dtype_name(pse->dtype), dtype_name(qt)),
                  "V2, def.cpp: 'pseShift dtype equals the query dtype'");
  }
  const TensorSpec* mask = present_spec(s, "attenMask");
  if (mask != nullptr && numel_sat(mask->shape) > 0) {
    const DType mt = mask->dtype;
    if (mt != DType::kBool && mt != DType::kI8 && mt != DType::kU8) {
      return reject(aclnn::kParamInvalid, fmt::format("attenMask {}", dtype_name(mt)),
                    "V2, doc: 'attenMask BOOL, INT8 or UINT8'");
    }
    if (qt == DType::kBF16 && ot == DType::kI8 && mt != DType::kBool) {
      return reject(aclnn::kParamInvalid, fmt::format("attenMask {} with bf16 query and int8 output", dtype_name(mt)),
                    "V2, def.cpp: '(bf16, *, int8) rows take a BOOL mask only'");
    }
  }
  return Status::ok();
}

// V3-V8, V11, V13, V14, V18: the query, the attributes and the output.
Status query_checks(const Params& p, const SpecMap& s, Dims& dims) {
  const TensorSpec* q = present_spec(s, "query");
  if (numel_sat(q->shape) == 0) return tiling("query is empty", "V3, tiling_check: 'query shape size > 0'");
  const std::string& layout = p.input_layout;
  if (layout != "BSH" && layout != "BNSD" && layout != "BSND") {
    return tiling(fmt::format("inputLayout '{}'", layout), "V6, tiling: 'inputLayout BSH, BNSD or BSND'");
  }
  if (p.num_heads <= 0 || p.num_key_value_heads < 0) {
    return tiling(fmt::format("numHeads {}, numKeyValueHeads {}", p.num_heads, p.num_key_value_heads),
                  "V4, tiling: 'numHeads != 0'");
  }
  dims.n = p.num_heads;
  dims.n2 = p.num_key_value_heads == 0 ? dims.n : p.num_key_value_heads;
  if (dims.n2 > dims.n || dims.n % dims.n2 != 0) {
    return tiling(fmt::format("numKeyValueHeads {} with numHeads {}", dims.n2, dims.n),
                  "V4, tiling: 'numKeyValueHeads <= numHeads and divides it'");
  }
  if (dims.n / dims.n2 > 64) {
    return tiling(fmt::format("G = numHeads / numKeyValueHeads = {}", dims.n / dims.n2), "V5, tiling: 'G <= 64'");
  }
  const Shape& qs = q->shape;
  const int want_rank = layout == "BSH" ? 3 : 4;
  if (rank(q) != want_rank) {
    return tiling(fmt::format("query {} is {}-D", shape_to_string(qs), rank(q)),
                  "V11, tiling: 'BSH query 3-D, BNSD/BSND query 4-D'");
  }
  dims.b = qs[0];
  int64_t q_seq = 0;
  if (layout == "BSH") {
    if (qs[2] % dims.n != 0) {
      return tiling(fmt::format("query H = {} not a multiple of numHeads {}", qs[2], dims.n),
                    "V7, tiling: 'BSH: H % numHeads == 0'");
    }
    q_seq = qs[1];
    dims.d = qs[2] / dims.n;
  } else {
    const int64_t qn = layout == "BNSD" ? qs[1] : qs[2];
    if (qn != dims.n) {
      return tiling(fmt::format("query N = {} but numHeads = {}", qn, dims.n), "V7, tiling: 'query N == numHeads'");
    }
    q_seq = layout == "BNSD" ? qs[2] : qs[1];
    dims.d = qs[3];
  }
  if (q_seq != 1) return tiling(fmt::format("query S = {}", q_seq), "V8, doc: 'only query S == 1 is supported'");
  if (dims.b > 65536 || dims.n2 > 256 || dims.d > 512 || dims.d <= 0) {
    return tiling(fmt::format("B = {}, N2 = {}, D = {}", dims.b, dims.n2, dims.d),
                  "V13, tiling: 'B <= 65536, N2 <= 256, 0 < D <= 512'");
  }
  if (p.inner_precise != 0 && p.inner_precise != 1) {
    return tiling(fmt::format("innerPrecise {}", p.inner_precise), "V14, tiling: 'innerPrecise 0 or 1'");
  }
  if (present_spec(s, "attentionOut")->shape != qs) {
    return tiling(fmt::format("attentionOut {} vs query {}", shape_to_string(present_spec(s, "attentionOut")->shape),
                              shape_to_string(qs)),
                  "V11, infershape: 'attentionOut shape == query shape'");
  }
  for (const char* name : {"dequantScale1", "quantScale1", "dequantScale2"}) {
    if (present_spec(s, name) != nullptr) {
      return tiling(fmt::format("{} is not null", name), "V18, tiling: 'query is not INT8: no dequant/quant1 params'");
    }
  }
  return Status::ok();
}

// V9, V11, V12 for the non-paged forms; fills dims.kv_len.
Status kv_tensor_checks(const Params& p, const std::vector<const TensorSpec*>& keys,
                        const std::vector<const TensorSpec*>& values, Dims& dims) {
  const bool list = keys.size() > 1;
  if (list && (static_cast<int64_t>(keys.size()) != dims.b || dims.b > 256)) {
    return tiling(fmt::format("{} key tensors for B = {}", keys.size(), dims.b),
                  "V12, doc: 'tensor list length == B, B <= 256'");
  }
  if (keys.size() != values.size()) {
    return tiling(fmt::format("{} key and {} value tensors", keys.size(), values.size()), "V9: 'key and value alike'");
  }
  const std::string& layout = p.input_layout;
  for (size_t i = 0; i < keys.size(); ++i) {
    const TensorSpec* k = keys[i];
    if (k->dtype != values[i]->dtype || k->shape != values[i]->shape) {
      return tiling(fmt::format("key {} {} vs value {} {}", dtype_name(k->dtype), shape_to_string(k->shape),
                                dtype_name(values[i]->dtype), shape_to_string(values[i]->shape)),
                    "V9, tiling: 'key dtype == value dtype; key shape == value shape'");
    }
    const Shape& ks = k->shape;
    const int want_rank = layout == "BSH" ? 3 : 4;
    const int64_t want_b = list ? 1 : dims.b;
    bool ok = rank(k) == want_rank && ks[0] == want_b;
    if (ok && layout == "BSH") ok = ks[2] == dims.n2 * dims.d;
    if (ok && layout == "BNSD") ok = ks[1] == dims.n2 && ks[3] == dims.d;
    if (ok && layout == "BSND") ok = ks[2] == dims.n2 && ks[3] == dims.d;
    if (!ok) {
      return tiling(fmt::format("key{} {} for layout {}, B {}, N2 {}, D {}", list ? fmt::format(".{}", i) : "",
                                shape_to_string(ks), layout, want_b, dims.n2, dims.d),
                    list ? "V12, tiling: 'each list tensor batch 1, N2 and D match, shapes equal except S'"
                         : "V11, tiling: 'key rank by layout, dim0 == B, D(q) == D(k), Hq/N == Hk/N2'");
    }
    const int64_t seq = layout == "BNSD" ? ks[2] : ks[1];
    if (list) {
      dims.kv_len.push_back(seq);
    } else {
      dims.kv_len.assign(static_cast<size_t>(dims.b), seq);
    }
  }
  return Status::ok();
}

// V9, V21, V22, V23: page attention.
Status paged_checks(const Params& p, const SpecMap& s, const std::vector<const TensorSpec*>& keys,
                    const std::vector<const TensorSpec*>& values, Dims& dims) {
  if (keys.size() != 1 || values.size() != 1) {
    return tiling("page attention with a key tensor list", "V22, doc: 'KV cache is one tensor with page attention'");
  }
  const TensorSpec* k = keys[0];
  if (k->dtype != values[0]->dtype || k->shape != values[0]->shape) {
    return tiling(fmt::format("key {} {} vs value {} {}", dtype_name(k->dtype), shape_to_string(k->shape),
                              dtype_name(values[0]->dtype), shape_to_string(values[0]->shape)),
                  "V9, tiling: 'key dtype == value dtype; key shape == value shape'");
  }
  const int64_t align = k->dtype == DType::kI8 ? 32 : 16;
  const int64_t bs = p.block_size;
  if (bs <= 0 || bs > 512 || bs % align != 0) {
    return tiling(fmt::format("blockSize {} with {} KV", bs, dtype_name(k->dtype)),
                  "V21, tiling: 'blockSize != 0, <= 512, 16-aligned (FLOAT16/BFLOAT16) or 32-aligned (INT8)'");
  }
  const Shape& ks = k->shape;
  if (rank(k) == 3) {
    if (ks[1] != bs || ks[2] != dims.n2 * dims.d) {
      return tiling(fmt::format("cache {} with blockSize {}, N2*D {}", shape_to_string(ks), bs, dims.n2 * dims.d),
                    "V23, tiling: 'cache (blocknum, blockSize, H2)'");
    }
    if (p.input_layout != "BNSD" && dims.n2 * dims.d > 65535) {
      return tiling(fmt::format("N2*D = {} with layout {}", dims.n2 * dims.d, p.input_layout),
                    "V23, ProcessBlockTable: 'BSH/BSND: N*D of the kv cache <= 65535 (copynd2nz srcDValue)'");
    }
  } else if (rank(k) == 4) {
    if (ks[1] != dims.n2 || ks[2] != bs || ks[3] != dims.d) {
      return tiling(fmt::format("cache {} with N2 {}, blockSize {}, D {}", shape_to_string(ks), dims.n2, bs, dims.d),
                    "V23, tiling: 'cache (blocknum, N2, blockSize, D)'");
    }
    if (p.input_layout != "BNSD") {
      return tiling(fmt::format("4-D cache with layout {}", p.input_layout),
                    "V23, doc: '(blocknum, N2, blockSize, D) cache only with BNSD query'");
    }
  } else {
    return tiling(fmt::format("cache {} is {}-D", shape_to_string(ks), rank(k)), "V23, tiling: 'cache rank 3 or 4'");
  }
  const TensorSpec* table = present_spec(s, "blocktable");
  if (table->dtype != DType::kI32 || rank(table) != 2 || table->shape[0] != dims.b || numel_sat(table->shape) == 0) {
    return tiling(fmt::format("blocktable {} {} for B = {}", dtype_name(table->dtype), shape_to_string(table->shape), dims.b),
                  "V22, doc: 'blocktable INT32, 2-D, dim0 == B, shape size > 0'");
  }
  if (!p.has_actual_seq_lengths || p.actual_seq_lengths.empty()) {
    return tiling("page attention without actualSeqLengths", "V22, tiling: 'actualSeqLengths required with page attention'");
  }
  dims.table_cols = table->shape[1];
  return Status::ok();
}

// V15 and the paged max-length rule of V22; returns max L_b.
Status length_checks(const Params& p, const Dims& dims, int64_t* max_len) {
  const auto& asl = p.actual_seq_lengths;
  const auto n = static_cast<int64_t>(asl.size());
  if (p.has_actual_seq_lengths && n > 1 && n < dims.b) {
    return tiling(fmt::format("actualSeqLengths has {} values for B = {}", n, dims.b),
                  "V15, tiling: 'actualSeqLengths length 0, 1 or >= B'");
  }
  *max_len = 0;
  for (int64_t b = 0; b < dims.b; ++b) {
    int64_t cap = dims.paged ? dims.table_cols * p.block_size : dims.kv_len[static_cast<size_t>(b)];
    int64_t len = dims.paged ? 0 : cap;
    if (p.has_actual_seq_lengths && n >= 1) len = asl[static_cast<size_t>(n == 1 ? 0 : b)];
    if (len < 0 || len > cap) {
      return tiling(fmt::format("actualSeqLengths[{}] = {} outside [0, {}]", n == 1 ? 0 : b, len, cap),
                    dims.paged ? "V22, tiling: 'max actual length <= blockSize * blocktable dim1'"
                               : "V15, tiling: 'each value >= 0 and <= S of the (b-th) key tensor'");
    }
    *max_len = std::max(*max_len, len);
  }
  return Status::ok();
}

// V16, V17: attenMask (an empty mask is ignored) and pseShift (checked even when empty).
// seq_bound: the largest key S (non-PA) or maxBlockNumPerSeq * blockSize (PA).
Status mask_pse_checks(const SpecMap& s, const Dims& dims, int64_t max_len, int64_t seq_bound) {
  const TensorSpec* mask = present_spec(s, "attenMask");
  if (mask != nullptr && numel_sat(mask->shape) > 0) {
    const int64_t need = dims.paged ? seq_bound : max_len;
    if (mask->shape[0] != dims.b || mask->shape.back() < need) {
      return tiling(fmt::format("attenMask {} for B = {}, needed last dim >= {}", shape_to_string(mask->shape), dims.b, need),
                    "V16, tiling: 'dim0 == B; last dim >= max L (PA: maxBlockNumPerSeq * blockSize)'");
    }
  }
  const TensorSpec* pse = present_spec(s, "pseShift");
  if (pse != nullptr) {
    const Shape& ps = pse->shape;
    const int64_t need = seq_bound;
    if (ps.size() != 4 || (ps[0] != 1 && ps[0] != dims.b) || ps[1] != dims.n || ps[2] != 1 || ps[3] < need) {
      return tiling(fmt::format("pseShift {} for B = {}, N = {}, needed last dim >= {}", shape_to_string(ps), dims.b,
                                dims.n, need),
                    "V17, tiling: '4-D, dim0 1 or B, dim1 == numHeads, dim2 == 1, last dim >= S'");
    }
    if (dims.d % 16 != 0) {
      return tiling(fmt::format("pseShift with D = {}", dims.d),
                    "V17, ProcessPseShift: 'When Pse shift is enabled, D should be 16 aligned'");
    }
  }
  return Status::ok();
}

// V19, V20: output quantisation and KV antiquant parameters.
Status quant_checks(const SpecMap& s, const Dims& dims, DType qt, DType kt, DType ot) {
  const TensorSpec* qs = present_spec(s, "quantScale2");
  const TensorSpec* qo = present_spec(s, "quantOffset2");
  if (ot != DType::kI8 && (qs != nullptr || qo != nullptr)) {
    return tiling("quantScale2/quantOffset2 given with a non-INT8 attentionOut", "V19, tiling: 'only with INT8 output'");
  }
  if (ot == DType::kI8) {
    if (qs == nullptr) return tiling("INT8 attentionOut without quantScale2", "V19, doc: 'quantScale2 required'");
    const bool dtype_ok = qs->dtype == DType::kF32 || (qs->dtype == DType::kBF16 && qt == DType::kBF16);
    if (!dtype_ok || (qo != nullptr && qo->dtype != qs->dtype)) {
      return tiling(fmt::format("quantScale2 {}, quantOffset2 {}", dtype_name(qs->dtype),
                                qo != nullptr ? dtype_name(qo->dtype) : "null"),
                    "V19, ProcessQuant2Dtype: 'FLOAT32 (BFLOAT16 only with a BFLOAT16 query); offset dtype == scale'");
    }
    const int64_t n = dims.n;
    const int64_t d = dims.d;
    const std::vector<Shape> allowed = {{1, n, 1, d}, {n, 1, d}, {n, d}, {1, 1, n, d},
                                        {1, n, d},    {1, n * d}, {1, 1, n * d}, {n * d}};
    // Each tensor with more than one element is checked on its own (ProcessQuant2).
    for (const auto& [name, t] : {std::pair{"quantScale2", qs}, std::pair{"quantOffset2", qo}}) {
      if (t != nullptr && numel_sat(t->shape) != 1 && std::find(allowed.begin(), allowed.end(), t->shape) == allowed.end()) {
        return tiling(fmt::format("per-channel {} {} with numHeads {}, D {}", name, shape_to_string(t->shape), n, d),
                      "V19, CheckQuant2Shape: '[1,N,1,D], [N,1,D], [N,D], [1,1,N,D], [1,N,D], [1,N*D], [1,1,N*D], [N*D]'");
      }
    }
  }
  const TensorSpec* as = present_spec(s, "antiquantScale");
  const TensorSpec* ao = present_spec(s, "antiquantOffset");
  if (kt != DType::kI8) {
    if (as != nullptr || ao != nullptr) {
      return tiling("antiquant parameters with non-INT8 KV", "V20, tiling: 'antiquantScale/Offset only with INT8 KV'");
    }
    return Status::ok();
  }
  if (as == nullptr) return tiling("INT8 KV without antiquantScale", "V20, tiling: 'antiquantScale required'");
  const int64_t n2 = dims.n2;
  const int64_t d = dims.d;
  const std::vector<Shape> per_channel = {{2, n2, 1, d}, {2, 1, n2, d}, {2, n2, d}, {2, n2 * d}};
  auto shape_ok = [&](const Shape& sh) {
    return sh == Shape{2} || std::find(per_channel.begin(), per_channel.end(), sh) != per_channel.end();
  };
  if (as->dtype != qt || !shape_ok(as->shape)) {
    return tiling(fmt::format("antiquantScale {} {}", dtype_name(as->dtype), shape_to_string(as->shape)),
                  "V20, tiling: 'dtype == query; (2,N2,1,D), (2,1,N2,D), (2,N2,D), (2,N2*D) or (2)'");
  }
  if (ao != nullptr && (ao->dtype != as->dtype || ao->shape.size() != as->shape.size() || !shape_ok(ao->shape) ||
                        numel_sat(ao->shape) != numel_sat(as->shape))) {
    return tiling(fmt::format("antiquantOffset {} {} vs antiquantScale {} {}", dtype_name(ao->dtype),
                              shape_to_string(ao->shape), dtype_name(as->dtype), shape_to_string(as->shape)),
                  "V20, tiling: 'offset dtype == scale dtype, same rank and mode'");
  }
  return Status::ok();
}

}  // namespace

Status validate(const Params& p, const SpecMap& s) {
  for (const auto& [name, t] : s) {
    if (t.present && std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; })) {
      return invalid_case(fmt::format("{} has a negative extent: {}", name, shape_to_string(t.shape)));
    }
  }
  const std::vector<const TensorSpec*> keys = tensor_list(s, "key");
  const std::vector<const TensorSpec*> values = tensor_list(s, "value");
  OPGATE_TRY(aclnn_checks(s, keys, values));
  Dims dims;
  OPGATE_TRY(query_checks(p, s, dims));
  dims.paged = present_spec(s, "blocktable") != nullptr;
  int64_t seq_bound = 0;
  if (dims.paged) {
    OPGATE_TRY(paged_checks(p, s, keys, values, dims));
    seq_bound = dims.table_cols * p.block_size;
  } else {
    OPGATE_TRY(kv_tensor_checks(p, keys, values, dims));
    seq_bound = *std::max_element(dims.kv_len.begin(), dims.kv_len.end());
  }
  int64_t max_len = 0;
  OPGATE_TRY(length_checks(p, dims, &max_len));
  OPGATE_TRY(mask_pse_checks(s, dims, max_len, seq_bound));
  return quant_checks(s, dims, present_spec(s, "query")->dtype, keys[0]->dtype, present_spec(s, "attentionOut")->dtype);
}

}  // namespace opgate::ref::incre_flash_attention_v3
