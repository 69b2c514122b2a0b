#pragma once
// The sketch container format, independent of what the sketch means:
//   "PRIVRACE" | u32 version | u64 header length | header JSON (UTF-8)
//   | u64 payload length | payload | u32 CRC-32 of every byte before it
// (integers little-endian). The payload is the R x W counts, row-major, each the zigzag
// varint of its difference from the previous count, deflated with zlib: noisy counts
// around small values compress several-fold.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace privrace {

inline constexpr std::uint32_t kSketchFileVersion = 1;

struct SketchFileContents {
  nlohmann::json header;  // must hold "rows" and "width"
  std::vector<std::int64_t> counts;
};

// Writes atomically: a temporary file beside `path`, fsync, rename. On any error the
// temporary is removed and nothing is left at `path`. "-" writes to stdout.
void write_sketch_file(const std::string& path, const SketchFileContents& contents);
// Throws InputError naming the file and what is wrong (truncated, bad magic, version,
// checksum, header field, count of counters).
SketchFileContents read_sketch_file(const std::string& path);

// Atomic write of arbitrary bytes (shared by every writer of results).
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace privrace
