#include "history/history_query.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/report_folder.h"

namespace opgate::history {
namespace {

struct Row {
  std::string case_id, op;
  CaseRun result;
};

std::string this_host() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "";
}

// A run without ended_at is still running only if its process is alive on this host.
std::string run_state(bool ended, const std::string& host, int64_t pid) {
  if (ended) return "finished";
  if (host == this_host() && pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) return "running";
  return "interrupted";
}

// Every result (of one case, when `case_id` is set), by case id, then oldest run first.
Expected<std::vector<Row>> load_results(const HistoryDb& db, const std::string& case_id) {
  std::string sql =
      "SELECT c.case_id, c.op, r.run_id, u.started_at, u.kernel_rev, u.backend, u.ended_at IS NOT NULL, u.host, "
      "u.pid, r.verdict, r.reason, u.soc FROM results r JOIN cases c USING (case_pk) JOIN runs u USING (run_id)";
  if (!case_id.empty()) sql += " WHERE c.case_id = ?";
  sql += " ORDER BY c.case_id, r.run_id";
  OPGATE_ASSIGN_OR_RETURN(Statement st, db.prepare(sql));
  if (!case_id.empty()) st.bind(1, case_id);
  std::vector<Row> rows;
  for (;;) {
    OPGATE_ASSIGN_OR_RETURN(bool more, st.step());
    if (!more) break;
    Row row;
    row.case_id = st.text(0);
    row.op = st.text(1);
    RunRef& run = row.result.run;
    run.run_id = st.integer(2);
    run.started_at = st.text(3);
    run.kernel_rev = st.text(4);
    run.backend = st.text(5);
    run.state = run_state(st.integer(6) != 0, st.text(7), st.integer(8));
    row.result.verdict = st.text(9);
    row.result.reason = st.text(10);
    run.soc = st.text(11);
    rows.push_back(std::move(row));
  }
  if (!case_id.empty() && rows.empty()) {
    return parse_error(fmt::format("{}: no results for case '{}'", db.path(), case_id));
  }
  return rows;
}

// Calls fn(first, last) for each case's range of rows.
template <class Fn>
void per_case(const std::vector<Row>& rows, Fn fn) {
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j < rows.size() && rows[j].case_id == rows[i].case_id) ++j;
    fn(i, j);
    i = j;
  }
}

// The case's results without SKIPPED (a backend that cannot run a case says nothing of its kernel).
std::vector<const Row*> judged(const std::vector<Row>& rows, size_t first, size_t last) {
  std::vector<const Row*> out;
  for (size_t i = first; i < last; ++i) {
    if (rows[i].result.verdict != "SKIPPED") out.push_back(&rows[i]);
  }
  return out;
}

// Index in `results` of the first of the trailing failing results; results.size() when the last
// one does not fail.
size_t streak_start(const std::vector<const Row*>& results) {
  size_t start = results.size();
  while (start > 0 && is_failing_verdict(results[start - 1]->result.verdict)) --start;
  return start;
}

// Why a --failing-since value shaped like YYYY-MM-DD[THH:MM[:SS][Z]] names no moment of the
// calendar ("2026-02-30", "2026-13-45", "...T25:00:00Z"); empty when it names one.
std::string calendar_error(const std::string& date) {
  const auto field = [&](size_t at) { return date.size() >= at + 2 ? std::stoi(date.substr(at, 2)) : 0; };
  const int year = std::stoi(date.substr(0, 4)), month = field(5), day = field(8);
  if (month < 1 || month > 12) return fmt::format("month {}", month);
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const int days = kDays[month - 1] + (month == 2 && leap ? 1 : 0);
  if (day < 1 || day > days) return fmt::format("day {} (month {} of {} has {} days)", day, month, year, days);
  if (date.size() <= 10) return "";
  if (field(11) > 23) return fmt::format("hour {}", field(11));
  if (field(14) > 59) return fmt::format("minute {}", field(14));
  if (date.size() >= 19 && date[16] == ':' && field(17) > 59) return fmt::format("second {}", field(17));
  return "";
}

}  // namespace

bool is_failing_verdict(const std::string& verdict) {
  const auto v = parse_verdict(verdict);
  return v && verdict_fails(*v, false);
}

Expected<std::vector<FailingCase>> failing_cases(const HistoryDb& db, const std::string& since) {
  int64_t since_run = 0;
  std::string since_time;
  if (!since.empty()) {
    static const std::regex kRunId("[0-9]{1,18}");
    static const std::regex kDate("[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?Z?)?");
    if (std::regex_match(since, kRunId)) {
      since_run = std::stoll(since);
      OPGATE_ASSIGN_OR_RETURN(Statement st, db.prepare("SELECT 1 FROM runs WHERE run_id = ?"));
      OPGATE_ASSIGN_OR_RETURN(bool found, st.bind(1, since_run).step());
      if (!found) return parse_error(fmt::format("{}: --failing-since: no run {}", db.path(), since));
    } else if (std::regex_match(since, kDate)) {
      if (const std::string why = calendar_error(since); !why.empty()) {
        return parse_error(fmt::format("--failing-since: '{}' is no UTC date: {}", since, why));
      }
      since_time = since;
    } else {
      return parse_error(fmt::format("--failing-since: expected a run id or a UTC date (2026-12-01 or "
                                     "2026-12-01T18:00:00Z), got '{}'",
                                     since));
    }
  }
  OPGATE_ASSIGN_OR_RETURN(std::vector<Row> rows, load_results(db, ""));
  std::vector<FailingCase> out;
  per_case(rows, [&](size_t first, size_t last) {
    const auto results = judged(rows, first, last);
    const size_t start = streak_start(results);
    if (start == results.size()) return;
    const CaseRun& begin = results[start]->result;
    if (since_run > 0 && begin.run.run_id < since_run) return;
    if (!since_time.empty() && begin.run.started_at < since_time) return;
    out.push_back({rows[first].case_id, rows[first].op, results.back()->result, begin,
                   static_cast<int64_t>(results.size() - start)});
  });
  return out;
}

Expected<std::vector<RecordedRun>> recorded_runs(const HistoryDb& db, int64_t last) {
  std::vector<RecordedRun> runs;
  {
    OPGATE_ASSIGN_OR_RETURN(Statement st, db.prepare(
        "SELECT run_id, started_at, ended_at, exit_code, kernel_rev, backend, soc, shard, host, pid, selection "
        "FROM (SELECT * FROM runs ORDER BY run_id DESC LIMIT ?) ORDER BY run_id"));
    st.bind(1, last > 0 ? last : int64_t{-1});  // SQLite: a negative LIMIT is no limit
    for (;;) {
      OPGATE_ASSIGN_OR_RETURN(bool more, st.step());
      if (!more) break;
      RecordedRun r;
      r.run.run_id = st.integer(0);
      r.run.started_at = st.text(1);
      r.ended_at = st.text(2);
      if (!st.is_null(3)) r.exit_code = st.integer(3);
      r.run.kernel_rev = st.text(4);
      r.run.backend = st.text(5);
      r.run.soc = st.text(6);
      r.shard = st.text(7);
      r.host = st.text(8);
      r.run.state = run_state(!st.is_null(2), r.host, st.integer(9));
      // The selection as run.json records it; a damaged one lists no tiers rather than failing.
      const nlohmann::json sel = nlohmann::json::parse(st.text(10), nullptr, false);
      if (sel.is_object() && sel.contains("tiers") && sel["tiers"].is_array()) {
        for (const auto& t : sel["tiers"]) {
          if (t.is_string()) r.tiers += (r.tiers.empty() ? "" : ",") + t.get<std::string>();
        }
      }
      runs.push_back(std::move(r));
    }
  }
  if (runs.empty()) return runs;
  OPGATE_ASSIGN_OR_RETURN(Statement st, db.prepare(
      "SELECT run_id, verdict, count(*) FROM results WHERE run_id >= ? GROUP BY run_id, verdict"));
  st.bind(1, runs.front().run.run_id);
  std::map<int64_t, RecordedRun*> by_id;
  for (RecordedRun& r : runs) by_id[r.run.run_id] = &r;
  for (;;) {
    OPGATE_ASSIGN_OR_RETURN(bool more, st.step());
    if (!more) break;
    auto it = by_id.find(st.integer(0));
    if (it == by_id.end()) continue;
    it->second->verdicts[st.text(1)] = st.integer(2);
    it->second->cases += st.integer(2);
  }
  return runs;
}

Expected<std::vector<FlakyCase>> flaky_cases(const HistoryDb& db, int64_t* unrevisioned) {
  {
    OPGATE_ASSIGN_OR_RETURN(Statement st, db.prepare("SELECT count(*) FROM runs WHERE kernel_rev IS NULL"));
    OPGATE_ASSIGN_OR_RETURN(bool row, st.step());
    *unrevisioned = row ? st.integer(0) : 0;
  }
  OPGATE_ASSIGN_OR_RETURN(std::vector<Row> rows, load_results(db, ""));
  std::vector<FlakyCase> out;
  per_case(rows, [&](size_t first, size_t last) {
    // (kernel rev, backend, SoC) in name order: one device under one kernel build.
    std::map<std::tuple<std::string, std::string, std::string>, FlakyCase> by_device;
    for (const Row* row : judged(rows, first, last)) {
      const RunRef& run = row->result.run;
      if (run.kernel_rev.empty()) continue;
      FlakyCase& f = by_device[{run.kernel_rev, run.backend, run.soc}];
      if (!f.runs.empty() && f.runs.back().verdict != row->result.verdict) ++f.flips;
      f.runs.push_back(row->result);
    }
    for (auto& [device, f] : by_device) {
      if (f.flips == 0) continue;
      f.case_id = rows[first].case_id;
      f.op = rows[first].op;
      std::tie(f.kernel_rev, f.backend, f.soc) = device;
      out.push_back(std::move(f));
    }
  });
  return out;
}

Expected<Trend> budget_trend(const HistoryDb& db, const std::string& case_id, const std::string& output,
                             int64_t last) {
  OPGATE_ASSIGN_OR_RETURN(std::vector<Row> rows, load_results(db, case_id));
  Trend t;
  t.case_id = case_id;
  const size_t first = last > 0 && rows.size() > static_cast<size_t>(last) ? rows.size() - static_cast<size_t>(last) : 0;
  std::map<int64_t, size_t> point_of_run;
  for (size_t i = first; i < rows.size(); ++i) {
    point_of_run[rows[i].result.run.run_id] = t.points.size();
    t.points.push_back({rows[i].result, {}, {}});
  }
  OPGATE_ASSIGN_OR_RETURN(Statement st, db.prepare("SELECT o.run_id, o.name, o.budget_used, o.passed FROM outputs o JOIN cases c "
                                                   "USING (case_pk) WHERE c.case_id = ? AND o.run_id >= ?"));
  st.bind(1, case_id).bind(2, t.points.front().result.run.run_id);
  std::set<std::string> names, all_names;
  for (;;) {
    OPGATE_ASSIGN_OR_RETURN(bool more, st.step());
    if (!more) break;
    const auto it = point_of_run.find(st.integer(0));
    if (it == point_of_run.end()) continue;
    const std::string name = st.text(1);
    all_names.insert(name);
    if (!output.empty() && name != output) continue;
    names.insert(name);
    t.points[it->second].budget_used[name] = st.real(2);
    t.points[it->second].passed[name] = st.integer(3) != 0;
  }
  if (!output.empty() && names.empty()) {
    std::string known;
    for (const auto& n : all_names) known += (known.empty() ? "" : ", ") + n;
    return parse_error(fmt::format("{}: case '{}' has no output '{}' in its last {} result(s) (outputs: {})",
                                   db.path(), case_id, output, t.points.size(), known.empty() ? "none" : known));
  }
  t.outputs.assign(names.begin(), names.end());
  return t;
}

Expected<FirstBad> first_bad(const HistoryDb& db, const std::string& case_id) {
  OPGATE_ASSIGN_OR_RETURN(std::vector<Row> rows, load_results(db, case_id));
  FirstBad fb;
  fb.case_id = case_id;
  fb.latest = rows.back().result;
  const auto results = judged(rows, 0, rows.size());
  const size_t start = streak_start(results);
  if (start == results.size()) return fb;
  fb.first_bad = results[start]->result;
  fb.streak = static_cast<int64_t>(results.size() - start);
  if (start > 0) fb.last_good = results[start - 1]->result;
  return fb;
}

}  // namespace opgate::history
