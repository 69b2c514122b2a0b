#pragma once
// AIM (McKenna, Mullins, Sheldon & Miklau, "AIM: An Adaptive and Iterative Mechanism for
// Differentially Private Synthetic Data", VLDB 2022): a workload of marginals to preserve, the
// one-way marginals measured first, then rounds that each choose the marginal the current model
// answers worst (exponential mechanism), measure it (Gaussian mechanism) and refit the model
// (Private-PGM, private_pgm.hpp), with the budget annealed until rho is spent.
//
// * Privacy: rho-zCDP, rho from (epsilon, delta) by epsilon = rho + 2 sqrt(rho log(1/delta)).
//   T = rounds_per_attribute x d (the paper's 16 d), alpha = 0.9: the initial
//   sigma = Delta2 sqrt(T / (2 alpha rho)) and epsilon_t = sqrt(8 (1 - alpha) rho / T). The
//   one-way marginals cost d Delta2^2 / (2 sigma^2); a round costs Delta2^2 / (2 sigma_t^2) +
//   epsilon_t^2 / 8. When what is left is at most twice a round's cost, the round is the last and
//   spends all of it (sigma and epsilon_t recomputed from the rest with the same alpha split).
//   Composition: the spent rho's add up to rho exactly (the record lists every round).
// * Candidates: the workload's downward closure (every non-empty subset of a workload clique),
//   weights w_r = sum over workload cliques s of |r intersect s|. Quality (the paper's):
//   q_r = w_r (||M_r(D) - M_r(model)||_1 - sqrt(2/pi) sigma_t n_r), n_r = cells of r; its
//   sensitivity is max_r w_r (add/remove; 2 max_r w_r under replace).
// * Size bound: a candidate is eligible in a round when the junction tree of the measured
//   cliques plus it has at most (rho_used / rho) max_cells cells (the paper's annealed model-size
//   bound, in cells instead of megabytes), or when it lies inside a measured clique's tree clique
//   already. A fit whose initial model (d one-way marginals) exceeds max_cells is refused before
//   anything is allocated, with the estimated size. Junction trees: min-fill triangulation.
// * Annealing: after a round on r, if the refitted model's M_r moved by at most
//   sqrt(2/pi) sigma_t n_r in L1, sigma halves and epsilon_t doubles.
// * Discretisation, noise, neighbours: as MST (mst.hpp): equal-width bins over the public box
//   (the paper compresses domains), the exact discrete Gaussian on counts, add/remove by default.
// * Estimation: Private-PGM, warm-started from the previous round's potentials, round_iterations
//   per round (stopping early once a step lowers the loss by less than 1e-4 of it: a round's model
//   only guides the next choice) and final_iterations at the end (tolerance 1e-8).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "privrace/baselines/private_pgm.hpp"
#include "privrace/baselines/synthetic.hpp"

namespace privrace::baselines {

struct AimOptions {
  int bins = 16;
  int degree = 3;                      // the workload: every degree-way marginal (when `workload` is empty)
  std::vector<pgm::Clique> workload;   // explicit workload cliques (attribute indices)
  double max_cells = double(1 << 20);  // model size bound (junction-tree cells)
  int rounds_per_attribute = 16;       // T = rounds_per_attribute x d
  double alpha = 0.9;                  // share of a round's rho for the measurement
  int round_iterations = 100;          // Private-PGM iterations after each round (warm start)
  int final_iterations = 1000;         // ... for the released model
  std::string neighbors = "add-remove";
};

namespace aim_detail {

// Candidates: the workload's downward closure (sorted, clique order) with weights
// w_r = sum over workload cliques s of |r intersect s|, computed as sum_{a in r} #{s : a in s}
// (integers: the same doubles); those over max_cells cells are dropped.
struct Candidates {
  std::vector<pgm::Clique> cliques;
  std::vector<double> weights;
};
Candidates candidates_of(const std::vector<pgm::Clique>& workload, const std::vector<int>& domain, double max_cells);

// The data's marginal of each candidate, counted the first time a round finds it eligible (most
// of the 26k candidates of a 54-attribute 3-way workload never are at small epsilon).
class DataMarginals {
 public:
  DataMarginals(const std::vector<std::uint16_t>& codes, std::size_t n, const std::vector<int>& domain, std::size_t count)
      : codes_(codes), n_(n), domain_(domain), table_(count), done_(count, 0) {}
  // Counts (in parallel) every candidate with needed[c] = 1 not counted yet (n < 2^32 rows).
  void count(const Candidates& cands, const std::vector<char>& needed);
  const std::vector<std::uint32_t>& of(std::size_t c) const { return table_[c]; }  // counts, as pgm::data_marginal

 private:
  const std::vector<std::uint16_t>& codes_;
  std::size_t n_;
  const std::vector<int>& domain_;
  std::vector<std::vector<std::uint32_t>> table_;
  std::vector<char> done_;
};

}  // namespace aim_detail

class AimGenerator final : public PgmSynthesizer {
 public:
  explicit AimGenerator(const AimOptions& options = {}) : opt_(options) {}
  std::string name() const override { return "aim"; }
  void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) override;
  const std::vector<pgm::Clique>& selected() const { return selected_; }  // one per round

 private:
  AimOptions opt_;
  std::vector<pgm::Clique> selected_;
};

}  // namespace privrace::baselines
