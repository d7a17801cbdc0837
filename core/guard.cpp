// Poison and guard patterns for output buffers; digests of input images.
#include "core/guard.h"

#include <algorithm>

#include <fmt/format.h>
#include <xxhash.h>

#include "core/parallel.h"

namespace opgate {
namespace {
// Position-dependent guard bytes, so a stray memset or copy of a constant is never mistaken for
// an intact guard.
uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0x5A ^ (i * 31)); }
}  // namespace

uint64_t poison_bits(DType t) {
  switch (t) {
    case DType::kF64: return 0x7FFDEAD5A5A5A5A5ull;
    case DType::kF32: return 0x7FDEAD5Au;
    case DType::kF16: return 0x7E5Au;
    case DType::kBF16: return 0x7FDAu;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool: return 0xA5u;
    case DType::kI32: return 0xA5A5A5A5u;
    case DType::kI64:
    case DType::kU64: return 0xA5A5A5A5A5A5A5A5ull;
  }
  return 0;
}

GuardedBuffer make_guarded(DType dtype, const Shape& shape, size_t guard_bytes) {
  GuardedBuffer b;
  b.guard_bytes = guard_bytes;
  const size_t body = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  // Every byte is written below: the guards, then the body with the poison pattern.
  b.storage = Storage::allocate(body + 2 * guard_bytes, Storage::Init::kUninitialized);
  uint8_t* bytes = b.storage->data();
  for (size_t i = 0; i < guard_bytes; ++i) {
    bytes[i] = guard_byte(i);
    bytes[guard_bytes + body + i] = guard_byte(i + guard_bytes);
  }
  b.tensor = Tensor::view(dtype, shape, b.storage, guard_bytes);
  uint8_t poison[8];
  store_bits(dtype, poison, poison_bits(dtype));
  fill_pattern(b.tensor.data(), body, poison, dtype_size(dtype));
  return b;
}

std::string check_guards(const GuardedBuffer& b) {
  const size_t body = b.tensor.nbytes();
  const uint8_t* bytes = b.storage->data();
  size_t before = 0, after = 0, first_before = 0, first_after = 0;
  for (size_t i = 0; i < b.guard_bytes; ++i) {
    if (bytes[i] != guard_byte(i)) {
      if (before++ == 0) first_before = b.guard_bytes - i;
    }
    if (bytes[b.guard_bytes + body + i] != guard_byte(i + b.guard_bytes)) {
      if (after++ == 0) first_after = i;
    }
  }
  if (before == 0 && after == 0) return "";
  std::string s;
  if (before > 0) s += fmt::format("{} guard byte(s) before the buffer changed (farthest {} bytes before)", before, first_before);
  if (after > 0) {
    s += (s.empty() ? "" : "; ") +
         fmt::format("{} guard byte(s) after the buffer changed (first at byte {} past the end)", after, first_after);
  }
  return s;
}

InputDigest digest_input(const Tensor& t) {
  InputDigest d;
  d.nbytes = t.nbytes();
  d.chunks.resize((d.nbytes + kDigestChunkBytes - 1) / kDigestChunkBytes);
  const uint8_t* bytes = t.data();
  // Hashing runs at memory speed; below 8 chunks a thread would cost more than it saves.
  math::parallel_for(
      static_cast<int64_t>(d.chunks.size()),
      [&](int64_t i) {
        const size_t begin = static_cast<size_t>(i) * kDigestChunkBytes;
        d.chunks[static_cast<size_t>(i)] = XXH3_64bits(bytes + begin, std::min(kDigestChunkBytes, d.nbytes - begin));
      },
      8);
  return d;
}

std::string input_change(const InputDigest& before, const Tensor& now) {
  if (now.nbytes() != before.nbytes) return fmt::format("size changed from {} to {} bytes", before.nbytes, now.nbytes());
  const InputDigest after = digest_input(now);
  const auto diff = std::mismatch(before.chunks.begin(), before.chunks.end(), after.chunks.begin());
  if (diff.first == before.chunks.end()) return "";
  const size_t begin = static_cast<size_t>(diff.first - before.chunks.begin()) * kDigestChunkBytes;
  return fmt::format("first change within bytes [{}, {}) of {}", begin, std::min(begin + kDigestChunkBytes, before.nbytes),
                     before.nbytes);
}

}  // namespace opgate
