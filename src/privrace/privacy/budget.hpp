#pragma once
// What a data owner asks for, and the sensitivity of a RACE sketch under it.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace privrace {

// Gaussian: the analytic Gaussian mechanism's sigma, continuous noise rounded to integers.
// DiscreteGaussian: exact N_Z(0, sigma^2) draws, sigma from rho-zCDP (docs/privacy.md).
enum class NoiseMechanism { DiscreteLaplace, FlooredLaplace, Gaussian, DiscreteGaussian };
enum class NeighborRelation { AddRemove, Replace };
// What one neighbouring change is made of. Record: one record (a row of a table, one set).
// Edge: one edge of a graph whose records are its nodes' out-neighbour sets (an edge list):
// adding or removing it changes one node's set (Edge) or, when every edge is stored in both
// directions, two nodes' sets (UndirectedEdge).
enum class NeighborUnit { Record, Edge, UndirectedEdge };

struct PrivacySpec {
  double epsilon = 1.0;
  double delta = 0.0;  // the Gaussian mechanisms only
  NoiseMechanism mechanism = NoiseMechanism::DiscreteLaplace;
  NeighborRelation neighbors = NeighborRelation::AddRemove;
  NeighborUnit unit = NeighborUnit::Record;
  // Share of epsilon spent on releasing the record count |D| + zeta (feature sketches: the
  // paper's epsilon_den = 0.02 epsilon); the counts get epsilon_num = (1 - count_share) epsilon.
  // 0: no count is released (RACE for KDE, whose N-hat comes from the counts themselves).
  double count_share = 0.0;
  void validate() const;  // throws UsageError naming the field
};

// The mechanisms' rule for delta, the one check of it (PrivacySpec::validate; the experiment
// configs word its answers their own way): the Gaussian mechanisms need delta in (0, 1), the
// Laplace mechanisms are pure epsilon-DP (delta = 0).
enum class DeltaRule { Holds, GaussianNeedsDelta, DeltaWithoutGaussian };
DeltaRule check_delta(NoiseMechanism mechanism, double delta);

NoiseMechanism parse_mechanism(const std::string& name);  // discrete_laplace | floored_laplace | gaussian | discrete_gaussian
bool is_gaussian(NoiseMechanism m);  // gaussian or discrete_gaussian: (epsilon, delta)-DP
std::string to_string(NoiseMechanism m);
NeighborRelation parse_neighbors(const std::string& name);  // add-remove | replace
std::string to_string(NeighborRelation n);
NeighborUnit parse_neighbor_unit(const std::string& name);  // record | edge | undirected_edge
std::string to_string(NeighborUnit u);
// Records whose contribution one neighbouring change of `unit` can replace (1, 1, 2).
std::size_t records_changed(NeighborUnit unit);

struct Sensitivity {
  double l1 = 0.0;
  double l2 = 0.0;
};

// Sensitivity of the R x W count array when one record touches `cells_per_record` cells a row
// (1 for plain RACE, 2 when the regression sketch inserts x and -x). Derivation:
//  * add/remove one record: in each of the R rows the record adds 1 to each of its c cells
//    (a cell can take 2 of them). Per row the change has L1 norm exactly c and L2 norm at
//    most c. Rows are independent, so over the sketch L1 = c R and L2 <= c sqrt(R).
//  * replace one record (remove x, add x'): per row the change is a - r with a, r >= 0
//    elementwise, each of L1 norm c, so L1 <= 2c and ||a - r||^2 = ||a||^2 + ||r||^2 - 2 a.r
//    <= 2c^2: L2 <= sqrt(2) c. Over the sketch L1 = 2 c R and L2 <= c sqrt(2 R).
Sensitivity race_sensitivity(std::size_t rows, std::size_t cells_per_record, NeighborRelation neighbors);

// The same when the neighbouring change is an edge (NeighborUnit::Edge / UndirectedEdge) and the
// records are the nodes' out-neighbour sets. Adding or removing one edge changes k = 1 node's
// set (k = 2 when edges are stored in both directions); replacing an edge by another changes up
// to 2k sets. A changed set is, for the sketch, the replacement of one record (a node whose set
// becomes empty, or non-empty, is the removal or addition of one: no more than a replacement),
// so by the triangle inequality over the changed sets the sensitivity is at most
// m x race_sensitivity(R, c, Replace), m = k (add/remove) or 2k (replace):
// L1 = 2 c R m and L2 <= c sqrt(2 R) m.
Sensitivity race_sensitivity(std::size_t rows, std::size_t cells_per_record, NeighborRelation neighbors, NeighborUnit unit);

// Sensitivity of a sum of per-record vectors v(x) with ||v(x)||_1 <= l1 and ||v(x)||_2 <= l2
// for every x (RFF on its integer grid: the bounds are derived in lsh/rff.cpp).
//  * add/remove one record changes the sum by +-v(x): L1 = l1, L2 = l2.
//  * replace x by x' changes it by v(x') - v(x): L1 <= 2 l1, L2 <= 2 l2 (triangle inequality).
Sensitivity value_sum_sensitivity(double l1, double l2, NeighborRelation neighbors);

// Sensitivity of the record count |D|: 1 under add/remove; 0 under replace (the count is
// public in bounded DP, so it is released exactly and needs no share of epsilon).
double count_sensitivity(NeighborRelation neighbors);

}  // namespace privrace
