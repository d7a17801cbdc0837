// Tensor dumps of one case as .npy files (repro --dump, run --dump-failed), staged in a sibling
// folder and renamed into place, so a reader never finds half a dump.
#include "harness/dump.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/tensor_dump.h"

namespace opgate {
namespace {

namespace fs = std::filesystem;

// The first line of every dump's README.txt: how a folder is recognised as a previous dump.
constexpr const char* kDumpMarker = kTensorDumpMarker;

struct DumpFile {
  std::string rel;  // "got/attentionOut.npy"
  Tensor t;
  bool from_bf16 = false;  // written as float32 (npy_ready)
};

fs::path normalised(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "out/" -> "out"
  return p;
}

bool is_previous_dump(const fs::path& dir) {
  auto text = read_file((dir / "README.txt").string());
  return text && text->rfind(kDumpMarker, 0) == 0;
}

// NumPy has no bfloat16: such a tensor goes out as float32, which holds each of its values exactly.
Tensor npy_ready(const Tensor& t) { return t.dtype() == DType::kBF16 ? t.converted(DType::kF32) : t; }

// Per element, the largest |got - expected| the output's check accepts (0: exact; inf: not
// compared, where the care mask is 0 or the check is `undefined`).
Tensor allowance(const OutputCheck& check, const Tensor& expected, const Tensor* magnitude, const Tensor* care) {
  Tensor a = Tensor::empty(DType::kF64, expected.shape());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const bool cared = care == nullptr || care->get(i) != 0;
    const double mag = magnitude != nullptr ? magnitude->get(i) : 0.0;
    a.set(i, cared ? allowance_at(check, expected.get(i), mag) : std::numeric_limits<double>::infinity());
  }
  return a;
}

const Tensor* find(const TensorMap* m, const std::string& name) {
  if (m == nullptr) return nullptr;
  auto it = m->find(name);
  return it == m->end() || !it->second.defined() ? nullptr : &it->second;
}

// Every file of the dump, in the order README.txt lists them.
std::vector<DumpFile> dump_files(const CaseTensors& t) {
  std::vector<DumpFile> files;
  auto add_all = [&](const char* folder, const TensorMap* m) {
    if (m == nullptr) return;
    for (const auto& [name, tensor] : *m) {
      if (!tensor.defined()) continue;
      files.push_back({fmt::format("{}/{}.npy", folder, name), npy_ready(tensor), tensor.dtype() == DType::kBF16});
    }
  };
  add_all("inputs", t.inputs);
  add_all("expected", t.ref != nullptr ? &t.ref->expected : nullptr);
  add_all("got", t.got);
  if (t.ref == nullptr || t.plan == nullptr) return files;
  for (const OutputCheck& check : t.plan->outputs) {
    const Tensor* expected = find(&t.ref->expected, check.name);
    if (expected == nullptr) continue;
    const Tensor* care = find(&t.ref->care, check.name);
    files.push_back({"allowance/" + check.name + ".npy", allowance(check, *expected, find(&t.ref->magnitude, check.name), care)});
    if (care != nullptr) files.push_back({"care/" + check.name + ".npy", care->converted(DType::kBool)});
  }
  return files;
}

std::string shape_text(const Tensor& t) {
  std::string s;
  for (const int64_t d : t.shape()) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "(" + s + (t.rank() == 1 ? ",)" : ")");
}

std::string readme(const CaseResult& r, const CaseTensors& t, const std::vector<DumpFile>& files) {
  std::string out = fmt::format("{}: case {} ({}) on backend {}: {} - {}\n\n", kDumpMarker, r.id, r.op, r.backend,
                                verdict_name(r.verdict), r.reason);
  out += "Load in Python with NumPy, e.g.\n  import numpy as np\n";
  if (!files.empty()) out += fmt::format("  a = np.load(\"{}\")\n", files.front().rel);
  out += "  bad = np.abs(np.load(\"got/<out>.npy\").astype(np.float64) - np.load(\"expected/<out>.npy\"))"
         " > np.load(\"allowance/<out>.npy\")\n\n"
         "inputs/    the canonical inputs the case filled from its seed\n"
         "expected/  the reference (float64 for floating outputs, before rounding to the device dtype;\n"
         "           integer outputs in their device dtype)\n"
         "got/       the device output, unpacked to the same canonical layout\n"
         "allowance/ float64: the largest |got - expected| the output's check accepts per element (0: exact,\n"
         "           inf: not compared; under the bound standard got must moreover be a value the interval\n"
         "           around expected rounds to, see failed/<id>.json accepted_lo/accepted_hi)\n"
         "care/      bool: True where the API defines the element (absent: every element)\n"
         "bfloat16 has no NumPy dtype: bfloat16 tensors are written as float32, which holds every bfloat16\n"
         "value exactly.\n";
  if (t.got == nullptr || t.got->empty()) out += "The case ended before the device produced outputs: there is no got/.\n";
  out += "\nFiles (C order):\n";
  for (const auto& f : files) {
    out += fmt::format("  {:<40} {} {}{}\n", f.rel, dtype_name(f.t.dtype()), shape_text(f.t),
                       f.from_bf16 ? " (bfloat16, written as float32)" : "");
  }
  return out;
}

// The nearest existing ancestor of `p` must be a folder this process may create entries in.
Status check_writable_ancestor(const std::string& dir, fs::path p) {
  std::error_code ec;
  while (!p.empty() && !fs::exists(fs::symlink_status(p, ec))) p = p.parent_path();
  if (p.empty()) p = ".";
  if (!fs::is_directory(p, ec)) {
    return io_error(fmt::format("{}: cannot write the tensor dump: {} is not a folder", dir, p.string()));
  }
  if (::access(p.c_str(), W_OK | X_OK) != 0) {
    return io_error(fmt::format("{}: cannot write the tensor dump in {}: {}", dir, p.string(), std::strerror(errno)));
  }
  return Status::ok();
}

// Removes the staging folder unless the dump was renamed into place.
struct Staging {
  fs::path path;
  bool kept = false;
  ~Staging() {
    std::error_code ec;
    if (!kept) fs::remove_all(path, ec);
  }
};

Status write_staged(const fs::path& staging, const CaseResult& r, const CaseTensors& t) {
  const std::vector<DumpFile> files = dump_files(t);
  for (const char* folder : kTensorDumpFolders) {
    for (const auto& f : files) {
      if (f.rel.rfind(std::string(folder) + "/", 0) == 0) {
        OPGATE_TRY(make_dirs((staging / folder).string()));
        break;
      }
    }
  }
  for (const auto& f : files) OPGATE_TRY(write_npy((staging / f.rel).string(), f.t));
  return write_file_atomic((staging / "README.txt").string(), readme(r, t, files));
}

}  // namespace

Status check_dump_folder(const std::string& dir) {
  const fs::path p = normalised(dir);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(p, ec))) {
    if (!fs::is_directory(p, ec)) return io_error(fmt::format("{}: exists and is not a folder; choose another dump folder", dir));
    if (!fs::is_empty(p, ec) && !is_previous_dump(p)) {
      return io_error(fmt::format("{}: holds files that are not an opgate tensor dump; choose an empty or new folder", dir));
    }
  }
  return check_writable_ancestor(dir, p.parent_path().empty() ? fs::path(".") : p.parent_path());
}

Status dump_case_tensors(const std::string& dir, const CaseResult& r, const CaseTensors& t) {
  OPGATE_TRY(check_dump_folder(dir));
  const fs::path p = normalised(dir);
  const fs::path parent = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  OPGATE_TRY(make_dirs(parent.string()).with_context(dir + ": cannot write the tensor dump"));
  const std::string name = p.filename().string();
  Staging staging{parent / fmt::format(".{}.partial.{}", name, ::getpid())};
  std::error_code ec;
  fs::remove_all(staging.path, ec);
  OPGATE_TRY(make_dirs(staging.path.string()).with_context(dir + ": cannot write the tensor dump"));
  OPGATE_TRY(write_staged(staging.path, r, t).with_context(dir + ": cannot write the tensor dump"));
  // A previous dump moves aside first (rename replaces only an empty folder), then is removed.
  const fs::path old = parent / fmt::format(".{}.old.{}", name, ::getpid());
  const bool replacing = fs::exists(p, ec) && !fs::is_empty(p, ec);
  if (replacing && ::rename(p.c_str(), old.c_str()) != 0) {
    return io_error(fmt::format("{}: cannot replace the previous dump: {}", dir, std::strerror(errno)));
  }
  if (::rename(staging.path.c_str(), p.c_str()) != 0) {
    const int err = errno;
    if (replacing) ::rename(old.c_str(), p.c_str());
    return io_error(fmt::format("{}: cannot write the tensor dump: {}", dir, std::strerror(err)));
  }
  staging.kept = true;
  if (replacing) fs::remove_all(old, ec);
  return Status::ok();
}

}  // namespace opgate
