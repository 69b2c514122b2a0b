#pragma once
// A progress line on stderr for `privrace sketch`: the rows read so far, their rate and the
// stage (read + build, noise, write), redrawn in place at most 4 times a second. Only on a
// terminal: with -q, or when stderr is a file or a pipe (tests, logs), nothing is written.
// (core/progress.hpp counts cells of a known total; a stream of rows has no total.)
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace privrace::cli {

class ProgressLine {
 public:
  // Draws only when `wanted` (not -q) and stderr is a terminal.
  ProgressLine(std::string label, bool wanted);
  ~ProgressLine();  // erases the line (also when an error unwinds)
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  bool active() const { return active_; }
  void add_rows(std::uint64_t n);        // n more rows read (redrawn when 250 ms have passed)
  void stage(const std::string& name);   // the stage now running (redrawn at once)
  void clear();                          // erases the line, before the summary line is printed

 private:
  void draw_locked(bool force);
  std::string label_, stage_;
  std::uint64_t rows_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool active_ = false, drawn_ = false;
  std::mutex mutex_;
};

}  // namespace privrace::cli
