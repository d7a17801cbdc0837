// The bytes behind tensors (core/tensor.h). Model-sized tensors are allocated, first touched and
// freed once per case, and with std::vector that cost more than the references computing into them
// (page faults, the kernel's zeroing, then a second zeroing by std::vector). So blocks of 2 MiB or
// more are mapped directly (2 MiB-aligned), fresh pages, already zero, are not zeroed again, and
// freed blocks are kept (at most 1 GiB) and reused, resident, by later blocks of about their size.
// Smaller blocks come from calloc/malloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace opgate {

class Storage {
 public:
  enum class Init {
    kZeroed,
    kUninitialized,  // unspecified bytes: the caller writes every one before reading any
  };
  // From this size on, blocks are mapped directly.
  static constexpr size_t kHugePage = size_t{2} << 20;

  // `size` bytes; throws std::bad_alloc when the memory is not there (as std::vector does).
  static std::shared_ptr<Storage> allocate(size_t size, Init init);
  // Takes over the bytes of `bytes` without copying them.
  static std::shared_ptr<Storage> adopt(std::vector<uint8_t> bytes);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Never null, even for 0 bytes: memcpy/memset with a null pointer is undefined behaviour even
  // for a length of 0 (UBSan reports it), so empty storage points at a shared aligned byte.
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Whether the bytes are a direct mapping (tests and benchmarks).
  bool mapped() const { return mapped_bytes_ > 0; }
  // Bytes of freed mappings kept for reuse in this process (tests).
  static size_t cached_bytes();

 private:
  Storage() = default;

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_bytes_ = 0;  // > 0: data_ is an mmap of that length
  bool from_malloc_ = false;
  std::vector<uint8_t> adopted_;
};

// Writes `pattern` (`pattern_bytes` of 1 to 64) over `bytes` bytes from `dst`, repeatedly, at
// memcpy speed (poison and full()); `bytes` is a multiple of `pattern_bytes`.
void fill_pattern(uint8_t* dst, size_t bytes, const uint8_t* pattern, size_t pattern_bytes);

}  // namespace opgate
