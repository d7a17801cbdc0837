// Status names, context chaining and the abort path of OPGATE_CHECK (style-and-layout.md B3).

#include "core/status.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace opgate {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kAclnnError: return "aclnn_error";
    case StatusCode::kInvalidCase: return "invalid_case";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kBackendError: return "backend_error";
    case StatusCode::kIoError: return "io_error";
    case StatusCode::kParseError: return "parse_error";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

Status Status::with_context(const std::string& context) const {
  // An ok Status has nothing to explain, so it stays ok and message-free.
  if (is_ok() || context.empty()) return *this;
  Status out = *this;
  out.message_ = message_.empty() ? context : fmt::format("{}: {}", context, message_);
  return out;
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  if (code_ == StatusCode::kAclnnError) {
    return fmt::format("{} {}: {}", status_code_name(code_), aclnn_code_, message_);
  }
  return fmt::format("{}: {}", status_code_name(code_), message_);
}

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  // stdio rather than fmt::print so nothing here can throw on the way to abort().
  std::fprintf(stderr, "opgate: internal check failed at %s:%d: %s: %s\n", file, line, cond,
               msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace opgate
