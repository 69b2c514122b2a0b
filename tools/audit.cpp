// privrace-audit: empirical differential-privacy audit of the library's release paths.
//   privrace-audit --all                      every path, 10^6 releases on each of D and D'
//   privrace-audit --path race_pstable --epsilon 0.5 --runs 200000 --confidence 0.999
//   privrace-audit --list
//   privrace-audit --thorough                 release check: every path at epsilon 0.25, 1 and 4,
//                                             4x10^6 releases a data set (4x10^7 for the mechanism
//                                             paths), confidence 0.999
// Exit status: 0 when every audited path passes, 1 when one fails, 2 on a usage error.
#include <boost/program_options.hpp>
#include <iostream>

#include "privrace/audit/paths.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/limits.hpp"
#include "privrace/core/version.hpp"

namespace po = boost::program_options;
using namespace privrace;

namespace {
po::options_description audit_options() {
  po::options_description opts("privrace-audit options");
  const std::string threads_help = "threads (0 = all cores, at most " + std::to_string(kMaxThreads) + ")";
  opts.add_options()("help,h", "this help")("version", "print the version and exit")("list", "list the release paths")(
      "path", po::value<std::vector<std::string>>(), "a release path to audit (repeatable)")(
      "all", "audit every path")(
      "thorough", "release check: every path at epsilon 0.25, 1 and 4 with more runs and a higher confidence "
      "(overrides --all, --path, --epsilon, --runs and --confidence)")("epsilon", po::value<double>()->default_value(1.0), "claimed epsilon")(
      "delta", po::value<double>()->default_value(1e-5), "claimed delta (Gaussian paths)")(
      "runs", po::value<std::string>()->default_value("1000000"), "releases on each of D and D'")(
      "confidence", po::value<double>()->default_value(0.99), "probability that a correct release passes")(
      "seed", po::value<std::uint64_t>()->default_value(1), "base seed of the noise streams")(
      "fresh-noise", "draw the noise from the release CSPRNG (not reproducible) instead of seeded streams")(
      "rows", po::value<std::string>()->default_value("4"), "sketch rows R")(
      "width", po::value<std::string>()->default_value("8"), "sketch width W")(
      "threads", po::value<std::string>()->default_value("0"), threads_help.c_str());
  return opts;
}

// Every named path at each epsilon, one summary line an audit; 0 when all pass, else 1. The
// thorough run: three epsilons, and runs enough for bounds within a few percent of the claim
// on the Laplace paths; the mechanism paths cost nanoseconds a release and get ten times more.
int run_audits(const std::vector<std::string>& names, audit::PathOptions path, const audit::AuditOptions& options, bool thorough) {
  std::vector<double> epsilons = {path.epsilon};
  audit::AuditOptions base = options;
  if (thorough) {
    epsilons = {0.25, 1.0, 4.0};
    base.confidence = 0.999;
  }
  bool all_pass = true;
  std::size_t failures = 0, audits = 0;
  for (const double eps : epsilons) {
    path.epsilon = eps;
    for (const auto& name : names) {
      audit::AuditOptions run = base;
      if (thorough) run.runs = name.rfind("mechanism_", 0) == 0 ? 40000000 : 4000000;
      const auto result = audit::run_audit(audit::make_path(name, path), run);
      std::cout << result.summary() << std::endl;
      all_pass = all_pass && result.pass();
      failures += result.pass() ? 0 : 1;
      ++audits;
    }
  }
  if (audits > 1)
    std::cout << (all_pass ? "all " + std::to_string(audits) + " audits pass"
                           : std::to_string(failures) + " of " + std::to_string(audits) + " audits FAIL")
              << std::endl;
  return all_pass ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const po::options_description opts = audit_options();
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
    // Counts are read as text and range-checked (core/limits.hpp): "-1" must not wrap around.
    auto count = [&](const char* name, std::int64_t min, std::int64_t max) {
      return parse_count(std::string("--") + name, vm[name].as<std::string>(), min, max);
    };
    if (vm.count("help")) {
      std::cout << opts << "\n";
      return 0;
    }
    if (vm.count("version")) {
      std::cout << "privrace-audit " << version() << " (" << git_commit() << ")\n";
      return 0;
    }
    if (vm.count("list")) {
      for (const auto& name : audit::path_names())
        std::cout << name << "\t" << audit::make_path(name).description << "\n";
      return 0;
    }
    const bool thorough = vm.count("thorough") > 0;
    std::vector<std::string> names;
    if (vm.count("all") || thorough) names = audit::path_names();
    if (vm.count("path") && !thorough)
      for (const auto& n : vm["path"].as<std::vector<std::string>>()) names.push_back(n);
    if (names.empty()) throw UsageError("name a --path, or pass --all (--list shows the paths)");
    audit::PathOptions po_;
    po_.epsilon = vm["epsilon"].as<double>();
    po_.delta = vm["delta"].as<double>();
    po_.rows = static_cast<std::size_t>(count("rows", 1, std::int64_t{1} << 32));
    po_.width = static_cast<std::size_t>(count("width", 1, std::int64_t{1} << 32));
    if (!(po_.epsilon > 0.0)) throw UsageError("--epsilon must be positive, got " + std::to_string(po_.epsilon));
    audit::AuditOptions ao;
    ao.runs = static_cast<std::size_t>(count("runs", 1, std::int64_t{1} << 40));
    ao.confidence = vm["confidence"].as<double>();
    ao.seed = vm["seed"].as<std::uint64_t>();
    ao.fresh_noise = vm.count("fresh-noise") > 0;
    ao.threads = parse_threads("--threads", vm["threads"].as<std::string>());
    return run_audits(names, po_, ao, thorough);
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
