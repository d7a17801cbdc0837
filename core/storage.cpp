// Tensor byte storage: 2 MiB-aligned mappings for model-sized blocks, reused when freed; malloc below
// (core/storage.h).
#include "core/storage.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace opgate {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

constexpr size_t kPage = 4096;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A fresh private anonymous mapping of round_up(size, 4 KiB) bytes starting on a 2 MiB boundary
// (so that THP in `always` mode can back it with huge pages); nullptr on failure. Fresh anonymous
// pages read as zero. Not advised with MADV_HUGEPAGE: measured on this project's VM, a first touch
// of huge pages cost 2-4x that of 4 KiB pages (1.9 GB: 1.7-3.6 s against 0.8-0.9 s; the nightly
// mfrg.dsv3_prefill_dropless case: 13.2 against 6.5 system seconds), presumably because fresh
// 2 MiB blocks are the ones the guest returned to the host; unmapping them was 40x cheaper.
uint8_t* map_aligned(size_t size, size_t* mapped_bytes) {
  const size_t length = round_up(size, kPage);
  const size_t span = length + Storage::kHugePage - kPage;  // enough to find an aligned start
  void* base = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  const auto first = reinterpret_cast<uintptr_t>(base);
  const uintptr_t aligned = round_up(first, Storage::kHugePage);
  if (aligned > first) munmap(base, aligned - first);
  const uintptr_t end = first + span;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
  *mapped_bytes = length;
  return reinterpret_cast<uint8_t*>(aligned);
}

// Freed mappings kept for reuse. A fresh mapping costs a page fault and the kernel's zeroing of
// every page on first touch (here 55 ms for 147 MB, against 3-5 ms to memset resident memory),
// and references, clones and vacuity copies
// of the same sizes come and go within one case and in every benchmark iteration. Bounded, so a
// long process holds at most kMaxBytes of freed memory.
class BlockCache {
 public:
  static constexpr size_t kMaxBytes = size_t{1} << 30;

  static BlockCache& instance() {
    static BlockCache* cache = new BlockCache;  // never destroyed: tensors may outlive statics
    return *cache;
  }

  // A cached block of at least `length` bytes and at most twice that (so a small tensor does not
  // pin a large block), the smallest that fits; nullptr if none.
  uint8_t* take(size_t length, size_t* block_length) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t best = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const size_t len = blocks_[i].second;
      if (len >= length && len / 2 <= length && (best == blocks_.size() || len < blocks_[best].second)) best = i;
    }
    if (best == blocks_.size()) return nullptr;
    uint8_t* block = blocks_[best].first;
    *block_length = blocks_[best].second;
    bytes_ -= *block_length;
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    return block;
  }

  // Keeps a freed block, dropping the oldest ones to stay within kMaxBytes; unmaps it if it alone
  // is larger.
  void give_back(uint8_t* block, size_t length) {
    if (length > kMaxBytes) {
      munmap(block, length);
      return;
    }
    std::vector<std::pair<uint8_t*, size_t>> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (bytes_ + length > kMaxBytes) {
        evicted.push_back(blocks_.front());
        bytes_ -= blocks_.front().second;
        blocks_.erase(blocks_.begin());
      }
      blocks_.emplace_back(block, length);
      bytes_ += length;
    }
    for (const auto& [b, len] : evicted) munmap(b, len);
  }

  // Unmaps every cached block (a failed mapping retries after this).
  void release() {
    std::vector<std::pair<uint8_t*, size_t>> all;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      all.swap(blocks_);
      bytes_ = 0;
    }
    for (const auto& [b, len] : all) munmap(b, len);
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

 private:
  BlockCache() {
    // A forked child (the case child) gets copy-on-write copies of the parent's cached blocks:
    // reusing one would copy every page, so the child unmaps them and starts with an empty cache.
    // The mutex is held across fork, so the list is consistent in both processes.
    pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] {
                     BlockCache& c = instance();
                     for (const auto& [b, len] : c.blocks_) munmap(b, len);
                     c.blocks_.clear();
                     c.bytes_ = 0;
                     c.mutex_.unlock();
                   });
  }

  std::mutex mutex_;
  std::vector<std::pair<uint8_t*, size_t>> blocks_;  // oldest first
  size_t bytes_ = 0;
};

uint8_t* empty_bytes() {
  alignas(64) static uint8_t bytes[64] = {};
  return bytes;
}

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t size, Init init) {
  std::shared_ptr<Storage> s(new Storage);
  s->size_ = size;
  if (size == 0) {
    s->data_ = empty_bytes();
    return s;
  }
  // Under AddressSanitizer every block stays on its heap, where overflows are detected.
  if (size >= kHugePage && !kAddressSanitizer) {
    BlockCache& cache = BlockCache::instance();
    const size_t length = round_up(size, kPage);
    s->data_ = cache.take(length, &s->mapped_bytes_);
    if (s->data_ != nullptr) {
      if (init == Init::kZeroed) std::memset(s->data_, 0, size);
      return s;
    }
    s->data_ = map_aligned(size, &s->mapped_bytes_);
    if (s->data_ == nullptr) {
      cache.release();
      s->data_ = map_aligned(size, &s->mapped_bytes_);
    }
    if (s->data_ == nullptr) throw std::bad_alloc();
    return s;  // fresh pages read as zero, whatever `init` asks
  }
  void* p = init == Init::kZeroed ? std::calloc(size, 1) : std::malloc(size);
  if (p == nullptr) throw std::bad_alloc();
  s->data_ = static_cast<uint8_t*>(p);
  s->from_malloc_ = true;
  return s;
}

std::shared_ptr<Storage> Storage::adopt(std::vector<uint8_t> bytes) {
  std::shared_ptr<Storage> s(new Storage);
  s->adopted_ = std::move(bytes);
  s->size_ = s->adopted_.size();
  s->data_ = s->adopted_.empty() ? empty_bytes() : s->adopted_.data();
  return s;
}

void fill_pattern(uint8_t* dst, size_t bytes, const uint8_t* pattern, size_t pattern_bytes) {
  if (bytes == 0) return;
  // A block of whole patterns that stays in the L1/L2 cache, doubled from one pattern, then copied
  // block by block: the stores run at memcpy speed whatever the element size.
  constexpr size_t kBlock = 32 * 1024;
  size_t block = std::min(bytes, pattern_bytes);
  std::memcpy(dst, pattern, block);
  while (block < bytes && block * 2 <= kBlock) {
    const size_t more = std::min(block, bytes - block);
    std::memcpy(dst + block, dst, more);
    block += more;
  }
  for (size_t done = block; done < bytes; done += block) std::memcpy(dst + done, dst, std::min(block, bytes - done));
}

size_t Storage::cached_bytes() { return BlockCache::instance().cached_bytes(); }

Storage::~Storage() {
  if (mapped_bytes_ > 0) BlockCache::instance().give_back(data_, mapped_bytes_);
  if (from_malloc_) std::free(data_);
}

}  // namespace opgate
