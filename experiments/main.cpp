// privrace-experiment CONFIG [--quick] [--out DIR] [--threads T] [--data-dir D] [--repo DIR]
// Exit codes: 0 success, 2 bad usage (flags), 1 any other error (config, data, I/O).
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>

#include "experiment.hpp"
#include "privrace/core/version.hpp"
#include "privrace/io/home.hpp"

#ifndef PRIVRACE_SOURCE_DIR
#define PRIVRACE_SOURCE_DIR ""
#endif

namespace po = boost::program_options;
using namespace privrace;

int main(int argc, char** argv) {
  const char* usage =
      "usage: privrace-experiment CONFIG [--quick] [--out DIR] [--threads T] [--data-dir D] [--repo DIR]\n"
      "\n"
      "Runs every cell (method x parameters x epsilon x repetition) of a JSON experiment config,\n"
      "appending one record per cell to DIR/NAME.jsonl (DIR/NAME-quick.jsonl with --quick);\n"
      "a rerun skips finished cells. See configs/README.md for the format.\n"
      "The data registry (datasets/registry.json) comes from --repo, else $PRIVRACE_HOME, else the\n"
      "checkout holding the working directory, else the install's share/privrace.\n";
  try {
    experiments::RunOptions opts;
    std::string repo;
    po::options_description desc("options");
    desc.add_options()("help,h", "show this help")("version", "print the version and exit")
        ("quick", po::bool_switch(&opts.quick), "apply the config's 'quick' section (small grid, few repetitions)")
        ("out", po::value(&opts.out_dir), "results directory (default: <repo>/results; ./results when the registry comes from an install)")
        ("threads", po::value(&opts.threads), "OpenMP threads (default: the config's 'threads'; 0 = all cores)")
        ("data-dir", po::value(&opts.data_dir), "look for data sets here first")
        ("repo", po::value(&repo), "directory holding datasets/registry.json (default: $PRIVRACE_HOME, the checkout, the install)")
        ("which-registry", "print the registry file that would be used, and how it was found, and exit")
        ("config", po::value(&opts.config_path), "the experiment config (JSON)");
    po::positional_options_description pos;
    pos.add("config", 1);
    po::variables_map vm;
    try {
      po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
      po::notify(vm);
    } catch (const po::error& e) {
      throw UsageError(e.what());
    }
    if (vm.count("help")) {
      std::cout << usage << "\n" << desc;
      return 0;
    }
    if (vm.count("version")) {
      std::cout << "privrace-experiment " << version() << " (" << git_commit() << ")\n";
      return 0;
    }
    if (vm.count("which-registry")) {
      const HomeLocation home = find_home(repo, executable_path(), PRIVRACE_SOURCE_DIR);
      std::cout << (std::filesystem::canonical(home.root) / "datasets" / "registry.json").string() << " (" << home.source
                << ")\n";
      return 0;
    }
    if (opts.config_path.empty()) throw UsageError("missing CONFIG");
    if (vm.count("threads") && opts.threads < 0) throw UsageError("--threads must be >= 0");
    const HomeLocation home = find_home(repo, executable_path(), PRIVRACE_SOURCE_DIR);
    opts.repo_root = home.root;
    // An install's share/privrace is read-only data: results go to the working directory.
    if (opts.out_dir.empty() && home.installed()) opts.out_dir = "results";
    experiments::run_experiment(opts);
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "privrace-experiment: " << e.what() << "\n\n" << usage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "privrace-experiment: error: " << e.what() << "\n";
    return 1;
  }
}
