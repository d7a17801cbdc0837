// Unit tests of core/guard: the body holds the poison pattern in every element, intact guards
// report nothing, and a changed byte on either side is reported with its side and distance; an
// input digest sees one flipped bit anywhere, in the chunk where it lies, at any thread count.

#include "core/guard.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "core/parallel.h"

namespace opgate {
namespace {

TEST(Guard, body_is_poisoned_in_every_element) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kU8, DType::kI32,
                  DType::kI64, DType::kU64, DType::kBool}) {
    // 300000 elements: at least 2 MiB of body for 8-byte types (the mapped path), and odd sizes
    // across the pattern fill's blocks for the small ones.
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{4097}, int64_t{300000}}) {
      GuardedBuffer b = make_guarded(t, {n});
      ASSERT_EQ(b.tensor.numel(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b.tensor.bits(i), poison_bits(t)) << dtype_name(t) << " " << i;
      EXPECT_EQ(check_guards(b), "");
    }
  }
}

TEST(Guard, a_changed_guard_byte_is_reported_with_its_side) {
  GuardedBuffer b = make_guarded(DType::kF32, {10}, 16);
  EXPECT_EQ(check_guards(b), "");
  // 3 bytes before the body (index 13 of the 16-byte front guard).
  b.storage->data()[13] ^= 1;
  EXPECT_EQ(check_guards(b), "1 guard byte(s) before the buffer changed (farthest 3 bytes before)");
  b.storage->data()[13] ^= 1;
  // Byte 0 and byte 5 past the end of the 40-byte body.
  b.storage->data()[16 + 40] ^= 0xFF;
  b.storage->data()[16 + 40 + 5] = 0;
  EXPECT_EQ(check_guards(b), "2 guard byte(s) after the buffer changed (first at byte 0 past the end)");
}

TEST(Guard, writes_inside_the_body_leave_the_guards_intact) {
  GuardedBuffer b = make_guarded(DType::kBF16, {3, 5});
  for (int64_t i = 0; i < b.tensor.numel(); ++i) b.tensor.set(i, 1.0);
  EXPECT_EQ(check_guards(b), "");
}

// 3.5 chunks of bytes i * 7 mod 256: the last chunk is half a chunk.
Tensor three_and_a_half_chunks() {
  Tensor t = Tensor::empty(DType::kU8, {static_cast<int64_t>(kDigestChunkBytes * 7 / 2)});
  for (size_t i = 0; i < t.nbytes(); ++i) t.data()[i] = static_cast<uint8_t>(i * 7);
  return t;
}

TEST(InputDigest, equal_bytes_in_other_storage_are_unchanged) {
  const Tensor t = three_and_a_half_chunks();
  const InputDigest d = digest_input(t);
  EXPECT_EQ(d.nbytes, t.nbytes());
  EXPECT_EQ(d.chunks.size(), 4u);
  EXPECT_EQ(input_change(d, t), "");
  EXPECT_EQ(input_change(d, t.clone()), "");
  const Tensor none = Tensor::zeros(DType::kF32, {0});
  EXPECT_EQ(digest_input(none).chunks.size(), 0u);  // an empty input has no chunk
  EXPECT_EQ(input_change(digest_input(none), none), "");
}

// One bit flipped at the first byte, inside a middle chunk, at the chunk boundaries and at the last
// byte: the range named is the chunk holding the byte (C = 1 MiB, n = 3.5 C).
TEST(InputDigest, one_flipped_bit_is_seen_in_the_chunk_where_it_lies) {
  const Tensor t = three_and_a_half_chunks();
  const InputDigest d = digest_input(t);
  const size_t c = kDigestChunkBytes, n = t.nbytes();
  const std::string of = fmt::format(" of {}", n);
  const std::vector<std::pair<size_t, std::string>> flips = {
      {0, fmt::format("[0, {})", c)},          {c - 1, fmt::format("[0, {})", c)},
      {c, fmt::format("[{}, {})", c, 2 * c)}, {2 * c + 12345, fmt::format("[{}, {})", 2 * c, 3 * c)},
      {3 * c, fmt::format("[{}, {})", 3 * c, n)}, {n - 1, fmt::format("[{}, {})", 3 * c, n)}};
  for (const auto& [byte, range] : flips) {
    Tensor changed = t.clone();
    changed.data()[byte] ^= 0x80;
    EXPECT_EQ(input_change(d, changed), "first change within bytes " + range + of) << byte;
  }
  // Two changed chunks: the first one is named.
  Tensor changed = t.clone();
  changed.data()[3 * c] ^= 1;
  changed.data()[c + 1] ^= 1;
  EXPECT_EQ(input_change(d, changed), fmt::format("first change within bytes [{}, {}){}", c, 2 * c, of));
}

TEST(InputDigest, a_changed_size_is_named) {
  const InputDigest d = digest_input(Tensor::zeros(DType::kF32, {4}));
  EXPECT_EQ(input_change(d, Tensor::zeros(DType::kF32, {5})), "size changed from 16 to 20 bytes");
}

TEST(InputDigest, digests_do_not_depend_on_the_thread_count) {
  Tensor t = Tensor::empty(DType::kU8, {static_cast<int64_t>(kDigestChunkBytes * 20 + 3)});
  for (size_t i = 0; i < t.nbytes(); ++i) t.data()[i] = static_cast<uint8_t>(i ^ (i >> 17));
  math::set_threads(1);
  const InputDigest one = digest_input(t);
  math::set_threads(3);
  const InputDigest three = digest_input(t);
  math::set_threads(0);
  EXPECT_EQ(one.chunks, three.chunks);
  EXPECT_EQ(one.chunks.size(), 21u);
  // Chunks 0 and 1 hold different bytes (i >> 17 differs by 8 between them): a digest that ignored
  // its bytes would fail here.
  EXPECT_NE(one.chunks[0], one.chunks[1]);
}

}  // namespace
}  // namespace opgate
