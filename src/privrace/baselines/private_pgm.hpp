#pragma once
// Private-PGM (McKenna, Sheldon & Miklau, "Graphical-model based estimation and inference for
// differential privacy", ICML 2019): from noisy marginal measurements of a discretised table,
// a graphical model whose marginals fit them, and synthetic rows drawn from it. It is the
// estimation step shared by MST (mst.hpp) and AIM (aim.hpp); everything here is
// post-processing of the noisy measurements (no privacy cost), except the measurement helpers
// at the end (the discrete Gaussian sampler and the zCDP conversions) that MST and AIM use to
// take those measurements.
//
// * Domain: d attributes, attribute j taking values 0 .. domain[j] - 1. A clique is a sorted
//   set of attribute indices; a factor over it stores one value per cell, the first attribute
//   slowest (row-major in the clique's order), the last fastest.
// * Measurement: y = M_C(D) + N(0, sigma^2 I), M_C the count vector of clique C.
// * Model: p(x) proportional to exp(sum_m theta_m(x_{C_m})), one potential per distinct
//   measured clique (the log-linear family Private-PGM fits), times a total N estimated from the
//   measurements (the inverse-variance weighted mean of their sums).
// * Junction tree: the graph with an edge between every two attributes of a measured clique
//   (and every attribute as a vertex) is triangulated by min-fill elimination (ties: fewer
//   neighbours, then the lower index); the maximal elimination cliques are joined by a maximum
//   spanning tree of separator sizes (Kruskal; components joined by empty separators), which has
//   the running-intersection property for a chordal graph. Each potential is added into the
//   first tree clique containing it.
// * Inference: sum-product belief propagation on the junction tree in the probability domain
//   (clique tables exp(theta_C - max theta_C), messages rescaled to sum 1; Hugin-style
//   distribution: the down message is the parent belief's separator marginal over the up
//   message). It gives every clique's exact marginal; a marginal over attributes in no single
//   clique is the product of the marginals of the parts of the smallest subtree that covers
//   them, cut at its empty separators (independent parts), each part's by variable elimination.
// * Estimation: minimise L(mu) = 1/2 sum_m ||N mu_m - y_m||^2 / sigma_m^2 over the marginal
//   polytope by entropic mirror descent: theta_m <- theta_m - eta dL/dmu_m, mu from belief
//   propagation. The step starts at 1/Lip with Lip = N^2 sum_m 1/sigma_m^2 (L is Lip-smooth in
//   the L1 norm, and the entropy of the joint is 1-strongly convex in it), is doubled after a
//   step accepted at its first try and halved until the Armijo condition
//   L(mu) - L(mu') >= 1/2 <dL/dmu, mu - mu'> holds. Mirror descent moves a cell's probability
//   by an amount proportional to the probability itself, so small cells (zero counts) converge
//   slowly; the descent therefore starts with scaled steps theta_m <- theta_m + s d_m,
//   d_m = -(mu_m - ybar_m / N) / mu_m per cell (ybar_m the clique's inverse-variance weighted
//   measurement; clipped to [-20, 20]: an iterative-proportional-fitting-like step), accepted by
//   the same Armijo test, and switches to mirror-descent steps for good when a scaled step still
//   fails it after six halvings of s (the scaled direction need not be a descent direction near the optimum of
//   inconsistent noisy measurements). Every accepted step lowers L. A potential nested in a
//   larger one with the same tree clique is folded into it (one pass over the clique table per
//   unfolded potential).
// * Sampling: forward sampling along the junction tree: the root clique from its marginal,
//   then each clique's new attributes given its separator's sampled values (inversion on the
//   conditional's running sums). Rows come in fixed blocks, each from its own stream derived
//   from the seed, so they do not depend on the thread count.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "privrace/baselines/synthetic.hpp"
#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"

namespace privrace::baselines::pgm {

using Clique = std::vector<int>;  // sorted, distinct attribute indices

// Cells of a clique: the product of its attributes' domain sizes (1 for the empty clique).
double clique_cells(const Clique& c, const std::vector<int>& domain);
// cell of `sub` for every cell of `c` (sub must be a subset of c).
std::vector<std::uint32_t> index_map(const Clique& c, const Clique& sub, const std::vector<int>& domain);

// index_map(c, sub) kept as runs: over each run of `run()` consecutive cells of c the map is
// constant (c's trailing attributes outside sub) or rises by one a cell (c's trailing attributes
// inside sub, which are sub's trailing ones too), so the loops over it (belief propagation's
// products and sums) walk contiguous stretches. Every operation does, cell by cell and in cell
// order, what the same loop over index_map does: the same doubles.
class SubsetMap {
 public:
  SubsetMap() = default;
  SubsetMap(const Clique& c, const Clique& sub, const std::vector<int>& domain);
  std::size_t cells() const { return base_.size() * run_; }
  std::uint32_t operator[](std::size_t i) const {
    return base_[i / run_] + (step_ ? static_cast<std::uint32_t>(i % run_) : 0u);
  }
  std::size_t run() const { return run_; }
  bool step() const { return step_; }
  // out[i] = op(x[i], v[map[i]]) for every cell i of c, run by run (out may be x: in place).
  template <class Op>
  void combine(const std::vector<double>& x, const std::vector<double>& v, std::vector<double>& out, Op op) const {
    out.resize(x.size());
    const double* xi = x.data();
    double* o = out.data();
    for (const std::uint32_t b : base_) {
      const double* src = v.data() + b;
      if (step_)
        for (std::size_t t = 0; t < run_; ++t) o[t] = op(xi[t], src[t]);
      else
        for (std::size_t t = 0; t < run_; ++t) o[t] = op(xi[t], *src);
      o += run_;
      xi += run_;
    }
  }
  // out (sub's cells, zeroed first) [map[i]] += v[i], in the order of i.
  void sum_to(const std::vector<double>& v, std::vector<double>& out, std::size_t out_cells) const;

 private:
  std::size_t run_ = 1;
  bool step_ = false;
  std::vector<std::uint32_t> base_;  // map at the start of each run
};

struct Factor {
  Clique attrs;
  std::vector<double> values;
};

struct Measurement {
  Clique clique;
  std::vector<double> y;  // noisy counts, clique_cells(clique) of them
  double sigma = 1.0;     // standard deviation of the noise on every cell
};

class JunctionTree {
 public:
  // The tree of `cliques` (every attribute 0 .. domain.size() - 1 is a vertex; see above).
  static JunctionTree build(const std::vector<Clique>& cliques, const std::vector<int>& domain);
  // The maximal cliques of the min-fill triangulation, without building tables: cheap, for
  // checking a model's size before allocating it (AIM asks once per candidate per round).
  // Neighbour sets are bit masks; the result equals triangulate_by_definition's. `extra`, when
  // given, is one more clique, as if appended to `cliques` (AIM's candidate, without copying
  // the measured cliques for each).
  static std::vector<Clique> triangulate(const std::vector<Clique>& cliques, std::size_t attributes,
                                         const Clique* extra = nullptr);
  // The same elimination written plainly over an adjacency matrix (fill counted pair by pair):
  // the definition the fast version is tested and benchmarked against.
  static std::vector<Clique> triangulate_by_definition(const std::vector<Clique>& cliques, std::size_t attributes);
  // Total cells of the tree's clique tables (what a model of these cliques allocates).
  static double size_of(const std::vector<Clique>& cliques, const std::vector<int>& domain, const Clique* extra = nullptr);

  const std::vector<Clique>& cliques() const { return cliques_; }
  // order()[0] is the root; every clique comes after its parent. parent(root) = -1.
  const std::vector<int>& order() const { return order_; }
  int parent(std::size_t c) const { return parent_[c]; }
  const Clique& separator(std::size_t c) const { return sep_[c]; }  // with the parent
  // The first clique containing `sub`, or -1.
  int containing(const Clique& sub) const;
  // containing({attribute}), kept from the build (-1 for an attribute in no clique).
  int home(int attribute) const { return home_[static_cast<std::size_t>(attribute)]; }
  // in[c] = 1 for the cliques of the smallest subtree holding every clique with needed[c] = 1
  // (none when nothing is needed): the tree's leaves not needed, removed until none is left.
  std::vector<char> spanning_subtree(const std::vector<char>& needed) const;

 private:
  std::vector<Clique> cliques_, sep_;
  std::vector<int> parent_, order_, home_;
};

struct EstimationOptions {
  int iterations = 1000;     // descent iterations at most
  double tolerance = 1e-10;  // stop when an accepted step lowers L by less than tolerance x L
  bool scaled_steps = true;  // start with the scaled (IPF-like) steps; false: mirror descent only
};

// The fitted model: potentials, their tree, calibrated clique marginals and the total.
class GraphicalModel {
 public:
  GraphicalModel() = default;
  GraphicalModel(std::vector<int> domain, const std::vector<Clique>& potentials);

  const std::vector<int>& domain() const { return domain_; }
  const JunctionTree& tree() const { return tree_; }
  double total() const { return total_; }
  void set_total(double n) { total_ = n; }
  // Potentials (log domain), one per clique given at construction.
  std::map<Clique, std::vector<double>>& potentials() { return theta_; }
  const std::map<Clique, std::vector<double>>& potentials() const { return theta_; }
  // Belief propagation: recomputes every clique marginal from the potentials.
  void calibrate();
  // Probability marginal of tree clique c (after calibrate()).
  const std::vector<double>& clique_marginal(std::size_t c) const { return marg_[c]; }
  // Probability marginals of the potentials' cliques, in the potentials' (map) order.
  void potential_marginals(std::vector<std::vector<double>>& mu) const;
  // Probability marginal of any attribute set (one clique's marginal summed when a clique
  // contains it; otherwise the product of the independent parts of the covering subtree, cut
  // at its empty separators, each part's by variable elimination over it).
  std::vector<double> marginal(const Clique& attrs) const;
  // f(i, marginal of sets[i]) for every set, in parallel (f must allow that, and not throw):
  // marginal(sets[i]) bit for bit, or nullptr where that throws (an intermediate table too large,
  // or no memory for it), so nothing escapes the parallel loop. The sets are taken by increasing
  // size and the smaller ones' marginals are kept meanwhile: a part of a larger set (marginal()'s
  // cut at empty separators) that is itself in `sets` is not made again (AIM's 3-way candidates
  // reuse its 2-way ones).
  void for_each_marginal(const std::vector<Clique>& sets,
                         const std::function<void(std::size_t, const std::vector<double>*)>& f) const;
  // Keeps every clique's conditional given its parent separator, and every attribute's marginal,
  // until the next calibrate(), so that many marginal() calls on one model (AIM's candidates) do
  // not each recompute them.
  void prepare_conditionals();
  // `rows` records of bin indices (row-major, rows x d), forward-sampled; same seed, same rows.
  std::vector<std::uint16_t> sample(std::size_t rows, std::uint64_t seed) const;
  // Descent iterations and belief-propagation passes of the estimate() that made it.
  int last_iterations = 0;
  int last_bp_passes = 0;
  // Why that estimate() stopped: "iterations" (all run), "converged" (a step lowered the loss by
  // at most tolerance x L) or "line search failed" (no step passed the Armijo test).
  std::string last_stop = "iterations";

 private:
  std::vector<int> domain_;
  JunctionTree tree_;
  std::map<Clique, std::vector<double>> theta_;
  std::vector<int> theta_home_;                        // tree clique of each potential, in map order
  std::vector<SubsetMap> theta_map_;                   // potential cell of each home-clique cell (unfolded ones)
  std::vector<int> fold_parent_;                       // larger potential it is folded into, or -1
  std::vector<SubsetMap> fold_map_;                    // its cell of each fold-parent cell
  std::vector<std::size_t> fold_order_;                // potentials by increasing clique size
  std::vector<std::vector<double>> acc_;               // scratch: potentials with folded ones added
  std::vector<SubsetMap> sep_map_;                     // separator cell of each clique cell
  std::vector<SubsetMap> par_map_;                     // separator cell of each parent cell
  std::vector<std::vector<double>> marg_, work_, up_;
  std::vector<std::vector<double>> cond_;     // prepare_conditionals(); empty otherwise
  std::vector<std::vector<double>> one_way_;  // prepare_conditionals(): each attribute's marginal
  double total_ = 1.0;
  std::vector<double> conditional(std::size_t c) const;
  // marginal(), taking the parts found in `known` (for_each_marginal's smaller sets) from there.
  std::vector<double> marginal(const Clique& attrs, const std::map<Clique, std::vector<double>>* known) const;
};

// Fits the model to the measurements (noise-weighted least squares on the marginals, above).
// `warm` (optional): a previous model whose potentials on cliques that are measured again start
// the descent (AIM re-estimates after each round). The model's potentials are the distinct
// measured cliques.
GraphicalModel estimate(const std::vector<int>& domain, const std::vector<Measurement>& measurements,
                        const EstimationOptions& options, const GraphicalModel* warm = nullptr);

// L = 1/2 sum_m ||N mu_m - y_m||^2 / sigma_m^2 of a calibrated model.
double estimation_loss(const GraphicalModel& model, const std::vector<Measurement>& measurements);

// Counts of the table's cells over `c` (codes: bin indices, column-major, codes[j * n + i]).
std::vector<double> data_marginal(const std::vector<std::uint16_t>& codes, std::size_t n, const Clique& c,
                                  const std::vector<int>& domain);

// ---- discretisation (MST, AIM): equal-width bins over the public box, as PrivBayes

// Bin index of every value, column-major (codes[j * n + i]); values are clipped into the box.
std::vector<std::uint16_t> encode_table(const DenseRef& table, const TableBox& box, int bins);
// Rows of the box from bin indices (row-major rows x d): each value uniform inside its bin, from
// per-block streams derived from `seed` (the same rows for any thread count).
DoubleMatrix decode_rows(const std::vector<std::uint16_t>& bins, std::size_t rows, const TableBox& box, int bin_count,
                         std::uint64_t seed);

// ---- measurement helpers (MST, AIM)

// The measurements' noise and budget conversion (privacy/discrete_gaussian.hpp).
using privrace::DiscreteGaussian;
using privrace::zcdp_epsilon;
using privrace::zcdp_rho;

// y = the table's counts over `c` plus discrete Gaussian noise of sigma on every cell (zero
// cells included), drawn in cell order from `rng`. The returned sigma is the one the sampler
// used (sigma rounded up, see DiscreteGaussian).
Measurement measure(const std::vector<std::uint16_t>& codes, std::size_t n, const Clique& c,
                    const std::vector<int>& domain, double sigma, RandomSource& rng);

// Exponential mechanism: index drawn with probability proportional to
// exp(epsilon * score / (2 sensitivity)) (log-sum-exp in floating point, inversion of one uniform).
std::size_t exponential_mechanism(const std::vector<double>& scores, double epsilon, double sensitivity,
                                  RandomSource& rng);

}  // namespace privrace::baselines::pgm

namespace privrace::baselines {

// A generator whose release is a graphical model over binned attributes (MST, AIM): fit()
// leaves the model, the box, the bin count and the privacy record; sampling draws bins from the
// model and a uniform value inside each bin (post-processing).
class PgmSynthesizer : public SyntheticGenerator {
 public:
  DoubleMatrix sample(std::size_t rows, std::uint64_t seed) const override;
  nlohmann::json privacy_record() const override { return record_; }
  const pgm::GraphicalModel& model() const;

 protected:
  // The checks every fit starts with (privacy with delta, a non-empty table inside the box,
  // 2..65535 bins), naming the generator; forgets the previous model. Returns {rows, columns}.
  std::pair<std::size_t, std::size_t> begin_fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy,
                                                int bins);
  std::unique_ptr<pgm::GraphicalModel> model_;
  TableBox box_;
  int bins_ = 0;
  nlohmann::json record_;
};

}  // namespace privrace::baselines
