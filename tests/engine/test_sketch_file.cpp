// The sketch container (version 2: parallel blocks of byte planes + zstd): exact round trips
// across block boundaries and extreme values, refusal of damaged payloads, version 1 files
// still read, and the allocator's zeroed pages.
#include <gtest/gtest.h>

#include <numeric>
#include <zlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "privrace/core/error.hpp"
#include "privrace/core/zeroed_pages.hpp"
#include "privrace/io/sketch_file.hpp"
#include "test_util.hpp"

using namespace privrace;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}
template <typename T>
void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
}
}  // namespace

TEST(SketchFileV2, RoundTripsAcrossBlocksAndExtremes) {
  const auto dir = privrace::testing::temp_dir("file_v2");
  // 3 rows x 700,001 columns: three blocks of 2^20 counts, the last partial. Blocks of
  // different byte-plane counts: noise-like values, all zeros, and 64-bit extremes.
  const std::size_t rows = 3, width = 700001, n = rows * width;
  std::vector<std::int64_t> counts(n);
  SeededRandom rng(5);
  for (std::size_t i = 0; i < n; ++i) counts[i] = static_cast<std::int64_t>(rng.below(4001)) - 2000;
  for (std::size_t i = (1u << 20); i < (2u << 20); ++i) counts[i] = 0;
  counts[n - 1] = std::numeric_limits<std::int64_t>::min();
  counts[n - 2] = std::numeric_limits<std::int64_t>::max();
  counts[n - 3] = -1;
  const std::string path = (dir / "big.rsk").string();
  write_sketch_file(path, {{"rows", rows}, {"width", width}}, counts);
  const SketchFileContents back = read_sketch_file(path);
  EXPECT_EQ(back.header.at("width").get<std::size_t>(), width);
  ASSERT_EQ(back.counts.size(), n);
  EXPECT_TRUE(back.counts == counts);
  // Uniform values in [-2000, 2000] carry 12 bits: the planes coder should come close.
  EXPECT_LT(static_cast<double>(slurp(path).size()), 1.55 * static_cast<double>(1u << 20) + 9.0 * static_cast<double>(n - (2u << 20)) + 1000);

  // Every damage is refused: a flipped byte anywhere in the payload fails the checksum.
  const std::string bytes = slurp(path);
  for (const std::size_t at : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 10}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    spit(path, bad);
    EXPECT_THROW(read_sketch_file(path), InputError) << at;
  }
  spit(path, bytes.substr(0, bytes.size() - 1000));
  EXPECT_THROW(read_sketch_file(path), InputError);
}

TEST(SketchFileV2, NoisyAndFlatBlocksRoundTripThroughTheirMappings) {
  // Noise-like counts of scale about 4000 over two blocks: each block's frame lives in its own
  // mapping (held by the blocks' storage), written to the file and decoded in place.
  const auto dir = privrace::testing::temp_dir("file_v2_mapped");
  const std::size_t rows = 2, width = 600000, n = rows * width;
  std::vector<std::int64_t> counts(n);
  SeededRandom rng(9);
  for (std::size_t i = 0; i < n; ++i) counts[i] = static_cast<std::int64_t>(rng.below(16001)) - 8000 + (i % 7 == 0 ? 3 : 0);
  const std::string path = (dir / "mapped.rsk").string();
  write_sketch_file(path, {{"rows", rows}, {"width", width}}, counts);
  const SketchFileContents back = read_sketch_file(path);
  EXPECT_TRUE(back.counts == counts);
  // The encoded blocks decode alone too, and a constant array compresses to almost nothing.
  const EncodedCountBlocks blocks = encode_count_blocks(counts);
  std::vector<std::int64_t> decoded(n);
  decode_count_blocks(blocks, decoded, "test");
  EXPECT_TRUE(decoded == counts);
  std::vector<std::int64_t> flat(n, 300);
  const EncodedCountBlocks few = encode_count_blocks(flat);
  EXPECT_LT(few.frame_bytes(), 4096u);
  std::vector<std::int64_t> flat_back(n);
  decode_count_blocks(few, flat_back, "test");
  EXPECT_TRUE(flat_back == flat);
}

TEST(SketchFileV2, BlocksEncodedInPartsAndJoinedAreTheWholeArraysBytes) {
  const auto dir = privrace::testing::temp_dir("file_v2_parts");
  const std::size_t n = 2 * kSketchBlockCounts + 12345;  // two whole blocks and a short one
  std::vector<std::int64_t> counts(n);
  SeededRandom rng(9);
  for (auto& c : counts) c = static_cast<std::int64_t>(rng.below(100001)) - 50000;
  const nlohmann::json header = {{"rows", 1}, {"width", n}};
  const std::string whole = (dir / "whole.rsk").string(), joined = (dir / "joined.rsk").string();
  write_sketch_file(whole, header, counts);
  const std::span<const std::int64_t> all(counts);
  // Parts as ranks hold them: [0, 1 block), [1 block, end), and an empty part at the end;
  // the second travels as bytes and is adopted (its CRCs checked).
  EncodedCountBlocks blocks = encode_count_blocks(all.first(kSketchBlockCounts));
  EncodedCountBlocks second = encode_count_blocks(all.subspan(kSketchBlockCounts));
  std::string bytes;
  std::vector<std::uint64_t> sizes;
  for (const auto f : second.frames) bytes += f, sizes.push_back(f.size());
  blocks.append(EncodedCountBlocks::adopt(bytes, second.counts, second.total, second.planes, sizes, second.crcs, "rank 1"));
  blocks.append(encode_count_blocks({}));
  write_sketch_file(joined, header, blocks);
  EXPECT_EQ(slurp(joined), slurp(whole));
  std::vector<std::int64_t> decoded(n);
  decode_count_blocks(blocks, decoded, "test");
  EXPECT_TRUE(decoded == counts);
  // The sum travels with the blocks (the header's n_hat without decoding).
  EXPECT_EQ(blocks.total, std::accumulate(counts.begin(), counts.end(), std::int64_t{0}));
  // Blocks already held are not decoded: they keep what the span had.
  std::vector<std::int64_t> partly(n, 7);
  decode_count_blocks(blocks, partly, "test", 0, 1);
  EXPECT_TRUE(std::equal(partly.begin() + kSketchBlockCounts, partly.end(), counts.begin() + kSketchBlockCounts));
  EXPECT_TRUE(std::all_of(partly.begin(), partly.begin() + kSketchBlockCounts, [](std::int64_t c) { return c == 7; }));

  // Damage in transit is refused, naming the sender: a flipped byte, a wrong size.
  std::string flipped = bytes;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 1);
  const auto message = [&](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message([&] { EncodedCountBlocks::adopt(flipped, second.counts, second.total, second.planes, sizes, second.crcs, "rank 1"); })
                .find("rank 1: encoded counts are damaged: block"),
            std::string::npos);
  std::vector<std::uint64_t> wrong = sizes;
  wrong[0] += 1;
  EXPECT_NE(message([&] { EncodedCountBlocks::adopt(bytes, second.counts, second.total, second.planes, wrong, second.crcs, "rank 1"); })
                .find("rank 1: encoded counts are damaged"),
            std::string::npos);
  // A part that ends inside a block cannot be followed by another.
  EncodedCountBlocks short_part = encode_count_blocks(all.first(1000));
  EXPECT_THROW(short_part.append(encode_count_blocks(all.subspan(1000, 10))), Error);
}

TEST(SketchFileV2, RefusesABlockTableThatLies) {
  const auto dir = privrace::testing::temp_dir("file_v2_table");
  std::vector<std::int64_t> counts(1000, 3);
  const std::string path = (dir / "s.rsk").string();
  write_sketch_file(path, {{"rows", 10}, {"width", 100}}, counts);
  std::string bytes = slurp(path);
  // Rewrite the header to claim more counts, keeping the checksum valid: the payload's own
  // count must then disagree and be named.
  const std::string header = nlohmann::json({{"rows", 10}, {"width", 101}}).dump();
  const std::string old_header = nlohmann::json({{"rows", 10}, {"width", 100}}).dump();
  ASSERT_EQ(header.size(), old_header.size());
  bytes.replace(bytes.find(old_header), old_header.size(), header);
  bytes.resize(bytes.size() - 4);
  put_le<std::uint32_t>(bytes, static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size())));
  spit(path, bytes);
  try {
    read_sketch_file(path);
    FAIL() << "a payload of 1000 counts was accepted for 10 x 101";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("1000 counters"), std::string::npos) << e.what();
  }
}

TEST(SketchFileV1, OldFilesAreStillRead) {
  // Version 1: deflated zigzag varints of successive differences, raw size last.
  const std::vector<std::int64_t> counts = {5, -3, 0, 0, 130, -70000, 2};
  std::string raw;
  std::int64_t prev = 0;
  for (const auto c : counts) {
    const std::int64_t d = c - prev;
    std::uint64_t z = (static_cast<std::uint64_t>(d) << 1) ^ static_cast<std::uint64_t>(d >> 63);
    while (z >= 0x80) {
      raw.push_back(static_cast<char>((z & 0x7F) | 0x80));
      z >>= 7;
    }
    raw.push_back(static_cast<char>(z));
    prev = c;
  }
  uLongf len = compressBound(static_cast<uLong>(raw.size()));
  std::string payload(len, '\0');
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(payload.data()), &len, reinterpret_cast<const Bytef*>(raw.data()),
                      static_cast<uLong>(raw.size()), 1),
            Z_OK);
  payload.resize(len);
  put_le<std::uint64_t>(payload, raw.size());
  const std::string header = nlohmann::json({{"rows", 1}, {"width", 7}}).dump();
  std::string file = "PRIVRACE";
  put_le<std::uint32_t>(file, 1);
  put_le<std::uint64_t>(file, header.size());
  file += header;
  put_le<std::uint64_t>(file, payload.size());
  file += payload;
  put_le<std::uint32_t>(file, static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(file.data()), file.size())));
  const auto dir = privrace::testing::temp_dir("file_v1");
  const std::string path = (dir / "old.rsk").string();
  spit(path, file);
  EXPECT_EQ(read_sketch_file(path).counts, counts);
}

TEST(ZeroedPageAllocator, ReleasedBlocksComeBackZeroedAndTheCacheStaysWithinItsLimit) {
  using Table = std::vector<std::int64_t, ZeroedPageAllocator<std::int64_t>>;
  const std::size_t saved = page_cache_limit();
  set_page_cache_limit(std::size_t{64} << 20);
  const std::size_t n = std::size_t{3} << 20;  // 24 MiB
  const std::int64_t* first = nullptr;
  {
    Table t(n);
    first = t.data();
    std::fill(t.begin(), t.end(), -1);
  }
  EXPECT_EQ(page_cache_bytes(), std::size_t{24} << 20);
  {
    Table t(n);  // the same block, cleared
    EXPECT_EQ(t.data(), first);
    EXPECT_EQ(std::count(t.begin(), t.end(), 0), static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(page_cache_bytes(), 0u);
    std::fill(t.begin(), t.end(), 5);
  }
  {
    Table other(n / 2);  // another size: the kept block is unmapped first, the new one is fresh
    EXPECT_EQ(std::count(other.begin(), other.end(), 0), static_cast<std::ptrdiff_t>(n / 2));
    EXPECT_EQ(page_cache_bytes(), 0u);
  }
  {
    Table a(n), b(n), c(n);  // 72 MiB released against a 64 MiB limit: the oldest goes
  }
  EXPECT_EQ(page_cache_bytes(), std::size_t{48} << 20);
  set_page_cache_limit(0);  // off: releases what is kept, keeps nothing
  EXPECT_EQ(page_cache_bytes(), 0u);
  { Table t(n); }
  EXPECT_EQ(page_cache_bytes(), 0u);
  set_page_cache_limit(saved);
}

TEST(ZeroedPageAllocator, HandsOutZeroedMemoryAtEverySize) {
  // 80 B, 8 MiB, 160 MiB, and 320 MiB (past the size up to which huge pages are always asked for)
  for (const std::size_t n : {std::size_t{10}, std::size_t{1} << 20, std::size_t{20} << 20, std::size_t{40} << 20}) {
    std::vector<std::int64_t, ZeroedPageAllocator<std::int64_t>> v(n);
    std::int64_t any = 0;
    for (std::size_t i = 0; i < n; i += 511) any |= v[i];
    EXPECT_EQ(any | v.back(), 0) << n;
    v[n / 2] = 7;  // writable
    EXPECT_EQ(v[n / 2], 7);
  }
}

// Free huge-page blocks from /proc/buddyinfo's text: per zone, the counts of free blocks of 1, 2,
// 4, ... pages; blocks of 2 MiB (order 9 at 4 KiB pages) and larger count, smaller ones do not.
TEST(ZeroedPageAllocator, CountsFreeHugePageBlocksFromBuddyinfo) {
  std::istringstream two_zones(
      "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n"
      "Node 0, zone   Normal   5505   6115   1390   9500   4092    355   1903   1342   1084    370   1125 \n");
  const std::size_t page = 4096, huge = std::size_t{2} << 20;
  EXPECT_EQ(detail::free_block_bytes(two_zones, page, huge), (1 + 370) * huge + (3 + 1125) * 2 * huge);
  std::istringstream none("Node 0, zone   Normal   7 7 7 7 7 7 7 7 7 0 0\n");
  EXPECT_EQ(detail::free_block_bytes(none, page, huge), 0u);
  std::istringstream empty("");
  EXPECT_EQ(detail::free_block_bytes(empty, page, huge), 0u);
}

// The writer replaces only regular files: a FIFO, a symbolic link (to anything) or a folder at
// the target is refused, naming the path and what it is, and is left as it was.
TEST(SketchFileWriter, RefusesTargetsThatAreNotRegularFiles) {
  privrace::testing::TempDir dir;
  const std::vector<std::int64_t> counts = {1, 2, 3, 4};
  const nlohmann::json header = {{"rows", 2}, {"width", 2}};
  const std::string fifo = (dir.path / "out.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string real = (dir.path / "real.rsk").string(), link = (dir.path / "link.rsk").string();
  spit(real, "keep me");
  std::filesystem::create_symlink(real, link);
  const std::string dangling = (dir.path / "dangling.rsk").string();
  std::filesystem::create_symlink(dir.path / "nowhere.rsk", dangling);
  const std::string folder = (dir.path / "folder.rsk").string();
  std::filesystem::create_directory(folder);
  const auto refusal = [&](const std::string& path) {
    return privrace::testing::message_of([&] { write_sketch_file(path, header, counts); });
  };
  EXPECT_NE(refusal(fifo).find(fifo + "' is a FIFO"), std::string::npos) << refusal(fifo);
  EXPECT_NE(refusal(link).find(link + "' is a symbolic link"), std::string::npos) << refusal(link);
  EXPECT_NE(refusal(dangling).find(dangling + "' is a symbolic link"), std::string::npos) << refusal(dangling);
  EXPECT_NE(refusal(folder).find(folder + "' is a directory"), std::string::npos) << refusal(folder);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::lstat(dangling.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_FALSE(std::filesystem::exists(dir.path / "nowhere.rsk"));
  EXPECT_EQ(slurp(real), "keep me");
  // No temporary is left beside any of them.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path)) ++entries;
  EXPECT_EQ(entries, 5u);
}

namespace {
mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 07777;
  return st.st_mode & 07777;
}
// Sets the process's umask for a scope (the tests of a binary run on one thread).
struct ScopedUmask {
  mode_t old;
  explicit ScopedUmask(mode_t m) : old(::umask(m)) {}
  ~ScopedUmask() { ::umask(old); }
};
}  // namespace

// A new file gets 0666 less the umask; a replaced regular file keeps its mode.
TEST(SketchFileWriter, ModeFollowsTheUmaskAndTheReplacedFile) {
  privrace::testing::TempDir dir;
  const std::vector<std::int64_t> counts = {1, 2, 3, 4};
  const nlohmann::json header = {{"rows", 2}, {"width", 2}};
  const std::string a = (dir.path / "a.rsk").string(), b = (dir.path / "b.rsk").string(), c = (dir.path / "c.rsk").string();
  {
    ScopedUmask u(022);
    write_sketch_file(a, header, counts);
  }
  EXPECT_EQ(mode_of(a), 0644u);
  {
    ScopedUmask u(077);
    write_sketch_file(b, header, counts);
  }
  EXPECT_EQ(mode_of(b), 0600u);
  {
    ScopedUmask u(002);
    write_sketch_file(c, header, counts);
  }
  EXPECT_EQ(mode_of(c), 0664u);
  // Replacing: the former file's mode, whatever the umask.
  ASSERT_EQ(::chmod(a.c_str(), 0640), 0);
  {
    ScopedUmask u(077);
    write_sketch_file(a, header, counts);
  }
  EXPECT_EQ(mode_of(a), 0640u);
  ASSERT_EQ(::chmod(b.c_str(), 0664), 0);
  {
    ScopedUmask u(022);
    write_sketch_file(b, header, counts);
  }
  EXPECT_EQ(mode_of(b), 0664u);
  EXPECT_EQ(read_sketch_file(b).counts, counts);
}

// A file cut short between the reader's open and its reading of the bytes (another process
// truncating it) is an InputError naming the file, not a signal.
TEST(SketchFileReader, FileTruncatedWhileReadIsAnInputError) {
  privrace::testing::TempDir dir;
  const std::size_t n = 3 * kSketchBlockCounts;
  std::vector<std::int64_t> counts(n);
  SeededRandom rng(11);
  for (auto& c : counts) c = static_cast<std::int64_t>(rng.below(40001)) - 20000;
  const std::string path = (dir.path / "shrinking.rsk").string();
  write_sketch_file(path, {{"rows", 3}, {"width", kSketchBlockCounts}}, counts);
  static std::string truncated;  // the hook is a plain function pointer
  truncated = path;
  sketch_file_read_hook = [](const std::string& p) {
    if (p == truncated) std::filesystem::resize_file(p, 4096);
  };
  const std::string message = privrace::testing::message_of([&] { read_sketch_file(path); });
  sketch_file_read_hook = nullptr;
  EXPECT_NE(message.find(path + ": the file shrank while it was read"), std::string::npos) << message;
  EXPECT_THROW(read_sketch_file(path), InputError);  // and the short file itself, read afresh
}

// A sketch without noise (exact counts) is 0600 whatever the umask or the file it replaces.
TEST(SketchFileWriter, ExactCountsAreOwnerOnly) {
  privrace::testing::TempDir dir;
  const std::vector<std::int64_t> counts = {1, 2, 3, 4};
  const nlohmann::json header = {{"rows", 2}, {"width", 2}};
  const std::string a = (dir.path / "a.rsk").string();
  {
    ScopedUmask u(0);
    write_sketch_file(a, header, counts, nullptr, /*exact_counts=*/true);
    EXPECT_EQ(mode_of(a), 0600u);
    ASSERT_EQ(::chmod(a.c_str(), 0644), 0);
    write_sketch_file(a, header, encode_count_blocks(counts), nullptr, /*exact_counts=*/true);
    EXPECT_EQ(mode_of(a), 0600u);
  }
}

// The commands' check of -o: not one of the inputs (by any name), not a FIFO, link or device;
// it only looks (stat), so /dev/null itself can be asked about.
TEST(SketchFileWriter, CheckOutputTarget) {
  privrace::testing::TempDir dir;
  const std::string in = (dir.path / "in.csv").string(), hard = (dir.path / "hard.csv").string();
  spit(in, "1,2\n");
  ASSERT_EQ(::link(in.c_str(), hard.c_str()), 0);
  const std::string dotted = (dir.path / "." / "in.csv").string();
  const auto message = [](const std::string& out, const std::vector<std::string>& inputs) {
    return privrace::testing::message_of([&] { check_output_target(out, inputs); });
  };
  EXPECT_THROW(check_output_target(in, {"-", in}), UsageError);
  EXPECT_NE(message(dotted, {in}).find("the output '" + dotted + "' is the same file as the input '" + in + "'"), std::string::npos);
  EXPECT_NE(message(hard, {"-", (dir.path / "missing.csv").string(), in}).find("is the same file as the input '" + in + "'"),
            std::string::npos);
  EXPECT_NE(message("/dev/null", {}).find("'/dev/null' is a character device"), std::string::npos);
  const std::string fifo = (dir.path / "f").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(check_output_target(fifo, {in}), UsageError);
  EXPECT_NO_THROW(check_output_target("-", {in, "-"}));
  EXPECT_NO_THROW(check_output_target((dir.path / "new.rsk").string(), {in}));
  EXPECT_NO_THROW(check_output_target((dir.path / "other.csv").string(), {in}));
  spit((dir.path / "other.csv").string(), "3\n");
  EXPECT_NO_THROW(check_output_target((dir.path / "other.csv").string(), {in, hard}));
}
