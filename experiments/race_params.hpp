#pragma once
// Parameter groups RACE methods share, each a struct and its one table (params.hpp), composed
// into a method's parameters: the noise (every RACE method, the M2M sketches), the query
// estimator (KDE, graph) and the neighbouring relation's choices (histograms).
#include <string>
#include <utility>
#include <vector>

#include "params.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace::experiments {

// mechanism, delta, neighbors.
struct RaceNoise {
  NoiseMechanism mechanism = NoiseMechanism::DiscreteLaplace;
  double delta = 0.0;
  NeighborRelation neighbors = NeighborRelation::AddRemove;
  // "" when mechanism and delta agree (Gaussian needs 0 < delta < 1, the others delta = 0).
  std::string check() const;
  // The privacy spec of one cell.
  PrivacySpec privacy(double epsilon) const;
  static const ParamTable<RaceNoise>& table();
};

// "add-remove" | "replace", as the configs write them.
std::vector<std::pair<std::string, NeighborRelation>> neighbor_choices();

// estimator and mom_groups, read into the library's query options.
const ParamTable<QueryOptions>& query_estimator_table();

}  // namespace privrace::experiments
