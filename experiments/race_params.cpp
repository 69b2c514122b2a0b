#include "race_params.hpp"

namespace privrace::experiments {

std::vector<std::pair<std::string, NeighborRelation>> neighbor_choices() {
  return {{"add-remove", NeighborRelation::AddRemove}, {"replace", NeighborRelation::Replace}};
}

const ParamTable<RaceNoise>& RaceNoise::table() {
  using K = ParamSpec::Kind;
  static const auto t = ParamTable<RaceNoise>()
                            .add(&RaceNoise::mechanism, "mechanism",
                                 {{"discrete_laplace", NoiseMechanism::DiscreteLaplace},
                                  {"floored_laplace", NoiseMechanism::FlooredLaplace},
                                  {"gaussian", NoiseMechanism::Gaussian},
                                  {"discrete_gaussian", NoiseMechanism::DiscreteGaussian}},
                                 "discrete_laplace", "noise")
                            .add(&RaceNoise::delta, "delta", K::Number, 0.0, "delta (gaussian and discrete_gaussian only)")
                            .add(&RaceNoise::neighbors, "neighbors", neighbor_choices(), "add-remove", "neighbouring relation");
  return t;
}

std::string RaceNoise::check() const {
  // The library's rule (privacy/budget.hpp), in the configs' words.
  switch (check_delta(mechanism, delta)) {
    case DeltaRule::Holds: return {};
    case DeltaRule::GaussianNeedsDelta: return "mechanism " + to_string(mechanism) + " needs 0 < delta < 1";
    case DeltaRule::DeltaWithoutGaussian: return "delta is only used by mechanisms gaussian and discrete_gaussian";
  }
  return {};
}

PrivacySpec RaceNoise::privacy(double epsilon) const {
  PrivacySpec spec;
  spec.epsilon = epsilon;
  spec.delta = delta;
  spec.mechanism = mechanism;
  spec.neighbors = neighbors;
  return spec;
}

const ParamTable<QueryOptions>& query_estimator_table() {
  using K = ParamSpec::Kind;
  static const auto t =
      ParamTable<QueryOptions>()
          .add(&QueryOptions::estimator, "estimator", {{"mean", Estimator::Mean}, {"mom", Estimator::MedianOfMeans}},
               "mean", "mean over rows or median of means")
          .add(&QueryOptions::mom_groups, "mom_groups", K::PositiveInt, 5, "median-of-means groups");
  return t;
}

}  // namespace privrace::experiments
