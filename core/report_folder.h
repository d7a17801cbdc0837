// The report folder: results.jsonl (appended as each case finishes), run.json, failed/<id>.json and
// its lock (DESIGN.md §7, style-and-layout.md B8). summary.txt, junit.xml and report.html are
// rendered from it by the reports layer (reports/report.h), which sits above harness and history.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/result_json.h"
#include "core/status.h"

namespace opgate {

using VerdictCounts = std::array<int64_t, kVerdictCount>;
// This machine's name (the lock holder, the run facts).
std::string host_name();
// Now in UTC as YYYY-MM-DDTHH:MM:SS (junit's timestamp format: no zone suffix).
std::string utc_timestamp();
int gate_exit_code(const VerdictCounts& counts, bool strict);
// "cases:12 passed:10 failed:1 ..." — the closing counter line.
std::string counts_line(const VerdictCounts& counts);

// The run info fields that give a result its meaning: reports that differ in one are not comparable,
// so `merge` refuses to combine them.
constexpr std::array<const char*, 5> kConfigFields = {"backend", "repeat", "against", "standard", "twin"};
// What `--resume` must also share with the folder: the same shard and case selection. A folder
// written before runs recorded "selection" is not refused for lacking it.
constexpr std::array<const char*, 7> kResumeFields = {"backend", "repeat", "against", "standard", "twin", "shard", "selection"};

// A run info field as runs are compared: the backend's probe also carries library versions and the
// like, which may change between runs, so it is reduced to its name (with any defect) and SoC.
// Null when the field is absent.
nlohmann::json run_field(const nlohmann::json& info, const std::string& field);
// The first of `fields` whose run_field differs between two run infos; nullptr when none does.
template <size_t N>
const char* first_difference(const nlohmann::json& a, const nlohmann::json& b,
                             const std::array<const char*, N>& fields) {
  for (const char* field : fields) {
    if (run_field(a, field) != run_field(b, field)) return field;
  }
  return nullptr;
}
// How a run_field value reads in a message: its JSON, or "unset".
std::string run_field_text(const nlohmann::json& value);
// The --backend value a run info records (its backend probe's name: "emu", "fault:<defect>",
// "ascend"); empty when it records none.
std::string recorded_backend(const nlohmann::json& info);

// A report folder's run info and the file it came from: run.json, else the first line of
// summary.txt (folders written before run.json); `info` is null when neither exists.
struct RunInfoFile {
  std::string path;
  nlohmann::json info;
};
Expected<RunInfoFile> read_run_info(const std::string& dir);
// Refuses a run info whose "cases" is not a non-negative integer ("six", -1 would never count as
// unfinished): "<run.json>: field 'cases': expected a non-negative integer ...".
Status check_case_count(const RunInfoFile& run);
// Refuses a report whose run info says it selected more cases than `results` holds: a run killed
// and never resumed would silently leave its remaining cases out ("<dir>: unfinished run: ..."),
// and a report that a run is still writing (check_not_being_written).
Status check_finished(const std::string& dir, const RunInfoFile& run, size_t results);
// The lock file a running `opgate run` (or `merge`) holds in its report folder.
constexpr const char* kReportLockFile = "run.lock";
// Refuses a report folder whose lock another process holds: "<dir>: being written by pid P on host
// H since T (<dir>/run.lock)". Ok when there is no lock file or nobody holds it (a killed run's
// lock is released by the kernel, whatever killed it).
Status check_not_being_written(const std::string& dir);
// The report folder a command-line argument names: the folder itself or its results.jsonl. Errors
// call it a report: "<path>: no such report ...", "<dir>/results.jsonl: missing (not a report folder?)".
Expected<std::string> report_folder(const std::string& path);

// <dir>/failed/<id>.json when it is there as the plain file a run wrote, "" when it is absent; a
// symbolic link (failed/ itself included), FIFO, device or folder there is an error naming it. The
// id must have passed check_case_id (read_results checks every id it reads).
Expected<std::string> failed_case_path(const std::string& dir, const std::string& id);

// Whether `dir` holds a report: a plain results.jsonl, run.json or summary.txt (a link there is
// ReportWriter::open's to refuse).
bool holds_report(const std::string& dir);
// Removes the report in `dir` for `run --overwrite`: the files a run writes there and failed/<id>.json
// (failed/ itself once empty), through the folder's descriptor; a link is removed, never
// followed, and other files stay. Refuses a folder that another run is writing, or that is a link.
Status remove_report(const std::string& dir);

// An open report folder: its lock (flock on run.lock) and the folder descriptors that files are
// created through without following symbolic links. Closing it releases the lock.
struct ReportFolder;

class ReportWriter {
 public:
  // Creates `dir` and takes its lock (another holder: exit-2 error naming pid, host and start
  // time); refuses a folder whose results.jsonl, run.json, summary.txt, junit.xml, report.html or
  // failed/ is a symbolic link or not a plain file / folder. Then creates failed/ and writes
  // run.json. With `resume`, first refuses a run_info that
  // differs from the folder's in a kResumeFields field, then cuts a partial last line off
  // results.jsonl and remembers the case ids it holds; run.json keeps its first run's info except
  // "cases", which becomes this run's count. Nothing is written when it fails.
  // `selected` (resume): the case ids this run selects; a result of any other case is refused.
  static Expected<ReportWriter> open(const std::string& dir, const nlohmann::json& run_info, bool resume,
                                     const std::set<std::string>* selected = nullptr);
  const std::set<std::string>& done_ids() const { return done_; }
  // Appends one line to results.jsonl and flushes it; failures also get failed/<id>.json.
  Status append(const CaseResult& r);
  // Writes `name` in the folder atomically, through its descriptor (never following a link).
  Status write_file(const std::string& name, const std::string& bytes);
  // The counts of every result the folder holds, once the reports layer has read them back.
  void set_counts(const VerdictCounts& counts) { counts_ = counts; }
  const VerdictCounts& counts() const { return counts_; }
  const nlohmann::json& run_info() const { return run_info_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::shared_ptr<ReportFolder> folder_;
  nlohmann::json run_info_;
  std::set<std::string> done_;
  VerdictCounts counts_{};
};

// Reads every CaseResult of a results.jsonl (used by resume, `opgate merge` and baselines); a
// missing file holds no results. Blank lines are skipped, and so is a malformed last line without
// its newline (a crash cut it short; resume runs that case again). Any other malformed line is an
// error "<path>: line N: malformed JSON: ...", and so is a second result for one case id (two runs
// wrote the file at once): "<path>: line N: second result for case '<id>' (first at line M) ...".
Expected<std::vector<CaseResult>> read_results(const std::string& path);

}  // namespace opgate
