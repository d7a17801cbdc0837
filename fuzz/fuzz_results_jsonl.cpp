// libFuzzer target for the results.jsonl reader behind `opgate run --resume` and `opgate merge`
// (DESIGN.md §8): read_results on arbitrary text must return results or an error naming the file,
// never crash; every result read must survive to_json -> case_result_from_json unchanged.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>

#include "core/report.h"
#include "fuzz/op_target.h"

namespace {

constexpr const char* kTarget = "fuzz_results_jsonl";

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
