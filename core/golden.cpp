// Golden folders: atomic regeneration and verification with a diagnosis (golden-format.md).
#include "core/golden.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "core/npy.h"
#include "core/op_registry.h"

namespace opgate {
namespace {

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string as_string(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

bool is_dir(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void remove_tree(const std::string& path) {
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string child = path + "/" + name;
      if (is_dir(child)) {
        remove_tree(child);
      } else {
        unlink(child.c_str());
      }
    }
    closedir(d);
  }
  rmdir(path.c_str());
}

struct TensorFile {
  std::string rel;  // "inputs/gradY.npy"
  std::string bytes;
  nlohmann::json meta;
};

TensorFile tensor_file(const std::string& rel, const Tensor& t, DType logical) {
  TensorFile f;
  f.rel = rel;
  f.bytes = as_string(encode_npy(t));
  f.meta = {{"dtype", dtype_name(logical)}, {"shape", t.shape()}, {"sha256", sha256_hex(f.bytes)}};
  if (t.dtype() != logical) f.meta["stored_as"] = dtype_name(t.dtype());
  if (t.dtype() == DType::kBF16) f.meta["stored_as"] = "uint16";
  return f;
}

struct Computed {
  nlohmann::json case_json;
  std::vector<TensorFile> files;
};

// Everything a golden folder holds, computed from the case.
Expected<Computed> compute(const Case& c, const std::string& harness_version) {
  OPGATE_ASSIGN_OR_RETURN(auto problem, make_problem(c));
  Status valid = problem->validate();
  if (!valid.is_ok()) return invalid_case(fmt::format("case '{}': golden cases must be valid calls: {}", c.id, valid.message()));
  OPGATE_ASSIGN_OR_RETURN(TensorMap inputs, problem->fill(c.fill, c.seed));
  OPGATE_TRY(problem->check_data(inputs));
  const RefOutputs ref = problem->reference(inputs);
  const TensorMap packed = problem->pack(inputs);
  Computed out;
  Case resolved = c;
  resolved.params = problem->params_json();
  out.case_json = case_to_json(resolved);
  for (const auto& [name, t] : packed) out.files.push_back(tensor_file("inputs/" + name + ".npy", t, t.dtype()));
  const SpecMap& specs = problem->specs();
  for (const auto& [name, t] : ref.expected) {
    const DType device = specs.count(name) ? specs.at(name).dtype : t.dtype();
    out.files.push_back(tensor_file("expected/" + name + ".npy", t, device));
  }
  for (const auto& [name, t] : ref.care) out.files.push_back(tensor_file("expected/" + name + ".care.npy", t, DType::kU8));
  nlohmann::json manifest{{"format", kGoldenFormat},
                          {"op", problem->op().aclnn_name},
                          {"case_id", c.id},
                          {"reference_version", problem->op().reference_version},
                          {"harness_version", harness_version},
                          {"tensors", nlohmann::json::object()}};
  for (const auto& f : out.files) manifest["tensors"][f.rel] = f.meta;
  out.files.push_back(TensorFile{"manifest.json", manifest.dump(2) + "\n", nlohmann::json()});
  out.files.push_back(TensorFile{"case.json", out.case_json.dump(2) + "\n", nlohmann::json()});
  return out;
}

// Expected values agree when equal up to a few double ulps (libm may differ in the last bit).
bool close_f64(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= 4 * std::fabs(std::nextafter(std::max(std::fabs(a), std::fabs(b)), INFINITY) -
                                           std::max(std::fabs(a), std::fabs(b)));
}

std::string last_part(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string parent_of(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// "inputs/<name>.npy" or "expected/<name>.npy" with a plain name: nothing outside the folder.
bool is_tensor_rel(const std::string& rel) {
  for (const std::string prefix : {"inputs/", "expected/"}) {
    if (rel.rfind(prefix, 0) != 0) continue;
    const std::string name = rel.substr(prefix.size());
    return name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 &&
           name.find('/') == std::string::npos && name.find("..") == std::string::npos;
  }
  return false;
}

std::vector<std::string> npy_files_on_disk(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string sub : {"inputs", "expected"}) {
    if (DIR* d = opendir((dir + "/" + sub).c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string rel = sub + "/" + e->d_name;
        if (is_tensor_rel(rel)) out.push_back(rel);
      }
      closedir(d);
    }
  }
  return out;
}

// A golden folder as read from disk. `problems` (each naming its file) say why it cannot be
// trusted: the manifest breaks the contract or disagrees with its folder, or a tensor file is
// missing, unlisted, undecodable or differs from its digest. read_golden and verify_golden both
// read folders only through this.
struct LoadedFolder {
  std::string case_text;
  nlohmann::json manifest;
  std::map<std::string, Tensor> tensors;  // by "inputs/x.npy", decoded after the digest check
  std::vector<std::string> problems;
};

void check_manifest_fields(const std::string& dir, LoadedFolder& f) {
  const nlohmann::json& m = f.manifest;
  const std::string where = dir + "/manifest.json";
  auto problem = [&](const std::string& what) { f.problems.push_back(fmt::format("{}: {}", where, what)); };
  if (!m.contains("format") || m["format"] != kGoldenFormat) {
    problem(fmt::format("field 'format': {}, this harness reads format {}", m.value("format", nlohmann::json()).dump(),
                        kGoldenFormat));
  }
  const std::string id = last_part(dir);
  if (!m.contains("case_id") || m["case_id"] != id) {
    problem(fmt::format("field 'case_id': {}, but the folder is '{}'", m.value("case_id", nlohmann::json()).dump(),
                        id));
  }
  const OpInfo* op = find_op(last_part(parent_of(dir)));
  if (op == nullptr || !m.contains("op") || m["op"] != op->aclnn_name) {
    problem(fmt::format("field 'op': {}, but the folder is under '{}'", m.value("op", nlohmann::json()).dump(),
                        last_part(parent_of(dir))));
  }
  if (!m.contains("reference_version") || !m["reference_version"].is_number_integer()) {
    problem("field 'reference_version': missing or not an integer");
  }
  if (m.contains("harness_version") && !m["harness_version"].is_string()) {
    problem("field 'harness_version': not a string");
  }
}

void check_tensor_files(const std::string& dir, LoadedFolder& f) {
  const nlohmann::json& tensors = f.manifest["tensors"];
  const std::string where = dir + "/manifest.json";
  bool any_input = false, any_expected = false;
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    const std::string rel = it.key();
    const nlohmann::json& meta = it.value();
    if (!is_tensor_rel(rel)) {
      f.problems.push_back(
          fmt::format("{}: field 'tensors': '{}' is not inputs/<name>.npy or expected/<name>.npy", where, rel));
      continue;
    }
    (rel.rfind("inputs/", 0) == 0 ? any_input : any_expected) = true;
    if (!meta.is_object() || !meta.contains("sha256") || !meta["sha256"].is_string()) {
      f.problems.push_back(fmt::format("{}: field 'tensors.{}.sha256': missing or not a string", where, rel));
      continue;
    }
    const std::string path = dir + "/" + rel;
    auto bytes = read_file(path);
    if (!bytes) {
      f.problems.push_back(bytes.status().message());
    } else if (sha256_hex(*bytes) != meta["sha256"].get<std::string>()) {
      f.problems.push_back(path + ": sha256 differs from manifest.json (file corrupted)");
    } else if (auto t = decode_npy(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), path); !t) {
      f.problems.push_back(t.status().message());
    } else if (meta.contains("shape") && meta["shape"] != nlohmann::json(t->shape())) {
      f.problems.push_back(fmt::format("{}: shape {} but manifest.json says {}", path, shape_to_string(t->shape()),
                                       meta["shape"].dump()));
    } else {
      f.tensors[rel] = *t;
    }
  }
  // The contract requires every tensor argument and every output: a folder without them is broken.
  if (!any_input) f.problems.push_back(where + ": field 'tensors': lists no inputs/<name>.npy");
  if (!any_expected) f.problems.push_back(where + ": field 'tensors': lists no expected/<name>.npy");
  for (const auto& rel : npy_files_on_disk(dir)) {
    if (!tensors.contains(rel)) f.problems.push_back(fmt::format("{}/{}: not listed in manifest.json", dir, rel));
  }
}

LoadedFolder load_folder(const std::string& dir) {
  LoadedFolder f;
  auto manifest_text = read_file(dir + "/manifest.json");
  auto case_text = read_file(dir + "/case.json");
  if (!manifest_text || !case_text) {
    f.problems.push_back(!manifest_text ? manifest_text.status().message() : case_text.status().message());
    return f;
  }
  f.case_text = *case_text;
  try {
    f.manifest = nlohmann::json::parse(*manifest_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error or out_of_range (1e999)
    f.problems.push_back(fmt::format("{}/manifest.json: malformed JSON: {}", dir, e.what()));
    return f;
  }
  if (!f.manifest.is_object() || !f.manifest.contains("tensors") || !f.manifest["tensors"].is_object()) {
    f.problems.push_back(dir + "/manifest.json: field 'tensors': missing or not an object");
    return f;
  }
  check_manifest_fields(dir, f);
  check_tensor_files(dir, f);
  return f;
}

// "params.H: golden 32, case file 64" for every leaf where the two cases differ.
void case_differences(const nlohmann::json& golden, const nlohmann::json& now, const std::string& at,
                      std::vector<std::string>& out) {
  if (golden.is_object() && now.is_object()) {
    std::set<std::string> keys;
    for (auto it = golden.begin(); it != golden.end(); ++it) keys.insert(it.key());
    for (auto it = now.begin(); it != now.end(); ++it) keys.insert(it.key());
    for (const auto& k : keys) {
      const nlohmann::json none;
      case_differences(golden.contains(k) ? golden[k] : none, now.contains(k) ? now[k] : none,
                       at.empty() ? k : at + "." + k, out);
    }
    return;
  }
  if (golden == now) return;
  auto text = [](const nlohmann::json& j) {
    std::string s = j.is_null() ? "absent" : j.dump();
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  };
  out.push_back(fmt::format("{}: golden {}, case file {}", at, text(golden), text(now)));
}

// The golden case against the case files: the case of that id must still exist, unchanged.
void check_against_case_files(const std::string& dir, const nlohmann::json& golden_case, const std::string& stem,
                              const std::vector<Case>& current,
                              const std::function<void(const std::string&, const std::string&)>& fail) {
  const std::string id = last_part(dir);
  const Case* now = nullptr;
  for (const auto& c : current) {
    if (c.op == stem && c.id == id) now = &c;
  }
  if (now == nullptr) {
    fail("case removed",
         fmt::format("{}: no case file holds case '{}' any more; delete the folder or regenerate", dir, id));
    return;
  }
  auto problem = make_problem(*now);
  if (!problem) {
    fail("case changed", fmt::format("{}: {}", dir, problem.status().message()));
    return;
  }
  Case resolved = *now;
  resolved.params = (*problem)->params_json();
  std::vector<std::string> diffs;
  case_differences(golden_case, case_to_json(resolved), "", diffs);
  for (const auto& d : diffs) {
    fail("case changed",
         fmt::format("{}/case.json differs from {}: {}", dir, now->source.empty() ? "the case" : now->source, d));
  }
}

// Most basic first: a later cause may only be a consequence of an earlier one.
int cause_rank(const std::string& cause) {
  static const char* const kOrder[] = {"unreadable", "file corrupted", "case removed", "case changed",
                                       "input generator changed", "reference changed"};
  for (int i = 0; i < 6; ++i) {
    if (cause == kOrder[i]) return i;
  }
  return 6;
}

}  // namespace

std::string golden_case_dir(const std::string& root, const std::string& stem, const std::string& id) {
  return root + "/" + stem + "/" + id;
}

Status regenerate_golden(const std::string& root, const Case& c, const std::string& harness_version) {
  OPGATE_ASSIGN_OR_RETURN(Computed computed, compute(c, harness_version));
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

Expected<GoldenCase> read_golden(const std::string& dir) {
  if (!is_dir(dir)) {
    return io_error(dir + ": no golden folder (golden files exist for the smoke and regression cases; "
                          "`opgate golden regen` writes them)");
  }
  LoadedFolder f = load_folder(dir);
  if (!f.problems.empty()) {
    const std::string more =
        f.problems.size() == 1
            ? ""
            : fmt::format(" (and {} more problem(s); see `opgate golden verify`)", f.problems.size() - 1);
    return parse_error(f.problems.front() + more);
  }
  GoldenCase g;
  try {
    g.case_json = nlohmann::json::parse(f.case_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error or out_of_range (1e999)
    return parse_error(fmt::format("{}/case.json: malformed JSON: {}", dir, e.what()));
  }
  g.manifest = std::move(f.manifest);
  for (auto& [rel, t] : f.tensors) {
    const std::string base = rel.substr(rel.find('/') + 1, rel.size() - rel.find('/') - 5);
    if (rel.rfind("inputs/", 0) == 0) {
      g.inputs[base] = t;
    } else if (base.size() > 5 && base.compare(base.size() - 5, 5, ".care") == 0) {
      g.care[base.substr(0, base.size() - 5)] = t;
    } else {
      g.expected[base] = t;
    }
  }
  return g;
}

std::string golden_values_differ(const Tensor& golden, const Tensor& fresh) {
  if (golden.defined() != fresh.defined()) return golden.defined() ? "no longer computed" : "not in the golden files";
  if (golden.shape() != fresh.shape()) {
    return fmt::format("shape {} vs {}", shape_to_string(golden.shape()), shape_to_string(fresh.shape()));
  }
  int64_t differing = 0, first = -1;
  for (int64_t i = 0; i < fresh.numel(); ++i) {
    if (close_f64(golden.get(i), fresh.get(i))) continue;
    if (differing++ == 0) first = i;
  }
  if (differing == 0) return "";
  return fmt::format("{} of {} elements differ, first at index {}: golden {:.17g}, reference {:.17g}", differing,
                     fresh.numel(), shape_to_string(fresh.unravel(first)), golden.get(first), fresh.get(first));
}

GoldenCheck verify_golden(const std::string& dir, const std::vector<Case>& current) {
  GoldenCheck out;
  out.dir = dir;
  auto fail = [&](const std::string& cause, const std::string& detail) {
    out.ok = false;
    if (std::find(out.causes.begin(), out.causes.end(), cause) == out.causes.end()) out.causes.push_back(cause);
    out.details.push_back(detail);
  };
  auto finish = [&]() {
    std::stable_sort(out.causes.begin(), out.causes.end(),
                     [](const std::string& a, const std::string& b) { return cause_rank(a) < cause_rank(b); });
    out.cause = out.causes.empty() ? "" : out.causes.front();
    return out;
  };
  // 1. The folder fits the contract and every file matches its digest.
  LoadedFolder f = load_folder(dir);
  for (const auto& p : f.problems) fail("file corrupted", p);
  if (!out.ok) return finish();
  auto cases = parse_cases_text(f.case_text, dir + "/case.json");
  if (!cases || cases->size() != 1) {
    fail("unreadable", cases ? dir + "/case.json: holds no single case" : cases.status().message());
    return finish();
  }
  const Case& c = cases->front();
  if (c.id != last_part(dir) || c.op != last_part(parent_of(dir))) {
    fail("file corrupted",
         fmt::format("{}/case.json: case '{}' of {} does not belong in this folder", dir, c.id, c.op));
    return finish();
  }
  // 2. The case files still hold this case, unchanged.
  check_against_case_files(dir, nlohmann::json::parse(f.case_text), c.op, current, fail);
  // 3. The reference is the version the golden files were made with.
  const OpInfo* info = find_op(c.op);
  const int stored_version = f.manifest["reference_version"].get<int>();
  if (info != nullptr && info->reference_version != stored_version) {
    fail("reference changed", fmt::format("{}/manifest.json: reference_version {}, the current reference is version {}",
                                          dir, stored_version, info->reference_version));
  }
  // 4. Recompute from the golden case and diagnose differences.
  const nlohmann::json& tensors = f.manifest["tensors"];
  auto computed = compute(c, f.manifest.value("harness_version", ""));
  if (!computed) {
    fail("reference changed", computed.status().message());
    return finish();
  }
  std::set<std::string> seen;
  bool inputs_differ = false;  // inputs come first; changed inputs explain changed expected values
  for (const auto& file : computed->files) {
    if (file.meta.is_null()) continue;
    seen.insert(file.rel);
    if (!tensors.contains(file.rel)) {
      fail(file.rel.rfind("inputs/", 0) == 0 ? "input generator changed" : "reference changed",
           fmt::format("{}: the recomputed case has {} but the golden has not", dir, file.rel));
      continue;
    }
    if (file.meta["sha256"] == tensors[file.rel]["sha256"]) continue;
    if (file.rel.rfind("inputs/", 0) == 0) {
      fail("input generator changed", fmt::format("{}/{}: regenerated input differs", dir, file.rel));
      inputs_differ = true;
      continue;
    }
    // Expected values may differ in the last bits of a double; compare values, not bytes.
    auto fresh = decode_npy(reinterpret_cast<const uint8_t*>(file.bytes.data()), file.bytes.size(), file.rel);
    const std::string why = fresh ? golden_values_differ(f.tensors.at(file.rel), *fresh) : fresh.status().message();
    if (!why.empty()) {
      fail(inputs_differ ? "input generator changed" : "reference changed",
           fmt::format("{}/{}: recomputed values differ: {}{}", dir, file.rel, why,
                       inputs_differ ? " (from the changed inputs)"
                       : info && info->reference_version != stored_version
                           ? fmt::format(" (reference_version {} -> {})", stored_version, info->reference_version)
                           : " (reference_version unchanged: an unintended semantic change?)"));
    }
  }
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (!seen.count(it.key())) fail("reference changed", fmt::format("{}/{}: no longer produced", dir, it.key()));
  }
  return finish();
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
