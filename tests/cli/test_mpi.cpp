// privrace-mpi under mpirun on this machine (-np 1, 2, 3 with --oversubscribe): the exact
// sketch equals the single-process one, the seeded release is byte-identical, and bad input
// (more ranks than records, an unreadable input, ranks that disagree, --threads < 0) fails on
// every rank with a message and no file. Skipped unless built with -DPRIVRACE_MPI=ON.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.hpp"

namespace fs = std::filesystem;

#ifdef PRIVRACE_MPI_DRIVER
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

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = privrace::testing::temp_dir("mpi");
    // 20,000 rows: with --chunk-rows 4096 every rank gets several chunks and a partial batch.
    const privrace::DenseMatrix x = privrace::testing::clustered_points(20000, 3, 31);
    std::ofstream csv(dir / "data.csv");
    csv << "a,b,c\n";
    for (Eigen::Index i = 0; i < x.rows(); ++i) csv << x(i, 0) << "," << x(i, 1) << "," << x(i, 2) << "\n";
    std::ofstream(dir / "two.csv") << "1,2,3\n4,5,6\n";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string args(const std::string& input, const std::string& out, const std::string& extra, int threads = 2,
                   int rows = 40) const {
    return " --input " + (dir / input).string() + " --rows " + std::to_string(rows) + " --width 3000 --bandwidth 2 --seed 9 --threads " +
           std::to_string(threads) + " --chunk-rows 4096 -q " + extra + " -o " + (dir / out).string();
  }
  fs::path dir;
};
}  // namespace

TEST_F(Mpi, ExactAndSeededSketchesAreByteIdenticalToOneProcess) {
  for (const std::string privacy : {"--no-privacy", "--epsilon 1"}) {
    const std::string tag = privacy == "--no-privacy" ? "exact" : "noisy";
    const RunResult single = shell(std::string(PRIVRACE_CLI) + " sketch" + args("data.csv", tag + ".rsk", privacy), dir);
    ASSERT_EQ(single.code, 0) << single.err;
    const std::string expected = slurp(dir / (tag + ".rsk"));
    for (const int np : {1, 2, 3}) {
      const std::string out = tag + std::to_string(np) + ".rsk";
      const RunResult r = shell(mpirun(np) + PRIVRACE_MPI_DRIVER + args("data.csv", out, privacy), dir);
      ASSERT_EQ(r.code, 0) << np << " ranks: " << r.err;
      EXPECT_TRUE(slurp(dir / out) == expected) << tag << ", " << np << " ranks";
    }
  }
}

TEST_F(Mpi, BadInputFailsOnEveryRankWithoutAFile) {
  RunResult r = shell(mpirun(3) + PRIVRACE_MPI_DRIVER + args("two.csv", "few.rsk", "--epsilon 1"), dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("2 records for 3 ranks"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "few.rsk"));
  r = shell(mpirun(2) + PRIVRACE_MPI_DRIVER + args("missing.csv", "missing.rsk", "--epsilon 1"), dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "missing.rsk"));
  // MPMD: the two ranks get different --rows.
  r = shell(mpirun(1) + PRIVRACE_MPI_DRIVER + args("data.csv", "mixed.rsk", "--epsilon 1") + " : -np 1 " + PRIVRACE_MPI_DRIVER +
                args("data.csv", "mixed.rsk", "--epsilon 1", 2, 41),
            dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("ranks disagree on their parameters"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "mixed.rsk"));
  r = shell(mpirun(2) + PRIVRACE_MPI_DRIVER + args("data.csv", "neg.rsk", "--epsilon 1", -1), dir);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--threads must be 0 (all) or positive"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "neg.rsk"));
}
#else
TEST(Mpi, NotBuilt) { GTEST_SKIP() << "configure with -DPRIVRACE_MPI=ON to build privrace-mpi and test it"; }
#endif
