// `opgate run` (a tier, files or a filter, on one backend, with reports) and `opgate repro`
// (one case with maximal detail).
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "cases/generate.h"
#include "cases/registry.h"
#include "core/child_process.h"
#include "core/json_read.h"
#include "core/parallel.h"
#include "core/version.h"
#include "harness/dump.h"
#include "harness/golden.h"
#include "harness/runner.h"
#include "reports/result_text.h"
#include "reports/run_facts.h"
#include "history/history_record.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/run_console.h"
#include "tools/run_parallel.h"
#include "tools/run_progress.h"

namespace opgate::cli {
namespace {

struct RunFlags {
  Selection sel;
  std::string root, backend = "emu", out, against = "reference", golden_root;
  int repeat = 1;
  std::string standard = "bound";  // --standard: what gates the floating outputs
  std::string twin;                // --twin DIR: the dual-benchmark's third-party outputs
  double timeout_s = 600;
  bool no_isolate = false, resume = false, strict = false, quiet = false;
  bool verbose = false;                     // -v: passing lines name each output's check
  ColorMode color = ColorMode::kAuto;       // --color
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // for the totals line
  bool overwrite = false;  // --overwrite: an --out holding a previous report is removed first
  bool dump_failed = false;  // --dump-failed: each failing case's tensors into <out>/failed/<id>/
  bool extreme_fills = false;  // --generate: each case gets one extreme per-tensor fill
  int64_t generate = 0;  // > 0: run this many freshly generated cases per operator
  uint64_t seed = 1;
  std::string size = "medium";
  BaselineFlags baseline;
  int max_failures = 0;   // > 0: stop after this many failing cases (-x: 1)
  int jobs = 0;           // -j: cases run at once, each in its own child; 0: the default (effective_jobs)
  std::vector<int> devices;  // --devices / OPGATE_ASCEND_DEVICES: one worker per NPU (ascend)
  std::string last_failed;  // a report folder: rerun its failing cases (their failed/<id>.json)
  std::string history, kernel_rev;                       // --history FILE, --kernel-rev REV
  std::shared_ptr<history::HistoryRecorder> history_run;  // open while the run records into it
};

// "0,1,2": the --devices list as typed.
std::string devices_text(const std::vector<int>& devices) {
  std::string s;
  for (const int d : devices) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// CLI::PositiveNumber would print its upper bound, DBL_MAX, in all its 309 digits.
std::string positive_seconds(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0) {
    return fmt::format("expected a positive number of seconds, got '{}'", text);
  }
  return "";
}

void add_common(CLI::App* cmd, RunFlags& f) {
  cmd->add_option("--backend", f.backend, "emu (default), fault:<defect>, or ascend");
  cmd->add_option("--repeat", f.repeat, "Device runs per case; >1 requires bit-identical outputs")->check(CLI::Range(1, 1000));
  cmd->add_option("--standard", f.standard,
                  "What gates floating outputs: bound (default), ascend-v0.3 or ascend-dual-permille (reports/README.md)")
      ->check(CLI::IsMember({"bound", "ascend-v0.3", "ascend-dual-permille"}));
  cmd->add_option("--twin", f.twin,
                  "Folder of a third party's outputs, DIR/<op>/<case id>/<output>.npy: the dual-benchmark's twin "
                  "instead of the emulator (reports/README.md)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--against", f.against, "Expected values from the reference or from golden files")
      ->check(CLI::IsMember({"reference", "golden"}));
  cmd->add_option("--golden-root", f.golden_root, "Golden folder (default <root>/golden)");
  cmd->add_option("--root", f.root, "Repository root holding cases/ and golden/");
  cmd->add_option("--timeout", f.timeout_s, "Per-case timeout in seconds (isolated runs)")
      ->check(CLI::Validator(positive_seconds, "SECONDS"));
  // Results do not depend on it (math::parallel_for hands out independent output blocks).
  cmd->add_option_function<int64_t>("--threads", [](const int64_t& n) { math::set_threads(n); },
                                    "Threads for the references and emulators (default: the cores)")
      ->envname("OPGATE_THREADS")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
}

RunOptions run_options(const RunFlags& f, const std::string& root) {
  RunOptions o;
  o.repeat = f.repeat;
  o.gate = *parse_standard(f.standard);
  o.against_golden = f.against == "golden";
  o.twin_root = f.twin;
  o.golden_root = f.golden_root.empty() ? root + "/golden" : f.golden_root;
  o.isolate = !f.no_isolate;
  o.timeout_s = f.timeout_s;
  o.repro_prefix = self_exe();  // a pasteable repro: `opgate` is seldom on PATH
  return o;
}

// A run's options with its report folder: --dump-failed writes into <out>/failed/<id>/.
RunOptions run_options_into(const RunFlags& f, const std::string& root, const std::string& out) {
  RunOptions o = run_options(f, root);
  if (f.dump_failed) {
    o.dump_dir = out + "/failed";
    o.dump_failed_only = true;
  }
  return o;
}

std::string default_out_dir(const std::string& root, const std::string& backend, const Selection& sel) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::string label = sel.files.empty() ? (sel.tiers.empty() ? "ci" : sel.tiers.front()) : "cases";
  std::string safe_backend = backend;
  for (char& ch : safe_backend) ch = (ch == ':' || ch == '/') ? '-' : ch;
  return fmt::format("{}/reports/{}_{}_{}", root, stamp, safe_backend, label);
}

// Freshly generated cases of the selected operators (`run --generate N`), filtered and sharded
// like cases from files.
// `skipped` gets one line per operator: how many draws its generator skipped, and why.
Expected<std::vector<Case>> generated(const RunFlags& f, SelectionCounts* counts, std::vector<std::string>* skipped) {
  std::vector<const OpInfo*> ops;
  for (const auto& name : f.sel.ops) {
    OPGATE_ASSIGN_OR_RETURN(const OpInfo* op, resolve_op(name));
    ops.push_back(op);
  }
  if (ops.empty()) {
    for (const auto& op : all_ops()) ops.push_back(&op);
  }
  OPGATE_ASSIGN_OR_RETURN(SizeClass size, parse_size_class(f.size));
  OPGATE_ASSIGN_OR_RETURN(CaseSelector selector, CaseSelector::make(f.sel));
  std::vector<Case> out;
  for (const OpInfo* op : ops) {
    GenerateSkips skips;
    int64_t made = 0;
    OPGATE_TRY(for_each_generated_case(*op, f.generate, f.seed, size, f.extreme_fills, &skips, [&](Case& c) {
      ++made;
      c.tier = "generated";
      if (selector.keep(c, *counts)) out.push_back(std::move(c));
      return Status::ok();
    }));
    skipped->push_back(skips_line(op->stem, made, skips, size));
  }
  return out;
}

// "no cases selected (<why>)": which files were read and what filtered their cases away.
std::string no_cases_text(const Selection& sel, const SelectionCounts& counts) {
  if (counts.files.empty()) return "no cases selected (no operator has a case file of the default tier 'ci')";
  std::string files;
  for (const auto& file : counts.files) files += (files.empty() ? "" : ", ") + file;
  const bool one = counts.files.size() == 1;
  if (counts.loaded == 0) return fmt::format("no cases selected ({} {} no cases)", files, one ? "holds" : "hold");
  std::string by;
  if (!sel.filter.empty()) by = fmt::format("--filter '{}'", sel.filter);
  if (!sel.files.empty() && !sel.ops.empty()) {
    std::string ops;
    for (const auto& op : sel.ops) ops += (ops.empty() ? "" : ",") + op;
    by += (by.empty() ? "--op " : " and --op ") + ops;
  }
  return fmt::format("no cases selected (none of the {} case(s) in {} matches {})", counts.loaded, files, by);
}

// The report must not land in the baseline folder: it would overwrite the accepted results (and
// a failing night would become the next baseline).
Status check_out_is_not_baseline(const std::string& out, const std::string& baseline) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path b = fs::weakly_canonical(fs::absolute(baseline), ec);
  if (!fs::is_directory(b, ec)) b = b.parent_path();
  if (fs::weakly_canonical(fs::absolute(out), ec) == b) {
    return parse_error(fmt::format("{}: --out is the baseline folder; write the report elsewhere", out));
  }
  return Status::ok();
}

// A folder holding a previous report is reused only on purpose (--resume continues it, --overwrite
// replaces it): a new run over it would otherwise keep the old run's failed/<id>.json files.
Status check_out_is_fresh(const std::string& out, const RunFlags& f) {
  if (f.resume || f.overwrite || !holds_report(out)) return Status::ok();
  if (!check_not_being_written(out).is_ok()) return Status::ok();  // ReportWriter::open names the run writing it
  return parse_error(fmt::format("{}: holds a previous report; continue it with --resume, replace it with --overwrite, "
                                 "or choose another --out", out));
}

std::set<std::string> case_ids(const std::vector<Case>& cases) {
  std::set<std::string> ids;
  for (const auto& c : cases) ids.insert(c.id);
  return ids;
}

// Console output that a closed stdout (`opgate run | head -1`) cannot end: fputs reports EPIPE
// (SIGPIPE is ignored during a run) where fmt::print would throw, and the reports are still written.
void say(const std::string& text) { std::fputs(text.c_str(), stdout); }

// Case files by absolute path, so a resume from another directory selects the same files.
std::vector<std::string> absolute_paths(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const auto& file : files) out.push_back(absolute_path(file));
  return out;
}

// The command that continues an interrupted run: the same selection and configuration (what
// --resume checks against run.json), into the same folder.
std::string resume_command(const RunFlags& f, const std::string& out) {
  std::string cmd = shell_quote(self_exe()) + " run --resume --out " + shell_quote(out);
  auto add = [&](const char* flag, const std::string& value) { cmd += fmt::format(" {} {}", flag, shell_quote(value)); };
  if (!f.root.empty()) add("--root", f.root);
  if (f.backend != "emu") add("--backend", f.backend);
  for (const auto& op : f.sel.ops) add("--op", op);
  for (const auto& tier : f.sel.tiers) add("--tier", tier);
  for (const auto& file : absolute_paths(f.sel.files)) add("--cases", file);
  if (!f.sel.filter.empty()) add("--filter", f.sel.filter);
  // The shard as resolved, also when a scheduler's variables chose it (the resuming shell may not
  // have them).
  if (const auto shard = selected_shard(f.sel); shard && shard->second > 1) {
    add("--shard", fmt::format("{}/{}", shard->first, shard->second));
  }
  if (f.max_failures > 0) add("--max-failures", std::to_string(f.max_failures));
  if (f.jobs > 0) add("--jobs", std::to_string(f.jobs));
  if (!f.devices.empty()) add("--devices", devices_text(f.devices));
  if (f.repeat != 1) add("--repeat", std::to_string(f.repeat));
  if (f.standard != "bound") add("--standard", f.standard);
  if (!f.twin.empty()) add("--twin", absolute_path(f.twin));
  if (f.against != "reference") add("--against", f.against);
  if (!f.golden_root.empty()) add("--golden-root", f.golden_root);
  if (f.timeout_s != 600) add("--timeout", fmt::format("{}", f.timeout_s));
  if (f.generate > 0) {
    add("--generate", std::to_string(f.generate));
    add("--seed", std::to_string(f.seed));
    add("--size", f.size);
    if (f.extreme_fills) cmd += " --extreme-fills";
  }
  if (!f.baseline.path.empty()) add("--baseline", f.baseline.path);
  if (!f.history.empty()) add("--history", f.history);
  if (!f.kernel_rev.empty()) add("--kernel-rev", f.kernel_rev);
  if (f.strict) cmd += " --strict";
  if (f.dump_failed) cmd += " --dump-failed";
  if (f.no_isolate) cmd += " --no-isolate";
  if (f.quiet) cmd += " --quiet";
  return cmd;
}

// Every selected case prepared (problem, golden folder, repro line into `out`); a case that makes
// no problem, or lacks a readable golden folder it needs, stops the run before anything is written.
Expected<std::vector<PreparedCase>> prepare_all(const std::vector<Case>& cases, const RunFlags& f,
                                                const RunOptions& opt, const std::string& out) {
  std::vector<PreparedCase> prepared;
  size_t format1 = 0;  // golden cases whose references are recomputed for their magnitudes
  for (const Case& c : cases) {
    PreparedCase pc = prepare_case(c, f.backend, opt, out);
    if (!pc.problem) return pc.problem_error;
    if (!pc.golden_error.is_ok()) return pc.golden_error.with_context(case_where(c));
    if (!pc.twin_error.is_ok()) return pc.twin_error.with_context(case_where(c));
    format1 += pc.golden && !pc.golden->stores_tolerances() ? 1 : 0;
    prepared.push_back(std::move(pc));
  }
  if (format1 > 0) fmt::print(stderr, "{}\n", golden_format1_note(format1));
  return prepared;
}

// run.json: the run's settings and selection, which --resume and merge check.
nlohmann::json run_info(const RunFlags& f, const Backend& backend, size_t cases, int jobs) {
  nlohmann::json info{{"harness_version", harness_version()},
                      {"backend", backend.probe()},
                      {"cases", cases},
                      {"repeat", f.repeat},
                      {"against", f.against}};
  if (f.standard != "bound") info["standard"] = f.standard;  // absent: bound
  if (!f.twin.empty()) info["twin"] = absolute_path(f.twin);   // absent: the emulator
  if (f.strict) info["strict"] = true;  // MISTRUSTED fails: summary.txt and junit.xml follow it too
  info["jobs"] = jobs;                   // informative: results do not depend on it (not a resume field)
  if (!f.devices.empty()) info["devices"] = f.devices;
  // What was selected: a resume must select the same cases.
  nlohmann::json selection{{"tiers", f.sel.tiers.empty() && f.sel.files.empty() && f.generate == 0
                                         ? std::vector<std::string>{"ci"}
                                         : f.sel.tiers},
                           {"files", absolute_paths(f.sel.files)},
                           {"filter", f.sel.filter}};
  std::vector<std::string> stems;
  for (const auto& name : f.sel.ops) stems.push_back(resolve_op(name).value()->stem);  // resolved by the selection
  selection["ops"] = stems;
  if (f.generate > 0) selection.update({{"generate", f.generate}, {"seed", f.seed}, {"size", f.size}});
  if (f.extreme_fills) selection["extreme_fills"] = true;
  info["selection"] = selection;
  // The shard, from --shard or the scheduler's variables (choose_shard), is what resume and merge check.
  const auto shard = selected_shard(f.sel);  // already parsed by select_cases
  if (shard && shard->second > 1) info["shard"] = fmt::format("{}/{}", shard->first, shard->second);
  info["scheduler"] = scheduler_info(f.sel);
  add_start_facts(info, f.kernel_rev);  // when, where, what: not compared by resume or merge
  return info;
}

// How the terminal shows this run: colour by --color and the environment, -v, --strict.
ConsoleStyle console_style(const RunFlags& f) {
  ConsoleStyle style;
  style.color = color_enabled_for_this_process(f.color);
  style.verbose = f.verbose;
  style.strict = f.strict;
  return style;
}

// One finished case, serial or parallel alike: printed (above the progress line), appended to the
// report, recorded into the history, and counted towards --max-failures.
Status take_result(const CaseResult& r, size_t n, size_t total, const RunFlags& f, ReportWriter& writer,
                   Progress& progress, int& failures) {
  if (!f.quiet || verdict_fails(r.verdict, true)) progress.print(case_text(r, n, total, console_style(f)));
  OPGATE_TRY(writer.append(r));
  if (f.history_run) OPGATE_TRY(f.history_run->record(r));
  failures += verdict_fails(r.verdict, f.strict) ? 1 : 0;
  return Status::ok();
}

// The progress of these cases: each weighs its tensor bytes; those the report holds are done.
std::unique_ptr<Progress> make_progress(const std::vector<PreparedCase>& cases, const std::vector<double>& weights,
                                        const ReportWriter& writer) {
  std::vector<bool> done;
  for (const PreparedCase& pc : cases) done.push_back(writer.done_ids().count(pc.c.id) > 0);
  return std::make_unique<Progress>(progress_style_of_this_process(), weights, done);
}

std::vector<double> case_weights(const std::vector<PreparedCase>& cases) {
  std::vector<double> weights;
  for (const PreparedCase& pc : cases) {
    weights.push_back(case_weight(pc.problem ? static_cast<double>(case_bytes(*pc.problem)) : 0.0));
  }
  return weights;
}

// The parallel run: results are printed, appended and recorded in case order as they arrive.
Status run_all_parallel(const std::vector<PreparedCase>& cases, const std::vector<Backend*>& backends,
                        const RunOptions& opt, const RunFlags& f, int jobs, ReportWriter& writer,
                        bool* stopped_at_max_failures) {
  int failures = 0;
  Status status = Status::ok();
  const std::vector<double> weights = case_weights(cases);
  auto progress = make_progress(cases, weights, writer);
  {
    // The progress counts a case when its child ends; the report takes it in case order.
    ParallelCases run(cases, weights, backends, opt, writer.done_ids(), jobs, math::threads(),
                      [&](size_t k, const CaseResult& r) { progress->finished(k, verdict_fails(r.verdict, f.strict)); });
    for (size_t k = 0; k < cases.size(); ++k) {
      if (f.max_failures > 0 && failures >= f.max_failures) {
        *stopped_at_max_failures = true;
        run.stop();
        break;
      }
      std::optional<CaseResult> r = run.take(k);
      if (stop_signal() != 0) {
        run.stop();
        break;
      }
      if (!r) continue;
      status = take_result(*r, k + 1, cases.size(), f, writer, *progress, failures);
      if (!status.is_ok()) {
        run.stop();
        break;
      }
    }
  }
  progress.reset();
  OPGATE_TRY(status);
  return finish_report(writer, f.history_run ? f.history : "");
}

Status run_all(const std::vector<PreparedCase>& cases, const std::vector<Backend*>& backends, const RunOptions& opt,
               const RunFlags& f, int jobs, ReportWriter& writer, bool* stopped_at_max_failures) {
  if (jobs > 1 && opt.isolate) return run_all_parallel(cases, backends, opt, f, jobs, writer, stopped_at_max_failures);
  Backend& backend = *backends.front();
  auto progress = make_progress(cases, case_weights(cases), writer);
  size_t n = 0;
  int failures = 0;
  for (const PreparedCase& pc : cases) {
    if (f.max_failures > 0 && failures >= f.max_failures) {
      *stopped_at_max_failures = true;
      break;
    }
    ++n;
    if (stop_signal() != 0) break;
    if (writer.done_ids().count(pc.c.id)) continue;
    CaseResult r = opt.isolate ? run_case_isolated(pc, backend, opt) : run_case(pc, backend, opt);
    // An isolated case's child was killed by the stop: its verdict would be a lie. A case run in
    // this process finished, so it is kept.
    if (stop_signal() != 0 && opt.isolate) break;
    progress->finished(n - 1, verdict_fails(r.verdict, f.strict));
    OPGATE_TRY(take_result(r, n, cases.size(), f, writer, *progress, failures));
  }
  progress.reset();
  return finish_report(writer, f.history_run ? f.history : "");
}

// The exit code once the reports are written: the stop signal's, the gate's, or the baseline's.
int conclude(const RunFlags& f, const ReportWriter& writer, size_t cases, const std::vector<CaseResult>& baseline,
             const BaselineScope& scope, bool stopped_at_max_failures) {
  auto current = read_results(writer.dir() + "/results.jsonl");  // resumed cases too: the list names every failure
  if (!current) return fail(current.status());
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - f.started).count();
  say(failed_list(*current, console_style(f)) + totals_line(writer.counts(), wall_s, console_style(f)) +
      fmt::format("report: {}\n", writer.dir()));
  if (stopped_at_max_failures) {
    say(fmt::format("stopped after {} failing case(s) (--max-failures {}): {} of {} cases ran; the rest with: {}\n",
                    f.max_failures, f.max_failures, writer.done_ids().size(), cases, resume_command(f, writer.dir())));
  }
  if (const int sig = stop_signal(); sig != 0) {
    std::fflush(stdout);
    fmt::print(stderr, "opgate: stopped by {} with {} of {} cases done; the report holds them: {}\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", writer.done_ids().size(), cases, writer.dir());
    fmt::print(stderr, "opgate: continue with: {}\n", resume_command(f, writer.dir()));
    return 128 + sig;
  }
  // With --history, finish_report drew the trends into report.html; the baseline section, which
  // needs the gate's comparison, rewrites the page with them.
  if (f.baseline.path.empty()) return gate_exit_code(writer.counts(), f.strict);
  std::optional<std::vector<BudgetTrend>> trends;
  if (f.history_run) {
    auto t = history_trends(f.history, *current);
    if (!t) return fail(t.status());
    trends = std::move(*t);
  }
  BaselineFlags bf = f.baseline;
  bf.options.strict = f.strict;
  auto code = gate_against_baseline(baseline, bf, writer.dir(), scope, trends ? &*trends : nullptr);
  if (!code) return fail(code.status());
  return *code;
}

// The selected cases (from files or generated), or why there are none to run.
Expected<std::vector<Case>> selected_cases(const RunFlags& f, const std::string& root, SelectionCounts& counts,
                                           std::vector<std::string>& skipped) {
  OPGATE_ASSIGN_OR_RETURN(auto cases, f.generate > 0 ? generated(f, &counts, &skipped) : select_cases(root, f.sel, &counts));
  // Nothing to run is a mistake (a typo in --filter, an emptied file), unless other shards have it.
  if (counts.matched == 0) {
    return parse_error(f.generate > 0 ? fmt::format("no cases selected (none of the {} generated case(s) matches "
                                                    "--filter '{}')", counts.loaded, f.sel.filter)
                                      : no_cases_text(f.sel, counts));
  }
  return cases;
}

// A setting the report records, taken from it unless `flag` was given; a given value that differs
// from the report's is named on stderr, so that a rerun never silently tests something else.
void adopt_setting(const CLI::App& cmd, const char* flag, const std::string& given, const std::string& recorded,
                   const std::string& where, const std::function<void()>& take) {
  if (cmd.get_option_no_throw(flag) == nullptr || recorded.empty()) return;
  if (cmd.count(flag) == 0) {
    take();
  } else if (given != recorded) {
    fmt::print(stderr, "opgate: {} {} overrides the report's {} ({})\n", flag, given, recorded, where);
  }
}

// --strict is a flag: a report's strict run makes the rerun strict; a --strict the report lacked is named.
void adopt_strict(RunFlags& f, const CLI::App& cmd, const RunInfoFile& run) {
  if (cmd.get_option_no_throw("--strict") == nullptr) return;
  const bool strict = run.info.value("strict", nlohmann::json(false)) == true;
  if (cmd.count("--strict") == 0) {
    f.strict = strict;
  } else if (!strict) {
    fmt::print(stderr, "opgate: --strict overrides the report's run without --strict ({})\n", run.path);
  }
}

// The settings that change verdicts (backend, --repeat, --against, --strict), as the report's run
// info records them, become this rerun's unless given on the command line. Recorded values are
// checked like the flags they stand for.
Status adopt_report_settings(RunFlags& f, const CLI::App& cmd, const RunInfoFile& run) {
  const nlohmann::json& info = run.info;
  if (!info.is_object()) return Status::ok();
  const std::string backend = recorded_backend(info);
  adopt_setting(cmd, "--backend", f.backend, backend, run.path, [&] { f.backend = backend; });
  if (info.contains("repeat")) {
    const nlohmann::json& r = info["repeat"];
    if (!r.is_number_integer() || r.get<int64_t>() < 1 || r.get<int64_t>() > 1000) {
      return parse_error(fmt::format("{}: field 'repeat': expected an integer in [1, 1000], got {}", run.path, r.dump()));
    }
    const int repeat = static_cast<int>(r.get<int64_t>());
    adopt_setting(cmd, "--repeat", std::to_string(f.repeat), std::to_string(repeat), run.path, [&] { f.repeat = repeat; });
  }
  if (info.contains("against")) {
    const nlohmann::json& a = info["against"];
    if (a != "reference" && a != "golden") {
      return parse_error(fmt::format("{}: field 'against': expected \"reference\" or \"golden\", got {}", run.path, a.dump()));
    }
    const std::string against = a.get<std::string>();
    adopt_setting(cmd, "--against", f.against, against, run.path, [&] { f.against = against; });
  }
  if (info.contains("standard")) {
    const nlohmann::json& s = info["standard"];
    if (!s.is_string() || !parse_standard(s.get<std::string>()) || s == "ascend-mixed" || s == "mere-mare" ||
        s == "dual-thousandth" || s == "allclose") {
      return parse_error(fmt::format(
          "{}: field 'standard': expected \"ascend-v0.3\" or \"ascend-dual-permille\", got {}", run.path, s.dump()));
    }
    const std::string standard = s.get<std::string>();
    adopt_setting(cmd, "--standard", f.standard, standard, run.path, [&] { f.standard = standard; });
  }
  if (info.contains("twin")) {
    const nlohmann::json& t = info["twin"];
    if (!t.is_string() || t.get<std::string>().empty()) {
      return parse_error(fmt::format("{}: field 'twin': expected a folder path, got {}", run.path, t.dump()));
    }
    const std::string twin = t.get<std::string>();
    adopt_setting(cmd, "--twin", f.twin.empty() ? "" : absolute_path(f.twin), twin, run.path, [&] { f.twin = twin; });
  }
  adopt_strict(f, cmd, run);
  return Status::ok();
}

// The report folder --last-failed names: the folder itself or its results.jsonl.
std::string last_failed_dir(const std::string& report) {
  const std::filesystem::path given(report);
  return given.filename() == "results.jsonl" ? given.parent_path().string() : report;
}

// --last-failed REPORT: the report's failing cases become the selection, each from the
// failed/<id>.json the report wrote (the case as it ran, generated ones included). Empty when
// none failed.
Expected<std::vector<std::string>> last_failed_files(const std::string& report) {
  const std::string dir = last_failed_dir(report);
  if (!std::filesystem::is_regular_file(dir + "/results.jsonl")) {
    return parse_error(fmt::format("--last-failed {}: no such report ({}/results.jsonl is missing)", report, dir));
  }
  OPGATE_ASSIGN_OR_RETURN(std::vector<CaseResult> results, read_results(dir + "/results.jsonl"));
  std::vector<std::string> files;
  for (const CaseResult& r : results) {
    if (!verdict_fails(r.verdict, true)) continue;
    OPGATE_ASSIGN_OR_RETURN(const std::string path, failed_case_path(dir, r.id));
    if (path.empty()) {
      return parse_error(fmt::format("--last-failed {}: {}/failed/{}.json is missing", report, dir, r.id));
    }
    files.push_back(path);
  }
  return files;
}

// Cases run at once: -j as given; else one per --devices NPU (ascend), one per thread of the
// budget (emu, fault: --threads / OPGATE_THREADS, default the cores), or 1 (ascend on one NPU,
// --no-isolate, where cases run in this process).
Expected<int> effective_jobs(const RunFlags& f) {
  const bool ascend = f.backend == "ascend";
  if (!f.devices.empty() && !ascend) {
    return parse_error(fmt::format("--devices {}: NPUs are for --backend ascend, not '{}'", devices_text(f.devices), f.backend));
  }
  if (ascend && f.jobs > 1 && f.devices.size() != static_cast<size_t>(f.jobs)) {
    return parse_error(f.devices.empty()
                           ? fmt::format("-j {} on ascend needs one NPU per worker: --devices (or OPGATE_ASCEND_DEVICES), "
                                         "e.g. --devices 0,1", f.jobs)
                           : fmt::format("-j {} with --devices {}: ascend runs one worker per NPU; drop -j", f.jobs,
                                         devices_text(f.devices)));
  }
  if (f.no_isolate) {
    if (f.jobs > 1 || f.devices.size() > 1) return parse_error("-j/--devices run cases in child processes; drop --no-isolate");
    return 1;
  }
  if (f.jobs > 0) return f.jobs;
  if (ascend) return std::max<int>(1, static_cast<int>(f.devices.size()));
  return static_cast<int>(std::clamp<int64_t>(math::threads(), 1, 256));
}

// The run's backends: one per --devices NPU (each probed, each its own context in its children),
// else the one backend that every worker shares.
Expected<std::vector<std::unique_ptr<Backend>>> make_backends(const RunFlags& f) {
  std::vector<std::unique_ptr<Backend>> out;
  if (f.devices.empty()) {
    OPGATE_ASSIGN_OR_RETURN(auto backend, make_backend(f.backend));
    out.push_back(std::move(backend));
    return out;
  }
  std::set<int> seen;
  for (const int device : f.devices) {
    if (!seen.insert(device).second) return parse_error(fmt::format("--devices {}: NPU {} is listed twice", devices_text(f.devices), device));
  }
  for (const int device : f.devices) {
    auto backend = make_backend(f.backend, device);
    if (!backend) return backend.status().with_context(fmt::format("--devices: NPU {}", device));
    out.push_back(std::move(*backend));
  }
  return out;
}

// --last-failed: the report's failing cases, run with the report's settings (adopt_report_settings).
Expected<std::vector<std::string>> last_failed_selection(RunFlags& f, const CLI::App& cmd) {
  OPGATE_ASSIGN_OR_RETURN(std::vector<std::string> files, last_failed_files(f.last_failed));
  OPGATE_ASSIGN_OR_RETURN(RunInfoFile run, read_run_info(last_failed_dir(f.last_failed)));
  OPGATE_TRY(adopt_report_settings(f, cmd, run));
  return files;
}

int run_cases(RunFlags& f, const CLI::App& cmd) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout stops the console output, not the run (say)
  if (f.extreme_fills && f.generate == 0) return fail(parse_error("--extreme-fills needs --generate N"));
  if (!f.last_failed.empty()) {
    auto files = last_failed_selection(f, cmd);
    if (!files) return fail(files.status());
    if (files->empty()) {
      say(fmt::format("--last-failed {}: no failing case; nothing to rerun\n", f.last_failed));
      return 0;
    }
    f.sel.files = std::move(*files);
  }
  auto jobs = effective_jobs(f);
  if (!jobs) return fail(jobs.status());
  const std::string root = repo_root(f.root);
  SelectionCounts counts;
  std::vector<std::string> skipped;
  auto cases = selected_cases(f, root, counts, skipped);
  if (!cases) return fail(cases.status());
  const std::string out = f.out.empty() ? default_out_dir(root, f.backend, f.sel) : f.out;
  const RunOptions opt = run_options_into(f, root, out);
  // The baseline folder first: it holds a report too, and "use --overwrite" would be the wrong advice.
  if (!f.baseline.path.empty()) {
    if (auto st = check_out_is_not_baseline(out, f.baseline.path); !st.is_ok()) return fail(st);
  }
  if (Status st = check_out_is_fresh(out, f); !st.is_ok()) return fail(st);
  // Broken case files and golden folders stop the run before anything is written.
  auto prepared = prepare_all(*cases, f, opt, out);
  if (!prepared) return fail(prepared.status());
  // A baseline that cannot be read stops the run before it starts, not after the night.
  std::vector<CaseResult> baseline;
  BaselineScope scope;
  if (!f.baseline.path.empty()) {
    auto b = read_baseline(f.baseline.path);
    if (!b) return fail(b.status());
    baseline = std::move(*b);
    auto s = selection_scope(f.sel, counts);
    if (!s) return fail(s.status());
    scope = *s;
  }
  auto backends = make_backends(f);
  if (!backends) return fail(backends.status());
  std::vector<Backend*> workers;
  for (auto& b : *backends) workers.push_back(b.get());
  if (f.resume && f.out.empty()) return fail(parse_error("--resume needs --out <the report folder to resume>"));
  // The history opens (created, migrated) before the report folder is written: a bad file stops the run.
  if (!f.history.empty()) {
    auto h = history::HistoryRecorder::open(f.history);
    if (!h) return fail(h.status());
    f.history_run = std::move(*h);
  }
  const nlohmann::json info = run_info(f, *workers.front(), cases->size(), *jobs);
  if (const std::string line = shard_header(f.sel); !line.empty()) say(line + "\n");
  if (f.overwrite && !f.resume && holds_report(out)) {
    if (Status st = remove_report(out); !st.is_ok()) return fail(st);
  }
  const std::set<std::string> selected_ids = case_ids(*cases);
  auto writer = ReportWriter::open(out, info, f.resume, &selected_ids);
  if (!writer) return fail(writer.status());
  if (f.history_run) {
    if (auto st = f.history_run->begin_run(history::run_meta_from_run_info(info, f.kernel_rev, out)); !st.is_ok()) {
      return fail(st);
    }
  }
  // From here on SIGINT/SIGTERM end the run cleanly: the current case is dropped (resume runs it),
  // the reports are written for what finished, and the exit code is 128 + the signal.
  install_stop_handlers();
  for (const auto& line : skipped) say("generate: " + line + "\n");
  if (cases->empty()) {
    const auto shard = selected_shard(f.sel);
    say(fmt::format("shard {}/{}: none of the {} selected cases falls in this shard; nothing to run, writing an empty "
                    "report\n", shard->first, shard->second, counts.matched));
  }
  // --threads (or the cores) is the whole run's budget: with -j N the case children share it.
  bool stopped_at_max_failures = false;
  if (Status st = run_all(*prepared, workers, opt, f, *jobs, *writer, &stopped_at_max_failures); !st.is_ok()) {
    return fail(st);
  }
  return conclude(f, *writer, cases->size(), baseline, scope, stopped_at_max_failures);
}

// The run info a failed/<id>.json stands for: its report's run.json (two folders up), else the
// backend its "result" records. Null info for a file that is no report's failed case.
Expected<RunInfoFile> failed_case_run_info(const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(nlohmann::json j, read_json_file(path));
  if (!j.is_object() || !j.contains("result") || !j["result"].is_object()) return RunInfoFile{"", nullptr};
  const std::filesystem::path failed_dir = std::filesystem::path(path).parent_path();
  if (failed_dir.filename() == "failed") {
    const std::string report = failed_dir.parent_path().empty() ? "." : failed_dir.parent_path().string();
    OPGATE_ASSIGN_OR_RETURN(RunInfoFile run, read_run_info(report));
    if (!run.info.is_null()) return run;
  }
  const nlohmann::json backend = j["result"].value("backend", nlohmann::json());
  if (!backend.is_string()) return RunInfoFile{"", nullptr};
  return RunInfoFile{path, nlohmann::json{{"backend", backend}}};
}

// repro's output: the case, each output's plan, metrics and worst elements, and the verdict.
void print_repro(const Case& chosen, const CaseResult& r, const std::string& where) {
  // Bounded: a case may hold long values; the file has it whole.
  constexpr size_t kMaxCaseDumpChars = 8000;
  std::string dump = case_to_json(chosen).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (dump.size() > kMaxCaseDumpChars) {
    dump = fmt::format("{}\n... ({} more bytes; the whole case is in {})", dump.substr(0, kMaxCaseDumpChars),
                       dump.size() - kMaxCaseDumpChars, where);
  }
  fmt::print("case {}\n{}\n", chosen.id, dump);
  for (const auto& o : r.outputs) {
    const CompareResult& c = o.compare;
    fmt::print("\noutput {}: {} — {}\n  plan: {}\n  metrics: {}\n", c.name, c.standard, c.message,
               to_json(o.plan).dump(), to_json(c.metrics).dump());
    for (const auto& [key, points] : {std::pair{"first_failures", &c.first_failures}, {"worst", &c.worst}}) {
      if (points->empty()) continue;
      fmt::print("  {}:\n", key);
      for (const auto& p : *points) fmt::print("    {}\n", to_json(p).dump());
    }
  }
  fmt::print("\n{} {}: {}\n", verdict_name(r.verdict), r.id, r.reason);
  if (verdict_fails(r.verdict, true)) fmt::print("{}", describe_result(r, 10));
}

// Runs the chosen case in this process, prints everything about it and, with --dump, writes its
// tensors. Like `run`, a case that makes no problem (bad params, over --max-case-bytes) or a dump
// folder that cannot be written is bad input: one line, exit 2, nothing computed or written.
int repro_case(const Case& chosen, const RunFlags& f, const std::string& dump, const std::string& where) {
  RunOptions opt = run_options(f, repo_root(f.root));
  opt.dump_dir = dump;
  if (!dump.empty()) {
    if (Status st = check_dump_folder(dump); !st.is_ok()) return fail(st);
  }
  const PreparedCase prepared = prepare_case(chosen, f.backend, opt);
  if (!prepared.problem) return fail(prepared.problem_error);
  auto backend = make_backend(f.backend);
  if (!backend) return fail(backend.status());
  Status dumped = Status::ok();
  CaseResult r = run_case(prepared, **backend, opt, &dumped);
  print_repro(chosen, r, where);
  if (!dumped.is_ok()) return fail(dumped);
  if (!dump.empty()) fmt::print("tensors: {} (README.txt says how to load them)\n", dump);
  return verdict_fails(r.verdict, false) ? 1 : 0;
}

}  // namespace

void add_run(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Run cases on a backend next to the reference and write reports");
  auto f = std::make_shared<RunFlags>();
  cmd->add_option("--op", f->sel.ops, "Operator stem, aclnn name or short name (default: all)");
  cmd->add_option("--tier", f->sel.tiers, "Case tier(s) (default: ci)");
  cmd->add_option("--cases", f->sel.files, "Case file(s) instead of --op/--tier");
  cmd->add_option("--filter", f->sel.filter, "Regex on case id or tag");
  add_shard_flags(cmd, f->sel);
  cmd->add_option("--out", f->out, "Report folder (default <root>/reports/<UTC>_<backend>_<tier>)");
  auto* resume = cmd->add_flag("--resume", f->resume, "Skip case ids already in <out>/results.jsonl");
  cmd->add_flag("--overwrite", f->overwrite, "Replace the report in --out (its failed/ included) instead of refusing it")
      ->excludes(resume);
  cmd->add_flag("--no-isolate", f->no_isolate, "Run cases in this process (for debuggers)");
  cmd->add_flag("--strict", f->strict, "MISTRUSTED cases fail the gate");
  cmd->add_flag("--dump-failed", f->dump_failed,
                "Write each failing case's inputs, expected, got and allowance as .npy into <out>/failed/<id>/");
  cmd->add_flag("-q,--quiet", f->quiet, "Print failures only");
  cmd->add_flag("-v,--verbose", f->verbose, "Passing lines name each output's check; failures show more elements");
  cmd->add_option("--color", f->color, "Colour: auto (a terminal without NO_COLOR or CI), always, never")
      ->transform(CLI::CheckedTransformer(std::map<std::string, ColorMode>{
          {"auto", ColorMode::kAuto}, {"always", ColorMode::kAlways}, {"never", ColorMode::kNever}}));
  cmd->add_option("--max-failures", f->max_failures, "Stop after N failing cases (the reports hold what ran)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_flag_callback("-x", [f] { f->max_failures = 1; }, "Stop at the first failing case (--max-failures 1)");
  cmd->add_option("-j,--jobs", f->jobs, "Cases run at once, each in its own child process (default: the --threads "
                                        "budget, i.e. the cores, on emu/fault; one per --devices NPU on ascend)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--devices", f->devices, "ascend: NPU ids, one worker each, e.g. 0,1,2,3")
      ->delimiter(',')
      ->envname("OPGATE_ASCEND_DEVICES")
      ->check(CLI::Range(0, 1023));
  auto* last = cmd->add_option("--last-failed", f->last_failed,
                               "Rerun the failing cases of this report folder (from its failed/<id>.json)");
  cmd->add_option("--generate", f->generate, "Run N freshly generated cases per operator instead of case files")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--seed", f->seed, "Generator seed for --generate");
  last->excludes("--generate")->excludes("--cases")->excludes("--op")->excludes("--tier");
  cmd->add_option("--size", f->size, "Size budget for --generate: small, medium, large")
      ->check(CLI::IsMember({"small", "medium", "large"}));
  cmd->add_flag("--extreme-fills", f->extreme_fills,
                "With --generate: each case fills one float input with subnormals, near-max values or signed zeros");
  add_baseline_flags(cmd, f->baseline, true);
  cmd->add_option("--history", f->history, "Record the run into this SQLite history (see `opgate history`)")
      ->envname("OPGATE_HISTORY");
  // Also without --history: run.json, summary.txt, report.html and junit.xml name the kernels judged.
  cmd->add_option("--kernel-rev", f->kernel_rev,
                  "The commit of the kernels under test, recorded in the report (and --history)");
  add_common(cmd, *f);
  cmd->callback([f, cmd, &exit_code] {
    f->started = std::chrono::steady_clock::now();
    exit_code = run_cases(*f, *cmd);
    // A run that ends (finished, refused, or stopped by SIGINT/SIGTERM) records its exit code.
    if (f->history_run) {
      if (auto st = f->history_run->end_run(exit_code); !st.is_ok()) exit_code = fail(st);
      f->history_run.reset();
    }
  });
}

void add_repro(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("repro", "Run one case in this process and print everything about it");
  auto f = std::make_shared<RunFlags>();
  auto source = std::make_shared<std::string>();
  auto id = std::make_shared<std::string>();
  auto dump = std::make_shared<std::string>();
  cmd->add_option("case", *source, "A case file, a failed/<id>.json, or a case as JSON text")->required();
  cmd->add_option("--id", *id, "The case id within a case file");
  cmd->add_option("--dump", *dump, "Write the case's inputs, expected, got and allowance as .npy files into DIR")
      ->type_name("DIR");
  add_common(cmd, *f);
  cmd->callback([f, cmd, source, id, dump, &exit_code] {
    struct stat st {};
    const bool is_file = stat(source->c_str(), &st) == 0;
    // Case text is a JSON object or array; anything else was meant as a file name.
    const size_t first = source->find_first_not_of(" \t\r\n");
    const bool is_text = first != std::string::npos && ((*source)[first] == '{' || (*source)[first] == '[');
    if (!is_file && !is_text) {
      exit_code = fail(parse_error(fmt::format("{}: no such case file", *source)));
      return;
    }
    auto cases = is_file ? load_case_file(*source) : parse_cases_text(*source, "<command line>");
    if (!cases) {
      exit_code = fail(cases.status());
      return;
    }
    const Case* chosen = nullptr;
    for (const auto& c : *cases) {
      if (id->empty() ? cases->size() == 1 : c.id == *id) chosen = &c;
    }
    if (cases->empty()) {
      exit_code = fail(parse_error(fmt::format("{}: holds no cases", *source)));
      return;
    }
    if (chosen == nullptr) {
      exit_code = fail(parse_error(id->empty() ? fmt::format("{}: holds {} cases; choose one with --id", *source, cases->size())
                                               : fmt::format("{}: no case with id '{}'", *source, *id)));
      return;
    }
    // A report's failed case reruns with the settings the report ran it with.
    if (is_file) {
      auto run = failed_case_run_info(*source);
      Status adopted = run ? adopt_report_settings(*f, *cmd, *run) : run.status();
      if (!adopted.is_ok()) {
        exit_code = fail(adopted);
        return;
      }
    }
    exit_code = repro_case(*chosen, *f, *dump, is_file ? *source : "the command line");
  });
}

}  // namespace opgate::cli
