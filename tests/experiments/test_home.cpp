// Registry lookup (experiments/data/home.hpp): --repo, then PRIVRACE_HOME, then the checkout around the
// working directory, then the install's share/privrace next to the executable, then the
// checkout holding the executable, then the compiled-in source directory; and --version.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/core/version.hpp"
#include "data/home.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;

namespace {

void make_home(const fs::path& dir) {
  fs::create_directories(dir / "datasets");
  std::ofstream(dir / "datasets" / "registry.json") << "{}\n";
}

// Runs the test body in `dir` with PRIVRACE_HOME unset, restoring both afterwards.
struct Scene {
  fs::path root = privrace::testing::temp_dir("home");
  fs::path old_cwd = fs::current_path();
  std::string old_home;
  bool had_home = false;
  Scene() {
    if (const char* h = std::getenv("PRIVRACE_HOME")) had_home = true, old_home = h;
    ::unsetenv("PRIVRACE_HOME");
  }
  ~Scene() {
    fs::current_path(old_cwd);
    if (had_home) ::setenv("PRIVRACE_HOME", old_home.c_str(), 1);
    fs::remove_all(root);
  }
};

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[256];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  return out;
}

TEST(Home, OrderOfLookup) {
  Scene s;
  const fs::path checkout = s.root / "checkout", prefix = s.root / "prefix", env = s.root / "env";
  make_home(checkout);
  make_home(prefix / "share" / "privrace");
  make_home(env);
  fs::create_directories(checkout / "sub" / "dir");
  fs::create_directories(s.root / "nowhere");
  const std::string exe = (prefix / "bin" / "privrace-experiment").string();

  // The working directory's checkout beats the install.
  fs::current_path(checkout / "sub" / "dir");
  HomeLocation h = find_home("", exe, "");
  EXPECT_EQ(fs::canonical(h.root), fs::canonical(checkout));
  EXPECT_EQ(h.source, "checkout");

  // Outside any checkout: the install's share/privrace, not the compiled-in source path.
  fs::current_path(s.root / "nowhere");
  h = find_home("", exe, checkout.string());
  EXPECT_EQ(h.root, (prefix / "share" / "privrace").string());
  EXPECT_TRUE(h.installed());

  // No install either: the compiled-in source directory is the last resort.
  h = find_home("", (s.root / "nowhere" / "tool").string(), checkout.string());
  EXPECT_EQ(h.source, "build");

  // PRIVRACE_HOME beats the checkout and the install; --repo beats PRIVRACE_HOME.
  fs::current_path(checkout);
  ::setenv("PRIVRACE_HOME", env.c_str(), 1);
  EXPECT_EQ(find_home("", exe, "").source, "PRIVRACE_HOME");
  EXPECT_EQ(find_home(checkout.string(), exe, "").source, "--repo");
}

TEST(Home, ErrorsNameWhatWasTried) {
  Scene s;
  fs::create_directories(s.root / "nowhere");
  fs::current_path(s.root / "nowhere");
  try {
    find_home("", (s.root / "bin" / "tool").string(), (s.root / "gone").string());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot find datasets/registry.json"), std::string::npos) << what;
    EXPECT_NE(what.find((s.root / "share" / "privrace").string()), std::string::npos) << what;
    EXPECT_NE(what.find((s.root / "gone").string()), std::string::npos) << what;
    EXPECT_NE(what.find("PRIVRACE_HOME"), std::string::npos) << what;
  }
  EXPECT_THROW(find_home((s.root / "nowhere").string(), "", ""), UsageError);
  ::setenv("PRIVRACE_HOME", (s.root / "nowhere").c_str(), 1);
  try {
    find_home("", "", "");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("PRIVRACE_HOME='" + (s.root / "nowhere").string() + "'"), std::string::npos);
  }
}

TEST(Home, ExecutablePathIsThisTest) {
  const std::string exe = executable_path();
  ASSERT_FALSE(exe.empty());
  EXPECT_EQ(fs::path(exe).filename(), "test_home");
}

TEST(Version, EveryCommand) {
  const std::string expected = std::string(version()) + " (" + git_commit() + ")\n";
  EXPECT_EQ(run(std::string(PRIVRACE_CLI) + " --version"), "privrace " + expected);
  const fs::path experiment = fs::path(PRIVRACE_CLI).parent_path() / "privrace-experiment";
  ASSERT_TRUE(fs::exists(experiment)) << experiment;
  EXPECT_EQ(run(experiment.string() + " --version"), "privrace-experiment " + expected);
  const fs::path audit = fs::path(PRIVRACE_CLI).parent_path() / "privrace-audit";
  ASSERT_TRUE(fs::exists(audit)) << audit;
  EXPECT_EQ(run(audit.string() + " --version"), "privrace-audit " + expected);
}

}  // namespace
