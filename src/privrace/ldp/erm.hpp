#pragma once
// Non-interactive LDP empirical risk minimisation over simulated players (Wang, Gaboardi &
// Xu 2018, Section 4-5) and the baselines it is compared with.
//
// Setting (the paper's "our settings"): records (x, y) with ||x||_2 <= 1 and |y| <= 1; the
// parameter theta lies in the box C = [lo, hi]^p (the paper's [0, 1]^p, mapped affinely to
// t in [0, 1]^p), and the loss is divided by its bound b on C x data so it lies in [0, 1]:
//   logistic  l = log(1 + exp(-y <theta, x>)),  b = log(1 + exp(R sqrt p)),  R = max(|lo|,|hi|)
//   squared   l = (y - <theta, x>)^2,            b = (1 + R sqrt p)^2
// (|<theta, x>| <= ||theta||_2 ||x||_2 <= R sqrt p). Both are (infinity, T)-smooth in theta.
#include <cstdint>
#include <string>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/ldp/bernstein.hpp"

namespace privrace::ldp {

enum class Loss { Logistic, Squared };
Loss parse_loss(const std::string& name);  // "logistic" | "squared"
std::string loss_name(Loss loss);

struct ErmProblem {
  Loss kind = Loss::Logistic;
  int p = 1;
  double lo = -1, hi = 1;  // the constraint box [lo, hi]^p
  // UsageError for p < 1 and for an empty box (lo > hi, or not finite).
  void validate() const;
  double radius() const;
  double loss_bound() const;  // b
  double loss(const double* theta, const double* x, double y) const;
  // Gradient in theta (size p) of the unnormalised loss; returns the loss.
  double loss_gradient(const double* theta, const double* x, double y, double* grad) const;
  // The gradient alone (the SGD players need no loss, and the logistic loss's logarithm is
  // skipped).
  void gradient(const double* theta, const double* x, double y, double* grad) const;
  double gradient_bound() const;  // sup ||grad||_2 over C x data
  void theta_from_unit(const double* t, double* theta) const;
  double diameter() const;  // of the box
};

// Simulated players: row i of x (p values) and y[i].
// Players drawn from a table (resample_players) also carry which row each copies: player i is
// a copy of the table row numbered group[i] in the order of first appearance, and first[g] is
// the first player of row g. A function of a player's (x, y) alone (a loss, its grid values)
// can then be computed once a row and read per player, with the same values in the same order.
// Whoever changes a player's x or y other than as a function of the row (clip_to_unit_ball is
// one) calls forget_rows().
struct Players {
  std::size_t p = 0;
  std::vector<double> x, y;
  std::size_t clipped = 0;  // rows moved onto the unit sphere by clip_to_unit_ball
  std::vector<std::uint32_t> group;  // empty: no shared rows known
  std::vector<std::size_t> first;
  std::size_t size() const { return y.size(); }
  const double* row(std::size_t i) const { return x.data() + i * p; }
  // Whether per-row evaluation pays: rows known and at most half as many as players.
  bool shares_rows() const { return !group.empty() && 2 * first.size() <= size(); }
  void forget_rows() {
    group.clear();
    first.clear();
  }
};

// n players drawn from a fixed seeded model, nested in n (the first n of an endless stream):
// x uniform in the unit ball; logistic: y = +-1 with P(y = 1) = sigmoid(<theta0, x>);
// squared: y = clamp(<theta0, x> + N(0, 0.1^2), -1, 1). theta0 = scale * (1, -0.8, 0.6, 0.4, ...).
Players generate_players(Loss loss, std::size_t n, std::size_t p, std::uint64_t seed, double theta_scale);
// n players drawn with replacement from the rows of a real table (row-major x, rows x p), nested in n.
Players resample_players(const std::vector<double>& x, const std::vector<double>& y, std::size_t p, std::size_t n,
                         std::uint64_t seed);
// Rows with ||x|| > 1 (+ 1e-12) or |y| > 1: clipped onto the ball / interval and counted when
// clip is true, otherwise an InputError naming the first such row and its norm.
std::size_t clip_to_unit_ball(Players& players, bool clip, const std::string& source);

// (1/n) sum l(theta; x_i, y_i), unnormalised; fixed blocks, so the result does not depend on threads.
double empirical_risk(const ErmProblem& problem, const Players& players, const double* theta, int threads = 0);

struct ErmResult {
  std::vector<double> theta;
  double risk = 0;             // empirical risk at theta (unnormalised)
  double player_seconds = 0;   // simulated players' randomisation + the server's aggregation
  double server_seconds = 0;   // polynomial construction + minimisation (or the server's fit)
  int k = 0, h = 0;
  std::uint64_t grid_points = 0;
  PolynomialMinimum minimum;   // Bernstein methods: the server's minimisation
  double max_grid_noise = 0;   // Bernstein methods: max |noisy - exact| over grid values (simulation only, never released)
  std::string note;
};

// The non-private optimum over the box (projected Newton with backtracking; exact to 1e-10 in
// the gradient mapping), the reference for the excess risk.
ErmResult nonprivate_erm(const ErmProblem& problem, const Players& players, int threads = 0);

// Where the optimum sits in the box and how much the loss varies over it (simulation
// diagnostics, not released): the distance of theta to the boundary of [lo, hi]^p
// (min_j min(theta_j - lo, hi - theta_j)), and max over C of L - L(theta), which for a convex
// L is attained at one of the 2^p vertices (the value computed).
double boundary_distance(const ErmProblem& problem, const std::vector<double>& theta);
double loss_range_over_box(const ErmProblem& problem, const Players& players, double optimum_risk, int threads = 0);
// Standard deviation of one released grid value in loss units, b sqrt(2) (k+1)^p / (eps sqrt n)
// for Algorithm 2 (Laplace of scale (k+1)^p / eps on values in [0, 1], averaged over n), and
// b (c_eps / 2) sqrt((k+1)^p / n), c_eps = (e^eps + 1) / (e^eps - 1), for Algorithm 3 (each grid
// point sees about n / (k+1)^p one-bit reports, each debiased bit of SD at most c_eps / 2).
double grid_value_noise_sd(const ErmProblem& problem, std::size_t n, double eps, std::uint64_t grid_points, bool one_bit);

struct BernsteinOptions {
  int k = 0;          // 0: theorem3_degree
  int h = 0;          // 0: h = p (Corollary 1)
  double k_scale = 1.0;
  double max_bytes = 4.0 * 1073741824.0;  // refuse larger grids
  bool exact_grid_error = false;          // also compute the exact grid to report max_grid_noise (slow: a diagnostic)
};
// Player (x, y)'s losses at every point of the grid {lo + (hi - lo) a / k : a = 0..k}^p, in
// grid_point's index order, divided by b: what an Algorithm 2 player evaluates. The logistic
// loss takes (k+1) p exponentials instead of (k+1)^p (e^{-y<x,theta>} factors over the tensor
// grid) and a vectorised logarithm; values agree with loss() / b to about 1e-13 (test), far
// below the report lattice's step 2^-16. The squared loss sums <theta, x> over the grid in
// dot()'s order (equal to loss() / b up to where FMA contraction differs, a few ulp).
// `scratch` holds k + 1 doubles.
void grid_losses(const ErmProblem& problem, int k, const double* x, double y, double* out, double* scratch);
// The grid's axis values lo + (hi - lo) a / k, a = 0..k (k + 1 doubles), as grid_losses forms
// them; made once for a run of players and passed to the overload below, which gives the same
// values as the one above without remaking them for every player.
void grid_axis(const ErmProblem& problem, int k, double* axis);
void grid_losses(const ErmProblem& problem, int k, const double* axis, const double* x, double y, double* out,
                 double* scratch);

// Algorithm 2: every player evaluates her normalised loss at every grid point and sends the
// (k+1)^p values through LaplaceRandomizer (eps / (k+1)^p each); the server forms
// B_k^(h) of the averages and minimises it.
ErmResult ldp_bernstein(const ErmProblem& problem, const Players& players, double eps, const BernsteinOptions& options,
                        std::uint64_t seed, int threads = 0);
// Algorithm 3: each player is assigned one grid point by public coins, evaluates her loss
// there only (O(1) work) and sends one bit (sampled_bit_average); the server as above.
ErmResult ldp_bernstein_1bit(const ErmProblem& problem, const Players& players, double eps,
                             const BernsteinOptions& options, std::uint64_t seed, int threads = 0);
// Input perturbation: each player sends x + Lap and y + Lap (eps/2 each: x's L1 sensitivity is
// 2 sqrt p on the unit ball, y's is 2); the server fits the ERM to the noisy reports (logistic:
// y is sent by randomised response instead, eps/2, since it is a sign).
ErmResult ldp_input_perturbation(const ErmProblem& problem, const Players& players, double eps, std::uint64_t seed,
                                 int threads = 0);
// Interactive LDP SGD of Duchi, Jordan & Wainwright (2013): one pass, player t sends her
// gradient at the current theta through the L2-ball mechanism (a unit vector on a random
// hemisphere, scaled so that it is unbiased), projected SGD with step D / (B sqrt t) and the
// averaged iterate.
ErmResult ldp_sgd(const ErmProblem& problem, const Players& players, double eps, std::uint64_t seed);

// DJW's L2 privatisation of g (||g|| <= L) into `out` (size d): unbiased, eps-LDP.
// Scale B = L (e^eps + 1)/(e^eps - 1) sqrt(pi) Gamma((d+1)/2) / Gamma(d/2) (derived: E[Z] = g).
void djw_l2_privatize(const double* g, std::size_t d, double L, double eps, RandomSource& rng, double* out);
double djw_l2_scale(std::size_t d, double L, double eps);

// The same privatisation for a run of players: B, the hemisphere probability and the direction's
// buffer are made once, so a report costs its d normals and three passes over d (two lgamma
// and two exp fewer, and no allocation). Reports are djw_l2_privatize's, bit for bit, for the
// same rng. One instance per thread.
class DjwL2 {
 public:
  DjwL2(std::size_t d, double L, double eps);
  void privatize(const double* g, RandomSource& rng, double* out);
  double scale() const { return B_; }

 private:
  std::size_t d_;
  double L_, B_, toward_;
  std::vector<double> dir_;
};

}  // namespace privrace::ldp
