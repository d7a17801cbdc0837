// Unit tests of core/storage: zeroed blocks read as zero whatever memory they reuse, large blocks
// are 2 MiB-aligned mappings reused after they are freed, empty storage hands out a pointer, and
// fill_pattern matches an element-by-element loop.

#include "core/storage.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/tensor.h"

namespace opgate {
namespace {

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Whether this build maps large blocks itself (not under AddressSanitizer, which keeps them on
// its heap to detect overflows).
bool maps_large_blocks() { return Storage::allocate(Storage::kHugePage, Storage::Init::kZeroed)->mapped(); }

TEST(Storage, empty_storage_is_not_null) {
  EXPECT_NE(Storage::allocate(0, Storage::Init::kZeroed)->data(), nullptr);
  EXPECT_NE(Storage::allocate(0, Storage::Init::kUninitialized)->data(), nullptr);
  EXPECT_NE(Storage::adopt({})->data(), nullptr);
  EXPECT_EQ(Storage::adopt({})->size(), 0u);
}

TEST(Storage, adopt_keeps_the_bytes_without_copying) {
  std::vector<uint8_t> bytes = {1, 2, 3};
  const uint8_t* where = bytes.data();
  auto s = Storage::adopt(std::move(bytes));
  EXPECT_EQ(s->data(), where);
  EXPECT_EQ(s->size(), 3u);
  EXPECT_EQ(s->data()[2], 3);
}

// zeros() must be exact even when the allocator hands back memory that a freed tensor dirtied:
// small blocks reuse the malloc heap, large ones are fresh mappings.
TEST(Storage, zeroed_blocks_read_zero_after_dirty_ones_were_freed) {
  for (size_t size : {size_t{100}, size_t{64} << 10, Storage::kHugePage - 1, Storage::kHugePage,
                      Storage::kHugePage * 3 + 12345}) {
    for (int round = 0; round < 3; ++round) {
      auto dirty = Storage::allocate(size, Storage::Init::kUninitialized);
      std::memset(dirty->data(), 0xA5, size);
      dirty.reset();
      auto zeroed = Storage::allocate(size, Storage::Init::kZeroed);
      ASSERT_EQ(zeroed->size(), size);
      EXPECT_TRUE(all_zero(zeroed->data(), size)) << size << " bytes, round " << round;
    }
  }
  // The same through the tensor factory.
  Tensor big = Tensor::full(DType::kF64, {300000}, 2.5);
  big = Tensor();
  Tensor z = Tensor::zeros(DType::kF64, {300000});
  EXPECT_TRUE(all_zero(z.data(), z.nbytes()));
}

TEST(Storage, large_blocks_are_aligned_mappings) {
  if (!maps_large_blocks()) GTEST_SKIP() << "AddressSanitizer build: large blocks stay on its heap";
  auto small = Storage::allocate(Storage::kHugePage - 1, Storage::Init::kZeroed);
  EXPECT_FALSE(small->mapped());
  auto large = Storage::allocate(Storage::kHugePage * 2 + 1, Storage::Init::kUninitialized);
  EXPECT_TRUE(large->mapped());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large->data()) % Storage::kHugePage, 0u);
  // Every byte is usable, the last one included.
  large->data()[large->size() - 1] = 7;
  EXPECT_EQ(large->data()[large->size() - 1], 7);
}

// A freed block is reused, resident, by the next block of about its size, and not by one less
// than half its size.
TEST(Storage, freed_large_blocks_are_reused_by_blocks_of_about_their_size) {
  if (!maps_large_blocks()) GTEST_SKIP() << "AddressSanitizer build: large blocks stay on its heap";
  const size_t size = Storage::kHugePage * 5;
  auto first = Storage::allocate(size, Storage::Init::kUninitialized);
  uint8_t* where = first->data();
  first.reset();
  EXPECT_GE(Storage::cached_bytes(), size);
  auto smaller = Storage::allocate(size / 2 - Storage::kHugePage, Storage::Init::kUninitialized);
  EXPECT_NE(smaller->data(), where);
  auto again = Storage::allocate(size - 100, Storage::Init::kZeroed);
  EXPECT_EQ(again->data(), where);
  EXPECT_TRUE(all_zero(again->data(), again->size()));
}

TEST(Storage, the_cache_is_bounded_and_empty_in_a_forked_child) {
  if (!maps_large_blocks()) GTEST_SKIP() << "AddressSanitizer build: large blocks stay on its heap";
  {
    // 40 blocks of 32 MiB freed at once: more than the 1 GiB the cache may hold.
    std::vector<std::shared_ptr<Storage>> many;
    for (int i = 0; i < 40; ++i) many.push_back(Storage::allocate(size_t{32} << 20, Storage::Init::kUninitialized));
  }
  EXPECT_GT(Storage::cached_bytes(), 0u);
  EXPECT_LE(Storage::cached_bytes(), size_t{1} << 30);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(Storage::cached_bytes() == 0 ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child saw cached blocks of its parent";
}

TEST(Storage, fill_pattern_matches_an_element_loop) {
  const uint8_t pattern[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
  for (size_t width : {1, 2, 4, 8}) {
    for (size_t elements : {size_t{0}, size_t{1}, size_t{3}, size_t{4095}, size_t{32768 / 8 + 1}, size_t{100003}}) {
      const size_t n = elements * width;
      std::vector<uint8_t> got(n + 2, 0xEE);
      fill_pattern(got.data() + 1, n, pattern, width);
      EXPECT_EQ(got.front(), 0xEE);
      EXPECT_EQ(got.back(), 0xEE);  // nothing written past the end
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[1 + i], pattern[i % width]) << "width " << width << ", byte " << i << " of " << n;
      }
    }
  }
}

}  // namespace
}  // namespace opgate
