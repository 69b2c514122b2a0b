// privrace-audit: empirical differential-privacy audit of the library's release paths.
//   privrace-audit --all                      every path, 10^6 releases on each of D and D'
//   privrace-audit --path race_pstable --epsilon 0.5 --runs 200000 --confidence 0.999
//   privrace-audit --list
// Exit status: 0 when every audited path passes, 1 when one fails, 2 on a usage error.
#include <boost/program_options.hpp>
#include <iostream>

#include "privrace/audit/paths.hpp"
#include "privrace/core/error.hpp"

namespace po = boost::program_options;
using namespace privrace;

int main(int argc, char** argv) {
  try {
    po::options_description opts("privrace-audit options");
    opts.add_options()("help,h", "this help")("list", "list the release paths")(
        "path", po::value<std::vector<std::string>>(), "a release path to audit (repeatable)")(
        "all", "audit every path")("epsilon", po::value<double>()->default_value(1.0), "claimed epsilon")(
        "delta", po::value<double>()->default_value(1e-5), "claimed delta (Gaussian paths)")(
        "runs", po::value<std::size_t>()->default_value(1000000), "releases on each of D and D'")(
        "confidence", po::value<double>()->default_value(0.99), "probability that a correct release passes")(
        "seed", po::value<std::uint64_t>()->default_value(1), "base seed of the noise streams")(
        "fresh-noise", "draw the noise from the release CSPRNG (not reproducible) instead of seeded streams")(
        "rows", po::value<std::size_t>()->default_value(4), "sketch rows R")(
        "width", po::value<std::size_t>()->default_value(8), "sketch width W")(
        "threads", po::value<int>()->default_value(0), "threads (0 = all cores)");
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts << "\n";
      return 0;
    }
    if (vm.count("list")) {
      for (const auto& name : audit::path_names())
        std::cout << name << "\t" << audit::make_path(name).description << "\n";
      return 0;
    }
    std::vector<std::string> names;
    if (vm.count("all")) names = audit::path_names();
    if (vm.count("path"))
      for (const auto& n : vm["path"].as<std::vector<std::string>>()) names.push_back(n);
    if (names.empty()) throw UsageError("name a --path, or pass --all (--list shows the paths)");
    audit::PathOptions po_;
    po_.epsilon = vm["epsilon"].as<double>();
    po_.delta = vm["delta"].as<double>();
    po_.rows = vm["rows"].as<std::size_t>();
    po_.width = vm["width"].as<std::size_t>();
    if (!(po_.epsilon > 0.0)) throw UsageError("--epsilon must be positive, got " + std::to_string(po_.epsilon));
    audit::AuditOptions ao;
    ao.runs = vm["runs"].as<std::size_t>();
    ao.confidence = vm["confidence"].as<double>();
    ao.seed = vm["seed"].as<std::uint64_t>();
    ao.fresh_noise = vm.count("fresh-noise") > 0;
    ao.threads = vm["threads"].as<int>();
    bool all_pass = true;
    for (const auto& name : names) {
      const auto result = audit::run_audit(audit::make_path(name, po_), ao);
      std::cout << result.summary() << std::endl;
      all_pass = all_pass && result.pass();
    }
    return all_pass ? 0 : 1;
  } catch (const po::error& e) {
    std::cerr << "privrace-audit: " << e.what() << "\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << "privrace-audit: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "privrace-audit: " << e.what() << "\n";
    return 3;
  }
}
