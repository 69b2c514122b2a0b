#include "privrace/core/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace privrace {

bool Progress::enabled() {
  static const bool on = isatty(STDERR_FILENO) && std::getenv("CI") == nullptr;
  return on;
}

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)), total_(total), last_draw_(std::chrono::steady_clock::now()), active_(enabled()) {}

Progress::~Progress() { finish(); }

void Progress::advance(std::uint64_t n) {
  done_ += n;
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200) && done_ < total_) return;
  last_draw_ = now;
  const double pct = total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0;
  std::fprintf(stderr, "\r%s: %llu/%llu (%.0f%%)", label_.c_str(), static_cast<unsigned long long>(done_),
               static_cast<unsigned long long>(total_), pct);
  std::fflush(stderr);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (active_) std::fprintf(stderr, "\r\033[K");
}

}  // namespace privrace
