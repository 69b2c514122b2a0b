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
#include <memory>
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
// rows x width entries. Only a regular file is replaced: a `path` that exists as anything else
// (a symbolic link, FIFO, device, socket or folder; lstat) is refused, naming what it is. A new
// file gets mode 0666 & ~umask, a replaced one keeps its permission bits, and `exact_counts`
// (a sketch without noise) makes it 0600 in every case.
struct SketchWriteTimings {
  double encode_seconds = 0.0;  // parallel zigzag + byte planes + zstd, and the CRC
  double write_seconds = 0.0;   // the gathering pwritev into the page cache (and rename)
  double sync_seconds = 0.0;    // fsync: the device's share
  std::uint64_t bytes = 0;      // the file's size
};
void write_sketch_file(const std::string& path, const nlohmann::json& header, std::span<const std::int64_t> counts,
                       SketchWriteTimings* timings = nullptr, bool exact_counts = false);

// The payload's blocks, encoded where the counts lie: each block (kSketchBlockCounts counts,
// the array's last one shorter) is encoded on its own, so the blocks of consecutive parts of an
// array, encoded apart (by MPI ranks) and joined in order, are the bytes the whole array gives.
inline constexpr std::size_t kSketchBlockCounts = std::size_t{1} << 20;
struct EncodedCountBlocks {
  std::uint64_t counts = 0;               // counts the blocks hold
  std::int64_t total = 0;                 // their sum, taken where they were encoded (the header's n_hat)
  std::vector<std::uint8_t> planes;       // per block: its byte planes
  std::vector<std::uint32_t> crcs;        // per block: CRC-32 of its frame
  std::vector<std::string_view> frames;   // per block: its zstd frame, in `storage`
  std::vector<std::shared_ptr<const void>> storage;  // owners of the frames' bytes
  std::uint64_t frame_bytes() const;
  // Joins the next part's blocks (this part must end on a block boundary).
  void append(EncodedCountBlocks&& next);
  // Adopts blocks received as bytes: `bytes` holds the frames of `sizes` in order; the block
  // table is checked (sizes, planes <= 8, CRCs of the frames) naming `from` in the error.
  static EncodedCountBlocks adopt(std::string bytes, std::uint64_t counts, std::int64_t total, std::vector<std::uint8_t> planes,
                                  std::vector<std::uint64_t> sizes, std::vector<std::uint32_t> crcs,
                                  const std::string& from);
};
// Encodes counts that start on a block boundary of their array (OpenMP threads, one block each).
EncodedCountBlocks encode_count_blocks(std::span<const std::int64_t> counts);
// Decodes into `counts` (blocks.counts of them); InputError naming `from` when a frame is damaged.
// Blocks [held_begin, held_end) are skipped: their counts are already in `counts` (a root's own
// share of a distributed release, which it encoded itself).
void decode_count_blocks(const EncodedCountBlocks& blocks, std::span<std::int64_t> counts, const std::string& from,
                         std::size_t held_begin = 0, std::size_t held_end = 0);
// write_sketch_file of counts already encoded (all of the array's blocks, in order).
void write_sketch_file(const std::string& path, const nlohmann::json& header, const EncodedCountBlocks& blocks,
                       SketchWriteTimings* timings = nullptr, bool exact_counts = false);
inline void write_sketch_file(const std::string& path, const SketchFileContents& contents) {
  write_sketch_file(path, contents.header, contents.counts);
}
// Throws InputError naming the file and what is wrong (truncated, bad magic, version,
// checksum, header field, count of counters, a file cut short while it is read). The file is
// read into memory (pread); the counts are decoded straight into the rows x width span that
// `allocate` returns for the validated header.
void read_sketch_file(const std::string& path,
                      const std::function<std::span<std::int64_t>(const nlohmann::json& header)>& allocate);
SketchFileContents read_sketch_file(const std::string& path);
// Test hook: when set, read_sketch_file calls it with the path once the file is open and its
// size taken, before its bytes are read (a test truncates the file there).
extern void (*sketch_file_read_hook)(const std::string& path);

// Atomic write of arbitrary bytes (shared by every writer of results): the targets and modes
// of write_sketch_file, `owner_only` its `exact_counts`.
void write_file_atomically(const std::string& path, const std::string& bytes);
// The same for bytes given as consecutive pieces (no concatenated copy).
// fsync's share of the time goes to *sync_seconds when given.
void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces,
                           double* sync_seconds = nullptr, bool owner_only = false);

// A command's check of its output path before it reads anything: UsageError when `output`
// exists and is not a regular file (lstat: a symbolic link, FIFO, device, socket or folder),
// or is the same file (device and inode, so another name or a hard link) as one of `inputs`,
// naming both. "-" (standard output) passes; inputs that are "-" or do not exist are skipped.
void check_output_target(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace privrace
