// libFuzzer target for the results.jsonl reader behind `opgate run --resume` and `opgate merge`
// (DESIGN.md §8): read_results on arbitrary text must return results or an error naming the file,
// never crash; it may skip only a malformed last line without its newline (cut short by a crash),
// never a malformed line elsewhere; every result read must survive to_json -> case_result_from_json
// unchanged.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>

#include "core/report_folder.h"
#include "fuzz/op_target.h"

namespace {

constexpr const char* kTarget = "fuzz_results_jsonl";

// The first newline-terminated line that is neither blank nor JSON, or npos: such a line must make
// read_results fail (dropping it would silently lose a verdict).
size_t malformed_complete_line(const std::string& text) {
  size_t start = 0;
  for (size_t newline; (newline = text.find('\n', start)) != std::string::npos; start = newline + 1) {
    const std::string line = text.substr(start, newline - start);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!nlohmann::json::accept(line)) return start;
  }
  return std::string::npos;
}

// The input as a file without touching the disk: an anonymous memory file and its /proc path.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) : fd_(memfd_create("results.jsonl", 0)) {
    size_t off = 0;
    while (fd_ >= 0 && off < size) {
      const ssize_t n = write(fd_, data + off, size - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() {
    if (fd_ >= 0) close(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  std::string path() const { return fmt::format("/proc/self/fd/{}", fd_); }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using opgate::fuzz::report_finding;
  const MemoryFile file(data, size);
  if (!file.ok()) report_finding(kTarget, "memfd", "memfd_create failed");
  auto results = opgate::read_results(file.path());
  if (!results) {
    if (results.status().message().rfind(file.path(), 0) != 0) {
      report_finding(kTarget, "error-without-file", "the error does not start with the file: " +
                                                        results.status().message());
    }
    return 0;
  }
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (const size_t at = malformed_complete_line(text); at != std::string::npos) {
    report_finding(kTarget, "malformed-line-skipped",
                   fmt::format("read_results accepted a malformed line at byte {}", at));
  }
  for (const opgate::CaseResult& r : *results) {
    const nlohmann::json j = opgate::to_json(r);
    auto again = opgate::case_result_from_json(j);
    if (!again || opgate::to_json(*again) != j) {
      report_finding(kTarget, "result-roundtrip",
                     fmt::format("{} {}", j.dump(), again ? "reads back differently" : again.status().message()));
    }
  }
  return 0;
}
