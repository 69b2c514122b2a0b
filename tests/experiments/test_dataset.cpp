// Data set registry, loaders, preprocessing, stand-ins, and the exact KDE ground truth.
// Every fixture is written by the test itself into a temporary directory.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "privrace/core/error.hpp"
#include "data/dataset.hpp"
#include "metrics.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/tasks/kde.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;
using nlohmann::json;

namespace {

using privrace::testing::TempDir;
using privrace::testing::write;
using privrace::testing::message_of;

void write_gz(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  gzFile f = gzopen(p.string().c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// A registry with one entry per loader path, pointing at fixtures under <dir>/data.
DatasetRegistry fixture_registry(const fs::path& dir) {
  const json reg = {
      {"schema", 1},
      {"datasets",
       {{"ws",
         {{"kind", "table"}, {"source_url", "test"}, {"format", "whitespace"}, {"header", false}, {"columns", 4},
          {"files", {{{"path", "ws/a.txt"}, {"sha256", nullptr}}}},
          {"features", {1, 2, 3}}, {"label", 4}, {"label_values", {1, 2}},
          {"bounds", {{0, 10}, {0, 10}, {0, 10}}}}},
        {"csvh",
         {{"kind", "table"}, {"source_url", "test"}, {"format", "csv"}, {"header", true}, {"columns", 3},
          {"files", {{{"path", "csvh/b.csv"}, {"sha256", nullptr}}}}, {"features", {1, 3}}, {"label", 2}}},
        {"svm",
         {{"kind", "table"}, {"source_url", "test"}, {"format", "libsvm"}, {"dim", 3},
          {"files", {{{"path", "svm/c.svm.gz"}, {"sha256", nullptr}}, {{"path", "svm/c.t.gz"}, {"role", "test"}, {"sha256", nullptr}}}},
          {"features", {1, 3}}, {"label", 0}, {"label_values", {-1, 1}}}},
        {"text",
         {{"kind", "table"}, {"source_url", "test"}, {"format", "text_csv"}, {"header", true}, {"columns", 4},
          {"files", {{{"path", "text/d.csv"}, {"sha256", nullptr}}}},
          {"features", {2, 3}}, {"money", {3}}, {"skip_unparsable", {3}},
          {"categorical", {{"2", {"lo", "mid", "hi"}}}},
          {"filters", {{{"column", 4}, {"equals", "keep"}}}}, {"label", nullptr}}},
        {"absent",
         {{"kind", "table"}, {"source_url", "test"}, {"format", "csv"}, {"rows", 777}, {"columns", 3},
          {"files", {{{"path", "absent/none.csv"}, {"sha256", nullptr}}}},
          {"features", {1, 2}}, {"label", 3}, {"label_values", {0, 1}}, {"stand_in", {{"rows", 500}}}}},
        {"graph", {{"kind", "graph"}, {"source_url", "test"}, {"format", "snap_edgelist"}, {"directed", true},
                   {"files", {{{"path", "g.txt.gz"}, {"sha256", nullptr}}}}}}}}};
  write(dir / "registry.json", reg.dump(2));
  return DatasetRegistry::load((dir / "registry.json").string());
}

DataSearch search_in(const fs::path& dir) {
  DataSearch s;
  s.data_dir = (dir / "data").string();
  s.repo_root = "";  // only --data-dir
  return s;
}

struct NoEnv {  // $PRIVRACE_DATA would add a search directory
  std::string saved;
  bool had = false;
  NoEnv() {
    if (const char* e = std::getenv("PRIVRACE_DATA")) {
      had = true;
      saved = e;
    }
    unsetenv("PRIVRACE_DATA");
  }
  ~NoEnv() {
    if (had) setenv("PRIVRACE_DATA", saved.c_str(), 1);
  }
};


}  // namespace

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million.data(), million.size()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Registry, EveryEntryHasSourceUrlAndChecksums) {
  const auto reg = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  const std::regex hex64("[0-9a-f]{64}");
  const std::set<std::string> formats = {"csv", "whitespace", "libsvm", "text_csv", "snap_edgelist", "jlg"};
  ASSERT_GE(reg.names().size(), 20u);
  for (const auto& name : reg.names()) {
    SCOPED_TRACE(name);
    const json& e = reg.entry(name);
    ASSERT_TRUE(e.contains("source_url") && e.at("source_url").is_string());
    if (e.value("synthetic", "") == "rmat") {  // generated, nothing to fetch or check
      EXPECT_EQ(e.at("format"), "rmat");
      EXPECT_TRUE(e.at("files").empty());
      continue;
    }
    EXPECT_EQ(e.at("source_url").get<std::string>().rfind("https://", 0), 0u);
    EXPECT_TRUE(formats.count(e.at("format").get<std::string>()));
    ASSERT_FALSE(e.at("files").empty());
    for (const auto& f : e.at("files")) {
      ASSERT_TRUE(f.contains("sha256"));
      if (f.at("sha256").is_null()) {
        EXPECT_FALSE(f.value("sha256_note", "").empty()) << "a null sha256 needs a note";
      } else {
        EXPECT_TRUE(std::regex_match(f.at("sha256").get<std::string>(), hex64));
      }
    }
    if (e.value("kind", "") == "graph") {
      EXPECT_TRUE(e.at("directed").is_boolean());
      EXPECT_TRUE(e.value("self_loops", "") == "keep" || e.value("self_loops", "") == "drop") << "graphs say how u-u edges are handled";
    } else {
      EXPECT_TRUE(e.contains("features") && e.at("features").is_array());
      EXPECT_TRUE(e.contains("label"));
    }
  }
  for (const char* required : {"skin", "codrna", "covtype", "nomao", "occupancy", "pulsar", "airfoil", "naval", "gas",
                                "nyc_salaries", "sf_salaries", "nursery", "lifesci", "slashdot", "enron", "twitter",
                                "wiki_vote", "ca_hepph", "facebook", "ca_condmat", "gplus", "friendster"})
    EXPECT_TRUE(reg.contains(required)) << required;
}

TEST(Registry, ChecksumsAgreeWithTheSharedManifest) {
  const fs::path sums = fs::path(PRIVRACE_SOURCE_DIR).parent_path() / "shared" / "datasets" / "SHA256SUMS";
  if (!fs::exists(sums)) GTEST_SKIP() << "no shared data here";
  std::map<std::string, std::string> manifest;
  std::ifstream in(sums);
  for (std::string h, p; in >> h >> p;) manifest[p] = h;
  const auto reg = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  std::set<std::string> referenced;
  for (const auto& name : reg.names())
    for (const auto& f : reg.entry(name).at("files"))
      if (manifest.count(f.at("path").get<std::string>())) {
        EXPECT_EQ(f.at("sha256"), manifest.at(f.at("path").get<std::string>())) << f.at("path");
        referenced.insert(f.at("path").get<std::string>());
      }
  for (const auto& [path, hash] : manifest) EXPECT_TRUE(referenced.count(path)) << path << " has no registry entry";
}

TEST(Registry, UnknownDataSetAndBadJson) {
  TempDir t;
  const auto reg = fixture_registry(t.path);
  EXPECT_THROW(reg.entry("nope"), UsageError);
  EXPECT_NE(message_of([&] { reg.entry("nope"); }).find("known: "), std::string::npos);
  write(t.path / "bad.json", "{\n  \"datasets\": {\n    \"x\": [1,,]\n}");
  const std::string msg = message_of([&] { DatasetRegistry::load((t.path / "bad.json").string()); });
  EXPECT_NE(msg.find("bad.json:3:"), std::string::npos) << msg;
}

TEST(Loader, WhitespaceCrlfWithLabelsAndScaling) {
  NoEnv env;
  TempDir t;
  const auto reg = fixture_registry(t.path);
  write(t.path / "data/ws/a.txt", "1\t2\t3\t1\r\n4 5 6 2\r\n10\t0\t5\t1\r\n");
  Preprocessing p;
  auto d = load_dataset(reg, "ws", p, search_in(t.path));
  ASSERT_EQ(d.x.rows(), 3);
  ASSERT_EQ(d.x.cols(), 3);
  EXPECT_FALSE(d.stand_in);
  EXPECT_FLOAT_EQ(d.x(1, 2), 6.0f);
  EXPECT_EQ(d.y, (std::vector<double>{1, 2, 1}));
  EXPECT_EQ(d.checksum_status, "no_reference");
  p.scale = "unit_cube";  // registry bounds [0, 10]
  d = load_dataset(reg, "ws", p, search_in(t.path));
  EXPECT_FLOAT_EQ(d.x(2, 0), 1.0f);
  EXPECT_FLOAT_EQ(d.x(0, 1), 0.2f);
  p.scale = "unit_sphere";
  d = load_dataset(reg, "ws", p, search_in(t.path));
  EXPECT_NEAR(d.x.rowwise().norm().maxCoeff(), 1.0, 1e-6);
  p = Preprocessing();
  p.features = {3};
  d = load_dataset(reg, "ws", p, search_in(t.path));
  ASSERT_EQ(d.x.cols(), 1);
  EXPECT_FLOAT_EQ(d.x(2, 0), 5.0f);
}

TEST(Loader, MismatchNamesRowAndWhatWasFound) {
  NoEnv env;
  TempDir t;
  const auto reg = fixture_registry(t.path);
  write(t.path / "data/ws/a.txt", "1 2 3 4 1\n");
  std::string msg = message_of([&] { load_dataset(reg, "ws", {}, search_in(t.path)); });
  EXPECT_NE(msg.find("expects 4 columns, found 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row 1"), std::string::npos) << msg;
  write(t.path / "data/ws/a.txt", "1 2 3 1\n1 2 3 2\n1 2 3 7\n");
  msg = message_of([&] { load_dataset(reg, "ws", {}, search_in(t.path)); });
  EXPECT_NE(msg.find("data row 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("label 7"), std::string::npos) << msg;
  write(t.path / "data/text/d.csv", "h1,h2,h3,h4\nx,lo,1,keep\ny,huge,2,keep\n");
  msg = message_of([&] { load_dataset(reg, "text", {}, search_in(t.path)); });
  EXPECT_NE(msg.find("data row 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'huge'"), std::string::npos) << msg;
  write(t.path / "data/text/d.csv", "h1,h2,h3,h4\nx,lo,1\n");
  msg = message_of([&] { load_dataset(reg, "text", {}, search_in(t.path)); });
  EXPECT_NE(msg.find("expects 4 fields, found 3"), std::string::npos) << msg;
}

TEST(Loader, CsvWithHeaderPicksFeatureColumnsAroundTheLabel) {
  NoEnv env;
  TempDir t;
  const auto reg = fixture_registry(t.path);
  write(t.path / "data/csvh/b.csv", "a,b,c\n1,0,3\n4,1,6\n");
  const auto d = load_dataset(reg, "csvh", {}, search_in(t.path));
  ASSERT_EQ(d.x.rows(), 2);
  EXPECT_FLOAT_EQ(d.x(1, 0), 4.0f);
  EXPECT_FLOAT_EQ(d.x(1, 1), 6.0f);
  EXPECT_EQ(d.y, (std::vector<double>{0, 1}));
}

TEST(Loader, LibsvmGzipAndFileRoles) {
  NoEnv env;
  TempDir t;
  const auto reg = fixture_registry(t.path);
  write_gz(t.path / "data/svm/c.svm.gz", "-1 1:0.5 2:7 3:2\n+1 1:1.5 3:4\n");
  write_gz(t.path / "data/svm/c.t.gz", "1 1:9 2:9 3:9\n");
  auto d = load_dataset(reg, "svm", {}, search_in(t.path));
  ASSERT_EQ(d.x.rows(), 2);
  EXPECT_FLOAT_EQ(d.x(1, 1), 4.0f);  // feature 3 of row 2
  EXPECT_EQ(d.y, (std::vector<double>{-1, 1}));
  Preprocessing p;
  p.roles = {"data", "test"};
  d = load_dataset(reg, "svm", p, search_in(t.path));
  EXPECT_EQ(d.x.rows(), 3);
}

TEST(Loader, TextCsvQuotesMoneyCategoriesFiltersAndCrOnlyLines) {
  NoEnv env;
  TempDir t;
  const auto reg = fixture_registry(t.path);
  // CR-only line ends and no final newline, as in two of the SF salary files.
  write(t.path / "data/text/d.csv",
        "name,level,pay,status\r\"Doe, J\",mid,\"$1,200.50\",keep\r"
        "x,hi,Not Provided,keep\rz,lo,5,drop\ry, lo ,  7 ,keep");
  Preprocessing p;
  auto d = load_dataset(reg, "text", p, search_in(t.path));
  ASSERT_EQ(d.x.rows(), 2);  // 'Not Provided' skipped, 'drop' filtered
  EXPECT_EQ(d.rows_skipped, 2u);
  EXPECT_FLOAT_EQ(d.x(0, 0), 1.0f);  // 'mid' = level 1
  EXPECT_FLOAT_EQ(d.x(0, 1), 1200.5f);
  EXPECT_FLOAT_EQ(d.x(1, 0), 0.0f);
  EXPECT_FLOAT_EQ(d.x(1, 1), 7.0f);
  p.categorical = "binary";
  d = load_dataset(reg, "text", p, search_in(t.path));
  ASSERT_EQ(d.x.cols(), 4);  // 3 one-hot columns + pay
  EXPECT_FLOAT_EQ(d.x(0, 1), 1.0f);
  EXPECT_FLOAT_EQ(d.x(0, 0) + d.x(0, 2), 0.0f);
}

// The repository's own nomao entry against a small file in the UCI Nomao.data format: id
// "a#b", 118 attributes (29 nominal n/s/m), '?' for missing values, label +1/-1 last.
TEST(Loader, NomaoFormatFillsMissingNumbersAndCodesMissingLevels) {
  NoEnv env;
  TempDir t;
  const auto reg = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  const json& entry = reg.entry("nomao");
  std::set<int> nominal;
  for (const auto& [col, levels] : entry.at("categorical").items()) nominal.insert(std::stoi(col));
  ASSERT_EQ(nominal.size(), 29u);
  ASSERT_EQ(entry.at("features").size(), 118u);
  // Row r: numeric column c holds (c mod 10) / 10, except every numeric column of row 1 is
  // '?'; nominal columns cycle n, s, m, ? with the column.
  auto row = [&](int r, const std::string& label) {
    std::string line = "spot" + std::to_string(r) + "#other";
    for (int c = 2; c <= 119; ++c) {
      line += ",";
      if (nominal.count(c)) {
        line += std::string(1, "nsm?"[(c + r) % 4]);
      } else if (r == 1) {
        line += "?";
      } else {
        line += std::to_string((c % 10) / 10.0);
      }
    }
    return line + "," + label + "\n";
  };
  write(t.path / "data/nomao/Nomao.data", row(0, "+1") + row(1, "-1") + row(2, "?") + row(3, "-1"));
  Preprocessing p = Preprocessing::from_json(entry.at("preprocessing"));
  EXPECT_EQ(p.categorical, "binary");
  p.scale = "none";
  const auto d = load_dataset(reg, "nomao", p, search_in(t.path));
  ASSERT_FALSE(d.stand_in);
  ASSERT_EQ(d.x.rows(), 3);  // the row with a missing label is dropped, no other
  EXPECT_EQ(d.rows_skipped, 1u);
  EXPECT_EQ(d.values_filled, 89u);  // row 1's continuous attributes
  ASSERT_EQ(d.x.cols(), 89 + 29 * 4);
  EXPECT_EQ(d.y, (std::vector<double>{1, -1, -1}));
  // Output columns in file order: numeric ones copied, nominal ones as 4 indicators.
  Eigen::Index j = 0;
  const std::vector<int> file_rows = {0, 1, 3};
  for (int c = 2; c <= 119; ++c) {
    for (std::size_t i = 0; i < file_rows.size(); ++i) {
      const int r = file_rows[i];
      const auto ii = static_cast<Eigen::Index>(i);
      if (nominal.count(c)) {
        for (int l = 0; l < 4; ++l)
          EXPECT_FLOAT_EQ(d.x(ii, j + l), l == (c + r) % 4 ? 1.0f : 0.0f) << "column " << c << " row " << r;
      } else {
        EXPECT_FLOAT_EQ(d.x(ii, j), r == 1 ? 0.0f : static_cast<float>((c % 10) / 10.0)) << "column " << c;
      }
    }
    j += nominal.count(c) ? 4 : 1;
  }
  EXPECT_EQ(d.feature_names.front(), "clean_name_intersect_min");
  EXPECT_EQ(d.feature_names[6], "clean_name_including=0");
  // A level outside n, s, m, ? is an error naming file, row and column.
  std::string bad = row(0, "+1");
  bad.replace(bad.find(",n,") != std::string::npos ? bad.find(",n,") + 1 : bad.find(",s,") + 1, 1, "y");
  write(t.path / "data/nomao/Nomao.data", row(0, "+1") + bad);
  const std::string msg = message_of([&] { load_dataset(reg, "nomao", p, search_in(t.path)); });
  EXPECT_NE(msg.find("Nomao.data:2: data row 2: column"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'y' is not a level"), std::string::npos) << msg;
  // The stand-in has the same shape as the real file after preprocessing.
  const auto s = load_dataset(reg, "nomao", p, search_in(t.path / "nowhere"));
  EXPECT_TRUE(s.stand_in);
  EXPECT_EQ(s.x.cols(), 205);
}

TEST(Loader, SearchOrderDataDirThenEnvironment) {
  NoEnv env;
  TempDir t;
  const auto reg = fixture_registry(t.path);
  write(t.path / "first/ws/a.txt", "1 1 1 1\n");
  write(t.path / "second/ws/a.txt", "2 2 2 2\n2 2 2 2\n");
  DataSearch s;
  s.data_dir = (t.path / "first").string();
  setenv("PRIVRACE_DATA", (t.path / "second").string().c_str(), 1);
  EXPECT_EQ(load_dataset(reg, "ws", {}, s).x.rows(), 1);
  s.data_dir = (t.path / "nowhere").string();
  const auto d = load_dataset(reg, "ws", {}, s);
  EXPECT_EQ(d.x.rows(), 2);
  EXPECT_EQ(d.data_dir, (t.path / "second").string());
  const auto dirs = data_search_path(DataSearch{"a", "/repo", true, true});
  ASSERT_EQ(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], "a");
  EXPECT_EQ(dirs[1], (t.path / "second").string());
  EXPECT_EQ(dirs[2], "/repo/datasets");
  EXPECT_EQ(dirs[3], "/shared/datasets");
  // A relative root, or one ending in '/' or '/.', still finds the shared/ beside it.
  const auto cwd = fs::current_path();
  fs::current_path(t.path / "first");
  for (const std::string& root : std::vector<std::string>{".", "./", (t.path / "first/").string(), (t.path / "first/.").string()}) {
    const auto rel = data_search_path(DataSearch{"", root, true, true});
    ASSERT_EQ(rel.size(), 3u) << root;
    EXPECT_EQ(rel[2], (t.path / "shared" / "datasets").string()) << root;
  }
  fs::current_path(cwd);
}

TEST(Loader, MissingFileGivesALabelledStandInOfTheSameShape) {
  NoEnv env;
  TempDir t;
  const auto reg = fixture_registry(t.path);
  const auto d = load_dataset(reg, "absent", {}, search_in(t.path));
  EXPECT_TRUE(d.stand_in);
  EXPECT_NE(d.stand_in_reason.find("absent/none.csv"), std::string::npos);
  EXPECT_EQ(d.x.rows(), 500);
  EXPECT_EQ(d.x.cols(), 2);
  ASSERT_EQ(d.y.size(), 500u);
  for (const double y : d.y) EXPECT_TRUE(y == 0 || y == 1);
  EXPECT_TRUE(d.describe().at("stand_in").get<bool>());
  // Deterministic.
  const auto again = load_dataset(reg, "absent", {}, search_in(t.path));
  EXPECT_TRUE(d.x.isApprox(again.x));
  DataSearch strict = search_in(t.path);
  strict.allow_stand_in = false;
  EXPECT_THROW(load_dataset(reg, "absent", {}, strict), InputError);
  EXPECT_THROW(load_dataset(reg, "graph", {}, search_in(t.path)), UsageError);
}

TEST(Loader, RealSkinWhenPresent) {
  NoEnv env;
  const auto reg = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  DataSearch s;
  s.repo_root = PRIVRACE_SOURCE_DIR;
  const auto d = load_dataset(reg, "skin", {}, s);
  if (d.stand_in) GTEST_SKIP() << d.stand_in_reason;
  EXPECT_EQ(d.x.rows(), 245057);
  EXPECT_EQ(d.x.cols(), 3);
  EXPECT_EQ(d.checksum_status, "ok");
  EXPECT_EQ(std::count(d.y.begin(), d.y.end(), 1.0), 50859);
}

TEST(Split, SeededDisjointAndComplete) {
  const Split a = seeded_split(1000, 100, 5), b = seeded_split(1000, 100, 5);
  EXPECT_EQ(a.held_out, b.held_out);
  std::set<std::size_t> all(a.held_out.begin(), a.held_out.end());
  all.insert(a.kept.begin(), a.kept.end());
  EXPECT_EQ(all.size(), 1000u);
  EXPECT_EQ(a.kept.size(), 900u);
}

TEST(ExactKde, TabulatedPStableKernelIsAccurate) {
  for (double s = 0.0; s < 80.0; s += 0.0137) {
    const double exact = pstable_collision(s * 3.0, 3.0);
    EXPECT_NEAR(pstable_kernel_tabulated(s), exact, 1e-10 + 1e-8 * exact) << s;
  }
}

TEST(ExactKde, MatchesBruteForceWithDuplicates) {
  for (const std::size_t d : {2u, 12u}) {
    DenseMatrix x = privrace::testing::clustered_points(700, d, 11);
    x.bottomRows(200) = x.topRows(200);  // duplicates exercise the merge
    const DenseMatrix q = privrace::testing::clustered_points(40, d, 12);
    for (const std::string kernel : {"l2", "angular"}) {
      KernelSpec spec;
      spec.kernel = parse_kernel(kernel);
      spec.bandwidth = 1.5;
      spec.power = 2;
      const auto sums = exact_kernel_sums(x, q, spec);
      FamilySpec fs;
      fs.kernel = parse_kernel(kernel);
      fs.bandwidth = 1.5;
      fs.power = 2;
      fs.rows = 1;
      fs.dim = d;
      const auto family = make_family(fs);
      for (Eigen::Index j = 0; j < q.rows(); ++j) {
        double brute = 0;
        const Eigen::VectorXd qj = q.row(j).cast<double>();
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
          const Eigen::VectorXd xi = x.row(i).cast<double>();
          brute += family->kernel_dense({xi.data(), d}, {qj.data(), d});
        }
        EXPECT_NEAR(sums[static_cast<std::size_t>(j)], brute, 1e-7 * brute + 1e-9) << kernel << " d=" << d;
      }
    }
  }
}

TEST(ExactKde, Metrics) {
  const std::vector<double> truth = {1, 2, 4}, est = {1.5, 2, 2};
  EXPECT_DOUBLE_EQ(experiments::mean_relative_error(est, truth), (0.5 + 0 + 0.5) / 3);
  EXPECT_DOUBLE_EQ(l2_function_error(est, truth, 0.5), std::sqrt((0.25 + 4) * 0.5));
}

// The small-dimension L2 kernel sums: the AVX2 version (four queries a vector) and the portable
// one (PRIVRACE_KDE_SCALAR=1) give the same values bit for bit, and both equal a loop over pairs
// with the same fused operations: data blocks of 2048 rows, each query's block sum in data
// order. Bandwidths that put some distances beyond the table (evaluated exactly), powers 1 and 3,
// dimensions 3 and 8, and a query count that leaves spare lanes.
TEST(ExactKde, SmallDimensionSumsAreTheSameInEveryVersionAndEqualTheLoopOverPairs) {
  for (const std::size_t d : {3u, 8u}) {
    const DenseMatrix xf = privrace::testing::clustered_points(5000, d, 21);
    const DenseMatrix qf = privrace::testing::clustered_points(37, d, 22);
    const DoubleMatrix x = xf.cast<double>(), q = qf.cast<double>();
    std::vector<double> w(static_cast<std::size_t>(x.rows()));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0 + static_cast<double>(i % 7);
    for (const double bandwidth : {0.5, 0.004})
      for (const std::size_t power : {1u, 3u}) {
        KernelSpec spec;
        spec.kernel = Kernel::L2;
        spec.bandwidth = bandwidth;
        spec.power = power;
        const auto fast = weighted_row_kernel_sums(x, w, qf, spec);
        setenv("PRIVRACE_KDE_SCALAR", "1", 1);
        const auto portable = weighted_row_kernel_sums(x, w, qf, spec);
        unsetenv("PRIVRACE_KDE_SCALAR");
        std::size_t beyond_table = 0;
        for (Eigen::Index j = 0; j < q.rows(); ++j) {
          double expected = 0.0;
          for (Eigen::Index b0 = 0; b0 < x.rows(); b0 += 2048) {
            double block = 0.0;
            for (Eigen::Index i = b0; i < std::min<Eigen::Index>(x.rows(), b0 + 2048); ++i) {
              double acc = 0.0;
              for (Eigen::Index k = 0; k < x.cols(); ++k) {
                const double diff = x(i, k) - q(j, k);
                acc = std::fma(diff, diff, acc);
              }
              const double s = std::sqrt(acc) * (1.0 / bandwidth);
              beyond_table += s >= 64.0;
              const double kv = pstable_kernel_tabulated(s);
              double term = kv;
              for (std::size_t p = 1; p < power; ++p) term = term * kv;
              block = std::fma(w[static_cast<std::size_t>(i)], term, block);
            }
            expected += block;
          }
          const std::size_t jj = static_cast<std::size_t>(j);
          EXPECT_EQ(fast[jj], portable[jj]) << "d " << d << " bandwidth " << bandwidth << " power " << power << " query " << j;
          EXPECT_EQ(fast[jj], expected) << "d " << d << " bandwidth " << bandwidth << " power " << power << " query " << j;
        }
        if (bandwidth < 0.01) {
          EXPECT_GT(beyond_table, 0u);
        }
      }
  }
}

// The lattice sums equal the kernel sums at the lattice's points as queries, bit for bit, in
// the AVX2 and the portable versions: d = 1, 3 and 8 (d - 1 = 0 prefix coordinates, a prefix
// count that leaves spare lanes, and the Bernstein shape), axes of different lengths and one
// of length 1, duplicate rows (merged with weights), distances beyond the table, powers 1 and 3;
// and the angular kernel and d = 9, which take the points themselves.
TEST(ExactKde, LatticeSumsEqualTheSumsAtTheLatticePoints) {
  struct Shape {
    std::size_t d;
    std::vector<std::size_t> lengths;
  };
  const std::vector<Shape> shapes = {{1, {7}}, {3, {5, 1, 9}}, {3, {3, 4, 2}}, {8, {3, 3, 3, 3, 3, 3, 2, 3}}, {9, {2, 2, 2, 2, 2, 2, 2, 2, 2}}};
  for (const Shape& shape : shapes) {
    DenseMatrix x = privrace::testing::clustered_points(700, shape.d, 31);
    x.row(5) = x.row(9);  // a duplicate
    std::vector<std::vector<double>> axes;
    for (std::size_t j = 0; j < shape.d; ++j) {
      std::vector<double> axis;
      for (std::size_t v = 0; v < shape.lengths[j]; ++v) axis.push_back(-0.3 + 1.7 * static_cast<double>(v) / 7.0 + 0.01 * j);
      axes.push_back(axis);
    }
    std::size_t total = 1;
    for (const auto& a : axes) total *= a.size();
    DenseMatrix pts(static_cast<Eigen::Index>(total), static_cast<Eigen::Index>(shape.d));
    for (std::size_t idx = 0; idx < total; ++idx) {
      std::size_t rest = idx;
      for (std::size_t j = shape.d; j-- > 0;) {
        pts(static_cast<Eigen::Index>(idx), static_cast<Eigen::Index>(j)) = static_cast<Real>(axes[j][rest % axes[j].size()]);
        rest /= axes[j].size();
      }
    }
    for (const Kernel kernel : {Kernel::L2, Kernel::Angular})
      for (const double bandwidth : {0.5, 0.004})
        for (const std::size_t power : {1u, 3u}) {
          KernelSpec spec;
          spec.kernel = kernel;
          spec.bandwidth = bandwidth;
          spec.power = power;
          for (const char* scalar : {"0", "1"}) {
            setenv("PRIVRACE_KDE_SCALAR", scalar, 1);
            const auto at_points = exact_kernel_sums(x, pts, spec);
            const auto lattice = lattice_kernel_sums(x, axes, spec);
            unsetenv("PRIVRACE_KDE_SCALAR");
            ASSERT_EQ(lattice.size(), total);
            for (std::size_t i = 0; i < total; ++i)
              ASSERT_EQ(lattice[i], at_points[i]) << "d " << shape.d << " kernel " << to_string(kernel) << " bandwidth "
                                                  << bandwidth << " power " << power << " scalar " << scalar << " point " << i;
          }
        }
  }
  DenseMatrix x = privrace::testing::clustered_points(10, 2, 3);
  EXPECT_THROW(lattice_kernel_sums(x, {{0.0, 1.0}}, KernelSpec{}), InputError);        // one axis for two columns
  EXPECT_THROW(lattice_kernel_sums(x, {{0.0, 1.0}, {}}, KernelSpec{}), UsageError);    // an empty axis
}
