// Strict case-file loading: every error names the file, the case and the key.
#include "core/case.h"

#include <unistd.h>

#include <atomic>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "core/fill_override.h"
#include "core/json_read.h"
#include "core/npy.h"

namespace opgate {
namespace {

const char* const kFileKeys[] = {"op", "defaults", "cases", "note"};
// "result" is the verdict a report attached to a failed/<id>.json; it is ignored on reading, so
// that file replays as a case.
const char* const kCaseKeys[] = {"id", "op", "params", "tensors", "seed", "fill", "expect",
                                 "tags", "issue", "note", "result"};

template <size_t N>
Status check_keys(const nlohmann::json& j, const char* const (&allowed)[N], const std::string& where) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : allowed) ok = ok || it.key() == k;
    if (!ok) {
      std::string list;
      for (const char* k : allowed) list += (list.empty() ? "" : ", ") + std::string(k);
      return parse_error(fmt::format("{}: unknown key '{}' (allowed: {})", where, it.key(), list));
    }
  }
  return Status::ok();
}

constexpr size_t kMaxIdLength = 200;  // failed/<id>.json must stay under NAME_MAX (255)

bool id_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
         ch == '-' || ch == '.';
}

// A params error about a key the case took from the file's defaults points at defaults.<key>:
// that is where the user has to look, and the case itself never named it.
Status name_default_key(const Status& st, const Case& c) {
  static const std::string kTag = "field 'params.";
  const std::string& msg = st.message();
  const size_t at = msg.find(kTag);
  if (at == std::string::npos) return st;
  const size_t begin = at + kTag.size();
  const size_t end = msg.find_first_of("'.[", begin);
  if (end == std::string::npos) return st;
  const std::string key = msg.substr(begin, end - begin);
  bool from_defaults = false;
  for (const auto& k : c.default_keys) from_defaults = from_defaults || k == key;
  if (!from_defaults) return st;
  std::string renamed = msg;
  renamed.replace(at, kTag.size(), "field 'defaults.");
  return Status(st.code(), renamed, st.aclnn_code());
}

}  // namespace

Status check_case_id(const std::string& id) {
  std::string why;
  if (id.empty()) {
    why = "empty";
  } else if (id.size() > kMaxIdLength) {
    why = fmt::format("longer than {} characters", kMaxIdLength);
  } else if (id.find("..") != std::string::npos) {
    why = "contains \"..\"";
  } else if (id[0] == '.' || id[0] == '-') {
    why = fmt::format("starts with '{}'", id[0]);
  } else {
    for (char ch : id) {
      if (id_char(ch)) continue;
      why = ch > ' ' && ch < 0x7f ? fmt::format("contains '{}'", ch)
                                  : fmt::format("contains byte 0x{:02x}", static_cast<unsigned char>(ch));
      break;
    }
  }
  if (why.empty()) return Status::ok();
  return parse_error(fmt::format(
      "{}; ids name files, so they are <short op>.<scenario>.<dtype>[.<n>] of letters, digits, '_', '-' and '.'",
      why));
}

FillMode plan_fill(const Case& c) {
  if (c.fill != FillMode::kExact || !c.tensors.is_object()) return c.fill;
  for (auto it = c.tensors.begin(); it != c.tensors.end(); ++it) {
    if (it.value().is_object() && it.value().contains("fill")) return FillMode::kRealistic;
  }
  return c.fill;
}

std::string case_where(const Case& c) {
  if (c.source.empty()) return fmt::format("case '{}'", c.id);
  if (c.index < 0) return fmt::format("{}: case '{}'", c.source, c.id);
  return fmt::format("{}: cases[{}]: case '{}'", c.source, c.index, c.id);
}

const char* fill_mode_name(FillMode m) {
  switch (m) {
    case FillMode::kExact: return "exact";
    case FillMode::kRealistic: return "realistic";
    case FillMode::kAdversarial: return "adversarial";
  }
  return "?";
}

Expected<FillMode> parse_fill_mode(const std::string& name) {
  for (FillMode m : {FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial}) {
    if (name == fill_mode_name(m)) return m;
  }
  return parse_error(fmt::format("unknown fill mode '{}' (exact, realistic, adversarial)", name));
}

Expected<Case> parse_case(const nlohmann::json& j, const std::string& origin, const std::string& file_op,
                          const nlohmann::json& defaults, const OpNames& ops) {
  if (!j.is_object()) return parse_error(fmt::format("{}: a case must be a JSON object", origin));
  Case c;
  if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty()) {
    return parse_error(fmt::format("{}: field 'id': missing or not a non-empty string", origin));
  }
  c.id = j["id"].get<std::string>();
  const std::string where = fmt::format("{}: case '{}'", origin, c.id);
  if (Status st = check_case_id(c.id); !st.is_ok()) return st.with_context(where + ": field 'id'");
  OPGATE_TRY(check_keys(j, kCaseKeys, where));
  c.op = file_op;
  if (j.contains("op")) {
    if (!j["op"].is_string()) return parse_error(where + ": field 'op': not a string");
    c.op = j["op"].get<std::string>();
  }
  const OpInfo* info = ops.find(c.op);
  if (info == nullptr) {
    return parse_error(fmt::format("{}: field 'op': unknown operator '{}' (known: {})", where,
                                   c.op.empty() ? "<missing>" : c.op, ops.known()));
  }
  c.op = info->stem;
  c.params = defaults.is_object() ? defaults : nlohmann::json::object();
  if (j.contains("params")) {
    if (!j["params"].is_object()) return parse_error(where + ": field 'params': not an object");
    for (auto it = j["params"].begin(); it != j["params"].end(); ++it) c.params[it.key()] = it.value();
  }
  if (defaults.is_object()) {
    for (auto it = defaults.begin(); it != defaults.end(); ++it) {
      if (!j.contains("params") || !j["params"].contains(it.key())) c.default_keys.push_back(it.key());
    }
  }
  if (j.contains("tensors")) {
    if (!j["tensors"].is_object()) return parse_error(where + ": field 'tensors': not an object");
    c.tensors = j["tensors"];
  }
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned() && !(j["seed"].is_number_integer() && j["seed"].get<int64_t>() >= 0)) {
      return parse_error(where + ": field 'seed': not a non-negative integer");
    }
    c.seed = j["seed"].get<uint64_t>();
  }
  if (j.contains("fill")) {
    if (!j["fill"].is_string()) return parse_error(where + ": field 'fill': not a string");
    auto m = parse_fill_mode(j["fill"].get<std::string>());
    if (!m) return m.status().with_context(where + ": field 'fill'");
    c.fill = *m;
  }
  if (j.contains("expect")) {
    const auto& e = j["expect"];
    if (e.is_string() && e.get<std::string>() == "ok") {
      c.expect = 0;
    } else if (e.is_number_integer() && e.get<int64_t>() > 0) {
      c.expect = e.get<int64_t>();
    } else {
      return parse_error(where + ": field 'expect': must be \"ok\" or a positive aclnn error code");
    }
  }
  if (j.contains("tags")) {
    if (!j["tags"].is_array()) return parse_error(where + ": field 'tags': not an array of strings");
    for (const auto& t : j["tags"]) {
      if (!t.is_string()) return parse_error(where + ": field 'tags': not an array of strings");
      c.tags.push_back(t.get<std::string>());
    }
  }
  for (const char* k : {"issue", "note"}) {
    if (!j.contains(k)) continue;
    if (!j[k].is_string()) return parse_error(fmt::format("{}: field '{}': not a string", where, k));
    (std::string(k) == "issue" ? c.issue : c.note) = j[k].get<std::string>();
  }
  return c;
}

Expected<std::vector<Case>> parse_cases_text(const std::string& text, const std::string& origin,
                                             const OpNames& ops) {
  OPGATE_ASSIGN_OR_RETURN(nlohmann::json doc, parse_json_bounded(text, origin));
  std::vector<Case> out;
  if (doc.is_object() && !doc.contains("cases")) {  // a single case (failed/<id>.json, repro text)
    OPGATE_ASSIGN_OR_RETURN(Case c, parse_case(doc, origin, "", nlohmann::json::object(), ops));
    c.source = origin;  // later errors (params, size) name the file too
    out.push_back(std::move(c));
    return out;
  }
  if (!doc.is_object()) return parse_error(origin + ": a case file must be a JSON object with 'cases'");
  OPGATE_TRY(check_keys(doc, kFileKeys, origin));
  std::string file_op;
  if (doc.contains("op")) {
    if (!doc["op"].is_string()) return parse_error(origin + ": field 'op': not a string");
    file_op = doc["op"].get<std::string>();
    if (ops.find(file_op) == nullptr) {
      return parse_error(fmt::format("{}: field 'op': unknown operator '{}' (known: {})", origin, file_op,
                                     ops.known()));
    }
  }
  nlohmann::json defaults = nlohmann::json::object();
  if (doc.contains("defaults")) {
    if (!doc["defaults"].is_object()) return parse_error(origin + ": field 'defaults': not an object");
    defaults = doc["defaults"];
  }
  if (!doc["cases"].is_array()) return parse_error(origin + ": field 'cases': not an array");
  std::string tier = origin;
  if (auto slash = tier.find_last_of('/'); slash != std::string::npos) tier = tier.substr(slash + 1);
  if (auto dot = tier.find('.'); dot != std::string::npos) tier = tier.substr(0, dot);
  const auto& list = doc["cases"];
  std::unordered_map<std::string, size_t> first_at;  // id -> index, for duplicates
  for (size_t n = 0; n < list.size(); ++n) {
    OPGATE_ASSIGN_OR_RETURN(Case c, parse_case(list[n], fmt::format("{}: cases[{}]", origin, n), file_op, defaults, ops));
    c.source = origin;
    c.index = static_cast<int>(n);
    c.tier = tier;
    if (auto [it, fresh] = first_at.emplace(c.id, n); !fresh) {
      return parse_error(fmt::format("{}: duplicate case id (also cases[{}])", case_where(c), it->second));
    }
    if (tier == "regression" && c.issue.empty()) {
      return parse_error(case_where(c) + ": field 'issue': mandatory in regression files");
    }
    out.push_back(std::move(c));
  }
  return out;
}

Expected<std::vector<Case>> load_case_file(const std::string& path, const OpNames& ops) {
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_file_bounded(path, kMaxJsonBytes, "case file"));
  return parse_cases_text(text, path, ops);
}

nlohmann::json case_to_json(const Case& c) {
  nlohmann::json j{{"id", c.id}, {"op", c.op}, {"params", c.params}, {"seed", c.seed},
                   {"fill", fill_mode_name(c.fill)}};
  if (!c.tensors.empty()) j["tensors"] = c.tensors;
  j["expect"] = c.expect == 0 ? nlohmann::json("ok") : nlohmann::json(c.expect);
  if (!c.tags.empty()) j["tags"] = c.tags;
  if (!c.issue.empty()) j["issue"] = c.issue;
  if (!c.note.empty()) j["note"] = c.note;
  return j;
}

Expected<std::unique_ptr<Problem>> make_problem(const OpInfo& op, const Case& c) {
  auto p = op.parse(c.params, c.tensors);
  if (!p) return name_default_key(p.status(), c).with_context(case_where(c));
  // Per-tensor fills are checked against the call's dtypes here, before any run writes a report.
  if (Status st = check_fill_overrides(c.tensors, (*p)->specs()); !st.is_ok()) return st.with_context(case_where(c));
  const uint64_t need = case_bytes(**p);
  // A call the operator rejects is never filled, so its size does not matter (an invalid case may
  // tamper a shape to 2^40 on purpose).
  if (need > max_case_bytes() && (*p)->validate().is_ok()) {
    return invalid_case(fmt::format("{}: field 'params': the case needs {} of tensors (inputs, outputs and "
                                    "reference), over --max-case-bytes {}",
                                    case_where(c), bytes_text(need), bytes_text(max_case_bytes())));
  }
  return p;
}

namespace {
std::atomic<uint64_t> g_max_case_bytes{0};  // 0: not set, use the default

uint64_t add_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<uint64_t>::max() : r;
}
uint64_t mul_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<uint64_t>::max() : r;
}
}  // namespace

// Half of physical memory: the estimate (three device copies and two doubles per element) is an
// upper bound, and the largest nightly case (mfrg.dsv3_prefill_dropless, 10.3 GiB estimated) must
// run on the 24 GiB machines CI uses; a quarter refused it.
uint64_t default_max_case_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{8} << 30;  // unknown: assume a 16 GiB machine
  return static_cast<uint64_t>(pages) / 2 * static_cast<uint64_t>(page);
}

uint64_t max_case_bytes() {
  const uint64_t set = g_max_case_bytes.load();
  return set != 0 ? set : default_max_case_bytes();
}

void set_max_case_bytes(uint64_t bytes) { g_max_case_bytes.store(bytes); }

uint64_t case_bytes(const Problem& problem) {
  uint64_t total = 0;
  for (const auto& [name, spec] : problem.specs()) {
    if (!spec.present) continue;
    uint64_t numel = 1;
    for (int64_t d : spec.shape) numel = mul_sat(numel, d < 0 ? 0 : static_cast<uint64_t>(d));
    const uint64_t per_element = 3 * static_cast<uint64_t>(dtype_size(spec.dtype)) + 16;
    total = add_sat(total, mul_sat(numel, per_element));
  }
  return total;
}

std::string bytes_text(uint64_t bytes) {
  if (bytes == std::numeric_limits<uint64_t>::max()) return "more than 16 EiB";
  const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

Status apply_spec_overrides(SpecMap& specs, const nlohmann::json& overrides) {
  if (overrides.is_null()) return Status::ok();
  if (!overrides.is_object()) return parse_error("field 'tensors': not an object");
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    auto s = specs.find(it.key());
    if (s == specs.end()) {
      std::string names;
      for (const auto& kv : specs) names += (names.empty() ? "" : ", ") + kv.first;
      return parse_error(fmt::format("field 'tensors': unknown tensor '{}' (tensors: {})", it.key(), names));
    }
    const auto& o = it.value();
    if (!o.is_object()) return parse_error(fmt::format("field 'tensors.{}': not an object", it.key()));
    for (auto f = o.begin(); f != o.end(); ++f) {
      const std::string where = fmt::format("field 'tensors.{}.{}'", it.key(), f.key());
      if (f.key() == "dtype") {
        if (!f.value().is_string()) return parse_error(where + ": not a string");
        auto d = parse_dtype(f.value().get<std::string>());
        if (!d) return d.status().with_context(where);
        s->second.dtype = *d;
      } else if (f.key() == "shape") {
        if (!f.value().is_array()) return parse_error(where + ": not an array of integers");
        Shape shape;
        for (const auto& e : f.value()) {
          if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > (int64_t{1} << 40)) {
            return parse_error(where + ": extents must be integers in [0, 2^40]");
          }
          shape.push_back(e.get<int64_t>());
        }
        s->second.shape = shape;
      } else if (f.key() == "present") {
        if (!f.value().is_boolean()) return parse_error(where + ": not a boolean");
        s->second.present = f.value().get<bool>();
      } else if (f.key() == "fill") {
        continue;  // the tensor's values, not its descriptor: core/fill_override.h
      } else {
        return parse_error(where + ": unknown key (allowed: dtype, shape, present, fill)");
      }
    }
  }
  return Status::ok();
}

}  // namespace opgate
