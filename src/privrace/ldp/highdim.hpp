#pragma once
// High-dimensional LDP ERM by random projection and compressed sensing (Wang, Gaboardi & Xu
// 2018, Section 7, Algorithms 6-7; our reconstruction of the lost formulas, for the squared
// loss of sparse linear regression):
//   1. public Gaussian matrix Phi (m x d, entries N(0, 1/m)); player i compresses z_i = Phi x_i
//      (clipped to ||z|| <= z_max, counted);
//   2. LDP release in m dimensions with the engine's exact sampler: z_i on the lattice
//      Delta Z^m by unbiased stochastic rounding, plus discrete Laplace noise (eps/2, L1
//      sensitivity after rounding derived in highdim.cpp), and y_i likewise (|y| <= 1, eps/2);
//   3. the server's ERM in the compressed space: with the unbiased moments
//      S = mean(z~ z~^T) - Var(noise) I and g = mean(z~ y~), theta = argmin over Phi C of
//      theta^T S theta - 2 g^T theta (theta = Phi v, v in C; projected gradient in v);
//   4. recovery w = argmin_{w in C} ||Phi w - theta||^2 over C = L1 ball or simplex of radius r
//      (accelerated projected gradient, projections of Duchi et al. 2008).
// The noise scales with m, which Dirksen's bound ties to the Gaussian width of C (about
// r sqrt(2 log 2d) for the L1 ball of radius r), instead of with d.
//
// Records are sparse rows (SparseRows): the experiment's players have a few non-zeros of d.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCore>

namespace privrace::ldp {

using SparseRows = Eigen::SparseMatrix<double, Eigen::RowMajor>;

enum class SparseSet { L1Ball, Simplex };
SparseSet parse_sparse_set(const std::string& name);  // "l1_ball" | "simplex"

// Euclidean projection onto {||w||_1 <= r} or {w >= 0, sum w = r}, in place.
void project_l1_ball(Eigen::VectorXd& w, double r);
void project_simplex(Eigen::VectorXd& w, double r);

// argmin_{w in C} ||A w - b||^2 by FISTA with step 1 / ||A||_2^2 (power iteration).
Eigen::VectorXd constrained_least_squares(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, SparseSet set, double r,
                                          int iterations = 2000);

// argmin over C of v^T Q v - 2 c^T v by FISTA, where Q is given as the product apply(v) = Q v
// (symmetric; indefinite under noise: then a stationary point on the compact C) with
// |eigenvalues| <= L. UsageError for r <= 0.
Eigen::VectorXd constrained_quadratic(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& apply,
                                      const Eigen::VectorXd& c, double L, SparseSet set, double r,
                                      int iterations = 3000);
// The non-private ERM over C: argmin (1/n) ||X w - y||^2.
Eigen::VectorXd constrained_regression(const SparseRows& X, const Eigen::VectorXd& y, SparseSet set, double r,
                                       int iterations = 3000);

// Public m x d Gaussian projection, entries N(0, 1/m), from a seed.
Eigen::MatrixXd gaussian_projection(int m, int d, std::uint64_t seed);

// Gaussian width of the L1 ball / simplex of radius 1: E max_i |g_i| resp. E max_i g_i, Monte Carlo.
double gaussian_width(SparseSet set, int d, int samples, std::uint64_t seed);

struct HighDimResult {
  Eigen::VectorXd w;
  std::size_t clipped = 0;
  double noise_scale = 0;  // b: the discrete Laplace scale on z in units of z (lattice step x scale)
  double noise_scale_y = 0;
  double lattice_step = 0;  // Delta
};
// What the server holds after Algorithm 7's collection (steps 1-3): the public projection and
// the debiased moments of the players' reports. Every constraint set and radius is fitted from
// the same collection (post-processing: no further privacy cost).
struct CompressedCollection {
  Eigen::MatrixXd Phi;  // m x d, public
  Eigen::MatrixXd S;    // (1/n) sum z~ z~^T minus the known noise variance on the diagonal
  Eigen::VectorXd g;    // (1/n) sum z~ y~
  std::size_t clipped = 0;
  double noise_scale = 0, noise_scale_y = 0, lattice_step = 0;  // as in HighDimResult
};
// Steps 1-3 over players (rows of X, |y| <= 1). eps = inf: no noise (for tests).
// Thread-invariant: players are cut into fixed chunks whose partial moments are summed in order.
CompressedCollection ldp_compressed_collect(const SparseRows& X, const Eigen::VectorXd& y, int m, double eps,
                                            std::uint64_t seed, double z_max = 1.5, int threads = 0);
// Step 4: ERM over Phi C from the moments, then constrained least-squares recovery in R^d.
HighDimResult ldp_compressed_fit(const CompressedCollection& collection, SparseSet set, double r);
// Both steps: ldp_compressed_fit(ldp_compressed_collect(...), set, r).
HighDimResult ldp_compressed_regression(const SparseRows& X, const Eigen::VectorXd& y, int m, double eps,
                                        SparseSet set, double r, std::uint64_t seed, double z_max = 1.5,
                                        int threads = 0);

// The full-dimension interactive reference: one pass of projected SGD onto C where player t
// sends her squared-loss gradient through DJW's L2 mechanism (scale grows like sqrt(d)).
Eigen::VectorXd ldp_sgd_constrained(const SparseRows& X, const Eigen::VectorXd& y, double eps, SparseSet set,
                                    double r, std::uint64_t seed);

}  // namespace privrace::ldp
