#pragma once
// The sketch container format, independent of what the sketch means:
//   "PRIVRACE" | u32 version | u64 header length | header JSON (UTF-8)
//   | u64 payload length | payload | u32 CRC-32 of every byte before it
// (integers little-endian). The payload (version 2) holds the R x W counts, row-major, in
// blocks of 2^20 that are encoded and decoded in parallel:
//   u64 counts | u64 block count B | B x (u8 byte planes k, u64 compressed length) | B blocks
// A block is its counts' zigzag codes split into k byte planes (all low bytes, then all
// second bytes, ...; k = the bytes the largest code needs), compressed with zstd level 1.
// Noisy counts have no repeats for an LZ coder to find, but each byte plane has its own skewed
// distribution, so the planes' entropy coding reaches the noise's entropy: 1.69 bytes a count
// for discrete Laplace noise of scale 2000 (entropy 1.68 bytes), against 1.9 for deflated
// varints, at several hundred MB/s a thread. Version 1 files (deflated delta varints) are read.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace privrace {

inline constexpr std::uint32_t kSketchFileVersion = 2;

struct SketchFileContents {
  nlohmann::json header;  // must hold "rows" and "width"
  std::vector<std::int64_t> counts;
};

// Writes atomically: a temporary file beside `path`, fsync, rename. On any error the
// temporary is removed and nothing is left at `path`. "-" writes to stdout. `counts` has
// rows x width entries.
struct SketchWriteTimings {
  double encode_seconds = 0.0;  // parallel zigzag + byte planes + zstd, and the CRC
  double write_seconds = 0.0;   // the gathering pwritev into the page cache (and rename)
  double sync_seconds = 0.0;    // fsync: the device's share
  std::uint64_t bytes = 0;      // the file's size
};
void write_sketch_file(const std::string& path, const nlohmann::json& header, std::span<const std::int64_t> counts,
                       SketchWriteTimings* timings = nullptr);
inline void write_sketch_file(const std::string& path, const SketchFileContents& contents) {
  write_sketch_file(path, contents.header, contents.counts);
}
// Throws InputError naming the file and what is wrong (truncated, bad magic, version,
// checksum, header field, count of counters). The counts are decoded straight into the
// rows x width span that `allocate` returns for the validated header.
void read_sketch_file(const std::string& path,
                      const std::function<std::span<std::int64_t>(const nlohmann::json& header)>& allocate);
SketchFileContents read_sketch_file(const std::string& path);

// Atomic write of arbitrary bytes (shared by every writer of results).
void write_file_atomically(const std::string& path, const std::string& bytes);
// The same for bytes given as consecutive pieces (no concatenated copy).
// fsync's share of the time goes to *sync_seconds when given.
void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces,
                           double* sync_seconds = nullptr);

}  // namespace privrace
