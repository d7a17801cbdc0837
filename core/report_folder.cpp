// The report folder: results.jsonl streams as cases finish, run.json, failed/<id>.json and the
// lock; the pages people read are rendered from it by reports/ (reports/report.h).
#include "core/report_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/case.h"
#include "core/json_read.h"
#include "core/npy.h"
#include "core/tensor_dump.h"

namespace opgate {

std::string host_name() {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  return host;
}

// Now in UTC as YYYY-MM-DDTHH:MM:SS (junit's timestamp format: no zone suffix).
std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  return stamp;
}

int gate_exit_code(const VerdictCounts& counts, bool strict) {
  for (size_t i = 0; i < kVerdictCount; ++i) {
    if (counts[i] > 0 && verdict_fails(static_cast<Verdict>(i), strict)) return 1;
  }
  return 0;
}

std::string counts_line(const VerdictCounts& c) {
  int64_t total = 0;
  for (auto n : c) total += n;
  auto at = [&](Verdict v) { return c[static_cast<size_t>(v)]; };
  return fmt::format(
      "cases:{} passed:{} failed:{} mistrusted:{} skipped:{} rejected:{} invalid:{} backend_error:{} "
      "timeout:{} crashed:{}",
      total, at(Verdict::kPassed), at(Verdict::kFailed), at(Verdict::kMistrusted), at(Verdict::kSkipped),
      at(Verdict::kExpectedReject), at(Verdict::kInvalidCase), at(Verdict::kBackendError), at(Verdict::kTimeout),
      at(Verdict::kCrashed));
}

namespace {

// The whole file; empty when it does not exist (no results yet).
Expected<std::string> read_if_present(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::string();
  return read_file_bounded(path, kMaxResultsBytes, "results.jsonl");
}

// An id as JSON text: quoted, with control bytes (NUL, ESC) escaped, so a message shows what it holds.
std::string quoted_id(const std::string& id) {
  return nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The non-blank lines of a results.jsonl as JSON, with their line numbers. The whole file is read
// as JSON within its limits before any line is read as a result, so the file's limits are checked
// first, however early a malformed result comes.
Expected<std::vector<std::pair<int64_t, nlohmann::json>>> parse_lines(const std::string& text, const std::string& path) {
  std::vector<std::pair<int64_t, nlohmann::json>> lines;
  JsonBudget budget{kMaxResultsValues, "results.jsonl limit (4 Mi values in the file)"};
  size_t start = 0;
  for (int64_t n = 1; start < text.size(); ++n) {
    const size_t newline = text.find('\n', start);
    const bool complete = newline != std::string::npos;
    const std::string line = text.substr(start, (complete ? newline : text.size()) - start);
    start = complete ? newline + 1 : text.size();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = parse_json_bounded(line, fmt::format("{}: line {}", path, n), &budget);
    if (!j) {
      // Only the last line can be cut short by a crash (every result is written as one line and
      // flushed); elsewhere a bad line is corruption, and dropping it would lose a verdict.
      if (!complete) break;
      return j.status();
    }
    lines.emplace_back(n, std::move(*j));
  }
  return lines;
}

// read_results on the text of `path`.
Expected<std::vector<CaseResult>> parse_results(const std::string& text, const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(auto lines, parse_lines(text, path));
  std::vector<CaseResult> out;
  std::map<std::string, int64_t> line_of;  // case id -> its line, for second results
  for (auto& [n, j] : lines) {
    auto r = case_result_from_json(j);
    if (!r) return r.status().with_context(fmt::format("{}: line {}", path, n));
    // Read-back ids name files (failed/<id>.json) like case-file ids do, so they obey the same rule.
    if (Status st = check_case_id(r->id); !st.is_ok()) {
      return st.with_context(fmt::format("{}: line {}: case id {}", path, n, quoted_id(r->id)));
    }
    if (auto [at, fresh] = line_of.emplace(r->id, n); !fresh) {
      return parse_error(fmt::format("{}: line {}: second result for case '{}' (first at line {}): two runs wrote "
                                     "this report at once; run it again into an empty folder",
                                     path, n, r->id, at->second));
    }
    j = nlohmann::json();  // its DOM is no longer needed
    out.push_back(std::move(*r));
  }
  return out;
}

std::string errno_text() { return std::strerror(errno); }

// "pid P on host H since T", written into run.lock by its holder.
std::string holder_text(int fd) {
  char buf[512];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "an unknown process (run.lock is empty)" : text;
}

// The files a run writes in its folder; none of them may be a link, or writing would land outside.
constexpr const char* kReportFiles[] = {"results.jsonl", "run.json",      "summary.txt",  "junit.xml",
                                       "report.html",   "baseline.txt", "baseline.json"};

Status check_no_links(int dir_fd, const std::string& dir) {
  for (const char* name : kReportFiles) {
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      return parse_error(fmt::format("{}/{}: a symbolic link; opgate never writes through links in a report folder "
                                     "(remove it or use another --out)",
                                     dir, name));
    }
    if (!S_ISREG(st.st_mode)) return parse_error(fmt::format("{}/{}: not a regular file", dir, name));
    // Truncating or appending to a file with other names would change what they name too.
    if (st.st_nlink > 1) {
      return parse_error(fmt::format("{}/{}: has {} hard links; opgate writes only files that have no other name "
                                     "(remove the other links or use another --out)",
                                     dir, name, static_cast<unsigned long>(st.st_nlink)));
    }
  }
  struct stat st {};
  if (::fstatat(dir_fd, "failed", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    return parse_error(fmt::format("{}/failed: {}; opgate never writes through links in a report folder (remove it "
                                   "or use another --out)",
                                   dir, S_ISLNK(st.st_mode) ? "a symbolic link" : "not a folder"));
  }
  return Status::ok();
}

// Writes `name` in the folder `dir_fd` through a fresh temporary file (O_EXCL|O_NOFOLLOW: never an
// existing file or link) renamed over it (rename replaces a link, never follows it).
Status write_at_atomic(int dir_fd, const std::string& name, const std::string& bytes, const std::string& shown) {
  static std::atomic<uint64_t> sequence{0};
  const std::string tmp = fmt::format(".{}.tmp.{}.{}", name, static_cast<long>(::getpid()), sequence++);
  const int fd = ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(fmt::format("{}: cannot create a temporary file: {}", shown, errno_text()));
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? errno_text() : "no progress";
      ::close(fd);
      ::unlinkat(dir_fd, tmp.c_str(), 0);
      return io_error(fmt::format("{}: write failed: {}", shown, why));
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {  // deferred write errors (NFS, quota)
    const std::string why = errno_text();
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return io_error(fmt::format("{}: write failed: {}", shown, why));
  }
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return io_error(fmt::format("{}: cannot rename into place: {}", shown, why));
  }
  return Status::ok();
}

}  // namespace

struct ReportFolder {
  int dir_fd = -1;     // the folder, opened once: later names are resolved relative to it
  int failed_fd = -1;  // failed/, opened with O_NOFOLLOW
  int lock_fd = -1;    // run.lock, flock(LOCK_EX) held until this closes
  ReportFolder() = default;
  ReportFolder(const ReportFolder&) = delete;
  ReportFolder& operator=(const ReportFolder&) = delete;
  ~ReportFolder() {
    for (int fd : {failed_fd, lock_fd, dir_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }
};

namespace {

// Opens `dir` (creating it) and takes its lock; a second holder is named in the error.
Expected<std::shared_ptr<ReportFolder>> lock_folder(const std::string& dir) {
  // The folder itself must not be a link either (a trailing slash would make open() follow it).
  std::string bare = dir;
  while (bare.size() > 1 && bare.back() == '/') bare.pop_back();
  struct stat st {};
  if (::lstat(bare.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return parse_error(fmt::format("{}: a symbolic link; opgate writes a report only into a real folder (give the "
                                   "folder it points to as --out)",
                                   dir));
  }
  OPGATE_TRY(make_dirs(dir));
  auto folder = std::make_shared<ReportFolder>();
  folder->dir_fd = ::open(bare.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (folder->dir_fd < 0) return io_error(fmt::format("{}: cannot open the report folder: {}", dir, errno_text()));
  const std::string lock_path = dir + "/" + kReportLockFile;
  folder->lock_fd = ::openat(folder->dir_fd, kReportLockFile, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (folder->lock_fd < 0) {
    return errno == ELOOP ? parse_error(fmt::format("{}: a symbolic link; opgate never writes through links in a "
                                                    "report folder (remove it or use another --out)",
                                                    lock_path))
                          : io_error(fmt::format("{}: cannot open: {}", lock_path, errno_text()));
  }
  // flock, not fcntl locks: it belongs to the open file, so the kernel drops it when the process
  // ends however it ends (kill -9 included), and a case child sharing the descriptor cannot free it.
  if (::flock(folder->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return io_error(fmt::format("{}: cannot lock: {}", lock_path, errno_text()));
    return parse_error(fmt::format("{}: being written by {} ({}); wait for it to end or use another --out", dir,
                                   holder_text(folder->lock_fd), lock_path));
  }
  const std::string holder =
      fmt::format("pid {} on host {} since {}Z\n", static_cast<long>(::getpid()), host_name(), utc_timestamp());
  if (::ftruncate(folder->lock_fd, 0) != 0 ||
      ::pwrite(folder->lock_fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    return io_error(fmt::format("{}: cannot write: {}", lock_path, errno_text()));
  }
  return folder;
}

Status check_same_run(const RunInfoFile& before, const nlohmann::json& now) {
  for (const char* field : kResumeFields) {
    const nlohmann::json was = run_field(before.info, field);
    // Older folders did not record their selection; refusing them would strand their results.
    if (was.is_null() && std::string(field) == "selection") continue;
    const nlohmann::json is = run_field(now, field);
    if (was != is) {
      return parse_error(fmt::format("{}: cannot resume: {} was {}, this run has {} (use another --out folder)",
                                     before.path, field, run_field_text(was), run_field_text(is)));
    }
  }
  return Status::ok();
}

}  // namespace

nlohmann::json run_field(const nlohmann::json& info, const std::string& field) {
  if (!info.is_object()) return nullptr;
  const nlohmann::json v = info.value(field, nlohmann::json());
  if (field != "backend" || !v.is_object()) return v;
  const nlohmann::json name = v.value("backend", nlohmann::json());
  std::string identity = name.is_string() ? name.get<std::string>() : name.dump();
  if (v.contains("soc")) identity += " on " + v["soc"].dump();
  return identity;
}

std::string run_field_text(const nlohmann::json& value) { return value.is_null() ? "unset" : value.dump(); }

std::string recorded_backend(const nlohmann::json& info) {
  if (!info.is_object() || !info.contains("backend")) return "";
  const nlohmann::json& v = info["backend"];
  const nlohmann::json name = v.is_object() ? v.value("backend", nlohmann::json()) : v;
  return name.is_string() ? name.get<std::string>() : "";
}

Status check_not_being_written(const std::string& dir) {
  const std::string lock_path = dir + "/" + kReportLockFile;
  const int fd = ::open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::ok();  // no lock file: written before locks, or by nobody
  Status st = Status::ok();
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    st = parse_error(fmt::format("{}: being written by {} ({}); wait for the run to end", dir, holder_text(fd),
                                 lock_path));
  }
  ::close(fd);  // releases the shared lock taken just to look
  return st;
}

Status check_case_count(const RunInfoFile& run) {
  if (!run.info.is_object() || !run.info.contains("cases")) return Status::ok();
  const nlohmann::json& count = run.info["cases"];
  if (count.is_number_integer() && count.get<int64_t>() >= 0) return Status::ok();
  return parse_error(fmt::format("{}: field 'cases': expected a non-negative integer (the run's case count), got {}",
                                 run.path, count.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

Status check_finished(const std::string& dir, const RunInfoFile& run, size_t results) {
  OPGATE_TRY(check_not_being_written(dir));
  OPGATE_TRY(check_case_count(run));
  const nlohmann::json& info = run.info;
  if (!info.is_object() || !info.contains("cases")) return Status::ok();
  const int64_t cases = info["cases"].get<int64_t>();
  if (static_cast<int64_t>(results) >= cases) return Status::ok();
  return parse_error(fmt::format("{}: unfinished run: {} of {} cases have results (finish it with "
                                 "`opgate run --resume --out {}` and the same selection)",
                                 dir, results, cases, dir));
}

Expected<std::string> report_folder(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return io_error(fmt::format("{}: no such report (a report folder or its results.jsonl)", path));
  }
  if (!S_ISDIR(st.st_mode)) {
    // Reports are folders; a results.jsonl stands for the folder it is in (run.json, failed/).
    const size_t slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name != "results.jsonl") {
      return parse_error(fmt::format("{}: not a report (a report folder or its results.jsonl)", path));
    }
    return slash == std::string::npos ? std::string(".") : slash == 0 ? std::string("/") : path.substr(0, slash);
  }
  const std::string results = path + "/results.jsonl";
  if (::stat(results.c_str(), &st) != 0) return io_error(fmt::format("{}: missing (not a report folder?)", results));
  return path;
}

Expected<std::string> failed_case_path(const std::string& dir, const std::string& id) {
  const std::string folder = dir + "/failed";
  const std::string path = folder + "/" + id + ".json";
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) return std::string();
  if (!S_ISDIR(st.st_mode)) {
    return parse_error(fmt::format("{}: {}; opgate reads only the folder it wrote", folder,
                                   S_ISLNK(st.st_mode) ? "a symbolic link" : "not a folder"));
  }
  if (::lstat(path.c_str(), &st) != 0) return std::string();
  if (S_ISREG(st.st_mode)) return path;
  return parse_error(fmt::format("{}: {}; opgate reads only the plain file it wrote", path,
                                 S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file (a FIFO, device or folder)"));
}

bool holds_report(const std::string& dir) {
  struct stat st {};
  for (const char* name : {"results.jsonl", "run.json", "summary.txt"}) {
    if (::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;
  }
  return false;
}

namespace {

// A tensor dump (harness/dump.h) the run wrote as failed/<id>/: its README.txt, opening with the
// marker, and the .npy files of its known subfolders; opened without following links, so a link is
// never followed out of the report. Files it does not know keep their folder (rmdir fails).
Status remove_dump_folder(int failed_fd, const std::string& name, const std::string& where) {
  const int fd = ::openat(failed_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::ok();  // not a folder: not a dump
  char head[32] = {};
  const int readme = ::openat(fd, "README.txt", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  const ssize_t n = readme < 0 ? -1 : ::read(readme, head, sizeof head - 1);
  if (readme >= 0) ::close(readme);
  const std::string marker = kTensorDumpMarker;
  if (n < static_cast<ssize_t>(marker.size()) || std::string(head, marker.size()) != marker) {
    ::close(fd);
    return Status::ok();
  }
  Status status = Status::ok();
  for (const char* sub : kTensorDumpFolders) {
    const int sub_fd = ::openat(fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* entries = sub_fd < 0 ? nullptr : ::fdopendir(sub_fd);
    if (entries == nullptr) {
      if (sub_fd >= 0) ::close(sub_fd);
      continue;
    }
    while (const dirent* e = ::readdir(entries)) {
      const std::string file = e->d_name;
      if (file.size() <= 4 || file.compare(file.size() - 4, 4, ".npy") != 0) continue;
      if (::unlinkat(sub_fd, file.c_str(), 0) != 0 && errno != ENOENT && status.is_ok()) {
        status = io_error(fmt::format("{}/{}/{}/{}: cannot remove: {}", where, name, sub, file, errno_text()));
      }
    }
    ::closedir(entries);
    ::unlinkat(fd, sub, AT_REMOVEDIR);
  }
  ::unlinkat(fd, "README.txt", 0);
  ::close(fd);
  ::unlinkat(failed_fd, name.c_str(), AT_REMOVEDIR);
  return status;
}

// The failed/<id>.json files (and temporaries) and the tensor dumps (failed/<id>/, --dump-failed) a
// run wrote in failed/, then failed/ if that empties it; a link named failed is removed itself.
Status remove_failed_folder(int dir_fd, const std::string& dir) {
  struct stat st {};
  if (::fstatat(dir_fd, "failed", &st, AT_SYMLINK_NOFOLLOW) != 0) return Status::ok();
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir_fd, "failed", 0) == 0) return Status::ok();
    return io_error(fmt::format("{}/failed: cannot remove: {}", dir, errno_text()));
  }
  const int failed_fd = ::openat(dir_fd, "failed", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR* entries = failed_fd < 0 ? nullptr : ::fdopendir(failed_fd);
  if (entries == nullptr) {
    if (failed_fd >= 0) ::close(failed_fd);
    return io_error(fmt::format("{}/failed: cannot open: {}", dir, errno_text()));
  }
  Status status = Status::ok();
  while (const dirent* e = ::readdir(entries)) {
    const std::string name = e->d_name;
    if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
      if (name == "." || name == "..") continue;
      status = remove_dump_folder(failed_fd, name, dir + "/failed");
      if (!status.is_ok()) break;
      if (e->d_type == DT_DIR) continue;
    }
    const bool ours = name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
    if (!ours && name.find(".tmp.") == std::string::npos) continue;
    if (::unlinkat(failed_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      status = io_error(fmt::format("{}/failed/{}: cannot remove: {}", dir, name, errno_text()));
      break;
    }
  }
  ::closedir(entries);
  OPGATE_TRY(status);
  ::unlinkat(dir_fd, "failed", AT_REMOVEDIR);  // stays when it holds files that are not opgate's
  return Status::ok();
}

}  // namespace

Status remove_report(const std::string& dir) {
  OPGATE_TRY(check_not_being_written(dir));
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    return errno == ELOOP || errno == ENOTDIR
               ? parse_error(fmt::format("{}: not a folder (a symbolic link?); --overwrite removes nothing through links",
                                         dir))
               : io_error(fmt::format("{}: cannot open the report folder: {}", dir, errno_text()));
  }
  Status status = remove_failed_folder(dir_fd, dir);
  for (const char* name : kReportFiles) {
    if (!status.is_ok()) break;
    if (::unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT) {
      status = io_error(fmt::format("{}/{}: cannot remove: {}", dir, name, errno_text()));
    }
  }
  ::close(dir_fd);
  return status;
}

Expected<std::vector<CaseResult>> read_results(const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_if_present(path));
  return parse_results(text, path);
}

Expected<RunInfoFile> read_run_info(const std::string& dir) {
  RunInfoFile f{dir + "/run.json", nullptr};
  struct stat st {};
  if (::stat(f.path.c_str(), &st) == 0) {
    OPGATE_ASSIGN_OR_RETURN(f.info, read_json_file(f.path));
    if (!f.info.is_object()) return parse_error(fmt::format("{}: expected a JSON object", f.path));
    return f;
  }
  f.path = dir + "/summary.txt";
  if (::stat(f.path.c_str(), &st) != 0) return RunInfoFile{"", nullptr};
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_file_bounded(f.path, kMaxResultsBytes, "summary.txt"));
  // The run line: line 1 in older folders, after the people's part since issue 24.
  const std::string prefix = "opgate run {";
  size_t at = text.rfind(prefix, 0) == 0 ? 0 : text.find("\n" + prefix);
  if (at == std::string::npos) return parse_error(fmt::format("{}: no line 'opgate run <run info JSON>'", f.path));
  at += text[at] == '\n' ? 1 : 0;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  const int number = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  const std::string where = fmt::format("{}: line {}", f.path, number);
  auto info = parse_json_bounded(line.substr(prefix.size() - 1), where);
  if (!info) return parse_error(fmt::format("{}: expected 'opgate run <run info JSON>'", where));
  f.info = std::move(*info);
  if (!f.info.is_object()) return parse_error(fmt::format("{}: expected a JSON object", where));
  return f;
}

Expected<ReportWriter> ReportWriter::open(const std::string& dir, const nlohmann::json& run_info, bool resume,
                                          const std::set<std::string>* selected) {
  ReportWriter w;
  w.dir_ = dir;
  w.run_info_ = run_info;
  // Lock first, then look: another run could otherwise change the folder between the two.
  OPGATE_ASSIGN_OR_RETURN(w.folder_, lock_folder(dir));
  const int dir_fd = w.folder_->dir_fd;
  OPGATE_TRY(check_no_links(dir_fd, dir));
  const std::string results = dir + "/results.jsonl";
  const std::string run_json = dir + "/run.json";
  std::string text;
  size_t keep = 0;
  bool has_run_json = false;
  nlohmann::json refreshed;  // the folder's run.json with this run's case count, when that changed
  if (resume) {
    // Everything is checked before anything is written: results of two configurations must never
    // mix, and a corrupt results.jsonl stays as it is for a person to look at.
    OPGATE_ASSIGN_OR_RETURN(RunInfoFile before, read_run_info(dir));
    OPGATE_TRY(check_case_count(before));
    if (!before.info.is_null()) OPGATE_TRY(check_same_run(before, run_info));
    has_run_json = before.path == run_json;
    // The case files may have gained or lost cases since; `merge` and `baseline accept` judge
    // whether the run is finished by this count, so it must be this run's.
    if (has_run_json && run_info.contains("cases") &&
        before.info.value("cases", nlohmann::json()) != run_info["cases"]) {
      refreshed = before.info;
      refreshed["cases"] = run_info["cases"];
    }
    OPGATE_ASSIGN_OR_RETURN(text, read_if_present(results));
    // A crash can cut the last line short; appending to it would glue the next result onto it and
    // make both unreadable, so the file is cut back to just after its last newline (the case that
    // line held runs again).
    const size_t newline = text.rfind('\n');
    keep = newline == std::string::npos ? 0 : newline + 1;
    OPGATE_ASSIGN_OR_RETURN(auto previous, parse_results(text.substr(0, keep), results));
    for (const auto& r : previous) {
      if (selected != nullptr && !selected->count(r.id)) {
        return parse_error(fmt::format("{}: holds a result of case '{}', which this run does not select (a changed "
                                       "case file, filter or shard); resume with the run's own selection, or start a "
                                       "new report",
                                       results, r.id));
      }
      w.done_.insert(r.id);
      ++w.counts_[static_cast<size_t>(r.verdict)];
    }
  }
  if (::mkdirat(dir_fd, "failed", 0755) != 0 && errno != EEXIST) {
    return io_error(fmt::format("{}/failed: cannot create folder: {}", dir, errno_text()));
  }
  w.folder_->failed_fd = ::openat(dir_fd, "failed", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (w.folder_->failed_fd < 0) {
    return parse_error(fmt::format("{}/failed: not a folder ({}); opgate never writes through links in a report folder",
                                   dir, errno_text()));
  }
  if (!has_run_json) {
    OPGATE_TRY(write_at_atomic(dir_fd, "run.json",
                               run_info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", run_json));
  } else if (!refreshed.is_null()) {
    OPGATE_TRY(write_at_atomic(dir_fd, "run.json",
                               refreshed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", run_json));
  }
  const int fd = ::openat(dir_fd, "results.jsonl", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (resume ? 0 : O_TRUNC),
                          0644);
  if (fd < 0) return io_error(fmt::format("{}: cannot write: {}", results, errno_text()));
  if (resume && keep < text.size() && ::ftruncate(fd, static_cast<off_t>(keep)) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    return io_error(fmt::format("{}: cannot cut off the partial last line: {}", results, why));
  }
  ::close(fd);
  return w;
}

Status ReportWriter::append(const CaseResult& r) {
  const std::string results = dir_ + "/results.jsonl";
  nlohmann::json j = to_json(r);
  j.erase("case");  // the case is in failed/<id>.json for failures; keep lines short
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // One write() of the whole line with O_APPEND: a crash leaves at most a cut last line.
  const int fd = ::openat(folder_->dir_fd, "results.jsonl", O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return io_error(fmt::format("{}: cannot append: {}", results, errno_text()));
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? errno_text() : "no progress";
      ::close(fd);
      return io_error(fmt::format("{}: write failed: {}", results, why));
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return io_error(fmt::format("{}: write failed: {}", results, errno_text()));
  done_.insert(r.id);
  ++counts_[static_cast<size_t>(r.verdict)];
  if (verdict_fails(r.verdict, true)) {
    nlohmann::json failed = r.case_json.is_null() ? nlohmann::json::object() : r.case_json;
    failed["result"] = to_json(r);
    failed["result"].erase("case");
    OPGATE_TRY(write_at_atomic(folder_->failed_fd, r.id + ".json",
                               failed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                               dir_ + "/failed/" + r.id + ".json"));
  }
  return Status::ok();
}

Status ReportWriter::write_file(const std::string& name, const std::string& bytes) {
  return write_at_atomic(folder_->dir_fd, name, bytes, dir_ + "/" + name);
}

}  // namespace opgate
