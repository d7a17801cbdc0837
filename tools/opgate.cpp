// opgate: golden-reference validation and fuzzing harness for Ascend aclnn operators.
// Sub-command dispatch; exit codes: 0 nothing failed, 1 a case failed, 2 usage or harness error.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/case.h"
#include "core/isa.h"
#include "core/version.h"
#include "reference/math/shared_simd.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace {

// Whether the command line holds `name` itself ("--threads 4", "--threads=4").
bool on_command_line(const std::string& name, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == name || arg.rfind(name + "=", 0) == 0) return true;
  }
  return false;
}

// A value that came from an option's environment variable is named as that variable:
// "OPGATE_THREADS=abc: Value abc not in range ..." instead of "--threads: ...", which was never typed.
std::string name_env_source(const CLI::App& app, const std::string& what, int argc, char** argv) {
  const size_t colon = what.find(": ");
  if (colon == std::string::npos || what.rfind("--", 0) != 0) return what;
  const std::string name = what.substr(0, colon);
  for (const CLI::App* sub : app.get_subcommands()) {
    const CLI::Option* opt = sub->get_option_no_throw(name);
    if (opt == nullptr || opt->get_envname().empty() || on_command_line(name, argc, argv)) {
      const std::string nested = name_env_source(*sub, what, argc, argv);  // `baseline diff`, `history cases`
      if (nested != what) return nested;
      continue;
    }
    const char* value = std::getenv(opt->get_envname().c_str());
    if (value == nullptr) continue;
    return fmt::format("{}={}: {} (the environment variable for {})", opt->get_envname(), value,
                       what.substr(colon + 2), name);
  }
  return what;
}

// "123", "64M", "2G", "1T" (powers of 1024) -> bytes; 0 when malformed or zero.
uint64_t parse_bytes(const std::string& text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return 0;
  const std::string unit = end;
  int shift = 0;
  if (unit == "K" || unit == "KiB") shift = 10;
  else if (unit == "M" || unit == "MiB") shift = 20;
  else if (unit == "G" || unit == "GiB") shift = 30;
  else if (unit == "T" || unit == "TiB") shift = 40;
  else if (!unit.empty()) return 0;
  if (shift > 0 && n > (~0ULL >> shift)) return 0;
  return static_cast<uint64_t>(n) << shift;
}

// The version, and the architecture and vector paths this binary runs here: on a Kunpeng host
// "aarch64 ... neon", so a report's numbers can be tied to the kernels that computed them.
std::string version_text() {
  std::string paths;
  for (opgate::Isa isa : opgate::supported_isas()) paths += std::string(paths.empty() ? "" : " ") + opgate::isa_name(isa);
  return std::string(opgate::harness_version()) + "\n" + opgate::arch_name() + ": vector paths " + paths +
         " (references use " + opgate::isa_name(opgate::math::isa()) + ", OPGATE_ISA pins another)";
}

// Levenshtein distance, for "did you mean": a typo is an edit or two away from the command.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The word where a sub-command was expected but none has that name ("hsitory" in `opgate hsitory`,
// "flakey" in `opgate history flakey`), as "unknown command ...; did you mean ...?", or "" when
// the command line names every command it reaches. Words after an option that takes a value are
// skipped; a command with positional arguments takes any word.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* cur = &app;
  std::string path = "opgate";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind("-", 0) == 0) {
      const CLI::Option* opt = word.find('=') == std::string::npos ? cur->get_option_no_throw(word) : nullptr;
      if (opt != nullptr && opt->get_expected_min() > 0) ++i;
      continue;
    }
    const auto subs = cur->get_subcommands([](CLI::App*) { return true; });
    const auto named = std::find_if(subs.begin(), subs.end(), [&](CLI::App* sub) { return sub->check_name(word); });
    if (named != subs.end()) {
      cur = *named;
      path += " " + word;
      continue;
    }
    const auto positionals = cur->get_options([](const CLI::Option* o) { return o->get_positional(); });
    if (subs.empty() || !positionals.empty()) return "";
    std::string best;
    size_t best_distance = 3;  // at most two edits
    for (const CLI::App* sub : subs) {
      const size_t d = edit_distance(word, sub->get_name());
      if (d < best_distance) best_distance = d, best = sub->get_name();
    }
    std::string all;
    for (const CLI::App* sub : subs) all += (all.empty() ? "" : ", ") + sub->get_name();
    return best.empty() ? fmt::format("unknown command '{}' for '{}' (commands: {})", word, path, all)
                        : fmt::format("unknown command '{}' for '{}'; did you mean '{}'?", word, path, best);
  }
  return "";
}

int run_cli(int argc, char** argv) {
  CLI::App app{std::string("opgate ") + opgate::harness_version() +
               ": golden-reference validation and fuzzing harness for Ascend aclnn operators",
               "opgate"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  // Sub-commands inherit fallthrough, so `opgate golden regen --max-case-bytes 2G` reaches this.
  app.fallthrough();
  std::string max_case_bytes;
  app.add_option("--max-case-bytes", max_case_bytes,
                 "Refuse a case whose tensors need more host memory (e.g. 2G; default: half of physical "
                 "memory, " + opgate::bytes_text(opgate::default_max_case_bytes()) + ")")
      ->check([](const std::string& v) {
        return parse_bytes(v) == 0 ? std::string("not a positive byte count like 512M or 2G") : std::string();
      })
      ->each([](const std::string& v) { opgate::set_max_case_bytes(parse_bytes(v)); });
  int exit_code = 0;
  opgate::cli::add_list(app, exit_code);
  opgate::cli::add_run(app, exit_code);
  opgate::cli::add_repro(app, exit_code);
  opgate::cli::add_golden(app, exit_code);
  opgate::cli::add_merge(app, exit_code);
  opgate::cli::add_baseline(app, exit_code);
  opgate::cli::add_gen(app, exit_code);
  opgate::cli::add_shrink(app, exit_code);
  opgate::cli::add_fuzz(app, exit_code);
  opgate::cli::add_fuzz_seeds(app, exit_code);
  opgate::cli::add_hunt(app, exit_code);
  opgate::cli::add_history(app, exit_code);
  // `opgate` alone: the help (what the sub-commands are), and exit 2 like any call that names no
  // command to run, so a script that lost its arguments does not pass (git does the same).
  if (argc <= 1) {
    fmt::print("{}", app.help());
    return opgate::cli::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped command makes CLI11 say "A subcommand is required" or name a missing option of
    // the command it did reach; the typo is the news.
    const std::string typo = unknown_command(app, argc, argv);
    fmt::print(stderr, "opgate: error: {}\n", typo.empty() ? name_env_source(app, e.what(), argc, argv) : typo);
    return opgate::cli::kExitUsage;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever escapes a sub-command (an allocation that failed after all, a library throwing on
  // input no check foresaw) ends as one line and exit 2, never as an abort with a core dump.
  try {
    return run_cli(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fputs("opgate: error: out of memory (lower the input size or raise --max-case-bytes only if the "
               "machine has the memory)\n",
               stderr);
  } catch (const std::exception& e) {
    std::string what = e.what();
    for (char& ch : what) ch = ch == '\n' ? ' ' : ch;
    if (what.size() > 300) what = what.substr(0, 300) + "...";
    fmt::print(stderr, "opgate: error: internal error: {}\n", what);
  } catch (...) {
    std::fputs("opgate: error: internal error: unknown exception\n", stderr);
  }
  return opgate::cli::kExitUsage;
}
