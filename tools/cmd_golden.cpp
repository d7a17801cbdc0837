// `opgate golden regen`, `verify` and `diff` (golden-format.md).
#include <cstdlib>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "core/golden.h"
#include "core/golden_diff.h"
#include "core/op_registry.h"
#include "core/version.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

// The cases golden folders are made from: the smoke and regression tiers, or the given files.
Expected<std::vector<Case>> golden_cases(const std::string& root, const Selection& sel) {
  if (!sel.files.empty()) return select_cases(root, sel);
  std::vector<std::string> ops = sel.ops;
  if (ops.empty()) {
    for (const auto& op : all_ops()) ops.push_back(op.stem);
  }
  std::vector<Case> cases;
  for (const auto& op : ops) {
    for (const std::string tier : {"smoke", "regression"}) {
      Selection one = sel;
      one.ops = {op};
      one.tiers = {tier};
      auto more = select_cases(root, one);
      if (!more) {
        // A missing tier file is fine here: not every operator has regression cases yet.
        if (more.status().message().find("no such case file") != std::string::npos) continue;
        return more.status();
      }
      cases.insert(cases.end(), more->begin(), more->end());
    }
  }
  return cases;
}

}  // namespace

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
    auto cases = golden_cases(root, o->sel);
    if (!cases) {
      exit_code = fail(cases.status());
      return;
    }
    const std::string out = o->out.empty() ? root + "/golden" : o->out;
    for (const auto& c : *cases) {
      if (c.expect != 0) continue;  // rejected calls have no outputs to freeze
      Status st = regenerate_golden(out, c, harness_version());
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
  verify->add_option("--cases", o->sel.files,
                     "Case file(s) the folders were made from (default: smoke and regression)");
  verify->add_option("--root", o->root, "Repository root holding cases/ and golden/");
  verify->callback([o, &exit_code] {
    const std::string root = o->out.empty() ? repo_root(o->root) + "/golden" : o->out;
    // Each folder is checked against the case of its id in these (DESIGN: golden = smoke + regression).
    auto current = golden_cases(repo_root(o->root), o->sel);
    if (!current) {
      exit_code = fail(current.status());
      return;
    }
    std::vector<std::string> dirs;
    if (o->sel.ops.empty()) {
      dirs = list_golden_dirs(root);
    } else {
      for (const auto& name : o->sel.ops) {
        auto op = resolve_op(name);
        if (!op) {
          exit_code = fail(op.status());
          return;
        }
        auto d = list_golden_dirs(root, (*op)->stem);
        dirs.insert(dirs.end(), d.begin(), d.end());
      }
    }
    if (dirs.empty()) {
      exit_code = fail(io_error(fmt::format("{}: no golden cases found", root)));
      return;
    }
    int bad = 0;
    for (const auto& dir : dirs) {
      GoldenCheck g = verify_golden(dir, *current);
      if (g.ok) {
        fmt::print("ok       {}\n", dir);
        continue;
      }
      ++bad;
      std::string also;
      for (size_t i = 1; i < g.causes.size(); ++i) also += (i == 1 ? " (also: " : ", ") + g.causes[i];
      fmt::print("MISMATCH {}: {}{}\n", dir, g.cause, also.empty() ? "" : also + ")");
      for (const auto& d : g.details) fmt::print("    {}\n", d);
    }
    fmt::print("golden: {} case(s), {} ok, {} mismatched\n", dirs.size(), dirs.size() - static_cast<size_t>(bad), bad);
    exit_code = bad > 0 ? 1 : 0;
  });

  auto* diff = golden->add_subcommand("diff", "Review a golden change: what moved, by how many device ulps");
  auto old_root = std::make_shared<std::string>();
  auto rev = std::make_shared<std::string>();
  diff->add_option("old", *old_root, "The golden root before the change (or use --rev)");
  diff->add_option("--rev", *rev, "Compare with golden/ as committed in this git revision (e.g. HEAD, main)");
  diff->add_option("--op", o->sel.ops, "Operator(s) (default: all)");
  diff->add_option("--out", o->out, "The golden root after the change (default <root>/golden)");
  diff->add_option("--root", o->root, "Repository root");
  diff->callback([o, old_root, rev, &exit_code] {
    const std::string root = repo_root(o->root);
    const std::string now = o->out.empty() ? root + "/golden" : o->out;
    if (old_root->empty() == rev->empty()) {
      exit_code = fail(parse_error("golden diff: give either the old golden root or --rev REV"));
      return;
    }
    GoldenTreeDiff total;
    std::vector<std::string> stems;
    for (const auto& name : o->sel.ops) {
      auto op = resolve_op(name);
      if (!op) {
        exit_code = fail(op.status());
        return;
      }
      stems.push_back((*op)->stem);
    }
    if (stems.empty()) stems.push_back("");
    std::string before = *old_root, label = *old_root, scratch;
    if (!rev->empty()) {
      // The revision's golden/ is extracted with git into a scratch folder.
      if (!std::regex_match(*rev, std::regex("[A-Za-z0-9._/~^@{}-]+"))) {
        exit_code = fail(parse_error(fmt::format("--rev '{}': not a git revision name", *rev)));
        return;
      }
      char tmpl[] = "/tmp/opgate_golden_XXXXXX";
      if (mkdtemp(tmpl) == nullptr) {
        exit_code = fail(io_error("golden diff: cannot create a scratch folder in /tmp"));
        return;
      }
      const std::string cmd = fmt::format("git -C '{}' archive --format=tar '{}' golden 2>/dev/null | tar -x -C '{}' 2>/dev/null", root, *rev,
                                          tmpl);
      if (root.find('\'') != std::string::npos || std::system(cmd.c_str()) != 0 ||
          !std::filesystem::is_directory(std::string(tmpl) + "/golden")) {
        std::error_code ignored;
        std::filesystem::remove_all(tmpl, ignored);
        exit_code = fail(io_error(fmt::format("golden diff: cannot extract golden/ of revision '{}' from {}", *rev, root)));
        return;
      }
      scratch = tmpl;
      before = scratch + "/golden";
      label = *rev;
    }
    for (const auto& dir : {before, now}) {
      if (!std::filesystem::is_directory(dir)) {
        exit_code = fail(io_error(fmt::format("{}: no such golden folder", dir)));
        return;
      }
    }
    for (const auto& stem : stems) {
      GoldenTreeDiff d = diff_golden_trees(before, now, stem);
      total.cases.insert(total.cases.end(), d.cases.begin(), d.cases.end());
    }
    std::error_code ignored;
    if (!scratch.empty()) std::filesystem::remove_all(scratch, ignored);
    if (total.cases.empty()) {
      exit_code = fail(io_error(fmt::format("{} and {}: no golden cases found", before, now)));
      return;
    }
    fmt::print("{}", golden_diff_text(total, label, now));
    // Like diff(1): 0 identical, 1 different.
    exit_code = total.count("identical") == static_cast<int64_t>(total.cases.size()) ? 0 : 1;
  });
}

}  // namespace opgate::cli
