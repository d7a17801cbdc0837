// The run facts: recorded once at the start and end of a run (or merge), read by every page.
#include "reports/run_facts.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "core/report_folder.h"

namespace opgate {
namespace {

std::string text_of(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// A probe value, or n/a: every place that prints it names the backend already (the banner beside
// it, summary.txt's first line), so n/a does not repeat it.
std::string probe_text(const nlohmann::json& info, const char* key) {
  const nlohmann::json probe = info.is_object() && info.contains("backend") ? info["backend"] : nlohmann::json();
  const std::string v = text_of(probe, key);
  return v.empty() ? "n/a" : v;
}

std::string joined(const nlohmann::json& list, const char* none) {
  if (!list.is_array() || list.empty()) return none;
  std::string s;
  for (const auto& v : list) s += (s.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

// Appends each string of `from` (a string or a list) to the list `into` once.
void add_once(nlohmann::json& into, const nlohmann::json& from) {
  const auto add = [&](const nlohmann::json& v) {
    if (v.is_string() && std::find(into.begin(), into.end(), v) == into.end()) into.push_back(v);
  };
  if (from.is_array()) {
    for (const auto& v : from) add(v);
  } else {
    add(from);
  }
}

}  // namespace

std::string iso_utc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return stamp;
}

std::time_t parse_iso_utc(const std::string& text) {
  std::tm tm{};
  char z = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &z) != 7 || z != 'Z' || text.size() != 20) {
    return -1;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return timegm(&tm);
}

void add_start_facts(nlohmann::json& info, const std::string& kernel_rev) {
  info["started_at"] = iso_utc(std::time(nullptr));
  info["host"] = host_name();
  if (!kernel_rev.empty()) info["kernel_rev"] = kernel_rev;
}

void add_end_facts(nlohmann::json& info, std::time_t now) {
  if (!info.is_object() || info.contains("merged_from")) return;
  info["finished_at"] = iso_utc(now);
  const std::time_t start = parse_iso_utc(text_of(info, "started_at"));
  if (start >= 0) info["duration_s"] = static_cast<int64_t>(now - start);
}

void add_merged_facts(nlohmann::json& merged, const std::vector<nlohmann::json>& shards) {
  std::string start, end;  // ISO text in one zone and width orders as the times do
  nlohmann::json hosts = nlohmann::json::array(), revs = nlohmann::json::array();
  for (const auto& s : shards) {
    const std::string a = text_of(s, "started_at"), b = text_of(s, "finished_at");
    if (!a.empty() && (start.empty() || a < start)) start = a;
    if (!b.empty() && b > end) end = b;
    add_once(hosts, s.is_object() && s.contains("hosts") ? s["hosts"] : s.value("host", nlohmann::json()));
    add_once(revs, s.is_object() && s.contains("kernel_rev") ? s["kernel_rev"] : nlohmann::json());
    if (!merged.contains("harness_version") && s.is_object() && s.contains("harness_version")) {
      merged["harness_version"] = s["harness_version"];
    }
    if (!merged.contains("selection") && s.is_object() && s.contains("selection")) merged["selection"] = s["selection"];
  }
  if (!start.empty()) merged["started_at"] = start;
  if (!end.empty()) {
    merged["finished_at"] = end;
    if (!start.empty()) merged["duration_s"] = static_cast<int64_t>(parse_iso_utc(end) - parse_iso_utc(start));
  }
  if (!hosts.empty()) merged["hosts"] = hosts;
  if (revs.size() == 1) merged["kernel_rev"] = revs[0];
  if (revs.size() > 1) merged["kernel_rev"] = joined(revs, "");
}

std::string cann_text(const nlohmann::json& info) { return probe_text(info, "cann_version"); }
std::string soc_text(const nlohmann::json& info) { return probe_text(info, "soc"); }

std::string selection_text(const nlohmann::json& info) {
  const nlohmann::json sel = info.is_object() && info.contains("selection") ? info["selection"] : nlohmann::json();
  if (!sel.is_object()) return "n/a";
  std::string s = fmt::format("tier {} · ops {}", joined(sel.value("tiers", nlohmann::json()), "-"),
                              joined(sel.value("ops", nlohmann::json()), "all"));
  const std::string filter = text_of(sel, "filter");
  s += " · filter " + (filter.empty() ? std::string("none") : filter);
  if (sel.contains("files") && sel["files"].is_array() && !sel["files"].empty()) {
    s += fmt::format(" · {} case file(s)", sel["files"].size());
  }
  if (sel.contains("generate")) s += fmt::format(" · {} generated", sel["generate"].dump());
  return s;
}

std::string run_date(const nlohmann::json& info) {
  const std::string start = text_of(info, "started_at");
  return start.size() >= 10 ? start.substr(0, 10) : "";
}

std::string hosts_text(const nlohmann::json& info) {
  if (info.is_object() && info.contains("hosts")) return joined(info["hosts"], "?");
  const std::string host = text_of(info, "host");
  return host.empty() ? "?" : host;
}

std::string facts_lines(const nlohmann::json& info) {
  const std::string start = text_of(info, "started_at"), end = text_of(info, "finished_at");
  std::string s = fmt::format("started {}, finished {}", start.empty() ? "?" : start, end.empty() ? "?" : end);
  if (info.is_object() && info.contains("duration_s")) s += fmt::format(" ({} s)", info["duration_s"].dump());
  s += fmt::format(" on {}\n", hosts_text(info));
  const std::string rev = text_of(info, "kernel_rev");
  s += fmt::format("kernel rev {} · CANN {} · SoC {} · harness {}\n", rev.empty() ? "not given" : rev,
                   cann_text(info), soc_text(info), text_of(info, "harness_version"));
  return s + "selection: " + selection_text(info) + "\n";
}

}  // namespace opgate
