// `privrace m2m` against what a sketch can tell: the domain a HIST sketch records is the default
// and the only one accepted; RFF and RACE sketches record none, so --domain is required for them;
// joint tasks (cov, counting queries over several attributes) on HIST's one-dimensional marginals
// are refused unless --allow-unsupported, which answers with a warning. A refusal exits 2 and
// prints nothing on stdout.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "privrace/core/random.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using privrace::testing::CommandResult;
using privrace::testing::run_command;

namespace {

class CliM2m : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(privrace::testing::temp_dir("cli_m2m"));
    {
      // 3 attributes uniform on [0, 255]: the mean of each is ~127.5.
      std::ofstream data(*dir_ / "data.csv");
      privrace::SeededRandom rng(21);
      for (int i = 0; i < 600; ++i) data << 255 * rng.unit() << "," << 255 * rng.unit() << "," << 255 * rng.unit() << "\n";
      std::ofstream(*dir_ / "joint.txt") << "0 <= 128; 1 >= 64; 2 <= 200\n";
      std::ofstream(*dir_ / "single.txt") << "1 <= 128\n2 >= 64\n";
    }
    for (const char* args : {"--kernel hist --bins 16 --domain 0:255 -o hist.rsk",
                                   "--kernel rff --features 40 --sigma 200 -o rff.rsk",
                                   "--kernel l2 --rows 20 --width 16 --bandwidth 100 -o race.rsk"}) {
      const CommandResult r = cli(std::string("sketch --input data.csv --no-privacy --seed 3 -q ") + args);
      ASSERT_EQ(r.code, 0) << args << ": " << r.err;
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static CommandResult cli(const std::string& args) { return run_command(std::string(PRIVRACE_CLI) + " " + args, *dir_); }
  static std::vector<double> numbers(const std::string& text) {
    std::istringstream in(text);
    std::vector<double> v;
    for (double x; in >> x;) v.push_back(x);
    return v;
  }
  static std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }
  static inline fs::path* dir_ = nullptr;
};

// The recorded domain is the default: without --domain, a HIST sketch built on [0, 255] answers
// on [0, 255] (means ~127.5), and --domain 0:255 gives the same bytes.
TEST_F(CliM2m, HistDomainDefaultsToTheRecordedOne) {
  const CommandResult r = cli("m2m hist.rsk --task mean --samples 20000");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<double> means = numbers(r.out);
  ASSERT_EQ(means.size(), 3u) << r.out;
  for (const double m : means) EXPECT_NEAR(m, 127.5, 12.0) << r.out;
  const CommandResult same = cli("m2m hist.rsk --task mean --samples 20000 --domain 0:255");
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out, r.out);
}

// Another domain is refused, naming the option's value and the recorded domain.
TEST_F(CliM2m, HistDomainMismatchIsRefused) {
  const CommandResult r = cli("m2m hist.rsk --task mean --samples 2000 --domain 0:100");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("--domain 0:100"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("0:255"), std::string::npos) << r.err;
}

// RFF and RACE sketches record no domain: --domain stays required, and the message says why.
TEST_F(CliM2m, DomainIsRequiredWhereTheSketchRecordsNone) {
  for (const char* sk : {"rff.rsk", "race.rsk"}) {
    const CommandResult r = cli(std::string("m2m ") + sk + " --task mean --samples 2000");
    EXPECT_EQ(r.code, 2) << sk;
    EXPECT_TRUE(r.out.empty()) << sk;
    EXPECT_NE(r.err.find("records no domain"), std::string::npos) << sk << ": " << r.err;
    EXPECT_NE(r.err.find("--domain LO:HI"), std::string::npos) << sk << ": " << r.err;
    const CommandResult ok = cli(std::string("m2m ") + sk + " --task mean --samples 2000 --domain 0:255");
    EXPECT_EQ(ok.code, 0) << sk << ": " << ok.err;
    EXPECT_EQ(lines(ok.out), 3u) << sk;
  }
}

// Joint tasks on HIST are refused with the reason and the overriding option; nothing is printed.
TEST_F(CliM2m, HistJointTasksAreRefused) {
  for (const char* args : {"--task cov", "--task count --queries joint.txt"}) {
    const CommandResult r = cli(std::string("m2m hist.rsk --samples 2000 ") + args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
    EXPECT_NE(r.err.find("cannot, by definition, be used to estimate correlations between attributes"), std::string::npos)
        << args << ": " << r.err;
    EXPECT_NE(r.err.find("--allow-unsupported"), std::string::npos) << args << ": " << r.err;
  }
}

// Marginal tasks stay allowed on HIST: one-attribute counting queries, cdf, moment2.
TEST_F(CliM2m, HistMarginalTasksAreAnswered) {
  const CommandResult count = cli("m2m hist.rsk --samples 20000 --task count --queries single.txt");
  ASSERT_EQ(count.code, 0) << count.err;
  EXPECT_EQ(count.err.find("allow-unsupported"), std::string::npos) << count.err;
  const std::vector<double> v = numbers(count.out);
  ASSERT_EQ(v.size(), 4u) << count.out;  // "fraction count" per query
  EXPECT_NEAR(v[0], 128.0 / 255, 0.08) << count.out;
  EXPECT_NEAR(v[2], 191.0 / 255, 0.08) << count.out;
  for (const char* task : {"cdf", "moment2"}) {
    const CommandResult r = cli(std::string("m2m hist.rsk --samples 2000 --task ") + task);
    EXPECT_EQ(r.code, 0) << task << ": " << r.err;
    EXPECT_FALSE(r.out.empty()) << task;
  }
}

// --allow-unsupported answers a joint task on HIST, with a warning on stderr. (The sketches here
// are exact, so every command also warns that they are not fit for release.)
TEST_F(CliM2m, AllowUnsupportedAnswersWithAWarning) {
  const CommandResult cov = cli("m2m hist.rsk --samples 2000 --task cov --allow-unsupported");
  ASSERT_EQ(cov.code, 0) << cov.err;
  EXPECT_EQ(lines(cov.out), 3u) << cov.out;
  EXPECT_NE(cov.err.find("warning: --allow-unsupported"), std::string::npos) << cov.err;
  EXPECT_NE(cov.err.find("one-dimensional marginals"), std::string::npos) << cov.err;
  const CommandResult count = cli("m2m hist.rsk --samples 2000 --task count --queries joint.txt --allow-unsupported");
  ASSERT_EQ(count.code, 0) << count.err;
  EXPECT_EQ(lines(count.out), 1u) << count.out;
  EXPECT_NE(count.err.find("warning: --allow-unsupported"), std::string::npos) << count.err;
  // A supported task prints no warning with the option.
  const CommandResult mean = cli("m2m hist.rsk --samples 2000 --task mean --allow-unsupported");
  EXPECT_EQ(mean.code, 0) << mean.err;
  EXPECT_EQ(mean.err.find("allow-unsupported"), std::string::npos) << mean.err;
}

// RFF and RACE features are functions of all attributes together: joint tasks are answered.
TEST_F(CliM2m, RffAndRaceAnswerJointTasks) {
  for (const char* sk : {"rff.rsk", "race.rsk"})
    for (const char* args : {"--task cov", "--task count --queries joint.txt"}) {
      const CommandResult r = cli(std::string("m2m ") + sk + " --samples 2000 --domain 0:255 " + args);
      EXPECT_EQ(r.code, 0) << sk << " " << args << ": " << r.err;
      EXPECT_EQ(r.err.find("allow-unsupported"), std::string::npos) << sk << " " << args << ": " << r.err;
      EXPECT_FALSE(r.out.empty()) << sk << " " << args;
    }
}

}  // namespace
