#pragma once
// The PrivBayes hyperparameters as the KDE, regression and M2M methods read them from a cell
// (the synthetic size M, "samples", is read by each method: it is not part of the model).
#include <nlohmann/json.hpp>

#include "privrace/baselines/privbayes.hpp"

namespace privrace::experiments {

inline baselines::PrivBayesOptions privbayes_options(const nlohmann::json& params) {
  baselines::PrivBayesOptions o;
  o.degree = params.at("degree").get<int>();
  o.bins = params.at("bins").get<int>();
  o.beta = params.at("beta").get<double>();
  return o;
}

}  // namespace privrace::experiments
