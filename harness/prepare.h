// Case preparation (the runner's stage 1, parse): the problem built from the case (strict params,
// per-tensor fills, --max-case-bytes), its golden folder read when the run compares against golden
// files, and the repro line, once per case before anything runs. A run prepares every case first,
// so a broken case file or golden folder stops it before any report is written.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/case.h"
#include "core/problem.h"
#include "core/status.h"
#include "harness/golden.h"
#include "harness/twin_folder.h"

namespace opgate {

struct RunOptions {
  int repeat = 1;                  // device runs; > 1 requires bit-identical defined outputs
  bool against_golden = false;     // expected values from golden/<op>/<id>/ instead of the reference
  std::string golden_root = "golden";
  bool isolate = true;             // each case in a child process
  double timeout_s = 600;          // per case, isolated runs only
  int64_t child_threads = 0;       // threads of an isolated case's child (run -j); 0: this process's
  bool vacuity = true;
  // run --standard: the standard that gates every floating output in Ascend's scope instead of its
  // plan's own (bound); the vacuity check then asks whether this standard would see a defect.
  Standard gate = Standard::kBound;
  // run --twin DIR: the dual-benchmark's twin read from DIR/<op>/<id>/<output>.npy (a third party's
  // low-precision run) instead of the clean emulator; empty: the emulator (harness/twin_folder.h).
  std::string twin_root;
  std::string repro_prefix = "opgate";  // how the repro line invokes the binary (run: its absolute path)
  // Tensor dumps (harness/dump.h): repro --dump writes the case's tensors into `dump_dir`;
  // run --dump-failed (dump_failed_only) those of each failing case into `dump_dir`/<case id>/.
  std::string dump_dir;
  bool dump_failed_only = false;
};

// Where a run writes failed/<id>.json when the caller has no report folder (repro, tests).
inline constexpr const char* kNoReportDir = "<report>";

struct PreparedCase {
  Case c;
  std::shared_ptr<const Problem> problem;  // null when the case makes no problem: `problem_error` says why
  Status problem_error = Status::ok();
  // Against golden, for a case that expects ok: the folder read with every digest checked, or why not.
  std::optional<GoldenCase> golden;
  Status golden_error = Status::ok();
  // With --twin, for a case that expects ok: the third party's output files, or why they cannot be read.
  std::optional<TwinFiles> twin;
  Status twin_error = Status::ok();
  std::string repro;  // the one-line command that reruns the case
};

// `path` absolute with `.`, `..` and existing links resolved: a repro or resume line names the same
// file from any directory.
std::string absolute_path(const std::string& path);
// `s` as one shell word: unchanged when it holds nothing a shell interprets, else single-quoted.
std::string shell_quote(const std::string& s);

// Builds what running `c` on `backend` needs. Never fails: a case that makes no problem or has no
// readable golden folder carries the error, which the runner reports as INVALID_CASE at the stage
// where the case would have needed it (and `run` refuses before it starts).
PreparedCase prepare_case(const Case& c, const std::string& backend, const RunOptions& opt,
                          const std::string& report_dir = kNoReportDir);

// The one-line command that reruns a case: from its file when it has one, else from the
// failed/<id>.json the report in `report_dir` holds.
std::string repro_command(const Case& c, const std::string& backend, const RunOptions& opt,
                          const std::string& report_dir = kNoReportDir);

}  // namespace opgate
