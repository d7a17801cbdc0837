// Status, Expected<T> and the propagation macros used by every layer (style-and-layout.md B3).
// A Status carries a code, a message with a context chain, and, for rejected aclnn calls, the
// aclnn error code a correct kernel must return.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace opgate {

enum class StatusCode {
  kOk,
  kAclnnError,    // the call is invalid; aclnn_code() is the documented code (e.g. 161002)
  kInvalidCase,   // the case itself is wrong (would hang a kernel, contradicts its own expect)
  kUnsupported,   // backend cannot run this case (SKIPPED)
  kBackendError,  // the device failed to run a valid case
  kIoError,
  kParseError,    // malformed JSON, .npy or CLI input
  kInternal,
};

const char* status_code_name(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, int64_t aclnn_code = 0)
      : code_(code), message_(std::move(message)), aclnn_code_(aclnn_code) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  int64_t aclnn_code() const { return aclnn_code_; }

  // Prefixes the message with "<context>: ", so errors read outermost-first.
  Status with_context(const std::string& context) const;
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int64_t aclnn_code_ = 0;
};

// Convenience constructors; messages are already formatted by the caller (fmt::format).
inline Status parse_error(std::string m) { return Status(StatusCode::kParseError, std::move(m)); }
inline Status io_error(std::string m) { return Status(StatusCode::kIoError, std::move(m)); }
inline Status invalid_case(std::string m) { return Status(StatusCode::kInvalidCase, std::move(m)); }
inline Status internal_error(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status aclnn_error(int64_t code, std::string m) {
  return Status(StatusCode::kAclnnError, std::move(m), code);
}

// A value or the Status explaining why there is none.
template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Status& status() const {
    static const Status kOkStatus;
    return has_value() ? kOkStatus : std::get<1>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace opgate

#define OPGATE_CONCAT_INNER(a, b) a##b
#define OPGATE_CONCAT(a, b) OPGATE_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not ok.
#define OPGATE_TRY(expr)                                  \
  do {                                                    \
    ::opgate::Status opgate_try_status_ = (expr);         \
    if (!opgate_try_status_.is_ok()) return opgate_try_status_; \
  } while (0)

// `lhs = value of expr` (an Expected<T>), or returns its Status.
#define OPGATE_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto OPGATE_CONCAT(opgate_expected_, __LINE__) = (expr);                  \
  if (!OPGATE_CONCAT(opgate_expected_, __LINE__).has_value())               \
    return OPGATE_CONCAT(opgate_expected_, __LINE__).status();              \
  lhs = std::move(OPGATE_CONCAT(opgate_expected_, __LINE__)).value()

// Always-on invariant check for programming errors (never for input a user can supply).
#define OPGATE_CHECK(cond, msg)                                            \
  do {                                                                     \
    if (!(cond)) ::opgate::check_failed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
