// `opgate golden diff`: review a golden change against a git revision or an old golden folder.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "harness/golden_diff.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

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

void add_golden_diff(CLI::App* golden, int& exit_code) {
  auto* diff = golden->add_subcommand("diff", "Review a golden change: what moved, by how many device ulps");
  struct Opts {
    std::vector<std::string> ops;
    std::string root, out;
    int64_t max_elements = kDiffElements;
  };
  auto o = std::make_shared<Opts>();
  auto old_root = std::make_shared<std::string>();
  auto rev = std::make_shared<std::string>();
  diff->add_option("old", *old_root, "The golden root before the change (or use --rev)");
  diff->add_option("--rev", *rev, "Compare with golden/ as committed in this git revision (e.g. HEAD, main)");
  diff->add_option("--op", o->ops, "Operator(s) (default: all)");
  diff->add_option("--out", o->out, "The golden root after the change (default <root>/golden)");
  diff->add_option("--root", o->root, "Repository root");
  diff->add_option("--max-elements", o->max_elements, "Changed elements listed per tensor (then counts)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  diff->callback([o, old_root, rev, &exit_code] {
    const std::string root = repo_root(o->root);
    const std::string now = o->out.empty() ? root + "/golden" : o->out;
    if (old_root->empty() == rev->empty()) {
      exit_code = fail(parse_error("golden diff: give either the old golden root or --rev REV"));
      return;
    }
    GoldenTreeDiff total;
    std::vector<std::string> stems;
    for (const auto& name : o->ops) {
      auto op = resolve_op(name);
      if (!op) {
        exit_code = fail(op.status());
        return;
      }
      stems.push_back((*op)->stem);
    }
    if (stems.empty()) stems.push_back("");  // every operator
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
    for (const auto& stem : stems) {
      GoldenTreeDiff d = diff_golden_trees(before, now, stem, o->max_elements);
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
