#include "privrace/io/sketch_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <climits>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <algorithm>
#include <array>
#include <mutex>
#include <numeric>

#include "privrace/core/memory.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/zeroed_pages.hpp"

namespace privrace {

void (*sketch_file_read_hook)(const std::string& path) = nullptr;

namespace {

constexpr char kMagic[8] = {'P', 'R', 'I', 'V', 'R', 'A', 'C', 'E'};

template <typename T>
void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
}

template <typename T>
T get_le(std::string_view in, std::size_t& pos) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += sizeof(T);
  return static_cast<T>(v);
}

// A whole file read into memory with pread. Read, not mapped: a mapped file that another
// process cuts short raises SIGBUS at the first access past its new end, where a read comes
// back short and is reported. The buffer's pages are populated up front (ZeroedPageAllocator:
// on the 2-core VM a page faulted in by the copy costs more than the copy) and the chunks are
// read across the OpenMP threads.
class FileBytes {
 public:
  void open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw InputError("cannot read '" + path + "': not a regular file");
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    try {
      data_.resize(size);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (sketch_file_read_hook) sketch_file_read_hook(path);
    constexpr std::size_t kChunk = std::size_t{8} << 20;
    const std::size_t chunks = (size + kChunk - 1) / kChunk;
    int failure = 0;  // errno of a failed read, or -1: the file ended before its size
#pragma omp parallel for schedule(static)
    for (std::size_t c = 0; c < chunks; ++c) {
      std::size_t at = c * kChunk;
      const std::size_t end = std::min(size, at + kChunk);
      while (at < end) {
        const ssize_t r = ::pread(fd, data_.data() + at, end - at, static_cast<off_t>(at));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
          const int err = r == 0 ? -1 : errno;
#pragma omp critical(privrace_file_read_error)
          if (failure == 0 || err == -1) failure = err;
          break;
        }
        at += static_cast<std::size_t>(r);
      }
    }
    ::close(fd);
    if (failure == -1) throw InputError(path + ": the file shrank while it was read (truncated by another process?)");
    if (failure != 0) throw InputError("cannot read '" + path + "': " + std::strerror(failure));
  }
  std::string_view view() const { return {data_.data(), data_.size()}; }

 private:
  std::vector<char, ZeroedPageAllocator<char>> data_;
};

// What a path that is not a regular file is, for the refusals of the writers.
std::string refused_target(const std::string& path, mode_t mode) {
  const char* what = S_ISLNK(mode)    ? "is a symbolic link"
                     : S_ISFIFO(mode) ? "is a FIFO"
                     : S_ISCHR(mode)  ? "is a character device"
                     : S_ISBLK(mode)  ? "is a block device"
                     : S_ISSOCK(mode) ? "is a socket"
                     : S_ISDIR(mode)  ? "is a directory"
                                      : "is not a regular file";
  return "'" + path + "' " + what + ": only a regular file or a new path is written (- writes to standard output)";
}

// The process's umask, read without changing it (umask(2) sets it for every thread): the
// kernel reports it in /proc/self/status; where it does not, it is set and restored under a lock.
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8) & 0777);
  static std::mutex lock;
  const std::lock_guard<std::mutex> held(lock);
  const mode_t old = ::umask(077);
  ::umask(old);
  return old;
}

constexpr std::size_t kBlockCounts = kSketchBlockCounts;
constexpr std::size_t kCrcChunk = std::size_t{8} << 20;

// CRC-32 of a long buffer in parallel: chunk CRCs joined with crc32_combine.
std::uint32_t parallel_crc32(std::uint32_t crc, std::string_view bytes) {
  const std::size_t chunks = (bytes.size() + kCrcChunk - 1) / kCrcChunk;
  std::vector<uLong> part(chunks);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::size_t len = std::min(kCrcChunk, bytes.size() - i * kCrcChunk);
    part[i] = crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data() + i * kCrcChunk), len);
  }
  uLong out = crc;
  for (std::size_t i = 0; i < chunks; ++i)
    out = crc32_combine(out, part[i], static_cast<z_off_t>(std::min(kCrcChunk, bytes.size() - i * kCrcChunk)));
  return static_cast<std::uint32_t>(out);
}

std::uint64_t zigzag(std::int64_t c) { return (static_cast<std::uint64_t>(c) << 1) ^ static_cast<std::uint64_t>(c >> 63); }
std::int64_t unzigzag(std::uint64_t z) { return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1)); }

// A block's encoded bytes in their own mapping, asked for with transparent huge pages: a
// block's output (a few MB) then faults in as one or two 2 MiB pages instead of hundreds of
// 4 KiB ones (on the 2-core VM the page faults of the former std::string outputs and their
// growth copies took more time than zstd).
class MappedBytes {
 public:
  explicit MappedBytes(std::size_t capacity) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    const std::size_t span = (capacity + kHuge - 1) / kHuge * kHuge;
    void* p = ::mmap(nullptr, span + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw ResourceError("cannot map " + std::to_string(span) + " bytes for the encoded counts");
    // Keep the 2 MiB-aligned part only, so that every page of it can be a huge one.
    auto* base = static_cast<char*>(p);
    const std::size_t head = (kHuge - reinterpret_cast<std::uintptr_t>(base) % kHuge) % kHuge;
    if (head > 0) ::munmap(base, head);
    if (kHuge - head > 0) ::munmap(base + head + span, kHuge - head);
    data_ = base + head;
    span_ = span;
    ::madvise(data_, span_, MADV_HUGEPAGE);  // advice only: 4 KiB pages where refused
  }
  ~MappedBytes() { ::munmap(data_, span_); }
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  char* data() { return data_; }

 private:
  char* data_ = nullptr;
  std::size_t span_ = 0;
};

struct EncodedBlock {
  std::uint8_t planes = 0;
  std::shared_ptr<const void> owner;  // holds `bytes`
  std::string_view bytes;             // one or more zstd frames of the planes
};

// zstd contexts, one per thread and reused across blocks: a fresh context per block is a
// megabyte of newly mapped, page-faulted memory each time.
struct ZstdContexts {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> c{nullptr, &ZSTD_freeCCtx};
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> d{nullptr, &ZSTD_freeDCtx};
  ZSTD_CCtx* compressor() {
    if (!c) c.reset(ZSTD_createCCtx());
    if (!c) throw ResourceError("cannot allocate a zstd compression context");
    return c.get();
  }
  ZSTD_DCtx* decompressor() {
    if (!d) d.reset(ZSTD_createDCtx());
    if (!d) throw ResourceError("cannot allocate a zstd decompression context");
    return d.get();
  }
};

// `planes` is the thread's scratch buffer, reused from block to block; zstd writes the frame
// straight into the block's own mapping (only the frame's size is touched, not zstd's
// worst-case bound; no copy out of a scratch buffer, no growth of a string).
EncodedBlock encode_block(std::span<const std::int64_t> counts, std::string& planes, ZstdContexts& zstd) {
  const std::size_t n = counts.size();
  std::uint64_t top = 0;
  for (const std::int64_t c : counts) top |= zigzag(c);
  EncodedBlock out;
  while (out.planes < 8 && (top >> (8 * out.planes)) != 0) ++out.planes;
  planes.resize(n * out.planes);
  auto* dst = reinterpret_cast<unsigned char*>(planes.data());
  switch (out.planes) {  // one pass over the counts for the usual plane counts
    case 0:
      break;
    case 1:
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<unsigned char>(zigzag(counts[i]));
      break;
    case 2:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t z = zigzag(counts[i]);
        dst[i] = static_cast<unsigned char>(z);
        dst[n + i] = static_cast<unsigned char>(z >> 8);
      }
      break;
    case 3:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t z = zigzag(counts[i]);
        dst[i] = static_cast<unsigned char>(z);
        dst[n + i] = static_cast<unsigned char>(z >> 8);
        dst[2 * n + i] = static_cast<unsigned char>(z >> 16);
      }
      break;
    default:
      for (unsigned p = 0; p < out.planes; ++p)
        for (std::size_t i = 0; i < n; ++i) dst[p * n + i] = static_cast<unsigned char>(zigzag(counts[i]) >> (8 * p));
  }
  const std::size_t capacity = ZSTD_compressBound(planes.size());
  auto mapped = std::make_shared<MappedBytes>(capacity);
  const std::size_t got = ZSTD_compressCCtx(zstd.compressor(), mapped->data(), capacity, planes.data(), planes.size(), 1);
  if (ZSTD_isError(got)) throw Error(std::string("zstd compression of the counts failed: ") + ZSTD_getErrorName(got));
  out.bytes = std::string_view(mapped->data(), got);
  out.owner = std::move(mapped);
  return out;
}

// Version 1 payload: deflated zigzag varints of successive differences, uncompressed size last.
void decode_counts_v1(const std::string& path, std::string_view payload, std::span<std::int64_t> counts) {
  if (payload.size() < 8) throw InputError(path + ": counts payload is truncated");
  std::size_t pos = payload.size() - 8;
  std::uint64_t raw_size = 0;
  for (int i = 0; i < 8; ++i) raw_size |= static_cast<std::uint64_t>(static_cast<unsigned char>(payload[pos + i])) << (8 * i);
  if (raw_size > counts.size() * 10 + 16) throw InputError(path + ": counts payload declares an impossible size");
  std::string raw(raw_size, '\0');
  uLongf out_len = static_cast<uLongf>(raw_size);
  if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &out_len, reinterpret_cast<const Bytef*>(payload.data()),
                 static_cast<uLong>(payload.size() - 8)) != Z_OK ||
      out_len != raw_size)
    throw InputError(path + ": counts payload is corrupt (zlib)");
  std::int64_t prev = 0;
  std::size_t i = 0, k = 0;
  while (i < raw.size()) {
    std::uint64_t z = 0;
    int shift = 0;
    for (;;) {
      if (i >= raw.size() || shift > 63) throw InputError(path + ": counts payload is corrupt (varint)");
      const auto byte = static_cast<unsigned char>(raw[i++]);
      z |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) break;
      shift += 7;
    }
    prev = static_cast<std::int64_t>(static_cast<std::uint64_t>(prev) + static_cast<std::uint64_t>(unzigzag(z)));
    if (k == counts.size()) throw InputError(path + ": holds more counters than the header's rows x width");
    counts[k++] = prev;
  }
  if (k != counts.size())
    throw InputError(path + ": holds " + std::to_string(k) + " counters, the header says rows x width = " +
                     std::to_string(counts.size()));
}

// A hostile header may claim any size: everything it declares is checked against the file and
// the machine before anything is allocated for it (the counts, or the LSH family the header
// rebuilds), and each refusal names the field.
void check_declared_size(const std::string& path, const nlohmann::json& header, std::uint64_t rows,
                         std::uint64_t width, std::uint32_t version, std::string_view payload) {
  const unsigned __int128 cells = static_cast<unsigned __int128>(rows) * width;
  if (!fits_in_memory(static_cast<double>(cells) * 8.0))  // the bound every memory check uses
    throw InputError(path + ": header fields 'rows' x 'width' = " + std::to_string(rows) + " x " + std::to_string(width) +
                     " counters need " + std::to_string(static_cast<double>(cells) * 8.0 / 1048576.0) +
                     " MiB, more than 80% of this machine's memory");
  if (version == 1) {
    // A varint count takes at least one byte, and deflate expands at most 1032-fold.
    if (static_cast<double>(cells) > 1100.0 * static_cast<double>(payload.size()) + 64.0)
      throw InputError(path + ": header fields 'rows' x 'width' = " + std::to_string(static_cast<std::uint64_t>(cells)) +
                       " counters cannot fit in a payload of " + std::to_string(payload.size()) + " bytes");
  } else {
    // The payload's own declarations must agree before the counters are allocated.
    if (payload.size() < 16) throw InputError(path + ": counts payload is corrupt: truncated block table");
    std::uint64_t total = 0, blocks = 0;
    for (int i = 0; i < 8; ++i) total |= static_cast<std::uint64_t>(static_cast<unsigned char>(payload[i])) << (8 * i);
    for (int i = 0; i < 8; ++i) blocks |= static_cast<std::uint64_t>(static_cast<unsigned char>(payload[8 + i])) << (8 * i);
    if (total != cells)
      throw InputError(path + ": holds " + std::to_string(total) + " counters (payload field 'counts'), the header says rows x width = " +
                       std::to_string(static_cast<std::uint64_t>(cells)));
    if (blocks != (total + kBlockCounts - 1) / kBlockCounts)
      throw InputError(path + ": payload field 'blocks' = " + std::to_string(blocks) + ", expected " +
                       std::to_string((total + kBlockCounts - 1) / kBlockCounts) + " for " + std::to_string(total) + " counters");
    if (blocks > (payload.size() - 16) / 9)
      throw InputError(path + ": payload field 'blocks' = " + std::to_string(blocks) + " block table entries do not fit in " +
                       std::to_string(payload.size()) + " bytes");
  }
  // The LSH family the header describes is rebuilt from these fields: its random projections
  // take rows x dim x power (or features x dim) numbers.
  if (header.contains("family") && header.at("family").is_object()) {
    const auto& f = header.at("family");
    double product = 1.0;
    for (const char* field : {"rows", "dim", "power", "features", "bins"}) {
      if (!f.contains(field)) continue;
      const auto& v = f.at(field);
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() > (std::uint64_t{1} << 32))
        throw InputError(path + ": header field 'family." + field + "' is not an integer in [0, 2^32]: " + v.dump());
      product *= std::max<double>(1.0, static_cast<double>(v.get<std::uint64_t>()));
    }
    if (f.contains("rows") && f.at("rows").get<std::uint64_t>() != rows)
      throw InputError(path + ": header field 'family.rows' = " + f.at("rows").dump() + " differs from 'rows' = " +
                       std::to_string(rows));
    if (!fits_in_memory(product * 8.0))
      throw InputError(path + ": header fields 'family.rows' x 'family.dim' x 'family.power' (x 'features', 'bins') = " +
                       std::to_string(product) + " hash parameters would not fit in memory");
  }
}

void decode_counts_v2(const std::string& path, std::string_view payload, std::span<std::int64_t> counts) {
  const std::string bad = path + ": counts payload is corrupt: ";
  std::size_t pos = 0;
  auto u64 = [&]() {
    if (payload.size() - pos < 8) throw InputError(bad + "truncated block table");
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(payload[pos + i])) << (8 * i);
    pos += 8;
    return v;
  };
  const std::uint64_t total = u64(), blocks = u64();
  if (total != counts.size())
    throw InputError(path + ": holds " + std::to_string(total) + " counters, the header says rows x width = " +
                     std::to_string(counts.size()));
  if (blocks != (total + kBlockCounts - 1) / kBlockCounts) throw InputError(bad + "wrong number of blocks");
  std::vector<std::uint8_t> planes(blocks);
  std::vector<std::size_t> offset(blocks + 1);
  for (std::size_t b = 0; b < blocks; ++b) {
    if (pos >= payload.size()) throw InputError(bad + "truncated block table");
    planes[b] = static_cast<std::uint8_t>(payload[pos++]);
    if (planes[b] > 8) throw InputError(bad + "block " + std::to_string(b) + " declares more than 8 byte planes");
    const std::uint64_t len = u64();
    if (len > payload.size()) throw InputError(bad + "block " + std::to_string(b) + " is longer than the file");
    offset[b + 1] = offset[b] + len;
  }
  if (offset[blocks] != payload.size() - pos) throw InputError(bad + "block lengths do not add up to the payload");
  // The blocks as the shares' encoder gives them (the file's CRC covers them: none per block).
  EncodedCountBlocks view;
  view.counts = total;
  view.planes = std::move(planes);
  for (std::size_t b = 0; b < blocks; ++b) view.frames.emplace_back(payload.data() + pos + offset[b], offset[b + 1] - offset[b]);
  decode_count_blocks(view, counts, path);
}

// Removes the temporaries of a target ("." + name + ".tmp" + mkstemp's 6 characters) left by
// writers that died before their rename (kill -9, a crash). A writer holds an exclusive flock
// on its temporary from creation to rename, so a temporary that can be locked has no writer.
// Best effort: what cannot be opened, locked or stat'ed is left alone.
void remove_stale_temporaries(const std::filesystem::path& dir, const std::string& prefix) {
  std::error_code ec;
  std::vector<std::filesystem::path> stale;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0) stale.push_back(it->path());
  }
  for (const auto& p : stale) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat by_fd {}, by_name {};
    // The name must still be the file that was locked (not already replaced or removed).
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &by_fd) == 0 && S_ISREG(by_fd.st_mode) &&
        ::lstat(p.c_str(), &by_name) == 0 && by_fd.st_dev == by_name.st_dev && by_fd.st_ino == by_name.st_ino)
      ::unlink(p.c_str());
    ::close(fd);
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string_view piece(bytes);
  write_file_atomically(path, std::span<const std::string_view>(&piece, 1));
}

namespace {

// A file written in place of `path` atomically: a locked temporary beside it, written at
// offsets (pwritev), then fsync, chmod and rename (commit). Destroyed uncommitted, the
// temporary is removed. Only a regular file is replaced (a rename onto a FIFO, a link or a
// device would replace the node itself), and its permission bits are kept; a new file gets
// 0666 & ~umask, `owner_only` 0600.
class AtomicFile {
 public:
  AtomicFile(const std::string& path, bool owner_only) : path_(path) {
    if (struct stat existing {}; ::lstat(path.c_str(), &existing) == 0) {
      if (!S_ISREG(existing.st_mode)) throw Error(refused_target(path, existing.st_mode));
      mode_ = existing.st_mode & 0777;
    } else {
      mode_ = 0666 & ~current_umask();
    }
    if (owner_only) mode_ = 0600;
    const std::filesystem::path target(path);
    dir_ = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    prefix_ = "." + target.filename().string() + ".tmp";
    for (int attempt = 0; fd_ < 0; ++attempt) {
      tmpl_ = (dir_ / (prefix_ + "XXXXXX")).string();
      fd_ = mkostemp(tmpl_.data(), O_CLOEXEC);
      if (fd_ < 0) throw Error("cannot create a file in '" + dir_.string() + "': " + std::strerror(errno));
      // Locked until the rename, so that another writer's clean-up never takes it for a stale
      // temporary; one removed between mkostemp and flock (no links left) is made again.
      struct stat st {};
      if (::flock(fd_, LOCK_EX) == 0 && ::fstat(fd_, &st) == 0 && st.st_nlink == 0 && attempt < 8) {
        ::close(fd_);
        fd_ = -1;
      }
    }
  }
  ~AtomicFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmpl_.c_str());
    }
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Gathering pwritevs straight from the pieces (no concatenated copy) at `offset`, about
  // kSyncChunk bytes a call (up to IOV_MAX pieces). Once kSyncChunk bytes past the last start
  // are written, the device's writeback of them is started (sync_file_range, asynchronous),
  // so that the disk writes while the rest is copied into the page cache and commit's fsync
  // waits for the last chunk only (a 362 MB sketch was written back inside the fsync before).
  void write_at(off_t offset, std::span<const std::string_view> pieces) {
    constexpr std::size_t kSyncChunk = std::size_t{32} << 20;
    std::vector<iovec> iov;
    iov.reserve(pieces.size());
    for (const std::string_view p : pieces)
      if (!p.empty()) iov.push_back({const_cast<char*>(p.data()), p.size()});
    std::size_t first = 0;
    while (first < iov.size()) {
      int n = 0;
      for (std::size_t bytes = 0; first + n < iov.size() && n < IOV_MAX && bytes < kSyncChunk; ++n)
        bytes += iov[first + static_cast<std::size_t>(n)].iov_len;
      const ssize_t w = ::pwritev(fd_, iov.data() + first, n, offset);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      if (w == 0) {
        errno = EIO;
        fail("write");
      }
      offset += w;
      // Skip what was written; a short write leaves the rest of a piece for the next call.
      auto left = static_cast<std::size_t>(w);
      while (left > 0 && left >= iov[first].iov_len) left -= iov[first++].iov_len;
      if (left > 0) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
#ifdef __linux__
      if (offset - started_ >= static_cast<off_t>(kSyncChunk)) {
        ::sync_file_range(fd_, started_, offset - started_, SYNC_FILE_RANGE_WRITE);  // advice: fsync reports errors
        started_ = offset;
      }
#endif
    }
  }

  // fsync, chmod, rename; returns fsync's seconds.
  double commit() {
    const double t_sync = now_seconds();
    if (::fsync(fd_) != 0) fail("fsync");
    const double sync_seconds = now_seconds() - t_sync;
    if (::fchmod(fd_, mode_) != 0) fail("chmod");
    if (std::rename(tmpl_.c_str(), path_.c_str()) != 0) fail("rename");
    // Closed (and unlocked) only after the rename; the bytes are already durable (fsync above).
    ::close(fd_);
    fd_ = -1;
    remove_stale_temporaries(dir_, prefix_);
    return sync_seconds;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    const int err = errno;
    throw Error("cannot write '" + path_ + "': " + what + ": " + std::strerror(err));
  }
  std::string path_, tmpl_, prefix_;
  std::filesystem::path dir_;
  mode_t mode_ = 0;
  int fd_ = -1;
  off_t started_ = 0;  // writeback started for the file's bytes before this offset (writes in order)
};

}  // namespace

void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces, double* sync_seconds,
                           bool owner_only) {
  if (path == "-") {
    for (const std::string_view p : pieces)
      if (std::fwrite(p.data(), 1, p.size(), stdout) != p.size()) throw Error("cannot write to standard output");
    if (std::fflush(stdout) != 0) throw Error("cannot write to standard output");
    return;
  }
  AtomicFile file(path, owner_only);
  file.write_at(0, pieces);
  const double synced = file.commit();
  if (sync_seconds) *sync_seconds = synced;
}

std::uint64_t EncodedCountBlocks::frame_bytes() const {
  std::uint64_t n = 0;
  for (const auto f : frames) n += f.size();
  return n;
}

void EncodedCountBlocks::append(EncodedCountBlocks&& next) {
  if (next.frames.empty()) return;
  if (counts % kBlockCounts != 0) throw Error("encoded count blocks: a part that ends inside a block cannot be followed by another");
  counts += next.counts;
  total += next.total;
  planes.insert(planes.end(), next.planes.begin(), next.planes.end());
  crcs.insert(crcs.end(), next.crcs.begin(), next.crcs.end());
  frames.insert(frames.end(), next.frames.begin(), next.frames.end());
  storage.insert(storage.end(), std::make_move_iterator(next.storage.begin()), std::make_move_iterator(next.storage.end()));
}

EncodedCountBlocks EncodedCountBlocks::adopt(std::string bytes, std::uint64_t counts, std::int64_t total, std::vector<std::uint8_t> planes,
                                             std::vector<std::uint64_t> sizes, std::vector<std::uint32_t> crcs,
                                             const std::string& from) {
  const std::string bad = from + ": encoded counts are damaged: ";
  const std::size_t blocks = (counts + kBlockCounts - 1) / kBlockCounts;
  if (planes.size() != blocks || sizes.size() != blocks || crcs.size() != blocks)
    throw InputError(bad + std::to_string(counts) + " counts need " + std::to_string(blocks) + " blocks, the table has " +
                     std::to_string(sizes.size()));
  EncodedCountBlocks out;
  out.counts = counts;
  out.total = total;
  auto stored = std::make_shared<const std::string>(std::move(bytes));
  std::size_t pos = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    if (planes[b] > 8) throw InputError(bad + "block " + std::to_string(b) + " declares more than 8 byte planes");
    if (sizes[b] > stored->size() - pos) throw InputError(bad + "block " + std::to_string(b) + " runs past the bytes received");
    out.frames.emplace_back(stored->data() + pos, sizes[b]);
    pos += sizes[b];
  }
  if (pos != stored->size()) throw InputError(bad + "block sizes do not add up to the bytes received");
  std::string error;
#pragma omp parallel for schedule(dynamic)
  for (std::size_t b = 0; b < blocks; ++b)
    if (crc32_z(0L, reinterpret_cast<const Bytef*>(out.frames[b].data()), out.frames[b].size()) != crcs[b]) {
#pragma omp critical(privrace_adopt_error)
      error = "block " + std::to_string(b) + " fails its CRC-32";
    }
  if (!error.empty()) throw InputError(bad + error);
  out.planes = std::move(planes);
  out.crcs = std::move(crcs);
  out.storage.push_back(std::move(stored));
  return out;
}

namespace {

// encode_count_blocks, handing each block's frame to `sink` (when given) in block order as
// soon as it and every block before it are encoded: the thread that finishes a block takes
// the sink's turn if no other thread holds it and passes on every finished block in order;
// a block finished while another thread holds the turn waits for the next turn or for the
// end, where the rest is passed on in order. So a writer's copies into the page cache run on
// one thread while the others go on encoding.
using BlockSink = std::function<void(std::size_t block, std::string_view frame)>;

EncodedCountBlocks encode_blocks(std::span<const std::int64_t> counts, const BlockSink* sink) {
  const std::size_t blocks = (counts.size() + kBlockCounts - 1) / kBlockCounts;
  std::vector<EncodedBlock> encoded(blocks);
  std::vector<std::uint32_t> block_crc(blocks);
  std::vector<std::int64_t> block_total(blocks, 0);
  std::vector<char> done(blocks, 0);
  std::size_t next = 0;  // the next block for the sink
  std::mutex state, turn;
  std::exception_ptr failure;
  auto pass_on_finished = [&] {  // with `turn` held
    for (;;) {
      std::size_t k = 0;
      {
        const std::lock_guard<std::mutex> lock(state);
        if (next >= blocks || !done[next] || failure) return;
        k = next++;
      }
      (*sink)(k, encoded[k].bytes);
    }
  };
#pragma omp parallel
  {
    std::string planes;
    ZstdContexts zstd;
#pragma omp for schedule(dynamic)
    for (std::size_t b = 0; b < blocks; ++b) {
      try {  // an exception may not leave an OpenMP region: it is rethrown after it
        const auto block = counts.subspan(b * kBlockCounts, std::min(kBlockCounts, counts.size() - b * kBlockCounts));
        encoded[b] = encode_block(block, planes, zstd);
        block_total[b] = std::accumulate(block.begin(), block.end(), std::int64_t{0});
        block_crc[b] = static_cast<std::uint32_t>(
            crc32_z(0L, reinterpret_cast<const Bytef*>(encoded[b].bytes.data()), encoded[b].bytes.size()));
        if (sink) {
          {
            const std::lock_guard<std::mutex> lock(state);
            done[b] = 1;
          }
          if (turn.try_lock()) {
            const std::lock_guard<std::mutex> held(turn, std::adopt_lock);
            pass_on_finished();
          }
        }
      } catch (...) {
        const std::lock_guard<std::mutex> lock(state);
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (sink) {
    const std::lock_guard<std::mutex> held(turn);
    pass_on_finished();  // every block is done: the rest, in order
  }
  EncodedCountBlocks out;
  out.counts = counts.size();
  out.total = std::accumulate(block_total.begin(), block_total.end(), std::int64_t{0});  // block order: fixed
  out.crcs = std::move(block_crc);
  for (auto& e : encoded) {
    out.planes.push_back(e.planes);
    out.frames.emplace_back(e.bytes);
    out.storage.push_back(std::move(e.owner));
  }
  return out;
}

}  // namespace

EncodedCountBlocks encode_count_blocks(std::span<const std::int64_t> counts) { return encode_blocks(counts, nullptr); }

void decode_count_blocks(const EncodedCountBlocks& blocks, std::span<std::int64_t> counts, const std::string& from,
                         std::size_t held_begin, std::size_t held_end) {
  if (counts.size() != blocks.counts) throw Error("decode_count_blocks: the span does not hold the blocks' counts");
  std::string error;
#pragma omp parallel
  {
    std::string buffer;
    ZstdContexts zstd;
#pragma omp for schedule(dynamic)
    for (std::size_t b = 0; b < blocks.frames.size(); ++b) {
      if (b >= held_begin && b < held_end) continue;
      const std::size_t first = b * kBlockCounts, n = std::min<std::size_t>(kBlockCounts, counts.size() - first);
      const unsigned k = blocks.planes[b];
      buffer.resize(n * k);
      const std::size_t got = ZSTD_decompressDCtx(zstd.decompressor(), buffer.data(), buffer.size(), blocks.frames[b].data(),
                                                  blocks.frames[b].size());
      if (ZSTD_isError(got) || got != buffer.size()) {
#pragma omp critical(privrace_decode_error)
        error = "block " + std::to_string(b) + (ZSTD_isError(got) ? std::string(" (zstd: ") + ZSTD_getErrorName(got) + ")" : " has the wrong length");
        continue;
      }
      const auto* bytes = reinterpret_cast<const unsigned char*>(buffer.data());
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t z = 0;
        for (unsigned p = 0; p < k; ++p) z |= static_cast<std::uint64_t>(bytes[p * n + i]) << (8 * p);
        counts[first + i] = unzigzag(z);
      }
    }
  }
  if (!error.empty()) throw InputError(from + ": encoded counts are damaged: " + error);
}

namespace {

// The container's bytes before the blocks (magic, version, header, payload length, block
// table) and after them (the CRC-32 of every byte before it).
struct HeadAndTail {
  std::string head, tail;
  std::uint64_t file_bytes = 0;
};

std::size_t head_size(const std::string& header_text, std::size_t blocks) {
  return sizeof(kMagic) + 4 + 8 + header_text.size() + 8 + 16 + 9 * blocks;
}

HeadAndTail head_and_tail(const std::string& header_text, const EncodedCountBlocks& blocks) {
  const std::size_t n = blocks.frames.size();
  if (n != (blocks.counts + kBlockCounts - 1) / kBlockCounts || blocks.planes.size() != n || blocks.crcs.size() != n)
    throw Error("write_sketch_file: the encoded blocks do not hold their counts");
  std::string table;
  put_le<std::uint64_t>(table, blocks.counts);
  put_le<std::uint64_t>(table, n);
  std::uint64_t payload_len = 16 + 9 * n;
  for (std::size_t b = 0; b < n; ++b) {
    table.push_back(static_cast<char>(blocks.planes[b]));
    put_le<std::uint64_t>(table, blocks.frames[b].size());
    payload_len += blocks.frames[b].size();
  }
  HeadAndTail out;
  out.head.assign(kMagic, sizeof(kMagic));
  put_le<std::uint32_t>(out.head, kSketchFileVersion);
  put_le<std::uint64_t>(out.head, header_text.size());
  out.head += header_text;
  put_le<std::uint64_t>(out.head, payload_len);
  out.head += table;
  uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(out.head.data()), out.head.size());
  for (std::size_t b = 0; b < n; ++b) crc = crc32_combine(crc, blocks.crcs[b], static_cast<z_off_t>(blocks.frames[b].size()));
  put_le<std::uint32_t>(out.tail, static_cast<std::uint32_t>(crc));
  out.file_bytes = sizeof(kMagic) + 4 + 8 + header_text.size() + 8 + payload_len + 4;
  return out;
}

}  // namespace

void write_sketch_file(const std::string& path, const nlohmann::json& header, std::span<const std::int64_t> counts,
                       SketchWriteTimings* timings, bool exact_counts) {
  if (struct stat st {}; path != "-" && ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(refused_target(path, st.st_mode));  // before the encoding (the writer checks again)
  if (path == "-") {
    const double t_encode = now_seconds();
    const EncodedCountBlocks blocks = encode_count_blocks(counts);
    const double encode_seconds = now_seconds() - t_encode;
    write_sketch_file(path, header, blocks, timings, exact_counts);
    if (timings) timings->encode_seconds = encode_seconds;
    return;
  }
  // The blocks are written as they are encoded: the head's size is known before (the block
  // table has a fixed size a block), so block k goes at the head's size plus the sizes of the
  // blocks before it; the head (with the sizes) and the CRC follow once every block is done.
  // The same bytes as encoding everything first.
  const std::string header_text = header.dump();
  const std::size_t n = (counts.size() + kBlockCounts - 1) / kBlockCounts;
  AtomicFile file(path, exact_counts);
  off_t offset = static_cast<off_t>(head_size(header_text, n));
  const BlockSink sink = [&](std::size_t, std::string_view frame) {
    file.write_at(offset, std::span<const std::string_view>(&frame, 1));
    offset += static_cast<off_t>(frame.size());
  };
  const double t_encode = now_seconds();
  const EncodedCountBlocks blocks = encode_blocks(counts, &sink);
  const double encode_seconds = now_seconds() - t_encode;
  const double t_write = now_seconds();
  const HeadAndTail bytes = head_and_tail(header_text, blocks);
  if (bytes.head.size() != head_size(header_text, n)) throw Error("write_sketch_file: unexpected head size");
  file.write_at(0, std::span<const std::string_view>(std::array<std::string_view, 1>{bytes.head}));
  file.write_at(offset, std::span<const std::string_view>(std::array<std::string_view, 1>{bytes.tail}));
  const double sync_seconds = file.commit();
  if (timings) {
    timings->encode_seconds = encode_seconds;
    timings->write_seconds = now_seconds() - t_write - sync_seconds;
    timings->sync_seconds = sync_seconds;
    timings->bytes = bytes.file_bytes;
  }
}

void write_sketch_file(const std::string& path, const nlohmann::json& header, const EncodedCountBlocks& blocks,
                       SketchWriteTimings* timings, bool exact_counts) {
  const std::string header_text = header.dump();
  const HeadAndTail bytes = head_and_tail(header_text, blocks);
  std::vector<std::string_view> pieces;
  pieces.reserve(blocks.frames.size() + 2);
  pieces.emplace_back(bytes.head);
  for (const auto f : blocks.frames) pieces.emplace_back(f);
  pieces.emplace_back(bytes.tail);
  const double t_write = now_seconds();
  double sync_seconds = 0.0;
  write_file_atomically(path, pieces, &sync_seconds, exact_counts);
  if (timings) {
    timings->encode_seconds = 0.0;
    timings->write_seconds = now_seconds() - t_write - sync_seconds;
    timings->sync_seconds = sync_seconds;
    timings->bytes = bytes.file_bytes;
  }
}

void read_sketch_file(const std::string& path,
                      const std::function<std::span<std::int64_t>(const nlohmann::json& header)>& allocate) {
  // A file is read into memory with pread (a mapping would die of SIGBUS when another process
  // truncates the file under it), standard input with the stream.
  std::string stdin_bytes;
  FileBytes file;
  std::string_view bytes;
  if (path == "-") {
    stdin_bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    bytes = stdin_bytes;
  } else {
    file.open(path);
    bytes = file.view();
  }
  const std::size_t min_size = sizeof(kMagic) + 4 + 8 + 8 + 4;
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw InputError(path + ": not a privrace sketch file (bad magic)");
  if (bytes.size() < min_size) throw InputError(path + ": truncated (" + std::to_string(bytes.size()) + " bytes)");
  std::size_t pos = sizeof(kMagic);
  const auto version = get_le<std::uint32_t>(bytes, pos);
  if (version != 1 && version != kSketchFileVersion)
    throw InputError(path + ": format version " + std::to_string(version) + ", this build reads versions 1 and " +
                     std::to_string(kSketchFileVersion));
  const auto header_len = get_le<std::uint64_t>(bytes, pos);
  if (header_len > bytes.size() - pos) throw InputError(path + ": truncated inside the header");
  const std::string_view header_text(bytes.data() + pos, header_len);
  pos += header_len;
  if (bytes.size() - pos < 12) throw InputError(path + ": truncated after the header");
  const auto payload_len = get_le<std::uint64_t>(bytes, pos);
  if (payload_len > bytes.size() - pos || bytes.size() - pos - payload_len != 4)
    throw InputError(path + ": truncated or trailing bytes (payload length does not match the file size)");
  const std::string_view payload(bytes.data() + pos, payload_len);
  pos += payload_len;
  const std::size_t body = pos;
  const auto stored_crc = get_le<std::uint32_t>(bytes, pos);
  if (parallel_crc32(0, bytes.substr(0, body)) != stored_crc)
    throw InputError(path + ": checksum mismatch: the file is corrupted");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": header is not valid JSON: " + e.what());
  }
  for (const char* field : {"rows", "width"})
    if (!header.contains(field) || !header.at(field).is_number_unsigned())
      throw InputError(path + ": header field '" + field + "' is missing or not a positive integer");
  const auto rows = header.at("rows").get<std::uint64_t>(), width = header.at("width").get<std::uint64_t>();
  if (rows == 0 || width == 0 || rows > (1ULL << 32) || width > (1ULL << 32))
    throw InputError(path + ": header field 'rows' or 'width' out of range");
  check_declared_size(path, header, rows, width, version, payload);
  const std::span<std::int64_t> counts = allocate(header);
  if (counts.size() != rows * width) throw Error("read_sketch_file: the allocated span does not hold rows x width counts");
  if (version == 1) decode_counts_v1(path, payload, counts);
  else decode_counts_v2(path, payload, counts);
}

void check_output_target(const std::string& output, const std::vector<std::string>& inputs) {
  if (output == "-") return;
  struct stat out {};
  if (::stat(output.c_str(), &out) == 0)
    for (const std::string& input : inputs) {
      struct stat in {};
      if (input != "-" && ::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
        throw UsageError("the output '" + output + "' is the same file as the input '" + input +
                         "': writing it would replace the input; choose another output path");
    }
  if (::lstat(output.c_str(), &out) == 0 && !S_ISREG(out.st_mode)) throw UsageError(refused_target(output, out.st_mode));
}

SketchFileContents read_sketch_file(const std::string& path) {
  SketchFileContents out;
  read_sketch_file(path, [&](const nlohmann::json& header) {
    out.header = header;
    out.counts.assign(header.at("rows").get<std::size_t>() * header.at("width").get<std::size_t>(), 0);
    return std::span<std::int64_t>(out.counts);
  });
  return out;
}

}  // namespace privrace
