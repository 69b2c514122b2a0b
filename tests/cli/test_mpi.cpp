// `mpirun -np K privrace sketch` on this machine (-np 1, 2, 3 with --oversubscribe): each rank
// reads its byte range of the file, and the seeded sketch is byte-identical to one process for
// a CSV with a header, one without (CRLF and LF line ends, no newline at the end), lines of very
// uneven length (so the byte ranges split records and batches straddle ranks), fewer records
// than ranks, and gzip input (read by rank 0 alone). Bad input (a malformed record in one
// rank's share, an unreadable input, ranks that disagree, --threads < 0) fails on every rank
// with a message and no file. Several input files (a gzip one, a headered one, CRLF, no final
// newline) are assigned whole to ranks, also to more ranks than files, and give the same sketch
// as one process on the list and on the concatenated records; a missing or malformed file stops
// every rank with a message naming it. Jaccard sketches of a one-set-per-line file and of SNAP
// edge lists (comments, CRLF, no final newline, duplicate edges, self-loops, a node whose edge
// lines straddle every split point; directed, --undirected, --drop-self-loops, --nodes; gzip;
// more ranks than lines) are byte-identical to one process; a malformed set or edge line names
// the rank, the file and the line, and leaves no file. Skipped unless built with -DPRIVRACE_MPI=ON.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include "privrace/io/edge_list.hpp"
#include "privrace/io/table_reader.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

#ifdef PRIVRACE_MPIEXEC
namespace {
struct RunResult {
  int code;
  std::string err;
};
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
RunResult shell(const std::string& cmd, const fs::path& dir) {
  const fs::path err = dir / "stderr.txt";
  const int status = std::system((cmd + " >/dev/null 2>" + err.string()).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err)};
}
std::string mpirun(int np) {
  // Root may run MPI jobs only when it says so (containers and CI often run as root).
  return std::string(PRIVRACE_MPIEXEC) + " -np " + std::to_string(np) + " --oversubscribe" +
         (::geteuid() == 0 ? " --allow-run-as-root" : "") + " ";
}
const std::string kCli = PRIVRACE_CLI;

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = privrace::testing::temp_dir("mpi");
    // 20,000 rows: with --chunk-rows 4096 every rank gets several chunks and partial batches.
    const privrace::DenseMatrix x = privrace::testing::clustered_points(20000, 3, 31);
    std::mt19937 rng(5);
    std::ofstream header(dir / "header.csv", std::ios::binary), plain(dir / "plain.csv", std::ios::binary),
        uneven(dir / "uneven.csv", std::ios::binary);
    header << "a,b,c\n";
    uneven << "# a comment line\n\nx, y ,z\n";
    char buf[64];
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      header << x(i, 0) << "," << x(i, 1) << "," << x(i, 2) << "\n";
      // CRLF on some lines, LF on the others, no newline after the last line.
      plain << x(i, 0) << "," << x(i, 1) << "," << x(i, 2) << (i + 1 == x.rows() ? "" : i % 3 == 0 ? "\r\n" : "\n");
      // Lines from 8 to about 150 bytes: precision, padding, blank and comment lines vary.
      for (int c = 0; c < 3; ++c) {
        const int digits = static_cast<int>(rng() % 12);
        const int pad = static_cast<int>(rng() % 4 == 0 ? rng() % 30 : 0);
        std::snprintf(buf, sizeof buf, "%*s%.*f", pad, "", digits, static_cast<double>(x(i, c)));
        uneven << (c ? "," : "") << buf;
      }
      uneven << "\n";
      if (rng() % 97 == 0) uneven << "\n# between records\n";
    }
    header.close();
    std::ofstream(dir / "two.csv") << "1,2,3\n4,5,6\n";
    ASSERT_EQ(std::system(("gzip -c " + (dir / "header.csv").string() + " > " + (dir / "header.csv.gz").string()).c_str()), 0);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string args(const std::string& input, const std::string& out, const std::string& extra, int threads = 2,
                   int rows = 40) const {
    return inputs_args("--input " + (dir / input).string(), out, extra, threads, rows);
  }
  // The same with the --input options given as they are (several files, a quoted pattern, @LIST).
  std::string inputs_args(const std::string& inputs, const std::string& out, const std::string& extra, int threads = 2,
                          int rows = 40) const {
    return " sketch " + inputs + " --rows " + std::to_string(rows) +
           " --width 3000 --bandwidth 2 --seed 7 --threads " + std::to_string(threads) + " --chunk-rows 4096 -q " + extra +
           " -o " + (dir / out).string();
  }
  // The single-process file and the files of 1, 2 and 3 ranks: the same bytes.
  void expect_identical(const std::string& input, const std::string& extra) {
    const std::string tag = fs::path(input).stem().string();
    const RunResult single = shell(kCli + args(input, tag + ".rsk", extra), dir);
    ASSERT_EQ(single.code, 0) << single.err;
    const std::string expected = slurp(dir / (tag + ".rsk"));
    ASSERT_FALSE(expected.empty());
    for (const int np : {1, 2, 3}) {
      const std::string out = tag + std::to_string(np) + ".rsk";
      const RunResult r = shell(mpirun(np) + kCli + args(input, out, extra), dir);
      ASSERT_EQ(r.code, 0) << input << ", " << np << " ranks: " << r.err;
      EXPECT_TRUE(slurp(dir / out) == expected) << input << " " << extra << ", " << np << " ranks";
    }
  }
  // `privrace info` and `info --counts` of a sketch (its header, then its counts), without the
  // input's name (the only difference between the sketch of several files and that of their
  // records in one file).
  std::string counts_of(const std::string& sketch) {
    const fs::path out = dir / "info.txt";
    const std::string path = (dir / sketch).string();
    EXPECT_EQ(std::system(("(" + kCli + " info " + path + " && " + kCli + " info --counts " + path + " 2>/dev/null) > " + out.string()).c_str()), 0);
    return std::regex_replace(slurp(out), std::regex("\"input\": \"[^\"]*\""), "\"input\": \"\"");
  }
  // Four parts of different sizes, in sorted order part-1 .. part-4: a headered CSV, a gzip file,
  // CRLF line ends, lines of uneven length without a final newline; all.csv holds the same
  // records in one file; list.txt names the parts (relative to its folder).
  void write_parts() {
    const privrace::DenseMatrix x = privrace::testing::clustered_points(18500, 3, 77);
    const std::size_t ends[] = {3000, 12000, 12500, 18500};
    std::ofstream all(dir / "all.csv", std::ios::binary);
    std::ofstream p1(dir / "part-1.csv", std::ios::binary), p2(dir / "part-2.csv", std::ios::binary),
        p3(dir / "part-3.csv", std::ios::binary), p4(dir / "part-4.csv", std::ios::binary);
    std::ofstream* parts[] = {&p1, &p2, &p3, &p4};
    p1 << "a,b,c\n";
    std::mt19937 rng(11);
    char buf[64];
    for (Eigen::Index i = 0, part = 0; i < x.rows(); ++i) {
      while (static_cast<std::size_t>(i) >= ends[part]) ++part;
      std::string line;
      for (int c = 0; c < 3; ++c) {
        std::snprintf(buf, sizeof buf, "%*s%.*f", static_cast<int>(rng() % 5 == 0 ? rng() % 20 : 0), "",
                      static_cast<int>(rng() % 9), static_cast<double>(x(i, c)));
        if (c) line += ',';
        line.append(buf);
      }
      all << line << "\n";
      const bool last = static_cast<std::size_t>(i) + 1 == ends[part];
      *parts[part] << line << (part == 2 ? "\r\n" : part == 3 && last ? "" : "\n");
    }
    for (std::ofstream* f : parts) f->close();
    ASSERT_EQ(std::system(("gzip " + (dir / "part-2.csv").string()).c_str()), 0);
    std::ofstream(dir / "list.txt") << "# the parts, in order\npart-1.csv\npart-2.csv.gz\n\npart-3.csv\npart-4.csv\n";
  }
  std::string parts_listed() const {
    std::string out;
    for (const char* name : {"part-1.csv", "part-2.csv.gz", "part-3.csv", "part-4.csv"}) out += " --input " + (dir / name).string();
    return out;
  }
  fs::path dir;
};
}  // namespace

TEST_F(Mpi, SeveralFilesGiveTheSketchOfOneProcessForAnyRankCount) {
  write_parts();
  const std::string pattern = "--input '" + (dir / "part-*").string() + "'", list = "--input @" + (dir / "list.txt").string();
  for (const bool rff : {false, true}) {
    const auto command = [&](const std::string& inputs, const std::string& out) {
      return rff ? " sketch " + inputs + " --kernel rff --features 40 --sigma 1.5 --epsilon 1 --seed 7 -t 2 --chunk-rows 4096 -q -o " +
                       (dir / out).string()
                 : inputs_args(inputs, out, "--epsilon 1");
    };
    const std::string extra = rff ? "rff" : "l2";
    // One process: the listed files, and their records in one file.
    RunResult r = shell(kCli + command(parts_listed(), "one.rsk"), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string expected = slurp(dir / "one.rsk");
    ASSERT_FALSE(expected.empty());
    ASSERT_EQ(shell(kCli + command("--input " + (dir / "all.csv").string(), "all.rsk"), dir).code, 0);
    EXPECT_EQ(counts_of("one.rsk"), counts_of("all.rsk")) << extra;
    // Every record of the parts was read: the owner's --timings line counts them (a private
    // file's header keeps no exact count).
    const RunResult timed = shell(kCli + command(parts_listed(), "timed.rsk") + " --timings", dir);
    ASSERT_EQ(timed.code, 0) << timed.err;
    EXPECT_NE(timed.err.find("\"points\":18500"), std::string::npos) << timed.err;
    // One process on the pattern and on the list: the same file.
    ASSERT_EQ(shell(kCli + command(pattern, "glob.rsk"), dir).code, 0);
    ASSERT_EQ(shell(kCli + command(list, "list.rsk"), dir).code, 0);
    EXPECT_TRUE(slurp(dir / "glob.rsk") == expected) << extra;
    EXPECT_TRUE(slurp(dir / "list.rsk") == expected) << extra;
    // 1, 2, 3 ranks and more ranks than files, each form of the list.
    const std::pair<int, std::string> runs[] = {{1, parts_listed()}, {2, pattern}, {3, list}, {6, pattern}};
    for (const auto& [np, inputs] : runs) {
      const std::string out = "mpi" + std::to_string(np) + ".rsk";
      r = shell(mpirun(np) + kCli + command(inputs, out), dir);
      ASSERT_EQ(r.code, 0) << np << " ranks: " << r.err;
      EXPECT_TRUE(slurp(dir / out) == expected) << extra << ", " << np << " ranks, " << inputs;
    }
  }
}

TEST_F(Mpi, SeveralFilesFailOnEveryRankNamingTheFile) {
  write_parts();
  // A missing file in the list.
  std::ofstream(dir / "missing.txt") << "part-1.csv\npart-2.csv.gz\npart-9.csv\npart-4.csv\n";
  RunResult r = shell(mpirun(3) + kCli + inputs_args("--input @" + (dir / "missing.txt").string(), "m.rsk", "--epsilon 1"), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("error: cannot open '" + (dir / "part-9.csv").string() + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a rank failed; no output written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "m.rsk"));
  // A malformed record in the second file (the largest, read by rank 0, whose other parts
  // complete batches begun on other ranks).
  std::string text = slurp(dir / "all.csv");
  std::size_t at = 0;
  for (int i = 0; i < 5000; ++i) at = text.find('\n', at) + 1;
  text.insert(at, "0.5,1.5,abc\n");
  std::ofstream(dir / "bad.csv", std::ios::binary) << text;
  r = shell(mpirun(3) + kCli + inputs_args(" --input " + (dir / "part-1.csv").string() + " --input " + (dir / "bad.csv").string() +
                                               " --input " + (dir / "part-3.csv").string(), "b.rsk", "--epsilon 1"),
            dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rank 0: error: " + (dir / "bad.csv").string() + ":5001: column 3: expected a number, found 'abc'"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a rank failed; no output written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "b.rsk"));
  // Files with different columns.
  std::ofstream(dir / "two.csv") << "1,2\n3,4\n";
  r = shell(mpirun(2) + kCli + inputs_args(parts_listed() + " --input " + (dir / "two.csv").string(), "c.rsk", "--epsilon 1"), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find((dir / "two.csv").string() + ": records of 2 feature columns, expected 3"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "c.rsk"));
}

TEST_F(Mpi, SeededSketchesOfAHeaderedCsvAreByteIdenticalToOneProcess) {
  expect_identical("header.csv", "--no-privacy");
  expect_identical("header.csv", "--epsilon 1");
}

TEST_F(Mpi, SplitRecordsCrlfAndNoFinalNewlineGiveTheSameSketch) {
  expect_identical("plain.csv", "--epsilon 1");
  expect_identical("uneven.csv", "--epsilon 1");
  expect_identical("uneven.csv", "--kernel angular --power 2 --epsilon 0.5");
}

TEST_F(Mpi, WideSketchesAreSummedByAReduceScatterAndAGatherWithTheSameBytes) {
  // With PRIVRACE_MPI_REDUCE=scatter, 800 x 3000 = 2.4M counts (above 2^18) are summed by a
  // reduce-scatter and a gather of the slices each rank noised and encoded (distributed.cpp;
  // slices of whole 2^20-count blocks: 2 or 3 non-empty ones); 40 x 3000 stays with the reduce.
  const std::string scatter = "PRIVRACE_MPI_REDUCE=scatter ";
  for (const int rows : {800, 40}) {
    const RunResult single = shell(kCli + args("uneven.csv", "wide.rsk", "--epsilon 1", 2, rows), dir);
    ASSERT_EQ(single.code, 0) << single.err;
    const std::string expected = slurp(dir / "wide.rsk");
    for (const int np : {2, 3}) {
      const RunResult r =
          shell(scatter + mpirun(np) + kCli + args("uneven.csv", "wide_mpi.rsk", "--epsilon 1 --timings", 2, rows), dir);
      ASSERT_EQ(r.code, 0) << r.err;
      const std::string method = rows == 800 ? "reduce_scatter_gather" : "reduce";
      EXPECT_NE(r.err.find("\"reduce_method\":\"" + method + "\""), std::string::npos) << r.err;
      if (rows == 800) {
        EXPECT_NE(r.err.find("\"encode_where\":\"each rank its slice\""), std::string::npos) << r.err;
      }
      EXPECT_TRUE(slurp(dir / "wide_mpi.rsk") == expected) << rows << " rows, " << np << " ranks";
    }
  }
  // By default (unset or auto) the reduce below 4 ranks and the reduce-scatter from 4 on; tree
  // forces the reduce; a value that is none of them is refused before anything is read.
  const auto method_of = [&](const std::string& env, int np) {
    const RunResult r = shell(env + mpirun(np) + kCli + args("uneven.csv", "wide_mpi.rsk", "--epsilon 1 --timings", 2, 800), dir);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(slurp(dir / "wide_mpi.rsk") == slurp(dir / "wide.rsk")) << env << np << " ranks";
    const std::size_t at = r.err.find("\"reduce_method\":\"");
    return at == std::string::npos ? std::string("(none)") : r.err.substr(at + 17, r.err.find('"', at + 17) - at - 17);
  };
  ASSERT_EQ(shell(kCli + args("uneven.csv", "wide.rsk", "--epsilon 1", 2, 800), dir).code, 0);
  EXPECT_EQ(method_of("", 3), "reduce");
  EXPECT_EQ(method_of("PRIVRACE_MPI_REDUCE=auto ", 4), "reduce_scatter_gather");
  EXPECT_EQ(method_of("PRIVRACE_MPI_REDUCE=tree ", 4), "reduce");
  fs::remove(dir / "bad.rsk");
  const RunResult bad = shell("PRIVRACE_MPI_REDUCE=ring " + mpirun(2) + kCli + args("uneven.csv", "bad.rsk", "--epsilon 1", 2, 100), dir);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("PRIVRACE_MPI_REDUCE='ring': expected auto, tree or scatter"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "bad.rsk"));
}

TEST_F(Mpi, FeatureSketchesAndFewerRecordsThanRanks) {
  // rff and hist: one GEMM (or bin pass) per batch, as one process.
  const std::string rff = " --kernel rff --features 40 --sigma 1.5 --epsilon 1";
  for (const int np : {1, 3}) {
    ASSERT_EQ(shell(kCli + " sketch --input " + (dir / "uneven.csv").string() + " --seed 7 -t 2 -q" + rff + " -o " +
                        (dir / "rff.rsk").string(), dir).code, 0);
    const RunResult r = shell(mpirun(np) + kCli + " sketch --input " + (dir / "uneven.csv").string() + " --seed 7 -t 2 -q" +
                                  rff + " -o " + (dir / "rff_mpi.rsk").string(), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(slurp(dir / "rff.rsk") == slurp(dir / "rff_mpi.rsk")) << np << " ranks";
  }
  // A rank whose share holds no record contributes zeros.
  expect_identical("two.csv", "--epsilon 1");
  // hist with 3 x 800,000 bins (above 2^18 counts), forced to the reduce-scatter: every rank
  // noises and encodes its slice, rank 0 the record count; the same bytes as one process.
  const std::string hist = " --kernel hist --bins 800000 --domain -40:40 --seed 7 -t 1 -q --epsilon 1 --timings";
  const std::string input = " sketch --input " + (dir / "uneven.csv").string();
  ASSERT_EQ(shell(kCli + input + hist + " -o " + (dir / "hist.rsk").string(), dir).code, 0);
  for (const int np : {2, 3}) {
    const RunResult r = shell("PRIVRACE_MPI_REDUCE=scatter " + mpirun(np) + kCli + input + hist + " -o " +
                                  (dir / "hist_mpi.rsk").string(), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("\"noise_where\":\"each rank its slice\""), std::string::npos) << r.err;
    EXPECT_TRUE(slurp(dir / "hist.rsk") == slurp(dir / "hist_mpi.rsk")) << np << " ranks";
  }
}

TEST_F(Mpi, GzipInputIsReadByRankZeroAndGivesTheSameSketch) {
  expect_identical("header.csv.gz", "--epsilon 1");
  const RunResult r = shell(mpirun(2) + kCli + " sketch --input " + (dir / "header.csv.gz").string() +
                                " --rows 10 --width 20 --seed 7 --epsilon 1 -o " + (dir / "gz.rsk").string(), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("gzip-compressed and cannot be split: rank 0 reads it all"), std::string::npos) << r.err;
}

TEST_F(Mpi, BadInputFailsOnEveryRankWithoutAFile) {
  // A malformed record near the end: it lies in the last rank's share.
  std::string text = slurp(dir / "header.csv");
  const std::size_t at = text.rfind('\n', text.size() - 2000);
  text.insert(at + 1, "1.5,abc,2\n");
  std::ofstream(dir / "bad.csv", std::ios::binary) << text;
  const std::size_t line = static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at) + 1, '\n')) + 1;
  RunResult r = shell(mpirun(3) + kCli + args("bad.csv", "bad.rsk", "--epsilon 1"), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rank 2: error: " + (dir / "bad.csv").string() + ":" + std::to_string(line) +
                       ": column 2: expected a number, found 'abc'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a rank failed; no output written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "bad.rsk"));
  r = shell(mpirun(2) + kCli + args("missing.csv", "missing.rsk", "--epsilon 1"), dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "missing.rsk"));
  // MPMD: the two ranks get different --rows.
  r = shell(mpirun(1) + kCli + args("header.csv", "mixed.rsk", "--epsilon 1") + " : -np 1 " + kCli +
                args("header.csv", "mixed.rsk", "--epsilon 1", 2, 41),
            dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("ranks disagree on their parameters"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "mixed.rsk"));
  r = shell(mpirun(2) + kCli + args("header.csv", "neg.rsk", "--epsilon 1", -1), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--threads must be 0 (all) or positive"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "neg.rsk"));
  r = shell(mpirun(2) + kCli + " sketch --input " + (dir / "header.csv").string() + " --rows 10 --width 20 --epsilon 1 "
                "--chunk-rows 5000 -o " + (dir / "chunk.rsk").string(), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("a multiple of 4096"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "chunk.rsk"));
}
TEST_F(Mpi, ARankKilledMidBuildStopsEveryRankAndLeavesNoFile) {
  // 300,000 records, R = 2000, one thread a rank: each rank hashes for seconds. Rank 1 is
  // killed (SIGKILL) one second after it starts; the others wait for it in a collective until
  // mpirun ends the job. Afterwards: a non-zero exit within the bound, no file under the name,
  // no temporary beside it, and a rerun writes the file.
  {
    const std::string one = slurp(dir / "plain.csv") + "\n";
    std::ofstream big(dir / "big.csv", std::ios::binary);
    for (int i = 0; i < 15; ++i) big << one;
  }
  const fs::path out_dir = dir / "out";
  fs::create_directories(out_dir);
  std::ofstream(dir / "kill_rank1.sh") << "#!/bin/sh\n"
                                          "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then \"$@\" & sleep 1; kill -9 $!; wait $!; exit 137; fi\n"
                                          "exec \"$@\"\n";
  fs::permissions(dir / "kill_rank1.sh", fs::perms::owner_all);
  const std::string command = " sketch --input " + (dir / "big.csv").string() +
                              " --rows 2000 --width 1000 --bandwidth 2 --epsilon 1 --threads 1 -q -o ";
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = shell(mpirun(3) + (dir / "kill_rank1.sh").string() + " " + kCli + command + (out_dir / "big.rsk").string(), dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.code, 0) << r.err;
  EXPECT_LT(seconds, 120.0) << "the job did not stop when a rank died";
  EXPECT_TRUE(fs::is_empty(out_dir)) << "a file or temporary was left: " << fs::directory_iterator(out_dir)->path();
  const RunResult again = shell(mpirun(3) + kCli + command + (out_dir / "big.rsk").string(), dir);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(fs::exists(out_dir / "big.rsk"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(out_dir)) ++entries;
  EXPECT_EQ(entries, 1u);
}

namespace {
// A set kernel's command line (one set per line or an edge list), without -o.
std::string set_args(const fs::path& input, const std::string& extra, bool quiet = true) {
  const std::string kernel = extra.find("--kernel") == std::string::npos ? "--kernel jaccard " : "";
  return " sketch --input " + input.string() + " --rows 40 --width 300 --seed 7 --threads 2 " + (quiet ? "-q " : "") + kernel + extra;
}
}  // namespace

class MpiSets : public Mpi {
 protected:
  // The single-process file and those of `nps` ranks: the same bytes. Returns the ranks' stderr.
  // (`loud`: without -q, for the ranks' notes on stderr.)
  std::string expect_same(const fs::path& input, const std::string& extra, std::initializer_list<int> nps = {1, 2, 3},
                          bool loud = false) {
    const RunResult single = shell(kCli + set_args(input, extra) + " -o " + (dir / "one.rsk").string(), dir);
    EXPECT_EQ(single.code, 0) << single.err;
    const std::string expected = slurp(dir / "one.rsk");
    EXPECT_FALSE(expected.empty());
    std::string errs;
    for (const int np : nps) {
      const fs::path out = dir / ("np" + std::to_string(np) + ".rsk");
      fs::remove(out);
      const RunResult r = shell(mpirun(np) + kCli + set_args(input, extra, !loud) + " -o " + out.string(), dir);
      EXPECT_EQ(r.code, 0) << input << " " << extra << ", " << np << " ranks: " << r.err;
      EXPECT_TRUE(slurp(out) == expected) << input.filename() << " " << extra << ", " << np << " ranks";
      errs += r.err;
    }
    return errs;
  }
  // One set per line: empty sets (blank lines), repeated ids, comments, tabs, commas, CRLF on
  // some lines, lines of very uneven length, no newline after the last line.
  fs::path write_sets() {
    std::mt19937 rng(3);
    std::ofstream out(dir / "sets.txt", std::ios::binary);
    out << "# one set per line\n";
    for (int i = 0; i < 3000; ++i) {
      const int n = rng() % 9 == 0 ? 0 : static_cast<int>(rng() % (rng() % 10 == 0 ? 200 : 12));
      for (int j = 0; j < n; ++j) out << (j == 0 ? "" : rng() % 4 == 0 ? "\t" : rng() % 3 == 0 ? ", " : " ") << rng() % 600;
      if (rng() % 50 == 0) out << "\n# between sets";
      out << (i + 1 == 3000 ? "" : i % 4 == 0 ? "\r\n" : "\n");
    }
    return dir / "sets.txt";
  }
  // A SNAP edge list: comment lines ('#' and '%'), blank lines, duplicate edges, self-loops,
  // tabs, spaces and commas, CRLF on some lines, no newline after the last line; three nodes
  // with 400 consecutive edge lines around a third, a half and two thirds of the file, so that
  // the byte splits of 2 and 3 ranks fall inside one node's edges (checked).
  fs::path write_graph() {
    std::mt19937 rng(9);
    std::string text = "# Directed graph (each unordered pair of nodes is saved once): test.txt\r\n"
                       "# Nodes: 3000 Edges: 9000\n# FromNodeId\tToNodeId\n";
    std::vector<std::pair<std::size_t, std::size_t>> hubs;  // byte ranges of the hubs' lines
    const int lines = 9000;
    std::vector<std::pair<unsigned, unsigned>> seen;
    for (int i = 0; i < lines; ++i) {
      const int hub = i >= 2800 && i < 3200 ? 1 : i >= 4300 && i < 4700 ? 2 : i >= 5800 && i < 6200 ? 3 : 0;
      if (hub && (i == 2800 || i == 4300 || i == 5800)) hubs.emplace_back(text.size(), 0);
      unsigned u = hub ? 700u * static_cast<unsigned>(hub) + 7 : static_cast<unsigned>(rng() % 2500);
      unsigned v = static_cast<unsigned>(rng() % 3000);
      if (rng() % 40 == 0) v = u;                                          // a self-loop
      if (!seen.empty() && rng() % 30 == 0) std::tie(u, v) = seen[rng() % seen.size()];  // a duplicate
      seen.emplace_back(u, v);
      const char* sep = rng() % 3 == 0 ? "\t" : rng() % 2 == 0 ? " " : ",";
      text += std::to_string(u) + sep + std::to_string(v);
      if (rng() % 200 == 0) text += rng() % 2 ? "\n\n% a comment" : "\n   ";
      if (i + 1 < lines) text += i % 3 == 0 ? "\r\n" : "\n";
      if (hub && (i == 3199 || i == 4699 || i == 6199)) hubs.back().second = text.size();
    }
    text += "";
    std::ofstream(dir / "graph.txt", std::ios::binary) << text;
    const std::size_t S = text.size();
    for (const std::size_t at : {S / 3, S / 2, 2 * S / 3})
      EXPECT_TRUE(std::any_of(hubs.begin(), hubs.end(), [&](const auto& h) { return h.first < at && at < h.second; }))
          << "no hub's lines around byte " << at;
    return dir / "graph.txt";
  }
};

TEST_F(MpiSets, SetFilesSplitByBytesGiveTheSketchOfOneProcess) {
  const fs::path sets = write_sets();
  expect_same(sets, "--epsilon 1");
  expect_same(sets, "--no-privacy --kernel jaccard_classic");
  // Gzip: rank 0 reads every set; the others contribute zeros.
  ASSERT_EQ(std::system(("gzip -kf " + sets.string()).c_str()), 0);
  const std::string err = expect_same(fs::path(sets.string() + ".gz"), "--epsilon 1", {2}, /*loud=*/true);
  EXPECT_NE(err.find("gzip-compressed and cannot be split: rank 0 reads it all"), std::string::npos) << err;
  // More ranks than lines: the ranks whose share holds no line add zeros.
  std::ofstream(dir / "few.txt", std::ios::binary) << "1 2 3\r\n\n4";
  expect_same(dir / "few.txt", "--epsilon 1", {3});
}

TEST_F(MpiSets, EdgeListsAreExchangedByNodeAndGiveTheSketchOfOneProcess) {
  const fs::path graph = write_graph();
  const std::string err = expect_same(graph, "--format edgelist --epsilon 1", {1, 2, 3}, /*loud=*/true);
  EXPECT_EQ(err.find("cannot be split"), std::string::npos) << err;
  EXPECT_NE(err.find("graph: 3000 nodes"), std::string::npos) << err;
  expect_same(graph, "--format edgelist --undirected --epsilon 1");
  expect_same(graph, "--format edgelist --drop-self-loops --nodes 3500 --no-privacy");
  expect_same(graph, "--format edgelist --undirected --drop-self-loops --kernel jaccard_classic --epsilon 0.5", {3});
  // A private file's graph record holds the options only: the statistics (nodes, edge lines,
  // duplicates, self-loops, ...) are exact and go to the summary line.
  ASSERT_EQ(std::system((kCli + " info " + (dir / "np3.rsk").string() + " > " + (dir / "info.txt").string()).c_str()), 0);
  const std::string info = slurp(dir / "info.txt");
  EXPECT_EQ(info.find("\"edge_lines\""), std::string::npos) << info;
  EXPECT_NE(info.find("\"symmetrised\": true"), std::string::npos) << info;
  // Gzip: rank 0 reads every edge line; the sets are still built and sketched on the nodes' ranks.
  ASSERT_EQ(std::system(("gzip -kf " + graph.string()).c_str()), 0);
  const std::string gz = expect_same(fs::path(graph.string() + ".gz"), "--format edgelist --epsilon 1", {2, 3}, /*loud=*/true);
  EXPECT_NE(gz.find("gzip-compressed and cannot be split: rank 0 reads it all"), std::string::npos) << gz;
  // More ranks than edge lines.
  std::ofstream(dir / "tiny.txt", std::ios::binary) << "# two edges\n0 1\r\n1\t2";
  expect_same(dir / "tiny.txt", "--format edgelist --epsilon 1", {3});
}

TEST_F(MpiSets, BadSetsAndEdgeListsFailOnEveryRankNamingFileAndLine) {
  const auto near_end = [&](const fs::path& from, const std::string& name, const std::string& bad, std::size_t& line) {
    std::string text = slurp(from);
    const std::size_t at = text.rfind('\n', text.size() - 300);
    text.insert(at + 1, bad + "\n");
    line = static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at) + 1, '\n')) + 1;
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  };
  std::size_t line = 0;
  // A malformed edge line in the last rank's share.
  const fs::path bad_graph = near_end(write_graph(), "bad_graph.txt", "12 abc", line);
  RunResult r = shell(mpirun(3) + kCli + set_args(bad_graph, "--format edgelist --epsilon 1") + " -o " + (dir / "g.rsk").string(), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rank 2: error: " + bad_graph.string() + ":" + std::to_string(line) +
                       ": expected a node id (a non-negative integer) in field 2, found 'abc'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a rank failed; no output written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "g.rsk"));
  // A malformed set in the last rank's share.
  const fs::path bad_sets = near_end(write_sets(), "bad_sets.txt", "1 x 3", line);
  r = shell(mpirun(3) + kCli + set_args(bad_sets, "--epsilon 1") + " -o " + (dir / "s.rsk").string(), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rank 2: error: " + bad_sets.string() + ":" + std::to_string(line) +
                       ": column 2: expected an element id (an integer 0..4294967295), found 'x'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "s.rsk"));
  // An id beyond --nodes, on rank 0's share.
  r = shell(mpirun(2) + kCli + set_args(bad_graph, "--format edgelist --nodes 100 --epsilon 1") + " -o " + (dir / "n.rsk").string(), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rank 0: error: " + bad_graph.string() + ":4: node id "), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "n.rsk"));
  // No edges at all, no sets at all: one message, from the first rank.
  std::ofstream(dir / "empty.txt", std::ios::binary) << "# nothing\n\n% here\n";
  r = shell(mpirun(3) + kCli + set_args(dir / "empty.txt", "--format edgelist --epsilon 1") + " -o " + (dir / "e.rsk").string(), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rank 0: error: " + (dir / "empty.txt").string() + ": empty graph (no edges)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("rank 1:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "e.rsk"));
  std::ofstream(dir / "nosets.txt", std::ios::binary) << "# only a comment\n";
  r = shell(mpirun(2) + kCli + set_args(dir / "nosets.txt", "--epsilon 1") + " -o " + (dir / "ns.rsk").string(), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rank 0: error: " + (dir / "nosets.txt").string() + ": no sets"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "ns.rsk"));
  r = shell(mpirun(2) + kCli + set_args(dir / "missing.txt", "--format edgelist --epsilon 1") + " -o " + (dir / "m.rsk").string(), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot open '" + (dir / "missing.txt").string() + "'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "m.rsk"));
}
#else
TEST(Mpi, NotBuilt) { GTEST_SKIP() << "configure with -DPRIVRACE_MPI=ON to run `mpirun -np K privrace sketch`"; }
#endif

// The byte-range reader under every split (built without MPI too): shares [k S / K, (k + 1) S / K)
// read every record exactly once, in order, whatever the byte the split falls on.
namespace {
std::vector<float> read_all(const std::string& path, privrace::TableOptions opts, std::uint64_t* counted = nullptr) {
  if (counted != nullptr) *counted = privrace::TableReader(path, opts).count_remaining();
  privrace::TableReader reader(path, opts);
  privrace::DenseMatrix chunk;
  std::vector<float> out;
  while (const std::size_t n = reader.next_chunk(chunk, 3)) out.insert(out.end(), chunk.data(), chunk.data() + n * chunk.cols());
  return out;
}
}  // namespace

TEST(TableShares, EverySplitReadsEveryRecordOnce) {
  const fs::path dir = privrace::testing::temp_dir("shares");
  // A BOM, comments and blank lines before the header, CRLF, lone CR and LF line ends, padded
  // fields, a blank line at a split, a last line without a newline.
  const std::string text =
      "\xEF\xBB\xBF# comment\r\n\nx,y\r\n1,2\r\n 3.5 , -4\n\n5,6\r7,8e1\r\n# c\n9,10\n11,12\r\n\r\n13,14";
  std::ofstream(dir / "t.csv", std::ios::binary) << text;
  const std::string path = (dir / "t.csv").string();
  privrace::TableReader whole(path);
  const privrace::TableLayout layout = whole.layout();
  ASSERT_TRUE(layout.splittable) << layout.why_not;
  ASSERT_EQ(layout.fields, 2u);
  ASSERT_TRUE(layout.header_at.has_value());
  EXPECT_EQ(*layout.header_at, text.find("x,y"));
  EXPECT_EQ(layout.bytes, text.size());
  const std::vector<float> expected = read_all(path, {});
  ASSERT_EQ(expected.size(), 14u);
  for (std::uint64_t K = 1; K <= 4; ++K)
    for (std::uint64_t cut = 0; cut <= text.size(); ++cut) {
      // K shares; with K = 2 every byte is a split point, with more the shares end at `cut` and split the rest evenly.
      std::vector<std::uint64_t> ends;
      if (K == 1) ends = {text.size()};
      else {
        ends.push_back(cut);
        for (std::uint64_t k = 1; k < K; ++k) ends.push_back(cut + (text.size() - cut) * k / (K - 1));
      }
      std::vector<float> got;
      std::uint64_t begin = 0, counted_total = 0;
      for (const std::uint64_t end : ends) {
        privrace::TableOptions opts;
        opts.format = layout.format;
        opts.share = privrace::TableShare{begin, end, layout.fields, layout.header_at};
        std::uint64_t counted = 0;
        const std::vector<float> part = read_all(path, opts, &counted);
        EXPECT_EQ(counted * 2, part.size());
        counted_total += counted;
        got.insert(got.end(), part.begin(), part.end());
        begin = end;
      }
      EXPECT_EQ(got, expected) << K << " shares, first split at byte " << cut;
      EXPECT_EQ(counted_total, 7u);
      if (K == 1) break;
    }
  // A bad record in a later share is reported with its line in the whole file.
  std::ofstream(dir / "bad.csv", std::ios::binary) << "a,b\n1,2\n3,4\n5,x\n";
  privrace::TableOptions opts;
  opts.format = privrace::TableFormat::Csv;
  opts.share = privrace::TableShare{10, 20, 2, 0};
  privrace::TableReader share((dir / "bad.csv").string(), opts);
  privrace::DenseMatrix chunk;
  EXPECT_EQ(privrace::testing::message_of([&] { share.next_chunk(chunk, 10); }), (dir / "bad.csv").string() + ":4: column 2: expected a number, found 'x'");
  // A BOM before the first record: its bytes belong to the first line, whichever share a split gives them to.
  const std::string bom = "\xEF\xBB\xBF" "1,2\n3,4\n";
  std::ofstream(dir / "bom.csv", std::ios::binary) << bom;
  for (std::uint64_t cut = 0; cut <= bom.size(); ++cut) {
    std::vector<float> got;
    for (const auto& [b, e] : {std::pair<std::uint64_t, std::uint64_t>{0, cut}, {cut, bom.size()}}) {
      privrace::TableOptions o;
      o.format = privrace::TableFormat::Csv;
      o.share = privrace::TableShare{b, e, 2, std::nullopt};
      const std::vector<float> part = read_all((dir / "bom.csv").string(), o);
      got.insert(got.end(), part.begin(), part.end());
    }
    EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4})) << "split at byte " << cut;
  }
  // Gzip input cannot be split.
  ASSERT_EQ(std::system(("gzip -kf " + path).c_str()), 0);
  EXPECT_EQ(privrace::TableReader(path + ".gz").layout().why_not, "gzip-compressed");
  fs::remove_all(dir);
}

// The byte-share readers of sets and edge lines (built without MPI too): any two-way split of
// the bytes reads every line once, and the sets built from the pairs, whichever process reads
// them, are read_edge_list's.
TEST(SetShares, EverySplitReadsEverySetAndEdgeOnce) {
  const fs::path dir = privrace::testing::temp_dir("set_shares");
  const std::string sets_text = "\xEF\xBB\xBF" "1 2 2\r\n\n# c\r3,4\t5\n\n7\r\n 8 9";
  std::ofstream(dir / "s.txt", std::ios::binary) << sets_text;
  const std::string sets_path = (dir / "s.txt").string();
  const privrace::SetCollection whole = privrace::read_sets(sets_path);
  ASSERT_EQ(whole.size(), 6u);
  for (std::uint64_t cut = 0; cut <= sets_text.size(); ++cut) {
    privrace::SetCollection got = privrace::read_sets(sets_path, 0, cut);
    const privrace::SetCollection rest = privrace::read_sets(sets_path, cut, sets_text.size());
    for (std::size_t i = 0; i < rest.size(); ++i) got.push_back(rest.set(i));
    EXPECT_EQ(got.offsets, whole.offsets) << "split at byte " << cut;
    EXPECT_EQ(got.ids, whole.ids) << "split at byte " << cut;
  }
  const std::string graph_text = "\xEF\xBB\xBF# g\r\n0 1\r\n1\t1\n\n% c\r2,0\r\n0 1\n3 5\n5 3\r\n0 2";
  std::ofstream(dir / "g.txt", std::ios::binary) << graph_text;
  const std::string graph_path = (dir / "g.txt").string();
  for (const bool undirected : {false, true})
    for (const bool loops : {false, true}) {
      privrace::EdgeListOptions opts;
      opts.symmetrise = undirected;
      opts.keep_self_loops = loops;
      privrace::EdgeListReport expected;
      const privrace::SetCollection sets = privrace::read_edge_list(graph_path, opts, &expected);
      const std::vector<std::uint64_t> all = privrace::read_edge_lines(graph_path, opts).edges;
      ASSERT_EQ(all.size(), 7u);
      for (std::uint64_t cut = 0; cut <= graph_text.size(); ++cut) {
        std::vector<std::uint64_t> edges = privrace::read_edge_lines(graph_path, opts, std::pair{std::uint64_t{0}, cut}).edges;
        const privrace::EdgeLines rest = privrace::read_edge_lines(graph_path, opts, std::pair{cut, std::uint64_t{graph_text.size()}});
        edges.insert(edges.end(), rest.edges.begin(), rest.edges.end());
        ASSERT_EQ(edges, all) << "split at byte " << cut;
      }
      // Two owners (even and odd nodes), as two ranks would build them.
      std::vector<std::uint64_t> directed[2], reverse[2];
      for (const std::uint64_t e : all) {
        const auto u = static_cast<std::uint32_t>(e >> 32), v = static_cast<std::uint32_t>(e);
        if (u == v && !loops) continue;
        directed[u % 2].push_back(e);
        if (undirected && u != v) reverse[v % 2].push_back(privrace::pack_edge(v, u));
      }
      privrace::EdgeListReport report;
      for (int owner = 0; owner < 2; ++owner) {
        std::vector<std::uint32_t> nodes;
        const privrace::SetCollection part = privrace::pairs_to_sets(directed[owner], reverse[owner], report, &nodes);
        for (std::size_t i = 0; i < part.size(); ++i) {
          const auto s = part.set(i), t = sets.set(nodes[i]);
          EXPECT_EQ(std::vector<std::uint32_t>(s.begin(), s.end()), std::vector<std::uint32_t>(t.begin(), t.end()))
              << "node " << nodes[i] << (undirected ? ", undirected" : "") << (loops ? ", loops kept" : "");
        }
      }
      EXPECT_EQ(report.edges, expected.edges);
      EXPECT_EQ(report.duplicates, expected.duplicates);
      EXPECT_EQ(report.max_degree, expected.max_degree);
    }
  // A bad line in a later share names the line of the whole file.
  std::ofstream(dir / "bad.txt", std::ios::binary) << "0 1\n1 2\n2 x\n";
  EXPECT_EQ(privrace::testing::message_of([&] {
              privrace::read_edge_lines((dir / "bad.txt").string(), {}, std::pair{std::uint64_t{5}, std::uint64_t{12}});
            }),
            (dir / "bad.txt").string() + ":3: expected a node id (a non-negative integer) in field 2, found 'x'");
  std::ofstream(dir / "bad_sets.txt", std::ios::binary) << "0 1\n1 2\n2 x\n";
  EXPECT_EQ(privrace::testing::message_of([&] { privrace::read_sets((dir / "bad_sets.txt").string(), 5, 12); }),
            (dir / "bad_sets.txt").string() + ":3: column 2: expected an element id (an integer 0..4294967295), found 'x'");
  // Gzip cannot be split.
  ASSERT_EQ(std::system(("gzip -kf " + graph_path).c_str()), 0);
  EXPECT_EQ(privrace::text_file_layout(graph_path + ".gz").why_not, "gzip-compressed");
  EXPECT_TRUE(privrace::text_file_layout(graph_path).splittable);
  EXPECT_EQ(privrace::text_file_layout(graph_path).bytes, graph_text.size());
  fs::remove_all(dir);
}
