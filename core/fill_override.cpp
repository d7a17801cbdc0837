// Per-tensor fill overrides: bit patterns per extreme class and dtype, value lists, and where they
// are applied (after the operator's fill, before the data checks and the reference).
#include "core/fill_override.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/case.h"
#include "core/dtype_convert.h"

namespace opgate {
namespace {

struct FloatFormat {
  int exponent_bits;
  int mantissa_bits;
};

bool float_format(DType t, FloatFormat* f) {
  switch (t) {
    case DType::kF16: *f = {5, 10}; return true;
    case DType::kBF16: *f = {8, 7}; return true;
    case DType::kF32: *f = {8, 23}; return true;
    case DType::kF64: *f = {11, 52}; return true;
    default: return false;
  }
}

constexpr const char* kClassNames[] = {"subnormal", "near_max", "signed_zero", "inf", "nan"};

std::string class_list() {
  std::string out;
  for (const char* n : kClassNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// A "values" entry as a double: numbers, or "nan", "inf", "-inf".
Expected<double> value_of(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return parse_error(fmt::format("{} is not a number, \"nan\", \"inf\" or \"-inf\"", v.dump()));
}

// Why `v` cannot be written into `t` ("" if it can, perhaps rounded).
std::string unrepresentable(DType t, double v) {
  if (std::isnan(v) || std::isinf(v)) {
    return is_floating(t) ? "" : fmt::format("{} has no {} value", dtype_name(t), std::isnan(v) ? "NaN" : "Inf");
  }
  const double r = round_to(t, v);
  if (!is_floating(t)) {
    return r == v ? "" : fmt::format("{} is not a {} value (an integer in its range)", v, dtype_name(t));
  }
  if (std::isinf(r)) return fmt::format("{:.9g} overflows {} (max {:.9g})", v, dtype_name(t), max_finite(t));
  if (r == 0 && v != 0) return fmt::format("{:.9g} flushes to zero in {} (below half its smallest subnormal)", v, dtype_name(t));
  return "";
}

}  // namespace

const char* extreme_class_name(ExtremeClass c) { return kClassNames[static_cast<size_t>(c)]; }

Expected<ExtremeClass> parse_extreme_class(const std::string& name) {
  for (ExtremeClass c : kAllExtremeClasses) {
    if (name == extreme_class_name(c)) return c;
  }
  return parse_error(fmt::format("unknown extreme class '{}' (known: {})", name, class_list()));
}

Expected<std::vector<uint64_t>> extreme_pattern(ExtremeClass c, DType dtype) {
  FloatFormat f{};
  if (!float_format(dtype, &f)) {
    return parse_error(fmt::format("extreme fills are for float tensors; this one is {} (use \"values\")",
                                   dtype_name(dtype)));
  }
  const uint64_t sign = uint64_t{1} << (f.exponent_bits + f.mantissa_bits);
  const uint64_t mantissa_all = (uint64_t{1} << f.mantissa_bits) - 1;
  const uint64_t exponent_all = ((uint64_t{1} << f.exponent_bits) - 1) << f.mantissa_bits;
  const uint64_t inf = exponent_all;
  const uint64_t max = (exponent_all - (uint64_t{1} << f.mantissa_bits)) | mantissa_all;
  const uint64_t quiet_nan = inf | (uint64_t{1} << (f.mantissa_bits - 1));
  switch (c) {
    case ExtremeClass::kSubnormal: {
      const uint64_t mid = uint64_t{1} << (f.mantissa_bits - 1);
      return std::vector<uint64_t>{1, sign | 1, mantissa_all, sign | mantissa_all, mid, sign | mid};
    }
    case ExtremeClass::kNearMax: return std::vector<uint64_t>{max, sign | max, max - 1, sign | (max - 1)};
    case ExtremeClass::kSignedZero: return std::vector<uint64_t>{0, sign};
    case ExtremeClass::kInf: return std::vector<uint64_t>{inf, sign | inf};
    case ExtremeClass::kNan: return std::vector<uint64_t>{quiet_nan, sign | quiet_nan};
  }
  return internal_error("extreme_pattern: unknown class");
}

namespace {

// More values than any tensor opgate fills holds (the case-size limit refuses larger tensors long
// before), so a typo'd count fails here instead of allocating gigabytes.
constexpr int64_t kMaxListedValues = int64_t{1} << 26;

Status parse_runs(const nlohmann::json& runs, const std::string& tensor, std::vector<double>* out) {
  if (!runs.is_array() || runs.empty()) {
    return parse_error(fmt::format("field 'tensors.{}.fill.runs': not a non-empty array of [value, count]", tensor));
  }
  int64_t total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string at = fmt::format("field 'tensors.{}.fill.runs[{}]'", tensor, i);
    const nlohmann::json& r = runs[i];
    if (!r.is_array() || r.size() != 2) return parse_error(at + ": not a [value, count] pair");
    auto v = value_of(r[0]);
    if (!v) return v.status().with_context(at);
    if (!r[1].is_number_integer() || r[1].get<int64_t>() < 1) return parse_error(at + ": count is not an integer >= 1");
    const int64_t count = r[1].get<int64_t>();
    if (count > kMaxListedValues - total) {
      return parse_error(fmt::format("{}: more than {} values in all", at, kMaxListedValues));
    }
    total += count;
    out->insert(out->end(), static_cast<size_t>(count), *v);
  }
  return Status::ok();
}

Status parse_sweep(const nlohmann::json& sweep, const std::string& field, FillOverride* o) {
  if (!sweep.is_object() || sweep.size() != 2 || !sweep.contains("from") || !sweep.contains("to") ||
      !sweep["from"].is_number() || !sweep["to"].is_number()) {
    return parse_error(field + ": expected {\"from\": <number>, \"to\": <number>}");
  }
  o->sweep_from = sweep["from"].get<double>();
  o->sweep_to = sweep["to"].get<double>();
  if (!(o->sweep_from <= o->sweep_to)) {
    return parse_error(fmt::format("{}: from {} is above to {}", field, o->sweep_from, o->sweep_to));
  }
  o->is_sweep = true;
  return Status::ok();
}

// The next value of `t` above x (x itself a value of t, not NaN); +inf past the largest finite.
double next_up(DType t, double x) {
  if (!is_floating(t)) return x + 1;
  if (x == 0 && std::signbit(x)) return 0.0;  // -0 then +0: both are patterns a kernel may treat apart
  if (t == DType::kF64) return std::nextafter(x, std::numeric_limits<double>::infinity());
  if (t == DType::kF32) return std::nextafter(static_cast<float>(x), std::numeric_limits<float>::infinity());
  // fp16 / bf16: the neighbour in sign-magnitude bit order.
  const bool bf16 = t == DType::kBF16;
  const uint16_t bits = bf16 ? bf16_from_double(x) : f16_from_double(x);
  const auto next = static_cast<uint16_t>((bits & 0x8000) != 0 ? bits - 1 : bits + 1);
  const uint16_t up = (bits & 0x7FFF) == 0 && (bits & 0x8000) != 0 ? uint16_t{0} : next;
  return bf16 ? bf16_to_double(up) : f16_to_double(up);
}

}  // namespace

Expected<std::vector<double>> sweep_values(DType dtype, double from, double to, int64_t limit) {
  std::vector<double> out;
  double x = std::ceil(from);
  if (is_floating(dtype)) {
    x = round_to(dtype, from);
    if (x < from) x = next_up(dtype, x);
    if (x == 0 && std::signbit(from) ) x = -0.0;
  }
  for (; x <= to && !std::isinf(x); x = next_up(dtype, x)) {
    if (static_cast<int64_t>(out.size()) == limit) {
      return parse_error(fmt::format("sweep: more than {} {} values in [{}, {}]", limit, dtype_name(dtype), from, to));
    }
    out.push_back(x);
  }
  if (out.empty()) return parse_error(fmt::format("sweep: no {} value in [{}, {}]", dtype_name(dtype), from, to));
  return out;
}

Expected<std::vector<FillOverride>> parse_fill_overrides(const nlohmann::json& tensors) {
  std::vector<FillOverride> out;
  if (!tensors.is_object()) return out;
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (!it.value().is_object() || !it.value().contains("fill")) continue;
    const std::string where = fmt::format("field 'tensors.{}.fill'", it.key());
    auto field = [&](const std::string& sub) { return fmt::format("field 'tensors.{}.fill.{}'", it.key(), sub); };
    const nlohmann::json& fill = it.value()["fill"];
    if (!fill.is_object() || fill.size() != 1 ||
        !(fill.contains("values") || fill.contains("extreme") || fill.contains("runs") || fill.contains("sweep"))) {
      return parse_error(where + ": expected {\"values\": [..]}, {\"runs\": [[value, count], ..]}, {\"sweep\": "
                         "{\"from\": a, \"to\": b}} or {\"extreme\": \"<class>\"} (classes: " + class_list() + ")");
    }
    FillOverride o;
    o.tensor = it.key();
    if (fill.contains("extreme")) {
      if (!fill["extreme"].is_string()) return parse_error(field("extreme") + ": not a string");
      auto c = parse_extreme_class(fill["extreme"].get<std::string>());
      if (!c) return c.status().with_context(field("extreme"));
      o.is_extreme = true;
      o.extreme = *c;
    } else if (fill.contains("runs")) {
      OPGATE_TRY(parse_runs(fill["runs"], it.key(), &o.values));
    } else if (fill.contains("sweep")) {
      OPGATE_TRY(parse_sweep(fill["sweep"], field("sweep"), &o));
    } else {
      const nlohmann::json& list = fill["values"];
      if (!list.is_array() || list.empty()) return parse_error(field("values") + ": not a non-empty array");
      for (size_t i = 0; i < list.size(); ++i) {
        auto v = value_of(list[i]);
        if (!v) return v.status().with_context(field(fmt::format("values[{}]", i)));
        o.values.push_back(*v);
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

Status apply_fill_override(const FillOverride& o, Tensor& t) {
  const int64_t n = t.numel();
  if (o.is_extreme) {
    OPGATE_ASSIGN_OR_RETURN(std::vector<uint64_t> bits, extreme_pattern(o.extreme, t.dtype()));
    // Every other element: the operator's values stay between the extremes, so rows still differ
    // (a tensor of one repeated pattern would make most comparisons vacuous) and a kernel meets
    // the extremes among ordinary values, as it would in a model.
    for (int64_t i = 0; i < n; i += 2) t.set_bits(i, bits[static_cast<size_t>(i / 2) % bits.size()]);
    return Status::ok();
  }
  std::vector<double> swept;
  if (o.is_sweep) {
    auto v = sweep_values(t.dtype(), o.sweep_from, o.sweep_to, n);
    if (!v) return v.status();
    swept = std::move(*v);
  }
  const std::vector<double>& values = o.is_sweep ? swept : o.values;
  if (static_cast<int64_t>(values.size()) > n) {
    return parse_error(fmt::format("values: {} values for a tensor of {} elements", values.size(), n));
  }
  for (size_t k = 0; k < values.size(); ++k) {
    if (std::string why = unrepresentable(t.dtype(), values[k]); !why.empty()) {
      return parse_error(fmt::format("values[{}]: {}", k, why));
    }
  }
  if (values.empty()) return Status::ok();  // the parser refuses empty lists; nothing to cycle
  // The list converted once (as Tensor::set would), then its bytes repeated over the tensor.
  const size_t size = dtype_size(t.dtype());
  std::vector<uint8_t> pattern(values.size() * size);
  store_elements(t.dtype(), values.data(), static_cast<int64_t>(values.size()), pattern.data());
  const size_t total = static_cast<size_t>(n) * size;
  for (size_t done = 0; done < total; done += pattern.size()) {
    std::memcpy(t.data() + done, pattern.data(), std::min(pattern.size(), total - done));
  }
  return Status::ok();
}

Status check_fill_overrides(const nlohmann::json& tensors, const SpecMap& specs) {
  OPGATE_ASSIGN_OR_RETURN(std::vector<FillOverride> overrides, parse_fill_overrides(tensors));
  for (const FillOverride& o : overrides) {
    const auto spec = specs.find(o.tensor);
    if (spec == specs.end()) continue;  // apply_spec_overrides names unknown tensors
    const std::string where = fmt::format("field 'tensors.{}.fill'", o.tensor);
    if (o.is_extreme) {
      auto bits = extreme_pattern(o.extreme, spec->second.dtype);
      if (!bits) return bits.status().with_context(fmt::format("field 'tensors.{}.fill.extreme'", o.tensor));
      continue;
    }
    const int64_t numel = shape_numel(spec->second.shape);
    if (o.is_sweep) {
      auto v = sweep_values(spec->second.dtype, o.sweep_from, o.sweep_to, numel);
      if (!v) return v.status().with_context(fmt::format("field 'tensors.{}.fill.sweep'", o.tensor));
      continue;
    }
    // A probe of the tensor's dtype, one element per value, checks every value.
    Tensor probe = Tensor::zeros(spec->second.dtype, {static_cast<int64_t>(o.values.size())});
    if (Status st = apply_fill_override(o, probe); !st.is_ok()) return st.with_context(where);
    if (static_cast<int64_t>(o.values.size()) > numel) {
      return parse_error(fmt::format("field 'tensors.{}.fill.values': {} values for a tensor of {} elements", o.tensor,
                                     o.values.size(), numel));
    }
  }
  return Status::ok();
}

Expected<TensorMap> fill_case_inputs(const Problem& problem, const Case& c) {
  OPGATE_ASSIGN_OR_RETURN(TensorMap inputs, problem.fill(c.fill, c.seed));
  auto overrides = parse_fill_overrides(c.tensors);
  if (!overrides) return overrides.status().with_context(case_where(c));
  for (const FillOverride& o : *overrides) {
    const auto it = inputs.find(o.tensor);
    if (it == inputs.end()) {
      std::string names;
      for (const auto& kv : inputs) names += (names.empty() ? "" : ", ") + kv.first;
      return parse_error(fmt::format("{}: field 'tensors.{}.fill': not an input of this call (inputs: {})",
                                     case_where(c), o.tensor, names));
    }
    // A copy: the operator's fill may share storage between tensors.
    Tensor t = it->second.clone();
    if (Status st = apply_fill_override(o, t); !st.is_ok()) {
      return st.with_context(fmt::format("{}: field 'tensors.{}.fill'", case_where(c), o.tensor));
    }
    it->second = t;
  }
  return inputs;
}

}  // namespace opgate
