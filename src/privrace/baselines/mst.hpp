#pragma once
// MST (McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and general approach to
// differentially private synthetic data", Journal of Privacy and Confidentiality 2021): the
// one-way marginals, a maximum spanning tree of pairwise dependencies chosen privately, the
// tree's two-way marginals, Private-PGM (private_pgm.hpp) to fit a graphical model to them, and
// synthetic rows sampled from it.
//
// * Privacy: rho-zCDP with rho from (epsilon, delta) by epsilon = rho + 2 sqrt(rho log(1/delta))
//   (pgm::zcdp_rho), split in three equal parts as in the paper: rho/3 for the d one-way
//   marginals (Gaussian, sigma = Delta2 sqrt(d / (2 rho/3))), rho/3 for the d - 1 tree edges
//   (exponential mechanism, epsilon_e = sqrt(8 (rho/3) / (d - 1)) each), rho/3 for the d - 1
//   two-way marginals (sigma = Delta2 sqrt((d - 1) / (2 rho/3))). With d = 1 all of rho measures
//   the one marginal.
// * Neighbours: add or remove one record by default (the paper's): a marginal's L2 sensitivity
//   Delta2 is 1 and a selection score's sensitivity 1; "replace" (n public, as PrivBayes and
//   DP-Copula here) doubles the scores' sensitivity and makes Delta2 = sqrt(2). Nothing is
//   normalised by n: the model's total is estimated from the noisy counts.
// * Noise: the exact discrete Gaussian sampler on the integer counts (pgm::DiscreteGaussian,
//   sigma^2 rounded up), every cell of every measured marginal, in cell order.
// * Selection (the paper's Algorithm): the one-way measurements are fitted (Private-PGM), and
//   every pair (i, j) scored by ||M_ij(D) - M_ij(model)||_1, the L1 distance between the data's
//   2-way counts and the independent model's estimate of them; then Kruskal's order with private
//   choices: d - 1 times, among the pairs that join two different components, one is drawn by
//   the exponential mechanism (floating point, as PrivBayes' network) and the components merged.
// * Discretisation: the paper compresses each attribute's domain (rare values merged after a
//   first noisy measurement); here every attribute is cut into `bins` equal-width bins over its
//   public interval, as PrivBayes does, and synthetic values are uniform inside their bin.
// * Estimation: Private-PGM on all 2d - 1 measurements; the junction tree is the spanning tree
//   itself (its cliques are the chosen pairs).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "privrace/baselines/private_pgm.hpp"
#include "privrace/baselines/synthetic.hpp"

namespace privrace::baselines {

struct MstOptions {
  int bins = 16;
  int iterations = 1000;                 // Private-PGM mirror-descent iterations (at most)
  std::string neighbors = "add-remove";  // or "replace"
  double max_cells = double(1 << 24);    // bound on the model's clique-table cells
};

class MstGenerator final : public PgmSynthesizer {
 public:
  explicit MstGenerator(const MstOptions& options = {}) : opt_(options) {}
  std::string name() const override { return "mst"; }
  // (epsilon, delta)-DP: delta in (0, 1) required. UsageError for bad settings, naming them,
  // and, before anything is allocated, when a spanning tree's (d - 1) bins^2 cells exceed
  // max_cells.
  void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) override;
  const std::vector<std::pair<int, int>>& edges() const { return edges_; }  // the chosen tree

 private:
  MstOptions opt_;
  std::vector<std::pair<int, int>> edges_;
};

// Shared by MST and AIM: the L2 sensitivity of a count marginal and the sensitivity of an L1
// score of counts under `neighbors` ("add-remove": 1 and 1; "replace": sqrt(2) and 2).
// UsageError for another name.
std::pair<double, double> marginal_sensitivities(const std::string& neighbors, const std::string& generator);

}  // namespace privrace::baselines
