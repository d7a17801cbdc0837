// Opening a history: creation, WAL, schema identity and version, refusal of foreign, newer,
// non-SQLite and corrupt files; recording is one transaction per case.
#include "history/history_db.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "history/history_query.h"
#include "history/history_record.h"
#include "tests/history/history_testing.h"

namespace opgate::history {
namespace {

using testing::make_case;
using testing::raw_sql;

class HistoryDbTest : public testing::ScratchDir {};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

RunMeta meta(const std::string& rev) {
  RunMeta m;
  m.kernel_rev = rev;
  m.harness_version = "0.1.0+gtest";
  m.backend = "emu";
  m.selection = R"({"tiers":["ci"]})";
  return m;
}

TEST_F(HistoryDbTest, ANewFileGetsTheSchemaInWalMode) {
  const std::string file = path("h.db");
  auto rec = HistoryRecorder::open(file);
  ASSERT_TRUE(rec) << rec.status().message();
  EXPECT_EQ(raw_sql(file, "PRAGMA user_version"), "1");
  EXPECT_EQ(raw_sql(file, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_sql(file, "PRAGMA application_id"), std::to_string(0x4F504748));
  EXPECT_EQ(raw_sql(file, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE type = 'table' "
                          "ORDER BY name)"),
            "cases,outputs,results,runs,sqlite_sequence");
}

TEST_F(HistoryDbTest, ReopeningKeepsTheRecordedRuns) {
  const std::string file = path("h.db");
  {
    auto rec = HistoryRecorder::open(file);
    ASSERT_TRUE(rec);
    ASSERT_TRUE((*rec)->begin_run(meta("a")).is_ok());
    ASSERT_TRUE((*rec)->record(make_case("c1", "PASSED", {{"y", 0.5}})).is_ok());
    ASSERT_TRUE((*rec)->end_run(0).is_ok());
  }
  auto rec = HistoryRecorder::open(file);
  ASSERT_TRUE(rec) << rec.status().message();
  ASSERT_TRUE((*rec)->begin_run(meta("a")).is_ok());
  EXPECT_EQ((*rec)->run_id(), 2);
  EXPECT_EQ(raw_sql(file, "SELECT count(*) FROM results"), "1");
}

TEST_F(HistoryDbTest, ANewerSchemaIsRefusedAndLeftAlone) {
  const std::string file = path("newer.db");
  raw_sql(file, "CREATE TABLE runs (run_id INTEGER)");
  raw_sql(file, "PRAGMA application_id = 1330726728");
  raw_sql(file, "PRAGMA user_version = 2");
  for (const bool recording : {true, false}) {
    auto db = recording ? HistoryDb::open_for_recording(file) : HistoryDb::open_for_reading(file);
    ASSERT_FALSE(db);
    EXPECT_EQ(db.status().message(), file + ": history schema version 2 is newer than this opgate's (1); use the "
                                            "opgate that wrote it or a newer one");
  }
  EXPECT_EQ(raw_sql(file, "PRAGMA journal_mode"), "delete");  // not switched to WAL
  EXPECT_EQ(raw_sql(file, "PRAGMA user_version"), "2");
}

TEST_F(HistoryDbTest, AnotherApplicationsDatabaseIsRefused) {
  const std::string file = path("other.db");
  raw_sql(file, "CREATE TABLE notes (text TEXT)");
  auto db = HistoryDb::open_for_recording(file);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.status().message(), file + ": an SQLite database, but not an opgate run history (application_id 0x0)");
  EXPECT_EQ(raw_sql(file, "SELECT count(*) FROM sqlite_master"), "1");  // nothing added
}

TEST_F(HistoryDbTest, AFileThatIsNotSqliteIsRefused) {
  const std::string file = path("notes.txt");
  write_file(file, std::string(200, 'x') + "\nnot a database\n");
  for (const bool recording : {true, false}) {
    auto db = recording ? HistoryDb::open_for_recording(file) : HistoryDb::open_for_reading(file);
    ASSERT_FALSE(db);
    EXPECT_EQ(db.status().message(), file + ": not an SQLite database");
  }
}

TEST_F(HistoryDbTest, ReadingNeverCreates) {
  const std::string file = path("missing.db");
  auto db = HistoryDb::open_for_reading(file);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.status().message(), file + ": no such history database");
  EXPECT_FALSE(std::filesystem::exists(file));
  write_file(file, "");
  auto empty = HistoryDb::open_for_reading(file);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.status().message(),
            file + ": an empty database, not a run history (record one with `opgate run --history`)");
  auto folder = HistoryDb::open_for_reading(dir_);
  ASSERT_FALSE(folder);
  EXPECT_EQ(folder.status().message(), dir_ + ": is a folder, not a history database file");
}

TEST_F(HistoryDbTest, ACorruptFileIsAnErrorNotACrash) {
  const std::string file = path("h.db");
  {
    auto rec = HistoryRecorder::open(file);
    ASSERT_TRUE(rec);
    ASSERT_TRUE((*rec)->begin_run(meta("a")).is_ok());
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE((*rec)->record(make_case("case." + std::to_string(i), "FAILED", {{"y", 2.0}})).is_ok());
    }
  }  // the last connection checkpoints the WAL into the file
  const auto size = std::filesystem::file_size(file);
  ASSERT_GE(size, 4096u * 4);
  // Every page after the first (the header, with the schema version) overwritten.
  std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(4096);
  const std::string garbage(size - 4096, '\xA5');
  f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  f.close();
  auto db = HistoryDb::open_for_reading(file);
  Status st = db ? failing_cases(*db, "").status() : db.status();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find(file + ": corrupt history database"), std::string::npos) << st.message();
}

TEST_F(HistoryDbTest, ACaseIsRecordedWholeOrNotAtAll) {
  const std::string file = path("h.db");
  auto rec = HistoryRecorder::open(file);
  ASSERT_TRUE(rec);
  ASSERT_TRUE((*rec)->begin_run(meta("a")).is_ok());
  HistoryCase c = make_case("c1", "FAILED", {{"y", 3.0}, {"y", 4.0}});  // a second output "y" violates the key
  Status st = (*rec)->record(c);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.message().rfind("recording case c1: " + file + ": ", 0), 0u) << st.message();
  EXPECT_EQ(raw_sql(file, "SELECT count(*) FROM results"), "0");
  EXPECT_EQ(raw_sql(file, "SELECT count(*) FROM outputs"), "0");
  ASSERT_TRUE((*rec)->record(make_case("c2", "PASSED", {{"y", 0.5}})).is_ok());
  EXPECT_EQ(raw_sql(file, "SELECT count(*) FROM results"), "1");
}

TEST_F(HistoryDbTest, RecordsWhatTheRunAndEachOutputHold) {
  const std::string file = path("h.db");
  auto rec = HistoryRecorder::open(file);
  ASSERT_TRUE(rec);
  RunMeta m = meta("deadbeef");
  m.started_at = "2026-12-01T01:02:03Z";
  m.soc = "Ascend910B2";
  m.cann_version = "8.0.RC3";
  m.shard = "1/4";
  m.host = "node7";
  m.pid = 4242;
  ASSERT_TRUE((*rec)->begin_run(m).is_ok());
  HistoryCase c = make_case("c1", "FAILED", {{"y", std::numeric_limits<double>::infinity()}});
  c.outputs[0].metrics["cosine"] = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE((*rec)->record(c).is_ok());
  EXPECT_EQ(raw_sql(file, "SELECT started_at || '|' || kernel_rev || '|' || backend || '|' || soc || '|' || "
                          "cann_version || '|' || shard || '|' || host || '|' || pid || '|' || "
                          "(ended_at IS NULL) FROM runs"),
            "2026-12-01T01:02:03Z|deadbeef|emu|Ascend910B2|8.0.RC3|1/4|node7|4242|1");
  EXPECT_EQ(raw_sql(file, "SELECT verdict || '|' || tier || '|' || duration_ms FROM results"), "FAILED|ci|1.5");
  EXPECT_EQ(raw_sql(file, "SELECT name || '|' || check_kind || '|' || passed || '|' || budget_used || '|' || metrics "
                          "FROM outputs"),
            R"(y|bound|0|Inf|{"cosine":"nan","max_abs":0.25,"rmse":0.125})");
  ASSERT_TRUE((*rec)->end_run(1).is_ok());
  EXPECT_EQ(raw_sql(file, "SELECT exit_code || '|' || (ended_at IS NOT NULL) FROM runs"), "1|1");
}

// Shards on one host: two processes record at once, each case in its own transaction.
TEST_F(HistoryDbTest, ConcurrentWritersLandEveryCase) {
  const std::string file = path("h.db");
  constexpr int kCases = 40;
  pid_t children[2];
  for (int w = 0; w < 2; ++w) {
    children[w] = fork();
    ASSERT_GE(children[w], 0);
    if (children[w] == 0) {
      auto rec = HistoryRecorder::open(file);
      if (!rec) {
        std::fprintf(stderr, "writer %d: %s\n", w, rec.status().message().c_str());
        _exit(3);
      }
      if (!(*rec)->begin_run(meta("a")).is_ok()) _exit(3);
      for (int i = 0; i < kCases; ++i) {
        if (!(*rec)->record(make_case(fmt::format("w{}.case{}", w, i), "PASSED", {{"y", 0.5}})).is_ok()) _exit(4);
      }
      _exit((*rec)->end_run(0).is_ok() ? 0 : 5);
    }
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(raw_sql(file, "SELECT count(*) FROM results"), std::to_string(2 * kCases));
  EXPECT_EQ(raw_sql(file, "SELECT count(*) FROM runs WHERE ended_at IS NOT NULL"), "2");
  EXPECT_EQ(raw_sql(file, "PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace opgate::history
