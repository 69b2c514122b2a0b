#pragma once
// An allocator for large count arrays and tables that hands out ZEROED memory and leaves it
// alone on construction (std::vector would otherwise write every zero again, on one thread).
// Blocks of 2 MiB and more are mapped directly (populated across the OpenMP threads; huge pages
// up to 256 MiB, and beyond where the kernel has free huge-page blocks for them) and, once
// released, kept for the next allocation of the same size. Why, with
// the measurements: docs/architecture.md, "Large arrays".
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <istream>
#include <new>
#include <type_traits>
#include <utility>

namespace privrace {

namespace detail {
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Zeroed pages of `bytes` (a multiple of kHugePage): a released block of that size when the
// cache holds one (cleared with memset), else a fresh mapping. nullptr on failure.
void* take_zeroed_pages(std::size_t bytes);
// The block goes to the cache for the next take of its size, or is unmapped past the limit.
void give_back_pages(void* p, std::size_t bytes);
// Bytes in free blocks of at least `block` bytes, from /proc/buddyinfo's text (per zone, the
// number of free blocks of page, 2 page, 4 page, ... bytes).
std::size_t free_block_bytes(std::istream& buddyinfo, std::size_t page, std::size_t block);
}  // namespace detail

// Released blocks are kept for reuse up to this many bytes (default: an eighth of physical
// memory, at most 4 GiB). An experiment allocates the same tables cell after cell, and on the
// 2-core VM a fresh page costs far more than clearing a kept one (docs/architecture.md,
// "Large arrays"). 0 turns reuse off and releases what is kept.
void set_page_cache_limit(std::size_t bytes);
std::size_t page_cache_limit();
std::size_t page_cache_bytes();  // kept now

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
    if (void* p = detail::take_zeroed_pages(rounded(bytes))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < detail::kHugePage) std::free(p);
    else detail::give_back_pages(p, rounded(bytes));
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
