// Count options on the command lines: thread counts are bounded (kMaxThreads; 100000 threads
// crashed the process), negative values of size options are refused instead of wrapping around
// to 2^64 - 5, and feature maps too large for memory are refused before anything is allocated.
// Each refusal is a usage error (exit 2) naming the option and its range, or for memory a
// resource error (exit 1) naming the estimate, and leaves no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "privrace/core/limits.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

// A signal (the former SIGSEGV of --threads 100000) reads as exit code -1.
using CliRun = privrace::testing::CommandResult;

class CliOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = privrace::testing::temp_dir("cli_options");
    std::ofstream(dir / "data.csv") << "x,y\n1,2\n1.5,2.5\n3,1\n0.5,0.5\n2,2\n";
    std::ofstream(dir / "q.csv") << "1,2\n3,1\n";
    // 20 attributes: an rff map of 10^9 frequencies over them is 240 GB.
    std::ofstream wide(dir / "wide.csv");
    for (int i = 0; i < 5; ++i) {
      for (int k = 0; k < 20; ++k) wide << (k ? "," : "") << 0.05 * (i + k);
      wide << "\n";
    }
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
  CliRun cli(const std::string& args, const std::string& prefix = "") const {
    // Through /bin/sh, so that `ulimit` can precede the command.
    return privrace::testing::run_command("(" + prefix + std::string(PRIVRACE_CLI) + " " + args + ")", dir);
  }
  std::string sketch(const std::string& extra, const std::string& out = "o.rsk") const {
    return "sketch --input " + p("data.csv") + " --bandwidth 2 --epsilon 1 --seed 7 -q -o " + p(out) + " " + extra;
  }
  // Exit `code`, `fragment` on stderr, nothing on stdout, and no `output` file.
  void expect_refused(const CliRun& r, int code, const std::string& fragment, const std::string& output = "o.rsk") const {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr was: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(p(output))) << "a refused run left " << output;
  }
  fs::path dir;
};

TEST_F(CliOptions, ThreadsAreBoundedInEveryCommand) {
  const std::string bound = "--threads must be at most " + std::to_string(privrace::kMaxThreads);
  expect_refused(cli(sketch("--rows 5 --width 8 --threads 100000")), 2, bound);
  expect_refused(cli(sketch("--rows 5 --width 8 -t 1025")), 2, bound);
  ASSERT_EQ(cli(sketch("--rows 5 --width 8", "s.rsk")).code, 0);
  expect_refused(cli("query " + p("s.rsk") + " --queries " + p("q.csv") + " --threads 100000"), 2, bound);
  ASSERT_EQ(cli(sketch("--kernel rff --features 8 --sigma 1", "f.rsk")).code, 0);
  expect_refused(cli("m2m " + p("f.rsk") + " --task mean --domain 0:4 --samples 1000 --threads 100000"), 2, bound);
  // Not an integer, or negative: named too.
  expect_refused(cli(sketch("--rows 5 --width 8 --threads many")), 2, "--threads must be an integer in 0..1024, got 'many'");
  expect_refused(cli(sketch("--rows 5 --width 8 --threads -1")), 2, "--threads must be 0 (all) or positive, got -1");
}

TEST_F(CliOptions, BoundaryThreadCountsStillWork) {
  const std::string max = std::to_string(privrace::kMaxThreads);
  const CliRun s = cli(sketch("--rows 5 --width 8 --threads " + max, "s.rsk"));
  ASSERT_EQ(s.code, 0) << s.err;
  const CliRun q = cli("query " + p("s.rsk") + " --queries " + p("q.csv") + " --threads " + max);
  EXPECT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.out, cli("query " + p("s.rsk") + " --queries " + p("q.csv") + " --threads 1").out);
  ASSERT_EQ(cli(sketch("--kernel rff --features 8 --sigma 1", "f.rsk")).code, 0);
  const CliRun m = cli("m2m " + p("f.rsk") + " --task mean --domain 0:4 --samples 1000 --threads 0");
  EXPECT_EQ(m.code, 0) << m.err;
}

TEST_F(CliOptions, NegativeCountsAreRefusedNotWrapped) {
  expect_refused(cli(sketch("-R -5 -W 8")), 2, "--rows must be an integer in 1..4294967296, got '-5'");
  expect_refused(cli(sketch("--rows 5 -W -1")), 2, "--width must be an integer in 1..4294967296, got '-1'");
  expect_refused(cli(sketch("--rows 5 --width 8 --power -1")), 2, "--power must be an integer in 1..64, got '-1'");
  expect_refused(cli(sketch("--rows 5 --width 8 --chunk-rows -1")), 2, "--chunk-rows must be an integer in 1..");
  expect_refused(cli(sketch("--rows 5 --width 8 --label-column -2")), 2, "--label-column must be an integer in 0..");
  expect_refused(cli(sketch("--rows 5 --width 8 --dim -3")), 2, "--dim must be an integer in 0..");
  expect_refused(cli(sketch("--kernel rff --features -8 --sigma 1")), 2, "--features must be an integer in 0..");
  expect_refused(cli(sketch("--kernel hist --bins -4 --domain 0:4")), 2, "--bins must be an integer in 0..");
  expect_refused(cli(sketch("--rows 5x --width 8")), 2, "--rows must be an integer in 1..4294967296, got '5x'");
  ASSERT_EQ(cli(sketch("--rows 5 --width 8", "s.rsk")).code, 0);
  const std::string query = "query " + p("s.rsk") + " --queries " + p("q.csv") + " --estimator mom";
  const CliRun mom = cli(query + " --mom-groups -1");
  EXPECT_EQ(mom.code, 2) << mom.err;
  EXPECT_NE(mom.err.find("--mom-groups must be an integer in 1..4294967296, got '-1'"), std::string::npos) << mom.err;
  EXPECT_TRUE(mom.out.empty()) << mom.out;
  ASSERT_EQ(cli(sketch("--kernel rff --features 8 --sigma 1", "f.rsk")).code, 0);
  const CliRun samples = cli("m2m " + p("f.rsk") + " --task mean --domain 0:4 --samples -1");
  EXPECT_EQ(samples.code, 2) << samples.err;
  EXPECT_NE(samples.err.find("--samples must be an integer in 1.."), std::string::npos) << samples.err;
  EXPECT_TRUE(samples.out.empty()) << samples.out;
}

TEST_F(CliOptions, BoundaryCountsStillWork) {
  // The smallest valid values: one row, one column, one hash, a one-row chunk, one MoM group.
  const CliRun s = cli(sketch("-R 1 -W 1 --power 1 --chunk-rows 1", "s.rsk"));
  ASSERT_EQ(s.code, 0) << s.err;
  const CliRun q = cli("query " + p("s.rsk") + " --queries " + p("q.csv") + " --estimator mom --mom-groups 1");
  EXPECT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(cli(sketch("-R 2 -W 4 --power 64", "p.rsk")).code, 0);
  expect_refused(cli(sketch("-R 2 -W 4 --power 65")), 2, "--power must be an integer in 1..64, got '65'");
}

// 2 x 10^9 features: the frequency matrix (10^9 x 20 doubles and floats) is refused before it
// is allocated. Under a 2 GB address-space limit an attempt to allocate it would fail with an
// allocation error instead of the refusal checked here.
TEST_F(CliOptions, HugeFeatureMapsAreRefusedBeforeAllocating) {
  const std::string limit = "ulimit -v 2000000; ";
  const std::string args = "sketch --input " + p("wide.csv") + " --epsilon 1 --seed 7 -q -o " + p("o.rsk");
  const CliRun rff = cli(args + " --kernel rff --sigma 1 --features 2000000000", limit);
  expect_refused(rff, 1, "frequency matrix");
  EXPECT_NE(rff.err.find("refused before allocating"), std::string::npos) << rff.err;
  EXPECT_EQ(rff.err.find("bad_alloc"), std::string::npos) << rff.err;
  // hist: 4 x 10^9 bins for each of the 20 attributes.
  const CliRun hist = cli(args + " --kernel hist --domain 0:2 --bins 4000000000", limit);
  expect_refused(hist, 1, "MiB");
  EXPECT_EQ(hist.err.find("bad_alloc"), std::string::npos) << hist.err;
  // l2: R p x d projections of a 2^32-dimensional libsvm table.
  std::ofstream(dir / "data.svm") << "1 1:0.5 3:1\n0 2:1\n";
  const CliRun dim = cli("sketch --input " + p("data.svm") + " --format libsvm --dim 4294967296 --rows 1000 --width 8 --power 64 "
                      "--bandwidth 1 --epsilon 1 -q -o " + p("o.rsk"), limit);
  expect_refused(dim, 1, "MiB");
  EXPECT_EQ(dim.err.find("bad_alloc"), std::string::npos) << dim.err;
}

// --strategy and --pair-mode are parsed where they are read, before any input is opened: a bad
// name is a usage error (exit 2) naming the option's accepted values, even when the input is
// missing (not "cannot open").
TEST_F(CliOptions, BadStrategyOrPairModeIsAUsageErrorBeforeAnyFileIsOpened) {
  const std::string missing = p("missing.csv");
  const std::string base = "sketch --input " + missing + " --rows 5 --width 8 --epsilon 1 -q -o " + p("o.rsk") + " ";
  expect_refused(cli(base + "--strategy bogus"), 2, "--strategy must be one of auto, replicate, split_rows for the l2 kernel, got 'bogus'");
  expect_refused(cli(base + "--kernel jaccard --strategy bogus"), 2,
                 "--strategy must be one of auto, replicate, split_rows, two_phase for the jaccard kernel, got 'bogus'");
  expect_refused(cli(base + "--pair-mode bogus"), 2, "pair mode must be 'insert' or 'query', got 'bogus'");
  expect_refused(cli(base + "--kernel angular_pair --pair-mode bogus"), 2, "pair mode must be 'insert' or 'query', got 'bogus'");
  for (const std::string option : {"--strategy bogus", "--pair-mode bogus"})
    EXPECT_EQ(cli(base + option).err.find("cannot open"), std::string::npos) << option;
  // A known name gets as far as the input.
  const CliRun ok_name = cli(base + "--strategy replicate --pair-mode insert");
  EXPECT_EQ(ok_name.code, 1) << ok_name.err;
  EXPECT_NE(ok_name.err.find("cannot open"), std::string::npos) << ok_name.err;
}

}  // namespace
