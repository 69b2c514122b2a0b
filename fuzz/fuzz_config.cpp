// Experiment-config parser: load_config on arbitrary bytes, against the real task/method
// registry and the data-set registry of the source tree, with and without the quick section.
#include "experiment.hpp"
#include "fuzz_util.hpp"
#include "privrace/core/error.hpp"

using namespace privrace;
using namespace privrace::experiments;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Registry& registry = builtin_registry();
  static const DatasetRegistry datasets = DatasetRegistry::load(std::string(PRIVRACE_SOURCE_DIR) + "/datasets/registry.json");
  if (size < 1) return 0;
  const bool quick = data[0] & 1;
  const std::string path = fuzz::temp_path(".json");
  fuzz::write_bytes(path, data + 1, size - 1);
  try {
    (void)load_config(path, quick, registry, datasets);
  } catch (const Error&) {
    // The documented refusals (InputError, UsageError, ResourceError).
  }
  std::remove(path.c_str());
  return 0;
}
