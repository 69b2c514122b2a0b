// `privrace m2m` (Houssiau et al.): post-processing of a released feature sketch, no budget
// spent. The command line and the text output live here; the numbers are tasks/m2m.hpp's
// answer_m2m. Nothing is printed when any check fails.
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "inputs.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/tasks/m2m.hpp"

namespace privrace::cli {

namespace {

M2mTask parse_task(const std::string& name) {
  for (const M2mTask t : {M2mTask::Mean, M2mTask::Moment2, M2mTask::Cdf, M2mTask::Cov, M2mTask::Count})
    if (name == to_string(t)) return t;
  throw UsageError("--task '" + name + "': expected mean, moment2, cdf, cov or count");
}

// Lines: mean / moment2: one value per attribute; cdf: "attribute point value" per CDF point;
// cov: one row of the covariance matrix per line (with the M2M means); count: "fraction count"
// per query, count = fraction * (n + zeta).
std::string format_answer(const M2mAnswer& a) {
  std::string out;
  char buf[96];
  switch (a.task) {
    case M2mTask::Mean:
    case M2mTask::Moment2:
      for (Eigen::Index i = 0; i < a.values.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%.9g\n", a.values(i));
        out += buf;
      }
      break;
    case M2mTask::Cdf:
      for (Eigen::Index j = 0; j < a.cdf.rows(); ++j)
        for (Eigen::Index t = 0; t < a.cdf.cols(); ++t) {
          std::snprintf(buf, sizeof buf, "%lld %.9g %.9g\n", static_cast<long long>(j), a.cdf_points(j, t), a.cdf(j, t));
          out += buf;
        }
      break;
    case M2mTask::Cov:
      for (Eigen::Index j = 0; j < a.cov.rows(); ++j) {
        for (Eigen::Index k = 0; k < a.cov.cols(); ++k) {
          std::snprintf(buf, sizeof buf, k ? " %.9g" : "%.9g", a.cov(j, k));
          out += buf;
        }
        out += '\n';
      }
      break;
    case M2mTask::Count:
      for (Eigen::Index q = 0; q < a.values.size(); ++q) {
        std::snprintf(buf, sizeof buf, "%.9g %.9g\n", a.values(q), a.values(q) * a.count_used);
        out += buf;
      }
      break;
  }
  return out;
}

}  // namespace

int cmd_m2m(int argc, char** argv) {
  po::options_description desc("options");
  std::string sketch_path, domain, task_name, queries_path;
  std::uint64_t seed = 0x4d324d;
  bool intercept = false, allow_unsupported = false;
  std::string lambda_rule = "eq5";
  desc.add_options()("help,h", "show this help")
      ("sketch", po::value(&sketch_path)->required(), "feature sketch file: rff, hist, or a RACE sketch (positional)")
      ("task", po::value(&task_name)->required(), "mean | moment2 | cdf | cov | count")
      ("domain", po::value(&domain),
       "LO:HI, the box [LO, HI]^d every record lies in (M2M's psi is uniform on it). A hist sketch records its "
       "domain, the default and the only one accepted; rff and RACE sketches record none, so they need it")
      ("samples", po::value<std::string>()->default_value("100000"), "n_s synthetic points")
      ("seed", po::value(&seed)->default_value(0x4d324d), "seed of the synthetic points (public)")
      ("queries", po::value(&queries_path),
       "count: one query per line, 'i op value; j op value; ...' (one or more predicates on distinct attributes), "
       "op <= or >=, attributes from 0")
      ("allow-unsupported", po::bool_switch(&allow_unsupported),
       "answer a task the sketch's features cannot identify (on hist: cov, counting queries over several "
       "attributes), with a warning on stderr")
      ("intercept", po::bool_switch(&intercept), "fit an unpenalised constant (sketch value 1) beside the features")
      ("lambda", po::value(&lambda_rule)->default_value("eq5"),
       "ridge term of a private sketch: eq5 (sigma_xi^2 / (n + zeta)) | auto-noise (matched to the release's noise and signal)")
      ("threads,t", po::value<std::string>()->default_value("0"),
       ("OpenMP threads (0 = all, at most " + std::to_string(kMaxThreads) + ")").c_str());
  po::positional_options_description pos;
  pos.add("sketch", 1);
  const auto vm = parse("usage: privrace m2m SKETCH --task mean|moment2|cdf|cov|count [--domain LO:HI] [--samples N] [--queries FILE] "
        "[--intercept] [--lambda eq5|auto-noise] [--allow-unsupported]",
        desc, argc, argv, &pos);
  std::optional<std::pair<double, double>> interval;
  if (vm.count("domain")) interval = parse_domain_interval(domain);
  M2mLambdaRule rule = M2mLambdaRule::Eq5;
  try {
    rule = parse_m2m_lambda_rule(lambda_rule);
  } catch (const UsageError&) {
    throw UsageError(with_suggestion("--lambda '" + lambda_rule + "': expected eq5 or auto-noise", lambda_rule, {"eq5", "auto-noise"}));
  }
  const auto samples = count_option<std::size_t>(vm, "samples", 1, std::int64_t{1} << 40);
  const int threads = threads_option(vm);
  const M2mTask task = parse_suggesting(parse_task, task_name, {"mean", "moment2", "cdf", "cov", "count"});  // usage first
  const FeatureSketchRelease release = load_feature_release(sketch_path);
  warn_if_not_for_release(release.privacy, sketch_path);
  if (!release.map) throw InputError("the sketch has no feature map");
  const std::size_t d = release.map->input_dim();
  if (d < m2m_min_attributes(task))
    throw UsageError("--task " + task_name + " needs at least " + std::to_string(m2m_min_attributes(task)) +
                     " attributes; the sketch has " + std::to_string(d));
  std::vector<CountingQuery> queries;
  if (task == M2mTask::Count) {
    if (queries_path.empty()) throw UsageError("--task count needs --queries FILE");
    queries = parse_counting_queries(queries_path, d);
  } else if (!queries_path.empty()) {
    throw UsageError("--queries is only read by --task count");
  }
  M2mOptions options;
  if (interval) options.domain = BoxDomain::uniform(d, interval->first, interval->second);  // else the sketch's
  options.samples = samples;
  options.threads = threads;
  options.seed = seed;
  options.intercept = intercept;
  options.lambda_rule = rule;
  options.allow_unsupported = allow_unsupported;
  const M2mAnswer answer = answer_m2m(release, task, options, queries);
  const std::string out = format_answer(answer);  // complete before anything is printed
  if (!answer.warning.empty()) std::fprintf(stderr, "privrace: warning: %s\n", answer.warning.c_str());
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace privrace::cli
