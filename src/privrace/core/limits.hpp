#pragma once
// Bounds on the counts users pass (threads, sizes) and the checked integer parsing every
// command line uses for them: an option read straight into an unsigned type would wrap "-5"
// around to 2^64 - 5.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "privrace/core/error.hpp"

namespace privrace {

// The most OpenMP threads any entry point accepts (0 = all cores is always allowed). Beyond
// what a machine has, threads only cost: libgomp starts a team of N threads with N start
// records alloca'd on the calling thread's stack (about 100 bytes each), so ~100000 threads
// overflow an 8 MiB stack and the process dies with SIGSEGV before any thread runs; each
// started thread reserves its own stack; and the replicate build strategy keeps one sketch
// copy a thread. 1024 is above the hardware threads of the machines this runs on.
inline constexpr int kMaxThreads = 1024;

// The decimal integer `text` (optional leading '-', nothing else), or none.
inline std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// UsageError "NAME must be an integer in MIN..MAX, got 'TEXT'" unless `text` is a decimal
// integer in [min, max].
inline std::int64_t parse_count(std::string_view name, std::string_view text, std::int64_t min, std::int64_t max) {
  const std::optional<std::int64_t> value = parse_integer(text);
  if (!value || *value < min || *value > max)
    throw UsageError(std::string(name) + " must be an integer in " + std::to_string(min) + ".." + std::to_string(max) +
                     ", got '" + std::string(text) + "'");
  return *value;
}

// UsageError naming `name` (and the bound) unless 0 <= threads <= kMaxThreads.
inline void check_threads(long long threads, std::string_view name) {
  if (threads < 0) throw UsageError(std::string(name) + " must be 0 (all) or positive, got " + std::to_string(threads));
  if (threads > kMaxThreads)
    throw UsageError(std::string(name) + " must be at most " + std::to_string(kMaxThreads) + " (0 = all cores), got " +
                     std::to_string(threads));
}

// A thread count given as text: a decimal integer, then check_threads.
inline int parse_threads(std::string_view name, std::string_view text) {
  const std::optional<std::int64_t> value = parse_integer(text);
  if (!value)
    throw UsageError(std::string(name) + " must be an integer in 0.." + std::to_string(kMaxThreads) + ", got '" +
                     std::string(text) + "'");
  check_threads(*value, name);
  return static_cast<int>(*value);
}

}  // namespace privrace
