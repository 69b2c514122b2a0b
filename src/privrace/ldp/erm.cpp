#include "privrace/ldp/erm.hpp"

#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>

#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/vector_math.hpp"
#include "privrace/ldp/protocols.hpp"
#include "privrace/ldp/simulation.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::ldp {

namespace {
double dot(const double* a, const double* b, std::size_t p) {
  double s = 0;
  for (std::size_t j = 0; j < p; ++j) s += a[j] * b[j];
  return s;
}
// log(1 + e^z) without overflow.
double softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }
constexpr std::size_t kRiskBlock = 1u << 14;

// The losses of the `len` players rows[0..len) at theta and, for the logistic loss with
// `sigmoid`, sigmoid(-y <theta, x>) (the derivative's factor): logistic, the margins first, then
// the vector softplus (core/vector_math.hpp) over the chunk; squared, (y - z)^2 as
// ErmProblem::loss. One compiled body for every caller (not inlined), so a player's loss is the
// same operations, and value, whichever loop asks for it (a table's rows or the players one by
// one): inlined into two loops, GCC may contract a product into a multiply-add in one only.
constexpr std::size_t kLossChunk = 256;
[[gnu::noinline]] void chunk_losses(const ErmProblem& pr, const double* theta, const Players& pl, std::size_t len,
                                    const std::size_t* rows, double* loss, double* sigmoid) {
  const auto p = static_cast<std::size_t>(pr.p);
  if (pr.kind == Loss::Logistic) {
    double u[kLossChunk];
    for (std::size_t c = 0; c < len; ++c) u[c] = -pl.y[rows[c]] * dot(theta, pl.row(rows[c]), p);
    softplus_sigmoid(u, len, loss, sigmoid);
    return;
  }
  for (std::size_t c = 0; c < len; ++c) {
    const double y = pl.y[rows[c]], z = dot(theta, pl.row(rows[c]), p);
    loss[c] = (y - z) * (y - z);
  }
}
// rows[c] = first + c for c < len.
void consecutive(std::size_t first, std::size_t len, std::size_t* rows) {
  for (std::size_t c = 0; c < len; ++c) rows[c] = first + c;
}
}  // namespace

Loss parse_loss(const std::string& name) {
  if (name == "logistic") return Loss::Logistic;
  if (name == "squared") return Loss::Squared;
  throw UsageError("loss '" + name + "': expected logistic or squared");
}
std::string loss_name(Loss loss) { return loss == Loss::Logistic ? "logistic" : "squared"; }

void ErmProblem::validate() const {
  if (p < 1) throw UsageError("ERM: p = " + std::to_string(p) + ", expected p >= 1");
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
    throw UsageError("ERM: the constraint set [" + std::to_string(lo) + ", " + std::to_string(hi) + "]^" +
                     std::to_string(p) + " is empty (need finite lo <= hi)");
}
double ErmProblem::radius() const { return std::max(std::abs(lo), std::abs(hi)); }
double ErmProblem::diameter() const { return (hi - lo) * std::sqrt(static_cast<double>(p)); }
double ErmProblem::loss_bound() const {
  const double m = radius() * std::sqrt(static_cast<double>(p));
  return kind == Loss::Logistic ? softplus(m) : (1 + m) * (1 + m);
}
double ErmProblem::gradient_bound() const {
  const double m = radius() * std::sqrt(static_cast<double>(p));
  return kind == Loss::Logistic ? 1.0 : 2 * (1 + m);
}
double ErmProblem::loss(const double* theta, const double* x, double y) const {
  const double z = dot(theta, x, static_cast<std::size_t>(p));
  if (kind == Loss::Logistic) return softplus(-y * z);
  return (y - z) * (y - z);
}
double ErmProblem::loss_gradient(const double* theta, const double* x, double y, double* grad) const {
  gradient(theta, x, y, grad);
  return loss(theta, x, y);
}
void ErmProblem::gradient(const double* theta, const double* x, double y, double* grad) const {
  const double z = dot(theta, x, static_cast<std::size_t>(p));
  const double c = kind == Loss::Logistic ? -y / (1 + std::exp(y * z)) : -2 * (y - z);  // d/dz of the loss
  for (int j = 0; j < p; ++j) grad[j] = c * x[j];
}
void ErmProblem::theta_from_unit(const double* t, double* theta) const {
  for (int j = 0; j < p; ++j) theta[j] = lo + (hi - lo) * t[j];
}

Players generate_players(Loss loss, std::size_t n, std::size_t p, std::uint64_t seed, double theta_scale) {
  Players out;
  out.p = p;
  out.x.resize(n * p);
  out.y.resize(n);
  std::vector<double> theta0(p);
  for (std::size_t j = 0; j < p; ++j) theta0[j] = theta_scale * (j == 0 ? 1.0 : (j % 2 ? -1.0 : 1.0) * (1.0 - 0.2 * j));
  const std::int64_t blocks = static_cast<std::int64_t>((n + kRiskBlock - 1) / kRiskBlock);
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    SeededRandom rng(derive_seed(seed, static_cast<std::uint64_t>(b)));
    const std::size_t end = std::min(n, (static_cast<std::size_t>(b) + 1) * kRiskBlock);
    for (std::size_t i = static_cast<std::size_t>(b) * kRiskBlock; i < end; ++i) {
      double* x = out.x.data() + i * p;
      double norm2 = 0;
      for (std::size_t j = 0; j < p; ++j) {
        x[j] = sample_normal(rng);
        norm2 += x[j] * x[j];
      }
      // uniform in the unit ball: a uniform direction times U^(1/p)
      const double r = std::pow(rng.open_unit(), 1.0 / static_cast<double>(p)) / std::sqrt(norm2);
      for (std::size_t j = 0; j < p; ++j) x[j] *= r;
      const double z = dot(theta0.data(), x, p);
      if (loss == Loss::Logistic) out.y[i] = rng.unit() < 1 / (1 + std::exp(-z)) ? 1.0 : -1.0;
      else out.y[i] = std::clamp(z + 0.1 * sample_normal(rng), -1.0, 1.0);
    }
  }
  return out;
}

Players resample_players(const std::vector<double>& x, const std::vector<double>& y, std::size_t p, std::size_t n,
                         std::uint64_t seed) {
  const std::size_t rows = y.size();
  if (rows == 0 || x.size() != rows * p) throw UsageError("resample_players: empty table or wrong shape");
  if (rows > std::numeric_limits<std::uint32_t>::max()) throw UsageError("resample_players: more than 2^32 - 1 table rows");
  Players out;
  out.p = p;
  out.x.resize(n * p);
  out.y.resize(n);
  out.group.resize(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    const std::size_t r = public_coordinate(seed, static_cast<std::uint64_t>(i), rows);
    std::copy_n(x.data() + r * p, p, out.x.data() + static_cast<std::size_t>(i) * p);
    out.y[static_cast<std::size_t>(i)] = y[r];
    out.group[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(r);  // the table row, renumbered below
  }
  // Rows renumbered in the order of their first player (a serial pass: the draw is parallel).
  std::vector<std::uint32_t> number(rows, std::numeric_limits<std::uint32_t>::max());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t& g = number[out.group[i]];
    if (g == std::numeric_limits<std::uint32_t>::max()) {
      g = static_cast<std::uint32_t>(out.first.size());
      out.first.push_back(i);
    }
    out.group[i] = g;
  }
  return out;
}

std::size_t clip_to_unit_ball(Players& players, bool clip, const std::string& source) {
  std::size_t clipped = 0;
  for (std::size_t i = 0; i < players.size(); ++i) {
    double* x = players.x.data() + i * players.p;
    const double norm = std::sqrt(dot(x, x, players.p));
    const bool bad_x = norm > 1 + 1e-12, bad_y = std::abs(players.y[i]) > 1;
    if (!bad_x && !bad_y) continue;
    if (!clip)
      throw InputError(source + ": row " + std::to_string(i) + ": " +
                       (bad_x ? "||x|| = " + std::to_string(norm) : "|y| = " + std::to_string(players.y[i])) +
                       ", expected records in the unit ball (||x|| <= 1, |y| <= 1); set clip to clip them");
    if (bad_x)
      for (std::size_t j = 0; j < players.p; ++j) x[j] /= norm;
    players.y[i] = std::clamp(players.y[i], -1.0, 1.0);
    ++clipped;
  }
  players.clipped += clipped;
  return clipped;
}

double empirical_risk(const ErmProblem& problem, const Players& players, const double* theta, int threads) {
  const std::size_t n = players.size();
  const std::size_t blocks = (n + kRiskBlock - 1) / kRiskBlock;
  std::vector<double> partial(blocks, 0.0);
  if (threads <= 0) threads = omp_get_max_threads();
  if (players.shares_rows()) {  // each row's loss once, then the same sums of the same values
    const std::size_t rows = players.first.size();
    std::vector<double> row_loss(rows);
    const auto chunks = static_cast<std::int64_t>((rows + kLossChunk - 1) / kLossChunk);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::size_t g0 = static_cast<std::size_t>(c) * kLossChunk, len = std::min(kLossChunk, rows - g0);
      chunk_losses(problem, theta, players, len, players.first.data() + g0, row_loss.data() + g0, nullptr);
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(blocks); ++b) {
      const std::size_t end = std::min(n, (static_cast<std::size_t>(b) + 1) * kRiskBlock);
      double s = 0;
      for (std::size_t i = static_cast<std::size_t>(b) * kRiskBlock; i < end; ++i) s += row_loss[players.group[i]];
      partial[static_cast<std::size_t>(b)] = s;
    }
  } else {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(blocks); ++b) {
      const std::size_t end = std::min(n, (static_cast<std::size_t>(b) + 1) * kRiskBlock);
      double s = 0;
      double loss[kLossChunk];
      std::size_t rows[kLossChunk];
      for (std::size_t i0 = static_cast<std::size_t>(b) * kRiskBlock; i0 < end; i0 += kLossChunk) {
        const std::size_t len = std::min(kLossChunk, end - i0);
        consecutive(i0, len, rows);
        chunk_losses(problem, theta, players, len, rows, loss, nullptr);
        for (std::size_t k = 0; k < len; ++k) s += loss[k];
      }
      partial[static_cast<std::size_t>(b)] = s;
    }
  }
  double s = 0;
  for (double v : partial) s += v;  // fixed order: thread-invariant
  return n ? s / static_cast<double>(n) : 0.0;
}

namespace {
// Risk, gradient and Hessian in fixed blocks (thread-invariant).
double risk_derivatives(const ErmProblem& pr, const Players& pl, const double* theta, Eigen::VectorXd& g,
                        Eigen::MatrixXd& H, int threads) {
  const std::size_t n = pl.size(), p = static_cast<std::size_t>(pr.p);
  const std::size_t blocks = (n + kRiskBlock - 1) / kRiskBlock;
  const std::size_t stride = 1 + p + p * p;
  std::vector<double> partial(blocks * stride, 0.0);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t b = 0; b < static_cast<std::int64_t>(blocks); ++b) {
    double* acc = partial.data() + static_cast<std::size_t>(b) * stride;
    const std::size_t end = std::min(n, (static_cast<std::size_t>(b) + 1) * kRiskBlock);
    double loss[kLossChunk], sig[kLossChunk];
    std::size_t rows[kLossChunk];
    for (std::size_t i0 = static_cast<std::size_t>(b) * kRiskBlock; i0 < end; i0 += kLossChunk) {
      const std::size_t len = std::min(kLossChunk, end - i0);
      if (pr.kind == Loss::Logistic) {
        consecutive(i0, len, rows);
        chunk_losses(pr, theta, pl, len, rows, loss, sig);
      }
      for (std::size_t k = 0; k < len; ++k) {
        const std::size_t i = i0 + k;
        const double* x = pl.row(i);
        const double y = pl.y[i];
        double l, c, c2;
        if (pr.kind == Loss::Logistic) {
          l = loss[k];
          const double s = sig[k];  // sigmoid(-y z) = 1 / (1 + e^{y z})
          c = -y * s;
          c2 = s * (1 - s);
        } else {
          const double z = dot(theta, x, p);
          l = (y - z) * (y - z);
          c = -2 * (y - z);
          c2 = 2;
        }
        acc[0] += l;
        for (std::size_t j = 0; j < p; ++j) {
          acc[1 + j] += c * x[j];
          for (std::size_t q = 0; q < p; ++q) acc[1 + p + j * p + q] += c2 * x[j] * x[q];
        }
      }
    }
  }
  std::vector<double> tot(stride, 0.0);
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t j = 0; j < stride; ++j) tot[j] += partial[b * stride + j];
  const double inv = n ? 1.0 / static_cast<double>(n) : 0.0;
  g.resize(static_cast<Eigen::Index>(p));
  H.resize(static_cast<Eigen::Index>(p), static_cast<Eigen::Index>(p));
  for (std::size_t j = 0; j < p; ++j) {
    g(static_cast<Eigen::Index>(j)) = tot[1 + j] * inv;
    for (std::size_t q = 0; q < p; ++q)
      H(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(q)) = tot[1 + p + j * p + q] * inv;
  }
  return tot[0] * inv;
}
}  // namespace

ErmResult nonprivate_erm(const ErmProblem& problem, const Players& players, int threads) {
  problem.validate();
  const auto t0 = std::chrono::steady_clock::now();
  if (threads <= 0) threads = omp_get_max_threads();
  const int p = problem.p;
  Eigen::VectorXd theta = Eigen::VectorXd::Constant(p, std::clamp(0.0, problem.lo, problem.hi)), g;
  Eigen::MatrixXd H;
  double f = risk_derivatives(problem, players, theta.data(), g, H, threads);
  for (int it = 0; it < 100; ++it) {
    // Active set: coordinates at a bound whose gradient pushes outward stay fixed.
    std::vector<int> free;
    for (int j = 0; j < p; ++j) {
      const bool at_lo = theta(j) <= problem.lo && g(j) > 0, at_hi = theta(j) >= problem.hi && g(j) < 0;
      if (!at_lo && !at_hi) free.push_back(j);
    }
    double gmap = 0;  // norm of the projected-gradient mapping
    for (int j = 0; j < p; ++j) gmap = std::max(gmap, std::abs(std::clamp(theta(j) - g(j), problem.lo, problem.hi) - theta(j)));
    if (gmap < 1e-12 || free.empty()) break;
    Eigen::VectorXd dir = Eigen::VectorXd::Zero(p);
    {
      const int m = static_cast<int>(free.size());
      Eigen::MatrixXd Hf(m, m);
      Eigen::VectorXd gf(m);
      for (int a = 0; a < m; ++a) {
        gf(a) = g(free[a]);
        for (int b = 0; b < m; ++b) Hf(a, b) = H(free[a], free[b]);
      }
      Hf.diagonal().array() += 1e-12;
      const Eigen::VectorXd d = -Hf.ldlt().solve(gf);
      for (int a = 0; a < m; ++a) dir(free[a]) = d(a);
    }
    // Near the optimum the decrease a Newton step predicts (g'H^-1 g / 2) falls below the
    // rounding of the risk's sum over n players, and comparing two risks no longer ranks the
    // points: backtracking then halved the step dozens of times (a full pass over the players
    // each) and stopped on a tiny step. There the full step is taken without the comparison:
    // the iteration is in Newton's quadratic region, and the gradient, not the risk, decides.
    const double predicted = -0.5 * g.dot(dir);
    const bool resolved = predicted > 1e-14 * std::max(1.0, std::abs(f));
    double step = 1.0;
    Eigen::VectorXd next;
    double fn = f;
    for (int ls = 0; ls < 60; ++ls, step *= 0.5) {
      next = theta + step * dir;
      for (int j = 0; j < p; ++j) next(j) = std::clamp(next(j), problem.lo, problem.hi);
      if (!resolved) break;
      fn = empirical_risk(problem, players, next.data(), threads);
      if (fn <= f) break;
    }
    if (resolved && !(fn <= f)) break;
    const double change = (next - theta).norm();
    theta = next;
    f = risk_derivatives(problem, players, theta.data(), g, H, threads);
    if (change < 1e-13) break;
  }
  ErmResult r;
  r.theta.assign(theta.data(), theta.data() + p);
  r.risk = f;
  r.server_seconds = seconds_since(t0);
  return r;
}

double boundary_distance(const ErmProblem& pr, const std::vector<double>& theta) {
  double d = std::numeric_limits<double>::infinity();
  for (double t : theta) d = std::min({d, t - pr.lo, pr.hi - t});
  return d;
}

double loss_range_over_box(const ErmProblem& pr, const Players& pl, double optimum_risk, int threads) {
  double worst = optimum_risk;
  std::vector<double> v(static_cast<std::size_t>(pr.p));
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << pr.p); ++mask) {
    for (int j = 0; j < pr.p; ++j) v[static_cast<std::size_t>(j)] = (mask >> j) & 1 ? pr.hi : pr.lo;
    worst = std::max(worst, empirical_risk(pr, pl, v.data(), threads));
  }
  return worst - optimum_risk;
}

double grid_value_noise_sd(const ErmProblem& pr, std::size_t n, double eps, std::uint64_t points, bool one_bit) {
  if (!std::isfinite(eps) || n == 0) return 0.0;
  const double b = pr.loss_bound(), g = static_cast<double>(points), nn = static_cast<double>(n);
  if (one_bit) return b * (std::exp(eps) + 1) / (std::exp(eps) - 1) / 2 * std::sqrt(g / nn);
  return b * std::sqrt(2.0) * g / (eps * std::sqrt(nn));
}

namespace {
struct Grid {
  int k = 0, h = 0;
  std::uint64_t points = 0;
  std::vector<double> theta;  // points x p
};
Grid make_grid(const ErmProblem& pr, std::size_t n, double eps, const BernsteinOptions& o, bool one_bit) {
  pr.validate();
  check_epsilon(eps);
  Grid g;
  g.h = o.h > 0 ? o.h : pr.p;
  g.k = o.k > 0 ? o.k : theorem3_degree(static_cast<double>(n), eps, pr.p, g.h, o.k_scale, one_bit);
  // Per grid point: its theta (8p bytes), the server's coefficients and iterates (~4 x 8),
  // and each thread's report counters (2 x 8).
  const int threads = omp_get_max_threads();
  check_grid(g.k, g.h, pr.p, 8.0 * pr.p + 32.0 + 16.0 * threads, o.max_bytes);
  g.points = grid_points(g.k, pr.p);
  g.theta.resize(g.points * static_cast<std::size_t>(pr.p));
  std::vector<double> t(pr.p);
  for (std::uint64_t i = 0; i < g.points; ++i) {
    grid_point(i, g.k, pr.p, t.data());
    pr.theta_from_unit(t.data(), g.theta.data() + i * static_cast<std::size_t>(pr.p));
  }
  return g;
}

// For players that copy a table's rows (Players::shares_rows), every row's `width` values
// fill(first player of the row, out) in a rows x width table, when it holds at most 64 MiB;
// otherwise empty (the caller evaluates per player).
template <class Fill>
std::vector<double> row_table(const Players& pl, std::size_t width, int threads, Fill&& fill) {
  constexpr std::size_t kMaxDoubles = std::size_t{1} << 23;
  const std::size_t rows = pl.first.size();
  if (!pl.shares_rows() || width == 0 || rows > kMaxDoubles / width) return {};
  std::vector<double> table(rows * width);
#pragma omp parallel for schedule(static) num_threads(threads <= 0 ? omp_get_max_threads() : threads)
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(rows); ++r)
    fill(pl.first[static_cast<std::size_t>(r)], table.data() + static_cast<std::size_t>(r) * width);
  return table;
}

ErmResult finish_bernstein(const ErmProblem& pr, const Players& pl, const Grid& g, const VectorEstimate& est,
                           const BernsteinOptions& o, double player_seconds, int threads) {
  ErmResult r;
  r.k = g.k;
  r.h = g.h;
  r.grid_points = g.points;
  r.player_seconds = player_seconds;
  if (o.exact_grid_error) {  // simulation diagnostics only: the exact grid averages
    const double b = pr.loss_bound();
    for (std::uint64_t j = 0; j < g.points; ++j) {
      const double exact = empirical_risk(pr, pl, g.theta.data() + j * static_cast<std::size_t>(pr.p), threads) / b;
      r.max_grid_noise = std::max(r.max_grid_noise, std::abs(est.mean[j] - exact));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  IteratedBernstein poly(pr.p, g.k, g.h, est.mean);
  r.minimum = minimize(poly);
  r.theta.resize(static_cast<std::size_t>(pr.p));
  pr.theta_from_unit(r.minimum.t.data(), r.theta.data());
  r.server_seconds = seconds_since(t0);
  r.risk = empirical_risk(pr, pl, r.theta.data(), threads);
  return r;
}
}  // namespace

void grid_axis(const ErmProblem& pr, int k, double* axis) {
  for (std::size_t a = 0; a <= static_cast<std::size_t>(k); ++a) axis[a] = pr.lo + (pr.hi - pr.lo) * (static_cast<double>(a) / k);
}

void grid_losses(const ErmProblem& pr, int k, const double* x, double y, double* out, double* scratch) {
  if (pr.kind == Loss::Squared) grid_axis(pr, k, scratch);  // the logistic loss reads no axis
  grid_losses(pr, k, scratch, x, y, out, scratch);
}

void grid_losses(const ErmProblem& pr, int k, const double* axis, const double* x, double y, double* out,
                 double* scratch) {
  const std::size_t p = static_cast<std::size_t>(pr.p), m = static_cast<std::size_t>(k) + 1;
  const double inv_b = 1.0 / pr.loss_bound(), step = k > 0 ? (pr.hi - pr.lo) / k : 0.0;
  std::size_t points = 1;
  for (std::size_t d = 0; d < p; ++d) points *= m;
  if (pr.kind == Loss::Squared) {
    // z_j = <theta_j, x> built additively over the tensor grid (theta's axis values th[a] as
    // theta_from_unit forms them, the products added in dot()'s order): a few operations a
    // point instead of grid_point's divisions and a dot product.
    const double* th = axis;
    double* z = out;  // after coordinate d it holds the m^(d+1) partial sums
    std::size_t filled = 1;
    z[0] = 0.0;
    for (std::size_t d = 0; d < p; ++d) {
      const double xd = x[d];
      for (std::size_t i = filled; i-- > 0;) {  // from the back, as below
        const double v = z[i];
        for (std::size_t a = 0; a < m; ++a) z[i * m + a] = v + th[a] * xd;
      }
      filled *= m;
    }
    for (std::size_t j = 0; j < points; ++j) out[j] = (y - z[j]) * (y - z[j]) * inv_b;
    return;
  }
  double z_bound = 0;  // |y <x, theta>| over the box
  for (std::size_t d = 0; d < p; ++d) z_bound += std::abs(y * x[d]) * pr.radius();
  if (z_bound > 600) {  // (600: no factor or product leaves double range)
    std::vector<double> t(p), theta(p);
    for (std::size_t j = 0; j < points; ++j) {
      grid_point(j, k, pr.p, t.data());
      pr.theta_from_unit(t.data(), theta.data());
      out[j] = pr.loss(theta.data(), x, y) * inv_b;
    }
    return;
  }
  // f_d[a] = e^{-y x_d (lo + a step)} by the recurrence f_d[a] = f_d[a-1] e^{-y x_d step}
  // (relative error below (k+1) ulp), then e_j = prod_d f_d[j_d], the last coordinate fastest.
  double* f = scratch;  // m values, reused per coordinate
  double* e = out;      // built in place: after coordinate d it holds m^(d+1) products
  std::size_t filled = 1;
  e[0] = 1.0;
  for (std::size_t d = 0; d < p; ++d) {
    const double c = -y * x[d];
    const double r = std::exp(c * step);
    f[0] = std::exp(c * pr.lo);
    for (std::size_t a = 1; a < m; ++a) f[a] = f[a - 1] * r;
    for (std::size_t i = filled; i-- > 0;) {  // from the back: e[i] is read before its block is written
      const double v = e[i];
      for (std::size_t a = 0; a < m; ++a) e[i * m + a] = v * f[a];
    }
    filled *= m;
  }
  scaled_log1p_nonnegative(e, points, inv_b, out);  // in place (e is out)
}

ErmResult ldp_bernstein(const ErmProblem& pr, const Players& pl, double eps, const BernsteinOptions& o,
                        std::uint64_t seed, int threads) {
  const Grid g = make_grid(pr, pl.size(), eps, o, false);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> axis(static_cast<std::size_t>(g.k) + 1);
  grid_axis(pr, g.k, axis.data());
  const auto losses = [&](std::uint64_t i, double* out) {
    thread_local std::vector<double> scratch;
    if (scratch.size() < static_cast<std::size_t>(g.k) + 1) scratch.resize(static_cast<std::size_t>(g.k) + 1);
    grid_losses(pr, g.k, axis.data(), pl.row(i), pl.y[i], out, scratch.data());
  };
  // Players copying a table's rows: each row's grid losses once, read in place per player.
  const std::vector<double> per_row = row_table(pl, g.points, threads, losses);
  const VectorEstimate est = laplace_average(
      pl.size(), g.points, eps, seed,
      [&](std::uint64_t i, std::span<double> u) -> const double* {
        if (!per_row.empty()) return per_row.data() + pl.group[i] * g.points;  // the row's losses, not copied
        losses(i, u.data());
        return u.data();
      },
      threads);
  return finish_bernstein(pr, pl, g, est, o, seconds_since(t0), threads <= 0 ? omp_get_max_threads() : threads);
}

ErmResult ldp_bernstein_1bit(const ErmProblem& pr, const Players& pl, double eps, const BernsteinOptions& o,
                             std::uint64_t seed, int threads) {
  const Grid g = make_grid(pr, pl.size(), eps, o, true);
  const double inv_b = 1.0 / pr.loss_bound();
  const std::size_t p = static_cast<std::size_t>(pr.p);
  const auto t0 = std::chrono::steady_clock::now();
  // A player evaluates one grid point, so a table of every row at every point pays only when it
  // holds at most a quarter as many values as there are players.
  std::vector<double> per_row;
  if (pl.shares_rows() && 4 * pl.first.size() * g.points <= pl.size())
    per_row = row_table(pl, g.points, threads, [&](std::uint64_t i, double* out) {
      for (std::size_t j = 0; j < g.points; ++j) out[j] = pr.loss(g.theta.data() + j * p, pl.row(i), pl.y[i]) * inv_b;
    });
  const VectorEstimate est = sampled_bit_average(
      pl.size(), g.points, eps, derive_seed(seed, 0x9b1cULL), derive_seed(seed, 0x2015ULL),
      [&](std::uint64_t i, std::size_t j) {
        return per_row.empty() ? pr.loss(g.theta.data() + j * p, pl.row(i), pl.y[i]) * inv_b
                               : per_row[pl.group[i] * g.points + j];
      },
      threads);
  return finish_bernstein(pr, pl, g, est, o, seconds_since(t0), threads <= 0 ? omp_get_max_threads() : threads);
}

ErmResult ldp_input_perturbation(const ErmProblem& pr, const Players& pl, double eps, std::uint64_t seed,
                                 int threads) {
  pr.validate();
  check_epsilon(eps);
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = pl.size(), p = pl.p;
  Players noisy = pl;
  noisy.forget_rows();  // every report is perturbed on its own
  // x: L1 sensitivity sup ||x - x'||_1 = 2 sqrt p on the unit ball, eps/2 -> Lap(4 sqrt p / eps) per coordinate.
  const double x_scale = 4.0 * std::sqrt(static_cast<double>(p)) / eps;
  // y in [-1, 1]: sensitivity 2, eps/2 -> Lap(4 / eps); a sign y = +-1: randomised response with eps/2.
  const double keep = 1.0 / (1.0 + std::exp(-eps / 2));
  const std::size_t blocks = (n + kRiskBlock - 1) / kRiskBlock;
  if (std::isfinite(eps)) {
#pragma omp parallel for schedule(static) num_threads(threads <= 0 ? omp_get_max_threads() : threads)
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(blocks); ++b) {
      SeededRandom rng(derive_seed(seed, static_cast<std::uint64_t>(b)));  // the block's players, in order
      const std::size_t end = std::min(n, (static_cast<std::size_t>(b) + 1) * kRiskBlock);
      for (std::size_t i = static_cast<std::size_t>(b) * kRiskBlock; i < end; ++i) {
        for (std::size_t j = 0; j < p; ++j) noisy.x[i * p + j] += sample_laplace(rng, x_scale);
        if (pr.kind == Loss::Logistic) noisy.y[i] = rng.unit() < keep ? pl.y[i] : -pl.y[i];
        else noisy.y[i] += sample_laplace(rng, 4.0 / eps);
      }
    }
  }
  const double player_seconds = seconds_since(t0);
  ErmResult r = nonprivate_erm(pr, noisy, threads);  // the server's fit to the reports
  r.player_seconds = player_seconds;
  r.risk = empirical_risk(pr, pl, r.theta.data(), threads);
  return r;
}

double djw_l2_scale(std::size_t d, double L, double eps) {
  const double dd = static_cast<double>(d);
  return L * (std::exp(eps) + 1) / (std::exp(eps) - 1) * std::sqrt(std::numbers::pi) *
         std::exp(std::lgamma((dd + 1) / 2) - std::lgamma(dd / 2));
}

void djw_l2_privatize(const double* g, std::size_t d, double L, double eps, RandomSource& rng, double* out) {
  DjwL2(d, L, eps).privatize(g, rng, out);
}

DjwL2::DjwL2(std::size_t d, double L, double eps)
    : d_(d), L_(L), B_(djw_l2_scale(d, L, eps)), toward_(1.0 / (1.0 + std::exp(-eps))), dir_(d) {
  if (d == 0) throw UsageError("DJW privatisation: the dimension must be at least 1");
}

void DjwL2::privatize(const double* g, RandomSource& rng, double* out) {
  const std::size_t d = d_;
  double* dir = dir_.data();
  // 1. v = +-L g/||g|| with P(+) = 1/2 + ||g|| / (2L): E[v] = g.
  double norm = 0;
  for (std::size_t j = 0; j < d; ++j) norm += g[j] * g[j];
  norm = std::sqrt(norm);
  if (norm > 0) {
    for (std::size_t j = 0; j < d; ++j) dir[j] = g[j] / norm;
  } else {
    std::fill(dir, dir + d, 0.0);
    dir[0] = 1;
  }
  const double sign = rng.unit() < 0.5 + std::min(norm, L_) / (2 * L_) ? 1.0 : -1.0;
  // 2. U uniform on the sphere, on the hemisphere of sign*dir with probability e^eps/(1+e^eps):
  // the output density takes two values whose ratio is e^eps, so the report is eps-LDP.
  // E[U | hemisphere] = dir E|U_1| = dir Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2)), hence the scale B.
  double un = 0, side = 0;
  fill_normal(rng, out, d);  // an isotropic direction: any exact normal sampler
  for (std::size_t j = 0; j < d; ++j) {
    un += out[j] * out[j];
    side += out[j] * dir[j] * sign;
  }
  un = std::sqrt(un);
  const bool toward = rng.unit() < toward_;
  const double flip = ((side >= 0) == toward) ? 1.0 : -1.0;
  for (std::size_t j = 0; j < d; ++j) out[j] = flip * B_ * out[j] / un;
}

ErmResult ldp_sgd(const ErmProblem& pr, const Players& pl, double eps, std::uint64_t seed) {
  pr.validate();
  check_epsilon(eps);
  if (std::isinf(eps)) throw UsageError("ldp_sgd: needs a finite epsilon");
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t p = static_cast<std::size_t>(pr.p), n = pl.size();
  const double L = pr.gradient_bound(), D = pr.diameter();
  DjwL2 djw(p, L, eps);
  const double B = djw.scale();
  std::vector<double> theta(p, std::clamp(0.0, pr.lo, pr.hi)), avg(p, 0.0), grad(p), z(p);
  SeededRandom rng(derive_seed(seed, 0x56dULL));  // interactive: one pass in player order
  for (std::size_t t = 0; t < n; ++t) {
    pr.gradient(theta.data(), pl.row(t), pl.y[t], grad.data());
    djw.privatize(grad.data(), rng, z.data());
    const double step = D / (B * std::sqrt(static_cast<double>(t + 1)));
    for (std::size_t j = 0; j < p; ++j) {
      theta[j] = std::clamp(theta[j] - step * z[j], pr.lo, pr.hi);
      avg[j] += (theta[j] - avg[j]) / static_cast<double>(t + 1);
    }
  }
  ErmResult r;
  r.theta = avg;
  r.player_seconds = seconds_since(t0);
  r.risk = empirical_risk(pr, pl, r.theta.data());
  return r;
}

}  // namespace privrace::ldp
