// The fill loop the four operators share: a tensor's values computed in fixed-size chunks of
// consecutive elements, the chunks spread over math::parallel_for's threads, each chunk converted
// to the tensor's dtype in bulk (store_elements, bit-identical to Tensor::set). Values are functions
// of the element index (counter RNG), so the bytes do not depend on the thread count or on the
// chunk size. Plus the block forms of the draws the fills use (CounterRng::*_block).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "core/dtype_convert.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace opgate::cases {

// Elements per chunk: 32 KiB of doubles, a cache-friendly unit that still splits any large tensor
// finely enough to balance two or more threads.
inline constexpr int64_t kFillChunk = 4096;

// Values of elements [first, first + n) into out[0, n), n <= kFillChunk.
using ChunkValues = std::function<void(int64_t first, int64_t n, double* out)>;

// Writes every element of t from `values`, chunk by chunk, in parallel.
inline void fill_chunks(Tensor& t, const ChunkValues& values) {
  const int64_t numel = t.numel();
  const int64_t chunks = (numel + kFillChunk - 1) / kFillChunk;
  math::parallel_for(chunks, [&](int64_t c) {
    double out[kFillChunk];
    const int64_t first = c * kFillChunk;
    const int64_t n = std::min(kFillChunk, numel - first);
    values(first, n, out);
    store_elements(t, first, out, n);
  }, 4);
}

// out[i] = scale * normal(first + i).
inline void normals(const CounterRng& r, uint64_t first, int64_t n, double scale, double* out) {
  r.normal_block(first, n, out);
  for (int64_t i = 0; i < n; ++i) out[i] = scale * out[i];
}

// out[i] = uniform(first + i, lo, hi) * scale.
inline void uniforms(const CounterRng& r, uint64_t first, int64_t n, double lo, double hi, double scale, double* out) {
  r.uniform_block(first, n, lo, hi, out);
  for (int64_t i = 0; i < n; ++i) out[i] = out[i] * scale;
}

// out[i] = integer(first + i, lo, hi) as double.
inline void integers(const CounterRng& r, uint64_t first, int64_t n, int64_t lo, int64_t hi, double* out) {
  int64_t v[kFillChunk];
  for (int64_t done = 0; done < n; done += kFillChunk) {
    const int64_t m = std::min(kFillChunk, n - done);
    r.integer_block(first + static_cast<uint64_t>(done), m, lo, hi, v);
    for (int64_t i = 0; i < m; ++i) out[done + i] = static_cast<double>(v[i]);
  }
}

}  // namespace opgate::cases
