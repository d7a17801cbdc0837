#include "reports/report_banner.h"

#include <fmt/format.h>

#include "core/markup.h"
#include "reports/run_facts.h"

namespace opgate {
namespace {

bool strict_run(const nlohmann::json& info) { return info.is_object() && info.value("strict", false); }

// "3 failed, 237 passed" and, when there are any, "2 other" (skipped, rejected...).
std::string counts_text(const nlohmann::json& info, const VerdictCounts& counts) {
  int64_t failed = 0, passed = 0, other = 0;
  for (size_t i = 0; i < kVerdictCount; ++i) {
    const Verdict v = static_cast<Verdict>(i);
    (verdict_fails(v, strict_run(info)) ? failed : v == Verdict::kPassed ? passed : other) += counts[i];
  }
  std::string s = fmt::format("{} failed, {} passed", failed, passed);
  return other > 0 ? s + fmt::format(", {} other", other) : s;
}

std::string verdict_word(const nlohmann::json& info, const VerdictCounts& counts) {
  return gate_exit_code(counts, strict_run(info)) == 0 ? "PASSED" : "FAILED";
}

std::string tiers(const nlohmann::json& info) {
  const nlohmann::json sel = info.is_object() && info.contains("selection") ? info["selection"] : nlohmann::json();
  std::string s;
  if (sel.is_object() && sel.contains("tiers") && sel["tiers"].is_array()) {
    for (const auto& t : sel["tiers"]) s += (s.empty() ? "" : "+") + (t.is_string() ? t.get<std::string>() : "");
  }
  return s;
}

}  // namespace

std::string report_title(const nlohmann::json& info, const VerdictCounts& counts) {
  std::string where = "opgate";
  for (const std::string& part : {tiers(info), run_date(info), hosts_text(info)}) {
    if (!part.empty() && part != "?") where += " " + part;
  }
  return fmt::format("{} · {} — {}", verdict_word(info, counts), counts_text(info, counts), where);
}

std::string report_banner(const nlohmann::json& info, const VerdictCounts& counts) {
  const std::string word = verdict_word(info, counts);
  const auto text = [&](const char* key) {
    return info.is_object() && info.contains(key) && info[key].is_string() ? info[key].get<std::string>() : "";
  };
  const std::string rev = text("kernel_rev"), start = text("started_at"), end = text("finished_at");
  std::string when = start.empty() ? "start not recorded" : start;
  if (!end.empty()) when += " – " + end;
  if (info.is_object() && info.contains("duration_s")) when += fmt::format(" ({} s)", info["duration_s"].dump());
  return fmt::format(
      "<div id=\"banner\" class=\"banner {}\"><h1 id=\"verdict\">{} · {}</h1><p class=\"facts\">"
      "<span id=\"when\">{}</span> · host <b id=\"host\">{}</b> · kernel rev <b id=\"kernel-rev\">{}</b> · {} · "
      "CANN {} · SoC {}</p><p class=\"facts\">{} · harness {}</p></div>",
      word == "PASSED" ? "pass" : "fail", word, xml_escape(counts_text(info, counts)), xml_escape(when),
      xml_escape(hosts_text(info)), xml_escape(rev.empty() ? "not given" : rev),
      xml_escape(recorded_backend(info)), xml_escape(cann_text(info)), xml_escape(soc_text(info)),
      xml_escape(selection_text(info)), xml_escape(text("harness_version")));
}

}  // namespace opgate
