#include "harness/twin_folder.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/npy.h"
#include "harness/golden.h"
#include "harness/golden_folder.h"  // is_dir

namespace opgate {

namespace {

// A third party writes what its framework holds: PyTorch has no NumPy dtype for bfloat16, so
// `.float().numpy()` gives float32. Such a file stands for the output only if every value is one
// the output's dtype holds, or the twin would be more precise than the device it is judged beside.
Expected<Tensor> as_output_dtype(const Tensor& t, DType dtype, const std::string& path) {
  if (t.dtype() == dtype) return t;
  const bool narrow_float = dtype == DType::kBF16 || dtype == DType::kF16;
  if (!narrow_float || t.dtype() != DType::kF32) {
    return parse_error(fmt::format("{}: dtype {}, but the output is {} (or float32 holding {} values)", path,
                                   dtype_name(t.dtype()), dtype_name(dtype), dtype_name(dtype)));
  }
  Tensor narrowed = t.converted(dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get(i), n = narrowed.get(i);
    if (v != n && !(v != v && n != n)) {
      return parse_error(fmt::format("{}: element {} is {:.9g}, which {} cannot hold (nearest {:.9g})", path,
                                     shape_to_string(t.unravel(i)), v, dtype_name(dtype), n));
    }
  }
  return narrowed;
}

}  // namespace

Expected<TwinFiles> read_twin_files(const std::string& root, const std::string& op, const std::string& id,
                                    const Problem& problem) {
  TwinFiles files{golden_case_dir(root, op, id), {}};
  if (!golden_folder::is_dir(files.dir)) return files;
  const std::vector<std::string> names = problem.output_names();
  for (const std::string& name : names) {
    const std::string path = files.dir + "/" + name + ".npy";
    std::error_code ec;
    const auto status = std::filesystem::symlink_status(path, ec);
    if (!std::filesystem::exists(status)) continue;  // no twin for this output; its verdict names the path
    // A FIFO would block the read and a link could point anywhere: golden folders refuse both too.
    if (!std::filesystem::is_regular_file(status)) return parse_error(fmt::format("{}: not a regular file", path));
    auto bytes = read_file(path);
    if (!bytes) return bytes.status();
    auto t = decode_npy(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), path);
    if (!t) return t.status();
    auto spec = problem.specs().find(name);
    const DType dtype = spec != problem.specs().end() ? spec->second.dtype : t->dtype();
    auto narrowed = as_output_dtype(*t, dtype, path);
    if (!narrowed) return narrowed.status();
    files.outputs.emplace(name, std::move(*narrowed));
  }
  // A file under another name is a typo or another operator's output: silently unused, it would
  // leave the output it meant without a twin.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(files.dir, ec)) {
    const std::string file = entry.path().filename().string();
    const std::string stem = file.size() > 4 && file.substr(file.size() - 4) == ".npy" ? file.substr(0, file.size() - 4) : "";
    if (stem.empty() || std::find(names.begin(), names.end(), stem) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n + ".npy";
      return parse_error(fmt::format("{}/{}: not an output of {} (expected {})", files.dir, file, op, known));
    }
  }
  return files;
}

std::string twin_shape_problem(const TwinFiles& files, const std::string& name, const Shape& shape) {
  auto it = files.outputs.find(name);
  if (it == files.outputs.end() || it->second.shape() == shape) return "";
  return fmt::format("{}/{}.npy: shape {}, but output '{}' has shape {}", files.dir, name,
                     shape_to_string(it->second.shape()), name, shape_to_string(shape));
}

}  // namespace opgate
