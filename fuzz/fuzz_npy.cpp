// libFuzzer target for the .npy reader (golden-format.md "Tensor files"): decode_npy on arbitrary
// bytes must return a tensor or an error naming the file, and a decoded tensor must survive
// encode -> decode unchanged, with encode(decode(encode(t))) byte-identical to encode(t).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/npy.h"
#include "fuzz/op_target.h"

namespace {

constexpr const char* kTarget = "fuzz_npy";
constexpr const char* kOrigin = "<fuzz>";
// Elements read back as doubles and bit patterns: enough to touch every dtype conversion.
constexpr int64_t kElementsRead = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using opgate::fuzz::report_finding;
  auto t = opgate::decode_npy(data, size, kOrigin);
  if (!t) {
    const std::string& msg = t.status().message();
    if (msg.rfind(kOrigin, 0) != 0 || t.status().code() != opgate::StatusCode::kParseError) {
      report_finding(kTarget, "bad-error", "not a parse error naming the file: " + msg);
    }
    return 0;
  }
  for (int64_t i = 0; i < std::min(t->numel(), kElementsRead); ++i) {
    volatile double v = t->get(i);
    volatile uint64_t b = t->bits(i);
    (void)v;
    (void)b;
  }
  const std::vector<uint8_t> bytes = opgate::encode_npy(*t);
  auto again = opgate::decode_npy(bytes.data(), bytes.size(), "<re-encoded>");
  if (!again) report_finding(kTarget, "reencode-unreadable", again.status().message());
  if (!again->bytes_equal(*t)) {
    report_finding(kTarget, "roundtrip",
                   fmt::format("decode(encode(t)) differs from t ({} {} vs {} {})", opgate::dtype_name(t->dtype()),
                               opgate::shape_to_string(t->shape()), opgate::dtype_name(again->dtype()),
                               opgate::shape_to_string(again->shape())));
  }
  if (opgate::encode_npy(*again) != bytes) report_finding(kTarget, "reencode-unstable", "encode is not a fixed point");
  return 0;
}
