// Golden folders: atomic regeneration, reading for `run --against golden`, listing, and the case a
// folder is made from (golden-format.md). Verification is in golden_verify.cpp.
#include "harness/golden.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "harness/golden_folder.h"
#include "core/json_read.h"
#include "core/npy.h"

namespace opgate {

using golden_folder::is_dir;
using golden_folder::remove_tree;

namespace {

void collect_differences(const nlohmann::json& before, const nlohmann::json& after, const std::string& at,
                         std::vector<CaseFieldDiff>& out) {
  if (before.is_object() && after.is_object()) {
    std::set<std::string> keys;
    for (auto it = before.begin(); it != before.end(); ++it) keys.insert(it.key());
    for (auto it = after.begin(); it != after.end(); ++it) keys.insert(it.key());
    for (const auto& k : keys) {
      const nlohmann::json none;
      collect_differences(before.contains(k) ? before[k] : none, after.contains(k) ? after[k] : none,
                          at.empty() ? k : at + "." + k, out);
    }
    return;
  }
  if (before == after) return;
  auto text = [](const nlohmann::json& j) {
    std::string s = j.is_null() ? "absent" : j.dump();
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  };
  out.push_back(CaseFieldDiff{at, text(before), text(after)});
}

}  // namespace

std::vector<CaseFieldDiff> case_differences(const nlohmann::json& before, const nlohmann::json& after) {
  std::vector<CaseFieldDiff> out;
  collect_differences(before, after, "", out);
  return out;
}

nlohmann::json golden_case_json(const Case& c, const Problem& problem) {
  Case resolved = c;
  resolved.params = problem.params_json();
  return case_to_json(resolved);
}

std::string golden_case_dir(const std::string& root, const std::string& stem, const std::string& id) {
  return root + "/" + stem + "/" + id;
}

namespace {

// The files of `dir` (regular files below it; nullopt when a link or anything else is there).
std::optional<size_t> count_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t files = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_symlink(ec) || !(it->is_regular_file(ec) || it->is_directory(ec))) return std::nullopt;
    files += it->is_regular_file(ec) ? 1 : 0;
  }
  if (ec) return std::nullopt;
  return files;
}

// Whether the folder `dir` already holds `computed` byte for byte, its manifest differing at most
// in harness_version: regen then leaves it alone, so a one-case change is a one-folder diff.
bool holds_same_folder(const std::string& dir, const golden_folder::Computed& computed) {
  if (!golden_folder::is_dir(dir) || count_files(dir) != computed.files.size()) return false;
  for (const auto& f : computed.files) {
    auto bytes = read_file_bounded(dir + "/" + f.rel, f.bytes.size(), "golden file");
    if (!bytes) return false;
    if (f.rel != "manifest.json") {
      if (*bytes != f.bytes) return false;
      continue;
    }
    auto old_manifest = nlohmann::json::parse(*bytes, nullptr, false);
    auto new_manifest = nlohmann::json::parse(f.bytes, nullptr, false);
    if (!old_manifest.is_object() || !new_manifest.is_object()) return false;
    old_manifest.erase("harness_version");
    new_manifest.erase("harness_version");
    if (old_manifest != new_manifest) return false;
  }
  return true;
}

}  // namespace

Status regenerate_golden(const std::string& root, const Case& c, const std::string& harness_version, bool* written) {
  OPGATE_ASSIGN_OR_RETURN(golden_folder::Computed computed, golden_folder::compute(c, harness_version));
  const bool same = holds_same_folder(golden_case_dir(root, c.op, c.id), computed);
  if (written != nullptr) *written = !same;
  return same ? Status::ok() : golden_folder::install_folder(root, c, computed);
}

Status golden_folder::install_folder(const std::string& root, const Case& c, const Computed& computed) {
  const std::string final_dir = golden_case_dir(root, c.op, c.id);
  const std::string tmp = fmt::format("{}/{}/.{}.tmp.{}", root, c.op, c.id, getpid());
  const std::string old = fmt::format("{}/{}/.{}.old.{}", root, c.op, c.id, getpid());
  remove_tree(tmp);
  OPGATE_TRY(make_dirs(tmp + "/inputs"));
  OPGATE_TRY(make_dirs(tmp + "/expected"));
  for (const auto& f : computed.files) {
    Status st = write_file_atomic(tmp + "/" + f.rel, f.bytes);
    if (!st.is_ok()) {
      remove_tree(tmp);
      return st;
    }
  }
  // Swap folders: the case is either the old or the new one, never half-written.
  const bool had_old = is_dir(final_dir);
  if (had_old && rename(final_dir.c_str(), old.c_str()) != 0) {
    remove_tree(tmp);
    return io_error(fmt::format("{}: cannot move aside: {}", final_dir, std::strerror(errno)));
  }
  if (rename(tmp.c_str(), final_dir.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    if (had_old) rename(old.c_str(), final_dir.c_str());
    remove_tree(tmp);
    return io_error(fmt::format("{}: cannot install: {}", final_dir, err));
  }
  if (had_old) remove_tree(old);
  return Status::ok();
}

std::string golden_format1_note(size_t count) {
  return fmt::format("note: {} golden case(s) are format 1, which stores no tolerance magnitudes: their references "
                     "are recomputed for the magnitudes (and cross-checked); `opgate golden regen` writes format 2",
                     count);
}

std::string golden_tolerance_problem(const std::string& dir, const GoldenCase& g, const Problem& problem,
                                     FillMode fill) {
  if (!g.stores_tolerances()) return "";
  const ComparePlan plan = problem.compare_plan(RefOutputs{g.expected, g.magnitude, g.care, g.slack, {}}, fill);
  if (!g.slack.empty()) {
    return fmt::format("{}/expected/{}.slack.npy: this opgate's comparison has no slack term (no reference returns "
                       "one), so it cannot honour the file",
                       dir, g.slack.begin()->first);
  }
  if (const auto unsound = golden_folder::unsound_tolerance(plan, RefOutputs{g.expected, g.magnitude, g.care, g.slack, {}})) {
    return fmt::format("{}/{}: {} ({}) accepts any value there; `opgate golden regen` no longer writes it", dir,
                       unsound->file, golden_folder::kUnsoundTolerance, unsound->what);
  }
  for (const OutputCheck& check : plan.outputs) {
    if (check.kind == CheckKind::kTolerance && check.tol.standard == Standard::kBound && g.expected.count(check.name) &&
        !g.magnitude.count(check.name)) {
      return fmt::format("{}/expected/{}.mag.npy: missing: a format 2 golden case holds the magnitudes of every "
                         "output checked with the bound standard; run `opgate golden regen`",
                         dir, check.name);
    }
  }
  return "";
}

Expected<std::vector<std::string>> remove_stale_golden(const std::string& root, const std::string& stem,
                                                       const std::set<std::string>& keep) {
  std::vector<std::string> removed;
  for (const auto& dir : list_golden_dirs(root, stem)) {
    const std::string id = golden_folder::last_part(dir);
    if (keep.count(id)) continue;
    const std::string aside = fmt::format("{}/{}/.{}.old.{}", root, stem, id, getpid());
    remove_tree(aside);
    if (rename(dir.c_str(), aside.c_str()) != 0) {
      return io_error(fmt::format("{}: cannot remove: {}", dir, std::strerror(errno)));
    }
    remove_tree(aside);
    removed.push_back(dir);
  }
  return removed;
}

namespace {

// ".<id>.old.<pid>" / ".<id>.tmp.<pid>" -> the leftover; false for any other name.
bool parse_leftover(const std::string& name, GoldenLeftover& out) {
  if (name.size() < 8 || name[0] != '.') return false;
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 >= name.size()) return false;
  const std::string pid = name.substr(dot + 1);
  if (pid.size() > 10 || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  const size_t kind_at = dot >= 4 ? dot - 4 : std::string::npos;
  if (kind_at == std::string::npos || kind_at < 2) return false;
  const std::string kind = name.substr(kind_at, 4);
  if (kind != ".old" && kind != ".tmp") return false;
  out.id = name.substr(1, kind_at - 1);
  out.old = kind == ".old";
  out.pid = std::stol(pid);
  return !out.id.empty();
}

bool process_running(long pid) { return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

}  // namespace

std::vector<GoldenLeftover> find_golden_leftovers(const std::string& root, const std::string& stem) {
  std::vector<GoldenLeftover> out;
  const std::string op_dir = root + "/" + stem;
  DIR* d = opendir(op_dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    GoldenLeftover l;
    if (!parse_leftover(e->d_name, l)) continue;
    l.path = op_dir + "/" + e->d_name;
    l.owner_running = l.pid != getpid() && process_running(l.pid);
    out.push_back(l);
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const GoldenLeftover& a, const GoldenLeftover& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> clean_golden_leftovers(const std::string& root, const std::string& stem) {
  std::vector<std::string> lines;
  for (const auto& l : find_golden_leftovers(root, stem)) {
    if (l.owner_running) {
      lines.push_back(fmt::format("skipped {}: the regen that made it (pid {}) is still running", l.path, l.pid));
      continue;
    }
    const std::string case_dir = golden_case_dir(root, stem, l.id);
    if (l.old && !is_dir(case_dir) && rename(l.path.c_str(), case_dir.c_str()) == 0) {
      lines.push_back(fmt::format("recovered {} from {} (a regen was cut between its two renames)", case_dir, l.path));
      continue;
    }
    remove_tree(l.path);
    lines.push_back(fmt::format("removed leftover {} (of an interrupted regen, pid {})", l.path, l.pid));
  }
  return lines;
}

std::vector<std::string> stray_golden_files(const std::string& dir) {
  std::vector<std::string> out;
  auto scan = [&](const std::string& sub, auto&& allowed) {
    const std::string at = sub.empty() ? dir : dir + "/" + sub;
    DIR* d = opendir(at.c_str());
    if (d == nullptr) return;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (const char* why = allowed(name, at + "/" + name)) out.push_back(fmt::format("{}/{}: {}", at, name, why));
    }
    closedir(d);
  };
  auto temporary = [](const std::string& name) { return name.find(".tmp.") != std::string::npos; };
  scan("", [&](const std::string& name, const std::string& path) -> const char* {
    if (temporary(name)) return "temporary file of an interrupted write";
    if (name == "case.json" || name == "manifest.json") return nullptr;
    if ((name == "inputs" || name == "expected") && is_dir(path)) return nullptr;
    return "stray file (a golden folder holds case.json, manifest.json, inputs/ and expected/ only)";
  });
  for (const std::string sub : {"inputs", "expected"}) {
    scan(sub, [&](const std::string& name, const std::string& path) -> const char* {
      if (temporary(name)) return "temporary file of an interrupted write";
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 && name[0] != '.' && !is_dir(path)) {
        return nullptr;
      }
      return "stray file (only <name>.npy tensor files belong here)";
    });
  }
  std::sort(out.begin(), out.end());
  return out;
}

Expected<GoldenCase> read_golden(const std::string& dir) {
  if (!is_dir(dir)) {
    return io_error(dir + ": no golden folder (golden files exist for the smoke and regression cases; "
                          "`opgate golden regen` writes them)");
  }
  golden_folder::LoadedFolder f = golden_folder::load_folder(dir);
  if (!f.problems.empty()) {
    const std::string more =
        f.problems.size() == 1
            ? ""
            : fmt::format(" (and {} more problem(s); see `opgate golden verify`)", f.problems.size() - 1);
    return parse_error(f.problems.front() + more);
  }
  GoldenCase g;
  OPGATE_ASSIGN_OR_RETURN(g.case_json, parse_json_bounded(f.case_text, dir + "/case.json"));
  g.manifest = std::move(f.manifest);
  g.format = g.manifest["format"].get<int>();  // load_folder accepted it
  for (auto& [rel, t] : f.tensors) {
    if (rel.rfind("inputs/", 0) == 0) g.inputs[rel.substr(7, rel.size() - 11)] = t;  // "inputs/<name>.npy"
  }
  RefOutputs stored = golden_folder::stored_outputs(f.tensors);
  g.expected = std::move(stored.expected);
  g.care = std::move(stored.care);
  g.magnitude = std::move(stored.magnitude);
  g.slack = std::move(stored.slack);
  return g;
}

std::vector<std::string> list_golden_dirs(const std::string& root, const std::string& stem) {
  std::vector<std::string> out;
  DIR* top = opendir(root.c_str());
  if (top == nullptr) return out;
  while (dirent* op = readdir(top)) {
    const std::string op_name = op->d_name;
    if (op_name[0] == '.' || (!stem.empty() && op_name != stem)) continue;
    const std::string op_dir = root + "/" + op_name;
    if (!is_dir(op_dir)) continue;
    if (DIR* d = opendir(op_dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name[0] == '.') continue;
        if (is_dir(op_dir + "/" + name)) out.push_back(op_dir + "/" + name);
      }
      closedir(d);
    }
  }
  closedir(top);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace opgate
