#include "synthetic_params.hpp"

#include "privrace/core/error.hpp"

namespace privrace::experiments {
namespace {

// Assigns `value` to `field` when `key` is `name`.
template <class T>
bool read_synthetic_option(const std::string& key, const json& value, const char* name, T& field) {
  if (key != name) return false;
  field = value.get<T>();
  return true;
}

// Whether `key` is an option of `generator`, assigned from `v` when it is.
bool assign_synthetic_option(const std::string& generator, const std::string& key, const json& v,
                             baselines::SyntheticOptions& o) {
  const auto r = [&](const char* name, auto& field) { return read_synthetic_option(key, v, name, field); };
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

baselines::SyntheticOptions synthetic_options(const std::string& generator, const std::vector<ParamSpec>& hyperparameters,
                                              const json& params) {
  baselines::SyntheticOptions o;
  for (const auto& spec : hyperparameters)
    if (!assign_synthetic_option(generator, spec.name, params.at(spec.name), o))
      throw Error("synthetic data: parameter '" + spec.name + "' is no option of the " + generator + " generator");
  return o;
}

}  // namespace privrace::experiments
