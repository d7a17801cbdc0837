// Unit tests of core/guard: the body holds the poison pattern in every element, intact guards
// report nothing, and a changed byte on either side is reported with its side and distance.

#include "core/guard.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace opgate
