// The input format of the fuzz targets, shared by the operator harness (fuzz/op_target.cpp) and
// `opgate fuzz`/`opgate fuzz-seeds`, so a crashing input decodes to the same case everywhere
// (fuzz/README.md "Input format"). Header-only: the opgate binary uses it without the fuzz build.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cases/chooser.h"
#include "core/case.h"
#include "cases/registry.h"
#include "core/rng.h"

namespace opgate::fuzz {

// Element budget of one operator input: larger problems are skipped so a target stays at hundreds
// of executions per second. OPGATE_FUZZ_MAX_ELEMENTS overrides it for deeper campaigns.
constexpr int64_t kDefaultMaxElements = int64_t{1} << 14;

inline int64_t max_elements() {
  const char* env = std::getenv("OPGATE_FUZZ_MAX_ELEMENTS");
  if (env == nullptr || *env == '\0') return kDefaultMaxElements;
  const long long v = std::strtoll(env, nullptr, 10);
  return v > 0 ? static_cast<int64_t>(v) : kDefaultMaxElements;
}

// Sum of the element counts of the present tensors, saturating (hostile shapes cannot overflow).
inline int64_t total_elements(const SpecMap& specs) {
  int64_t total = 0;
  for (const auto& [name, spec] : specs) {
    if (!spec.present) continue;
    int64_t n = 1;
    for (const int64_t e : spec.shape) {
      if (e <= 0) {
        n = 0;
        break;
      }
      if (__builtin_mul_overflow(n, e, &n)) return INT64_MAX;
    }
    if (__builtin_add_overflow(total, n, &total)) return INT64_MAX;
  }
  return total;
}

// An input whose first byte is '{' is a case as JSON text (a line of a case file, a failed/<id>.json
// or a decoded finding); any other input is raw bytes that drive the operator's generator.
inline bool is_case_text(const uint8_t* data, size_t size) { return size > 0 && data[0] == '{'; }

// Generator mode reads, in order: the fill mode (1 byte), the seed (2 bytes), then every decision
// of the operator's generate(Chooser&). Missing bytes read as zero, so every input decodes.
inline Case decode_generator_bytes(const OpInfo& op, const uint8_t* data, size_t size) {
  static const std::vector<FillMode> kModes = {FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial};
  BytesChooser chooser(data, size);
  Case c;
  c.op = op.stem;
  c.fill = chooser.one_of(kModes, "fill");
  c.seed = static_cast<uint64_t>(chooser.integer(0, 0xffff, "seed"));
  c.params = op.generate(chooser);
  const uint64_t hash = fnv1a64(std::string_view(reinterpret_cast<const char*>(data), size));
  c.id = fmt::format("{}.fuzz_{:016x}", op.short_name, hash);
  c.tags = {"fuzz"};
  return c;
}

// The case an input of target fuzz_<op.stem> stands for, with expect "ok": the harness judges
// validity itself (a mutated invalid case may have become valid). Case text must hold exactly one
// case of this operator; the error otherwise names the input.
inline Expected<Case> decode_input(const OpInfo& op, const uint8_t* data, size_t size) {
  if (!is_case_text(data, size)) return decode_generator_bytes(op, data, size);
  OPGATE_ASSIGN_OR_RETURN(std::vector<Case> cases,
                          parse_cases_text(std::string(reinterpret_cast<const char*>(data), size), "<fuzz input>"));
  if (cases.size() != 1) {
    return parse_error(fmt::format("<fuzz input>: holds {} cases; a fuzz input holds exactly one", cases.size()));
  }
  Case c = std::move(cases.front());
  if (c.op != op.stem) {
    return parse_error(fmt::format("<fuzz input>: case '{}' is of operator '{}', not '{}'", c.id, c.op, op.stem));
  }
  c.source.clear();
  c.tier.clear();
  c.expect = 0;
  return c;
}

// Corpus and regression file names: 16 hex digits of the content's FNV-1a hash.
inline std::string content_name(std::string_view bytes) { return fmt::format("{:016x}", fnv1a64(bytes)); }

// A case as a fuzz input (one line of JSON, always starting with '{').
inline std::string encode_case(const Case& c) { return case_to_json(c).dump(); }

// The target that fuzzes `name`: an operator (stem, aclnn or short name), or a parser target
// (case_json, case_file, npy, results_jsonl, golden_folder, with or without the fuzz_ prefix). "" if unknown.
inline std::string target_name(const std::string& name) {
  std::string bare = name.rfind("fuzz_", 0) == 0 ? name.substr(5) : name;
  for (const char* parser : {"case_json", "case_file", "npy", "results_jsonl", "golden_folder"}) {
    if (bare == parser) return "fuzz_" + bare;
  }
  const OpInfo* op = find_op(bare);
  return op == nullptr ? "" : "fuzz_" + op->stem;
}

// The error for a name target_name() does not know.
inline Status unknown_target(const std::string& name) {
  return parse_error(fmt::format("--op '{}': no such fuzz target (operators: {}; parsers: case_json, case_file, "
                                 "npy, results_jsonl, golden_folder)", name, known_ops_text()));
}

// Every target name: fuzz_<stem> for each operator in the build, then the parser targets.
inline std::vector<std::string> all_target_names() {
  std::vector<std::string> out;
  for (const OpInfo& op : all_ops()) out.push_back("fuzz_" + op.stem);
  for (const char* parser : {"fuzz_case_json", "fuzz_case_file", "fuzz_npy", "fuzz_results_jsonl", "fuzz_golden_folder"}) {
    out.push_back(parser);
  }
  return out;
}

// The operator a target fuzzes, or nullptr for the parser targets.
inline const OpInfo* target_op(const std::string& target) {
  return target.rfind("fuzz_", 0) == 0 ? find_op(target.substr(5)) : nullptr;
}

}  // namespace opgate::fuzz
