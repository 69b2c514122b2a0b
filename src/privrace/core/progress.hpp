#pragma once
// Progress on stderr for long work: redrawn in place on a terminal, silent otherwise
// (CI logs and pipes stay clean).
#include <chrono>
#include <cstdint>
#include <string>

namespace privrace {

class Progress {
 public:
  Progress(std::string label, std::uint64_t total);
  ~Progress();
  void advance(std::uint64_t n = 1);
  void finish();
  static bool enabled();

 private:
  std::string label_;
  std::uint64_t total_, done_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool active_, finished_ = false;
};

}  // namespace privrace
