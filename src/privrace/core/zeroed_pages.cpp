#include "privrace/core/zeroed_pages.hpp"

#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "privrace/core/memory.hpp"

namespace privrace {
namespace {

// Transparent huge pages are requested only up to 256 MiB: where THP is "madvise", asking for
// them on gigabytes makes the kernel compact memory synchronously (measured: a 2 GiB
// allocation stalled 7 s on a fragmented machine).
constexpr std::size_t kHugePageAdviceLimit = std::size_t{256} << 20;
constexpr std::size_t kSlice = std::size_t{32} << 20;  // parallel populate / clear unit

struct PageCache {
  std::mutex mutex;
  std::vector<std::pair<void*, std::size_t>> blocks;  // released, not yet cleared
  std::size_t bytes = 0;
  std::size_t limit = std::min<std::size_t>(static_cast<std::size_t>(physical_memory_bytes() / 8), std::size_t{4} << 30);

  void release_all() {  // with the mutex held
    for (const auto& [p, n] : blocks) ::munmap(p, n);
    blocks.clear();
    bytes = 0;
  }
};

PageCache& cache() {
  static PageCache c;
  return c;
}

void* map_zeroed(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (bytes <= kHugePageAdviceLimit) {
    ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure just keeps 4 KiB pages
    return p;
  }
  const std::size_t slices = (bytes + kSlice - 1) / kSlice;
  auto* base = static_cast<char*>(p);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t i = 0; i < slices; ++i) {
    char* s = base + i * kSlice;
    const std::size_t len = std::min(kSlice, bytes - i * kSlice);
#ifdef MADV_POPULATE_WRITE
    if (::madvise(s, len, MADV_POPULATE_WRITE) == 0) continue;  // no trap per page
#endif
    for (std::size_t off = 0; off < len; off += 4096) s[off] = 0;  // older kernels: touch each page
  }
  return p;
}

void clear(void* p, std::size_t bytes) {
  auto* base = static_cast<char*>(p);
  const std::size_t slices = (bytes + kSlice - 1) / kSlice;
#pragma omp parallel for schedule(static) if (slices > 2)
  for (std::size_t i = 0; i < slices; ++i) std::memset(base + i * kSlice, 0, std::min(kSlice, bytes - i * kSlice));
}

}  // namespace

namespace detail {

void* take_zeroed_pages(std::size_t bytes) {
  PageCache& c = cache();
  void* kept = nullptr;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    for (auto it = c.blocks.begin(); it != c.blocks.end(); ++it)
      if (it->second == bytes) {
        kept = it->first;
        c.bytes -= bytes;
        c.blocks.erase(it);
        break;
      }
    // A size the cache does not hold: give the kept blocks back before mapping more, so the
    // cache never adds to the peak.
    if (!kept) c.release_all();
  }
  if (kept) {
    clear(kept, bytes);
    return kept;
  }
  return map_zeroed(bytes);
}

void give_back_pages(void* p, std::size_t bytes) {
  PageCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (bytes > c.limit) {
    ::munmap(p, bytes);
    return;
  }
  while (!c.blocks.empty() && c.bytes + bytes > c.limit) {  // the oldest go first
    ::munmap(c.blocks.front().first, c.blocks.front().second);
    c.bytes -= c.blocks.front().second;
    c.blocks.erase(c.blocks.begin());
  }
  c.blocks.emplace_back(p, bytes);
  c.bytes += bytes;
}

}  // namespace detail

void set_page_cache_limit(std::size_t bytes) {
  PageCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.limit = bytes;
  if (c.bytes > bytes) c.release_all();
}

std::size_t page_cache_limit() {
  PageCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.limit;
}

std::size_t page_cache_bytes() {
  PageCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.bytes;
}

}  // namespace privrace
