// `opgate golden regen`, `verify` and `diff` (golden-format.md).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

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

// Removes the scratch folder on every way out of `golden diff`.
struct ScratchFolder {
  std::string path;
  ~ScratchFolder() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

// golden/ of a git revision, extracted into `scratch`. Only a full commit hash reaches
// `git archive`, so no revision text is ever read as an option or a path.
Expected<std::string> extract_golden(const std::string& repo, const std::string& rev, ScratchFolder& scratch) {
  if (rev.empty() || rev[0] == '-') return parse_error(fmt::format("--rev '{}': a revision may not start with '-'", rev));
  if (!std::regex_match(rev, std::regex("[A-Za-z0-9._/~^@{}-]+"))) {
    return parse_error(fmt::format("--rev '{}': not a git revision name", rev));
  }
  if (repo.find('\'') != std::string::npos) return io_error(repo + ": --rev needs a repository path without quotes");
  const std::string cmd =
      fmt::format("git -C '{}' rev-parse --verify --quiet --end-of-options '{}^{{commit}}' 2>/dev/null", repo, rev);
  std::string hash;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[128];
    while (fgets(buf, sizeof buf, p) != nullptr) hash += buf;
    if (pclose(p) != 0) hash.clear();
  }
  while (!hash.empty() && (hash.back() == '\n' || hash.back() == '\r')) hash.pop_back();
  if (!std::regex_match(hash, std::regex("[0-9a-f]{40}|[0-9a-f]{64}"))) {
    return io_error(fmt::format("{}: cannot extract golden/ of revision '{}': not a commit here", repo, rev));
  }
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / "opgate_golden_XXXXXX").string();
  if (ec || tmpl.find('\'') != std::string::npos || mkdtemp(tmpl.data()) == nullptr) {
    return io_error(fmt::format("{}: cannot create a scratch folder", tmpl));
  }
  scratch.path = tmpl;
  const std::string archive = fmt::format(
      "git -C '{}' archive --format=tar {} golden 2>/dev/null | tar -x -C '{}' 2>/dev/null", repo, hash, tmpl);
  if (std::system(archive.c_str()) != 0 || !std::filesystem::is_directory(tmpl + "/golden")) {
    return io_error(fmt::format("{}: cannot extract golden/ of revision '{}'", repo, rev));
  }
  return tmpl + "/golden";
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
    for (const auto& c : *cases) {
      std::set<std::string>& ids = golden_ids[c.op];
      if (c.expect != 0) continue;  // rejected calls have no outputs to freeze
      Status st = regenerate_golden(out, c, harness_version());
      if (!st.is_ok()) {
        exit_code = fail(st);
        return;
      }
      ids.insert(c.id);
      fmt::print("wrote {}\n", golden_case_dir(out, c.op, c.id));
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
    // Only the operators the case files cover: another operator's folders are not "removed".
    std::vector<std::string> dirs;
    if (o->sel.ops.empty() && o->sel.files.empty()) {
      dirs = list_golden_dirs(root);
    } else {
      auto stems = selected_stems(o->sel, *current);
      if (!stems) {
        exit_code = fail(stems.status());
        return;
      }
      for (const auto& stem : *stems) {
        auto d = list_golden_dirs(root, stem);
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
    auto stems = selected_stems(o->sel, {});
    if (!stems) {
      exit_code = fail(stems.status());
      return;
    }
    if (stems->empty()) stems->push_back("");
    std::string before = *old_root, label = *old_root;
    ScratchFolder scratch;  // removed on every return below
    if (!rev->empty()) {
      auto extracted = extract_golden(root, *rev, scratch);
      if (!extracted) {
        exit_code = fail(extracted.status());
        return;
      }
      before = *extracted;
      label = *rev;
    }
    for (const auto& dir : {before, now}) {
      if (!std::filesystem::is_directory(dir)) {
        exit_code = fail(io_error(fmt::format("{}: no such golden folder", dir)));
        return;
      }
    }
    for (const auto& stem : *stems) {
      GoldenTreeDiff d = diff_golden_trees(before, now, stem);
      total.cases.insert(total.cases.end(), d.cases.begin(), d.cases.end());
    }
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
