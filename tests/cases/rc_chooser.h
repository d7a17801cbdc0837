// A Chooser over RapidCheck generators: every decision an operator's generate() makes becomes a
// RapidCheck draw, so properties over generated cases shrink toward the smallest failing case.
#pragma once

#include <rapidcheck.h>

#include "cases/chooser.h"

namespace opgate::testing {

class RcChooser final : public Chooser {
 public:
  int64_t integer(int64_t lo, int64_t hi, const char* /*what*/) override {
    if (hi <= lo) return lo;
    return *rc::gen::inRange<int64_t>(lo, hi + 1);  // inRange is half-open; shrinks toward lo
  }
  bool flag(double p, const char* /*what*/) override {
    // A uniform draw in [0, 1000) (inRange alone is size-scaled and would hug 0 at small sizes);
    // it shrinks toward 0, and comparing from the top makes that shrink toward false.
    const int64_t d = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(0, 1000));
    return static_cast<double>(999 - d) < p * 1000.0;
  }
};

}  // namespace opgate::testing
