// The sub-commands of the opgate binary, each defined in its own cmd_*.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace opgate::cli {

// Each adds its sub-command to `app`; when it runs, it stores its exit code in `exit_code`.
void add_list(CLI::App& app, int& exit_code);
void add_run(CLI::App& app, int& exit_code);
void add_repro(CLI::App& app, int& exit_code);
void add_golden(CLI::App& app, int& exit_code);
// The `diff` sub-command of `golden` (cmd_golden_diff.cpp).
void add_golden_diff(CLI::App* golden, int& exit_code);
void add_merge(CLI::App& app, int& exit_code);
void add_baseline(CLI::App& app, int& exit_code);
void add_gen(CLI::App& app, int& exit_code);
void add_shrink(CLI::App& app, int& exit_code);
void add_fuzz(CLI::App& app, int& exit_code);
void add_fuzz_seeds(CLI::App& app, int& exit_code);
void add_history(CLI::App& app, int& exit_code);
void add_hunt(CLI::App& app, int& exit_code);

}  // namespace opgate::cli
