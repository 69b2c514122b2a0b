// Every config shipped in configs/ (recursively) parses and validates against the task and
// method registry and the data-set registry, in full and with its quick section: a typo in a
// shipped config fails here rather than in a user's run. Whatever configs are present are
// loaded; none is named here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cost_estimate.hpp"
#include "experiment.hpp"
#include "data/dataset.hpp"

namespace privrace::experiments {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> shipped_configs() {
  std::vector<std::string> out;
  const fs::path root = fs::path(PRIVRACE_SOURCE_DIR) / "configs";
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().extension() == ".json" &&
        entry.path().parent_path() != root / "calibration")  // measured costs, not a config
      out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ShippedConfigs, EveryConfigValidates) {
  const auto configs = shipped_configs();
  ASSERT_FALSE(configs.empty()) << "no configs found under configs/";
  const auto datasets = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  std::vector<std::string> failures;
  for (const auto& path : configs)
    for (const bool quick : {false, true}) {
      try {
        const auto cfg = load_config(path, quick, builtin_registry(), datasets);
        EXPECT_FALSE(cfg.methods.empty()) << path;
        EXPECT_FALSE(cfg.epsilons.empty()) << path;
      } catch (const std::exception& e) {
        failures.push_back(std::string(quick ? "[quick] " : "") + e.what());
      }
    }
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::cout << configs.size() << " configs checked, " << failures.size() << " failures" << std::endl;
}

// The calibration table (scripts/measure_cell_costs.sh) parses, and each entry prices a config
// that is shipped, with labels that config has: a renamed config or method leaves no stale entry.
TEST(ShippedConfigs, CellCostTableMatchesTheConfigs) {
  const std::string path = cell_cost_table_path(PRIVRACE_SOURCE_DIR);
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  std::ifstream in(path);
  const nlohmann::json table = nlohmann::json::parse(in);
  ASSERT_TRUE(table.at("configs").is_object());
  const auto datasets = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  std::map<std::string, std::string> by_stem;  // "name" / "name-quick" -> path
  for (const auto& p : shipped_configs()) {
    const auto cfg = load_config(p, false, builtin_registry(), datasets);
    by_stem[cfg.name] = by_stem[cfg.name + "-quick"] = p;
  }
  for (const auto& [stem, entry] : table.at("configs").items()) {
    ASSERT_TRUE(by_stem.count(stem)) << path << ": configs." << stem << " names no shipped config";
    CellCostModel model;
    EXPECT_NO_THROW(model.add_table_entry(entry, path));
    const bool quick = stem.size() > 6 && stem.substr(stem.size() - 6) == "-quick";
    const auto cfg = load_config(by_stem.at(stem), quick, builtin_registry(), datasets);
    std::set<std::string> labels;
    for (const auto& m : cfg.methods) labels.insert(m.label);
    for (const auto& cell : entry.at("cells"))
      EXPECT_TRUE(labels.count(cell.at("label").get<std::string>()))
          << path << ": configs." << stem << " prices method '" << cell.at("label") << "' that the config lacks";
  }
}

}  // namespace
}  // namespace privrace::experiments
