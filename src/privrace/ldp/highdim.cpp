#include "privrace/ldp/highdim.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include <omp.h>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/randomizers.hpp"
#include "privrace/ldp/simulation.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::ldp {

SparseSet parse_sparse_set(const std::string& name) {
  if (name == "l1_ball") return SparseSet::L1Ball;
  if (name == "simplex") return SparseSet::Simplex;
  throw UsageError("constraint set '" + name + "': expected l1_ball or simplex");
}

void project_simplex(Eigen::VectorXd& w, double r) {
  // The threshold tau with sum_i max(w_i - tau, 0) = r by Michelot's (1986) fixed point: tau
  // from the mean excess of the values above the previous tau, until that set stops shrinking
  // (tau only grows and ends exactly at the sorted method's threshold; O(d) a pass and a few
  // passes, where sorting cost O(d log d) and half of a full-dimension LDP-SGD step).
  // In floating point tau can come out a rounding below its previous value when sum - r cancels
  // (a vector already near the boundary: sum = r + 1e-11), readmitting a value at the threshold,
  // and the next pass returns to the smaller set: a cycle of two sets for ever. So the loop ends
  // as soon as the set stops shrinking, which also bounds it by d passes.
  const Eigen::Index d = w.size();
  double tau = (w.sum() - r) / static_cast<double>(d);
  Eigen::Index active = d;
  for (;;) {
    double sum = 0;
    Eigen::Index count = 0;
    for (Eigen::Index i = 0; i < d; ++i)
      if (w(i) > tau) {
        sum += w(i);
        ++count;
      }
    if (count >= active || count == 0) break;
    active = count;
    tau = (sum - r) / static_cast<double>(count);
  }
  for (Eigen::Index i = 0; i < d; ++i) w(i) = std::max(w(i) - tau, 0.0);
}

void project_l1_ball(Eigen::VectorXd& w, double r) {
  if (w.lpNorm<1>() <= r) return;
  Eigen::VectorXd a = w.cwiseAbs();
  project_simplex(a, r);
  for (Eigen::Index i = 0; i < w.size(); ++i) w(i) = w(i) < 0 ? -a(i) : a(i);
}

namespace {
void project(Eigen::VectorXd& w, SparseSet set, double r) {
  if (set == SparseSet::L1Ball) project_l1_ball(w, r);
  else project_simplex(w, r);
}
}  // namespace

Eigen::VectorXd constrained_least_squares(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, SparseSet set, double r,
                                          int iterations) {
  if (!(r > 0)) throw UsageError("constrained least squares: radius must be > 0 (the constraint set is empty)");
  // ||A||_2^2 by power iteration on A^T A.
  Eigen::VectorXd v = Eigen::VectorXd::Ones(A.cols()) / std::sqrt(static_cast<double>(A.cols()));
  double L = 1;
  for (int it = 0; it < 100; ++it) {
    const Eigen::VectorXd u = A.transpose() * (A * v);
    L = u.norm();
    if (L == 0) break;
    v = u / L;
  }
  const double step = 1.0 / std::max(2 * L, 1e-300);  // gradient of ||Aw - b||^2 is 2 A^T(Aw - b)
  Eigen::VectorXd w = Eigen::VectorXd::Zero(A.cols()), z = w, prev = w;
  if (set == SparseSet::Simplex) {
    w.setConstant(r / static_cast<double>(A.cols()));
    z = prev = w;
  }
  double t = 1;
  for (int it = 0; it < iterations; ++it) {
    Eigen::VectorXd next = z - step * 2 * (A.transpose() * (A * z - b));
    project(next, set, r);
    const double tn = (1 + std::sqrt(1 + 4 * t * t)) / 2;
    z = next + ((t - 1) / tn) * (next - w);
    prev = w;
    w = std::move(next);
    t = tn;
    if ((w - prev).norm() < 1e-13 * std::max(1.0, w.norm())) break;
  }
  return w;
}

Eigen::MatrixXd gaussian_projection(int m, int d, std::uint64_t seed) {
  if (m < 1 || d < 1) throw UsageError("projection: m and d must be >= 1");
  Eigen::MatrixXd P(m, d);
  SeededRandom rng(seed);
  const double s = 1 / std::sqrt(static_cast<double>(m));
  for (Eigen::Index i = 0; i < P.size(); ++i) P.data()[i] = s * sample_normal(rng);
  return P;
}

double gaussian_width(SparseSet set, int d, int samples, std::uint64_t seed) {
  SeededRandom rng(seed);
  double total = 0;
  for (int s = 0; s < samples; ++s) {
    double best = set == SparseSet::L1Ball ? 0.0 : -1e300;
    for (int i = 0; i < d; ++i) {
      const double g = sample_normal(rng);
      best = std::max(best, set == SparseSet::L1Ball ? std::abs(g) : g);
    }
    total += best;
  }
  return total / samples;
}

Eigen::VectorXd constrained_quadratic(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& apply,
                                      const Eigen::VectorXd& c, double L, SparseSet set, double r, int iterations) {
  if (!(r > 0)) throw UsageError("constrained quadratic: radius must be > 0 (the constraint set is empty)");
  const Eigen::Index d = c.size();
  const double step = 1.0 / (2.0 * std::max(L, 1e-12));  // gradient 2 (Q v - c), Lipschitz 2 L
  Eigen::VectorXd v = Eigen::VectorXd::Zero(d), zv = v, prev = v;
  if (set == SparseSet::Simplex) v = zv = Eigen::VectorXd::Constant(d, r / static_cast<double>(d));
  double t = 1;
  for (int it = 0; it < iterations; ++it) {
    Eigen::VectorXd next = zv - step * 2 * (apply(zv) - c);
    project(next, set, r);
    const double tn = (1 + std::sqrt(1 + 4 * t * t)) / 2;
    zv = next + ((t - 1) / tn) * (next - v);
    prev = v;
    v = std::move(next);
    t = tn;
    if ((v - prev).norm() < 1e-12 * std::max(1.0, v.norm())) break;
  }
  return v;
}

namespace {
// Largest |eigenvalue| of a symmetric operator by power iteration (a few % high for safety).
double operator_norm(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& apply, Eigen::Index d) {
  Eigen::VectorXd v = Eigen::VectorXd::Ones(d) / std::sqrt(static_cast<double>(d));
  double L = 0;
  for (int it = 0; it < 200; ++it) {
    const Eigen::VectorXd u = apply(v);
    const double nu = u.norm();
    if (nu == 0) break;
    if (std::abs(nu - L) < 1e-6 * nu) {
      L = nu;
      break;
    }
    L = nu;
    v = u / nu;
  }
  return 1.05 * L;
}
}  // namespace

Eigen::VectorXd constrained_regression(const SparseRows& X, const Eigen::VectorXd& y, SparseSet set, double r,
                                       int iterations) {
  const double n = static_cast<double>(std::max<Eigen::Index>(X.rows(), 1));
  // (1/n) ||X w - y||^2 = w^T Q w - 2 c^T w + const with Q = X^T X / n, c = X^T y / n.
  const Eigen::MatrixXd Q = Eigen::MatrixXd(X.transpose() * X) / n;
  const Eigen::VectorXd c = X.transpose() * y / n;
  auto apply = [&](const Eigen::VectorXd& v) -> Eigen::VectorXd { return Q * v; };
  return constrained_quadratic(apply, c, operator_norm(apply, Q.cols()), set, r, iterations);
}

namespace {
// The lattice and noise of the compressed reports. Lattice and noise (discrete Laplace on
// integers, no floating-point Laplace; the simulation draws it by inversion to double precision,
// lattice_laplace in simulation.hpp).
// z: stochastic rounding of z / Delta to k in Z^m, |k_j - z_j / Delta| < 1. For any two
// records (clipped to ||z||_2 <= z_max) and any roundings k, k' of them,
//   ||k - k'||_1 < ||z - z'||_1 / Delta + 2m <= sqrt(m) ||z - z'||_2 / Delta + 2m
//                <= 2 sqrt(m) z_max / Delta + 2m,
// so Lambda_z = ceil(2 sqrt(m) z_max / Delta) + 2m bounds the L1 sensitivity after rounding;
// noise DiscreteLaplace(Lambda_z / (eps/2)) gives P(o | k) <= e^(eps/2) P(o | k') for every
// pair of roundings, hence for the mixtures over the rounding: (eps/2)-LDP for z.
// y (|y| <= 1): the same with Lambda_y = ceil(2 / Delta_y) + 2 and eps/2. Composition: eps.
struct CompressedLattice {
  double delta = 0, delta_y = 1.0 / 16384.0;
  double scale_z = 0, scale_y = 0;  // noise scales in lattice units (0: no noise)
  double var_z = 0;                 // z's noise variance in lattice units
};

CompressedLattice compressed_lattice(int m, double eps, double z_max, CompressedCollection& out) {
  CompressedLattice lattice;
  lattice.delta = z_max / 16384.0;
  const double lambda_z = std::ceil(2 * std::sqrt(static_cast<double>(m)) * z_max / lattice.delta) + 2.0 * m;
  const double lambda_y = std::ceil(2 / lattice.delta_y) + 2;
  if (std::isfinite(eps)) {
    const DiscreteLaplace noise_z(lambda_z / (eps / 2)), noise_y(lambda_y / (eps / 2));
    lattice.var_z = noise_z.variance();
    lattice.scale_z = noise_z.scale();
    lattice.scale_y = noise_y.scale();
    out.noise_scale = noise_z.scale() * lattice.delta;
    out.noise_scale_y = noise_y.scale() * lattice.delta_y;
  }
  out.lattice_step = lattice.delta;
  return lattice;
}

// One chunk's partial moments: the lower triangle of sum z~ z~^T and sum z~ y~ over players
// [begin, end), in lattice units, a block of players at a time. Player i's report comes from
// her counter-based words (lattice_laplace: the same distribution as stochastic rounding plus
// the exact discrete Laplace sampler). Returns the number of records clipped to z_max.
constexpr Eigen::Index kPlayerBlock = 1024;
std::size_t collect_chunk(const SparseRows& X, const Eigen::VectorXd& y, const Eigen::MatrixXd& Phi, double z_max,
                          const CompressedLattice& lattice, std::uint64_t player_seed, Eigen::Index begin, Eigen::Index end,
                          Eigen::MatrixXd& S_c, Eigen::VectorXd& g_c) {
  const Eigen::Index m = Phi.rows();
  Eigen::MatrixXd Zt(m, kPlayerBlock);  // one player a column: her m reports, contiguous
  Eigen::VectorXd Yb(kPlayerBlock), z(m);
  std::size_t clipped = 0;
  S_c = Eigen::MatrixXd::Zero(m, m);
  g_c = Eigen::VectorXd::Zero(m);
  for (Eigen::Index b = begin; b < end; b += kPlayerBlock) {
    const Eigen::Index rows = std::min(kPlayerBlock, end - b);
    for (Eigen::Index q = 0; q < rows; ++q) {
      const Eigen::Index i = b + q;
      z.setZero();
      for (SparseRows::InnerIterator it(X, i); it; ++it) z += it.value() * Phi.col(it.col());
      const double nz = z.norm();
      if (nz > z_max) {
        z *= z_max / nz;
        ++clipped;
      }
      z /= lattice.delta;  // lattice units
      const double yl = std::clamp(y(i), -1.0, 1.0) / lattice.delta_y;
      const PlayerStream words(player_seed, static_cast<std::uint64_t>(i));  // player i's words
      lattice_laplace(z.data(), static_cast<std::size_t>(m), lattice.scale_z, words, 0, Zt.col(q).data());
      lattice_laplace(&yl, 1, lattice.scale_y, words, static_cast<std::uint64_t>(m), &Yb(q));
    }
    // Lattice units here; scaled by Delta at the end. Lower triangle only (SYRK).
    S_c.selfadjointView<Eigen::Lower>().rankUpdate(Zt.leftCols(rows));
    g_c.noalias() += Zt.leftCols(rows) * Yb.head(rows);
  }
  return clipped;
}
}  // namespace

CompressedCollection ldp_compressed_collect(const SparseRows& X, const Eigen::VectorXd& y, int m, double eps,
                                            std::uint64_t seed, double z_max, int threads) {
  check_epsilon(eps);
  if (!(z_max > 0)) throw UsageError("compressed regression: z_max must be > 0");
  if (threads <= 0) threads = omp_get_max_threads();
  const Eigen::Index n = X.rows(), d = X.cols();
  CompressedCollection out;
  out.Phi = gaussian_projection(m, static_cast<int>(d), derive_seed(seed, 1));  // public
  const CompressedLattice lattice = compressed_lattice(m, eps, z_max, out);
  // Fixed chunks of players (independent of the thread count); each chunk's partial moments,
  // summed in chunk order: thread-invariant.
  const Eigen::Index chunks = std::min<Eigen::Index>(64, std::max<Eigen::Index>(1, (n + kPlayerBlock - 1) / kPlayerBlock));
  const Eigen::Index per_chunk = (n + chunks - 1) / chunks;
  std::vector<Eigen::MatrixXd> S_part(static_cast<std::size_t>(chunks));
  std::vector<Eigen::VectorXd> g_part(static_cast<std::size_t>(chunks));
  std::vector<std::size_t> clipped(static_cast<std::size_t>(chunks), 0);
  const std::uint64_t player_seed = derive_seed(seed, 2);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (Eigen::Index c = 0; c < chunks; ++c) {
    const auto k = static_cast<std::size_t>(c);
    const Eigen::Index begin = c * per_chunk, end = std::min(n, begin + per_chunk);
    clipped[k] = collect_chunk(X, y, out.Phi, z_max, lattice, player_seed, begin, end, S_part[k], g_part[k]);
  }
  Eigen::MatrixXd S = Eigen::MatrixXd::Zero(m, m);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(m);
  for (Eigen::Index c = 0; c < chunks; ++c) {
    S.triangularView<Eigen::Lower>() += S_part[static_cast<std::size_t>(c)];
    g += g_part[static_cast<std::size_t>(c)];
    out.clipped += clipped[static_cast<std::size_t>(c)];
  }
  S.triangularView<Eigen::StrictlyUpper>() = S.transpose();
  const double nn = static_cast<double>(std::max<Eigen::Index>(n, 1));
  S *= lattice.delta * lattice.delta / nn;
  g *= lattice.delta * lattice.delta_y / nn;
  // Unbiased second moment: E[z~ z~^T] = z z^T + Delta^2 (Var(noise) + rounding variance) I.
  // The noise variance is known and removed; the rounding variance p(1 - p) <= 1/4 of a step^2
  // depends on the data and is left in (a bias below Delta^2 / 4 = z_max^2 2^-30, negligible).
  // The noise on y is independent of z, so g is unbiased as it is.
  S.diagonal().array() -= lattice.delta * lattice.delta * lattice.var_z;
  out.S = std::move(S);
  out.g = std::move(g);
  return out;
}

HighDimResult ldp_compressed_fit(const CompressedCollection& collection, SparseSet set, double r) {
  const Eigen::MatrixXd& Phi = collection.Phi;
  const Eigen::MatrixXd& S = collection.S;
  // theta = argmin over Phi C of theta^T S theta - 2 g^T theta, with theta = Phi v, v in C
  // (accelerated projected gradient in v; Q v = Phi^T S Phi v applied in factored form).
  auto apply = [&](const Eigen::VectorXd& v) -> Eigen::VectorXd { return Phi.transpose() * (S * (Phi * v)); };
  const Eigen::VectorXd c = Phi.transpose() * collection.g;
  const Eigen::VectorXd v = constrained_quadratic(apply, c, operator_norm(apply, Phi.cols()), set, r);
  const Eigen::VectorXd theta = Phi * v;
  HighDimResult out;
  out.w = constrained_least_squares(Phi, theta, set, r);
  out.clipped = collection.clipped;
  out.noise_scale = collection.noise_scale;
  out.noise_scale_y = collection.noise_scale_y;
  out.lattice_step = collection.lattice_step;
  return out;
}

HighDimResult ldp_compressed_regression(const SparseRows& X, const Eigen::VectorXd& y, int m, double eps,
                                        SparseSet set, double r, std::uint64_t seed, double z_max, int threads) {
  return ldp_compressed_fit(ldp_compressed_collect(X, y, m, eps, seed, z_max, threads), set, r);
}

Eigen::VectorXd ldp_sgd_constrained(const SparseRows& X, const Eigen::VectorXd& y, double eps, SparseSet set,
                                    double r, std::uint64_t seed) {
  check_epsilon(eps);
  if (std::isinf(eps)) throw UsageError("ldp_sgd: needs a finite epsilon");
  const Eigen::Index n = X.rows(), d = X.cols();
  // Squared loss, ||x||_2 <= 1 and ||w||_1 <= r: |<w, x>| <= r ||x||_inf <= r, so
  // ||grad|| = 2 |<w,x> - y| ||x||_2 <= 2 (r + 1).
  const double L = 2 * (r + 1), D = 2 * r;
  DjwL2 djw(static_cast<std::size_t>(d), L, eps);
  const double B = djw.scale();
  Eigen::VectorXd w = Eigen::VectorXd::Zero(d), avg = w, g = Eigen::VectorXd::Zero(d), z(d);
  if (set == SparseSet::Simplex) w.setConstant(r / static_cast<double>(d));
  SeededRandom rng(derive_seed(seed, 0x56dULL));  // interactive: one pass in player order
  for (Eigen::Index t = 0; t < n; ++t) {
    double pred = 0;
    for (SparseRows::InnerIterator it(X, t); it; ++it) pred += it.value() * w(it.col());
    const double resid = pred - std::clamp(y(t), -1.0, 1.0);
    for (SparseRows::InnerIterator it(X, t); it; ++it) g(it.col()) = 2 * resid * it.value();
    djw.privatize(g.data(), rng, z.data());
    for (SparseRows::InnerIterator it(X, t); it; ++it) g(it.col()) = 0;
    w -= (D / (B * std::sqrt(static_cast<double>(t + 1)))) * z;
    project(w, set, r);
    avg += (w - avg) / static_cast<double>(t + 1);
  }
  return avg;
}

}  // namespace privrace::ldp
