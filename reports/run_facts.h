// When, where and what a run was: start and end time (UTC), duration, host, kernel rev, CANN
// version, SoC, harness version and the selection, as run.json records them and people read them.
// Not config fields (kConfigFields, kResumeFields): a resume or merge never compares them.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace opgate {

// "2026-12-07T09:08:39Z" for `t`.
std::string iso_utc(std::time_t t);
// The inverse of iso_utc; -1 for text that is not of that form.
std::time_t parse_iso_utc(const std::string& text);

// Adds started_at (now), host and, when given, kernel_rev to a run info.
void add_start_facts(nlohmann::json& info, const std::string& kernel_rev);
// Sets finished_at (`now`) and duration_s (from started_at; a resumed run's span includes the
// pause); a merged report ("merged_from") keeps its shards' span (add_merged_facts).
void add_end_facts(nlohmann::json& info, std::time_t now);
// The facts of a merge of shard run infos: the earliest start, the latest end, every host (and
// kernel rev) once, in order.
void add_merged_facts(nlohmann::json& merged, const std::vector<nlohmann::json>& shards);

// The CANN version and SoC as people read them: the backend probe's, or "n/a" (the backend that has
// none is named beside it).
std::string cann_text(const nlohmann::json& info);
std::string soc_text(const nlohmann::json& info);
// "tier ci · ops all · filter none" (files and generated cases too).
std::string selection_text(const nlohmann::json& info);
// The run date as "2026-12-07" ("" when unknown) and the hosts as "a, b".
std::string run_date(const nlohmann::json& info);
std::string hosts_text(const nlohmann::json& info);

// summary.txt's lines after the verdict: when, where, what (plain text, no JSON).
std::string facts_lines(const nlohmann::json& info);

}  // namespace opgate
