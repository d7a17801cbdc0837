// opgate: golden-reference validation and fuzzing harness for Ascend aclnn operators.
// Sub-command dispatch; exit codes: 0 nothing failed, 1 a case failed, 2 usage or harness error.
#include <fmt/format.h>

#include "core/version.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{std::string("opgate ") + opgate::harness_version() +
               ": golden-reference validation and fuzzing harness for Ascend aclnn operators"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(opgate::harness_version()));
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "opgate: error: {}\n", e.what());
    return opgate::cli::kExitUsage;
  }
  return exit_code;
}
