// Generated cases: N cases of one operator from its generator over the seeded RNG chooser, with
// stable ids and a size budget, plus the feature statistics `opgate gen --stats` prints.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/case.h"
#include "cases/registry.h"
#include "core/fill_override.h"

namespace opgate {

// Input-element budgets: small (unit-test sized), medium (ci), large (nightly).
enum class SizeClass { kSmall, kMedium, kLarge };
Expected<SizeClass> parse_size_class(const std::string& name);
int64_t element_budget(SizeClass s);

// Why draws of a generator were not made into cases (`run --generate` reports it).
struct GenerateSkips {
  int64_t draws = 0;        // every draw, kept or skipped
  int64_t unparsed = 0;     // params the operator's from_json rejects
  int64_t invalid = 0;      // a call the operator's validation rejects
  int64_t over_budget = 0;  // more input elements than the size class allows
  int64_t skipped() const { return unparsed + invalid + over_budget; }
};
// "<stem>: N cases from D draws (skipped S: U unparsed, I invalid calls, B over the budget of E input elements)".
std::string skips_line(const std::string& stem, int64_t cases, const GenerateSkips& s, SizeClass size);

// `count` valid cases of `op`; the same (op, seed, count, size) gives the same cases byte for
// byte. Draws exceeding the budget, or invalid calls, are redrawn (bounded) and counted in
// `skips`. Ids are "<short>.gen<seed>.<dtype>.<nnn>"; fills cycle exact, realistic, adversarial.
Expected<std::vector<Case>> generate_cases(const OpInfo& op, int64_t count, uint64_t seed, SizeClass size,
                                           GenerateSkips* skips = nullptr);

// The cases of generate_cases (extreme: of generate_extreme_cases), handed to `visit` one at a
// time as they are made and kept nowhere: memory stays that of one case whatever `count` (a
// million cases held at once took 2 GB). An error of `visit` stops the generation and is returned.
Status for_each_generated_case(const OpInfo& op, int64_t count, uint64_t seed, SizeClass size, bool extreme,
                               GenerateSkips* skips, const std::function<Status(Case&)>& visit);

// generate_cases, each case then given one per-tensor `extreme` fill (core/fill_override.h): case n
// overrides its (n mod k)-th float input (k float inputs, in name order) with the class
// subnormal, near_max, signed_zero in turn (NaN and Inf are left to case files, where the
// operator's spec says what they give). Ids gain ".x<class>"; tags gain "extreme".
Expected<std::vector<Case>> generate_extreme_cases(const OpInfo& op, int64_t count, uint64_t seed, SizeClass size,
                                                   GenerateSkips* skips = nullptr);

// The dtype part of a generated case id: "f16", "bf16", "f32", "i8", or "any" without a dtype param.
std::string case_dtype_name(const nlohmann::json& params);

// Gives `c` one per-tensor `extreme` fill of class `cls` on its (tensor_pick mod k)-th float input
// (k float inputs, in name order; none: `c` unchanged). The id gains ".x<class>", the tags "extreme".
Status apply_extreme_fill(Case& c, ExtremeClass cls, size_t tensor_pick);

// Total elements of a problem's input tensors (the cost proxy used by budgets and shrinking).
int64_t input_elements(const Problem& p);

// Feature -> value -> count over the params of `cases`: every param key, with integers bucketed
// by powers of two ("0", "1", "2-3", "4-7", ...), plus the fill mode.
using FeatureStats = std::map<std::string, std::map<std::string, int64_t>>;
FeatureStats feature_stats(const std::vector<Case>& cases);
void add_feature_stats(FeatureStats& stats, const Case& c);  // one case more
// The categorical value of a param as `feature_stats` names it.
std::string feature_value(const nlohmann::json& v);

}  // namespace opgate
