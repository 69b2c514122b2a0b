// The commands' output files: a FIFO, a symbolic link or a device at -o is refused and left as
// it was; an output that is one of the command's inputs (by another name, or a hard link) is a
// usage error before anything is read, the input unchanged byte for byte; the written file's
// mode follows the umask or the file it replaces, and a sketch without noise is 0600.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {
struct CliResult {
  int code;
  std::string out, err;
};

class CliOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    write("data.csv", "x,y,label\n1,2,0\n1.5,2.5,1\n3,1,0\n0.5,0.5,1\n2,2,0\n");
    write("graph.txt", "0 1\n1 2\n2 0\n2 3\n");
  }
  // The command in the test's folder (relative paths are relative to it) under `umask`.
  CliResult run(const std::string& args, const std::string& umask = "022") const {
    const fs::path err_file = dir.path / ".stderr";
    const std::string cmd = "cd '" + dir.path.string() + "' && umask " + umask + " && " + PRIVRACE_CLI + " " + args +
                            " 2>'" + err_file.string() + "'";
    FILE* pipe = popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf{};
    while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, read(".stderr")};
  }
  static std::string sketch(const std::string& input, const std::string& output, const std::string& privacy = "--epsilon 1") {
    return "sketch -i " + input + " --label-column 3 --rows 20 --width 16 " + privacy + " --seed 3 -q -o " + output;
  }
  void write(const std::string& name, const std::string& bytes) const { std::ofstream(dir.path / name, std::ios::binary) << bytes; }
  std::string read(const std::string& name) const {
    std::ifstream in(dir.path / name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  mode_t mode(const std::string& name) const {
    struct stat st {};
    if (::stat((dir.path / name).c_str(), &st) != 0) return 07777;
    return st.st_mode & 07777;
  }
  mode_t type(const std::string& name) const {
    struct stat st {};
    if (::lstat((dir.path / name).c_str(), &st) != 0) return 0;
    return st.st_mode & S_IFMT;
  }
  void expect_refused(const CliResult& r, int code, const std::string& fragment) const {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr was: " << r.err;
  }
  privrace::testing::TempDir dir;
};
}  // namespace

TEST_F(CliOutput, OutputOntoAFifoOrASymbolicLinkIsRefusedAndLeftAsItWas) {
  ASSERT_EQ(::mkfifo((dir.path / "out.fifo").c_str(), 0644), 0);
  expect_refused(run(sketch("data.csv", "out.fifo")), 2, "'out.fifo' is a FIFO");
  EXPECT_EQ(type("out.fifo"), static_cast<mode_t>(S_IFIFO));

  ASSERT_EQ(run(sketch("data.csv", "real.rsk")).code, 0);
  const std::string real = read("real.rsk");
  fs::create_symlink("real.rsk", dir.path / "link.rsk");
  expect_refused(run(sketch("data.csv", "link.rsk")), 2, "'link.rsk' is a symbolic link");
  EXPECT_EQ(type("link.rsk"), static_cast<mode_t>(S_IFLNK));
  expect_refused(run("merge real.rsk real.rsk -o out.fifo"), 2, "'out.fifo' is a FIFO");
  EXPECT_EQ(type("out.fifo"), static_cast<mode_t>(S_IFIFO));
  expect_refused(run("merge real.rsk real.rsk -o link.rsk"), 2, "link.rsk");
  EXPECT_EQ(type("link.rsk"), static_cast<mode_t>(S_IFLNK));
  EXPECT_EQ(read("real.rsk"), real);
  // Only the test's own files are there: no temporary left.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  EXPECT_EQ(entries, 6u);  // data.csv, graph.txt, .stderr, out.fifo, real.rsk, link.rsk
}

// A character device is refused by its type (as root, a rename onto /dev/null would replace
// it): a node like /dev/null made in the test's folder, so that a writer that did not refuse
// it could replace only that.
TEST_F(CliOutput, OutputOntoADeviceIsRefused) {
  const fs::path node = dir.path / "null";
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) GTEST_SKIP() << "cannot make a device node here";
  struct stat before {};
  ASSERT_EQ(::lstat(node.c_str(), &before), 0);
  expect_refused(run(sketch("data.csv", "null")), 2, "'null' is a character device");
  struct stat after {};
  ASSERT_EQ(::lstat(node.c_str(), &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_ino, before.st_ino);
}

TEST_F(CliOutput, StandardOutputStillWorks) {
  const CliResult r = run(sketch("data.csv", "-"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 8), "PRIVRACE");
}

TEST_F(CliOutput, SketchOutputThatIsItsInputIsAUsageErrorAndTheInputIsUnchanged) {
  const std::string data = read("data.csv");
  expect_refused(run(sketch("data.csv", "data.csv")), 2, "the output 'data.csv' is the same file as the input 'data.csv'");
  expect_refused(run(sketch("data.csv", "./data.csv")), 2, "the output './data.csv' is the same file as the input 'data.csv'");
  expect_refused(run(sketch("./data.csv", (dir.path / "data.csv").string())), 2, "is the same file as the input './data.csv'");
  ASSERT_EQ(::link((dir.path / "data.csv").c_str(), (dir.path / "hard.csv").c_str()), 0);
  expect_refused(run(sketch("data.csv", "hard.csv")), 2, "the output 'hard.csv' is the same file as the input 'data.csv'");
  // Several inputs, named by a list: the second one is the output.
  write("more.csv", "x,y,label\n4,4,1\n");
  write("inputs.txt", "more.csv\ndata.csv\n");
  expect_refused(run(sketch("@inputs.txt", "data.csv")), 2, "is the same file as the input");
  EXPECT_EQ(read("data.csv"), data);
  // The graph cache is written too: it may not be the edge list it caches.
  const std::string graph = read("graph.txt");
  expect_refused(run("sketch -i graph.txt --format edgelist --kernel jaccard --rows 4 --width 8 --epsilon 1 -q "
                     "--graph-cache ./graph.txt -o g.rsk"),
                 2, "the output './graph.txt' is the same file as the input 'graph.txt'");
  EXPECT_EQ(read("graph.txt"), graph);
  EXPECT_FALSE(fs::exists(dir.path / "g.rsk"));
}

TEST_F(CliOutput, MergeOutputThatIsAnInputIsAUsageErrorAndTheInputIsUnchanged) {
  // Exact sketches of one seed: they merge (no noise to share), so only the output is refused.
  ASSERT_EQ(run(sketch("data.csv", "a.rsk", "--no-privacy")).code, 0);
  ASSERT_EQ(run(sketch("data.csv", "b.rsk", "--no-privacy")).code, 0);
  const std::string a = read("a.rsk"), b = read("b.rsk");
  expect_refused(run("merge a.rsk a.rsk --no-privacy -o a.rsk"), 2, "the output 'a.rsk' is the same file as the input 'a.rsk'");
  expect_refused(run("merge a.rsk b.rsk --no-privacy -o ./b.rsk"), 2, "the output './b.rsk' is the same file as the input 'b.rsk'");
  ASSERT_EQ(::link((dir.path / "a.rsk").c_str(), (dir.path / "hard.rsk").c_str()), 0);
  expect_refused(run("merge a.rsk b.rsk --no-privacy -o hard.rsk"), 2, "the output 'hard.rsk' is the same file as the input 'a.rsk'");
  EXPECT_EQ(read("a.rsk"), a);
  EXPECT_EQ(read("b.rsk"), b);
  const CliResult merged = run("merge a.rsk b.rsk --no-privacy -o c.rsk");  // a new output is fine
  EXPECT_EQ(merged.code, 0) << merged.err;
}

TEST_F(CliOutput, ModeFollowsTheUmaskOrTheReplacedFile) {
  ASSERT_EQ(run(sketch("data.csv", "u022.rsk"), "022").code, 0);
  EXPECT_EQ(mode("u022.rsk"), 0644u);
  ASSERT_EQ(run(sketch("data.csv", "u077.rsk"), "077").code, 0);
  EXPECT_EQ(mode("u077.rsk"), 0600u);
  // A replaced file keeps its mode under any umask.
  ASSERT_EQ(::chmod((dir.path / "u022.rsk").c_str(), 0640), 0);
  ASSERT_EQ(run(sketch("data.csv", "u022.rsk"), "077").code, 0);
  EXPECT_EQ(mode("u022.rsk"), 0640u);
  ASSERT_EQ(run(sketch("data.csv", "u022.rsk"), "000").code, 0);
  EXPECT_EQ(mode("u022.rsk"), 0640u);
}

TEST_F(CliOutput, SketchWithoutNoiseIsAlways0600) {
  ASSERT_EQ(run(sketch("data.csv", "exact.rsk", "--no-privacy"), "022").code, 0);
  EXPECT_EQ(mode("exact.rsk"), 0600u);
  ASSERT_EQ(run(sketch("data.csv", "exact.rsk", "--no-privacy"), "000").code, 0);
  EXPECT_EQ(mode("exact.rsk"), 0600u);
  // Replacing a readable file does not keep its mode, and a merge of exact sketches is exact.
  ASSERT_EQ(run(sketch("data.csv", "was_private.rsk"), "022").code, 0);
  ASSERT_EQ(::chmod((dir.path / "was_private.rsk").c_str(), 0644), 0);
  ASSERT_EQ(run(sketch("data.csv", "was_private.rsk", "--no-privacy"), "022").code, 0);
  EXPECT_EQ(mode("was_private.rsk"), 0600u);
  ASSERT_EQ(run("merge exact.rsk was_private.rsk --no-privacy -o merged.rsk", "022").code, 0);
  EXPECT_EQ(mode("merged.rsk"), 0600u);
}
