#include "history/history_format.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace opgate::history {
namespace {

std::string rev_text(const std::string& rev) { return rev.empty() ? "-" : rev; }

std::string number_text(double v) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

nlohmann::json number_json(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

nlohmann::json run_json(const RunRef& r) {
  return {{"run_id", r.run_id},
          {"started_at", r.started_at},
          {"kernel_rev", r.kernel_rev.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.kernel_rev)},
          {"backend", r.backend},
          {"state", r.state}};
}

nlohmann::json result_json(const CaseRun& c) {
  return {{"run", run_json(c.run)}, {"verdict", c.verdict}, {"reason", c.reason}};
}

// "run 3 (2026-12-01T18:00:00Z, kernel rev abc, fault:x, interrupted)"
std::string run_text(const RunRef& r) {
  return fmt::format("run {} ({}, kernel rev {}, {}{})", r.run_id, r.started_at, rev_text(r.kernel_rev), r.backend,
                     r.state == "finished" ? "" : ", " + r.state);
}

}  // namespace

std::string sparkline(const std::vector<double>& values, const std::vector<bool>& present) {
  static const char* const kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < values.size(); ++i) {
    if (present[i] && std::isfinite(values[i])) {
      lo = std::min(lo, values[i]);
      hi = std::max(hi, values[i]);
    }
  }
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (!present[i]) out += ' ';
    else if (std::isnan(v)) out += '?';
    else if (std::isinf(v)) out += v > 0 ? "^" : kBars[0];
    else if (hi == lo) out += kBars[v == 0 ? 0 : 3];  // flat: one mid bar (the floor bar for zeros)
    else out += kBars[static_cast<size_t>(std::lround((v - lo) / (hi - lo) * 7))];
  }
  return out;
}

std::string failing_text(const std::vector<FailingCase>& cases) {
  if (cases.empty()) return "no case is failing\n";
  size_t width = 4;
  for (const auto& c : cases) width = std::max(width, c.case_id.size());
  std::string out = fmt::format("{:<{}}  {:<13}  {:>6}  {}\n", "case", width, "verdict", "streak", "failing since");
  for (const auto& c : cases) {
    out += fmt::format("{:<{}}  {:<13}  {:>6}  {}\n", c.case_id, width, c.now.verdict, c.streak, run_text(c.since.run));
  }
  out += fmt::format("{} failing case(s)\n", cases.size());
  return out;
}

nlohmann::json failing_json(const std::vector<FailingCase>& cases) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& c : cases) {
    arr.push_back({{"case", c.case_id}, {"op", c.op}, {"now", result_json(c.now)}, {"since", result_json(c.since)},
                   {"streak", c.streak}});
  }
  return {{"failing", arr}};
}

std::string flaky_text(const std::vector<FlakyCase>& cases, int64_t unrevisioned) {
  std::string out;
  if (cases.empty()) out = "no case changed its verdict between runs of one kernel rev on one backend\n";
  for (const auto& c : cases) {
    const std::string soc = c.soc.empty() ? "" : " (" + c.soc + ")";
    out += fmt::format("{}  kernel rev {} on {}{}: {} flip(s) in {} runs:", c.case_id, c.kernel_rev, c.backend, soc,
                       c.flips, c.runs.size());
    for (const auto& r : c.runs) out += fmt::format(" {}:{}", r.run.run_id, r.verdict);
    out += "\n";
  }
  if (unrevisioned > 0) out += fmt::format("({} run(s) without --kernel-rev left out)\n", unrevisioned);
  return out;
}

nlohmann::json flaky_json(const std::vector<FlakyCase>& cases, int64_t unrevisioned) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& c : cases) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : c.runs) runs.push_back(result_json(r));
    arr.push_back({{"case", c.case_id}, {"op", c.op}, {"kernel_rev", c.kernel_rev}, {"backend", c.backend}, {"soc", c.soc}, {"flips", c.flips}, {"runs", runs}});
  }
  return {{"flaky", arr}, {"runs_without_kernel_rev", unrevisioned}};
}

// "  3  2026-12-01T18:00:00Z  rev abc  emu  ci  exit 1  240 cases: 238 PASSED, 2 FAILED"
std::string runs_text(const std::vector<RecordedRun>& runs) {
  if (runs.empty()) return "no run is recorded\n";
  std::string out;
  for (const RecordedRun& r : runs) {
    std::string counts;
    for (const auto& [verdict, n] : r.verdicts) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, verdict);
    const std::string soc = r.run.soc.empty() ? "" : " (" + r.run.soc + ")";
    const std::string ended = r.exit_code ? fmt::format("exit {}", *r.exit_code) : r.run.state;
    out += fmt::format("{:>5}  {}  rev {}  {}{}  {}{}  {}  {} case{}{}{}\n", r.run.run_id, r.run.started_at,
                       rev_text(r.run.kernel_rev), r.run.backend, soc, r.tiers.empty() ? "files" : r.tiers,
                       r.shard.empty() ? "" : " shard " + r.shard, ended, r.cases, r.cases == 1 ? "" : "s",
                       counts.empty() ? "" : ": ", counts);
  }
  return out;
}

nlohmann::json runs_json(const std::vector<RecordedRun>& runs) {
  nlohmann::json arr = nlohmann::json::array();
  for (const RecordedRun& r : runs) {
    nlohmann::json j = run_json(r.run);
    j["ended_at"] = r.ended_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.ended_at);
    j["exit_code"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
    j["soc"] = r.run.soc.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.run.soc);
    j["shard"] = r.shard.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.shard);
    j["host"] = r.host;
    j["tiers"] = r.tiers;
    j["cases"] = r.cases;
    j["verdicts"] = r.verdicts;
    arr.push_back(std::move(j));
  }
  return {{"runs", arr}};
}

std::string trend_text(const Trend& t) {
  std::string out = fmt::format("budget_used of {} (worst |error| / allowance, 1 is at the tolerance, 0 under an exact "
                                "check; * the output failed)\n",
                                t.case_id);
  size_t backend_width = 7;
  for (const auto& p : t.points) backend_width = std::max(backend_width, p.result.run.backend.size());
  out += fmt::format("{:>5}  {:<20}  {:<12}  {:<{}}  {:<13}", "run", "started", "kernel_rev", "backend", backend_width,
                     "verdict");
  std::vector<size_t> widths;
  for (const auto& name : t.outputs) {
    widths.push_back(std::max<size_t>(name.size(), 10));
    out += fmt::format("  {:>{}} ", name, widths.back());
  }
  out += "\n";
  for (const auto& p : t.points) {
    const RunRef& r = p.result.run;
    out += fmt::format("{:>5}  {:<20}  {:<12}  {:<{}}  {:<13}", r.run_id, r.started_at, rev_text(r.kernel_rev), r.backend,
                       backend_width, p.result.verdict);
    for (size_t i = 0; i < t.outputs.size(); ++i) {
      const auto it = p.budget_used.find(t.outputs[i]);
      std::string cell;
      if (it != p.budget_used.end()) cell = number_text(it->second) + (p.passed.at(t.outputs[i]) ? " " : "*");
      out += fmt::format("  {:>{}}", cell, widths[i] + 1);
    }
    out += "\n";
  }
  size_t name_width = 0;
  for (const auto& name : t.outputs) name_width = std::max(name_width, name.size());
  for (const auto& name : t.outputs) {
    std::vector<double> values;
    std::vector<bool> present;
    for (const auto& p : t.points) {
      const auto it = p.budget_used.find(name);
      present.push_back(it != p.budget_used.end());
      values.push_back(present.back() ? it->second : 0.0);
    }
    out += fmt::format("{:<{}}  {}\n", name, name_width, sparkline(values, present));
  }
  return out;
}

nlohmann::json trend_json(const Trend& t) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : t.points) {
    nlohmann::json budget = nlohmann::json::object();
    for (const auto& [name, v] : p.budget_used) budget[name] = number_json(v);
    nlohmann::json j = result_json(p.result);
    j["budget_used"] = budget;
    j["passed"] = p.passed;
    points.push_back(j);
  }
  return {{"case", t.case_id}, {"outputs", t.outputs}, {"points", points}};
}

std::string first_bad_text(const FirstBad& fb) {
  if (!fb.first_bad) {
    return fmt::format("{}: not failing (latest: {} in {})\n", fb.case_id, fb.latest.verdict, run_text(fb.latest.run));
  }
  std::string out = fmt::format("{}: failing in the last {} run(s) of the case\n", fb.case_id, fb.streak);
  out += fmt::format("  first bad: {} in {}: {}\n", fb.first_bad->verdict, run_text(fb.first_bad->run),
                     fb.first_bad->reason);
  if (fb.last_good) {
    out += fmt::format("  last good: {} in {}\n", fb.last_good->verdict, run_text(fb.last_good->run));
    out += fmt::format("  kernel revs: last good {}, first bad {}\n", rev_text(fb.last_good->run.kernel_rev),
                       rev_text(fb.first_bad->run.kernel_rev));
  } else {
    out += "  last good: none (failing since its first recorded result)\n";
  }
  return out;
}

nlohmann::json first_bad_json(const FirstBad& fb) {
  return {{"case", fb.case_id},
          {"failing", fb.first_bad.has_value()},
          {"latest", result_json(fb.latest)},
          {"streak", fb.streak},
          {"first_bad", fb.first_bad ? result_json(*fb.first_bad) : nlohmann::json(nullptr)},
          {"last_good", fb.last_good ? result_json(*fb.last_good) : nlohmann::json(nullptr)}};
}

}  // namespace opgate::history
