#include "release_sweep.hpp"

namespace privrace::experiments {

PrivacySpec race_privacy_spec(const json& params, double epsilon) {
  PrivacySpec spec;
  spec.epsilon = epsilon;
  spec.delta = params.at("delta").get<double>();
  spec.mechanism = parse_mechanism(params.at("mechanism").get<std::string>());
  spec.neighbors = parse_neighbors(params.at("neighbors").get<std::string>());
  return spec;
}

}  // namespace privrace::experiments
