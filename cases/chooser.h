// Chooser: the source of decisions for an operator's generator (style-and-layout.md B11). One
// generator serves RapidCheck (shrinking), libFuzzer (bytes) and `opgate gen` (seeded RNG).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"

namespace opgate {

class Chooser {
 public:
  virtual ~Chooser() = default;
  // An integer in [lo, hi]; implementations should shrink toward lo. `what` names the decision.
  virtual int64_t integer(int64_t lo, int64_t hi, const char* what) = 0;
  // true with roughly probability `p` (shrinks toward false).
  virtual bool flag(double p, const char* what) = 0;
  // One of `n` alternatives, shrinking toward the first.
  size_t pick(size_t n, const char* what) {
    return static_cast<size_t>(integer(0, static_cast<int64_t>(n) - 1, what));
  }
  template <class T>
  const T& one_of(const std::vector<T>& options, const char* what) {
    return options[pick(options.size(), what)];
  }
};

// Decisions from the counter-based RNG: the same seed gives the same sequence everywhere.
class RngChooser final : public Chooser {
 public:
  explicit RngChooser(uint64_t seed) : rng_(seed, "chooser") {}
  int64_t integer(int64_t lo, int64_t hi, const char* /*what*/) override { return rng_.integer(next_++, lo, hi); }
  bool flag(double p, const char* /*what*/) override { return rng_.bernoulli(next_++, p); }

 private:
  CounterRng rng_;
  uint64_t next_ = 0;
};

// Decisions read from raw bytes (libFuzzer), little-endian, zeros once the bytes run out, so every
// byte string decodes to some choice sequence and shorter inputs mean smaller choices.
class BytesChooser final : public Chooser {
 public:
  BytesChooser(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  int64_t integer(int64_t lo, int64_t hi, const char* what) override;
  bool flag(double p, const char* what) override;

 private:
  uint64_t take(int bytes);
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace opgate
