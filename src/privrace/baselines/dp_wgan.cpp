// DpWgan without torch: finds and loads the module that holds the networks
// (dp_wgan_torch.cpp -> libprivrace_dp_wgan.so) the first time a DP-WGAN is made, so that the
// commands, tests and experiments that never fit one never load libtorch.
#include "privrace/baselines/dp_wgan.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"

namespace privrace::baselines {
namespace {

using NewFn = DpWganModel* (*)(const DpWganOptions*);
using ClipFn = void (*)(const DoubleMatrix*, const DpWganOptions*, double, std::uint64_t, ClippingCheck*);

struct Module {
  std::string path;
  NewFn make = nullptr;
  ClipFn clipping_check = nullptr;
};

std::mutex module_mutex;
Module loaded;  // never unloaded: models made by it live as long as the process may

// Opens one candidate; "" on success, else why not.
std::string try_open(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return e ? e : "dlopen failed";
  }
  auto make = reinterpret_cast<NewFn>(dlsym(h, "privrace_dp_wgan_new"));
  auto clip = reinterpret_cast<ClipFn>(dlsym(h, "privrace_dp_wgan_clipping_check"));
  if (!make || !clip) return path + ": not a DP-WGAN module (privrace_dp_wgan_new missing)";
  loaded = {path, make, clip};
  return "";
}

std::string executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

const Module& module() {
  std::lock_guard<std::mutex> lock(module_mutex);
  const char* forced = std::getenv("PRIVRACE_DP_WGAN_MODULE");
  if (forced && *forced) {  // always honoured: a run (or a test) can insist on one file
    if (loaded.path != forced) {
      if (const std::string why = try_open(forced); !why.empty())
        throw UnavailableError("dp_wgan: cannot load the DP-WGAN module named by PRIVRACE_DP_WGAN_MODULE: " + why);
    }
    return loaded;
  }
  if (loaded.make) return loaded;
  std::vector<std::string> places;
  const std::string name = "libprivrace_dp_wgan.so";
  if (const std::string dir = executable_dir(); !dir.empty()) {
    places.push_back(dir + "/" + name);
#ifdef PRIVRACE_DP_WGAN_FROM_BIN
    places.push_back(dir + "/" PRIVRACE_DP_WGAN_FROM_BIN "/" + name);
#endif
  }
#ifdef PRIVRACE_DP_WGAN_BUILT
  places.push_back(PRIVRACE_DP_WGAN_BUILT);
#endif
#ifdef PRIVRACE_DP_WGAN_INSTALLED
  places.push_back(PRIVRACE_DP_WGAN_INSTALLED);
#endif
  std::string tried;
  for (const auto& p : places) {
    if (!std::filesystem::exists(p)) {
      tried += "\n  " + p + ": not found";
      continue;
    }
    const std::string why = try_open(p);
    if (why.empty()) return loaded;
    tried += "\n  " + p + ": " + why;
  }
  throw UnavailableError("dp_wgan: the DP-WGAN module (" + name + ", built with libtorch) is not available; tried:" + tried +
                         "\n(build the privrace_dp_wgan target, or set PRIVRACE_DP_WGAN_MODULE to its path)");
}

}  // namespace

DpWgan::DpWgan(const DpWganOptions& options) : model_(module().make(&options)) {}
DpWgan::~DpWgan() = default;

std::string dp_wgan_module_path() {
  std::lock_guard<std::mutex> lock(module_mutex);
  return loaded.path;
}

ClippingCheck dp_wgan_clipping_check(const DoubleMatrix& unit_batch, const DpWganOptions& options, double clip,
                                     std::uint64_t seed) {
  ClippingCheck out;
  module().clipping_check(&unit_batch, &options, clip, seed, &out);
  return out;
}

}  // namespace privrace::baselines
