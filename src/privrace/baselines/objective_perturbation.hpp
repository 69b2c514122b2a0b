#pragma once
// L2-regularised logistic regression by objective perturbation: Chaudhuri, Monteleoni &
// Sarwate, "Differentially private empirical risk minimization", JMLR 12 (2011), Algorithm 2.
//
// Conditions of the privacy proof (Theorem 9 / Corollary 11), all enforced here:
//  * every row has ||x_i|| <= 1 (checked; the caller scales rows),
//  * labels y_i in {-1, +1},
//  * the regulariser Lambda > 0, and the loss is convex, twice differentiable with
//    |l''| <= c: logistic loss l(z) = log(1 + e^{-z}) has l'' = s(z)(1 - s(z)) <= c = 1/4,
//  * the eps' correction: eps' = eps - log(1 + 2c/(n Lambda) + c^2/(n^2 Lambda^2)); when that is
//    not positive, an extra regulariser Delta = c / (n (e^{eps/4} - 1)) - Lambda is added and
//    eps' = eps / 2,
//  * noise b with density proportional to exp(-eps' ||b|| / 2): ||b|| ~ Gamma(d, 2 / eps'),
//    direction uniform on the sphere,
//  * output argmin_f (1/n) sum l(y_i f.x_i) + (Lambda/2) ||f||^2 + (1/n) b.f + (Delta/2) ||f||^2.
// The JMLR proof is for data sets of equal size n differing in one record (replace-one
// neighbours, n public), unlike the sketches' add/remove relation: records say "replace".
#include <Eigen/Dense>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"

namespace privrace {

struct ObjPertResult {
  Eigen::VectorXd w;
  double epsilon_prime = 0;  // eps' actually used for the noise
  double extra_reg = 0;      // Delta (0 when eps' > 0 without it)
  double noise_norm = 0;     // ||b||
  int newton_steps = 0;
};

// epsilon <= 0 or infinite: the non-private regularised solution (b = 0, Delta = 0).
ObjPertResult objective_perturbation_logistic(const DoubleMatrix& x, const Eigen::VectorXd& y, double epsilon,
                                              double lambda, RandomSource& rng);

// Multi-class objective perturbation, one-vs-rest: K binary problems "class c against the
// rest", each fitted by objective_perturbation_logistic with epsilon / K.
// Budget split, derived. Under replace-one neighbours D ~ D' (the relation of Chaudhuri et al.'s
// proof), a record (x, c) appears in EVERY one of the K binary training sets (labelled +1 in
// problem c, -1 in the others), so D and D' differ in one record in each of the K problems: the
// problems do not partition the data and parallel composition does not apply. Fit k is
// (epsilon / K)-DP on its problem (Theorem 9 with epsilon_k = epsilon / K, including its own eps'
// correction and extra regulariser), and the K fits use independent noise, so by basic
// sequential composition their joint release is (sum_k epsilon / K) = epsilon-DP. Predictions
// argmax_c w_c . x are post-processing. K is public (the schema's class count). With K = 2 the
// two fits are redundant (w_1 ~ -w_0) and one binary fit with the whole epsilon is better;
// this function does not special-case it so that the split stays uniform.
struct OneVsRestResult {
  std::vector<ObjPertResult> fits;  // one per class
  double epsilon_per_class = 0;     // epsilon / K
  Eigen::MatrixXd weights() const;  // d x K
};
// labels in 0..classes-1; classes >= 2. epsilon <= 0 or infinite: non-private fits.
OneVsRestResult objective_perturbation_one_vs_rest(const DoubleMatrix& x, const std::vector<int>& labels,
                                                   std::size_t classes, double epsilon, double lambda, RandomSource& rng);

// Minimises (1/n) sum log(1 + exp(-y_i w.x_i)) + (reg/2) ||w||^2 + (1/n) b.w by damped Newton.
Eigen::VectorXd fit_regularised_logistic(const DoubleMatrix& x, const Eigen::VectorXd& y, double reg,
                                         const Eigen::VectorXd& b, int* steps = nullptr);

// Gamma(shape, scale) for integer shape: a sum of `shape` exponentials (exact, no rejection).
double sample_gamma_integer(RandomSource& rng, int shape, double scale);

}  // namespace privrace
