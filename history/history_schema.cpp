#include "history/history_schema.h"

namespace opgate::history {

const std::array<const char*, 1> kMigrations = {
    // 0 -> 1: runs, cases (an interned id), one row per case result and per compared output.
    R"sql(
CREATE TABLE runs (
  run_id          INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at      TEXT NOT NULL,     -- UTC, 2026-12-01T18:00:00Z
  ended_at        TEXT,              -- NULL: running, or killed before it ended
  exit_code       INTEGER,           -- the run's exit code (130/143: stopped by a signal)
  kernel_rev      TEXT,              -- --kernel-rev: the commit of the kernels under test
  harness_version TEXT NOT NULL,
  backend         TEXT NOT NULL,     -- emu, fault:<defect>, ascend
  soc             TEXT,              -- when the backend reports it
  cann_version    TEXT,
  selection       TEXT NOT NULL,     -- JSON: tiers, files, ops, filter (as run.json)
  shard           TEXT,              -- i/N
  host            TEXT NOT NULL,
  pid             INTEGER NOT NULL,
  report_dir      TEXT
);
CREATE TABLE cases (
  case_pk INTEGER PRIMARY KEY,
  case_id TEXT NOT NULL UNIQUE,
  op      TEXT NOT NULL
);
CREATE TABLE results (
  case_pk     INTEGER NOT NULL REFERENCES cases(case_pk),
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  tier        TEXT NOT NULL,
  verdict     TEXT NOT NULL,
  reason      TEXT NOT NULL,
  duration_ms REAL,
  PRIMARY KEY (case_pk, run_id)
) WITHOUT ROWID;
CREATE INDEX results_by_run ON results(run_id);
CREATE TABLE outputs (
  case_pk     INTEGER NOT NULL,
  run_id      INTEGER NOT NULL,
  name        TEXT NOT NULL,
  check_kind  TEXT NOT NULL,
  passed      INTEGER NOT NULL,
  budget_used REAL,                  -- NULL when not measured
  metrics     TEXT NOT NULL,         -- JSON object: max_abs, max_rel, mere, mare, rmse, cosine, ...
  PRIMARY KEY (case_pk, run_id, name),
  FOREIGN KEY (case_pk, run_id) REFERENCES results(case_pk, run_id)
) WITHOUT ROWID;
)sql",
};

}  // namespace opgate::history
