// The byte-driven Chooser used by fuzz targets.
#include "cases/chooser.h"

namespace opgate {

uint64_t BytesChooser::take(int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    const uint64_t b = pos_ < size_ ? data_[pos_] : 0;
    ++pos_;
    v |= b << (8 * i);
  }
  return v;
}

int64_t BytesChooser::integer(int64_t lo, int64_t hi, const char* /*what*/) {
  if (hi <= lo) return lo;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  int bytes = 1;
  while (bytes < 8 && (span >> (8 * bytes)) != 0) ++bytes;
  const uint64_t v = take(bytes);
  return lo + static_cast<int64_t>(span == UINT64_MAX ? v : v % (span + 1));
}

bool BytesChooser::flag(double p, const char* /*what*/) {
  return static_cast<double>(take(1)) < p * 256.0;
}

}  // namespace opgate
