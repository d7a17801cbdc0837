// `opgate golden regen` and `verify` (golden-format.md); `diff` is in cmd_golden_diff.cpp.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/golden.h"
#include "harness/golden_folder.h"
#include "cases/registry.h"
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

// The operator stems folders are listed for: --op, else the operators of the --cases files.
Expected<std::vector<std::string>> selected_stems(const Selection& sel, const std::vector<Case>& cases) {
  std::set<std::string> stems;
  for (const auto& name : sel.ops) {
    OPGATE_ASSIGN_OR_RETURN(const OpInfo* op, resolve_op(name));
    stems.insert(op->stem);
  }
  if (stems.empty() && !sel.files.empty()) {
    for (const auto& c : cases) stems.insert(c.op);
  }
  return std::vector<std::string>(stems.begin(), stems.end());
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
    // Only a regeneration of each operator's whole set knows which folders no case holds any more.
    auto shard = selected_shard(o->sel);
    if (!shard) {
      exit_code = fail(shard.status());
      return;
    }
    const bool whole_sets = o->sel.files.empty() && o->sel.filter.empty() && shard->second == 1;
    const std::string out = o->out.empty() ? root + "/golden" : o->out;
    // Golden case ids by operator stem. An operator without any case read (no smoke or regression
    // file under this root) has no entry, so its folders are never taken for stale.
    std::map<std::string, std::set<std::string>> golden_ids;
    std::vector<const Case*> todo;
    std::vector<std::string> skipped;
    for (const auto& c : *cases) {
      std::set<std::string>& ids = golden_ids[c.op];
      if (c.expect != 0) {  // rejected calls have no outputs to freeze
        skipped.push_back(fmt::format("skipped {}: expects aclnn code {} (a rejected call has no outputs)",
                                      case_where(c), c.expect));
        continue;
      }
      ids.insert(c.id);
      todo.push_back(&c);
    }
    if (todo.empty()) {
      exit_code = fail(parse_error(
          cases->empty() ? "golden regen: the selection holds no case (check --op, --cases and --filter)"
                         : fmt::format("golden regen: nothing to regenerate: all {} selected case(s) expect an aclnn "
                                       "error code, and rejected calls have no golden files",
                                       cases->size())));
      return;
    }
    // Every case is checked before any folder is written: a bad case must not leave a
    // regeneration half applied.
    for (const Case* c : todo) {
      auto checked = golden_folder::checked_inputs(*c);
      if (!checked) {
        exit_code = fail(checked.status());
        return;
      }
    }
    for (const auto& [stem, ids] : golden_ids) {
      for (const auto& line : clean_golden_leftovers(out, stem)) fmt::print("{}\n", line);
    }
    for (const auto& line : skipped) fmt::print("{}\n", line);
    for (const Case* c : todo) {
      Status st = regenerate_golden(out, *c, harness_version());
      if (!st.is_ok()) {
        exit_code = fail(st.with_context(case_where(*c)));
        return;
      }
      fmt::print("wrote {}\n", golden_case_dir(out, c->op, c->id));
    }
    if (!whole_sets) return;
    for (const auto& [stem, ids] : golden_ids) {
      auto removed = remove_stale_golden(out, stem, ids);
      if (!removed) {
        exit_code = fail(removed.status());
        return;
      }
      for (const auto& dir : *removed) fmt::print("removed {}\n", dir);
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
    // As for `run`: a case file whose case does not make a problem (bad params, over
    // --max-case-bytes) is bad input, exit 2, before any folder is judged by it.
    for (const auto& c : *current) {
      if (auto problem = make_problem(c); !problem) {
        exit_code = fail(problem.status());
        return;
      }
    }
    // Only the operators the case files cover: another operator's folders are not "removed".
    std::vector<std::string> stems, dirs;
    if (o->sel.ops.empty() && o->sel.files.empty()) {
      for (const auto& op : all_ops()) stems.push_back(op.stem);
      dirs = list_golden_dirs(root);  // folders of operators outside this build too
    } else {
      auto selected = selected_stems(o->sel, *current);
      if (!selected) {
        exit_code = fail(selected.status());
        return;
      }
      stems = *selected;
      for (const auto& stem : stems) {
        auto d = list_golden_dirs(root, stem);
        dirs.insert(dirs.end(), d.begin(), d.end());
      }
      std::sort(dirs.begin(), dirs.end());
    }
    // Every case golden files are made from must have its folder: `run --against golden` refuses
    // a selection where one is missing. Known for the repository's golden/ and for an explicit
    // --op or --cases; a folder given by --out alone may have been made from any subset.
    const bool complete_set = o->out.empty() || !o->sel.ops.empty() || !o->sel.files.empty();
    std::vector<std::string> missing;
    for (const auto& c : *current) {
      if (!complete_set) break;
      if (c.expect != 0 || std::find(stems.begin(), stems.end(), c.op) == stems.end()) continue;
      const std::string dir = golden_case_dir(root, c.op, c.id);
      if (!std::binary_search(dirs.begin(), dirs.end(), dir)) {
        missing.push_back(fmt::format("MISSING  {}: no golden folder for {}; run `opgate golden regen`", dir,
                                      case_where(c)));
      }
    }
    std::vector<std::string> leftovers;
    for (const auto& stem : stems) {
      for (const auto& l : find_golden_leftovers(root, stem)) {
        leftovers.push_back(fmt::format(
            "INTERRUPTED {}: {} of an interrupted regen (pid {}{}); `opgate golden regen --op {}` {}", l.path,
            l.old ? "the previous folder of case '" + l.id + "', moved aside" : "a half-written folder",
            l.pid, l.owner_running ? ", still running" : "", stem, l.old ? "recovers or removes it" : "removes it"));
      }
    }
    if (dirs.empty() && missing.empty() && leftovers.empty()) {
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
    for (const auto& line : missing) fmt::print("{}\n", line);
    for (const auto& line : leftovers) fmt::print("{}\n", line);
    fmt::print("golden: {} case(s), {} ok, {} mismatched, {} missing, {} interrupted regen(s)\n", dirs.size(),
               dirs.size() - static_cast<size_t>(bad), bad, missing.size(), leftovers.size());
    exit_code = bad > 0 || !missing.empty() || !leftovers.empty() ? 1 : 0;
  });

  add_golden_diff(golden, exit_code);
}

}  // namespace opgate::cli
