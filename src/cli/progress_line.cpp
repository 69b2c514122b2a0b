#include "progress_line.hpp"

#include <unistd.h>

#include <cstdio>

namespace privrace::cli {

ProgressLine::ProgressLine(std::string label, bool wanted)
    : label_(std::move(label)), start_(std::chrono::steady_clock::now()), last_draw_(start_),
      active_(wanted && ::isatty(STDERR_FILENO) == 1) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::add_rows(std::uint64_t n) {
  if (!active_) return;
  std::lock_guard lock(mutex_);
  rows_ += n;
  draw_locked(false);
}

void ProgressLine::stage(const std::string& name) {
  if (!active_) return;
  std::lock_guard lock(mutex_);
  stage_ = name;
  draw_locked(true);
}

void ProgressLine::clear() {
  if (!active_) return;
  std::lock_guard lock(mutex_);
  if (drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
  }
}

void ProgressLine::draw_locked(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(250)) return;
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  char line[256];
  if (rows_ > 0)
    std::snprintf(line, sizeof line, "\r%s: %llu rows read (%.0f rows/s), %s, %.1f s\033[K", label_.c_str(),
                  static_cast<unsigned long long>(rows_), seconds > 0 ? static_cast<double>(rows_) / seconds : 0.0,
                  stage_.c_str(), seconds);
  else
    std::snprintf(line, sizeof line, "\r%s: %s, %.1f s\033[K", label_.c_str(), stage_.c_str(), seconds);
  std::fputs(line, stderr);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace privrace::cli
