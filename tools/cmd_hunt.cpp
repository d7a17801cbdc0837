// `opgate hunt --op <stem>`: searches the operator's generator space for the valid inputs that use
// the most of each output's allowance (harness/hunt.h), saves the worst case of each output as a
// replayable case file, prints the margin table (random sampling vs the hunt), and saves every
// case that fails: on emu a false alarm (exit 1), on a device a finding.
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "cases/bytes_case.h"
#include "core/npy.h"
#include "harness/hunt.h"
#include "harness/runner.h"
#include "tools/case_file.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

namespace fs = std::filesystem;

struct HuntOpts {
  std::string op, backend = "emu", out, root, size = "medium";
  double seconds = 60;
  int64_t evaluations = 0;  // > 0: a fixed number per phase instead of --time (reproducible)
  uint64_t seed = 1;
};

// A case that fails the gate (with --strict: MISTRUSTED too).
struct Alarm {
  Case c;
  std::string verdict, reason;
};

// Candidates run in this process on the backend; their outputs' budget_used are the scores.
class OpEvaluator {
 public:
  OpEvaluator(const OpInfo& op, Backend& backend, SizeClass size) : op_(op), backend_(backend), size_(size) {
    opt_.isolate = false;
  }
  std::optional<hunt::Scores> operator()(const hunt::Bytes& bytes) {
    std::optional<Case> c = case_from_bytes(op_, bytes, size_, count_++);
    if (!c) return std::nullopt;
    const CaseResult r = run_case(*c, backend_, opt_);
    if (r.verdict == Verdict::kSkipped || r.verdict == Verdict::kExpectedReject) return std::nullopt;
    if (verdict_fails(r.verdict, true)) {
      // The hunt mutates a failing case into many more; the first ones tell the story.
      if (alarms_.size() < kAlarmsKept) alarms_.push_back({*c, verdict_name(r.verdict), r.reason});
      ++failed_;
    }
    hunt::Scores s;
    for (const auto& o : r.outputs) s[o.plan.name] = o.compare.metrics.budget_used;
    return s;
  }
  const std::vector<Alarm>& alarms() const { return alarms_; }
  int64_t failed() const { return failed_; }
  static constexpr size_t kAlarmsKept = 50;

 private:
  const OpInfo& op_;
  Backend& backend_;
  SizeClass size_;
  RunOptions opt_;
  int64_t count_ = 0, failed_ = 0;
  std::vector<Alarm> alarms_;
};

std::string margin_table(const hunt::SearchResult& r) {
  std::string t = fmt::format("{:<24} {:>10} {:>10}\n", "output", "random", "hunted");
  for (const auto& [name, best] : r.best) {
    const auto random = r.random.find(name);
    t += fmt::format("{:<24} {:>10.4g} {:>10.4g}\n", name, random == r.random.end() ? 0.0 : random->second.score,
                     best.score);
  }
  return t;
}

Status save_findings(const OpInfo& op, const HuntOpts& o, const hunt::SearchResult& r,
                     const std::vector<Alarm>& alarms, const fs::path& out, SizeClass size) {
  OPGATE_TRY(make_dirs((out / "worst").string()));
  int64_t n = 0;
  for (const auto& [name, best] : r.best) {
    std::optional<Case> c = case_from_bytes(op, best.bytes, size, n++);
    if (!c) continue;
    OPGATE_TRY(write_case_file((out / "worst" / (name + ".json")).string(), *c,
                               fmt::format("opgate hunt --op {} --seed {}: the worst case of output {} (budget_used {:.6g} "
                                           "on {})", op.stem, o.seed, name, best.score, o.backend)));
  }
  if (!alarms.empty()) OPGATE_TRY(make_dirs((out / "failed").string()));
  for (size_t k = 0; k < alarms.size(); ++k) {
    const Alarm& a = alarms[k];
    OPGATE_TRY(write_case_file((out / "failed" / (a.c.id + ".json")).string(), a.c,
                               fmt::format("{} on {}: {}", a.verdict, o.backend, a.reason)));
  }
  return write_file_atomic((out / "margins.txt").string(), margin_table(r));
}

fs::path hunt_folder(const HuntOpts& o, const std::string& stem) {
  if (!o.out.empty()) return fs::absolute(o.out);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return fs::path(repo_root(o.root)) / "reports" / fmt::format("hunt_{}_{}", stem, stamp);
}

int run_hunt(const HuntOpts& o) {
  auto op = resolve_op(o.op);
  if (!op) return fail(op.status());
  auto backend = make_backend(o.backend);
  if (!backend) return fail(backend.status());
  const SizeClass size = parse_size_class(o.size).value();
  OpEvaluator evaluate(**op, **backend, size);
  hunt::SearchOptions so;
  so.seed = o.seed;
  so.evaluations = o.evaluations > 0 ? o.evaluations : INT64_MAX;
  so.seconds = o.evaluations > 0 ? 0 : o.seconds / 2;
  const hunt::SearchResult r = hunt::search([&](const hunt::Bytes& b) { return evaluate(b); }, so);
  const fs::path out = hunt_folder(o, (*op)->stem);
  if (Status st = save_findings(**op, o, r, evaluate.alarms(), out, size); !st.is_ok()) return fail(st);
  fmt::print("hunt {} on {}, seed {}: {} random + {} hunted candidates ({} decoded to no valid case)\n{}",
             (*op)->stem, o.backend, o.seed, r.random_evals, r.hunt_evals, r.invalid, margin_table(r));
  const bool emu = o.backend == "emu";
  if (evaluate.alarms().empty()) {
    fmt::print("no case failed{}\nworst cases: {}\n", emu ? " (no false alarm)" : "", (out / "worst").string());
    return 0;
  }
  for (const auto& a : evaluate.alarms()) fmt::print("{} {}: {}\n", a.verdict, a.c.id, a.reason);
  fmt::print("{} case(s) failed{}; the first {} saved in {}\n", evaluate.failed(),
             emu ? " on the clean emulator (false alarms)" : "", evaluate.alarms().size(), (out / "failed").string());
  return 1;
}

}  // namespace

void add_hunt(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("hunt", "Search for the valid inputs that use the most of each output's tolerance");
  auto o = std::make_shared<HuntOpts>();
  cmd->add_option("--op", o->op, "Operator stem, aclnn name or short name")->required();
  cmd->add_option("--backend", o->backend, "emu (default: a false alarm is a failing case), fault:<defect> or ascend");
  cmd->add_option("--time", o->seconds, "Seconds in all: half random sampling, half the hunt (default 60)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--evaluations", o->evaluations, "Candidates per phase instead of --time (reproducible)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  cmd->add_option("--seed", o->seed, "Search seed");
  cmd->add_option("--size", o->size, "Input-element budget: small (2^14), medium (2^20, default), large (2^26)")
      ->check(CLI::IsMember({"small", "medium", "large"}));
  cmd->add_option("--out", o->out, "Folder for worst/, failed/ and margins.txt (default <root>/reports/hunt_<op>_<UTC>)");
  cmd->add_option("--root", o->root, "Repository root");
  cmd->callback([o, &exit_code] { exit_code = run_hunt(*o); });
}

}  // namespace opgate::cli
