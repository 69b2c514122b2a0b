#include "data/home.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "privrace/core/error.hpp"

namespace fs = std::filesystem;

namespace privrace {

namespace {

bool holds_registry(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "datasets" / "registry.json", ec);
}

// The nearest of `start` and its parents that holds datasets/registry.json.
std::string walk_up(fs::path start, std::vector<std::string>& tried) {
  std::error_code ec;
  start = fs::weakly_canonical(start, ec);
  if (ec) return {};
  for (fs::path dir = start;; dir = dir.parent_path()) {
    if (holds_registry(dir)) return dir.string();
    if (dir == dir.parent_path()) break;
  }
  tried.push_back(start.string() + " and its parents");
  return {};
}

}  // namespace

std::string executable_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

HomeLocation find_home(const std::string& explicit_root, const std::string& executable,
                       const std::string& compiled_source) {
  if (!explicit_root.empty()) {
    if (!holds_registry(explicit_root))
      throw UsageError("--repo '" + explicit_root + "' has no datasets/registry.json");
    return {explicit_root, "--repo"};
  }
  if (const char* env = std::getenv("PRIVRACE_HOME"); env && *env) {
    if (!holds_registry(env))
      throw UsageError("PRIVRACE_HOME='" + std::string(env) + "' has no datasets/registry.json");
    return {env, "PRIVRACE_HOME"};
  }
  std::vector<std::string> tried;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec)
    if (std::string found = walk_up(cwd, tried); !found.empty()) return {found, "checkout"};
  if (!executable.empty()) {
    const fs::path bin = fs::path(executable).parent_path();
    const fs::path share = bin.parent_path() / "share" / "privrace";
    if (holds_registry(share)) return {share.string(), "install"};
    tried.push_back(share.string());
    if (std::string found = walk_up(bin, tried); !found.empty()) return {found, "executable"};
  }
  if (!compiled_source.empty()) {
    if (holds_registry(compiled_source)) return {compiled_source, "build"};
    tried.push_back(compiled_source);
  }
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
  throw InputError("cannot find datasets/registry.json (tried " + list +
                   "); pass --repo DIR or set PRIVRACE_HOME to a directory holding it");
}

}  // namespace privrace
