#include "privrace/core/memory.hpp"

#include <unistd.h>

#include "privrace/core/error.hpp"

namespace privrace {

double physical_memory_bytes() {
  static const double bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  return bytes;
}

bool fits_in_memory(double bytes) { return !(bytes > kMemoryShare * physical_memory_bytes()); }

namespace {
std::string mebibytes(double bytes) {
  const double mib = bytes / 1048576.0;
  return mib < 9e15 ? std::to_string(static_cast<long long>(mib)) : message_number(mib);
}
}  // namespace

void check_fits_in_memory(double bytes, const std::string& what) {
  if (fits_in_memory(bytes)) return;
  const double memory = physical_memory_bytes();
  throw ResourceError(what + " needs " + mebibytes(bytes) + " MiB, more than " +
                      std::to_string(static_cast<int>(kMemoryShare * 100.0 + 0.5)) + "% of the " +
                      mebibytes(memory) + " MiB of memory; refused before allocating");
}

}  // namespace privrace
