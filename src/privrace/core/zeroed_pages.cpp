#include "privrace/core/zeroed_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "privrace/core/memory.hpp"

namespace privrace {
namespace {

// Transparent huge pages are requested up to 256 MiB whatever the machine's state. Beyond, only
// when the buddy allocator already holds free huge-page blocks for all of it and a quarter more:
// where THP is "madvise", asking for them on gigabytes of a fragmented machine makes the kernel
// compact memory synchronously (measured: a 2 GiB allocation stalled 7 s). Where the blocks are
// free, huge pages make the first touch of fresh memory cheaper (docs/architecture.md, "Large
// arrays": on the 2-core VM a fresh 4 KiB page traps at its first write even when populated).
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

// Bytes of free blocks of at least the transparent huge page size that the buddy allocator
// holds now; 0 where either file is missing (no THP, not Linux) or unreadable.
std::size_t free_huge_page_bytes() {
  std::size_t huge = 0;
  {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    if (!(in >> huge) || huge == 0) return 0;
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return 0;
  std::ifstream in("/proc/buddyinfo");
  return detail::free_block_bytes(in, static_cast<std::size_t>(page), huge);
}

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
  if (free_huge_page_bytes() / 5 * 4 >= bytes) ::madvise(p, bytes, MADV_HUGEPAGE);
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

std::size_t free_block_bytes(std::istream& buddyinfo, std::size_t page, std::size_t block) {
  std::size_t total = 0;
  for (std::string line; std::getline(buddyinfo, line);) {
    const std::size_t zone = line.find("zone");
    if (zone == std::string::npos) continue;
    std::istringstream fields(line.substr(zone + 4));
    std::string name;
    fields >> name;
    std::size_t size = page, count = 0;
    for (; fields >> count; size *= 2)
      if (size >= block) total += count * size;
  }
  return total;
}

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
