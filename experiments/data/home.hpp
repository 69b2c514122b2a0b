#pragma once
// Where a command finds its data registry (datasets/registry.json) and the shipped configs.
// An installed command cannot depend on the source directory it was built in, so the lookup
// goes, first match wins:
//   1. an explicit directory (--repo DIR)            must hold datasets/registry.json
//   2. $PRIVRACE_HOME                                 must hold datasets/registry.json
//   3. the current checkout: the working directory or one of its parents
//   4. the install: <prefix>/share/privrace, <prefix> = the executable's directory's parent
//   5. the checkout the executable lies in (a build directory inside the source tree)
//   6. the source directory compiled in, if it still exists (a build tree elsewhere)
#include <string>
#include <vector>

namespace privrace {

struct HomeLocation {
  std::string root;    // the directory holding datasets/registry.json
  std::string source;  // "--repo", "PRIVRACE_HOME", "checkout", "install", "executable", "build"
  bool installed() const { return source == "install"; }
};

// Absolute path of the running executable (/proc/self/exe); empty when unknown.
std::string executable_path();

// Throws UsageError for a --repo or $PRIVRACE_HOME without datasets/registry.json (naming it),
// InputError when nothing is found (listing every place tried). `executable` and `compiled_source`
// may be empty (step skipped).
HomeLocation find_home(const std::string& explicit_root, const std::string& executable,
                       const std::string& compiled_source);

}  // namespace privrace
