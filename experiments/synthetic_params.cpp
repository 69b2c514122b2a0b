#include "synthetic_params.hpp"

#include <type_traits>

#include "privrace/core/error.hpp"

namespace privrace::experiments {
namespace {

// Calls f(field) on the option `key` of `generator` and returns true, or returns false when
// the generator has no such option.
template <class F>
bool visit_synthetic_option(const std::string& generator, const std::string& key, baselines::SyntheticOptions& o, F&& f) {
  const auto r = [&](const char* name, auto& field) {
    if (key != name) return false;
    f(field);
    return true;
  };
  if (generator == "dp_copula") {
    auto& d = o.dp_copula;
    return r("bins", d.bins) || r("marginal_ratio", d.marginal_ratio) || r("min_eigenvalue", d.min_eigenvalue);
  }
  if (generator == "privbayes") {
    auto& d = o.privbayes;
    return r("degree", d.degree) || r("bins", d.bins) || r("beta", d.beta);
  }
  if (generator == "dp_wgan") {
    auto& d = o.dp_wgan;
    return r("latent", d.latent) || r("hidden", d.hidden) || r("batch", d.batch) || r("generator_steps", d.generator_steps) ||
           r("critic_steps", d.critic_steps) || r("clip", d.clip) || r("learning_rate", d.learning_rate) ||
           r("weight_clip", d.weight_clip);
  }
  if (generator == "mst") {
    auto& d = o.mst;
    return r("bins", d.bins) || r("iterations", d.iterations) || r("neighbors", d.neighbors) || r("max_cells", d.max_cells);
  }
  if (generator == "aim") {
    auto& d = o.aim;
    return r("bins", d.bins) || r("degree", d.degree) || r("max_cells", d.max_cells) ||
           r("rounds_per_attribute", d.rounds_per_attribute) || r("alpha", d.alpha) ||
           r("round_iterations", d.round_iterations) || r("final_iterations", d.final_iterations) ||
           r("neighbors", d.neighbors);
  }
  throw Error("synthetic data: unknown generator '" + generator + "'");
}

}  // namespace

ParamTable<baselines::SyntheticOptions> synthetic_table(const std::string& generator,
                                                        const std::vector<ParamSpec>& hyperparameters) {
  using O = baselines::SyntheticOptions;
  ParamTable<O> table;
  for (const auto& spec : hyperparameters) {
    O probe;
    if (!visit_synthetic_option(generator, spec.name, probe, [](auto&) {}))
      throw Error("synthetic data: parameter '" + spec.name + "' is no option of the " + generator + " generator");
    table.add(
        spec,
        [generator, name = spec.name](O& o, const json& v) {
          visit_synthetic_option(generator, name, o, [&](auto& field) { field = v.get<std::decay_t<decltype(field)>>(); });
        },
        [generator, name = spec.name](const O& o, json& v) {
          O copy = o;
          visit_synthetic_option(generator, name, copy, [&](auto& field) { v = field; });
        });
  }
  return table;
}

baselines::SyntheticOptions synthetic_options(const std::string& generator, const std::vector<ParamSpec>& hyperparameters,
                                              const json& params) {
  return synthetic_table(generator, hyperparameters).decode(params);
}

}  // namespace privrace::experiments
