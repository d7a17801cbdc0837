// Recording a run into the history: one row per run (ended_at stays NULL if the run is killed),
// then one transaction per case as its result arrives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/report_folder.h"
#include "core/status.h"
#include "history/history_case.h"
#include "history/history_db.h"

namespace opgate::history {

struct RunMeta {
  std::string started_at;  // UTC; now when empty
  std::string kernel_rev;  // empty: not given
  std::string harness_version;
  std::string backend;
  std::string soc, cann_version;  // empty when the backend does not report them
  std::string selection;          // JSON text
  std::string shard;              // "i/N"; empty when not sharded
  std::string host;               // this host when empty
  int64_t pid = 0;                // this process when 0
  std::string report_dir;
};

// The run's metadata from the settings `opgate run` writes to run.json (harness_version, the
// backend's probe, selection, shard).
RunMeta run_meta_from_run_info(const nlohmann::json& info, const std::string& kernel_rev,
                               const std::string& report_dir);

// "2026-12-01T18:00:00Z"
std::string utc_now();

class HistoryRecorder {
 public:
  static Expected<std::unique_ptr<HistoryRecorder>> open(const std::string& path);

  Status begin_run(const RunMeta& meta);
  Status record(const HistoryCase& c);
  Status record(const CaseResult& r);  // through history_case_from_result
  // Sets ended_at and the exit code; a run that never gets here reads as interrupted.
  Status end_run(int exit_code);

  int64_t run_id() const { return run_id_; }
  const HistoryDb& db() const { return db_; }

 private:
  explicit HistoryRecorder(HistoryDb db) : db_(std::move(db)) {}
  Status record_in_transaction(const HistoryCase& c);

  HistoryDb db_;
  int64_t run_id_ = 0;
};

}  // namespace opgate::history
