// privrace-experiment CONFIG [--quick] [--out DIR] [--threads T] [--jobs J] [--data-dir D] [--repo DIR] [--plan] [--sample K]
//                     [--method LABEL]... [--epsilon E]...
// Exit codes: 0 success, 2 bad usage (flags), 1 any other error (config, data, I/O), 3 the run
// finished but some methods could not run (an optional module is missing; runner.hpp).
#include <boost/program_options.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <limits>

#include "cost_estimate.hpp"
#include "experiment.hpp"
#include "runner.hpp"
#include "privrace/core/limits.hpp"
#include "privrace/core/version.hpp"
#include "data/home.hpp"

#ifndef PRIVRACE_SOURCE_DIR
#define PRIVRACE_SOURCE_DIR ""
#endif

namespace po = boost::program_options;
using namespace privrace;

namespace {

constexpr const char* kUsage =
    "usage: privrace-experiment CONFIG [--quick] [--out DIR] [--threads T] [--jobs J] [--data-dir D] [--repo DIR]\n"
    "                           [--plan] [--sample K] [--method LABEL]... [--epsilon E]...\n"
    "\n"
    "Runs every cell (method x parameters x epsilon x repetition) of a JSON experiment config,\n"
    "appending one record per cell to DIR/NAME.jsonl (DIR/NAME-quick.jsonl with --quick);\n"
    "a rerun skips finished cells. See configs/README.md for the format.\n"
    "The data registry (datasets/registry.json) comes from --repo, else $PRIVRACE_HOME, else the\n"
    "checkout holding the working directory, else the install's share/privrace.\n"
    "--plan prints one tab-separated line and runs nothing:\n"
    "  CONFIG-NAME  CELLS  FINISHED  PENDING  ESTIMATE-SECONDS (nan if never measured)  UNPRICED  BASIS\n"
    "The estimate prices each pending cell by the measured wall time of its method and\n"
    "parameters (earlier records of this run, then configs/calibration/cell_costs.json).\n"
    "--speed-reference prints the seconds of the calibration's fixed workload on this machine now\n"
    "(scripts/measure_cell_costs.sh records it with every cell it times).\n"
    "--method and --epsilon run part of the profile: the same cells, seeds and records as the\n"
    "full run, which then skips them (methods without an epsilon ignore --epsilon).\n"
    "Exit status: 0 done, 1 error, 2 bad flags, 3 done but some methods could not run (an optional\n"
    "module such as DP-WGAN's is missing): every other method ran, the summary on stderr names them,\n"
    "their cells are in DIR/NAME.unavailable.jsonl and a rerun tries them again.\n";

// The flags, bound to `opts` and `repo` where they take a value as it is; counts are read as text
// and range-checked by main (core/limits.hpp).
po::options_description option_descriptions(experiments::RunOptions& opts, std::string& repo) {
  po::options_description desc("options");
  const std::string threads_help =
      "OpenMP threads (default: the config's 'threads'; 0 = all cores; at most " + std::to_string(kMaxThreads) + ")";
  desc.add_options()("help,h", "show this help")("version", "print the version and exit")
      ("quick", po::bool_switch(&opts.quick), "apply the config's 'quick' section (small grid, few repetitions)")
      ("out", po::value(&opts.out_dir), "results directory (default: <repo>/results; ./results when the registry comes from an install)")
      ("threads", po::value<std::string>(), threads_help.c_str())
      ("jobs", po::value<std::string>(), "groups run at once, each on threads / jobs threads (default 1): for methods that leave cores idle; the same records")
      ("data-dir", po::value(&opts.data_dir), "look for data sets here first")
      ("repo", po::value(&repo), "directory holding datasets/registry.json (default: $PRIVRACE_HOME, the checkout, the install)")
      ("plan", po::bool_switch(&opts.plan_only), "count the cells and estimate the time; run nothing, write nothing")
      ("sample", po::value<std::string>(), "calibration: repetition 0, at most K evenly spread grid points per method and K epsilons")
      ("method", po::value(&opts.only_labels)->composing(), "run only the cells of this method label (repeatable): part of the full profile")
      ("epsilon", po::value(&opts.only_epsilons)->composing(), "run only the cells at this epsilon of the config (repeatable)")
      ("which-registry", "print the registry file that would be used, and how it was found, and exit")
      ("speed-reference", "print the seconds this machine takes now for the calibration's fixed workload, and exit")
      ("config", po::value(&opts.config_path), "the experiment config (JSON)");
  return desc;
}

// --plan's one tab-separated line.
void print_plan(const experiments::RunReport& report) {
  const std::string name = std::filesystem::path(report.results_path).stem().string();
  std::cout << name << '\t' << report.cells_total << '\t' << report.cells_skipped << '\t'
            << report.cells_total - report.cells_skipped << '\t' << report.estimate_seconds << '\t'
            << report.cells_unpriced << '\t' << report.estimate_basis << " [" << report.threads << " threads"
            << (report.jobs > 1 ? ", " + std::to_string(report.jobs) + " jobs" : std::string()) << "]\n";
}

}  // namespace

int main(int argc, char** argv) {
  // A write past the file-size limit (ulimit -f) then fails with EFBIG and is reported like
  // any write error instead of the signal ending the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    experiments::RunOptions opts;
    std::string repo;
    const po::options_description desc = option_descriptions(opts, repo);
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
      std::cout << kUsage << "\n" << desc;
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
    if (vm.count("speed-reference")) {
      std::cout << experiments::speed_reference_seconds() << "\n";
      return 0;
    }
    if (opts.config_path.empty()) throw UsageError("missing CONFIG");
    // Counts are read as text and range-checked (core/limits.hpp): "-1" must not wrap around.
    auto count = [&](const char* name, std::int64_t min, std::int64_t max, std::int64_t fallback) {
      return vm.count(name) ? parse_count(std::string("--") + name, vm[name].as<std::string>(), min, max) : fallback;
    };
    if (vm.count("threads")) opts.threads = parse_threads("--threads", vm["threads"].as<std::string>());
    opts.jobs = static_cast<int>(count("jobs", 1, kMaxThreads, opts.jobs));
    const auto sample = count("sample", 1, std::numeric_limits<int>::max(), 0);
    const HomeLocation home = find_home(repo, executable_path(), PRIVRACE_SOURCE_DIR);
    opts.repo_root = home.root;
    // An install's share/privrace is read-only data: results go to the working directory.
    if (opts.out_dir.empty() && home.installed()) opts.out_dir = "results";
    opts.sample_grid_points = static_cast<std::size_t>(sample);
    if (vm.count("sample") && opts.out_dir.empty())
      throw UsageError("--sample needs --out DIR (a calibration run must not mix with the real results)");
    const auto report = experiments::run_experiment(opts);
    if (opts.plan_only) print_plan(report);
    std::cerr << experiments::unavailable_summary(report);
    return experiments::exit_status(report);
  } catch (const UsageError& e) {
    std::cerr << "privrace-experiment: " << e.what() << "\n\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "privrace-experiment: error: " << e.what() << "\n";
    return 1;
  }
}
