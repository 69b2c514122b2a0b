#pragma once
// The PrivBayes model's hyperparameters (degree, bins, beta) as the KDE, regression and M2M
// methods declare them: fields of baselines::PrivBayesOptions in the method's parameter struct,
// added to its table (params.hpp) by these helpers. The synthetic size M ("samples") is each
// method's own: it is not part of the model (and sits between bins and beta in their tables).
#include <string>

#include "params.hpp"
#include "privrace/baselines/privbayes.hpp"

namespace privrace::experiments {

// degree (default 2) and bins (default 16) into `options`.
template <class P>
ParamTable<P>& add_privbayes_degree_bins(ParamTable<P>& table, baselines::PrivBayesOptions P::*options,
                                        std::string bins_help = "equal-width bins per attribute") {
  using K = ParamSpec::Kind;
  using O = baselines::PrivBayesOptions;
  return table.add(options, &O::degree, "degree", K::PositiveInt, 2, "network degree k (the paper's D)")
      .add(options, &O::bins, "bins", K::PositiveInt, 16, std::move(bins_help));
}

// beta (default 0.3) into `options`.
template <class P>
ParamTable<P>& add_privbayes_beta(ParamTable<P>& table, baselines::PrivBayesOptions P::*options,
                                 std::string help = "share of epsilon for the network") {
  return table.add(options, &baselines::PrivBayesOptions::beta, "beta", ParamSpec::Kind::PositiveNumber, 0.3,
                   std::move(help));
}

// beta > 0 is the parameter's kind; beta < 1 is checked here.
inline std::string check_privbayes_beta(const baselines::PrivBayesOptions& o) {
  return o.beta < 1 ? "" : "beta must be below 1";
}

}  // namespace privrace::experiments
