// privrace-experiment CONFIG [--quick] [--out DIR] [--threads T] [--data-dir D]
// Exit codes: 0 success, 2 bad usage (flags), 1 any other error (config, data, I/O).
#include <boost/program_options.hpp>
#include <iostream>

#include "experiment.hpp"

namespace po = boost::program_options;
using namespace privrace;

int main(int argc, char** argv) {
  const char* usage =
      "usage: privrace-experiment CONFIG [--quick] [--out DIR] [--threads T] [--data-dir D]\n"
      "\n"
      "Runs every cell (method x parameters x epsilon x repetition) of a JSON experiment config,\n"
      "appending one record per cell to DIR/NAME.jsonl (DIR/NAME-quick.jsonl with --quick);\n"
      "a rerun skips finished cells. See configs/README.md for the format.\n";
  try {
    experiments::RunOptions opts;
    po::options_description desc("options");
    desc.add_options()("help,h", "show this help")
        ("quick", po::bool_switch(&opts.quick), "apply the config's 'quick' section (small grid, few repetitions)")
        ("out", po::value(&opts.out_dir), "results directory (default: <repo>/results)")
        ("threads", po::value(&opts.threads), "OpenMP threads (default: the config's 'threads'; 0 = all cores)")
        ("data-dir", po::value(&opts.data_dir), "look for data sets here first")
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
    if (opts.config_path.empty()) throw UsageError("missing CONFIG");
    if (vm.count("threads") && opts.threads < 0) throw UsageError("--threads must be >= 0");
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
