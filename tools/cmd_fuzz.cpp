// `opgate fuzz`: runs a libFuzzer campaign on one target or all (style-and-layout.md B11) and turns
// every finding into fuzz/regressions/fuzz_<name>/<kind>-<hash> (the input, which ctest replays),
// <kind>-<hash>.json (the decoded case, which `opgate repro` runs) and a printed repro command.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "core/npy.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/libfuzzer_log.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

namespace fs = std::filesystem;

struct FuzzOpts {
  std::vector<std::string> names;
  bool all = false, no_seeds = false;
  int seconds = 60, jobs = 1, max_len = 0;  // 0: 1024 for operators, 4096 for parsers
  std::string backend = "emu", fuzzer_dir, out, regressions, root, decode;
};

std::string read_text(const fs::path& p) {
  auto t = read_file(p.string());
  return t ? *t : "";
}

// The folder of libFuzzer binaries: --fuzzer-dir, $OPGATE_FUZZER_DIR, <this binary's dir>/fuzz, or
// <root>/build/fuzz/fuzz (the fuzz preset); the first whose fuzz_engine.txt says libfuzzer.
Expected<fs::path> fuzzer_dir(const FuzzOpts& o, const std::string& root) {
  std::vector<fs::path> candidates;
  if (!o.fuzzer_dir.empty()) {
    candidates.push_back(o.fuzzer_dir);
  } else {
    if (const char* env = std::getenv("OPGATE_FUZZER_DIR")) candidates.push_back(env);
    candidates.push_back(fs::path(self_exe()).parent_path() / "fuzz");
    candidates.push_back(fs::path(root) / "build/fuzz/fuzz");
  }
  for (const auto& dir : candidates) {
    // Absolute, because the campaign runs the target from its own work folder.
    if (read_text(dir / "fuzz_engine.txt").rfind("libfuzzer", 0) == 0) return fs::absolute(dir);
  }
  return io_error(fmt::format("no libFuzzer build in {} (fuzz_engine.txt missing or not libfuzzer); build one "
                              "with clang: tools/setup.sh fuzz, or pass --fuzzer-dir",
                              candidates.front().string()));
}

// Runs argv with stdout+stderr into `log`, in `cwd`, killed after `limit_s`; returns the exit status.
int run_logged(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log,
               const std::string& backend, double limit_s) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || chdir(cwd.c_str()) != 0) _exit(127);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("OPGATE_FUZZ_BACKEND", backend.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    const std::string why = std::string("opgate fuzz: cannot execute ") + args[0] + ": " + std::strerror(errno) + "\n";
    if (::write(2, why.data(), why.size()) < 0) _exit(127);
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return status;
}

// Runs one target; returns the number of findings, or -1 if the campaign could not run.
int campaign(const std::string& target, const FuzzOpts& o, const std::string& root, const fs::path& bin_dir,
             const fs::path& out, const fs::path& reg_root) {
  const fs::path bin = bin_dir / target;
  if (!fs::exists(bin)) {
    fmt::print(stderr, "opgate: {}: {}: no such fuzz target binary (is there a fuzz/{}.cpp?)\n",
               o.all ? "warning" : "error", bin.string(), target);
    return o.all ? 0 : -1;
  }
  // A reused --out keeps its work corpus; artifacts and logs are this campaign's own.
  fs::create_directories(out / "corpus");
  fs::remove_all(out / "artifacts");
  fs::create_directories(out / "artifacts");
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().extension() == ".log") fs::remove(e.path());
  }
  std::vector<std::string> argv = {bin.string(), (out / "corpus").string()};
  for (const char* sub : {"corpus", "regressions"}) {
    const fs::path seeds = fs::path(root) / "fuzz" / sub / target;
    if (!o.no_seeds && fs::is_directory(seeds)) argv.push_back(seeds.string());
  }
  const fs::path dict = fs::path(root) / "fuzz" / (target == "fuzz_npy" ? "fuzz_npy.dict" : "fuzz_case_json.dict");
  if (fs::exists(dict)) argv.push_back("-dict=" + dict.string());
  // Operator inputs need only a few dozen generator bytes or one case line; without length control
  // libFuzzer grows inputs too slowly to reach the generator's later decisions within a minute.
  const bool op_target = fuzz::target_op(target) != nullptr;
  if (op_target) argv.push_back("-len_control=0");
  const int max_len = o.max_len > 0 ? o.max_len : op_target ? 1024 : 4096;
  argv.insert(argv.end(), {fmt::format("-max_total_time={}", o.seconds), fmt::format("-max_len={}", max_len),
                           "-timeout=10", "-rss_limit_mb=4096", "-print_final_stats=1",
                           "-artifact_prefix=" + (out / "artifacts").string() + "/"});
  if (o.jobs > 1) argv.insert(argv.end(), {fmt::format("-jobs={}", o.jobs), fmt::format("-workers={}", o.jobs)});
  const auto t0 = std::chrono::steady_clock::now();
  run_logged(argv, out, out / "fuzz.log", o.backend, o.seconds * 1.5 + 120);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const fuzz::CampaignStats s = fuzz::read_stats(out);
  if (s.execs == 0 && fs::is_empty(out / "artifacts")) {
    fmt::print(stderr, "opgate: error: {} did not run; see {}\n", target, (out / "fuzz.log").string());
    return -1;
  }

  int findings = 0;
  for (const auto& e : fs::directory_iterator(out / "artifacts")) {
    const std::string file = e.path().filename().string();
    if (file.rfind("slow-unit-", 0) == 0) continue;
    // Replaying confirms the finding and gives the log that names its kind.
    const fs::path replay_log = out / ("replay-" + file + ".log");
    const int st = run_logged({bin.string(), "-runs=1", "-timeout=30", e.path().string()}, out, replay_log,
                              o.backend, 120);
    const bool reproduces = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    const std::string input = read_text(e.path());
    const std::string name =
        fmt::format("{}-{}", fuzz::finding_kind(read_text(replay_log), file), fuzz::content_name(input));
    const fs::path dir = reg_root / target;
    fs::create_directories(dir);
    std::vector<std::pair<fs::path, std::string>> files = {{dir / name, input}};
    std::string repro = fmt::format("{}{} {}", o.backend == "emu" ? "" : "OPGATE_FUZZ_BACKEND=" + o.backend + " ",
                                    bin.string(), (dir / name).string());
    const auto* bytes = reinterpret_cast<const uint8_t*>(input.data());
    const OpInfo* op = fuzz::target_op(target);
    auto c = op != nullptr ? fuzz::decode_input(*op, bytes, input.size()) : Expected<Case>(parse_error("no op"));
    if (c) {
      if (c->note.empty()) c->note = fmt::format("fuzz finding {} of {}", name, target);
      files.emplace_back(dir / (name + ".json"), case_to_json(*c).dump(2) + "\n");
      repro += fmt::format("\n         opgate repro {}.json --backend {}", (dir / name).string(), o.backend);
    }
    for (const auto& [path, text] : files) {
      if (Status w = write_file_atomic(path.string(), text); !w.is_ok()) {
        fail(w);
        return -1;
      }
    }
    fmt::print("FINDING {} in {}{}\n  input: {}\n  log:   {}\n  repro: {}\n", name, target,
               reproduces ? "" : " (does not reproduce on replay)", (dir / name).string(), replay_log.string(), repro);
    ++findings;
  }
  fmt::print("{:<36} {:>5.0f} s {:>9} execs {:>6} exec/s  cov {:>5} ft {:>6} corpus {:>5}  findings {}  ({})\n", target,
             elapsed, s.execs, s.exec_per_s, s.cov, s.ft, s.corpus, findings, out.string());
  std::fflush(stdout);
  return findings;
}

int run_fuzz(const FuzzOpts& o) {
  const std::string root = fs::absolute(repo_root(o.root)).string();
  std::vector<std::string> targets;
  for (const auto& n : o.names) {
    targets.push_back(fuzz::target_name(n));
    if (targets.back().empty()) {
      return fail(fuzz::unknown_target(n));
    }
  }
  if (o.all) targets = fuzz::all_target_names();
  if (!o.decode.empty()) {
    const OpInfo* op = targets.size() == 1 ? fuzz::target_op(targets[0]) : nullptr;
    if (op == nullptr) return fail(parse_error("--decode needs exactly one operator --op"));
    const std::string input = read_text(o.decode);
    auto c = fuzz::decode_input(*op, reinterpret_cast<const uint8_t*>(input.data()), input.size());
    if (!c) return fail(c.status().with_context(o.decode));
    fmt::print("{}\n", case_to_json(*c).dump(2));
    return 0;
  }
  if (targets.empty()) return fail(parse_error("choose targets with --op or --all"));
  auto bin_dir = fuzzer_dir(o, root);
  if (!bin_dir) return fail(bin_dir.status());
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  const fs::path out = o.out.empty() ? fs::path(root) / "reports" / fmt::format("fuzz_{}", stamp) : fs::absolute(o.out);
  // Findings against a fault backend are demonstrations, not regressions of the real emulator.
  const fs::path reg = !o.regressions.empty() ? fs::path(o.regressions)
                       : o.backend == "emu"    ? fs::path(root) / "fuzz" / "regressions"
                                               : out / "regressions";
  int total = 0;
  for (const auto& t : targets) {
    const int n = campaign(t, o, root, *bin_dir, fs::absolute(out / t), fs::absolute(reg));
    if (n < 0) return kExitUsage;
    total += n;
  }
  fmt::print("fuzz: {} target(s), {} finding(s)\n", targets.size(), total);
  return total > 0 ? 1 : 0;
}

}  // namespace

void add_fuzz(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("fuzz", "Run libFuzzer campaigns; findings become regression inputs and cases");
  auto o = std::make_shared<FuzzOpts>();
  cmd->add_option("--op", o->names, "Operator or parser target (case_json, npy, results_jsonl)");
  cmd->add_flag("--all", o->all, "Every target in turn");
  cmd->add_option("--time", o->seconds, "Seconds per target (default 60)")->check(CLI::Range(1, 86400));
  cmd->add_option("--jobs", o->jobs, "Parallel libFuzzer jobs per target (default 1)")->check(CLI::Range(1, 64));
  cmd->add_option("--max-len", o->max_len, "Longest input in bytes (default 1024 for operators, 4096 for parsers)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--backend", o->backend, "Device of the operator targets: emu (default) or fault:<defect>");
  cmd->add_option("--fuzzer-dir", o->fuzzer_dir, "Folder of the libFuzzer binaries (default: found automatically)");
  cmd->add_option("--out", o->out, "Campaign folder (default <root>/reports/fuzz_<UTC>)");
  cmd->add_option("--regressions", o->regressions,
                  "Where findings go (default <root>/fuzz/regressions; <out>/regressions with a fault backend)");
  cmd->add_option("--root", o->root, "Repository root holding fuzz/ and cases/");
  cmd->add_flag("--no-seeds", o->no_seeds, "Start from an empty corpus (not fuzz/corpus and fuzz/regressions)");
  cmd->add_option("--decode", o->decode, "Print the case an input of --op's target decodes to, and exit");
  cmd->callback([o, &exit_code] { exit_code = run_fuzz(*o); });
}

}  // namespace opgate::cli
