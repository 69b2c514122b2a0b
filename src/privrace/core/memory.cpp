#include "privrace/core/memory.hpp"

#include <unistd.h>

namespace privrace {

double physical_memory_bytes() {
  static const double bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  return bytes;
}

}  // namespace privrace
