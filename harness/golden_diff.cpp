// Golden tree comparison: manifests say which tensors exist and their device dtypes; the .npy files
// are compared element by element (bits for equality, values for the size of a change).
#include "harness/golden_diff.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "harness/golden.h"
#include "harness/golden_folder.h"
#include "core/json_read.h"
#include "core/npy.h"

namespace opgate {
namespace {

Expected<nlohmann::json> read_json(const std::string& path) { return read_json_file(path); }

// A tensor file, never more than a case may take (a link to /dev/zero must not exhaust memory).
Expected<Tensor> read_tensor(const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(std::string bytes, read_file_bounded(path, max_case_bytes(), "--max-case-bytes"));
  return decode_npy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

// The tensor files of a manifest with their entries ({} when the manifest has none).
nlohmann::json tensor_entries(const nlohmann::json& manifest) {
  if (manifest.is_object() && manifest.contains("tensors") && manifest["tensors"].is_object()) {
    return manifest["tensors"];
  }
  return nlohmann::json::object();
}

// Row-major multi-dimensional index of flat element `flat`.
std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return index;
}

// How far x -> y moved in steps of `dtype`: ulps at the larger magnitude for a float, the plain
// difference for an integer; NaN when a value is not finite.
// `floating`: whether `dtype` (the file's device dtype) is a float.
double ulp_distance(bool floating, DType dtype, double x, double y) {
  if (!std::isfinite(x) || !std::isfinite(y)) return std::nan("");
  if (!floating) return std::fabs(y - x);
  return std::fabs(y - x) / ulp(dtype, std::max(std::fabs(x), std::fabs(y)));
}

// The tensor files of `dir` whose bytes no longer match the digest `tensors` records for them.
std::vector<std::string> corrupted_files(const std::string& dir, const nlohmann::json& tensors) {
  std::vector<std::string> out;
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (!it.value().is_object() || !it.value().contains("sha256") || !it.value()["sha256"].is_string()) continue;
    const std::string path = dir + "/" + it.key();
    auto digest = golden_folder::sha256_file(path, max_case_bytes());
    if (!digest || *digest != it.value()["sha256"].get<std::string>()) {
      out.push_back(fmt::format("{}: sha256 differs from manifest.json (file corrupted or edited by hand; "
                                "`opgate golden regen` rewrites it)", path));
    }
  }
  return out;
}

// Marks `d` corrupted, naming each file of either folder that disagrees with its manifest's digest.
bool flag_corruption(GoldenCaseDiff& d, const std::string& old_dir, const nlohmann::json& old_tensors,
                     const std::string& new_dir, const nlohmann::json& new_tensors) {
  std::vector<std::string> corrupted = corrupted_files(old_dir, old_tensors);
  for (auto& note : corrupted_files(new_dir, new_tensors)) corrupted.push_back(std::move(note));
  if (corrupted.empty()) return false;
  d.status = "corrupted";
  d.notes.insert(d.notes.end(), corrupted.begin(), corrupted.end());
  return true;
}

// Compares one tensor file present in both cases; the status stays "" when the bits are identical.
Expected<GoldenTensorDiff> diff_tensor(const std::string& file, const nlohmann::json& entry, const std::string& old_dir,
                                       const std::string& new_dir, int64_t max_elements) {
  GoldenTensorDiff t;
  t.file = file;
  t.device_dtype = entry.value("dtype", "");
  OPGATE_ASSIGN_OR_RETURN(Tensor a, read_tensor(old_dir + "/" + file));
  OPGATE_ASSIGN_OR_RETURN(Tensor b, read_tensor(new_dir + "/" + file));
  t.elements = b.numel();
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    t.status = "reshaped";
    return t;
  }
  // Expected floating outputs are stored as float64 before rounding: a change matters to a kernel
  // comparison when the device-dtype rounding of the value changes.
  std::optional<DType> device;
  if (entry.value("stored_as", "") == "float64") {
    auto d = parse_dtype(t.device_dtype);
    if (d && is_floating(*d)) device = *d;
  }
  t.tolerance = !golden_folder::tolerance_output(file).empty();
  const auto parsed = parse_dtype(t.device_dtype);
  const DType steps = parsed ? *parsed : DType::kF64;
  const bool floating = parsed && is_floating(steps);
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (a.bits(i) == b.bits(i)) continue;
    ++t.changed;
    if (!t.tolerance && static_cast<int64_t>(t.first.size()) < max_elements) {
      t.first.push_back({unravel(i, b.shape()), a.get(i), b.get(i), ulp_distance(floating, steps, a.get(i), b.get(i))});
    }
    if (t.tolerance) {
      const double x = a.get(i), y = b.get(i);
      (y > x ? t.grew : t.shrank) += y != x ? 1 : 0;
      if (std::isfinite(x) && std::isfinite(y)) {
        t.max_abs = std::max(t.max_abs, std::fabs(y - x));
        t.max_rel = std::max(t.max_rel, std::fabs(y - x) / std::max(std::fabs(x), std::fabs(y)));
      }
      continue;
    }
    if (!device) continue;
    const double x = a.get(i), y = b.get(i);
    if (!(round_to(*device, x) == round_to(*device, y) || (std::isnan(x) && std::isnan(y)))) ++t.visible;
    if (std::isfinite(x) && std::isfinite(y)) {
      t.max_abs = std::max(t.max_abs, std::fabs(y - x));
      // In ulps at the larger of the two values: a change away from 0 is not measured in subnormal steps.
      t.max_ulps = std::max(t.max_ulps, std::fabs(y - x) / ulp(*device, std::max(std::fabs(x), std::fabs(y))));
    }
  }
  t.status = t.changed > 0 ? "changed" : "";
  return t;
}

}  // namespace

bool GoldenCaseDiff::values_changed() const {
  return std::any_of(tensors.begin(), tensors.end(), [](const GoldenTensorDiff& t) { return !t.tolerance; });
}

bool GoldenCaseDiff::tolerances_changed() const {
  return std::any_of(tensors.begin(), tensors.end(), [](const GoldenTensorDiff& t) { return t.tolerance; });
}

int64_t GoldenTreeDiff::count(const std::string& status) const {
  return std::count_if(cases.begin(), cases.end(), [&](const GoldenCaseDiff& c) { return c.status == status; });
}

GoldenCaseDiff diff_golden_case(const std::string& old_dir, const std::string& new_dir, int64_t max_elements) {
  GoldenCaseDiff d;
  d.status = "identical";
  auto unreadable = [&](const Status& st) {
    d.status = "unreadable";
    d.notes.push_back(st.message());
    return d;
  };
  auto old_manifest = read_json(old_dir + "/manifest.json");
  if (!old_manifest) return unreadable(old_manifest.status());
  auto new_manifest = read_json(new_dir + "/manifest.json");
  if (!new_manifest) return unreadable(new_manifest.status());
  const auto old_format = old_manifest->value("format", nlohmann::json());
  const auto new_format = new_manifest->value("format", nlohmann::json());
  if (old_format != new_format) d.notes.push_back(fmt::format("format {} -> {}", old_format.dump(), new_format.dump()));
  const auto old_version = old_manifest->value("reference_version", nlohmann::json());
  const auto new_version = new_manifest->value("reference_version", nlohmann::json());
  if (old_version != new_version) {
    d.notes.push_back(fmt::format("reference_version {} -> {}", old_version.dump(), new_version.dump()));
  }
  auto old_case = read_json(old_dir + "/case.json");
  auto new_case = read_json(new_dir + "/case.json");
  if (!old_case) return unreadable(old_case.status());
  if (!new_case) return unreadable(new_case.status());
  for (const auto& f : case_differences(*old_case, *new_case)) {
    d.notes.push_back(fmt::format("case.json {}: {} -> {}", f.field, f.before, f.after));
  }
  const nlohmann::json old_tensors = tensor_entries(*old_manifest), new_tensors = tensor_entries(*new_manifest);
  // A file that disagrees with its own manifest is damage, not a change of the reference.
  if (flag_corruption(d, old_dir, old_tensors, new_dir, new_tensors)) return d;
  std::set<std::string> files;
  for (auto it = old_tensors.begin(); it != old_tensors.end(); ++it) files.insert(it.key());
  for (auto it = new_tensors.begin(); it != new_tensors.end(); ++it) files.insert(it.key());
  for (const auto& file : files) {
    if (!new_tensors.contains(file) || !old_tensors.contains(file)) {
      GoldenTensorDiff t;
      t.file = file;
      t.status = new_tensors.contains(file) ? "added" : "removed";
      t.tolerance = !golden_folder::tolerance_output(file).empty();
      d.tensors.push_back(t);
      continue;
    }
    auto t = diff_tensor(file, new_tensors[file], old_dir, new_dir, max_elements);
    if (!t) return unreadable(t.status());
    if (!t->status.empty()) d.tensors.push_back(std::move(*t));
  }
  if (!d.tensors.empty() || !d.notes.empty()) d.status = "changed";
  return d;
}

GoldenTreeDiff diff_golden_trees(const std::string& old_root, const std::string& new_root, const std::string& stem,
                                 int64_t max_elements) {
  // Keyed by "<op>/<id>", the path below the root.
  std::map<std::string, std::pair<std::string, std::string>> dirs;
  for (const auto& dir : list_golden_dirs(old_root, stem)) dirs[dir.substr(old_root.size() + 1)].first = dir;
  for (const auto& dir : list_golden_dirs(new_root, stem)) dirs[dir.substr(new_root.size() + 1)].second = dir;
  GoldenTreeDiff out;
  for (const auto& [key, pair] : dirs) {
    GoldenCaseDiff c;
    if (pair.first.empty() || pair.second.empty()) {
      c.status = pair.first.empty() ? "added" : "removed";
    } else {
      c = diff_golden_case(pair.first, pair.second, max_elements);
    }
    c.op = key.substr(0, key.find('/'));
    c.id = key.substr(key.find('/') + 1);
    out.cases.push_back(std::move(c));
  }
  return out;
}

namespace {

std::string tensor_line(const GoldenTensorDiff& t) {
  if (t.status != "changed") return fmt::format("    {}: {}\n", t.file, t.status);
  if (t.tolerance) {
    return fmt::format("    {}: {} of {} elements changed ({} grew, {} shrank), max |delta| {:.3g}, max relative {:.3g}\n",
                       t.file, t.changed, t.elements, t.grew, t.shrank, t.max_abs, t.max_rel);
  }
  if (!t.device_dtype.empty() && t.max_ulps > 0) {
    return fmt::format("    {}: {} of {} elements changed, max |delta| {:.3g} = {:.3g} ulp of {}; {} round to a "
                       "different {}\n",
                       t.file, t.changed, t.elements, t.max_abs, t.max_ulps, t.device_dtype, t.visible,
                       t.device_dtype);
  }
  return fmt::format("    {}: {} of {} elements changed\n", t.file, t.changed, t.elements);
}

std::string index_text(const std::vector<int64_t>& index) {
  std::string s;
  for (const int64_t i : index) s += (s.empty() ? "" : ", ") + std::to_string(i);
  return "[" + s + "]";
}

// "0.5", "2", "2560": whole ulps from 100 on (no exponent for a reviewer to decode).
std::string ulps_text(double ulps) { return ulps >= 100 ? fmt::format("{:.0f}", ulps) : fmt::format("{:.3g}", ulps); }

// "      [1, 2]: 0.5 -> 0.5009765625 (1 ulp of float16)" per listed element, then how many more.
std::string element_lines(const GoldenTensorDiff& t) {
  const auto dtype = parse_dtype(t.device_dtype);
  const bool floating = dtype && is_floating(*dtype);
  std::string s;
  for (const GoldenElementChange& e : t.first) {
    const std::string distance = std::isnan(e.ulps) ? "not finite"
                                 : floating         ? fmt::format("{} ulp of {}", ulps_text(e.ulps), t.device_dtype)
                                                    : fmt::format("by {:.17g}", e.ulps);
    s += fmt::format("      {}: {} -> {} ({})\n", index_text(e.index), e.before, e.after, distance);
  }
  if (t.changed > static_cast<int64_t>(t.first.size())) {
    s += fmt::format("      ... {} more changed element(s) (--max-elements N lists more)\n",
                     t.changed - static_cast<int64_t>(t.first.size()));
  }
  return s;
}

}  // namespace

std::string golden_diff_text(const GoldenTreeDiff& d, const std::string& old_label, const std::string& new_label) {
  const auto with = [&](bool (GoldenCaseDiff::*changed)() const) {
    return std::count_if(d.cases.begin(), d.cases.end(), [&](const GoldenCaseDiff& c) { return (c.*changed)(); });
  };
  std::string s = fmt::format("golden diff {} -> {}: {} case(s): {} changed, {} added, {} removed, {} unreadable, "
                              "{} corrupted, {} identical\n",
                              old_label, new_label, d.cases.size(), d.count("changed"), d.count("added"),
                              d.count("removed"), d.count("unreadable"), d.count("corrupted"), d.count("identical"));
  s += fmt::format("changed cases: {} with inputs, expected values or care masks changed; {} with tolerance "
                   "magnitudes or slack changed\n",
                   with(&GoldenCaseDiff::values_changed), with(&GoldenCaseDiff::tolerances_changed));
  for (const auto& c : d.cases) {
    if (c.status == "identical") continue;
    std::string label = c.status;
    std::transform(label.begin(), label.end(), label.begin(), [](unsigned char ch) { return std::toupper(ch); });
    s += fmt::format("{:<10} {}/{}\n", label, c.op, c.id);
    for (const auto& n : c.notes) s += fmt::format("    {}\n", n);
    for (const auto& t : c.tensors) {
      if (!t.tolerance) s += tensor_line(t) + element_lines(t);
    }
    if (c.tolerances_changed()) s += "  tolerance (magnitudes and slack; the allowance, not the expected values):\n";
    for (const auto& t : c.tensors) {
      if (t.tolerance) s += tensor_line(t);
    }
  }
  return s;
}

}  // namespace opgate
