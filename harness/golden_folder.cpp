// Golden folders on disk: computing a case's files, and loading a folder with every check of the
// contract (digests, manifest fields, listed and unlisted files).
#include "harness/golden_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "core/fill_override.h"
#include "harness/golden.h"
#include "core/json_read.h"
#include "core/npy.h"
#include "cases/registry.h"

namespace opgate::golden_folder {
namespace {

std::string as_string(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

TensorFile tensor_file(const std::string& rel, const Tensor& t, DType logical) {
  TensorFile f;
  f.rel = rel;
  f.bytes = as_string(encode_npy(t));
  f.meta = {{"dtype", dtype_name(logical)}, {"shape", t.shape()}, {"sha256", sha256_hex(f.bytes)}};
  if (t.dtype() != logical) f.meta["stored_as"] = dtype_name(t.dtype());
  if (t.dtype() == DType::kBF16) f.meta["stored_as"] = "uint16";
  return f;
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

// The dtype a tensor file holds per its manifest entry: `stored_as` when given ("uint16" is the
// bfloat16 bit-pattern convention), else `dtype`; nullopt when the entry names none we know.
std::optional<DType> stored_dtype(const nlohmann::json& meta) {
  const nlohmann::json name = meta.contains("stored_as") ? meta["stored_as"] : meta.value("dtype", nlohmann::json());
  if (!name.is_string()) return std::nullopt;
  if (name == "uint16") return DType::kBF16;
  auto d = parse_dtype(name.get<std::string>());
  return d ? std::optional<DType>(*d) : std::nullopt;
}

// Format 2's tolerance files: float64, listed only in format 2, and of their output's shape.
void check_tolerance_files(const std::string& dir, LoadedFolder& f) {
  const nlohmann::json stated = f.manifest.value("format", nlohmann::json());  // checked by check_manifest_fields
  const int format = stated.is_number_integer() && stated >= 0 && stated <= kGoldenFormat ? stated.get<int>() : 0;
  for (const auto& [rel, t] : f.tensors) {
    const std::string output = tolerance_output(rel);
    if (output.empty()) continue;
    const std::string path = dir + "/" + rel;
    const auto expected = f.tensors.find("expected/" + output + ".npy");
    if (format < 2) {
      f.problems.push_back(fmt::format("{}: a format {} folder has no tolerance files (format 2 adds them)", path,
                                       format));
    } else if (t.dtype() != DType::kF64) {
      f.problems.push_back(fmt::format("{}: dtype {}, but tolerance files are float64 ('<f8')", path,
                                       dtype_name(t.dtype())));
    } else if (expected == f.tensors.end()) {
      if (f.manifest["tensors"].contains("expected/" + output + ".npy")) continue;  // its own problem is listed
      f.problems.push_back(fmt::format("{}: output '{}' has no expected/{}.npy", path, output, output));
    } else if (expected->second.shape() != t.shape()) {
      f.problems.push_back(fmt::format("{}: shape {}, but output '{}' has shape {}", path, shape_to_string(t.shape()),
                                       output, shape_to_string(expected->second.shape())));
    }
  }
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

void check_manifest_fields(const std::string& dir, LoadedFolder& f) {
  const nlohmann::json& m = f.manifest;
  const std::string where = dir + "/manifest.json";
  auto problem = [&](const std::string& what) { f.problems.push_back(fmt::format("{}: {}", where, what)); };
  if (!m.contains("format") || !m["format"].is_number_integer() || m["format"] < kOldestGoldenFormat ||
      m["format"] > kGoldenFormat) {
    problem(fmt::format("field 'format': {}, this harness reads formats {} to {}",
                        m.value("format", nlohmann::json()).dump(), kOldestGoldenFormat, kGoldenFormat));
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
    // The digest is computed while streaming, so a corrupted file (or a link to /dev/zero) is
    // rejected in constant memory; only a file that matches its digest is then read whole, and
    // never more than a case may take.
    auto digest = sha256_file(path, max_case_bytes());
    Expected<std::string> bytes = digest ? Expected<std::string>(std::string()) : digest.status();
    if (!digest) {
      f.problems.push_back(digest.status().message());
    } else if (*digest != meta["sha256"].get<std::string>()) {
      f.problems.push_back(path + ": sha256 differs from manifest.json (file corrupted)");
    } else if (bytes = read_file_bounded(path, max_case_bytes(), "--max-case-bytes"); !bytes) {
      f.problems.push_back(bytes.status().message());
    } else if (auto t = decode_npy(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), path); !t) {
      f.problems.push_back(t.status().message());
    } else if (meta.contains("shape") && meta["shape"] != nlohmann::json(t->shape())) {
      f.problems.push_back(fmt::format("{}: shape {} but manifest.json says {}", path, shape_to_string(t->shape()),
                                       meta["shape"].dump()));
    } else if (const auto want = stored_dtype(meta); !want || *want != t->dtype()) {
      f.problems.push_back(fmt::format("{}: dtype {} but manifest.json says {}", path, dtype_name(t->dtype()),
                                       meta.contains("stored_as") ? "stored_as " + meta["stored_as"].dump()
                                                                  : "dtype " + meta.value("dtype", nlohmann::json()).dump()));
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

}  // namespace

std::string tolerance_output(const std::string& rel) {
  if (rel.rfind("expected/", 0) != 0) return "";
  for (const std::string suffix : {".mag.npy", ".slack.npy"}) {
    if (rel.size() > 9 + suffix.size() && rel.compare(rel.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return rel.substr(9, rel.size() - 9 - suffix.size());
    }
  }
  return "";
}

Expected<std::string> sha256_file(const std::string& path, uint64_t limit) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return io_error(fmt::format("{}: cannot open for reading: {}", path, std::strerror(errno)));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  char buffer[1 << 16];
  uint64_t total = 0;
  size_t n = 0;
  while (total <= limit && (n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    EVP_DigestUpdate(ctx, buffer, n);
    total += n;
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  if (failed) return io_error(fmt::format("{}: read failed", path));
  if (total > limit) {
    return parse_error(fmt::format("{}: more than {}, over --max-case-bytes (file corrupted)", path, bytes_text(limit)));
  }
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_link(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

namespace {

// Each level is opened through its parent's descriptor with O_NOFOLLOW: a link (to a folder or a
// file) is unlinked itself, never what it points to, even one swapped in during the walk.
void remove_tree_at(int parent_fd, const char* name) {
  const int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    unlinkat(parent_fd, name, 0);  // a file or a link (or nothing)
    return;
  }
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    close(fd);
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string child = e->d_name;
    if (child != "." && child != "..") names.push_back(child);
  }
  for (const auto& child : names) remove_tree_at(dirfd(d), child.c_str());
  closedir(d);
  unlinkat(parent_fd, name, AT_REMOVEDIR);
}

}  // namespace

void remove_tree(const std::string& path) { remove_tree_at(AT_FDCWD, path.c_str()); }

Expected<TensorMap> checked_inputs(const Case& c) {
  OPGATE_ASSIGN_OR_RETURN(auto problem, make_problem(c));  // errors name the file and case
  Status valid = problem->validate();
  if (!valid.is_ok()) {
    return invalid_case(fmt::format("{}: golden cases must be valid calls: {}", case_where(c), valid.message()));
  }
  auto inputs = fill_case_inputs(*problem, c);
  if (!inputs) {  // an override's error already names the case
    const bool named = inputs.status().message().find(case_where(c)) != std::string::npos;
    return named ? inputs.status() : inputs.status().with_context(case_where(c));
  }
  Status data = problem->check_data(*inputs);
  if (!data.is_ok()) return data.with_context(case_where(c) + ": data checks");
  return inputs;
}

namespace {

// The first compared element whose tolerance is not finite while its expected value, rounded to
// the output's dtype, is; "" when there is none.
std::string nonfinite_tolerance(const OutputCheck& check, const Tensor& expected, const Tensor& tolerance,
                                const Tensor& care) {
  if (expected.shape() != tolerance.shape() || (care.defined() && care.shape() != expected.shape())) return "";
  const bool integer = is_integer(expected.dtype());
  for (int64_t i = 0; i < tolerance.numel(); ++i) {
    const double t = tolerance.get(i), e = expected.get(i);
    if (std::isfinite(t) || (care.defined() && care.get(i) == 0)) continue;
    if (std::isfinite(integer ? e : round_to(check.device_dtype, e, check.rounding))) {
      return fmt::format("element {} holds {} where the expected value is {:.17g}",
                         shape_to_string(expected.unravel(i)), t, e);
    }
  }
  return "";
}

}  // namespace

std::optional<UnsoundTolerance> unsound_tolerance(const ComparePlan& plan, const RefOutputs& ref) {
  for (const OutputCheck& check : plan.outputs) {
    const auto exp = ref.expected.find(check.name);
    if (exp == ref.expected.end()) continue;
    const auto care = ref.care.find(check.name);
    const Tensor mask = care != ref.care.end() ? care->second : Tensor();
    for (const auto& [suffix, tolerances] : {std::pair{".mag.npy", &ref.magnitude}, std::pair{".slack.npy", &ref.slack}}) {
      const auto tol = tolerances->find(check.name);
      if (tol == tolerances->end()) continue;
      std::string what = nonfinite_tolerance(check, exp->second, tol->second, mask);
      if (!what.empty()) return UnsoundTolerance{check.name, "expected/" + check.name + suffix, std::move(what)};
    }
  }
  return std::nullopt;
}

RefOutputs stored_outputs(const std::map<std::string, Tensor>& tensors) {
  RefOutputs out;
  for (const auto& [rel, t] : tensors) {
    if (rel.rfind("expected/", 0) != 0) continue;
    const std::string base = rel.substr(9, rel.size() - 13);  // "expected/<base>.npy"
    const std::string of = tolerance_output(rel);
    if (!of.empty()) {
      (base.size() > 4 && base.compare(base.size() - 4, 4, ".mag") == 0 ? out.magnitude : out.slack)[of] = t;
    } else if (base.size() > 5 && base.compare(base.size() - 5, 5, ".care") == 0) {
      out.care[base.substr(0, base.size() - 5)] = t;
    } else {
      out.expected[base] = t;
    }
  }
  return out;
}

namespace {

// What folder_files would store: magnitudes of the outputs checked with `bound` only.
Status check_finite_tolerances(const Case& c, const Problem& problem, const RefOutputs& ref) {
  const ComparePlan plan = problem.compare_plan(ref, plan_fill(c));
  RefOutputs stored = ref;
  for (const OutputCheck& check : plan.outputs) {
    if (check.kind != CheckKind::kTolerance || check.tol.standard != Standard::kBound) stored.magnitude.erase(check.name);
  }
  const auto unsound = unsound_tolerance(plan, stored);
  if (!unsound) return Status::ok();
  return invalid_case(fmt::format("{}: {} output '{}': {} would hold {} ({}): it accepts any value there, so golden "
                                  "files never store it",
                                  case_where(c), problem.op().aclnn_name, unsound->output, unsound->file,
                                  kUnsoundTolerance, unsound->what));
}

}  // namespace

Expected<Computed> compute(const Case& c, const std::string& harness_version) {
  OPGATE_ASSIGN_OR_RETURN(TensorMap inputs, checked_inputs(c));
  OPGATE_ASSIGN_OR_RETURN(auto problem, make_problem(c));
  const RefOutputs ref = problem->reference(inputs);
  OPGATE_TRY(check_finite_tolerances(c, *problem, ref));
  return folder_files(c, *problem, problem->pack(inputs), ref, harness_version);
}

Computed folder_files(const Case& c, const Problem& problem, const TensorMap& packed, const RefOutputs& ref,
                      const std::string& harness_version) {
  Computed out;
  out.case_json = golden_case_json(c, problem);
  for (const auto& [name, t] : packed) out.files.push_back(tensor_file("inputs/" + name + ".npy", t, t.dtype()));
  const SpecMap& specs = problem.specs();
  for (const auto& [name, t] : ref.expected) {
    const DType device = specs.count(name) ? specs.at(name).dtype : t.dtype();
    out.files.push_back(tensor_file("expected/" + name + ".npy", t, device));
  }
  for (const auto& [name, t] : ref.care) out.files.push_back(tensor_file("expected/" + name + ".care.npy", t, DType::kU8));
  // Format 2: the magnitudes of exactly the outputs the plan checks with `bound` (the only standard
  // that reads them), so a run can tell a deleted file from an output that needs none.
  for (const OutputCheck& check : problem.compare_plan(ref, plan_fill(c)).outputs) {
    const auto exp = ref.expected.find(check.name);
    if (check.kind != CheckKind::kTolerance || check.tol.standard != Standard::kBound || exp == ref.expected.end()) {
      continue;
    }
    const auto mag = ref.magnitude.find(check.name);
    const Tensor t = mag != ref.magnitude.end() ? mag->second : Tensor::zeros(DType::kF64, exp->second.shape());
    out.files.push_back(tensor_file("expected/" + check.name + ".mag.npy", t, DType::kF64));
  }
  for (const auto& [name, t] : ref.slack) out.files.push_back(tensor_file("expected/" + name + ".slack.npy", t, DType::kF64));
  nlohmann::json manifest{{"format", kGoldenFormat},
                          {"op", problem.op().aclnn_name},
                          {"case_id", c.id},
                          {"reference_version", problem.op().reference_version},
                          {"harness_version", harness_version},
                          {"tensors", nlohmann::json::object()}};
  for (const auto& f : out.files) manifest["tensors"][f.rel] = f.meta;
  out.files.push_back(TensorFile{"manifest.json", manifest.dump(2) + "\n", nlohmann::json()});
  out.files.push_back(TensorFile{"case.json", out.case_json.dump(2) + "\n", nlohmann::json()});
  return out;
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

LoadedFolder load_folder(const std::string& dir) {
  LoadedFolder f;
  auto manifest_text = read_file_bounded(dir + "/manifest.json", kMaxJsonBytes, "JSON");
  auto case_text = read_file_bounded(dir + "/case.json", kMaxJsonBytes, "JSON");
  if (!manifest_text || !case_text) {
    f.problems.push_back(!manifest_text ? manifest_text.status().message() : case_text.status().message());
    return f;
  }
  f.case_text = *case_text;
  auto manifest = parse_json_bounded(*manifest_text, dir + "/manifest.json");
  if (!manifest) {
    f.problems.push_back(manifest.status().message());
    return f;
  }
  f.manifest = std::move(*manifest);
  if (!f.manifest.is_object() || !f.manifest.contains("tensors") || !f.manifest["tensors"].is_object()) {
    f.problems.push_back(dir + "/manifest.json: field 'tensors': missing or not an object");
    return f;
  }
  check_manifest_fields(dir, f);
  check_tensor_files(dir, f);
  check_tolerance_files(dir, f);
  return f;
}

}  // namespace opgate::golden_folder
