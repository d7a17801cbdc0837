// The run history's SQLite connection: opening (for recording: created, WAL, migrated; for
// reading: never created or changed), prepared statements, and errors as one line naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace opgate::history {

class HistoryDb;

// A prepared statement; bind parameters are 1-based, columns 0-based.
class Statement {
 public:
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) noexcept;
  ~Statement();

  Statement& bind(int i, const std::string& text);
  Statement& bind(int i, int64_t value);
  Statement& bind(int i, double value);  // NaN is stored as NULL (SQLite has no NaN)
  Statement& bind_null(int i);
  // True with a row to read, false when done; an error names the database file.
  Expected<bool> step();
  // Runs to completion (INSERT, UPDATE).
  Status run();
  // Ready to run again, with no parameters bound.
  Status reset();

  bool is_null(int col) const;
  std::string text(int col) const;
  int64_t integer(int col) const;
  double real(int col) const;  // NaN for NULL

 private:
  friend class HistoryDb;
  Statement(const HistoryDb* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  const HistoryDb* db_;
  sqlite3_stmt* stmt_;
};

class HistoryDb {
 public:
  // Creates the file if missing, switches it to WAL (concurrent readers and one writer at a time,
  // the others waiting up to the busy timeout) and applies pending schema migrations. Refuses a
  // file that is not SQLite, an SQLite file that is not a history, and a newer schema.
  static Expected<HistoryDb> open_for_recording(const std::string& path);
  // Opens an existing history read-only; refuses what open_for_recording refuses, and an older
  // schema (a recording run migrates it).
  static Expected<HistoryDb> open_for_reading(const std::string& path);

  HistoryDb(HistoryDb&&) noexcept = default;
  HistoryDb& operator=(HistoryDb&&) noexcept = default;
  ~HistoryDb() = default;

  const std::string& path() const { return path_; }
  Expected<Statement> prepare(const std::string& sql) const;
  Status exec(const std::string& sql) const;  // statements without results (BEGIN, COMMIT, DDL)
  // "<file>: <what>: <SQLite's message>", with the common causes in words.
  Status error(const std::string& what) const;
  int schema_version() const { return schema_version_; }

 private:
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  HistoryDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status check_identity(bool allow_empty);
  Status check_integrity();
  Status set_up_for_recording();
  Status migrate();

  std::string path_;
  std::unique_ptr<sqlite3, Closer> db_;
  int schema_version_ = 0;
  mutable int last_error_ = 0;  // SQLite's primary result code of the last error()
  bool wal_refused_ = false;    // the journal mode stayed another (busy, or a file system without WAL)
};

}  // namespace opgate::history
