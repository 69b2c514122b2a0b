// The sketch container (version 2: parallel blocks of byte planes + zstd): exact round trips
// across block boundaries and extreme values, refusal of damaged payloads, version 1 files
// still read, and the allocator's zeroed pages.
#include <gtest/gtest.h>

#include <numeric>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <limits>

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
  for (const std::size_t n : {std::size_t{10}, std::size_t{1} << 20, std::size_t{20} << 20}) {  // 80 B, 8 MiB, 160 MiB
    std::vector<std::int64_t, ZeroedPageAllocator<std::int64_t>> v(n);
    std::int64_t any = 0;
    for (std::size_t i = 0; i < n; i += 511) any |= v[i];
    EXPECT_EQ(any | v.back(), 0) << n;
    v[n / 2] = 7;  // writable
    EXPECT_EQ(v[n / 2], 7);
  }
}
