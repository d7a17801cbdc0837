// Baseline comparison: one pass over the baseline and the current results, keyed by case id.
#include "reports/baseline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <sys/stat.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_read.h"
#include "core/npy.h"
#include "core/report_folder.h"

namespace opgate {
namespace {

constexpr std::array<const char*, 7> kChangeNames = {"NEW_FAILURE", "MISSING", "DRIFT",   "STILL_FAILING",
                                                     "FIXED",       "CHANGED", "NEW_CASE"};

// A non-finite share (an infinite error against a finite allowance) counts as 0, as in baselines
// accepted before the typed results: results.jsonl writes it as a string, which they skipped.
double budget_used(const OutputResult& output) {
  const double used = output.compare.metrics.budget_used;
  return std::isfinite(used) ? used : 0;
}

// The passing outputs whose tolerance use grew past both thresholds, as "y: 0.21 -> 0.64 (x3.0)".
std::string drift_detail(const CaseResult& before, const CaseResult& after, const BaselineOptions& opt) {
  std::map<std::string, double> old_use;
  for (const auto& o : before.outputs) old_use[o.compare.name] = budget_used(o);
  std::string detail;
  for (const auto& o : after.outputs) {
    const auto it = old_use.find(o.compare.name);
    if (it == old_use.end() || !o.compare.passed) continue;
    const double now = budget_used(o);
    if (now > opt.drift_floor && now > opt.drift_factor * it->second) {
      detail += fmt::format("{}{}: tolerance used {:.3g} -> {:.3g}", detail.empty() ? "" : "; ", it->first,
                            it->second, now);
    }
  }
  return detail;
}

}  // namespace

const char* baseline_change_name(BaselineChange c) { return kChangeNames[static_cast<size_t>(c)]; }

int64_t BaselineDiff::count(BaselineChange c) const {
  return std::count_if(findings.begin(), findings.end(), [c](const BaselineFinding& f) { return f.change == c; });
}

BaselineDiff diff_with_baseline(const std::vector<CaseResult>& baseline, const std::vector<CaseResult>& current,
                                const BaselineOptions& opt, const BaselineScope& in_scope) {
  std::map<std::string, const CaseResult*> before;
  for (const auto& r : baseline) before[r.id] = &r;
  std::map<std::string, bool> seen;
  BaselineDiff d;
  for (const auto& now : current) {
    seen[now.id] = true;
    const auto it = before.find(now.id);
    const CaseResult* old = it == before.end() ? nullptr : it->second;
    const bool fails_now = verdict_fails(now.verdict, opt.strict);
    const bool failed_before = old != nullptr && verdict_fails(old->verdict, opt.strict);
    BaselineFinding f;
    f.id = now.id;
    f.before = old ? verdict_name(old->verdict) : "";
    f.after = verdict_name(now.verdict);
    f.detail = now.reason;
    if (fails_now) {
      f.change = failed_before && old->verdict == now.verdict ? BaselineChange::kStillFailing
                                                              : BaselineChange::kNewFailure;
    } else if (failed_before) {
      f.change = BaselineChange::kFixed;
    } else if (old == nullptr) {
      f.change = BaselineChange::kNewCase;
    } else if (old->verdict != now.verdict) {
      f.change = BaselineChange::kChanged;
    } else {
      f.detail = drift_detail(*old, now, opt);
      if (f.detail.empty()) {
        ++d.unchanged;
        continue;
      }
      f.change = BaselineChange::kDrift;
    }
    d.findings.push_back(std::move(f));
  }
  for (const auto& old : baseline) {
    if (seen.count(old.id) || (in_scope && !in_scope(old))) continue;
    d.findings.push_back({BaselineChange::kMissing, old.id, verdict_name(old.verdict), "",
                          "in the baseline but not run: removed or renamed case?"});
  }
  std::stable_sort(d.findings.begin(), d.findings.end(), [](const BaselineFinding& a, const BaselineFinding& b) {
    return a.change != b.change ? a.change < b.change : a.id < b.id;
  });
  return d;
}

int baseline_exit_code(const std::vector<CaseResult>& current, const BaselineDiff& diff, const BaselinePolicy& p) {
  if (diff.count(BaselineChange::kNewFailure) > 0 || diff.count(BaselineChange::kMissing) > 0) return 1;
  if (p.fail_on_drift && diff.count(BaselineChange::kDrift) > 0) return 1;
  if (p.allow_known_failures) return 0;
  for (const auto& r : current) {
    if (verdict_fails(r.verdict, p.strict)) return 1;
  }
  return 0;
}

std::string baseline_text(const BaselineDiff& diff, const std::string& baseline_path) {
  std::string s = fmt::format("baseline {}: new_failure:{} missing:{} drift:{} still_failing:{} fixed:{} "
                              "changed:{} new_case:{} unchanged:{}\n",
                              baseline_path, diff.count(BaselineChange::kNewFailure),
                              diff.count(BaselineChange::kMissing), diff.count(BaselineChange::kDrift),
                              diff.count(BaselineChange::kStillFailing), diff.count(BaselineChange::kFixed),
                              diff.count(BaselineChange::kChanged), diff.count(BaselineChange::kNewCase),
                              diff.unchanged);
  for (const auto& f : diff.findings) {
    s += fmt::format("  {:<13} {:<48} {:>15} -> {:<15} {}\n", baseline_change_name(f.change), f.id,
                     f.before.empty() ? "(absent)" : f.before, f.after.empty() ? "(not run)" : f.after, f.detail);
  }
  return s;
}

nlohmann::json to_json(const BaselineDiff& diff) {
  nlohmann::json counts = nlohmann::json::object();
  for (size_t i = 0; i < kChangeNames.size(); ++i) {
    counts[kChangeNames[i]] = diff.count(static_cast<BaselineChange>(i));
  }
  counts["UNCHANGED"] = diff.unchanged;
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : diff.findings) {
    findings.push_back({{"change", baseline_change_name(f.change)},
                        {"id", f.id},
                        {"before", f.before},
                        {"after", f.after},
                        {"detail", f.detail}});
  }
  return {{"counts", counts}, {"findings", findings}};
}

Expected<std::vector<CaseResult>> read_baseline(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return io_error(fmt::format("{}: no such baseline (a report folder or a results.jsonl)", path));
  const std::string file = S_ISDIR(st.st_mode) ? path + "/results.jsonl" : path;
  if (::stat(file.c_str(), &st) != 0) return io_error(fmt::format("{}: missing (not a report or baseline folder?)", file));
  return read_results(file);
}

Status accept_baseline(const std::string& report, const std::string& dir, const std::string& harness_version) {
  OPGATE_ASSIGN_OR_RETURN(const std::string folder, report_folder(report));
  // A run still writing the folder has only part of its results (or none yet): name who writes it.
  OPGATE_TRY(check_not_being_written(folder));
  const std::string source = folder + "/results.jsonl";
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_file_bounded(source, kMaxResultsBytes, "results.jsonl"));
  // Parsed first, so a corrupt report never becomes the baseline.
  OPGATE_ASSIGN_OR_RETURN(std::vector<CaseResult> results, read_results(source));
  if (results.empty()) return parse_error(fmt::format("{}: no results: refusing an empty baseline", source));
  // Cases a baseline lacks are never reported missing, so a partial report would hide them for good.
  OPGATE_ASSIGN_OR_RETURN(RunInfoFile run, read_run_info(folder));
  OPGATE_TRY(check_finished(folder, run, results.size()));
  if (run.info.is_object() && run.info.contains("shard")) {
    return parse_error(fmt::format("{}: a single shard ({}) of a split run: merge the shards first with `opgate "
                                   "merge`, then accept the merged report",
                                   run.path, run_field_text(run.info["shard"])));
  }
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& r : results) counts[verdict_name(r.verdict)] = counts.value(verdict_name(r.verdict), 0) + 1;
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  // Absolute: the baseline outlives the working directory it was accepted from.
  std::string from = std::filesystem::absolute(folder).lexically_normal().string();
  if (from.size() > 1 && from.back() == '/') from.pop_back();
  nlohmann::json manifest{{"accepted_from", from},
                          {"accepted_at", stamp},
                          {"harness_version", harness_version},
                          {"cases", results.size()},
                          {"verdicts", counts}};
  for (const char* field : kConfigFields) {
    const nlohmann::json v = run_field(run.info, field);
    if (!v.is_null()) manifest[field] = v;
  }
  OPGATE_TRY(make_dirs(dir));
  OPGATE_TRY(write_file_atomic(dir + "/results.jsonl", text));
  return write_file_atomic(dir + "/baseline.json", manifest.dump(2) + "\n");
}

Expected<std::string> baseline_config_mismatch(const std::string& baseline_path, const std::string& report_dir) {
  struct stat st {};
  const bool is_dir = ::stat(baseline_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  const std::string folder = is_dir ? baseline_path : std::filesystem::path(baseline_path).parent_path().string();
  const std::string manifest_path = (folder.empty() ? std::string(".") : folder) + "/baseline.json";
  if (::stat(manifest_path.c_str(), &st) != 0) return std::string();  // not accepted by `baseline accept`
  OPGATE_ASSIGN_OR_RETURN(nlohmann::json manifest, read_json_file(manifest_path));
  OPGATE_ASSIGN_OR_RETURN(RunInfoFile run, read_run_info(report_dir));
  // Only fields both sides record: older baselines and reports say nothing either way.
  std::vector<std::string> was, is;
  for (const char* field : {"backend", "against"}) {
    const nlohmann::json b = run_field(manifest, field);
    const nlohmann::json r = run_field(run.info, field);
    if (b.is_null() || r.is_null() || b == r) continue;
    was.push_back(fmt::format("{} {}", field, b.dump()));
    is.push_back(fmt::format("{} {}", field, r.dump()));
  }
  if (was.empty()) return std::string();
  return fmt::format("{}: the baseline has {}, but {} has {}: results of different configurations are compared",
                     manifest_path, fmt::join(was, ", "), run.path, fmt::join(is, ", "));
}

}  // namespace opgate
