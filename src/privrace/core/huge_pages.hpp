#pragma once
// An allocator for large count arrays: 2 MiB-aligned and advised to use transparent huge
// pages. A 1.6 GB sketch on 4 KiB pages spends close to a second in page faults when it is
// zeroed, and every random counter lookup risks a TLB miss; huge pages remove most of both.
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace privrace {

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHuge = std::size_t{2} << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return static_cast<T*>(p);
      throw std::bad_alloc();
    }
    const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure just keeps 4 KiB pages
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
};

}  // namespace privrace
