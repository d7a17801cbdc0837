// What `opgate run` prints for people (pytest/ctest habits, issue 24): one short line per passing
// case, failing lines in red with their worst elements and repro, an end-of-run list of every
// failed case, and a totals line with the wall time. Colour only on a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/report_folder.h"
#include "core/result.h"

namespace opgate::cli {

enum class ColorMode { kAuto, kAlways, kNever };

// --color auto: on a terminal without NO_COLOR or CI in the environment (present with any value,
// even empty: https://no-color.org); always and never as named.
bool color_enabled(ColorMode mode, bool stdout_is_tty, bool no_color_set, bool ci_set);
bool color_enabled_for_this_process(ColorMode mode);

struct ConsoleStyle {
  bool color = false;
  bool verbose = false;  // -v: passing lines carry each output's check, failures more elements
  bool strict = false;   // --strict: MISTRUSTED fails, so it is red and in the end list
};

// One case as it finishes: "[  12/228] PASSED  <id>  4.1 ms" (with -v each output's check), or the
// red verdict line of a failure with its worst elements and the repro.
std::string case_text(const CaseResult& r, size_t n, size_t total, const ConsoleStyle& style);

// "failed cases (N):" and for each failing result its verdict, id, one-line reason and repro;
// "" when none failed.
std::string failed_list(const std::vector<CaseResult>& results, const ConsoleStyle& style);

// "48 failed, 180 passed in 1.1 s": the non-zero counts, failing kinds first, and the wall time.
std::string totals_line(const VerdictCounts& counts, double wall_s, const ConsoleStyle& style);

// A reason or id as the terminal shows it: control bytes (ESC sequences, line breaks) cannot
// recolour or break the output.
std::string console_text(const std::string& text);

}  // namespace opgate::cli
