// Hostile inputs: sketch files whose header claims impossible sizes, and configs whose grid
// would expand to 10^9 cells, are refused before anything is allocated for them, naming the
// field. Also the regressions found by fuzzing the readers (fuzz/).
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "experiment.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/sketch_file.hpp"
#include "data/dataset.hpp"
#include "privrace/io/edge_list.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "test_util.hpp"

namespace privrace {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

template <typename T>
void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
}

// A version-2 sketch file with any header and payload, and a correct checksum.
std::string sketch_bytes(const json& header, const std::string& payload) {
  std::string b = "PRIVRACE";
  put_le<std::uint32_t>(b, 2);
  const std::string h = header.dump();
  put_le<std::uint64_t>(b, h.size());
  b += h;
  put_le<std::uint64_t>(b, payload.size());
  b += payload;
  put_le<std::uint32_t>(b, static_cast<std::uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(b.data()), b.size())));
  return b;
}

std::string payload_table(std::uint64_t counts, std::uint64_t blocks, const std::vector<std::pair<std::uint8_t, std::uint64_t>>& entries) {
  std::string p;
  put_le<std::uint64_t>(p, counts);
  put_le<std::uint64_t>(p, blocks);
  for (const auto& [planes, len] : entries) {
    p.push_back(static_cast<char>(planes));
    put_le<std::uint64_t>(p, len);
  }
  return p;
}

json small_header(std::uint64_t rows, std::uint64_t width) {
  return {{"format", "privrace-race-sketch"},
          {"rows", rows},
          {"width", width},
          {"family", {{"kernel", "l2"}, {"rows", rows}, {"dim", 2}, {"power", 1}, {"seed", 1}, {"bandwidth", 1.0}}},
          {"privacy", {{"private", false}}}};
}

std::string refusal(const std::string& bytes) {
  const auto dir = testing::temp_dir("hostile_sketch");
  const std::string path = (dir / "h.sketch").string();
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    (void)load_sketch(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(HostileSketchFile, HugeRowsTimesWidthIsRefusedNamingTheFields) {
  // 2^32 x 2^32 overflows 64 bits; 2^20 x 2^20 is 8 TiB. Neither is allocated.
  for (const auto& [rows, width] : {std::pair<std::uint64_t, std::uint64_t>{1ULL << 32, 1ULL << 32}, {1ULL << 20, 1ULL << 20}}) {
    const std::string msg = refusal(sketch_bytes(small_header(rows, width), payload_table(16, 1, {{1, 0}})));
    EXPECT_NE(msg.find("'rows' x 'width'"), std::string::npos) << msg;
  }
}

TEST(HostileSketchFile, NegativeOrMissingWidthIsRefused) {
  json h = small_header(2, 8);
  h["width"] = -8;
  std::string msg = refusal(sketch_bytes(h, payload_table(16, 1, {{1, 0}})));
  EXPECT_NE(msg.find("'width'"), std::string::npos) << msg;
  h.erase("width");
  msg = refusal(sketch_bytes(h, payload_table(16, 1, {{1, 0}})));
  EXPECT_NE(msg.find("'width'"), std::string::npos) << msg;
}

TEST(HostileSketchFile, PayloadDeclarationsMustAgreeBeforeAllocation) {
  // The payload claims more counters than the header, or 2^40 blocks, or block lengths that
  // overflow when added.
  std::string msg = refusal(sketch_bytes(small_header(2, 8), payload_table(1ULL << 40, 1, {{1, 0}})));
  EXPECT_NE(msg.find("payload field 'counts'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds 1099511627776 counters"), std::string::npos) << msg;
  msg = refusal(sketch_bytes(small_header(2, 8), payload_table(16, 1ULL << 40, {{1, 0}})));
  EXPECT_NE(msg.find("payload field 'blocks'"), std::string::npos) << msg;
  msg = refusal(sketch_bytes(small_header(2, 8), payload_table(16, 1, {{1, ~std::uint64_t{0}}})));
  EXPECT_NE(msg.find("block 0 is longer than the file"), std::string::npos) << msg;
  msg = refusal(sketch_bytes(small_header(2, 8), payload_table(16, 1, {{9, 0}})));
  EXPECT_NE(msg.find("more than 8 byte planes"), std::string::npos) << msg;
}

TEST(HostileSketchFile, FamilyFieldsAreBoundedBeforeTheFamilyIsBuilt) {
  json h = small_header(2, 8);
  h["family"]["dim"] = 1ULL << 32;
  h["family"]["power"] = 1ULL << 20;
  std::string msg = refusal(sketch_bytes(h, payload_table(16, 1, {{1, 0}})));
  EXPECT_NE(msg.find("'family.dim'"), std::string::npos) << msg;
  h = small_header(2, 8);
  h["family"]["rows"] = 1ULL << 30;
  msg = refusal(sketch_bytes(h, payload_table(16, 1, {{1, 0}})));
  EXPECT_NE(msg.find("'family.rows'"), std::string::npos) << msg;
  h = small_header(2, 8);
  h["family"]["dim"] = -3;
  msg = refusal(sketch_bytes(h, payload_table(16, 1, {{1, 0}})));
  EXPECT_NE(msg.find("'family.dim'"), std::string::npos) << msg;
}

TEST(HostileSketchFile, PrivacyFieldsOfTheWrongTypeAreRefusedNamingTheField) {
  // Found by fuzz_sketch_file: "private": "private" escaped as a JSON type error (an abort in the
  // fuzzer, an unclear message in the CLI). Input fuzz/corpus/fuzz_sketch_file/regression-privacy-field-type.
  const std::pair<const char*, json> cases[] = {{"private", "private"}, {"epsilon", "1"}, {"count", true},
                                                {"mechanism", 3}, {"merged_from", json::object()}};
  for (const auto& [field, value] : cases) {
    json h = small_header(2, 8);
    h["privacy"][field] = value;
    const std::string msg = refusal(sketch_bytes(h, payload_table(16, 1, {{1, 0}})));
    EXPECT_NE(msg.find(std::string("header field 'privacy.") + field + "': expected"), std::string::npos) << msg;
  }
  json h = small_header(2, 8);
  h["privacy"]["merged_from"] = json::array({{{"private", 1}}});
  std::string msg = refusal(sketch_bytes(h, payload_table(16, 1, {{1, 0}})));
  EXPECT_NE(msg.find("'privacy.merged_from[0].private': expected true or false, got 1"), std::string::npos) << msg;
  // The fuzzer's own input: its first byte says "fix the CRC-32", the rest is the file.
  std::ifstream in(std::string(PRIVRACE_SOURCE_DIR) + "/fuzz/corpus/fuzz_sketch_file/regression-privacy-field-type",
                   std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 5u);
  ASSERT_EQ(bytes[0] & 1, 1);
  bytes.erase(0, 1);
  const auto crc = static_cast<std::uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
  for (int i = 0; i < 4; ++i) bytes[bytes.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  msg = refusal(bytes);
  EXPECT_NE(msg.find("header field 'privacy.private': expected true or false"), std::string::npos) << msg;
}

TEST(HostileConfig, GridOfABillionCellsIsRefusedWithTheCount) {
  const auto datasets = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  json rows = json::array(), widths = json::array();
  for (int i = 1; i <= 1000; ++i) {
    rows.push_back(i);
    widths.push_back(i);
  }
  json eps = json::array();
  for (int i = 1; i <= 10; ++i) eps.push_back(0.1 * i);
  // 1000 x 1000 grid points x 10 epsilons x 100 repetitions = 10^9 cells.
  const json cfg = {{"name", "huge"},
                    {"task", {{"type", "kde"}, {"kernel", "l2"}, {"bandwidth", 0.3}, {"queries", 10}}},
                    {"dataset", {{"name", "skin"}}},
                    {"methods", {{{"name", "race"}, {"grid", {{"rows", rows}, {"width", widths}}}}}},
                    {"epsilons", eps},
                    {"repetitions", 100}};
  try {
    (void)experiments::parse_config(cfg, "huge.json", false, experiments::builtin_registry(), datasets);
    FAIL() << "a 10^9-cell config was accepted";
  } catch (const experiments::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("1000000000 cells"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("$.methods[0].grid"), std::string::npos) << e.what();
  }
  // A logspace of a billion epsilons is refused too (it would be expanded first).
  json cfg2 = cfg;
  cfg2["methods"][0]["grid"] = {{"rows", {10}}};
  cfg2["epsilons"] = {{"logspace", {{"from", 0.1}, {"to", 10}, {"count", 1000000000}}}};
  EXPECT_THROW((void)experiments::parse_config(cfg2, "huge.json", false, experiments::builtin_registry(), datasets),
               experiments::ConfigError);
}

// Regressions of the readers (each names the input that exposed it).

// fuzz_config: a shipped config with one number turned into 1e888...8 made nlohmann's parser
// throw out_of_range (number overflow), which escaped load_config and ended the process.
// fuzz_config: fuzz/corpus/fuzz_config/crash_type_error (after its mode byte) has an object
// where a string is expected; nlohmann's type_error escaped parse_config.
TEST(ReaderRegression, ConfigFieldOfTheWrongTypeIsAnInputError) {
  std::ifstream in(std::string(PRIVRACE_SOURCE_DIR) + "/fuzz/corpus/fuzz_config/crash_type_error", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1u);
  const auto dir = testing::temp_dir("hostile_config_type");
  const std::string path = (dir / "type.json").string();
  std::ofstream(path, std::ios::binary) << bytes.substr(1);
  const auto datasets = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  EXPECT_THROW((void)experiments::load_config(path, (bytes[0] & 1) != 0, experiments::builtin_registry(), datasets),
               InputError);
}

TEST(ReaderRegression, ConfigNumberBeyondDoubleIsAnInputError) {
  const auto dir = testing::temp_dir("hostile_config_number");
  const std::string path = (dir / "overflow.json").string();
  std::ofstream(path) << "{\"name\": \"x\", \"repetitions\": 1e888888888888888888888888888888}\n";
  const auto datasets = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  try {
    (void)experiments::load_config(path, false, experiments::builtin_registry(), datasets);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("overflow.json: not valid JSON"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << e.what();
  }
}

// A gzip stream cut short: zlib's gzread() returns 0 as at a clean end and reports the
// truncation only through gzerror() (a soft Z_BUF_ERROR). The table reader checked it; the
// edge-list reader and the whole-file reader of text tables read the edges / rows before the
// cut as the complete data set. Input: the first half of the gzip of a 3000-edge list.
std::string truncated_gzip(const std::string& text) {
  std::string gz(compressBound(static_cast<uLong>(text.size())) + 64, '\0');
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = static_cast<uInt>(gz.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  gz.resize(z.total_out);
  deflateEnd(&z);
  return gz.substr(0, gz.size() / 2);
}

TEST(ReaderRegression, TruncatedGzipEdgeListIsRefusedNotReadInPart) {
  std::string text;
  for (int i = 1; i <= 3000; ++i) text += std::to_string(i) + "\t" + std::to_string(i * 7 % 3001 + 1) + "\n";
  const auto dir = testing::temp_dir("hostile_gz");
  const std::string path = (dir / "cut.txt.gz").string();
  std::ofstream(path, std::ios::binary) << truncated_gzip(text);
  try {
    (void)read_edge_list(path);
    FAIL() << "a truncated gzip edge list was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.txt.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unexpected end of file"), std::string::npos) << e.what();
  }
}

TEST(ReaderRegression, TruncatedGzipTextTableIsRefusedNotReadInPart) {
  const auto dir = testing::temp_dir("hostile_gz_table");
  const json reg = {{"schema", 1},
                    {"datasets",
                     {{"text",
                       {{"kind", "table"}, {"source_url", "test"}, {"format", "text_csv"}, {"header", true},
                        {"columns", 2}, {"files", {{{"path", "text/d.csv.gz"}, {"sha256", nullptr}}}},
                        {"features", {1, 2}}, {"label", nullptr}}}}}};
  std::ofstream(dir / "registry.json") << reg.dump(2);
  std::string text = "a,b\n";
  for (int i = 0; i < 5000; ++i) text += std::to_string(i) + "," + std::to_string(i % 97) + "\n";
  fs::create_directories(dir / "data/text");
  std::ofstream(dir / "data/text/d.csv.gz", std::ios::binary) << truncated_gzip(text);
  DataSearch search;
  search.data_dir = (dir / "data").string();
  search.repo_root = "";
  const auto registry = DatasetRegistry::load((dir / "registry.json").string());
  try {
    (void)load_dataset(registry, "text", {}, search);
    FAIL() << "a truncated gzip table was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("d.csv.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unexpected end of file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace privrace
