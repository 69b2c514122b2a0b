// --columns, --drop and --label-column on `privrace sketch` and `privrace query`: a table with a
// date column (the occupancy files' layout: a header one name short of the rows, a quoted row id,
// a quoted date) is sketched and queried by column names; a query file cut from the same table
// as the data is read with the same flags. Selection errors name the file, line and option
// (exit 1), malformed SPECs are usage errors (exit 2), and a refused run writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

using CliRun = privrace::testing::CommandResult;

class CliColumns : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = privrace::testing::temp_dir("cli_columns");
    const char* header = "\"date\",\"Temperature\",\"Humidity\",\"Light\",\"CO2\",\"HumidityRatio\",\"Occupancy\"\n";
    const char* rows[] = {"23.18,27.272,426,721.25,0.0047,1", "23.15,27.2675,429.5,714,0.0047,1",
                          "22.1,25.1,0,450,0.0041,0",         "21.9,26.0,0,470,0.0042,0",
                          "23.0,27.0,400,700,0.0046,1",       "20.5,24.0,0,440,0.0040,0"};
    std::ofstream data(dir / "occupancy.txt"), plain(dir / "plain.csv"), q(dir / "q_occupancy.txt"),
        qplain(dir / "q_plain.csv"), qlabel(dir / "q_label.csv");
    data << header;
    for (int i = 0; i < 6; ++i) {
      const std::string r = rows[i];
      const std::string features = r.substr(0, r.rfind(','));
      data << '"' << i + 1 << "\",\"2015-02-04 17:5" << i << ":00\"," << r << "\n";
      plain << features << "\n";
      if (i % 2 == 0) {  // the queries: rows of the same table
        q << (i == 0 ? header : "") << '"' << i + 1 << "\",\"2015-02-04 17:5" << i << ":00\"," << r << "\n";
        qplain << features << "\n";
        qlabel << features << "," << r.back() << "\n";  // a label column after the features
      }
    }
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
  CliRun cli(const std::string& args) const {
    return privrace::testing::run_command(std::string(PRIVRACE_CLI) + " " + args, dir);
  }
  std::string sketch(const std::string& input, const std::string& out, const std::string& extra = "") const {
    return "sketch --input " + p(input) + " --bandwidth 50 --rows 40 --width 16 --no-privacy --seed 3 -q -o " + p(out) + " " +
           extra;
  }
  void expect_refused(const CliRun& r, int code, const std::string& fragment, const std::string& output = "") const {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr was: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    if (!output.empty()) {
      EXPECT_FALSE(fs::exists(p(output))) << "a refused run left " << output;
    }
  }
  fs::path dir;
};

const char* kFeatures = "Temperature,Humidity,Light,CO2,HumidityRatio";

TEST_F(CliColumns, SketchAndQueryATableWithADateColumnByName) {
  // Without a selection the date column stops the reader.
  expect_refused(cli(sketch("occupancy.txt", "none.rsk")), 1, "column 2: expected a number, found '2015-02-04 17:50:00'",
                 "none.rsk");
  const CliRun a = cli(sketch("occupancy.txt", "a.rsk", std::string("--columns ") + kFeatures));
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(cli(sketch("plain.csv", "b.rsk")).code, 0);
  // The same records: the same counts.
  const CliRun ia = cli("info --counts " + p("a.rsk")), ib = cli("info --counts " + p("b.rsk"));
  ASSERT_EQ(ia.code, 0) << ia.err;
  EXPECT_EQ(ia.out, ib.out);  // `info --counts`: the counts alone
  // Queries cut from the same table, read with the same flags.
  const CliRun qa = cli("query " + p("a.rsk") + " --queries " + p("q_occupancy.txt") + " --columns " + kFeatures);
  const CliRun qb = cli("query " + p("b.rsk") + " --queries " + p("q_plain.csv"));
  ASSERT_EQ(qa.code, 0) << qa.err;
  ASSERT_EQ(qb.code, 0) << qb.err;
  EXPECT_EQ(qa.out, qb.out);
  EXPECT_EQ(std::count(qa.out.begin(), qa.out.end(), '\n'), 3);
  // --drop and ranges say the same.
  const CliRun qd = cli("query " + p("a.rsk") + " --queries " + p("q_occupancy.txt") + " --drop 1-2 --drop Occupancy");
  EXPECT_EQ(qd.code, 0) << qd.err;
  EXPECT_EQ(qd.out, qb.out);
  const CliRun qr = cli("query " + p("a.rsk") + " --queries " + p("q_occupancy.txt") + " --columns 3-7");
  EXPECT_EQ(qr.out, qb.out);
  // Without the flags the query file is refused, with a hint.
  expect_refused(cli("query " + p("a.rsk") + " --queries " + p("q_occupancy.txt") + " --drop 1-2"), 1,
                 "queries have 6 columns, the sketch was built on 5-dimensional data (select the same columns");
}

TEST_F(CliColumns, QueryTakesALabelColumn) {
  ASSERT_EQ(cli(sketch("plain.csv", "b.rsk")).code, 0);
  const CliRun plain = cli("query " + p("b.rsk") + " --queries " + p("q_plain.csv"));
  const CliRun label = cli("query " + p("b.rsk") + " --queries " + p("q_label.csv") + " --label-column 6");
  ASSERT_EQ(label.code, 0) << label.err;
  EXPECT_EQ(label.out, plain.out);
  // On the sketch too: --label-column K, --drop K and --columns of the others agree.
  ASSERT_EQ(cli(sketch("q_label.csv", "l1.rsk", "--label-column 6")).code, 0);
  ASSERT_EQ(cli(sketch("q_label.csv", "l2.rsk", "--drop 6")).code, 0);
  ASSERT_EQ(cli(sketch("q_label.csv", "l3.rsk", "--columns 1-5")).code, 0);
  const std::string c1 = cli("info --counts " + p("l1.rsk")).out;
  const std::string c2 = cli("info --counts " + p("l2.rsk")).out;
  const std::string c3 = cli("info --counts " + p("l3.rsk")).out;
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(c1, c3);
  // --label-column may be repeated or take a SPEC.
  ASSERT_EQ(cli("query " + p("b.rsk") + " --queries " + p("q_label.csv") + " --columns 1-6 --label-column 6").out, plain.out);
}

TEST_F(CliColumns, SelectionErrors) {
  expect_refused(cli(sketch("occupancy.txt", "o.rsk", "--columns Temperature,Pressure")), 1,
                 "occupancy.txt:1: --columns: no column named 'Pressure' in the header (its names: 'date', 'Temperature'",
                 "o.rsk");
  expect_refused(cli(sketch("plain.csv", "o.rsk", "--columns Temperature")), 1,
                 "--columns: the column name 'Temperature' needs a header line", "o.rsk");
  expect_refused(cli(sketch("plain.csv", "o.rsk", "--columns 2-9")), 1,
                 "plain.csv:1: --columns: column 9 is out of range: the table has 5 columns", "o.rsk");
  expect_refused(cli(sketch("plain.csv", "o.rsk", "--columns 3-1")), 2, "--columns: the range 3-1 ends before it starts", "o.rsk");
  expect_refused(cli(sketch("plain.csv", "o.rsk", "--drop 0")), 2, "--drop: columns are numbered from 1", "o.rsk");
  expect_refused(cli(sketch("plain.csv", "o.rsk", "--label-column -2")), 2, "--label-column must be an integer in 0..", "o.rsk");
  std::ofstream(dir / "sets.txt") << "1 2 3\n2 3\n";
  expect_refused(cli("sketch --input " + p("sets.txt") + " --kernel jaccard --rows 4 --width 8 --no-privacy -q -o " + p("o.rsk") +
                     " --columns 1"),
                 2, "--columns and --drop select the columns of a table", "o.rsk");
}

}  // namespace
