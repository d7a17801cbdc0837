// The one serializer and the one parser of results (results.jsonl lines, the case child's pipe,
// failed/<id>.json): everything else reads the typed structs of core/result.h. The parser is the
// serializer's inverse on every recorded field; a missing field keeps its default (results of
// older versions lack newer metrics), a field of the wrong type is an error naming it.
// Not recorded, so back as defaults: OutputCheck::rounding and the tolerance fields of other
// standards, CompareMetrics::nonfinite_mismatch, ComparePoint::flat. CompareResult::kind comes back
// from the plan.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/compare.h"
#include "core/result.h"
#include "core/status.h"

namespace opgate {

nlohmann::json to_json(const OutputCheck& c);
nlohmann::json to_json(const CompareMetrics& m);
nlohmann::json to_json(const ComparePoint& p);
nlohmann::json to_json(const CompareResult& r);
// The CompareResult's fields plus "plan".
nlohmann::json to_json(const OutputResult& o);
nlohmann::json to_json(const CaseResult& r);

Expected<OutputCheck> output_check_from_json(const nlohmann::json& j);
Expected<CompareResult> compare_result_from_json(const nlohmann::json& j);
Expected<OutputResult> output_result_from_json(const nlohmann::json& j);
Expected<CaseResult> case_result_from_json(const nlohmann::json& j);

// A metric as the reports print it: its JSON text ("0.5", "1e-07", and "\"inf\"" for non-finite
// values, which JSON writes as strings).
std::string number_text(double v);

}  // namespace opgate
