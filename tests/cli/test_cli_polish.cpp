// The command's polish: "did you mean" for mistyped options and names, usage messages for a
// missing positional sketch, honest summary lines for feature sketches, readable defaults in
// --help, `info --counts` writing one format on standard output (the header on stderr), and a
// progress line drawn only on a terminal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

using CliRun = privrace::testing::CommandResult;

class CliPolish : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = privrace::testing::temp_dir("cli_polish");
    std::ofstream data(dir / "data.csv");
    for (int i = 0; i < 400; ++i) data << 0.001 * i << "," << 0.4 - 0.0005 * i << "," << (i % 10) * 0.1 << "\n";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
  CliRun cli(const std::string& args) const { return privrace::testing::run_command(std::string(PRIVRACE_CLI) + " " + args, dir); }
  std::string l2(const std::string& out, const std::string& extra = "") const {
    return "sketch --input " + p("data.csv") + " --rows 5 --width 8 --seed 3 -e 1 -t 1 -o " + p(out) + " " + extra;
  }
  fs::path dir;
};

// Before: "unrecognised option '--kernal'" and "unknown kernel 'l22' (expected ...)", no hint.
TEST_F(CliPolish, DidYouMean) {
  CliRun r = cli(l2("a.rsk", "--kernal l2"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unrecognised option '--kernal' (did you mean '--kernel'?)"), std::string::npos) << r.err;
  r = cli(l2("a.rsk", "--kernel l22"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown kernel 'l22' (did you mean 'l2'?)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected l2, angular"), std::string::npos) << r.err;  // the list stays
  r = cli(l2("a.rsk", "--mechanism floored_laplce"));
  EXPECT_NE(r.err.find("(did you mean 'floored_laplace'?)"), std::string::npos) << r.err;
  r = cli(l2("a.rsk", "--format csvv"));
  EXPECT_NE(r.err.find("(did you mean 'csv'?)"), std::string::npos) << r.err;
  r = cli(l2("a.rsk", "--neighbors replce"));
  EXPECT_NE(r.err.find("(did you mean 'replace'?)"), std::string::npos) << r.err;
  r = cli(l2("a.rsk", "--widht 8"));  // a swap of neighbours is one slip
  EXPECT_NE(r.err.find("unrecognised option '--widht' (did you mean '--width'?)"), std::string::npos) << r.err;
  r = cli(l2("a.rsk", "--kernel jacard"));
  EXPECT_NE(r.err.find("(did you mean 'jaccard'?)"), std::string::npos) << r.err;
  r = cli(l2("a.rsk", "--kernel zzzzz"));  // nothing close: the list alone
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "a.rsk"));
  ASSERT_EQ(cli(l2("a.rsk", "-q")).code, 0);
  r = cli("query " + p("a.rsk") + " --queries " + p("data.csv") + " --estimator meen");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown estimator 'meen' (did you mean 'mean'?)"), std::string::npos) << r.err;
  r = cli("query " + p("a.rsk") + " --querys " + p("data.csv"));
  EXPECT_NE(r.err.find("(did you mean '--queries'?)"), std::string::npos) << r.err;
  r = cli("m2m " + p("a.rsk") + " --task meen");
  EXPECT_NE(r.err.find("(did you mean 'mean'?)"), std::string::npos) << r.err;
}

// Before: "the option '--sketch' is required but missing" (the sketch is positional).
TEST_F(CliPolish, MissingPositionalSketch) {
  CliRun r = cli("info");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "privrace info: a sketch file is required (usage: privrace info SKETCH.rsk [--counts])\n");
  r = cli("query --queries " + p("data.csv"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("privrace query: a sketch file is required (usage: privrace query SKETCH.rsk --queries FILE"), std::string::npos)
      << r.err;
  r = cli("query");  // the sketch is named first, before the missing --queries
  EXPECT_NE(r.err.find("a sketch file is required"), std::string::npos) << r.err;
  r = cli("m2m --task mean");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("privrace m2m: a sketch file is required (usage: privrace m2m SKETCH --task"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("'--sketch'"), std::string::npos) << r.err;
}

// Before: "hist, R=0, W=32" and "rff, R=2, W=100".
TEST_F(CliPolish, FeatureSketchSummaryLines) {
  CliRun r = cli("sketch --input " + p("data.csv") + " --kernel hist --bins 32 --domain 0:1 -e 1 -o " + p("h.rsk"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("sketched 400 records (hist, 3 attributes x 32 bins)"), std::string::npos) << r.err;
  r = cli("sketch --input " + p("data.csv") + " --kernel rff --features 200 -e 1 -o " + p("r.rsk"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("(rff, 200 features (100 cos + 100 sin sums))"), std::string::npos) << r.err;
  r = cli(l2("l.rsk"));
  EXPECT_NE(r.err.find("(l2, R=5, W=8)"), std::string::npos) << r.err;  // LSH sketches keep R and W
}

// Before: "--num-share arg (=0.97999999999999998)".
TEST_F(CliPolish, ReadableDefaultsInHelp) {
  const CliRun r = cli("sketch --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("(=0.98)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0.9799999"), std::string::npos) << r.out;
}

// Before: the header and the counts both on stdout, JSON then CSV.
TEST_F(CliPolish, InfoCountsWritesOnlyCsvOnStdout) {
  ASSERT_EQ(cli(l2("a.rsk", "-q")).code, 0);
  const CliRun header = cli("info " + p("a.rsk"));
  ASSERT_EQ(header.code, 0) << header.err;
  EXPECT_EQ(nlohmann::json::parse(header.out)["family"]["rows"].get<int>(), 5);
  const CliRun counts = cli("info " + p("a.rsk") + " --counts");
  ASSERT_EQ(counts.code, 0) << counts.err;
  EXPECT_EQ(std::count(counts.out.begin(), counts.out.end(), '\n'), 5);  // R lines of W integers
  EXPECT_EQ(counts.out.find('{'), std::string::npos) << counts.out;
  EXPECT_NE(counts.err.find(header.out), std::string::npos) << counts.err;  // the header, on stderr
  const CliRun help = cli("info --help");
  EXPECT_NE(help.out.find("header on standard error"), std::string::npos) << help.out;
}

// Not a terminal (a pipe, a file): the summary line alone; -q: nothing.
TEST_F(CliPolish, NoProgressLineWithoutTerminal) {
  CliRun r = cli(l2("a.rsk"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("privrace: sketched 400 records", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  EXPECT_EQ(r.err.find("rows read"), std::string::npos);
  r = cli(l2("b.rsk", "-q"));
  EXPECT_EQ(r.err, "");
}

// On a terminal (script(1) gives the command one): the progress line, erased before the summary.
// Before: no progress line.
TEST_F(CliPolish, ProgressLineOnTerminal) {
  if (std::system("command -v script > /dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string run = std::string(PRIVRACE_CLI) + " " + l2("t.rsk");
  CliRun r = privrace::testing::run_command("script -qc '" + run + "' /dev/null", dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("privrace: sketch: 400 rows read ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rows/s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\r\033[Kprivrace: sketched 400 records"), std::string::npos) << r.out;  // a clean line
  r = privrace::testing::run_command("script -qc '" + run + " -q' /dev/null", dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("rows read"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sketched"), std::string::npos) << r.out;
}

}  // namespace
