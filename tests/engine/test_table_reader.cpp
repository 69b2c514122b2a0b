// Tests of the table and set readers. Every fixture file is written by the test into a
// per-process temporary directory, so nothing here depends on data in the repository.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/io/table_reader.hpp"

namespace fs = std::filesystem;
using namespace privrace;

namespace {

class TableReaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Per process: ctest may run the test cases of this binary in parallel processes.
    dir_ = fs::temp_directory_path() / ("privrace_table_reader_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream f(p, std::ios::binary);
    f << content;
    return p.string();
  }

  static std::string write_gz(const std::string& name, const std::string& content) {
    const std::string p = (dir_ / name).string();
    gzFile gz = gzopen(p.c_str(), "wb");
    EXPECT_NE(gz, nullptr);
    EXPECT_EQ(gzwrite(gz, content.data(), static_cast<unsigned>(content.size())), static_cast<int>(content.size()));
    gzclose(gz);
    return p;
  }

  static fs::path dir_;
};
fs::path TableReaderTest::dir_;

// The message of the exception of type E thrown by f (a test failure if none or another).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception thrown";
  return {};
}

std::string input_error(const std::string& path, const TableOptions& opts = {}) {
  return error_of<InputError>([&] { read_table(path, opts); });
}

TableOptions with_format(TableFormat f) {
  TableOptions o;
  o.format = f;
  return o;
}

DenseMatrix mat(std::initializer_list<std::initializer_list<float>> rows) {
  DenseMatrix m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows.begin()->size()));
  Eigen::Index i = 0;
  for (const auto& r : rows) {
    Eigen::Index j = 0;
    for (const float v : r) m(i, j++) = v;
    ++i;
  }
  return m;
}

std::vector<std::uint32_t> as_vec(std::span<const std::uint32_t> s) { return {s.begin(), s.end()}; }

// ----------------------------------------------------------------------------------------

TEST(TableFormatTest, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_table_format("auto"), TableFormat::Auto);
  EXPECT_EQ(parse_table_format("csv"), TableFormat::Csv);
  EXPECT_EQ(parse_table_format("whitespace"), TableFormat::Whitespace);
  EXPECT_EQ(parse_table_format("libsvm"), TableFormat::Libsvm);
  const std::string msg = error_of<UsageError>([] { parse_table_format("tsv"); });
  EXPECT_NE(msg.find("'tsv'"), std::string::npos) << msg;
}

TEST_F(TableReaderTest, CsvWithHeader) {
  const auto p = write("h.csv", "x,y,z\n1,2,3\n4.5,-5,6e2\n");
  TableReader r(p);
  EXPECT_EQ(r.format(), TableFormat::Csv);
  EXPECT_TRUE(r.had_header());
  EXPECT_EQ(r.dim(), 3u);
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(r.path(), p);
  DenseMatrix m;
  EXPECT_EQ(r.next_chunk(m, 100), 2u);
  EXPECT_EQ(m, mat({{1, 2, 3}, {4.5f, -5, 600}}));
  EXPECT_EQ(r.next_chunk(m, 100), 0u);
  EXPECT_EQ(m.rows(), 0);
  EXPECT_EQ(r.rows_read(), 2u);
}

TEST_F(TableReaderTest, CsvWithoutHeader) {
  const auto p = write("nh.csv", "1,2\n3,4\n");
  TableReader r(p);
  EXPECT_FALSE(r.had_header());
  EXPECT_TRUE(r.column_names().empty());
  EXPECT_EQ(read_table(p), mat({{1, 2}, {3, 4}}));
}

TEST_F(TableReaderTest, CsvHeaderForcedOnAndOff) {
  const auto p = write("num.csv", "1,2\n3,4\n");
  TableOptions on;
  on.header = true;
  TableReader r(p, on);
  EXPECT_TRUE(r.had_header());
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"1", "2"}));
  DenseMatrix m;
  r.next_chunk(m, 10);
  EXPECT_EQ(m, mat({{3, 4}}));

  // With header forced off, a non-numeric first line is a data error, not a header.
  const auto q = write("named.csv", "a,b\n3,4\n");
  TableOptions off;
  off.header = false;
  const std::string msg = input_error(q, off);
  EXPECT_NE(msg.find("named.csv:1: column 1: expected a number, found 'a'"), std::string::npos) << msg;
}

TEST_F(TableReaderTest, CsvQuotedFieldsAndSpaces) {
  const auto p = write("q.csv",
                       "\"a, b\" , \"say \"\"hi\"\"\",c\n"
                       " \"1.5\" , 2 ,\"-3\"\n"
                       "4,\t5\t,+6\n");
  TableReader r(p);
  EXPECT_TRUE(r.had_header());
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"a, b", "say \"hi\"", "c"}));
  DenseMatrix m;
  r.next_chunk(m, 10);
  EXPECT_EQ(m, mat({{1.5f, 2, -3}, {4, 5, 6}}));
}

TEST_F(TableReaderTest, CsvQuoteErrors) {
  const std::string a = input_error(write("uq.csv", "1,2\n3,\"4\n"));
  EXPECT_NE(a.find("uq.csv:2: column 2: unterminated quoted field"), std::string::npos) << a;
  const std::string b = input_error(write("aq.csv", "1,2\n3,\"4\"x\n"));
  EXPECT_NE(b.find("aq.csv:2: column 2: expected ',' or end of line after a closing quote"), std::string::npos) << b;
}

// Text fields through the same CSV tokenizer (the experiments' loaders of categorical tables).
TEST_F(TableReaderTest, CsvFieldReaderReturnsTextFields) {
  const auto p = write_gz("fields.csv.gz",
                          "\xEF\xBB\xBFname, \"pay, $\" ,level\r"
                          "\r\n"
                          "# a comment\n"
                          "\"Doe, J\", \"$1,234\" , very_high\n"
                          "x,,\"say \"\"hi\"\"\"");
  CsvFieldReader r(p);
  std::vector<std::string> f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f, (std::vector<std::string>{"name", "pay, $", "level"}));
  EXPECT_EQ(r.line_no(), 1u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f, (std::vector<std::string>{"Doe, J", "$1,234", "very_high"}));
  EXPECT_EQ(r.line_no(), 4u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f, (std::vector<std::string>{"x", "", "say \"hi\""}));
  EXPECT_FALSE(r.next(f));

  CsvFieldReader bad(write("fields_bad.csv", "a,b\nc,\"d\n"));
  ASSERT_TRUE(bad.next(f));
  const std::string e = error_of<InputError>([&] { bad.next(f); });
  EXPECT_NE(e.find("fields_bad.csv:2: column 2: unterminated quoted field"), std::string::npos) << e;
  EXPECT_NE(error_of<InputError>([&] { CsvFieldReader(dir_.string() + "/absent.csv"); }).find("cannot open"), std::string::npos);
}

TEST_F(TableReaderTest, WhitespaceWithCrlf) {
  const auto p = write("crlf.txt", "74\t85\t123\t1\r\n1  2 \t 3\t4\r\n\r\n  5 6 7 8\r\n");
  TableReader r(p);
  EXPECT_EQ(r.format(), TableFormat::Whitespace);
  EXPECT_FALSE(r.had_header());
  DenseMatrix m;
  r.next_chunk(m, 10);
  EXPECT_EQ(m, mat({{74, 85, 123, 1}, {1, 2, 3, 4}, {5, 6, 7, 8}}));
}

TEST_F(TableReaderTest, WhitespaceWithCrOnlyAndNoFinalNewline) {
  EXPECT_EQ(read_table(write("cr.txt", "1 2\r3 4\r\r5 6")), mat({{1, 2}, {3, 4}, {5, 6}}));
  // Line numbers count CR-only line ends: the bad value is on physical line 4.
  const std::string msg = input_error(write("cr_bad.txt", "1 2\r3 4\r\r5 x"));
  EXPECT_NE(msg.find("cr_bad.txt:4: column 2: expected a number, found 'x'"), std::string::npos) << msg;
}

TEST_F(TableReaderTest, BomCommentsAndBlankLines) {
  const auto p = write("bom.txt", "\xEF\xBB\xBF# generated\n\n  \t\n1 2\n# mid comment\n3 4\n\n");
  EXPECT_EQ(read_table(p), mat({{1, 2}, {3, 4}}));
  const auto q = write("bom.csv", "\xEF\xBB\xBFx,y\n1,2\n");
  TableReader r(q);
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"x", "y"}));
}

TEST_F(TableReaderTest, WhitespaceHeader) {
  const auto p = write("wsh.txt", "alpha beta\n1 2\n");
  TableReader r(p);
  EXPECT_TRUE(r.had_header());
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"alpha", "beta"}));
}

TEST_F(TableReaderTest, CrlfSplitAcrossReadBlocks) {
  // The first line is exactly 1 MiB including its '\r', so the '\n' of the "\r\n" starts the
  // second 1 MiB read block and must not count as an extra line.
  std::string first = "1" + std::string((1u << 20) - 3, ' ') + "2\r";
  ASSERT_EQ(first.size(), 1u << 20);
  const auto p = write("split.txt", first + "\n3 4\n5 y\n");
  const std::string msg = input_error(p);
  EXPECT_NE(msg.find("split.txt:3: column 2: expected a number, found 'y'"), std::string::npos) << msg;
  // Empty lines are sets in read_sets, so a phantom line would show up as an extra set.
  const SetCollection s = read_sets(write("split.sets", "1" + std::string((1u << 20) - 2, ' ') + "\r\n2\n"));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(as_vec(s.set(0)), (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(as_vec(s.set(1)), (std::vector<std::uint32_t>{2}));
}

TEST_F(TableReaderTest, LineLongerThanReadBuffer) {
  // 3 MiB of padding forces the line buffer to grow past its initial 2 MiB.
  const auto p = write("long.txt", "1" + std::string(3u << 20, ' ') + "2\n3 4\n");
  EXPECT_EQ(read_table(p), mat({{1, 2}, {3, 4}}));
}

TEST_F(TableReaderTest, LibsvmWithDim) {
  const auto p = write("d.svm", "1 1:0.5 3:2\n-1 2:1\n+1\n0 4:-7 # trailing comment\n");
  TableOptions o;
  o.dim = 5;
  std::vector<double> labels;
  TableReader r(p, o);
  EXPECT_EQ(r.format(), TableFormat::Libsvm);
  EXPECT_TRUE(r.has_labels());
  EXPECT_EQ(r.dim(), 5u);
  DenseMatrix m;
  EXPECT_EQ(r.next_chunk(m, 10, &labels), 4u);
  EXPECT_EQ(m, mat({{0.5f, 0, 2, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, -7, 0}}));
  EXPECT_EQ(labels, (std::vector<double>{1, -1, 1, 0}));
}

TEST_F(TableReaderTest, LibsvmWithoutDimUsesLargestIndex) {
  const auto p = write("nodim.svm", "# comment\n3 2:1\n4 1:1 6:2.5\n");
  std::vector<double> labels;
  const DenseMatrix m = read_table(p, {}, &labels);
  EXPECT_EQ(m, mat({{0, 1, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 2.5f}}));
  EXPECT_EQ(labels, (std::vector<double>{3, 4}));
}

TEST_F(TableReaderTest, GzipInput) {
  const auto p = write_gz("z.csv.gz", "a,b,c\n1,2,3\n4,5,6\n");
  TableReader r(p);
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"a", "b", "c"}));
  DenseMatrix m;
  r.next_chunk(m, 10);
  EXPECT_EQ(m, mat({{1, 2, 3}, {4, 5, 6}}));
  // libsvm without dim reads the compressed file twice.
  const auto q = write_gz("z.svm.gz", "1 1:1 4:4\n0 2:2\n");
  EXPECT_EQ(read_table(q), mat({{1, 0, 0, 4}, {0, 2, 0, 0}}));
}

// A libsvm file's largest index sets the dense width: a huge one is refused before any chunk is
// allocated, naming the file, the line and the estimate (found by fuzz_table_reader on the
// 16-core machine: "+2 1002020000:1" used to allocate 19 GB for two minutes, then bad_alloc).
TEST_F(TableReaderTest, AHugeLibsvmIndexIsRefusedBeforeAllocating) {
  const auto p = write("huge.svm", "1 1:0.5\n+2 1002020000:1\n\n7\n");
  TableOptions opts;
  opts.format = TableFormat::Libsvm;
  const std::string msg = error_of<ResourceError>([&] { TableReader r(p, opts); });
  EXPECT_NE(msg.find("huge.svm:2: feature index 1002020000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("refused before allocating"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MiB"), std::string::npos) << msg;
  opts.dim = 4'000'000'000;  // the same for a --dim that no chunk can hold
  const std::string given = error_of<ResourceError>([&] { TableReader r(p, opts); });
  EXPECT_NE(given.find("--dim 4000000000"), std::string::npos) << given;
  opts.dim = 0;
  const auto ok = write("wide.svm", "1 1:0.5\n0 3000:1\n");  // a wide but feasible file still reads
  EXPECT_EQ(read_table(ok).cols(), 3000);
}

TEST_F(TableReaderTest, TruncatedGzipIsAnError) {
  const auto full = write_gz("t.gz", std::string(200000, '1') + "\n");
  std::ifstream in(full, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto p = write("trunc.gz", bytes.substr(0, bytes.size() / 2));
  const std::string msg = input_error(p);
  EXPECT_NE(msg.find("trunc.gz: read error: unexpected end of file"), std::string::npos) << msg;
}

TEST_F(TableReaderTest, LabelColumnSplitOff) {
  const auto p = write("lab.csv", "f1,y,f2\n1,0,2\n3,1,4\n");
  TableOptions o;
  o.label_column = 2;
  TableReader r(p, o);
  EXPECT_TRUE(r.has_labels());
  EXPECT_EQ(r.dim(), 2u);
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"f1", "f2"}));
  DenseMatrix m;
  std::vector<double> labels;
  r.next_chunk(m, 10, &labels);
  EXPECT_EQ(m, mat({{1, 2}, {3, 4}}));
  EXPECT_EQ(labels, (std::vector<double>{0, 1}));

  // Whitespace, label last; without a label column the labels come back as zeros.
  const auto q = write("lab.txt", "1 2 7\n3 4 8\n");
  o.label_column = 3;
  std::vector<double> l2;
  EXPECT_EQ(read_table(q, o, &l2), mat({{1, 2}, {3, 4}}));
  EXPECT_EQ(l2, (std::vector<double>{7, 8}));
  EXPECT_EQ(read_table(q, {}, &l2), mat({{1, 2, 7}, {3, 4, 8}}));
  EXPECT_EQ(l2, (std::vector<double>{0, 0}));
}

TEST_F(TableReaderTest, ChunkingMatchesWholeRead) {
  std::string csv = "a,b,label\n";
  for (int i = 0; i < 10; ++i) csv += std::to_string(i) + "," + std::to_string(i * 0.25) + "," + std::to_string(i % 2) + "\n";
  const auto p = write("ten.csv", csv);
  TableOptions o;
  o.label_column = 3;
  std::vector<double> all_labels;
  const DenseMatrix all = read_table(p, o, &all_labels);
  ASSERT_EQ(all.rows(), 10);

  TableReader r(p, o);
  DenseMatrix chunk, joined(0, 2);
  std::vector<double> labels, joined_labels;
  std::vector<std::size_t> sizes;
  while (const std::size_t n = r.next_chunk(chunk, 3, &labels)) {
    sizes.push_back(n);
    ASSERT_EQ(chunk.rows(), static_cast<Eigen::Index>(n));
    ASSERT_EQ(labels.size(), n);
    joined.conservativeResize(joined.rows() + chunk.rows(), 2);
    joined.bottomRows(chunk.rows()) = chunk;
    joined_labels.insert(joined_labels.end(), labels.begin(), labels.end());
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{3, 3, 3, 1}));
  EXPECT_EQ(joined, all);
  EXPECT_EQ(joined_labels, all_labels);
  EXPECT_EQ(r.rows_read(), 10u);
  EXPECT_EQ(r.next_chunk(chunk, 3, &labels), 0u);
}

TEST_F(TableReaderTest, LargeChunkGrowsPastInitialAllocation) {
  std::string s;
  for (int i = 0; i < 20000; ++i) s += std::to_string(i) + " " + std::to_string(-i) + "\n";
  const DenseMatrix m = read_table(write("big.txt", s));
  ASSERT_EQ(m.rows(), 20000);
  EXPECT_EQ(m(19999, 0), 19999.0f);
  EXPECT_EQ(m(12345, 1), -12345.0f);
}

TEST_F(TableReaderTest, NonFiniteValues) {
  for (const std::string v : {"nan", "inf", "-inf", "1e999", "-1e999", "infinity"}) {
    const auto p = write("data.csv", "a,b,c\n1,2,3\n4,5," + v + "\n");
    const std::string msg = input_error(p);
    EXPECT_NE(msg.find("data.csv:3: column 3: value '" + v + "' is not finite"), std::string::npos) << msg;
  }
  const std::string big = input_error(write("f32.csv", "1,1e39\n"));
  EXPECT_NE(big.find("f32.csv:1: column 2: value '1e39' does not fit in single precision"), std::string::npos) << big;
}

TEST_F(TableReaderTest, UnderflowRoundsToZero) {
  const DenseMatrix m = read_table(write("tiny.csv", "1e-999,-1e-999,1e-50\n"));
  EXPECT_EQ(m, mat({{0, 0, 0}}));
}

TEST_F(TableReaderTest, NotANumber) {
  const std::string msg = input_error(write("data.csv", "1,2,3\n4,5,6\n7,abc,9\n"));
  EXPECT_NE(msg.find("data.csv:3: column 2: expected a number, found 'abc'"), std::string::npos) << msg;
  const std::string empty = input_error(write("empty_field.csv", "1,2,3\n4,,6\n"));
  EXPECT_NE(empty.find("empty_field.csv:2: column 2: expected a number, found an empty field"), std::string::npos)
      << empty;
  const std::string hex = input_error(write("hex.txt", "1 2\n1 0x10\n"));
  EXPECT_NE(hex.find("hex.txt:2: column 2: expected a number, found '0x10'"), std::string::npos) << hex;
  const std::string label = input_error(write("badlabel.csv", "1,2\n3,cat\n"), [] {
    TableOptions o;
    o.label_column = 2;
    return o;
  }());
  EXPECT_NE(label.find("badlabel.csv:2: column 2: expected a number, found 'cat'"), std::string::npos) << label;
}

TEST_F(TableReaderTest, RaggedRows) {
  const std::string more = input_error(write("data.csv", "1,2,3,4,5\n1,2,3,4,5\n1,2,3,4\n"));
  EXPECT_NE(more.find("data.csv:3: found 4 fields, expected 5 (as on line 1)"), std::string::npos) << more;
  const std::string fewer = input_error(write("ws.txt", "# c\nx y\n1 2\n\n1 2 zz\n"));
  EXPECT_NE(fewer.find("ws.txt:5: found 3 fields, expected 2 (as on line 2)"), std::string::npos) << fewer;
  // The ragged row is detected in chunked reading too, after the good rows were delivered.
  TableReader r(write("rag.csv", "1,2\n3,4\n5\n"));
  DenseMatrix m;
  EXPECT_EQ(r.next_chunk(m, 2), 2u);
  const std::string late = error_of<InputError>([&] { r.next_chunk(m, 2); });
  EXPECT_NE(late.find("rag.csv:3: found 1 field, expected 2 (as on line 1)"), std::string::npos) << late;
}

TEST_F(TableReaderTest, NoDataRows) {
  for (const auto& [name, content] : std::vector<std::pair<std::string, std::string>>{
           {"empty.csv", ""}, {"blank.csv", "\n\n \n"}, {"header_only.csv", "a,b,c\n"}, {"comments.txt", "# x\n# y\n"}}) {
    const auto p = write(name, content);
    const std::string msg = error_of<InputError>([&] { TableReader r(p); });
    EXPECT_EQ(msg, p + ": no data rows");
  }
}

TEST_F(TableReaderTest, LabelColumnOutOfRange) {
  TableOptions o;
  o.label_column = 4;
  const std::string msg = input_error(write("lr.csv", "1,2,3\n"), o);
  EXPECT_NE(msg.find("lr.csv:1: label column 4 is out of range: the table has 3 columns"), std::string::npos) << msg;
  o.label_column = 1;
  const std::string only = input_error(write("lonly.csv", "1\n2\n"), o);
  EXPECT_NE(only.find("lonly.csv:1: no feature columns"), std::string::npos) << only;
  o.label_column = -1;
  EXPECT_THROW(read_table(write("neg.csv", "1,2\n"), o), UsageError);
}

TEST_F(TableReaderTest, LibsvmErrors) {
  TableOptions o;
  o.dim = 8;
  const std::string over = input_error(write("f.svm", "1 1:1\n0 8:1\n1 2:1 9:1\n"), o);
  EXPECT_NE(over.find("f.svm:3: feature index 9 exceeds --dim 8"), std::string::npos) << over;

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1 1:1 3:x\n", "bad.svm:1: column 3: expected a number, found 'x'"},
      {"1 1:1 a:1\n", "bad.svm:1: column 3: expected 'index:value', found 'a:1'"},
      {"1 :1\n", "bad.svm:1: column 2: expected 'index:value', found ':1'"},
      {"1 1:1 5\n", "bad.svm:1: column 3: expected 'index:value', found '5'"},
      {"1 2:1\n1 0:1\n", "bad.svm:2: column 2: feature index 0 (indices start at 1)"},
      {"1 2:1 5:1 5:2\n", "bad.svm:1: column 4: feature index 5 after 5 (indices must be increasing)"},
      {"1 3:1 2:1\n", "bad.svm:1: column 3: feature index 2 after 3 (indices must be increasing)"},
      {"1 1:nan\n", "bad.svm:1: column 2: value 'nan' is not finite"},
      {"x 1:1\n", "bad.svm:1: column 1: expected a number, found 'x'"},
      {"1 1:1\n2:1 3:1\n", "bad.svm:2: column 1: expected a label before the features, found '2:1'"},
  };
  for (const auto& [content, expected] : cases) {
    const auto p = write("bad.svm", content);
    // Same message with and without --dim (the first pass validates too).
    const std::string with_dim = input_error(p, [] {
      TableOptions t = with_format(TableFormat::Libsvm);
      t.dim = 8;
      return t;
    }());
    EXPECT_NE(with_dim.find(expected), std::string::npos) << with_dim << "\n expected: " << expected;
    const std::string without = input_error(p, with_format(TableFormat::Libsvm));
    EXPECT_NE(without.find(expected), std::string::npos) << without << "\n expected: " << expected;
  }
}

TEST_F(TableReaderTest, LibsvmFromPipeNeedsDim) {
  const fs::path fifo = dir_ / "pipe.svm";
  fs::remove(fifo);  // left over by an earlier --gtest_repeat iteration
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    std::ofstream f(fifo, std::ios::binary);  // blocks until the reader opens the FIFO
    f << "1 1:1 2:2\n";
  });
  const std::string msg = error_of<UsageError>([&] { TableReader r(fifo.string()); });
  writer.join();
  EXPECT_NE(msg.find("needs --dim"), std::string::npos) << msg;
}

TEST_F(TableReaderTest, CannotOpen) {
  const std::string missing = (dir_ / "missing.csv").string();
  EXPECT_EQ(input_error(missing), "cannot open '" + missing + "': No such file or directory");
  EXPECT_EQ(input_error(dir_.string()), "cannot open '" + dir_.string() + "': Is a directory");
  EXPECT_THROW(read_sets(missing), InputError);
}

TEST_F(TableReaderTest, ReadSets) {
  const auto p = write("s.txt", "# comment\n5 3 3 1\r\n\n7,2\t2 , 9\r  \n4294967295 0\n");
  const SetCollection s = read_sets(p);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(as_vec(s.set(0)), (std::vector<std::uint32_t>{1, 3, 5}));
  EXPECT_TRUE(s.set(1).empty());
  EXPECT_EQ(as_vec(s.set(2)), (std::vector<std::uint32_t>{2, 7, 9}));
  EXPECT_TRUE(s.set(3).empty());
  EXPECT_EQ(as_vec(s.set(4)), (std::vector<std::uint32_t>{0, 4294967295u}));
  EXPECT_EQ(s.offsets.back(), s.ids.size());

  const auto z = write_gz("s.gz", "2 1\n1 2 2\n");
  const SetCollection g = read_sets(z);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(as_vec(g.set(1)), (std::vector<std::uint32_t>{1, 2}));
}

TEST_F(TableReaderTest, ReadSetsErrors) {
  for (const auto& [content, expected] : std::vector<std::pair<std::string, std::string>>{
           {"1 2\n3 x\n", "sets.txt:2: column 2: expected an element id (an integer 0..4294967295), found 'x'"},
           {"1 -1\n", "sets.txt:1: column 2: expected an element id (an integer 0..4294967295), found '-1'"},
           {"\n4294967296\n", "sets.txt:2: column 1: expected an element id (an integer 0..4294967295), found '4294967296'"},
           {"1.5\n", "sets.txt:1: column 1: expected an element id (an integer 0..4294967295), found '1.5'"},
       }) {
    const std::string msg = error_of<InputError>([&] { read_sets(write("sets.txt", content)); });
    EXPECT_NE(msg.find(expected), std::string::npos) << msg << "\n expected: " << expected;
  }
  const auto p = write("nosets.txt", "# only a comment\n");
  EXPECT_EQ(error_of<InputError>([&] { read_sets(p); }), p + ": no sets");
}

TEST_F(TableReaderTest, ReaderIsMovable) {
  TableReader a(write("mv.txt", "1 2\n3 4\n"));
  TableReader b(std::move(a));
  DenseMatrix m;
  EXPECT_EQ(b.next_chunk(m, 10), 2u);
}

// ----------------------------------------------------------------------------------------
// Column selection (TableOptions::columns)

TableOptions select(const std::string& keep, const std::string& drop = "") {
  TableOptions o;
  if (!keep.empty()) o.columns.keep = parse_column_spec(keep, "--columns");
  if (!drop.empty()) o.columns.drop = parse_column_spec(drop, "--drop");
  return o;
}

TEST(ColumnSpecTest, ParsesNumbersRangesAndNames) {
  const auto refs = parse_column_spec(" 3, 2-5 ,Temperature,sepal-length", "--columns");
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[0].first, 3u);
  EXPECT_EQ(refs[0].last, 3u);
  EXPECT_EQ(refs[1].first, 2u);
  EXPECT_EQ(refs[1].last, 5u);
  EXPECT_EQ(refs[2].name, "Temperature");
  EXPECT_EQ(refs[3].name, "sepal-length");
  EXPECT_EQ(refs[0].option, "--columns");
  const std::string zero = error_of<UsageError>([] { parse_column_spec("0,1", "--drop"); });
  EXPECT_NE(zero.find("--drop: columns are numbered from 1"), std::string::npos) << zero;
  const std::string back = error_of<UsageError>([] { parse_column_spec("5-2", "--columns"); });
  EXPECT_NE(back.find("--columns: the range 5-2 ends before it starts"), std::string::npos) << back;
  const std::string empty = error_of<UsageError>([] { parse_column_spec("1,,2", "--columns"); });
  EXPECT_NE(empty.find("--columns: empty item in '1,,2'"), std::string::npos) << empty;
}

TEST_F(TableReaderTest, ColumnsByNumberAndRange) {
  const auto p = write("sel.csv", "1,2,3,4,5\n6,7,8,9,10\n");
  EXPECT_EQ(read_table(p, select("2,4")), mat({{2, 4}, {7, 9}}));
  EXPECT_EQ(read_table(p, select("2-4")), mat({{2, 3, 4}, {7, 8, 9}}));
  EXPECT_EQ(read_table(p, select("5,1-2")), mat({{5, 1, 2}, {10, 6, 7}}));  // the order given is kept
  const std::string twice = input_error(p, select("1,1-2"));
  EXPECT_NE(twice.find("sel.csv:1: --columns: column 1 is selected twice"), std::string::npos) << twice;
  const std::string far = input_error(p, select("2-6"));
  EXPECT_NE(far.find("sel.csv:1: --columns: column 6 is out of range: the table has 5 columns"), std::string::npos) << far;
}

TEST_F(TableReaderTest, ColumnsByNameKeepTheirOrder) {
  const auto p = write("names.csv", "a,b,c,d\n1,2,3,4\n5,6,7,8\n");
  TableReader r(p, select("d,b"));
  EXPECT_TRUE(r.had_header());
  EXPECT_EQ(r.dim(), 2u);
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"d", "b"}));
  DenseMatrix m;
  EXPECT_EQ(r.next_chunk(m, 10), 2u);
  EXPECT_EQ(m, mat({{4, 2}, {8, 6}}));
  EXPECT_EQ(read_table(p, select("c,1")), mat({{3, 1}, {7, 5}}));  // names and numbers mix
}

TEST_F(TableReaderTest, DropRemovesColumns) {
  const auto p = write("drop.csv", "a,b,c,d\n1,2,3,4\n5,6,7,8\n");
  EXPECT_EQ(read_table(p, select("", "b")), mat({{1, 3, 4}, {5, 7, 8}}));
  EXPECT_EQ(read_table(p, select("", "1,3-4")), mat({{2}, {6}}));
  EXPECT_EQ(read_table(p, select("d,c,b", "c")), mat({{4, 2}, {8, 6}}));  // dropped from those kept
  TableOptions label = select("", "");
  label.columns.label_drop = parse_column_spec("a,d", "--label-column");
  EXPECT_EQ(read_table(p, label), mat({{2, 3}, {6, 7}}));
  const std::string none = input_error(p, select("", "1-4"));
  EXPECT_NE(none.find("drop.csv:1: no feature columns: the column selection leaves none of the table's 4 columns"),
            std::string::npos) << none;
}

TEST_F(TableReaderTest, UnselectedTextColumnsAreNotParsed) {
  // A date column and a text column left out are skipped, in the header and in every row; the
  // header is still found (a selected field is a name).
  const auto p = write("dates.csv", "date,temp,room,hum\n2015-02-04 17:51:00,23.18,north,27.2\n"
                                    "2015-02-04 17:52:00,23.15,\"south, east\",27.3\n");
  EXPECT_EQ(read_table(p, select("temp,hum")), mat({{23.18f, 27.2f}, {23.15f, 27.3f}}));
  EXPECT_EQ(read_table(p, select("", "1,3")), mat({{23.18f, 27.2f}, {23.15f, 27.3f}}));
  // Without a header line: numbers select, and the text column is never looked at.
  const auto bare = write("bare.csv", "x1,4.5,1\nx2,5.5,0\n");
  EXPECT_EQ(read_table(bare, select("2-3")), mat({{4.5f, 1}, {5.5f, 0}}));
  // A selected text column is still an error naming file, line and column.
  const std::string bad = input_error(p, select("date"));
  EXPECT_NE(bad.find("dates.csv:2: column 1: expected a number, found '2015-02-04 17:51:00'"), std::string::npos) << bad;
}

TEST_F(TableReaderTest, UnknownNameIsRefusedNamingIt) {
  const auto p = write("unk.csv", "alpha,beta\n1,2\n");
  const std::string msg = input_error(p, select("beta,gamma"));
  EXPECT_NE(msg.find("unk.csv:1: --columns: no column named 'gamma' in the header (its names: 'alpha', 'beta')"),
            std::string::npos) << msg;
  const std::string dropped = input_error(p, select("", "delta"));
  EXPECT_NE(dropped.find("--drop: no column named 'delta'"), std::string::npos) << dropped;
}

TEST_F(TableReaderTest, NamesNeedAHeaderLine) {
  const auto p = write("noheader.csv", "1,2,3\n4,5,6\n");
  const std::string msg = input_error(p, select("b"));
  EXPECT_NE(msg.find("noheader.csv:1: --columns: the column name 'b' needs a header line, and "), std::string::npos) << msg;
  EXPECT_NE(msg.find("select columns by number"), std::string::npos) << msg;
  TableOptions forced = select("b");
  forced.header = false;
  EXPECT_NE(input_error(write("hdr.csv", "a,b\n1,2\n"), forced).find("needs a header line"), std::string::npos);
}

TEST_F(TableReaderTest, HeaderOneNameShortNamesColumnsFromTheSecond) {
  // The occupancy files' layout: a quoted row id with no name in the header, then a date.
  const auto p = write("occ.txt", "\"date\",\"Temperature\",\"Humidity\",\"Occupancy\"\n"
                                  "\"1\",\"2015-02-04 17:51:00\",23.18,27.272,1\n"
                                  "\"2\",\"2015-02-04 17:51:59\",23.15,27.2675,0\n");
  TableReader r(p, select("Temperature,Humidity"));
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"Temperature", "Humidity"}));
  DenseMatrix m;
  r.next_chunk(m, 10);
  EXPECT_EQ(m, mat({{23.18f, 27.272f}, {23.15f, 27.2675f}}));
  EXPECT_EQ(read_table(p, select("", "1-2,Occupancy")), mat({{23.18f, 27.272f}, {23.15f, 27.2675f}}));
  EXPECT_EQ(read_table(p, select("4-5")), mat({{27.272f, 1}, {27.2675f, 0}}));
  const std::string row = input_error(write("occ_bad.txt", "\"date\",\"T\"\n\"1\",\"d\",2\n\"2\",\"d\",3,4\n"), select("T"));
  EXPECT_NE(row.find("occ_bad.txt:3: found 4 fields, expected 3 (as on line 2)"), std::string::npos) << row;
}

TEST_F(TableReaderTest, ColumnsInGzipAndWhitespaceFiles) {
  const auto z = write_gz("sel.csv.gz", "id,x,y\nr1,1,2\nr2,3,4\n");
  EXPECT_EQ(read_table(z, select("y,x")), mat({{2, 1}, {4, 3}}));
  const auto w = write("sel.txt", "id x y\nr1 1 2\nr2\t3   4\n");
  EXPECT_EQ(read_table(w, select("", "id")), mat({{1, 2}, {3, 4}}));
  EXPECT_EQ(read_table(w, select("3")), mat({{2}, {4}}));
  const auto wz = write_gz("sel.txt.gz", "1 2 3\n4 5 6\n");
  EXPECT_EQ(read_table(wz, select("3,1")), mat({{3, 1}, {6, 4}}));
}

TEST_F(TableReaderTest, ColumnsAndLabelColumnTogether) {
  // The label column (split off, parsed) is never a feature, even when selected.
  TableOptions o = select("1-3");
  o.label_column = 2;
  std::vector<double> labels;
  EXPECT_EQ(read_table(write("lab.csv", "1,7,3,x\n4,8,6,y\n"), o, &labels), mat({{1, 3}, {4, 6}}));
  EXPECT_EQ(labels, (std::vector<double>{7, 8}));
}

TEST_F(TableReaderTest, LibsvmRefusesAColumnSelection) {
  const auto p = write("sel.svm", "1 1:1 3:2\n0 2:4\n");
  const std::string msg = error_of<UsageError>([&] { read_table(p, select("1")); });
  EXPECT_NE(msg.find("sel.svm: a column selection (--columns, --drop) applies to CSV and whitespace tables, not to libsvm"),
            std::string::npos) << msg;
  TableOptions label;
  label.columns.label_drop = parse_column_spec("4", "--label-column");  // ignored: the label is the first token
  EXPECT_EQ(read_table(p, label), mat({{1, 0, 2}, {0, 4, 0}}));
}

TEST_F(TableReaderTest, ShareResolvesTheSelectionAsTheWholeFile) {
  const std::string text = "id,x,y\nr1,1,2\nr2,3,4\nr3,5,6\n";
  const auto p = write("share.csv", text);
  TableOptions o = select("y,x");
  TableReader whole(p, o);
  const TableLayout l = whole.layout();
  ASSERT_TRUE(l.splittable) << l.why_not;
  EXPECT_EQ(l.dim, 2u);
  DenseMatrix all(0, 2);
  for (std::uint64_t k = 0; k < 2; ++k) {
    TableOptions s = o;
    s.format = l.format;
    s.share = TableShare{k * l.bytes / 2, (k + 1) * l.bytes / 2, l.fields, l.header_at};
    TableReader r(p, s);
    EXPECT_EQ(r.dim(), 2u);
    DenseMatrix m;
    const std::size_t n = r.next_chunk(m, 10);
    all.conservativeResize(all.rows() + static_cast<Eigen::Index>(n), 2);
    all.bottomRows(static_cast<Eigen::Index>(n)) = m;
  }
  EXPECT_EQ(all, mat({{2, 1}, {4, 3}, {6, 5}}));
}

}  // namespace
