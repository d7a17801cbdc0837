// libFuzzer target for the case-file reader as the CLI calls it (issue 13): load_case_file on a file
// (reading bounded by the JSON size limit), then make_problem, which also refuses a case over
// --max-case-bytes, on every case. Errors must name the file; no crash, no allocation beyond the
// limits. fuzz_case_json covers the round trips of the parsed text.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>

#include "cases/registry.h"
#include "fuzz/op_target.h"

namespace {

constexpr const char* kTarget = "fuzz_case_file";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using opgate::fuzz::report_finding;
  static const bool limited = (opgate::set_max_case_bytes(uint64_t{64} << 20), true);
  (void)limited;
  const int fd = memfd_create("cases.json", 0);
  if (fd < 0) report_finding(kTarget, "memfd", "memfd_create failed");
  for (size_t off = 0; off < size;) {
    const ssize_t n = write(fd, data + off, size - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  const std::string path = fmt::format("/proc/self/fd/{}", fd);
  auto cases = opgate::load_case_file(path);
  if (!cases) {
    if (cases.status().message().rfind(path, 0) != 0) {
      report_finding(kTarget, "error-without-file", "the error does not start with the file: " +
                                                        cases.status().message());
    }
  } else {
    for (const opgate::Case& c : *cases) {
      auto problem = opgate::make_problem(c);
      if (!problem && problem.status().message().find(path) == std::string::npos) {
        report_finding(kTarget, "error-without-file", "the error does not name the file: " +
                                                          problem.status().message(), &c);
      }
    }
  }
  close(fd);
  return 0;
}
