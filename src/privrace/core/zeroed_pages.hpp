#pragma once
// An allocator for large count arrays that hands out ZEROED memory and leaves it alone on
// construction (std::vector would otherwise write every zero again, on one thread).
//
// Why not simply malloc + value-initialisation: a 1.6 GB sketch is 400,000 page faults, each
// zeroing a 4 KiB page; on one thread that is over a second. Here the kernel populates the
// pages up front (MADV_POPULATE_WRITE, no trap per page), split across the OpenMP threads.
// Transparent huge pages are requested only up to 256 MiB: where THP is "madvise", asking for
// them on gigabytes makes the kernel compact memory synchronously, which was measured to
// stall a 2 GiB allocation for 7 s on a fragmented machine (and 0.3 s when it was not). Below
// the limit they pay: 128 MiB (a PrivBayes table of 16^6 cells) took 0.5-0.9 s to fault in as
// 4 KiB pages on the 2-core VM, populated or not, and 4-90 ms as huge pages.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

namespace privrace {

namespace detail {
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
inline constexpr std::size_t kHugePageAdviceLimit = std::size_t{256} << 20;

// Zeroed pages, populated in parallel. Returns nullptr on failure.
inline void* allocate_zeroed_pages(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (bytes <= kHugePageAdviceLimit) {
    ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure just keeps 4 KiB pages
    return p;
  }
  constexpr std::size_t kSlice = std::size_t{32} << 20;
  const std::size_t slices = (bytes + kSlice - 1) / kSlice;
  auto* base = static_cast<char*>(p);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t i = 0; i < slices; ++i) {
    char* s = base + i * kSlice;
    const std::size_t len = std::min(kSlice, bytes - i * kSlice);
#ifdef MADV_POPULATE_WRITE
    if (::madvise(s, len, MADV_POPULATE_WRITE) == 0) continue;
#endif
    for (std::size_t off = 0; off < len; off += 4096) s[off] = 0;  // older kernels: touch each page
  }
  return p;
}
}  // namespace detail

template <typename T>
struct ZeroedPageAllocator {
  static_assert(std::is_trivially_default_constructible_v<T>, "zeroed memory stands in for value-initialisation");
  using value_type = T;

  ZeroedPageAllocator() = default;
  template <typename U>
  ZeroedPageAllocator(const ZeroedPageAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < detail::kHugePage) {
      if (void* p = std::calloc(n == 0 ? 1 : n, sizeof(T))) return static_cast<T*>(p);
      throw std::bad_alloc();
    }
    if (void* p = detail::allocate_zeroed_pages(rounded(bytes))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < detail::kHugePage) std::free(p);
    else ::munmap(p, rounded(bytes));
  }
  // Value-initialisation (vector(n), resize(n)) leaves the already-zero memory untouched.
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <typename U>
  bool operator==(const ZeroedPageAllocator<U>&) const { return true; }

 private:
  static std::size_t rounded(std::size_t bytes) { return (bytes + detail::kHugePage - 1) / detail::kHugePage * detail::kHugePage; }
};

}  // namespace privrace
