// Shared by the history tests: a scratch folder per test, raw SQLite access to check what the
// history code wrote (independently of its own readers), and hand-built cases.
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "history/history_case.h"

namespace opgate::history::testing {

class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "opgate_history_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

// Runs SQL on a file with the plain SQLite API; returns the first column of the first row as text
// ("" when there is none).
inline std::string raw_sql(const std::string& file, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(file.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    ADD_FAILURE() << "cannot open " << file;
    return out;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    int rc;
    bool first = true;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (first && sqlite3_column_text(st, 0) != nullptr) out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      first = false;
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

inline HistoryCase make_case(const std::string& id, const std::string& verdict,
                             std::initializer_list<std::pair<std::string, double>> budgets = {}) {
  HistoryCase c;
  c.id = id;
  c.op = "moe_ffn";
  c.tier = "ci";
  c.verdict = verdict;
  c.reason = verdict == "PASSED" ? "all outputs match" : "y: 3 of 8 outside bound";
  c.duration_ms = 1.5;
  for (const auto& [name, budget] : budgets) {
    HistoryOutput o;
    o.name = name;
    o.check = "bound";
    o.passed = verdict == "PASSED";
    o.budget_used = budget;
    o.metrics = {{"max_abs", 0.25}, {"rmse", 0.125}};
    c.outputs.push_back(o);
  }
  return c;
}

}  // namespace opgate::history::testing
