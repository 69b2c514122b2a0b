// Every config shipped in configs/ (recursively) parses and validates against the task and
// method registry and the data-set registry, in full and with its quick section: a typo in a
// shipped config fails here rather than in a user's run. Whatever configs are present are
// loaded; none is named here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "experiment.hpp"
#include "privrace/io/dataset.hpp"

namespace privrace::experiments {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> shipped_configs() {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(PRIVRACE_SOURCE_DIR) / "configs"))
    if (entry.is_regular_file() && entry.path().extension() == ".json") out.push_back(entry.path().string());
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

}  // namespace
}  // namespace privrace::experiments
