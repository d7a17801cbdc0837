#include "tools/run_console.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "core/markup.h"
#include "reports/result_text.h"

namespace opgate::cli {
namespace {

constexpr const char* kRed = "\033[1;31m";
constexpr const char* kGreen = "\033[32m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kReset = "\033[0m";
// Worst elements per failing output on the terminal: the worst says what is wrong; -v and `repro`
// show more.
constexpr int kPoints = 1, kVerbosePoints = 5;

std::string paint(const std::string& text, const char* colour, const ConsoleStyle& style) {
  return style.color ? colour + text + kReset : text;
}

const char* verdict_colour(Verdict v, const ConsoleStyle& style) {
  if (verdict_fails(v, style.strict)) return kRed;
  return v == Verdict::kPassed || v == Verdict::kExpectedReject ? kGreen : kYellow;
}

// The verdict word padded to its column; the padding stays outside the colour codes.
std::string verdict_cell(Verdict v, const ConsoleStyle& style) {
  const std::string name = verdict_name(v);
  return paint(name, verdict_colour(v, style), style) + std::string(name.size() < 13 ? 13 - name.size() : 1, ' ');
}

// "y exact ulp<=0, groupList exact ulp<=0": each compared output's check (passing lines with -v).
std::string headline(const CaseResult& r) {
  std::string s;
  for (const auto& o : r.outputs) {
    const CompareResult& c = o.compare;
    if (c.standard == "undefined") continue;
    s += fmt::format("{}{} {} ulp<={}", s.empty() ? "" : ", ", c.name, c.standard, number_text(c.metrics.max_ulp));
  }
  return s;
}

std::string wall_text(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  const auto whole = static_cast<long long>(std::llround(s));
  return fmt::format("{} s ({}:{:02}:{:02})", whole, whole / 3600, whole / 60 % 60, whole % 60);
}

}  // namespace

bool color_enabled(ColorMode mode, bool stdout_is_tty, bool no_color_set, bool ci_set) {
  if (mode != ColorMode::kAuto) return mode == ColorMode::kAlways;
  return stdout_is_tty && !no_color_set && !ci_set;
}

bool color_enabled_for_this_process(ColorMode mode) {
  return color_enabled(mode, isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR") != nullptr,
                       std::getenv("CI") != nullptr);
}

std::string console_text(const std::string& text) { return printable(text); }

std::string case_text(const CaseResult& r, size_t n, size_t total, const ConsoleStyle& style) {
  const bool detailed = verdict_fails(r.verdict, true);  // MISTRUSTED shows its elements even without --strict
  std::string tail = r.verdict == Verdict::kPassed ? (style.verbose ? headline(r) : "") : console_text(r.reason);
  std::string s = fmt::format("[{:>4}/{}] {}{:<44} {:>8.1f} ms{}{}\n", n, total, verdict_cell(r.verdict, style),
                              console_text(r.id), r.total_ms, tail.empty() ? "" : "  ", tail);
  if (detailed) {
    s += describe_result(r, style.verbose ? kVerbosePoints : kPoints);
    s += fmt::format("    repro: {}\n", console_text(r.repro));
  }
  for (const auto& w : r.warnings) s += paint(fmt::format("    warning: {}", console_text(w)), kYellow, style) + "\n";
  return s;
}

std::string failed_list(const std::vector<CaseResult>& results, const ConsoleStyle& style) {
  std::string items;
  size_t n = 0;
  for (const CaseResult& r : results) {
    if (!verdict_fails(r.verdict, style.strict)) continue;
    ++n;
    items += fmt::format("  {}{}: {}\n      repro: {}\n", verdict_cell(r.verdict, style), console_text(r.id),
                         console_text(r.reason), console_text(r.repro));
  }
  if (n == 0) return "";
  return paint(fmt::format("failed cases ({}):", n), kRed, style) + "\n" + items;
}

std::string totals_line(const VerdictCounts& counts, double wall_s, const ConsoleStyle& style) {
  // Failing kinds first: the number a person looks for leads the line.
  static const std::pair<Verdict, const char*> kOrder[] = {
      {Verdict::kFailed, "failed"},          {Verdict::kBackendError, "backend errors"},
      {Verdict::kInvalidCase, "invalid"},    {Verdict::kTimeout, "timed out"},
      {Verdict::kCrashed, "crashed"},        {Verdict::kMistrusted, "mistrusted"},
      {Verdict::kPassed, "passed"},          {Verdict::kSkipped, "skipped"},
      {Verdict::kExpectedReject, "rejected as expected"}};
  std::string s;
  bool red = false;
  for (const auto& [v, word] : kOrder) {
    const int64_t k = counts[static_cast<size_t>(v)];
    if (k == 0) continue;
    red = red || verdict_fails(v, style.strict);
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, word);
  }
  if (s.empty()) s = "no cases";
  return paint(fmt::format("{} in {}", s, wall_text(wall_s)), red ? kRed : kGreen, style) + "\n";
}

}  // namespace opgate::cli
