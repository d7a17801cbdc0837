// `opgate merge`: combines the report folders of shards (or machines) into one report and one
// gate decision (DESIGN.md §8). Every input is read and checked before --out is touched, so a
// refused merge writes nothing.
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_read.h"
#include "core/npy.h"
#include "reports/report.h"
#include "reports/run_facts.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

namespace fs = std::filesystem;

struct MergeInput {
  std::string dir;
  RunInfoFile run;                 // run.json (or summary.txt); info is null if neither exists
  std::vector<CaseResult> results;  // failing ones carry their case from failed/<id>.json
};

Expected<MergeInput> read_input(const std::string& dir) {
  MergeInput in{dir, {}, {}};
  const std::string path = dir + "/results.jsonl";
  if (!fs::is_regular_file(path)) return io_error(fmt::format("{}: missing (not a report folder?)", path));
  OPGATE_ASSIGN_OR_RETURN(in.results, read_results(path));
  OPGATE_ASSIGN_OR_RETURN(in.run, read_run_info(dir));
  OPGATE_TRY(check_finished(dir, in.run, in.results.size()));
  for (auto& r : in.results) {
    if (!verdict_fails(r.verdict, true)) continue;
    // The failed/<id>.json of each shard carries the case; copy it instead of re-deriving it.
    OPGATE_ASSIGN_OR_RETURN(const std::string failed_path, failed_case_path(dir, r.id));
    if (failed_path.empty()) continue;
    // Neither follows a link nor waits on a FIFO put there after failed_case_path looked.
    auto failed = read_regular_json_file(failed_path);
    r.case_json = failed ? std::move(*failed) : nlohmann::json();
    if (r.case_json.is_object()) r.case_json.erase("result");
  }
  return in;
}

// Merging into an input would truncate the shard being merged before reading it.
Status check_out(const std::string& out, const std::vector<std::string>& inputs) {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(fs::absolute(out), ec);
  for (const auto& dir : inputs) {
    const fs::path input = fs::weakly_canonical(fs::absolute(dir), ec);
    const fs::path rel = target.lexically_relative(input);
    if (!rel.empty() && *rel.begin() != "..") {
      return parse_error(fmt::format("{}: --out is the input report {} or inside it: choose another folder", out, dir));
    }
  }
  return Status::ok();
}

// Inputs that recorded `--shard i/N` must together be every shard of one split, each once:
// merging 2 of 4 shards would pass the gate on half the cases. Inputs without a shard (unsharded
// runs from different machines) are not checked here.
Status check_shards(const std::vector<MergeInput>& inputs) {
  int total = 0;
  std::string total_from;
  std::map<int, std::string> seen;  // shard index -> input folder
  for (const auto& in : inputs) {
    if (in.run.info.is_null() || !in.run.info.contains("shard")) continue;
    const nlohmann::json& shard = in.run.info["shard"];
    Selection sel;
    sel.shard = shard.is_string() ? shard.get<std::string>() : shard.dump();
    auto parsed = selected_shard(sel);
    if (!parsed) return parsed.status().with_context(in.run.path);
    const auto [index, n] = *parsed;
    if (total == 0) {
      total = n;
      total_from = in.dir;
    } else if (n != total) {
      return parse_error(fmt::format("{}: shard {}/{} is from another split than {} (of {} shards)", in.run.path,
                                     index, n, total_from, total));
    }
    const auto [it, fresh] = seen.emplace(index, in.dir);
    if (!fresh) {
      return parse_error(fmt::format("{}: shard {}/{} also comes from {}: overlapping shards?", in.run.path, index,
                                     n, it->second));
    }
  }
  std::vector<std::string> missing, have;
  for (int i = 0; i < total; ++i) {
    (seen.count(i) ? have : missing).push_back(fmt::format("{}/{}", i, total));
  }
  if (!missing.empty()) {
    return parse_error(fmt::format("merge: shard{} {} missing (the inputs hold {}): merge every shard of the split",
                                   missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), fmt::join(have, ", ")));
  }
  return Status::ok();
}

// One gate decision needs one configuration: a FAILED on one backend and a PASSED on another, or
// results with and without --repeat, do not add up. Inputs without run info are not checked.
Status check_same_config(const std::vector<MergeInput>& inputs) {
  const MergeInput* first = nullptr;
  for (const auto& in : inputs) {
    if (in.run.info.is_null()) continue;
    if (first == nullptr) {
      first = &in;
      continue;
    }
    if (const char* field = first_difference(first->run.info, in.run.info, kConfigFields)) {
      return parse_error(fmt::format("{}: {} is {}, but {} has {}: merge only reports of one backend, --repeat and "
                                     "--against", in.run.path, field, run_field_text(run_field(in.run.info, field)),
                                     first->run.path, run_field_text(run_field(first->run.info, field))));
    }
  }
  return Status::ok();
}

// The first key of two recorded selections whose values differ ("files", "filter", "seed", ...).
std::string first_selection_difference(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_object() || !b.is_object()) return "";
  for (const nlohmann::json* side : {&a, &b}) {
    for (const auto& [key, value] : side->items()) {
      if (a.value(key, nlohmann::json()) != b.value(key, nlohmann::json())) return key;
    }
  }
  return "";
}

// The shards of one split ran one selection: shard 0/2 of one case file and shard 1/2 of another
// look like a complete split but cover half of each. Inputs without a shard are not checked.
Status check_same_selection(const std::vector<MergeInput>& inputs) {
  const MergeInput* first = nullptr;
  for (const auto& in : inputs) {
    if (in.run.info.is_null() || !in.run.info.contains("shard")) continue;
    if (first == nullptr) {
      first = &in;
      continue;
    }
    const nlohmann::json was = run_field(first->run.info, "selection");
    const nlohmann::json is = run_field(in.run.info, "selection");
    if (was == is) continue;
    const std::string key = first_selection_difference(was, is);
    const auto shown = [&](const nlohmann::json& sel) {
      return run_field_text(key.empty() ? sel : sel.value(key, nlohmann::json()));
    };
    return parse_error(fmt::format("{}: selection{} is {}, but {} has {}: merge only the shards of one selection",
                                   in.run.path, key.empty() ? "" : "." + key, shown(is), first->run.path, shown(was)));
  }
  return Status::ok();
}

// The merged report's run.json: its inputs, the configuration they share and its case count, so
// that it can be merged again or accepted as a baseline like a run's report.
nlohmann::json merged_run_info(const std::vector<MergeInput>& inputs, const std::vector<std::string>& dirs) {
  nlohmann::json info{{"merged_from", dirs}};
  size_t cases = 0;
  for (const auto& in : inputs) cases += in.results.size();
  for (const auto& in : inputs) {
    if (in.run.info.is_null()) continue;
    for (const char* field : kConfigFields) {
      if (in.run.info.contains(field)) info[field] = in.run.info[field];
    }
    break;
  }
  info["cases"] = cases;
  std::vector<nlohmann::json> shards;
  for (const auto& in : inputs) shards.push_back(in.run.info);
  add_merged_facts(info, shards);  // the earliest start, the latest end, every host
  return info;
}

Status check_overlap(const std::vector<MergeInput>& inputs) {
  std::set<std::string> seen;
  for (const auto& in : inputs) {
    for (const auto& r : in.results) {
      if (!seen.insert(r.id).second) {
        return parse_error(fmt::format("{}: case '{}' also appears in an earlier report: overlapping shards?", in.dir,
                                       r.id));
      }
    }
  }
  return Status::ok();
}

Expected<VerdictCounts> merge(const std::vector<std::string>& dirs, const std::string& out) {
  OPGATE_TRY(check_out(out, dirs));
  std::vector<MergeInput> inputs;
  for (const auto& dir : dirs) {
    OPGATE_ASSIGN_OR_RETURN(MergeInput in, read_input(dir));
    inputs.push_back(std::move(in));
  }
  OPGATE_TRY(check_shards(inputs));
  OPGATE_TRY(check_same_config(inputs));
  OPGATE_TRY(check_same_selection(inputs));
  OPGATE_TRY(check_overlap(inputs));
  OPGATE_ASSIGN_OR_RETURN(ReportWriter writer, ReportWriter::open(out, merged_run_info(inputs, dirs), false));
  for (const auto& in : inputs) {
    for (const auto& r : in.results) OPGATE_TRY(writer.append(r));
  }
  OPGATE_TRY(finish_report(writer));
  return writer.counts();
}

}  // namespace

void add_merge(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("merge", "Merge shard report folders into one report and gate decision");
  struct Opts {
    std::vector<std::string> inputs;
    std::string out;
    bool strict = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("reports", o->inputs, "Report folders written by `opgate run --shard i/N`")->required();
  cmd->add_option("--out", o->out, "Merged report folder")->required();
  cmd->add_flag("--strict", o->strict, "MISTRUSTED cases fail the gate");
  cmd->callback([o, &exit_code] {
    auto counts = merge(o->inputs, o->out);
    if (!counts) {
      exit_code = fail(counts.status());
      return;
    }
    fmt::print("{}\nreport: {}\n", counts_line(*counts), o->out);
    exit_code = gate_exit_code(*counts, o->strict);
  });
}

}  // namespace opgate::cli
