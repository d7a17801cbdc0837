// `opgate golden regen` and `verify` (golden-format.md); `diff` is in cmd_golden_diff.cpp.
#include <algorithm>
#include <map>
#include <regex>
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

struct GoldenOpts {
  Selection sel;
  std::string root, out;
};

// What a regen writes: the cases to freeze, golden case ids by operator stem (an operator without
// any case read has no entry, so its folders are never taken for stale), and the skipped cases.
struct RegenPlan {
  std::map<std::string, std::set<std::string>> golden_ids;
  std::vector<const Case*> todo;
  std::vector<std::string> skipped;
};

RegenPlan regen_plan(const std::vector<Case>& cases) {
  RegenPlan plan;
  for (const auto& c : cases) {
    std::set<std::string>& ids = plan.golden_ids[c.op];
    if (c.expect != 0) {  // rejected calls have no outputs to freeze
      plan.skipped.push_back(fmt::format("skipped {}: expects aclnn code {} (a rejected call has no outputs)",
                                         case_where(c), c.expect));
      continue;
    }
    ids.insert(c.id);
    plan.todo.push_back(&c);
  }
  return plan;
}

Status linked_case_dir(const std::string& dir) {
  return io_error(fmt::format("{}: a symbolic link; golden regen writes and removes real case folders only (replace "
                              "the link by a copy, or regenerate into the folder it points to with --out)",
                              dir));
}

// A case folder that is a link would have its target rewritten or removed: refused before any write.
Status refuse_linked_case_dirs(const RegenPlan& plan, const std::string& out, bool whole_sets) {
  for (const Case* c : plan.todo) {
    const std::string dir = golden_case_dir(out, c->op, c->id);
    if (golden_folder::is_link(dir)) return linked_case_dir(dir).with_context(case_where(*c));
  }
  if (!whole_sets) return Status::ok();
  for (const auto& [stem, ids] : plan.golden_ids) {
    for (const auto& dir : list_golden_dirs(out, stem)) {
      if (!ids.count(golden_folder::last_part(dir)) && golden_folder::is_link(dir)) return linked_case_dir(dir);
    }
  }
  return Status::ok();
}

// Writes the planned folders (after computing every case first: a bad case, or one whose
// tolerances are not finite, must not leave a regeneration half applied; each case is computed
// again when written, so only one case's files are held at a time) and, for whole sets, removes
// the folders no case holds any more.
Status write_golden(const RegenPlan& plan, const std::string& out, bool whole_sets) {
  for (const Case* c : plan.todo) OPGATE_TRY(golden_folder::compute(*c, harness_version()).status());
  OPGATE_TRY(refuse_linked_case_dirs(plan, out, whole_sets));
  for (const auto& [stem, ids] : plan.golden_ids) {
    for (const auto& line : clean_golden_leftovers(out, stem)) fmt::print("{}\n", line);
  }
  for (const auto& line : plan.skipped) fmt::print("{}\n", line);
  for (const Case* c : plan.todo) {
    bool written = false;
    Status st = regenerate_golden(out, *c, harness_version(), &written);
    if (!st.is_ok()) return st.with_context(case_where(*c));
    fmt::print("{} {}\n", written ? "wrote" : "unchanged", golden_case_dir(out, c->op, c->id));
  }
  if (!whole_sets) return Status::ok();
  for (const auto& [stem, ids] : plan.golden_ids) {
    OPGATE_ASSIGN_OR_RETURN(auto removed, remove_stale_golden(out, stem, ids));
    for (const auto& dir : removed) fmt::print("removed {}\n", dir);
  }
  return Status::ok();
}

int regen(const GoldenOpts& o) {
  const std::string root = repo_root(o.root);
  auto cases = golden_cases(root, o.sel);
  if (!cases) return fail(cases.status());
  // Only a regeneration of each operator's whole set knows which folders no case holds any more.
  auto shard = selected_shard(o.sel);
  if (!shard) return fail(shard.status());
  const bool whole_sets = o.sel.files.empty() && o.sel.filter.empty() && shard->second == 1;
  const RegenPlan plan = regen_plan(*cases);
  if (plan.todo.empty()) {
    return fail(parse_error(
        cases->empty() ? "golden regen: the selection holds no case (check --op, --cases and --filter)"
                       : fmt::format("golden regen: nothing to regenerate: all {} selected case(s) expect an aclnn "
                                     "error code, and rejected calls have no golden files",
                                     cases->size())));
  }
  const Status st = write_golden(plan, o.out.empty() ? root + "/golden" : o.out, whole_sets);
  return st.is_ok() ? 0 : fail(st);
}

// The operators whose folders verify judges, and those folders, sorted. Only the operators the
// case files cover: another operator's folders are not "removed".
struct VerifyScope {
  std::vector<std::string> stems, dirs;
};

Expected<VerifyScope> verify_scope(const GoldenOpts& o, const std::string& root, const std::vector<Case>& current) {
  VerifyScope v;
  if (o.sel.ops.empty() && o.sel.files.empty()) {
    for (const auto& op : all_ops()) v.stems.push_back(op.stem);
    v.dirs = list_golden_dirs(root);  // folders of operators outside this build too
    return v;
  }
  OPGATE_ASSIGN_OR_RETURN(v.stems, selected_stems(o.sel, current));
  for (const auto& stem : v.stems) {
    auto d = list_golden_dirs(root, stem);
    v.dirs.insert(v.dirs.end(), d.begin(), d.end());
  }
  std::sort(v.dirs.begin(), v.dirs.end());
  return v;
}

// --filter: only the folders of the selected cases, and those whose id the regex finds (a case
// removed from the files is still judged).
Expected<std::vector<std::string>> filtered_dirs(const std::vector<std::string>& dirs, const std::string& filter,
                                                 const std::vector<Case>& current) {
  if (filter.empty()) return dirs;
  std::regex re;
  try {
    re = std::regex(filter);
  } catch (const std::regex_error& e) {
    return parse_error(fmt::format("--filter '{}': not a regular expression ({})", filter, e.what()));
  }
  std::set<std::string> ids;
  for (const auto& c : current) ids.insert(c.id);
  std::vector<std::string> kept;
  for (const auto& dir : dirs) {
    const std::string id = golden_folder::last_part(dir);
    if (ids.count(id) || std::regex_search(id, re)) kept.push_back(dir);
  }
  return kept;
}

// Every case golden files are made from must have its folder: `run --against golden` refuses a
// selection where one is missing. Known for the repository's golden/ and for an explicit --op or
// --cases; a folder given by --out alone may have been made from any subset.
std::vector<std::string> missing_folders(const GoldenOpts& o, const std::string& root, const VerifyScope& v,
                                         const std::vector<Case>& current) {
  std::vector<std::string> missing;
  if (!(o.out.empty() || !o.sel.ops.empty() || !o.sel.files.empty())) return missing;
  for (const auto& c : current) {
    if (c.expect != 0 || std::find(v.stems.begin(), v.stems.end(), c.op) == v.stems.end()) continue;
    const std::string dir = golden_case_dir(root, c.op, c.id);
    if (!std::binary_search(v.dirs.begin(), v.dirs.end(), dir)) {
      missing.push_back(
          fmt::format("MISSING  {}: no golden folder for {}; run `opgate golden regen`", dir, case_where(c)));
    }
  }
  return missing;
}

std::vector<std::string> leftover_lines(const std::string& root, const std::vector<std::string>& stems) {
  std::vector<std::string> leftovers;
  for (const auto& stem : stems) {
    for (const auto& l : find_golden_leftovers(root, stem)) {
      leftovers.push_back(fmt::format(
          "INTERRUPTED {}: {} of an interrupted regen (pid {}{}); `opgate golden regen --op {}` {}", l.path,
          l.old ? "the previous folder of case '" + l.id + "', moved aside" : "a half-written folder", l.pid,
          l.owner_running ? ", still running" : "", stem, l.old ? "recovers or removes it" : "removes it"));
    }
  }
  return leftovers;
}

// Verifies every folder, printing ok or MISMATCH with its causes; returns how many mismatched.
int verify_folders(const std::vector<std::string>& dirs, const std::vector<Case>& current) {
  int bad = 0;
  for (const auto& dir : dirs) {
    GoldenCheck g = verify_golden(dir, current);
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
  return bad;
}

int verify(const GoldenOpts& o) {
  const std::string root = o.out.empty() ? repo_root(o.root) + "/golden" : o.out;
  // Each folder is checked against the case of its id in these (DESIGN: golden = smoke + regression).
  auto current = golden_cases(repo_root(o.root), o.sel);
  if (!current) return fail(current.status());
  // As for `run`: a case file whose case does not make a problem (bad params, over
  // --max-case-bytes) is bad input, exit 2, before any folder is judged by it.
  for (const auto& c : *current) {
    if (auto problem = make_problem(c); !problem) return fail(problem.status());
  }
  auto scope = verify_scope(o, root, *current);
  if (!scope) return fail(scope.status());
  auto dirs = filtered_dirs(scope->dirs, o.sel.filter, *current);
  if (!dirs) return fail(dirs.status());
  scope->dirs = std::move(*dirs);
  const std::vector<std::string> missing = missing_folders(o, root, *scope, *current);
  const std::vector<std::string> leftovers = leftover_lines(root, scope->stems);
  if (scope->dirs.empty() && missing.empty() && leftovers.empty()) {
    return fail(io_error(fmt::format("{}: no golden cases found", root)));
  }
  const int bad = verify_folders(scope->dirs, *current);
  for (const auto& line : missing) fmt::print("{}\n", line);
  for (const auto& line : leftovers) fmt::print("{}\n", line);
  fmt::print("golden: {} case(s), {} ok, {} mismatched, {} missing, {} interrupted regen(s)\n", scope->dirs.size(),
             scope->dirs.size() - static_cast<size_t>(bad), bad, missing.size(), leftovers.size());
  return bad > 0 || !missing.empty() || !leftovers.empty() ? 1 : 0;
}

}  // namespace

void add_golden(CLI::App& app, int& exit_code) {
  auto* golden = app.add_subcommand("golden", "Regenerate or verify golden files");
  golden->require_subcommand(1);
  auto o = std::make_shared<GoldenOpts>();

  auto* regen_cmd = golden->add_subcommand(
      "regen", "Recompute golden folders (format 2: expected values with their tolerance magnitudes) from the smoke "
               "and regression cases");
  regen_cmd->add_option("--op", o->sel.ops, "Operator(s) (default: all)");
  regen_cmd->add_option("--cases", o->sel.files, "Case file(s) instead of the smoke and regression tiers");
  regen_cmd->add_option("--filter", o->sel.filter, "Regex on case id or tag");
  regen_cmd->add_option("--out", o->out, "Golden root (default <root>/golden)");
  regen_cmd->add_option("--root", o->root, "Repository root holding cases/");
  regen_cmd->callback([o, &exit_code] { exit_code = regen(*o); });

  auto* verify_cmd = golden->add_subcommand("verify", "Recompute every golden case and diagnose differences");
  verify_cmd->add_option("--op", o->sel.ops, "Operator(s) (default: all)");
  verify_cmd->add_option("--filter", o->sel.filter, "Regex on case id or tag: verify only those folders");
  verify_cmd->add_option("--out", o->out, "Golden root (default <root>/golden)");
  verify_cmd->add_option("--cases", o->sel.files,
                         "Case file(s) the folders were made from (default: smoke and regression)");
  verify_cmd->add_option("--root", o->root, "Repository root holding cases/ and golden/");
  verify_cmd->callback([o, &exit_code] { exit_code = verify(*o); });

  add_golden_diff(golden, exit_code);
}

}  // namespace opgate::cli
