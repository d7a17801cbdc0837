// Seeded generation of whole cases and their feature statistics.
#include "cases/generate.h"

#include <fmt/format.h>

#include "cases/chooser.h"
#include "core/fill_override.h"

namespace opgate {

namespace {
// Case ids use the short dtype names of the hand-written tiers (f16, bf16, f32, i8).
std::string short_dtype(const std::string& name) {
  auto d = parse_dtype(name);
  if (!d) return name;
  switch (*d) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI8: return "i8";
    default: return name;
  }
}
}  // namespace

Expected<SizeClass> parse_size_class(const std::string& name) {
  if (name == "small") return SizeClass::kSmall;
  if (name == "medium") return SizeClass::kMedium;
  if (name == "large") return SizeClass::kLarge;
  return parse_error(fmt::format("--size '{}': expected small, medium or large", name));
}

int64_t element_budget(SizeClass s) {
  switch (s) {
    case SizeClass::kSmall: return int64_t{1} << 14;
    case SizeClass::kMedium: return int64_t{1} << 20;
    case SizeClass::kLarge: return int64_t{1} << 26;
  }
  return 0;
}

int64_t input_elements(const Problem& p) {
  int64_t n = 0;
  for (const auto& [name, spec] : p.specs()) {
    if (spec.present) n += shape_numel(spec.shape);
  }
  return n;
}

std::string skips_line(const std::string& stem, int64_t cases, const GenerateSkips& s, SizeClass size) {
  std::string line = fmt::format("{}: {} generated case(s) from {} draw(s)", stem, cases, s.draws);
  if (s.skipped() == 0) return line + ", none skipped";
  return line + fmt::format(" (skipped {}: {} unparsed, {} invalid call(s), {} over the budget of {} input elements)",
                            s.skipped(), s.unparsed, s.invalid, s.over_budget, element_budget(size));
}

namespace {

// Case n of the sequence gets one extreme per-tensor fill (see generate_extreme_cases).
Status make_extreme(Case& c, int64_t n) {
  static const ExtremeClass kClasses[] = {ExtremeClass::kSubnormal, ExtremeClass::kNearMax, ExtremeClass::kSignedZero};
  return apply_extreme_fill(c, kClasses[n % 3], static_cast<size_t>(n));
}

}  // namespace

std::string case_dtype_name(const nlohmann::json& params) {
  return params.contains("dtype") ? short_dtype(feature_value(params["dtype"])) : "any";
}

Status apply_extreme_fill(Case& c, ExtremeClass cls, size_t tensor_pick) {
  OPGATE_ASSIGN_OR_RETURN(auto problem, make_problem(c));
  // Inputs the operator fills (outputs and absent optionals have no values to override).
  OPGATE_ASSIGN_OR_RETURN(TensorMap inputs, problem->fill(FillMode::kExact, c.seed));
  std::vector<std::string> floats;
  for (const auto& [name, t] : inputs) {
    const auto spec = problem->specs().find(name);  // overrides name the call's descriptors
    if (spec != problem->specs().end() && is_floating(t.dtype()) && t.numel() > 0) floats.push_back(name);
  }
  if (floats.empty()) return Status::ok();
  const std::string& tensor = floats[tensor_pick % floats.size()];
  c.tensors[tensor]["fill"] = {{"extreme", extreme_class_name(cls)}};
  c.id += std::string(".x") + extreme_class_name(cls);
  c.tags.push_back("extreme");
  return Status::ok();
}

Status for_each_generated_case(const OpInfo& op, int64_t count, uint64_t seed, SizeClass size, bool extreme,
                               GenerateSkips* skips, const std::function<Status(Case&)>& visit) {
  GenerateSkips local;
  GenerateSkips& sk = skips != nullptr ? *skips : local;
  static const FillMode kFills[] = {FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial};
  constexpr int kMaxDrawsPerCase = 200;
  uint64_t draw = 0;
  for (int64_t n = 0; n < count; ++n) {
    bool made = false;
    for (int attempt = 0; attempt < kMaxDrawsPerCase && !made; ++attempt, ++draw) {
      // Draws are numbered across the whole sequence, so every case is a function of the seed.
      RngChooser chooser(seed * 0x9E3779B97F4A7C15ull + draw);
      Case c;
      c.op = op.stem;
      c.params = op.generate(chooser);
      c.seed = seed * 1000003 + static_cast<uint64_t>(n);
      c.fill = kFills[n % 3];
      c.id = fmt::format("{}.gen{}.{}.{:03d}", op.short_name, seed, case_dtype_name(c.params), n);
      c.tags = {"generated"};
      ++sk.draws;
      auto problem = make_problem(c);
      if (!problem) {
        ++sk.unparsed;
        continue;
      }
      if (!(*problem)->validate().is_ok()) {
        ++sk.invalid;
        continue;
      }
      if (input_elements(**problem) > element_budget(size)) {
        ++sk.over_budget;
        continue;
      }
      if (extreme) OPGATE_TRY(make_extreme(c, n));
      OPGATE_TRY(visit(c));
      made = true;
    }
    if (!made) {
      return internal_error(fmt::format("{}: no valid case within the {} budget after {} draws", op.stem,
                                        element_budget(size), kMaxDrawsPerCase));
    }
  }
  return Status::ok();
}

namespace {

Expected<std::vector<Case>> collect_generated(const OpInfo& op, int64_t count, uint64_t seed, SizeClass size,
                                              bool extreme, GenerateSkips* skips) {
  std::vector<Case> out;
  OPGATE_TRY(for_each_generated_case(op, count, seed, size, extreme, skips, [&](Case& c) {
    out.push_back(std::move(c));
    return Status::ok();
  }));
  return out;
}

}  // namespace

Expected<std::vector<Case>> generate_cases(const OpInfo& op, int64_t count, uint64_t seed, SizeClass size,
                                           GenerateSkips* skips) {
  return collect_generated(op, count, seed, size, false, skips);
}

Expected<std::vector<Case>> generate_extreme_cases(const OpInfo& op, int64_t count, uint64_t seed, SizeClass size,
                                                   GenerateSkips* skips) {
  return collect_generated(op, count, seed, size, true, skips);
}

std::string feature_value(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x <= 1) return std::to_string(x);
    int64_t lo = 2;
    while (lo * 2 <= x) lo *= 2;
    return fmt::format("{}-{}", lo, 2 * lo - 1);
  }
  if (v.is_number()) return fmt::format("{:g}", v.get<double>());
  return v.dump();
}

void add_feature_stats(FeatureStats& s, const Case& c) {
  for (auto it = c.params.begin(); it != c.params.end(); ++it) {
    if (it.value().is_array()) {
      ++s[it.key() + ".length"][feature_value(static_cast<int64_t>(it.value().size()))];
    } else {
      ++s[it.key()][feature_value(it.value())];
    }
  }
  ++s["fill"][fill_mode_name(c.fill)];
}

FeatureStats feature_stats(const std::vector<Case>& cases) {
  FeatureStats s;
  for (const auto& c : cases) add_feature_stats(s, c);
  return s;
}

}  // namespace opgate
