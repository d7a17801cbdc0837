// `opgate list`: operators, defects, and the expanded cases with their effective params.
#include <fmt/format.h>

#include "core/backend.h"
#include "core/op_registry.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {

void add_list(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "List operators, defects, or the cases a selection expands to");
  struct Opts {
    Selection sel;
    std::string root;
    bool ops = false, defects = false, params = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--op", o->sel.ops, "Operator stem, aclnn name or short name");
  cmd->add_option("--tier", o->sel.tiers, "Case tier(s): smoke, ci, nightly, regression, invalid");
  cmd->add_option("--cases", o->sel.files, "Case file(s) instead of --op/--tier");
  cmd->add_option("--filter", o->sel.filter, "Regex on case id or tag");
  add_shard_flags(cmd, o->sel);
  cmd->add_option("--root", o->root, "Repository root holding cases/ and golden/");
  cmd->add_flag("--ops", o->ops, "List the operators");
  cmd->add_flag("--defects", o->defects, "List the fault backend's defects");
  cmd->add_flag("--params", o->params, "Print each case's effective params");
  cmd->callback([o, &exit_code] {
    if (o->ops) {
      for (const auto& op : all_ops()) {
        fmt::print("{:<32} aclnn{:<28} {:<6} reference v{}\n", op.stem, op.aclnn_name, op.short_name,
                   op.reference_version);
      }
      return;
    }
    if (o->defects) {
      for (const auto& d : all_defects()) fmt::print("fault:{:<44} {}\n", d.name, d.description);
      return;
    }
    if (o->sel.tiers.empty() && o->sel.files.empty()) o->sel.tiers = {"smoke", "ci", "nightly", "regression", "invalid"};
    auto cases = select_cases(repo_root(o->root), o->sel);
    if (!cases) {
      exit_code = fail(cases.status());
      return;
    }
    for (const auto& c : *cases) {
      auto problem = make_problem(c);
      if (!problem) {
        exit_code = fail(problem.status());
        return;
      }
      const std::string expect = c.expect == 0 ? "ok" : std::to_string(c.expect);
      fmt::print("{:<44} {:<10} {:<11} seed {:<6} expect {}\n", c.id, c.tier, fill_mode_name(c.fill), c.seed, expect);
      if (o->params) fmt::print("    {}\n", (*problem)->params_json().dump());
    }
    fmt::print("{} case(s)\n", cases->size());
  });
}

}  // namespace opgate::cli
