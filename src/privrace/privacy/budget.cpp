#include "privrace/privacy/budget.hpp"

#include <cmath>

#include "privrace/core/error.hpp"

namespace privrace {

void PrivacySpec::validate() const {
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    throw UsageError("epsilon must be a positive finite number, got " + std::to_string(epsilon));
  switch (check_delta(mechanism, delta)) {
    case DeltaRule::Holds: break;
    case DeltaRule::GaussianNeedsDelta: throw UsageError("the Gaussian mechanisms need delta in (0, 1)");
    case DeltaRule::DeltaWithoutGaussian:
      throw UsageError("delta is only used by the Gaussian mechanisms; the Laplace mechanisms are pure epsilon-DP");
  }
  if (!(count_share >= 0.0 && count_share < 1.0))
    throw UsageError("the count's share of epsilon must be in [0, 1), got " + std::to_string(count_share));
}

DeltaRule check_delta(NoiseMechanism mechanism, double delta) {
  if (is_gaussian(mechanism)) return delta > 0.0 && delta < 1.0 ? DeltaRule::Holds : DeltaRule::GaussianNeedsDelta;
  return delta == 0.0 ? DeltaRule::Holds : DeltaRule::DeltaWithoutGaussian;
}

NoiseMechanism parse_mechanism(const std::string& name) {
  if (name == "discrete_laplace") return NoiseMechanism::DiscreteLaplace;
  if (name == "floored_laplace") return NoiseMechanism::FlooredLaplace;
  if (name == "gaussian") return NoiseMechanism::Gaussian;
  if (name == "discrete_gaussian") return NoiseMechanism::DiscreteGaussian;
  throw UsageError("unknown mechanism '" + name + "' (expected discrete_laplace, floored_laplace, gaussian or discrete_gaussian)");
}

bool is_gaussian(NoiseMechanism m) { return m == NoiseMechanism::Gaussian || m == NoiseMechanism::DiscreteGaussian; }

std::string to_string(NoiseMechanism m) {
  switch (m) {
    case NoiseMechanism::DiscreteLaplace: return "discrete_laplace";
    case NoiseMechanism::FlooredLaplace: return "floored_laplace";
    case NoiseMechanism::Gaussian: return "gaussian";
    case NoiseMechanism::DiscreteGaussian: return "discrete_gaussian";
  }
  return "?";
}

NeighborRelation parse_neighbors(const std::string& name) {
  if (name == "add-remove" || name == "add_remove") return NeighborRelation::AddRemove;
  if (name == "replace") return NeighborRelation::Replace;
  throw UsageError("unknown neighbour relation '" + name + "' (expected add-remove or replace)");
}

std::string to_string(NeighborRelation n) { return n == NeighborRelation::AddRemove ? "add-remove" : "replace"; }

NeighborUnit parse_neighbor_unit(const std::string& name) {
  if (name == "record") return NeighborUnit::Record;
  if (name == "edge") return NeighborUnit::Edge;
  if (name == "undirected_edge") return NeighborUnit::UndirectedEdge;
  throw UsageError("unknown neighbouring unit '" + name + "' (expected record, edge or undirected_edge)");
}

std::string to_string(NeighborUnit u) {
  switch (u) {
    case NeighborUnit::Record: return "record";
    case NeighborUnit::Edge: return "edge";
    case NeighborUnit::UndirectedEdge: return "undirected_edge";
  }
  return "?";
}

std::size_t records_changed(NeighborUnit unit) { return unit == NeighborUnit::UndirectedEdge ? 2 : 1; }

Sensitivity race_sensitivity(std::size_t rows, std::size_t cells_per_record, NeighborRelation neighbors) {
  const double r = static_cast<double>(rows), c = static_cast<double>(cells_per_record);
  if (neighbors == NeighborRelation::AddRemove) return {c * r, c * std::sqrt(r)};
  return {2.0 * c * r, c * std::sqrt(2.0 * r)};
}

Sensitivity race_sensitivity(std::size_t rows, std::size_t cells_per_record, NeighborRelation neighbors, NeighborUnit unit) {
  if (unit == NeighborUnit::Record) return race_sensitivity(rows, cells_per_record, neighbors);
  const double m = static_cast<double>(records_changed(unit)) * (neighbors == NeighborRelation::AddRemove ? 1.0 : 2.0);
  const Sensitivity one = race_sensitivity(rows, cells_per_record, NeighborRelation::Replace);
  return {m * one.l1, m * one.l2};
}

Sensitivity value_sum_sensitivity(double l1, double l2, NeighborRelation neighbors) {
  if (neighbors == NeighborRelation::AddRemove) return {l1, l2};
  return {2.0 * l1, 2.0 * l2};
}

double count_sensitivity(NeighborRelation neighbors) { return neighbors == NeighborRelation::AddRemove ? 1.0 : 0.0; }

}  // namespace privrace
