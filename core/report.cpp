// Report writers: results.jsonl streams as cases finish; summary.txt and junit.xml are rebuilt
// from it at the end, so a resumed or merged run reports every case exactly once.
#include "core/report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/report_html.h"

namespace opgate {
namespace {

constexpr const char* kVerdictNames[kVerdictCount] = {
    "PASSED", "FAILED", "MISTRUSTED", "SKIPPED", "EXPECTED_REJECT", "INVALID_CASE", "BACKEND_ERROR",
    "TIMEOUT", "CRASHED"};
constexpr size_t kSummaryFailures = 10;

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace

const char* verdict_name(Verdict v) { return kVerdictNames[static_cast<size_t>(v)]; }

Expected<Verdict> parse_verdict(const std::string& name) {
  for (size_t i = 0; i < kVerdictCount; ++i) {
    if (name == kVerdictNames[i]) return static_cast<Verdict>(i);
  }
  return parse_error(fmt::format("unknown verdict '{}'", name));
}

bool verdict_fails(Verdict v, bool strict) {
  switch (v) {
    case Verdict::kFailed:
    case Verdict::kInvalidCase:
    case Verdict::kBackendError:
    case Verdict::kTimeout:
    case Verdict::kCrashed: return true;
    case Verdict::kMistrusted: return strict;
    default: return false;
  }
}

nlohmann::json to_json(const CaseResult& r) {
  nlohmann::json j{{"id", r.id},
                   {"op", r.op},
                   {"tier", r.tier},
                   {"backend", r.backend},
                   {"verdict", verdict_name(r.verdict)},
                   {"reason", r.reason},
                   {"repro", r.repro},
                   {"repeats", r.repeats},
                   {"determinism_checked", r.determinism_checked},
                   {"ms", {{"fill", r.fill_ms}, {"reference", r.reference_ms}, {"device", r.device_ms},
                           {"total", r.total_ms}}},
                   {"outputs", r.outputs}};
  if (!r.case_json.is_null()) j["case"] = r.case_json;
  return j;
}

Expected<CaseResult> case_result_from_json(const nlohmann::json& j) {
  try {
    CaseResult r;
    r.id = j.at("id").get<std::string>();
    r.op = j.value("op", "");
    r.tier = j.value("tier", "");
    r.backend = j.value("backend", "");
    OPGATE_ASSIGN_OR_RETURN(r.verdict, parse_verdict(j.at("verdict").get<std::string>()));
    r.reason = j.value("reason", "");
    r.repro = j.value("repro", "");
    // Checked before conversion: a float like 1e300 converted to int is undefined behaviour.
    if (j.contains("repeats")) {
      const auto& rep = j["repeats"];
      if (!rep.is_number_integer() || rep.get<int64_t>() < 1 || rep.get<int64_t>() > 1000000) {
        return parse_error(fmt::format("case result '{}': field 'repeats': expected an integer in [1, 1000000], got {}",
                                       r.id, rep.dump()));
      }
      r.repeats = static_cast<int>(rep.get<int64_t>());
    }
    r.determinism_checked = j.value("determinism_checked", false);
    if (j.contains("ms")) {
      r.fill_ms = j["ms"].value("fill", 0.0);
      r.reference_ms = j["ms"].value("reference", 0.0);
      r.device_ms = j["ms"].value("device", 0.0);
      r.total_ms = j["ms"].value("total", 0.0);
    }
    r.outputs = j.value("outputs", nlohmann::json::array());
    if (j.contains("case")) r.case_json = j["case"];
    return r;
  } catch (const nlohmann::json::exception& e) {
    return parse_error(fmt::format("case result: {}", e.what()));
  }
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
  return read_file(path);
}

// read_results on the text of `path`.
Expected<std::vector<CaseResult>> parse_results(const std::string& text, const std::string& path) {
  std::vector<CaseResult> out;
  size_t start = 0;
  for (int64_t n = 1; start < text.size(); ++n) {
    const size_t newline = text.find('\n', start);
    const bool complete = newline != std::string::npos;
    const std::string line = text.substr(start, (complete ? newline : text.size()) - start);
    start = complete ? newline + 1 : text.size();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      // Only the last line can be cut short by a crash (every result is written as one line and
      // flushed); elsewhere a bad line is corruption, and dropping it would lose a verdict.
      if (!complete) break;
      return parse_error(fmt::format("{}: line {}: malformed JSON: {}", path, n, e.what()));
    }
    auto r = case_result_from_json(j);
    if (!r) return r.status().with_context(fmt::format("{}: line {}", path, n));
    out.push_back(std::move(*r));
  }
  return out;
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

Status check_finished(const std::string& dir, const RunInfoFile& run, size_t results) {
  const nlohmann::json& info = run.info;
  if (!info.is_object() || !info.contains("cases") || !info["cases"].is_number_integer()) return Status::ok();
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

Expected<std::vector<CaseResult>> read_results(const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_if_present(path));
  return parse_results(text, path);
}

Expected<RunInfoFile> read_run_info(const std::string& dir) {
  RunInfoFile f{dir + "/run.json", nullptr};
  struct stat st {};
  if (::stat(f.path.c_str(), &st) == 0) {
    OPGATE_ASSIGN_OR_RETURN(std::string text, read_file(f.path));
    try {
      f.info = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      return parse_error(fmt::format("{}: malformed JSON: {}", f.path, e.what()));
    }
    if (!f.info.is_object()) return parse_error(fmt::format("{}: expected a JSON object", f.path));
    return f;
  }
  f.path = dir + "/summary.txt";
  if (::stat(f.path.c_str(), &st) != 0) return RunInfoFile{"", nullptr};
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_file(f.path));
  const std::string prefix = "opgate run ";
  const std::string first = text.substr(0, text.find('\n'));
  try {
    if (first.rfind(prefix, 0) != 0) throw std::invalid_argument("no run line");
    f.info = nlohmann::json::parse(first.substr(prefix.size()));
  } catch (const std::exception&) {
    return parse_error(fmt::format("{}: line 1: expected 'opgate run <run info JSON>'", f.path));
  }
  if (!f.info.is_object()) return parse_error(fmt::format("{}: line 1: expected a JSON object", f.path));
  return f;
}

Expected<ReportWriter> ReportWriter::open(const std::string& dir, const nlohmann::json& run_info, bool resume) {
  ReportWriter w;
  w.dir_ = dir;
  w.run_info_ = run_info;
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
      w.done_.insert(r.id);
      ++w.counts_[static_cast<size_t>(r.verdict)];
    }
  }
  OPGATE_TRY(make_dirs(dir + "/failed"));
  if (!has_run_json) {
    OPGATE_TRY(write_file_atomic(run_json, run_info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  } else if (!refreshed.is_null()) {
    OPGATE_TRY(
        write_file_atomic(run_json, refreshed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  }
  if (!resume) {
    std::ofstream truncate(results, std::ios::trunc);
    if (!truncate) return io_error(fmt::format("{}: cannot write", results));
  } else if (keep < text.size() && ::truncate(results.c_str(), static_cast<off_t>(keep)) != 0) {
    return io_error(fmt::format("{}: cannot cut off the partial last line: {}", results, std::strerror(errno)));
  }
  return w;
}

Status ReportWriter::append(const CaseResult& r) {
  const std::string results = dir_ + "/results.jsonl";
  std::ofstream out(results, std::ios::app);
  if (!out) return io_error(fmt::format("{}: cannot append", results));
  nlohmann::json j = to_json(r);
  j.erase("case");  // the case is in failed/<id>.json for failures; keep lines short
  out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.flush();
  if (!out) return io_error(fmt::format("{}: write failed", results));
  done_.insert(r.id);
  ++counts_[static_cast<size_t>(r.verdict)];
  if (verdict_fails(r.verdict, true)) {
    nlohmann::json failed = r.case_json.is_null() ? nlohmann::json::object() : r.case_json;
    failed["result"] = to_json(r);
    failed["result"].erase("case");
    OPGATE_TRY(write_file_atomic(dir_ + "/failed/" + r.id + ".json",
                                 failed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  }
  return Status::ok();
}

Status ReportWriter::finish() {
  OPGATE_ASSIGN_OR_RETURN(auto results, read_results(dir_ + "/results.jsonl"));
  VerdictCounts counts{};
  std::map<std::string, std::vector<const CaseResult*>> by_op;
  std::string failures;
  size_t n_failures = 0;
  for (const auto& r : results) {
    ++counts[static_cast<size_t>(r.verdict)];
    by_op[r.op].push_back(&r);
    if (verdict_fails(r.verdict, true)) {
      if (n_failures++ < kSummaryFailures) {
        failures += fmt::format("{} {}: {}\n    repro: {}\n", verdict_name(r.verdict), r.id, r.reason, r.repro);
      }
    }
  }
  if (n_failures > kSummaryFailures) {
    failures += fmt::format("... and {} more (see results.jsonl)\n", n_failures - kSummaryFailures);
  }
  counts_ = counts;
  std::string summary = fmt::format("opgate run {}\n", run_info_.dump());
  summary += failures;
  summary += counts_line(counts) + "\n";
  OPGATE_TRY(write_file_atomic(dir_ + "/summary.txt", summary));

  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites name=\"opgate\" tests=\"{}\">\n", results.size());
  for (const auto& [op, rs] : by_op) {
    int64_t failed = 0, skipped = 0;
    double seconds = 0;
    for (const auto* r : rs) {
      failed += verdict_fails(r->verdict, false) ? 1 : 0;
      skipped += r->verdict == Verdict::kSkipped ? 1 : 0;
      seconds += r->total_ms / 1000;
    }
    xml += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
                       xml_escape(op), rs.size(), failed, skipped, seconds);
    for (const auto* r : rs) {
      xml += fmt::format("    <testcase classname=\"{}.{}\" name=\"{}\" time=\"{:.3f}\">", xml_escape(op),
                         xml_escape(r->tier), xml_escape(r->id), r->total_ms / 1000);
      if (verdict_fails(r->verdict, false)) {
        xml += fmt::format("<failure type=\"{}\" message=\"{}\">{}</failure>", verdict_name(r->verdict),
                           xml_escape(r->reason), xml_escape(r->repro));
      } else if (r->verdict == Verdict::kSkipped) {
        xml += fmt::format("<skipped message=\"{}\"/>", xml_escape(r->reason));
      } else if (r->verdict != Verdict::kPassed) {
        xml += fmt::format("<system-out>{}: {}</system-out>", verdict_name(r->verdict), xml_escape(r->reason));
      }
      xml += "</testcase>\n";
    }
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  OPGATE_TRY(write_file_atomic(dir_ + "/junit.xml", xml));
  return write_file_atomic(dir_ + "/report.html", render_html_report(run_info_, results, counts));
}

}  // namespace opgate
