#include "privrace/core/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace privrace {

bool Progress::enabled() {
  static const bool on = isatty(STDERR_FILENO) && std::getenv("CI") == nullptr;
  return on;
}

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      active_(enabled()) {}

Progress::~Progress() { finish(); }

void Progress::advance(std::uint64_t n) {
  done_ += n;
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200) && done_ < total_) return;
  last_draw_ = now;
  const double pct = total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0;
  // Time left at this run's own rate so far (cells of one run cost alike on average).
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = done_ ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : -1;
  char eta[48] = "";
  if (left >= 3600) std::snprintf(eta, sizeof eta, ", %.0fh%02.0fm left", std::floor(left / 3600), std::floor(std::fmod(left, 3600) / 60));
  else if (left >= 60) std::snprintf(eta, sizeof eta, ", %.0fm%02.0fs left", std::floor(left / 60), std::floor(std::fmod(left, 60)));
  else if (left >= 0) std::snprintf(eta, sizeof eta, ", %.0fs left", left);
  std::fprintf(stderr, "\r%s: %llu/%llu cells (%.0f%%)%s\033[K", label_.c_str(), static_cast<unsigned long long>(done_),
               static_cast<unsigned long long>(total_), pct, eta);
  std::fflush(stderr);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (active_) std::fprintf(stderr, "\r\033[K");
}

}  // namespace privrace
