// What a released file holds and how releases of several owners merge, through the `privrace`
// command: no exact field in a private header (tables, feature sketches, edge lists), the hash
// seed shared by --hash-seed and --like while the noise stays each owner's, merges that refuse
// shared noise and one file twice, the reader's check of the privacy record's meaning, and the
// warning on stderr (which -q does not silence) for seeded and non-private sketches.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "privrace/io/sketch_file.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using privrace::testing::CommandResult;

namespace {

class CliRelease : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string rows, half1, half2;
    privrace::SeededRandom rng(5);
    for (int i = 0; i < 3001; ++i) {
      const std::string line = std::to_string(rng.unit() * 4) + "," + std::to_string(rng.unit() * 4) + "\n";
      rows += line;
      (i < 1500 ? half1 : half2) += line;
    }
    privrace::testing::write(dir.path / "all.csv", rows);
    privrace::testing::write(dir.path / "less.csv", rows.substr(0, rows.rfind('\n', rows.size() - 2) + 1));
    privrace::testing::write(dir.path / "h1.csv", half1);
    privrace::testing::write(dir.path / "h2.csv", half2);
    privrace::testing::write(dir.path / "g.txt", "0 1\n0 2\n1 2\n2 3\n3 3\n3 4\n3 4\n");
  }
  CommandResult run(const std::string& args) const { return privrace::testing::run_command(std::string(PRIVRACE_CLI) + " " + args, dir.path); }
  nlohmann::json header(const std::string& name) const {
    return privrace::read_sketch_file((dir.path / name).string()).header;
  }
  privrace::testing::TempDir dir;
};

const std::string kL2 = " --kernel l2 --bandwidth 2 --rows 16 --width 32 ";

TEST_F(CliRelease, PrivateFilesHoldNoExactField) {
  for (const std::string& kernel : {kL2, std::string(" --kernel angular --rows 16 --width 32 "), std::string(" --kernel rff --features 20 "),
                                    std::string(" --kernel hist --bins 4 --domain 0:4 ")}) {
    ASSERT_EQ(run("sketch -i all.csv" + kernel + "--epsilon 1 -o a.rsk").code, 0) << kernel;
    const CommandResult r = run("sketch -i less.csv" + kernel + "--epsilon 1 -o b.rsk");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("sketched 3000 records"), std::string::npos) << "the owner's terminal has the count: " << r.err;
    for (const char* f : {"a.rsk", "b.rsk"}) {
      const nlohmann::json h = header(f);
      EXPECT_FALSE(h.at("build").contains("points")) << kernel << h.dump();
      EXPECT_FALSE(h.at("build").contains("input")) << kernel << h.dump();
      EXPECT_TRUE(h.at("privacy").at("fit_for_release").get<bool>());
    }
  }
  // Edge lists: the options stay, the statistics go to the summary line.
  const CommandResult g = run("sketch -i g.txt --format edgelist --undirected --kernel jaccard -R 8 -W 16 --epsilon 1 -o g.rsk");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.err.find("max degree"), std::string::npos) << g.err;
  const nlohmann::json gh = header("g.rsk");
  EXPECT_EQ(gh.at("graph"), (nlohmann::json{{"self_loops_kept", true}, {"symmetrised", true}})) << gh.dump();
  EXPECT_EQ(gh.at("privacy").at("neighbor_unit"), "undirected_edge");
  EXPECT_DOUBLE_EQ(gh.at("privacy").at("sensitivity_l1").get<double>(), 4 * 8);
  // Without noise, by request: the exact fields are there, and the file says it is not for release.
  ASSERT_EQ(run("sketch -i all.csv" + kL2 + "--no-privacy -q -o e.rsk").code, 0);
  const nlohmann::json eh = header("e.rsk");
  EXPECT_EQ(eh.at("build").at("points"), 3001);
  EXPECT_FALSE(eh.at("privacy").at("fit_for_release").get<bool>());
}

TEST_F(CliRelease, OwnersMergeWithOneHashSeedAndTheirOwnNoise) {
  ASSERT_EQ(run("sketch -i h1.csv" + kL2 + "--hash-seed 42 --epsilon 1 -q -o h1.rsk").code, 0);
  const CommandResult like = run("sketch -i h2.csv --like h1.rsk --epsilon 0.5 -q -o h2.rsk");
  ASSERT_EQ(like.code, 0) << like.err;
  const nlohmann::json a = header("h1.rsk"), b = header("h2.rsk");
  EXPECT_EQ(a.at("family"), b.at("family"));
  EXPECT_EQ(a.at("family").at("seed"), 42);
  EXPECT_NE(a.at("privacy").at("noise_id"), b.at("privacy").at("noise_id"));
  const CommandResult m = run("merge h1.rsk h2.rsk -o m.rsk");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(m.err, "") << "two released parts merge without a warning";
  const nlohmann::json p = header("m.rsk").at("privacy");
  EXPECT_TRUE(p.at("fit_for_release").get<bool>());
  EXPECT_DOUBLE_EQ(p.at("epsilon").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(p.at("epsilon_if_overlapping").get<double>(), 1.5);
  EXPECT_EQ(p.at("neighbors"), "add-remove");
  EXPECT_DOUBLE_EQ(p.at("noise_variance").get<double>(),
                   a.at("privacy").at("noise_variance").get<double>() + b.at("privacy").at("noise_variance").get<double>());
  // A parameters file works as well as a sketch; options that disagree with it are refused.
  privrace::testing::write(dir.path / "params.json", nlohmann::json{{"family", a.at("family")}, {"width", 32}}.dump());
  EXPECT_EQ(run("sketch -i h2.csv --like params.json --epsilon 1 -q -o h3.rsk").code, 0);
  EXPECT_EQ(header("h3.rsk").at("family"), a.at("family"));
  const CommandResult conflict = run("sketch -i h2.csv --like h1.rsk --rows 8 --epsilon 1 -q -o h4.rsk");
  EXPECT_EQ(conflict.code, 2);
  EXPECT_NE(conflict.err.find("--rows differs from the parameters of --like h1.rsk"), std::string::npos) << conflict.err;
  EXPECT_FALSE(fs::exists(dir.path / "h4.rsk"));
}

TEST_F(CliRelease, MergeRefusesSharedNoiseAndOneFileTwice) {
  ASSERT_EQ(run("sketch -i h1.csv" + kL2 + "--seed 11 --epsilon 1 -q -o s1.rsk").code, 0);
  ASSERT_EQ(run("sketch -i h2.csv" + kL2 + "--seed 11 --epsilon 1 -q -o s2.rsk").code, 0);
  const CommandResult same_seed = run("merge s1.rsk s2.rsk -o m.rsk");
  EXPECT_EQ(same_seed.code, 2);
  EXPECT_NE(same_seed.err.find("share their noise"), std::string::npos) << same_seed.err;
  EXPECT_FALSE(fs::exists(dir.path / "m.rsk"));
  ASSERT_EQ(run("sketch -i h1.csv" + kL2 + "--epsilon 1 -q -o r.rsk").code, 0);
  const CommandResult twice = run("merge r.rsk ./r.rsk -o m.rsk");
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.err.find("same file as an earlier input"), std::string::npos) << twice.err;
  fs::copy_file(dir.path / "r.rsk", dir.path / "copy.rsk");
  const CommandResult copy = run("merge r.rsk copy.rsk -o m.rsk");
  EXPECT_EQ(copy.code, 2);
  EXPECT_NE(copy.err.find("share their noise"), std::string::npos) << copy.err;
  EXPECT_FALSE(fs::exists(dir.path / "m.rsk"));
  // Seeded noise and the hash seed separately: reproducible halves that merge (not for release).
  ASSERT_EQ(run("sketch -i h1.csv" + kL2 + "--seed 11 --hash-seed 3 --epsilon 1 -q -o t1.rsk").code, 0);
  ASSERT_EQ(run("sketch -i h2.csv" + kL2 + "--seed 12 --hash-seed 3 --epsilon 1 -q -o t2.rsk").code, 0);
  const CommandResult seeded = run("merge t1.rsk t2.rsk -o t.rsk");
  EXPECT_EQ(seeded.code, 0) << seeded.err;
  EXPECT_FALSE(header("t.rsk").at("privacy").at("fit_for_release").get<bool>());
}

TEST_F(CliRelease, NotForReleaseSketchesWarnWhateverQuietSays) {
  ASSERT_EQ(run("sketch -i all.csv" + kL2 + "--seed 1 --epsilon 1 -q -o s.rsk").code, 0);
  ASSERT_EQ(run("sketch -i all.csv" + kL2 + "--no-privacy -q -o e.rsk").code, 0);
  ASSERT_EQ(run("sketch -i all.csv" + kL2 + "--epsilon 1 -q -o r.rsk").code, 0);
  privrace::testing::write(dir.path / "q.csv", "1,1\n2,2\n");
  for (const char* f : {"s.rsk", "e.rsk"}) {
    const CommandResult q = run(std::string("query ") + f + " --queries q.csv");
    EXPECT_EQ(q.code, 0);
    EXPECT_NE(q.err.find("NOT fit for release"), std::string::npos) << f << ": " << q.err;
    EXPECT_NE(run(std::string("info ") + f).err.find("NOT fit for release"), std::string::npos) << f;
  }
  EXPECT_EQ(run("query r.rsk --queries q.csv").err, "");
  ASSERT_EQ(run("sketch -i all.csv --kernel rff --features 20 --seed 2 --epsilon 1 -q -o f.rsk").code, 0);
  EXPECT_NE(run("m2m f.rsk --task mean --domain 0:4").err.find("NOT fit for release"), std::string::npos);
}

TEST_F(CliRelease, ReaderRefusesAMeaninglessPrivacyRecord) {
  ASSERT_EQ(run("sketch -i all.csv" + kL2 + "--no-privacy -q -o e.rsk").code, 0);
  privrace::SketchFileContents c = privrace::read_sketch_file((dir.path / "e.rsk").string());
  c.header["privacy"]["private"] = true;  // exact counts claimed private
  privrace::write_sketch_file((dir.path / "claims.rsk").string(), c);
  for (const char* cmd : {"query claims.rsk --queries all.csv", "info claims.rsk", "merge claims.rsk e.rsk -o m.rsk"}) {
    const CommandResult r = run(cmd);
    EXPECT_EQ(r.code, 1) << cmd;
    EXPECT_NE(r.err.find("header field 'privacy.epsilon' is missing"), std::string::npos) << cmd << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(dir.path / "m.rsk"));
}

}  // namespace
