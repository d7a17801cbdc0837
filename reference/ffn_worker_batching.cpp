// Reference of aclnnFfnWorkerBatching (routing-ops.md §1.5, §1.6): the stable expert-order batching
// of NORM and RECV mode on canonical tokens, the validation of §1.7 with its codes, and the data
// preconditions of §1.4 and §1.5.3.
#include "reference/ffn_worker_batching.h"
#include "core/aclnn_codes.h"
#include "core/parallel.h"
#include "reference/math/shared_validate.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace opgate::ref::ffn_worker_batching {
namespace {

constexpr const char* kContext = "scheduleContext";
constexpr const char* kTokenInfo = "tokenInfoBuf";
constexpr const char* kTokens = "tokens";
constexpr const char* kTokenScales = "tokenScales";
constexpr const char* kSessionBuf = "sessionIdsBuf";
constexpr const char* kMicroBatchBuf = "microBatchIdsBuf";
constexpr const char* kExpertBuf = "expertIdsBuf";

constexpr int64_t kContextBytes = 1024;
constexpr int64_t kMaxExpertNum = 8192;
constexpr int64_t kMaxSessions = 1024;
constexpr int64_t kMaxTopK = 64;
constexpr int64_t kMaxMicroBatches = 64;
// The RECV scan group lister assembles at most this many rows in UB (spec §1.5.3 item 7).
constexpr int64_t kMaxRecvGroups = 1024;
constexpr uint64_t kAllOnes = ~uint64_t{0};

int64_t clamp0(int64_t v) { return std::max<int64_t>(v, 0); }

Status aclnn_checks(const SpecMap& s) {
  std::vector<std::pair<std::string, const TensorSpec*>> args;
  const auto find = [&](const std::string& name) { return s.count(name) ? &s.at(name) : nullptr; };
  args.emplace_back(kContext, find(kContext));
  for (const std::string& name : output_names()) args.emplace_back(name, find(name));
  for (const auto& [name, t] : args) {
    if (t == nullptr || !t->present) {
      return reject(aclnn::kParamNullptr, fmt::format("{} is a null pointer", name),
                    "aclnn: 'scheduleContext and every output are required'");
    }
  }
  const auto dtype_ok = [](const std::string& name, DType d) {
    if (name == kContext) return d == DType::kI8;
    if (name == "y") return d == DType::kF16 || d == DType::kBF16 || d == DType::kI8;
    if (name == "groupList" || name == "actualTokenNum") return d == DType::kI64;
    if (name == "dynamicScale") return d == DType::kF32;
    return d == DType::kI32;
  };
  for (const auto& [name, t] : args) {
    if (!dtype_ok(name, t->dtype)) {
      return reject(aclnn::kParamInvalid, fmt::format("{} dtype {} not allowed", name, dtype_name(t->dtype)),
                    "op def: 'scheduleContext INT8; y FP16/BF16/INT8; groupList, actualTokenNum INT64; "
                    "ids INT32; dynamicScale FP32'");
    }
  }
  return Status::ok();
}

// ASSUMPTION (spec §1.7, §1.9 q1): a tiling failure of this generated aclnn op surfaces as
// ACLNN_ERR_INNER_TILING_ERROR.
Status tiling_checks(const Params& p, const SpecMap& s) {
  if (s.at(kContext).shape.size() != 1) {
    return reject(aclnn::kInnerTiling, fmt::format("scheduleContext is {}-D", s.at(kContext).shape.size()),
                  "tiling CheckInputParam: 'scheduleContext 1-D INT8'");
  }
  if (p.expert_num <= 0 || p.expert_num > kMaxExpertNum) {
    return reject(aclnn::kInnerTiling, fmt::format("expertNum {} outside (0, 8192]", p.expert_num),
                  "doc: 'expertNum in (0, 8192]'");
  }
  if (p.max_out_shape.size() != 4) {
    return reject(aclnn::kInnerTiling, fmt::format("maxOutShape has {} entries", p.max_out_shape.size()),
                  "doc: 'maxOutShape length must be 4'");
  }
  const Dims d = dims(p);
  if (d.a <= 0 || d.a > kMaxSessions || d.bs <= 0 || d.k <= 0 || d.k > kMaxTopK || d.h <= 0) {
    return reject(aclnn::kInnerTiling, fmt::format("maxOutShape {{A {}, BS {}, K {}, H {}}}", d.a, d.bs, d.k, d.h),
                  "doc: 'A in (0, 1024], BS > 0, topK+1 in (0, 64], H > 0'");
  }
  if (p.token_dtype < 0 || p.token_dtype > 2) {
    return reject(aclnn::kInnerTiling, fmt::format("tokenDtype {} not in {{0, 1, 2}}", p.token_dtype),
                  "doc: 'tokenDtype 0, 1 or 2'");
  }
  if (p.need_schedule != 0 && p.need_schedule != 1) {
    return reject(aclnn::kInnerTiling, fmt::format("needSchedule {} not in {{0, 1}}", p.need_schedule),
                  "doc: 'needSchedule 0 or 1'");
  }
  if (p.layer_num < 0 || p.layer_num > p.expert_num) {
    return reject(aclnn::kInnerTiling, fmt::format("layerNum {} outside [0, expertNum = {}]", p.layer_num, p.expert_num),
                  "doc: 'layerNum in [0, expertNum]'");
  }
  return Status::ok();
}

// What the kernel needs but the host never checks: a violation is a broken case, not a rejection.
Status harness_checks(const Params& p, const SpecMap& s) {
  const SpecMap want = specs(p);
  for (const auto& [name, spec] : want) {
    const TensorSpec& got = s.at(name);
    if (got.dtype != spec.dtype || got.shape != spec.shape) {
      return invalid_case(fmt::format(
          "{} is {} {} but the call needs {} {} (1024 context bytes; y, ids and groupList per tokenDtype, "
          "maxOutShape and expertNum); the host does not check this and the kernel would access memory out "
          "of bounds",
          name, dtype_name(got.dtype), shape_to_string(got.shape), dtype_name(spec.dtype),
          shape_to_string(spec.shape)));
    }
  }
  if (p.micro_batch_num < 1 || p.micro_batch_num > kMaxMicroBatches) {
    return invalid_case(fmt::format("microBatchNum {} outside [1, 64] (doc: 'M <= 64'; the kernel indexes "
                                    "modulo M)",
                                    p.micro_batch_num));
  }
  if (p.token_size < payload_bytes(p) || p.token_size > std::numeric_limits<uint32_t>::max()) {
    return invalid_case(fmt::format("attnToFfnTokenSize {} cannot hold a slot of {} bytes (doc: 'the row "
                                    "stride must hold the whole token and its scale')",
                                    p.token_size, payload_bytes(p)));
  }
  if (!is_recv(p) && (p.out_num < 0 || p.out_num > dims(p).a)) {
    return invalid_case(fmt::format("outNum {} outside [0, A = {}]: the kernel would batch more than Y rows",
                                    p.out_num, dims(p).a));
  }
  if (is_recv(p) && (p.polling_index < 0 || p.polling_index >= p.micro_batch_num)) {
    return invalid_case(fmt::format("pollingIndex {} outside [0, M = {}) (kernel ASSERT)", p.polling_index,
                                    p.micro_batch_num));
  }
  return Status::ok();
}

Status check_input(const TensorMap& inputs, const std::string& name, const TensorSpec& spec) {
  const auto it = inputs.find(name);
  if (it == inputs.end() || !it->second.defined()) return invalid_case(fmt::format("input {} is missing", name));
  const Tensor& t = it->second;
  if (t.dtype() != spec.dtype || t.shape() != spec.shape) {
    return invalid_case(fmt::format("input {} is {} {}, expected {} {}", name, dtype_name(t.dtype()),
                                    shape_to_string(t.shape()), dtype_name(spec.dtype), shape_to_string(spec.shape)));
  }
  return Status::ok();
}

Status check_id(int64_t e, int64_t expert_num, const std::string& where) {
  if (e >= kMaskThreshold || (e >= 0 && e < expert_num)) return Status::ok();
  return invalid_case(fmt::format(
      "{} = {}: valid ids are in [0, expertNum = {}) and masked ones >= 1000000; negative ids are not "
      "masked and ids in [expertNum, 1e6) index groupList out of range (spec §1.4)",
      where, e, expert_num));
}

// Expert id of flattened position f (the kernel's sort key before masking).
int32_t key_at(const Params& p, const TensorMap& in, int64_t f) {
  const Dims d = dims(p);
  const int64_t stride = d.bs * d.k;
  if (!is_recv(p)) return static_cast<int32_t>(in.at(kExpertBuf).get(f));
  const int64_t s = f / stride;
  const int64_t w = (s * p.micro_batch_num + p.polling_index) * descriptor_words(p) + 2 + f % stride;
  return static_cast<int32_t>(in.at(kTokenInfo).get(w));
}

// A tensor of `spec` whose every element has all bits set (the reference's own poison for
// elements the API leaves undefined) and a care mask of zeros.
std::pair<Tensor, Tensor> undefined_output(const TensorSpec& spec) {
  Tensor t = Tensor::empty(spec.dtype, spec.shape);
  std::memset(t.data(), 0xFF, t.nbytes());
  return {t, Tensor::zeros(DType::kU8, spec.shape)};
}

}  // namespace

bool Params::operator==(const Params& o) const {
  return expert_num == o.expert_num && max_out_shape == o.max_out_shape && token_dtype == o.token_dtype &&
         need_schedule == o.need_schedule && layer_num == o.layer_num && micro_batch_num == o.micro_batch_num &&
         token_size == o.token_size && out_num == o.out_num && polling_index == o.polling_index;
}

Dims dims(const Params& p) {
  const auto at = [&](size_t i) { return i < p.max_out_shape.size() ? p.max_out_shape[i] : 0; };
  return {at(0), at(1), at(2), at(3)};
}

bool is_recv(const Params& p) { return p.need_schedule == 1; }

int64_t out_rows(const Params& p) {
  const Dims d = dims(p);
  return mul_sat(mul_sat(clamp0(d.a), clamp0(d.bs)), clamp0(d.k));
}

int64_t descriptor_words(const Params& p) {
  const Dims d = dims(p);
  return 2 + mul_sat(clamp0(d.bs), clamp0(d.k));
}

DType token_element(const Params& p) {
  return p.token_dtype == 1 ? DType::kBF16 : p.token_dtype == 2 ? DType::kI8 : DType::kF16;
}

int64_t payload_bytes(const Params& p) {
  const int64_t h = clamp0(dims(p).h);
  return p.token_dtype == 2 ? h + 4 : mul_sat(h, 2);
}

const std::vector<std::string>& output_names() {
  static const std::vector<std::string> names = {"y",        "groupList",     "sessionIds",   "microBatchIds",
                                                 "tokenIds", "expertOffsets", "dynamicScale", "actualTokenNum"};
  return names;
}

SpecMap specs(const Params& p) {
  const int64_t y = out_rows(p);
  SpecMap s;
  s[kContext] = {DType::kI8, {kContextBytes}, true};
  s["y"] = {token_element(p), {y, clamp0(dims(p).h)}, true};
  s["groupList"] = {DType::kI64, {clamp0(p.expert_num), 2}, true};
  for (const char* name : {"sessionIds", "microBatchIds", "tokenIds", "expertOffsets"}) {
    s[name] = {DType::kI32, {y}, true};
  }
  s["dynamicScale"] = {DType::kF32, {y}, true};
  s["actualTokenNum"] = {DType::kI64, {1}, true};
  return s;
}

SpecMap input_specs(const Params& p) {
  const Dims d = dims(p);
  const int64_t m = p.micro_batch_num;
  SpecMap s;
  s[kContext] = {DType::kI8, {kContextBytes}, true};
  s[kTokenInfo] = {DType::kI32, {mul_sat(mul_sat(d.a, m), descriptor_words(p))}, true};
  s[kTokens] = {token_element(p), {d.a, m, d.bs, d.k, d.h}, true};
  if (p.token_dtype == 2) s[kTokenScales] = {DType::kF32, {d.a, m, d.bs, d.k}, true};
  if (!is_recv(p)) {
    s[kSessionBuf] = {DType::kI32, {d.a}, true};
    s[kMicroBatchBuf] = {DType::kI32, {d.a}, true};
    s[kExpertBuf] = {DType::kI32, {mul_sat(d.a, mul_sat(d.bs, d.k))}, true};
  }
  return s;
}

Status validate(const Params& p, const SpecMap& s) {
  OPGATE_TRY(aclnn_checks(s));
  OPGATE_TRY(tiling_checks(p, s));
  return harness_checks(p, s);
}

Status check_data(const Params& p, const TensorMap& inputs) {
  for (const auto& [name, spec] : input_specs(p)) OPGATE_TRY(check_input(inputs, name, spec));
  const Dims d = dims(p);
  const int64_t stride = d.bs * d.k;
  if (is_recv(p)) {
    const Tensor& info = inputs.at(kTokenInfo);
    for (int64_t s = 0; s < d.a; ++s) {
      const double flag = info.get((s * p.micro_batch_num + p.polling_index) * descriptor_words(p));
      if (flag != 1.0) {
        return invalid_case(fmt::format(
            "RECV: tokenInfoBuf flag of session {} at pollingIndex {} is {}, not 1; the kernel busy-waits until "
            "every flag of that micro batch is 1 and would hang (spec §1.5.3)",
            s, p.polling_index, flag));
      }
    }
  } else {
    for (int64_t a = 0; a < p.out_num; ++a) {
      const double s = inputs.at(kSessionBuf).get(a);
      const double m = inputs.at(kMicroBatchBuf).get(a);
      if (s < 0 || s >= static_cast<double>(d.a) || m < 0 || m >= static_cast<double>(p.micro_batch_num)) {
        return invalid_case(fmt::format("sessionIdsBuf[{}] = {}, microBatchIdsBuf[{}] = {} outside [0, A = {}) x "
                                        "[0, M = {}): the kernel would read tokenDataBuf out of bounds",
                                        a, s, a, m, d.a, p.micro_batch_num));
      }
    }
  }
  const int64_t rows = is_recv(p) ? d.a : p.out_num;
  std::set<int32_t> experts;
  for (int64_t f = 0; f < rows * stride; ++f) {
    const int32_t e = key_at(p, inputs, f);
    OPGATE_TRY(check_id(e, p.expert_num,
                        is_recv(p) ? fmt::format("tokenInfoBuf id (session {}, slot {})", f / stride, f % stride)
                                   : fmt::format("expertIdsBuf[{}]", f)));
    if (e < kMaskThreshold) experts.insert(e);
  }
  if (is_recv(p) && static_cast<int64_t>(experts.size()) > kMaxRecvGroups) {
    return invalid_case(fmt::format("RECV with {} distinct experts: the scan group lister holds at most 1024 rows "
                                    "(spec §1.5.3, assumption)",
                                    experts.size()));
  }
  return Status::ok();
}

std::vector<Entry> batch_order(const Params& p, const TensorMap& in) {
  const Dims d = dims(p);
  const int64_t stride = d.bs * d.k;
  const int64_t rows = is_recv(p) ? d.a : p.out_num;
  std::vector<Entry> out;
  for (int64_t f = 0; f < rows * stride; ++f) {
    const int32_t e = key_at(p, in, f);
    if (e >= kMaskThreshold) continue;
    Entry x;
    x.position = f;
    x.expert = e;
    const int64_t a = f / stride;
    x.session = is_recv(p) ? a : static_cast<int64_t>(in.at(kSessionBuf).get(a));
    x.micro_batch = is_recv(p) ? p.polling_index : static_cast<int64_t>(in.at(kMicroBatchBuf).get(a));
    x.token = f % stride / d.k;
    x.slot = f % d.k;
    out.push_back(x);
  }
  std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.expert < b.expert; });
  return out;
}

RefOutputs reference(const Params& p, const TensorMap& in) {
  const SpecMap s = specs(p);
  const Dims d = dims(p);
  const std::vector<Entry> order = batch_order(p, in);
  const auto actual = static_cast<int64_t>(order.size());
  RefOutputs out;
  for (const auto& [name, spec] : s) {
    if (name == kContext) continue;
    // Every byte of y and of its care mask is written below (rows copied or poisoned; care 1 or 0).
    auto [t, care] = name == "y" ? std::pair{Tensor::empty(spec.dtype, spec.shape), Tensor::empty(DType::kU8, spec.shape)}
                                 : undefined_output(spec);
    out.expected[name] = t;
    out.care[name] = care;
  }
  const Tensor& tokens = in.at(kTokens);
  const size_t row_bytes = static_cast<size_t>(d.h) * dtype_size(tokens.dtype());
  Tensor& y = out.expected.at("y");
  Tensor& y_care = out.care.at("y");
  const int64_t y_rows = y.dim(0);
  // Row i < actual: the payload of the i-th batched entry, cared for (care masks are U8, 1 =
  // compare); later rows: all-ones poison, not cared for. In blocks of rows over the project's
  // threads (each row has one source), so the first touch of fresh pages is parallel too.
  constexpr int64_t kRowsPerBlock = 64;
  math::parallel_for((y_rows + kRowsPerBlock - 1) / kRowsPerBlock, [&](int64_t blk) {
    for (int64_t i = blk * kRowsPerBlock; i < std::min(y_rows, (blk + 1) * kRowsPerBlock); ++i) {
      uint8_t* dst = y.data() + static_cast<size_t>(i) * row_bytes;
      uint8_t* care = y_care.data() + static_cast<size_t>(i * d.h);
      if (i >= actual) {
        std::memset(dst, 0xFF, row_bytes);
        std::memset(care, 0, static_cast<size_t>(d.h));
        continue;
      }
      const Entry& x = order[static_cast<size_t>(i)];
      const int64_t slot = ((x.session * p.micro_batch_num + x.micro_batch) * d.bs + x.token) * d.k + x.slot;
      std::memcpy(dst, tokens.data() + static_cast<size_t>(slot) * row_bytes, row_bytes);
      std::memset(care, 1, static_cast<size_t>(d.h));
    }
  });
  for (int64_t i = 0; i < actual; ++i) {
    const Entry& x = order[static_cast<size_t>(i)];
    const int64_t slot = ((x.session * p.micro_batch_num + x.micro_batch) * d.bs + x.token) * d.k + x.slot;
    const std::pair<const char*, int64_t> ids[] = {
        {"sessionIds", x.session}, {"microBatchIds", x.micro_batch}, {"tokenIds", x.token}, {"expertOffsets", x.slot}};
    for (const auto& [name, v] : ids) out.expected.at(name).set(i, static_cast<double>(v));
    if (p.token_dtype == 2) {
      out.expected.at("dynamicScale").set_bits(i, in.at(kTokenScales).bits(slot));
      out.care.at("dynamicScale").set(i, 1.0);
    }
    for (const char* name : {"sessionIds", "microBatchIds", "tokenIds", "expertOffsets"}) out.care.at(name).set(i, 1.0);
  }

  // Compact [id, count] rows, then one [0, 0] terminator if there is room. NORM's single-core lister
  // emits [first id, 0] when no entry is valid, reading the id from a buffer it never loaded.
  std::vector<std::pair<int64_t, int64_t>> groups;
  for (const Entry& x : order) {
    if (groups.empty() || groups.back().first != x.expert) groups.emplace_back(x.expert, 0);
    ++groups.back().second;
  }
  Tensor& gl = out.expected.at("groupList");
  Tensor& gl_care = out.care.at("groupList");
  const bool unknown_first = actual == 0 && !is_recv(p);
  if (unknown_first) groups.emplace_back(0, 0);
  if (static_cast<int64_t>(groups.size()) < p.expert_num) groups.emplace_back(0, 0);
  for (size_t r = 0; r < groups.size(); ++r) {
    const auto row = static_cast<int64_t>(r);
    gl.set(2 * row, static_cast<double>(groups[r].first));
    gl.set(2 * row + 1, static_cast<double>(groups[r].second));
    gl_care.set(2 * row, unknown_first && r == 0 ? 0.0 : 1.0);
    gl_care.set(2 * row + 1, 1.0);
  }
  if (unknown_first) gl.set_bits(0, kAllOnes);
  out.expected.at("actualTokenNum").set(0, static_cast<double>(actual));
  out.care.erase("actualTokenNum");

  if (is_recv(p)) {
    Tensor ctx = in.at(kContext).clone();
    const uint64_t next = static_cast<uint64_t>((p.polling_index + 1) % p.micro_batch_num);
    for (int64_t b = 0; b < 8; ++b) ctx.set_bits(kPollingIndexOffset + b, (next >> (8 * b)) & 0xFF);
    out.expected[kContext] = ctx;
    Tensor info = in.at(kTokenInfo).clone();
    for (int64_t sess = 0; sess < d.a; ++sess) {
      const int64_t base = (sess * p.micro_batch_num + p.polling_index) * descriptor_words(p);
      info.set(base, 0.0);
      for (int64_t j = 0; j < d.bs * d.k; ++j) info.set(base + 2 + j, static_cast<double>(kMaskReset));
    }
    out.expected[kTokenInfo] = info;
  }
  return out;
}

}  // namespace opgate::ref::ffn_worker_batching
