#pragma once
// The PrivBayes hyperparameters as the KDE and regression methods read them from a cell.
#include <nlohmann/json.hpp>

#include "privrace/baselines/privbayes.hpp"

namespace privrace::experiments {

inline baselines::PrivBayesOptions privbayes_options(const nlohmann::json& params) {
  baselines::PrivBayesOptions o;
  o.degree = params.at("degree").get<int>();
  o.bins = params.at("bins").get<int>();
  o.samples = params.at("samples").get<std::size_t>();
  o.beta = params.at("beta").get<double>();
  return o;
}

}  // namespace privrace::experiments
