#pragma once

namespace privrace {

// Physical memory of this machine in bytes, looked up once per process (sysconf asks the kernel
// with sysinfo(2) on every call, which was 17% of an audited release's cost). Memory checks
// refuse what needs more than a share of it before allocating.
double physical_memory_bytes();

}  // namespace privrace
