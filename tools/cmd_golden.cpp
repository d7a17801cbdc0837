// `opgate golden regen` and `opgate golden verify` (golden-format.md).
#include <fmt/format.h>

#include "core/golden.h"
#include "core/op_registry.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {

void add_golden(CLI::App& app, int& exit_code) {
  auto* golden = app.add_subcommand("golden", "Regenerate or verify golden files");
  golden->require_subcommand(1);
  struct Opts {
    Selection sel;
    std::string root, out;
  };
  auto o = std::make_shared<Opts>();

  auto* regen = golden->add_subcommand("regen", "Recompute golden folders from the smoke and regression cases");
  regen->add_option("--op", o->sel.ops, "Operator(s) (default: all)");
  regen->add_option("--cases", o->sel.files, "Case file(s) instead of the smoke and regression tiers");
  regen->add_option("--filter", o->sel.filter, "Regex on case id or tag");
  regen->add_option("--out", o->out, "Golden root (default <root>/golden)");
  regen->add_option("--root", o->root, "Repository root holding cases/");
  regen->callback([o, &exit_code] {
    const std::string root = repo_root(o->root);
    if (o->sel.files.empty()) o->sel.tiers = {"smoke", "regression"};
    // A missing tier file is fine here: not every operator has regression cases yet.
    Selection sel = o->sel;
    std::vector<Case> cases;
    for (const auto& tier : sel.tiers.empty() ? std::vector<std::string>{""} : sel.tiers) {
      Selection one = sel;
      if (!tier.empty()) one.tiers = {tier};
      auto more = select_cases(root, one);
      if (!more) {
        if (more.status().message().find("no such case file") != std::string::npos) continue;
        exit_code = fail(more.status());
        return;
      }
      cases.insert(cases.end(), more->begin(), more->end());
    }
    const std::string out = o->out.empty() ? root + "/golden" : o->out;
    for (const auto& c : cases) {
      if (c.expect != 0) continue;  // rejected calls have no outputs to freeze
      Status st = regenerate_golden(out, c, OPGATE_HARNESS_VERSION);
      if (!st.is_ok()) {
        exit_code = fail(st);
        return;
      }
      fmt::print("wrote {}\n", golden_case_dir(out, c.op, c.id));
    }
  });

  auto* verify = golden->add_subcommand("verify", "Recompute every golden case and diagnose differences");
  verify->add_option("--op", o->sel.ops, "Operator(s) (default: all)");
  verify->add_option("--out", o->out, "Golden root (default <root>/golden)");
  verify->add_option("--root", o->root, "Repository root");
  verify->callback([o, &exit_code] {
    const std::string root = o->out.empty() ? repo_root(o->root) + "/golden" : o->out;
    std::vector<std::string> dirs;
    if (o->sel.ops.empty()) {
      dirs = list_golden_dirs(root);
    } else {
      for (const auto& name : o->sel.ops) {
        const OpInfo* op = find_op(name);
        if (op == nullptr) {
          exit_code = fail(parse_error(fmt::format("--op '{}': unknown operator (known: {})", name, known_ops_text())));
          return;
        }
        auto d = list_golden_dirs(root, op->stem);
        dirs.insert(dirs.end(), d.begin(), d.end());
      }
    }
    if (dirs.empty()) {
      exit_code = fail(io_error(fmt::format("{}: no golden cases found", root)));
      return;
    }
    int bad = 0;
    for (const auto& dir : dirs) {
      GoldenCheck g = verify_golden(dir);
      if (g.ok) {
        fmt::print("ok       {}\n", dir);
        continue;
      }
      ++bad;
      fmt::print("MISMATCH {}: {}\n", dir, g.cause);
      for (const auto& d : g.details) fmt::print("    {}\n", d);
    }
    fmt::print("golden: {} case(s), {} ok, {} mismatched\n", dirs.size(), dirs.size() - static_cast<size_t>(bad), bad);
    exit_code = bad > 0 ? 1 : 0;
  });
}

}  // namespace opgate::cli
