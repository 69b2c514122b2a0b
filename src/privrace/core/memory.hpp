#pragma once
#include <string>

namespace privrace {

// Physical memory of this machine in bytes, looked up once per process (sysconf asks the kernel
// with sysinfo(2) on every call, which was 17% of an audited release's cost). Memory checks
// refuse what needs more than a share of it before allocating.
double physical_memory_bytes();

// The share of physical memory one structure may take (sketch counts, hash parameters, ...).
inline constexpr double kMemoryShare = 0.8;

// Whether `bytes` is at most kMemoryShare of physical memory: the one bound every check before
// a large allocation applies.
bool fits_in_memory(double bytes);

// ResourceError "WHAT needs N MiB, more than 80% of the M MiB of memory; refused before
// allocating" unless fits_in_memory(bytes).
void check_fits_in_memory(double bytes, const std::string& what);

}  // namespace privrace
