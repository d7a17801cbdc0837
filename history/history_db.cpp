#include "history/history_db.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cmath>
#include <thread>
#include <limits>

#include <fmt/format.h>
#include <sqlite3.h>

#include "history/history_schema.h"

namespace opgate::history {
namespace {

// Shards on one host write one file; a writer waits this long for another's transaction (each
// holds it for one case, milliseconds) before the run gives up with an error.
constexpr int kBusyTimeoutMs = 60000;

}  // namespace

// ---- Statement ----

Statement::Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    db_ = o.db_;
    stmt_ = o.stmt_;
    o.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, const std::string& text) {
  sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind(int i, int64_t value) {
  sqlite3_bind_int64(stmt_, i, value);
  return *this;
}
Statement& Statement::bind(int i, double value) {
  if (std::isnan(value)) return bind_null(i);
  sqlite3_bind_double(stmt_, i, value);
  return *this;
}
Statement& Statement::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

Expected<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error("reading or writing");
}

Status Statement::run() {
  for (;;) {
    auto row = step();
    if (!row) return row.status();
    if (!*row) return Status::ok();
  }
}

Status Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return Status::ok();
}

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
std::string Statement::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col));
}
int64_t Statement::integer(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::real(int col) const {
  return is_null(col) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, col);
}

// ---- HistoryDb ----

void HistoryDb::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Status HistoryDb::error(const std::string& what) const {
  const int rc = db_ ? sqlite3_extended_errcode(db_.get()) & 0xff : SQLITE_CANTOPEN;
  last_error_ = rc;
  const std::string msg = db_ ? sqlite3_errmsg(db_.get()) : "unable to open database file";
  if (rc == SQLITE_NOTADB) return io_error(fmt::format("{}: not an SQLite database", path_));
  if (rc == SQLITE_CORRUPT) return io_error(fmt::format("{}: corrupt history database ({})", path_, msg));
  // SQLite says "disk I/O error" or "database or disk is full"; the cause in words.
  const int sys_errno = db_ ? sqlite3_system_errno(db_.get()) : 0;
  if (rc == SQLITE_FULL || (rc == SQLITE_IOERR && (sys_errno == ENOSPC || sys_errno == EDQUOT))) {
    return io_error(fmt::format("{}: {}: no space left on the device holding the history ({})", path_, what, msg));
  }
  if (rc == SQLITE_IOERR && sys_errno != 0) {
    return io_error(fmt::format("{}: {}: {} ({})", path_, what, msg, std::strerror(sys_errno)));
  }
  if (rc == SQLITE_BUSY) {
    return io_error(fmt::format("{}: {}: still locked by another writer after {} s ({})", path_, what,
                                kBusyTimeoutMs / 1000, msg));
  }
  return io_error(fmt::format("{}: {}: {}", path_, what, msg));
}

Expected<Statement> HistoryDb::prepare(const std::string& sql) const {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return error("reading");
  }
  return Statement(this, stmt);
}

Status HistoryDb::exec(const std::string& sql) const {
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return error("writing");
  return Status::ok();
}

// Reads the schema version; refuses files that are not (or not yet) a history of this opgate.
// `allow_empty`: a database without any table is a new history (version 0).
Status HistoryDb::check_identity(bool allow_empty) {
  int64_t version = 0, app = 0, tables = 0;
  {
    // One statement, so one snapshot: another writer's migration is seen whole or not at all.
    OPGATE_ASSIGN_OR_RETURN(Statement st, prepare("SELECT (SELECT user_version FROM pragma_user_version), (SELECT "
                                                  "application_id FROM pragma_application_id), (SELECT count(*) FROM "
                                                  "sqlite_master)"));
    OPGATE_ASSIGN_OR_RETURN(bool row, st.step());
    if (row) {
      version = st.integer(0);
      app = st.integer(1);
      tables = st.integer(2);
    }
  }
  schema_version_ = static_cast<int>(version);
  if (version > kSchemaVersion) {
    return io_error(fmt::format("{}: history schema version {} is newer than this opgate's ({}); use the opgate "
                                "that wrote it or a newer one",
                                path_, version, kSchemaVersion));
  }
  if (version == 0 && tables == 0) {
    if (allow_empty) return Status::ok();
    return io_error(fmt::format("{}: an empty database, not a run history (record one with `opgate run --history`)",
                                path_));
  }
  if (app != kApplicationId) {
    return io_error(fmt::format("{}: an SQLite database, but not an opgate run history (application_id {:#x})", path_,
                                app));
  }
  return Status::ok();
}

// Overwritten pages or a dropped table would otherwise surface only at the first case recorded or
// queried, after the run's report folder exists.
Status HistoryDb::check_integrity() {
  {
    OPGATE_ASSIGN_OR_RETURN(Statement st, prepare("PRAGMA quick_check(1)"));
    OPGATE_ASSIGN_OR_RETURN(bool row, st.step());
    if (!row || st.text(0) != "ok") {
      return io_error(fmt::format("{}: corrupt history database (quick_check: {})", path_,
                                  row ? st.text(0) : std::string("no answer")));
    }
  }
  for (const char* table : kTables) {
    OPGATE_ASSIGN_OR_RETURN(Statement st, prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"));
    OPGATE_ASSIGN_OR_RETURN(bool row, st.bind(1, std::string(table)).step());
    if (!row) {
      return io_error(fmt::format("{}: damaged run history: its table '{}' is missing (schema version {})", path_,
                                  table, schema_version_));
    }
  }
  return Status::ok();
}

Status HistoryDb::migrate() {
  // IMMEDIATE: shards starting at once queue here, and the later ones find the schema current.
  OPGATE_TRY(exec("BEGIN IMMEDIATE"));
  Status st = check_identity(true);
  for (int v = schema_version_; st.is_ok() && v < kSchemaVersion; ++v) {
    st = exec(kMigrations[static_cast<size_t>(v)]);
    if (st.is_ok()) st = exec(fmt::format("PRAGMA user_version = {}", v + 1));
    if (!st.is_ok()) st = st.with_context(fmt::format("migrating the history schema from version {} to {}", v, v + 1));
  }
  if (st.is_ok()) st = exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
  if (!st.is_ok()) {
    exec("ROLLBACK");
    return st;
  }
  OPGATE_TRY(exec("COMMIT"));
  schema_version_ = kSchemaVersion;
  return Status::ok();
}

namespace {

Status check_path(const std::string& path, bool must_exist) {
  struct stat sb {};
  if (stat(path.c_str(), &sb) != 0) {
    if (must_exist) return io_error(fmt::format("{}: no such history database", path));
    return Status::ok();
  }
  if (S_ISDIR(sb.st_mode)) return io_error(fmt::format("{}: is a folder, not a history database file", path));
  // A FIFO or a device would block SQLite's first read forever (a FIFO with no writer does).
  if (!S_ISREG(sb.st_mode)) return io_error(fmt::format("{}: not a regular file, not a history database", path));
  return Status::ok();
}

}  // namespace

Expected<HistoryDb> HistoryDb::open_for_recording(const std::string& path) {
  OPGATE_TRY(check_path(path, false));
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  HistoryDb db(path, raw);
  if (rc != SQLITE_OK) return db.error("cannot open or create the history database");
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  // Writers that set up a new file at once can meet where SQLite reports busy without waiting (a
  // journal mode change, a lock upgrade that would deadlock): the set-up is retried, up to the
  // busy timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    db.last_error_ = 0;
    db.wal_refused_ = false;
    Status st = db.set_up_for_recording();
    if (st.is_ok()) return db;
    const bool busy = db.last_error_ == SQLITE_BUSY || db.last_error_ == SQLITE_LOCKED || db.wal_refused_;
    if (!busy || std::chrono::steady_clock::now() > deadline) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status HistoryDb::set_up_for_recording() {
  // Identity first, so a foreign file is refused before it is switched to WAL.
  OPGATE_TRY(check_identity(true));
  {
    OPGATE_ASSIGN_OR_RETURN(Statement st, prepare("PRAGMA journal_mode = WAL"));
    OPGATE_ASSIGN_OR_RETURN(bool row, st.step());
    if (!row || st.text(0) != "wal") {
      wal_refused_ = true;
      return io_error(fmt::format("{}: cannot switch the history database to WAL (journal mode '{}'); a network "
                                  "file system does not support it",
                                  path_, row ? st.text(0) : std::string()));
    }
  }
  // NORMAL in WAL: a killed process loses nothing committed (only a power loss may lose the last
  // transactions), and each case costs no fsync.
  OPGATE_TRY(exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON"));
  OPGATE_TRY(migrate());
  return check_integrity();
}

namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// "file:" URI of a path: the characters a URI gives a meaning to are percent-encoded.
std::string file_uri(const std::string& path, const char* query) {
  std::string uri = "file:";
  for (const unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) uri += fmt::format("%{:02X}", c);
    else uri += static_cast<char>(c);
  }
  return uri + query;
}

}  // namespace

// A query must leave the folder as it found it and work where nothing can be written:
// - file and folder writable: a read-write connection that runs no write (query_only). A WAL
//   database needs its -shm and -wal files while open; only a read-write connection, the last to
//   close, removes them (a read-only one leaves both behind);
// - otherwise (a read-only mount, a file of another user): immutable, which needs no -shm. It reads
//   only what is checkpointed into the file, which is all of it once the recording run has ended.
Expected<HistoryDb> HistoryDb::open_for_reading(const std::string& path) {
  OPGATE_TRY(check_path(path, true));
  const bool writable = access(path.c_str(), W_OK) == 0 && access(folder_of(path).c_str(), W_OK) == 0;
  sqlite3* raw = nullptr;
  const int rc = writable ? sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr)
                          : sqlite3_open_v2(file_uri(path, "?immutable=1").c_str(), &raw,
                                            SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  HistoryDb db(path, raw);
  if (rc != SQLITE_OK) return db.error("cannot open the history database");
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  if (writable) OPGATE_TRY(db.exec("PRAGMA query_only = ON"));
  OPGATE_TRY(db.check_identity(false));
  if (db.schema_version_ < kSchemaVersion) {
    return io_error(fmt::format("{}: history schema version {} is older than this opgate's ({}); one `opgate run "
                                "--history {}` migrates it",
                                path, db.schema_version_, kSchemaVersion, path));
  }
  OPGATE_TRY(db.check_integrity());
  return db;
}

}  // namespace opgate::history
