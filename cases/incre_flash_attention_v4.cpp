// Cases of aclnnIncreFlashAttentionV4 (cases/incre_flash_attention_v4/README.md explains each
// choice): V3's binding, generator, fills and plan, with the kvPaddingSize key and the windows.
#include "cases/incre_flash_attention_v4.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "cases/param_docs.h"
#include "cases/problem_binding.h"
#include "device/layout/incre_flash_attention_v4.h"

namespace opgate::cases::incre_flash_attention_v4 {
namespace ref = ::opgate::ref::incre_flash_attention_v4;
namespace layout = ::opgate::layout::incre_flash_attention_v4;
namespace v3 = ::opgate::cases::incre_flash_attention_v3;

namespace {

// |kvPaddingSize| the harness accepts (the window arithmetic stays far from overflow).
constexpr int64_t kMaxPadding = int64_t{1} << 40;

// Rotates the KV axis of rows [first, first + count) of length `len` (each `width` elements of
// `bytes` bytes) right by `shift`: element t moves to (t + shift) % len.
void rotate_rows(Tensor& t, int64_t first, int64_t count, int64_t len, int64_t width, int64_t shift) {
  if (shift % std::max<int64_t>(len, 1) == 0) return;
  const size_t esz = dtype_size(t.dtype());
  const size_t row = static_cast<size_t>(width) * esz;
  std::vector<uint8_t> tmp(static_cast<size_t>(len) * row);
  for (int64_t r = first; r < first + count; ++r) {
    uint8_t* base = t.data() + static_cast<size_t>(r * len) * row;
    for (int64_t i = 0; i < len; ++i) std::copy_n(base + i * row, row, tmp.data() + static_cast<size_t>((i + shift) % len) * row);
    std::copy(tmp.begin(), tmp.end(), base);
  }
}

}  // namespace

// The accepted params: V3's table (cases/incre_flash_attention_v3.cpp) and kvPaddingSize; what
// `opgate list --params-of` prints and cases/incre_flash_attention_v4/README.md holds.
const std::vector<ParamDoc>& param_docs() {
  static const std::vector<ParamDoc> docs = [] {
    std::vector<ParamDoc> d = *param_docs_of("incre_flash_attention_v3");
    d.push_back({"kvPaddingSize", "integer or null", "absent (no tensor: V3's call)",
                 "the one INT64 element of kvPaddingSize: left padding of each batch's KV"});
    return d;
  }();
  return docs;
}

Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j_in) {
  if (!j_in.is_object()) return parse_error("field 'params': not an object");
  // A key of neither table is unknown here, so the error lists V4's keys, kvPaddingSize included
  // (V3's reader would list its own).
  for (auto it = j_in.begin(); it != j_in.end(); ++it) {
    const auto& docs = param_docs();
    if (std::none_of(docs.begin(), docs.end(), [&](const ParamDoc& d) { return it.key() == d.name; })) {
      std::string list;
      for (const ParamDoc& d : docs) list += (list.empty() ? "" : ", ") + std::string(d.name);
      return parse_error(fmt::format("field 'params.{}': unknown key (known: {})", it.key(), list));
    }
  }
  nlohmann::json j = j_in;
  Params p;
  if (j.contains("kvPaddingSize")) {
    const nlohmann::json v = j["kvPaddingSize"];
    j.erase("kvPaddingSize");
    if (!v.is_null()) {
      if (!v.is_number_integer() || v.get<int64_t>() < -kMaxPadding || v.get<int64_t>() > kMaxPadding) {
        return parse_error(fmt::format("field 'params.kvPaddingSize': {} is not an integer in [-2^40, 2^40]", v.dump()));
      }
      p.has_kv_padding_size = true;
      p.kv_padding_size = v.get<int64_t>();
    }
  }
  OPGATE_ASSIGN_OR_RETURN(auto base, v3::from_json(j));
  p.base = base.first;
  return std::make_pair(p, base.second);
}

nlohmann::json to_json(const Params& p, const Knobs& k) {
  nlohmann::json j = v3::to_json(p.base, k);
  j["kvPaddingSize"] = p.has_kv_padding_size ? nlohmann::json(p.kv_padding_size) : nlohmann::json();
  return j;
}

std::pair<Params, Knobs> Builder::build() const {
  nlohmann::json j = b_.json();
  if (has_pad_) j["kvPaddingSize"] = pad_;
  auto pk = from_json(j);
  OPGATE_CHECK(pk.has_value(), "ifa4 Builder: " + pk.status().message());
  return *pk;
}

nlohmann::json generate(Chooser& c) {
  nlohmann::json j = v3::generate(c);
  if (!c.flag(0.8, "kvPaddingSize")) return j;
  // Room for the padding: S grows (and with it the default mask and pse lengths).
  if (j.value("kvCache", "tensor") == "tensor") {
    const int64_t room = c.integer(0, 48, "left padding room");
    const int64_t s = j["S"].get<int64_t>() + room;
    j["S"] = s;
    if (j.contains("maskS")) j["maskS"] = s;
    if (j.contains("pseS")) j["pseS"] = s;
    const size_t kind = c.pick(10, "padding kind");
    // Mostly a window inside [0, S); sometimes negative (taken as 0), past the longest window, or
    // without actualSeqLengths (padding ignored). Otherwise lengths are given (one value: the old S).
    j["kvPaddingSize"] = kind == 0 ? -c.integer(1, 4, "negative padding")
                         : kind == 1 ? room + c.integer(1, 16, "padding past the room")
                                     : c.integer(0, room, "padding");
    if (kind == 2) {
      j["actualSeqLengths"] = nlohmann::json();
    } else if (j["actualSeqLengths"].is_null()) {
      j["actualSeqLengths"] = std::vector<int64_t>{s - room};
    }
  } else {
    j["kvPaddingSize"] = c.integer(0, 8, "padding (ignored: list or paged KV)");
  }
  return j;
}

Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed) {
  if (specs != ref::specs(p)) {
    return invalid_case("the case's \"tensors\" overrides change a valid call; they are only for invalid cases");
  }
  OPGATE_ASSIGN_OR_RETURN(TensorMap in, v3::fill(p.base, k, ref::v3::specs(p.base), mode, seed));
  const auto& b = p.base;
  const std::vector<ref::KvWindow> w = ref::windows(p);
  const int64_t n2 = ref::v3::kv_heads(b);
  const int64_t cap = ref::v3::kv_capacity(b);
  for (int64_t bi = 0; bi < b.batch; ++bi) {
    const int64_t shift = w[static_cast<size_t>(bi)].start;
    if (shift == 0) continue;
    for (const char* name : {"key", "value"}) rotate_rows(in.at(name), bi * n2, n2, cap, b.head_dim, shift);
    if (b.has_mask && b.mask_seq > 0) rotate_rows(in.at("attenMask"), bi, 1, b.mask_seq, 1, shift);
    if (b.has_pse && b.pse_seq > 0 && b.pse_batch == b.batch) {
      rotate_rows(in.at("pseShift"), bi * b.num_heads, b.num_heads, b.pse_seq, 1, shift);
    }
  }
  if (p.has_kv_padding_size) {
    Tensor pad = Tensor::zeros(DType::kI64, {1});
    pad.set(0, static_cast<double>(p.kv_padding_size));
    in["kvPaddingSize"] = std::move(pad);
  }
  return in;
}

ComparePlan compare_plan(const Params& p, const RefOutputs& r, FillMode mode) { return v3::compare_plan(p.base, r, mode); }

std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs) {
  const std::string s = v3::describe(p.base, output, index, inputs);
  if (s.empty() || index.empty() || !ref::padding_applies(p) || p.base.head_dim <= 0 || p.base.num_heads <= 0) return s;
  int64_t flat = 0;
  const Shape shape = ref::specs(p).at("attentionOut").shape;  // a copy: specs() is a temporary
  for (size_t i = 0; i < index.size() && i < shape.size(); ++i) flat = flat * shape[i] + index[i];
  const auto b = static_cast<size_t>(flat / p.base.head_dim / p.base.num_heads);
  const std::vector<ref::KvWindow> w = ref::windows(p);
  if (b >= w.size()) return s;
  return fmt::format("{}; window [{}, {})", s, w[b].start, w[b].start + w[b].length);
}

OPGATE_BIND_PROBLEM(incre_flash_attention_v4, (std::vector<std::string>{"attentionOut"}))

const OpInfo& op_info() {
  static const OpInfo info{"incre_flash_attention_v4", "IncreFlashAttentionV4", "ifa4", ref::kReferenceVersion, parse,
                           generate};
  return info;
}

}  // namespace opgate::cases::incre_flash_attention_v4
