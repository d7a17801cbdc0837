// Case preparation: problem, golden folder and repro line, once per case.
#include "harness/prepare.h"

#include <filesystem>

#include <fmt/format.h>

#include "cases/registry.h"

namespace opgate {
namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

}  // namespace

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : abs.string();
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" '\"$`\\|&;<>(){}*?!#~\t\n") == std::string::npos) return s;
  return quote(s);
}

std::string repro_command(const Case& c, const std::string& backend, const RunOptions& opt,
                          const std::string& report_dir) {
  // A case without a file replays from the report; its path is always quoted (a report folder may
  // be named anything).
  // Absolute paths, so the line can be pasted into any shell on the machine.
  const std::string source = c.source.empty()
                                 ? quote(fmt::format("{}/failed/{}.json", absolute_path(report_dir), c.id))
                                 : shell_quote(absolute_path(c.source));
  std::string cmd = fmt::format("{} repro {} --id {} --backend {}", shell_quote(opt.repro_prefix), source,
                                shell_quote(c.id), shell_quote(backend));
  if (opt.against_golden) cmd += " --against golden";
  if (opt.repeat > 1) cmd += fmt::format(" --repeat {}", opt.repeat);
  if (opt.gate != Standard::kBound) cmd += fmt::format(" --standard {}", standard_name(opt.gate));
  if (!opt.twin_root.empty()) cmd += " --twin " + shell_quote(absolute_path(opt.twin_root));
  return cmd;
}

PreparedCase prepare_case(const Case& c, const std::string& backend, const RunOptions& opt,
                          const std::string& report_dir) {
  PreparedCase p;
  p.c = c;
  p.repro = repro_command(c, backend, opt, report_dir);
  auto made = make_problem(c);
  if (!made) {
    p.problem_error = made.status();
    return p;
  }
  p.problem = std::move(*made);
  // A rejected call is never compared, so it needs no golden folder.
  if (opt.against_golden && c.expect == 0) {
    const std::string dir = golden_case_dir(opt.golden_root, c.op, c.id);
    auto read = read_golden(dir);
    const std::string missing = read ? golden_tolerance_problem(dir, *read, *p.problem, plan_fill(c)) : "";
    if (!read) {
      p.golden_error = read.status();
    } else if (!missing.empty()) {
      p.golden_error = parse_error(missing);
    } else {
      p.golden = std::move(*read);
    }
  }
  if (!opt.twin_root.empty() && c.expect == 0) {
    auto twin = read_twin_files(opt.twin_root, c.op, c.id, *p.problem);
    if (twin) {
      p.twin = std::move(*twin);
    } else {
      p.twin_error = twin.status();
    }
  }
  return p;
}

}  // namespace opgate
