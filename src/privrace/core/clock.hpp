#pragma once
// Wall-clock seconds on the monotonic clock, for the stage timings every layer reports.
#include <chrono>

namespace privrace {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace privrace
