#include "history/history_record.h"

#include <unistd.h>

#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "history/history_from_result.h"

namespace opgate::history {
namespace {

std::string json_text(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const auto& v = j[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// JSON has no infinity or NaN: written as "inf", "-inf", "nan", as in results.jsonl.
nlohmann::json metric_json(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return stamp;
}

RunMeta run_meta_from_run_info(const nlohmann::json& info, const std::string& kernel_rev,
                               const std::string& report_dir) {
  RunMeta m;
  m.kernel_rev = kernel_rev;
  m.harness_version = json_text(info, "harness_version");
  const nlohmann::json probe = info.is_object() && info.contains("backend") ? info["backend"] : nlohmann::json();
  m.backend = json_text(probe, "backend");  // with its defect: fault:<defect>
  m.soc = json_text(probe, "soc");
  m.cann_version = json_text(probe, "cann_version");
  m.selection = info.is_object() && info.contains("selection") ? info["selection"].dump() : "{}";
  m.shard = json_text(info, "shard");
  m.report_dir = report_dir;
  return m;
}

Expected<std::unique_ptr<HistoryRecorder>> HistoryRecorder::open(const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(HistoryDb db, HistoryDb::open_for_recording(path));
  return std::unique_ptr<HistoryRecorder>(new HistoryRecorder(std::move(db)));
}

Status HistoryRecorder::begin_run(const RunMeta& meta) {
  OPGATE_ASSIGN_OR_RETURN(
      Statement st,
      db_.prepare("INSERT INTO runs (started_at, kernel_rev, harness_version, backend, soc, cann_version, selection, "
                  "shard, host, pid, report_dir) VALUES (?,?,?,?,?,?,?,?,?,?,?) RETURNING run_id"));
  auto text_or_null = [&](int i, const std::string& s) {
    if (s.empty()) st.bind_null(i);
    else st.bind(i, s);
  };
  st.bind(1, meta.started_at.empty() ? utc_now() : meta.started_at);
  text_or_null(2, meta.kernel_rev);
  st.bind(3, meta.harness_version);
  st.bind(4, meta.backend);
  text_or_null(5, meta.soc);
  text_or_null(6, meta.cann_version);
  st.bind(7, meta.selection.empty() ? std::string("{}") : meta.selection);
  text_or_null(8, meta.shard);
  st.bind(9, meta.host.empty() ? this_host() : meta.host);
  st.bind(10, meta.pid != 0 ? meta.pid : static_cast<int64_t>(getpid()));
  text_or_null(11, meta.report_dir);
  OPGATE_ASSIGN_OR_RETURN(bool row, st.step());
  if (!row) return db_.error("recording the run");
  run_id_ = st.integer(0);
  return st.run();
}

Status HistoryRecorder::record_in_transaction(const HistoryCase& c) {
  {
    OPGATE_ASSIGN_OR_RETURN(Statement st,
                            db_.prepare("INSERT INTO cases (case_id, op) VALUES (?,?) ON CONFLICT(case_id) DO NOTHING"));
    OPGATE_TRY(st.bind(1, c.id).bind(2, c.op).run());
  }
  int64_t case_pk = 0;
  {
    OPGATE_ASSIGN_OR_RETURN(Statement st, db_.prepare("SELECT case_pk FROM cases WHERE case_id = ?"));
    OPGATE_ASSIGN_OR_RETURN(bool row, st.bind(1, c.id).step());
    if (!row) return db_.error("recording case " + c.id);
    case_pk = st.integer(0);
  }
  {
    OPGATE_ASSIGN_OR_RETURN(
        Statement st,
        db_.prepare("INSERT INTO results (case_pk, run_id, tier, verdict, reason, duration_ms) VALUES (?,?,?,?,?,?)"));
    OPGATE_TRY(st.bind(1, case_pk).bind(2, run_id_).bind(3, c.tier).bind(4, c.verdict).bind(5, c.reason)
                   .bind(6, c.duration_ms).run());
  }
  OPGATE_ASSIGN_OR_RETURN(
      Statement st,
      db_.prepare("INSERT INTO outputs (case_pk, run_id, name, check_kind, passed, budget_used, metrics) "
                  "VALUES (?,?,?,?,?,?,?)"));
  for (const auto& o : c.outputs) {
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [name, value] : o.metrics) metrics[name] = metric_json(value);
    OPGATE_TRY(st.bind(1, case_pk).bind(2, run_id_).bind(3, o.name).bind(4, o.check)
                   .bind(5, int64_t{o.passed ? 1 : 0}).bind(6, o.budget_used).bind(7, metrics.dump()).run());
    OPGATE_TRY(st.reset());
  }
  return Status::ok();
}

Status HistoryRecorder::record(const HistoryCase& c) {
  if (run_id_ == 0) return internal_error("history: record before begin_run");
  // One transaction per case: a killed run keeps every case recorded before it, none half.
  OPGATE_TRY(db_.exec("BEGIN IMMEDIATE"));
  Status st = record_in_transaction(c);
  if (!st.is_ok()) {
    db_.exec("ROLLBACK");
    return st.with_context("recording case " + c.id);
  }
  return db_.exec("COMMIT");
}

Status HistoryRecorder::record(const CaseResult& r) { return record(history_case_from_result(r)); }

Status HistoryRecorder::end_run(int exit_code) {
  if (run_id_ == 0) return Status::ok();
  OPGATE_ASSIGN_OR_RETURN(Statement st, db_.prepare("UPDATE runs SET ended_at = ?, exit_code = ? WHERE run_id = ?"));
  return st.bind(1, utc_now()).bind(2, int64_t{exit_code}).bind(3, run_id_).run();
}

}  // namespace opgate::history
