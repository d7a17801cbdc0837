// Golden folders: atomic regeneration and verification with a diagnosis (golden-format.md).
#include "core/golden.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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
  GoldenCase g;
  OPGATE_ASSIGN_OR_RETURN(std::string case_text, read_file(dir + "/case.json"));
  OPGATE_ASSIGN_OR_RETURN(std::string manifest_text, read_file(dir + "/manifest.json"));
  try {
    g.case_json = nlohmann::json::parse(case_text);
    g.manifest = nlohmann::json::parse(manifest_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error or out_of_range (1e999)
    return parse_error(fmt::format("{}: malformed JSON: {}", dir, e.what()));
  }
  if (!g.manifest.contains("tensors") || !g.manifest["tensors"].is_object()) {
    return parse_error(dir + "/manifest.json: field 'tensors': missing or not an object");
  }
  for (auto it = g.manifest["tensors"].begin(); it != g.manifest["tensors"].end(); ++it) {
    const std::string rel = it.key();
    OPGATE_ASSIGN_OR_RETURN(Tensor t, read_npy(dir + "/" + rel));
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

GoldenCheck verify_golden(const std::string& dir) {
  GoldenCheck out;
  out.dir = dir;
  auto fail = [&](const std::string& cause, const std::string& detail) {
    out.ok = false;
    if (out.cause.empty()) out.cause = cause;
    out.details.push_back(detail);
  };
  auto manifest_text = read_file(dir + "/manifest.json");
  auto case_text = read_file(dir + "/case.json");
  if (!manifest_text || !case_text) {
    fail("file corrupted", !manifest_text ? manifest_text.status().message() : case_text.status().message());
    return out;
  }
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(*manifest_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error or out_of_range (1e999)
    fail("file corrupted", fmt::format("{}/manifest.json: malformed JSON: {}", dir, e.what()));
    return out;
  }
  auto cases = parse_cases_text(*case_text, dir + "/case.json");
  if (!cases) {
    fail("unreadable", cases.status().message());
    return out;
  }
  // 1. Every file matches its digest.
  const nlohmann::json tensors = manifest.value("tensors", nlohmann::json::object());
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    auto bytes = read_file(dir + "/" + it.key());
    if (!bytes) {
      fail("file corrupted", bytes.status().message());
    } else if (sha256_hex(*bytes) != it.value().value("sha256", "")) {
      fail("file corrupted", fmt::format("{}/{}: sha256 differs from manifest.json", dir, it.key()));
    }
  }
  if (!out.ok) return out;
  // 2. and 3. Recompute from the case and diagnose differences.
  const Case& c = cases->front();
  auto computed = compute(c, manifest.value("harness_version", ""));
  if (!computed) {
    fail("reference changed", computed.status().message());
    return out;
  }
  const OpInfo* info = find_op(c.op);
  const int stored_version = manifest.value("reference_version", 0);
  std::set<std::string> seen;
  for (const auto& f : computed->files) {
    if (f.meta.is_null()) continue;
    seen.insert(f.rel);
    if (!tensors.contains(f.rel)) {
      fail(f.rel.rfind("inputs/", 0) == 0 ? "input generator changed" : "reference changed",
           fmt::format("{}: the recomputed case has {} but the golden has not", dir, f.rel));
      continue;
    }
    if (f.meta["sha256"] == tensors[f.rel]["sha256"]) continue;
    if (f.rel.rfind("inputs/", 0) == 0) {
      fail("input generator changed", fmt::format("{}/{}: regenerated input differs", dir, f.rel));
      continue;
    }
    // Expected values may differ in the last bits of a double; compare values, not bytes.
    auto stored = read_npy(dir + "/" + f.rel);
    auto fresh = decode_npy(reinterpret_cast<const uint8_t*>(f.bytes.data()), f.bytes.size(), f.rel);
    bool same = stored && fresh && stored->shape() == fresh->shape();
    for (int64_t i = 0; same && i < fresh->numel(); ++i) same = close_f64(stored->get(i), fresh->get(i));
    if (!same) {
      fail("reference changed",
           fmt::format("{}/{}: recomputed values differ{}", dir, f.rel,
                       info && info->reference_version != stored_version
                           ? fmt::format(" (reference_version {} -> {})", stored_version, info->reference_version)
                           : " (reference_version unchanged: an unintended semantic change?)"));
    }
  }
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (!seen.count(it.key())) fail("reference changed", fmt::format("{}/{}: no longer produced", dir, it.key()));
  }
  // An input change explains expected changes too; report the root cause first.
  for (const auto& d : out.details) {
    if (d.find("regenerated input") != std::string::npos) out.cause = "input generator changed";
  }
  return out;
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
