// The function-release baselines of the KDE experiments: each one's non-private
// limit approximates the exact KDE, its noise has the scale its derivation gives (seeded
// statistical checks), and the structural facts the derivations rely on hold.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <tuple>
#include <omp.h>

#include "privrace/baselines/bernstein.hpp"
#include "privrace/baselines/histogram.hpp"
#include "privrace/baselines/kme.hpp"
#include "privrace/baselines/pfda.hpp"
#include "privrace/baselines/privbayes.hpp"
#include "privrace/baselines/spectral.hpp"
#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {
namespace {

KernelSpec l2(double w) {
  KernelSpec k;
  k.kernel = Kernel::L2;
  k.bandwidth = w;
  k.power = 1;
  return k;
}

// n points in [0,1]^d: two clusters (seeded).
DenseMatrix unit_data(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double c = rng.below(3) == 0 ? 0.3 : 0.65;
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      x(i, j) = static_cast<Real>(std::clamp(c + 0.1 * sample_normal(rng), 0.0, 1.0));
  }
  return x;
}

DenseMatrix grid_1d(int n, double a, double b) {
  DenseMatrix q(n, 1);
  for (int i = 0; i < n; ++i) q(i, 0) = static_cast<Real>(a + (b - a) * i / (n - 1));
  return q;
}

std::vector<double> exact(const DenseMatrix& data, const DenseMatrix& q, const KernelSpec& k) {
  return kde_at(data, q.cast<double>(), k);
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

double binom(int n, int k) { return std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0)); }

// ---------------------------------------------------------------- Bernstein
TEST(Bernstein, BasisReproducesPolynomialsUpToDegreeK) {
  // t^j = sum_{v >= j} C(v, j) / C(k, j) b_v(t) for j <= k: the span is all polynomials of
  // degree <= k; in 2-D the tensor product reproduces t1^a t2^b.
  const int k = 8;
  const DenseMatrix data = unit_data(50, 2, 1);
  BernsteinRelease r(data, l2(0.5), Domain{0, 1}, k);
  DenseMatrix q(25, 2);
  SeededRandom rng(3);
  for (Eigen::Index i = 0; i < q.rows(); ++i) q(i, 0) = static_cast<Real>(rng.unit()), q(i, 1) = static_cast<Real>(rng.unit());
  for (int a = 0; a <= k; a += 3)
    for (int b = 0; b <= k; b += 4) {
      std::vector<double> coef((k + 1) * (k + 1));
      for (int v0 = 0; v0 <= k; ++v0)
        for (int v1 = 0; v1 <= k; ++v1)
          coef[static_cast<std::size_t>(v0 * (k + 1) + v1)] =
              (v0 >= a ? binom(v0, a) / binom(k, a) : 0.0) * (v1 >= b ? binom(v1, b) / binom(k, b) : 0.0);
      r.set_values(coef);
      const auto got = r.evaluate(q);
      for (Eigen::Index i = 0; i < q.rows(); ++i)
        EXPECT_NEAR(got[static_cast<std::size_t>(i)], std::pow(double(q(i, 0)), a) * std::pow(double(q(i, 1)), b), 1e-9);
    }
  // Lattice values of a linear function are reproduced exactly (B_k is exact on degree 1).
  std::vector<double> lin((k + 1) * (k + 1));
  for (int v0 = 0; v0 <= k; ++v0)
    for (int v1 = 0; v1 <= k; ++v1) lin[static_cast<std::size_t>(v0 * (k + 1) + v1)] = 2.0 * v0 / k - 0.5 * v1 / k + 1.0;
  r.set_values(lin);
  const auto got = r.evaluate(q);
  for (Eigen::Index i = 0; i < q.rows(); ++i) EXPECT_NEAR(got[static_cast<std::size_t>(i)], 2.0 * q(i, 0) - 0.5 * q(i, 1) + 1.0, 1e-6);
}

TEST(Bernstein, NoiseFreeLimitApproximatesKde) {
  const DenseMatrix data = unit_data(3000, 1, 2);
  const KernelSpec k = l2(0.4);
  const DenseMatrix q = grid_1d(101, 0, 1);
  const auto truth = exact(data, q, k);
  double prev = 1e9;
  for (int deg : {4, 20, 100}) {
    BernsteinRelease r(data, k, Domain{0, 1}, deg);
    const double err = max_abs_diff(r.evaluate(q), truth);
    EXPECT_LT(err, prev);  // converges as k grows
    prev = err;
  }
  EXPECT_LT(prev, 0.01);
}

TEST(Bernstein, BlockedQueriesEqualTheDirectContractionAtAnyThreads) {
  // B(y) = sum_v F(v) prod_j b_{v_j}(y_j) summed term by term (the definition), against the
  // blocked evaluation (a matrix product over the last dimensions), for odd and even d, block
  // counts that do not divide the queries, queries outside the domain (clipped), 1 and 2 threads.
  for (const auto& [d, k, nq] : {std::tuple{1, 30, 7}, std::tuple{2, 5, 300}, std::tuple{3, 4, 513}, std::tuple{5, 2, 41}}) {
    const DenseMatrix data = unit_data(20, d, 5);
    BernsteinRelease r(data, l2(0.5), Domain{-1, 2}, k);
    SeededRandom rng(static_cast<std::uint64_t>(d * 100 + k));
    std::vector<double> v(r.lattice_size());
    for (auto& x : v) x = rng.unit() - 0.3;
    r.set_values(v);
    DenseMatrix q(nq, d);
    for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = static_cast<Real>(-1.2 + 3.4 * rng.unit());
    const std::size_t K = static_cast<std::size_t>(k + 1);
    std::vector<double> truth(static_cast<std::size_t>(nq));
    std::vector<double> b(K * static_cast<std::size_t>(d));
    for (Eigen::Index i = 0; i < nq; ++i) {
      for (int j = 0; j < d; ++j) BernsteinRelease::basis(k, Domain{-1, 2}.to_unit(q(i, j)), &b[static_cast<std::size_t>(j) * K]);
      double s = 0;
      for (std::size_t idx = 0; idx < v.size(); ++idx) {
        double term = v[idx];
        std::size_t rest = idx;
        for (int j = d; j-- > 0;) {
          term *= b[static_cast<std::size_t>(j) * K + rest % K];
          rest /= K;
        }
        s += term;
      }
      truth[static_cast<std::size_t>(i)] = s;
    }
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      const auto got = r.evaluate(q);
      ASSERT_EQ(got.size(), truth.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], truth[i], 1e-12 * (1.0 + std::abs(truth[i]))) << "d " << d << " k " << k << " query " << i;
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}

// The lattice values come from the lattice's axes (lattice_kernel_sums), not from its points:
// the same doubles as the exact KDE at every point of the lattice in data units, bit for bit,
// with data outside the domain (clipped), at 1 and 2 threads.
TEST(Bernstein, LatticeValuesEqualTheExactKdeAtTheLatticePoints) {
  for (const auto& [d, k] : {std::tuple{1, 12}, std::tuple{3, 5}, std::tuple{8, 2}}) {
    DenseMatrix data = unit_data(300, d, 11);
    data(0, 0) = -0.7f;  // outside Domain{-0.25, 1.5}: clipped
    data(1, 0) = 1.9f;
    const Domain dom{-0.25, 1.5};
    const std::size_t points = static_cast<std::size_t>(BernsteinRelease::lattice_points(k, static_cast<std::size_t>(d)));
    DoubleMatrix pts(static_cast<Eigen::Index>(points), d);
    for (std::size_t idx = 0; idx < points; ++idx) {
      std::size_t rest = idx;
      for (int j = d; j-- > 0;) {
        pts(static_cast<Eigen::Index>(idx), j) = dom.from_unit(static_cast<double>(rest % static_cast<std::size_t>(k + 1)) / k);
        rest /= static_cast<std::size_t>(k + 1);
      }
    }
    const std::vector<double> expected = kde_at(clip_to_domain(data, dom).cast<Real>(), pts, l2(0.5));
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      const BernsteinRelease r(data, l2(0.5), dom, k);
      ASSERT_EQ(r.values().size(), expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i)
        ASSERT_EQ(r.values()[i], expected[i]) << "d " << d << " k " << k << " point " << i << " threads " << threads;
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEST(Bernstein, LatticeValueSensitivityAndNoiseScale) {
  const DenseMatrix data = unit_data(400, 2, 4);
  const KernelSpec k = l2(0.3);
  const int deg = 30;
  BernsteinRelease r(data, k, Domain{0, 1}, deg);
  // Replace one record by the point farthest from it: no lattice value moves more than 1/N.
  DenseMatrix other = data;
  other(0, 0) = 1.0f - other(0, 0), other(0, 1) = 1.0f - other(0, 1);
  BernsteinRelease r2(other, k, Domain{0, 1}, deg);
  double worst = 0;
  for (std::size_t i = 0; i < r.values().size(); ++i) worst = std::max(worst, std::abs(r.values()[i] - r2.values()[i]));
  EXPECT_LE(worst, 1.0 / 400 + 1e-12);
  EXPECT_GT(worst, 0.2 / 400);  // and the bound is not vacuous
  // Noise: Lap((k+1)^d / (N eps)): mean |noise| = b, var = 2 b^2 over 961 x 20 draws.
  const double eps = 2.0, b = 961.0 / (400 * eps);
  EXPECT_DOUBLE_EQ(r.noise_scale(eps), b);
  SeededRandom rng(11);
  double s1 = 0, s2 = 0;
  std::size_t n = 0;
  for (int rep = 0; rep < 20; ++rep) {
    const auto p = r.privatized(eps, rng);
    for (std::size_t i = 0; i < p.values().size(); ++i, ++n) {
      const double z = p.values()[i] - r.values()[i];
      s1 += std::abs(z), s2 += z * z;
    }
  }
  EXPECT_NEAR(s1 / n / b, 1.0, 0.03);
  EXPECT_NEAR(s2 / n / (2 * b * b), 1.0, 0.06);
}

TEST(Bernstein, RefusesInfeasibleLatticeWithAnEstimate) {
  const DenseMatrix data = unit_data(1000, 8, 5);
  try {
    BernsteinRelease r(data, l2(0.5), Domain{0, 1}, 100, 60.0);
    FAIL() << "expected a refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("estimated"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- KME
TEST(Kme, PStableKernelGramIsPositiveSemidefinite) {
  // k = P[h(x) = h(q)] is an average of one-hot inner products, hence PSD.
  const DenseMatrix pts = unit_data(300, 3, 6);
  const KernelSpec k = l2(0.2);
  Eigen::MatrixXd G(300, 300);
  const DoubleMatrix p = pts.cast<double>();
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 300; ++j) G(i, j) = kernel_value(k, p.row(i).data(), p.row(j).data(), 3);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(G);
  EXPECT_GT(es.eigenvalues().minCoeff(), -1e-9);
}

// The batched kernel values (KME's selection and its Gram) are kernel_value's, bit for bit:
// the L2 kernel inside and beyond the table (s >= 64), at powers 1 and 3, in 1 and 3
// dimensions, every batch length (the vector lanes and the tail), with the AVX2 lanes and
// with the portable loop (PRIVRACE_KDE_SCALAR=1), and the angular kernel.
TEST(Kme, BatchedKernelValuesAreKernelValueBitForBit) {
  for (const std::size_t d : {std::size_t{1}, std::size_t{3}}) {
    DoubleMatrix p(203, static_cast<Eigen::Index>(d));
    SeededRandom rng(17);
    for (Eigen::Index i = 0; i < p.rows(); ++i)
      for (Eigen::Index j = 0; j < p.cols(); ++j) p(i, j) = (i % 5 == 0 ? 100.0 : 1.0) * rng.unit();  // some beyond 64 w
    p.row(7) = p.row(0);  // distance 0
    std::vector<std::size_t> index(static_cast<std::size_t>(p.rows()));
    for (std::size_t r = 0; r < index.size(); ++r) index[r] = (r * 37) % index.size();
    for (const Kernel kernel : {Kernel::L2, Kernel::Angular})
      for (const std::size_t power : {std::size_t{1}, std::size_t{3}})
        for (const char* scalar : {"0", "1"}) {
          setenv("PRIVRACE_KDE_SCALAR", scalar, 1);
          KernelSpec k = l2(1.0);
          k.kernel = kernel;
          k.power = power;
          const double* q = p.row(0).data();
          for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{7}, index.size()}) {
            std::vector<double> got(count + 1, -1.0);
            kernel_values(k, p, index.data(), count, q, got.data());
            for (std::size_t r = 0; r < count; ++r) {
              const double want = kernel_value(k, p.row(static_cast<Eigen::Index>(index[r])).data(), q, d);
              ASSERT_EQ(std::bit_cast<std::uint64_t>(got[r]), std::bit_cast<std::uint64_t>(want))
                  << "d " << d << " kernel " << static_cast<int>(kernel) << " power " << power << " scalar " << scalar
                  << " r " << r << ": " << got[r] << " vs " << want;
            }
            EXPECT_EQ(got[count], -1.0);  // nothing written past count
          }
        }
    unsetenv("PRIVRACE_KDE_SCALAR");
  }
}

TEST(Kme, PivotedCholeskyFactorsTheGram) {
  const DoubleMatrix p = unit_data(200, 2, 7).cast<double>();
  const KernelSpec k = l2(0.3);
  const auto pc = pivoted_cholesky(p, k, 1e-12, 200);
  const auto m = static_cast<Eigen::Index>(pc.pivots.size());
  ASSERT_GT(m, 10);
  for (Eigen::Index a = 0; a < m; a += 7)
    for (Eigen::Index b = 0; b < m; b += 5) {
      const double kv = kernel_value(k, p.row(static_cast<Eigen::Index>(pc.pivots[static_cast<std::size_t>(a)])).data(),
                                     p.row(static_cast<Eigen::Index>(pc.pivots[static_cast<std::size_t>(b)])).data(), 2);
      EXPECT_NEAR(pc.L.row(a).dot(pc.L.row(b)), kv, 1e-9);
    }
}

// The float rows (the default at tol >= 1e-6) must choose what the double recurrence chooses on
// well-separated residuals and return the double-exact factor of the pivots they chose.
TEST(Kme, FloatPivotRowsChooseTheDoublePivotsAndFactorThemExactly) {
  const DoubleMatrix p = unit_data(1500, 2, 11).cast<double>();
  const KernelSpec k = l2(0.1);
  for (const std::size_t cap : {std::size_t{0}, std::size_t{150}}) {  // stopped by tol / by the cap
    const auto dbl = pivoted_cholesky(p, k, 1e-5, cap, PivotRows::Double);
    const auto flt = pivoted_cholesky(p, k, 1e-5, cap, PivotRows::Float);
    const auto aut = pivoted_cholesky(p, k, 1e-5, cap);
    ASSERT_GT(dbl.pivots.size(), 100u);
    if (cap) {
      EXPECT_EQ(dbl.pivots.size(), cap);
    }
    std::size_t same = 0;
    while (same < std::min(flt.pivots.size(), dbl.pivots.size()) && flt.pivots[same] == dbl.pivots[same]) ++same;
    EXPECT_EQ(flt.pivots, dbl.pivots) << "cap " << cap << ": the first " << same << " pivots agree";
    EXPECT_EQ(aut.pivots, flt.pivots);
    EXPECT_TRUE(aut.L == flt.L);
    EXPECT_NEAR(flt.max_residual, dbl.max_residual, 1e-6);
    const auto m = static_cast<Eigen::Index>(flt.pivots.size());
    Eigen::MatrixXd gram(m, m);
    for (Eigen::Index a = 0; a < m; ++a)
      for (Eigen::Index b = 0; b < m; ++b)
        gram(a, b) = kernel_value(k, p.row(static_cast<Eigen::Index>(flt.pivots[static_cast<std::size_t>(a)])).data(),
                                  p.row(static_cast<Eigen::Index>(flt.pivots[static_cast<std::size_t>(b)])).data(), 2);
    EXPECT_LT((flt.L * flt.L.transpose() - gram).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT((dbl.L * dbl.L.transpose() - gram).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT((flt.L - dbl.L).cwiseAbs().maxCoeff(), 1e-9);
  }
  // Below the float floor the automatic choice is the double recurrence, bit for bit.
  const auto fine_auto = pivoted_cholesky(p, k, 1e-8, 120);
  const auto fine_dbl = pivoted_cholesky(p, k, 1e-8, 120, PivotRows::Double);
  EXPECT_EQ(fine_auto.pivots, fine_dbl.pivots);
  EXPECT_TRUE(fine_auto.L == fine_dbl.L);
}

// Against the textbook algorithm on the dense Gram matrix: pivot on the largest diagonal of the
// Schur complement (ties to the lower index), subtract the outer product of the new column.
TEST(Kme, PivotsAreTheTextbookGreedyOrder) {
  const DoubleMatrix p = unit_data(400, 2, 13).cast<double>();
  const KernelSpec k = l2(0.2);
  Eigen::MatrixXd schur(400, 400);
  for (int i = 0; i < 400; ++i)
    for (int j = 0; j < 400; ++j) schur(i, j) = kernel_value(k, p.row(i).data(), p.row(j).data(), 2);
  std::vector<std::size_t> textbook;
  for (int t = 0; t < 400; ++t) {
    Eigen::Index q = 0;
    for (Eigen::Index i = 1; i < 400; ++i)
      if (schur(i, i) > schur(q, q)) q = i;
    if (schur(q, q) <= 1e-5) break;
    textbook.push_back(static_cast<std::size_t>(q));
    const Eigen::VectorXd col = schur.col(q) / std::sqrt(schur(q, q));
    schur -= col * col.transpose();
  }
  ASSERT_GT(textbook.size(), 50u);
  EXPECT_EQ(pivoted_cholesky(p, k, 1e-5, 0, PivotRows::Double).pivots, textbook);
  EXPECT_EQ(pivoted_cholesky(p, k, 1e-5, 0, PivotRows::Float).pivots, textbook);
}

// Exact duplicates have residual 0 once their twin is a pivot; float rows leave them a residual of
// about 1e-8, above a tol of 1e-12, so the float selection would take both and their Gram matrix
// would be singular. The factor must never come from such a set: the double recurrence decides.
TEST(Kme, FloatPivotRowsNeverFactorASingularSet) {
  DoubleMatrix p = unit_data(300, 2, 14).cast<double>();
  for (Eigen::Index i = 150; i < 300; ++i) p.row(i) = p.row(i - 150);  // every point twice
  const KernelSpec k = l2(0.3);
  const auto flt = pivoted_cholesky(p, k, 1e-12, 0, PivotRows::Float);
  const auto dbl = pivoted_cholesky(p, k, 1e-12, 0, PivotRows::Double);
  std::vector<int> taken(150, 0);
  for (const auto i : flt.pivots) ++taken[i % 150];
  EXPECT_EQ(*std::max_element(taken.begin(), taken.end()), 1) << "a point and its duplicate both pivots";
  EXPECT_EQ(flt.pivots, dbl.pivots);
  EXPECT_TRUE(flt.L.allFinite());
  EXPECT_GT(flt.L.diagonal().minCoeff(), 0.0);
}

// Batching the steps (kme.cpp) only changes where each dot product is summed, so the pivots
// must be the ones a pass per step chooses, for a batch size that divides no panel (7) and the
// default, to the full rank of 1,500 points. In double on the clustered points, whose residuals
// at steps 712 and 713 differ by 1e-6 relative; in float on uniform points (KME's public points),
// where no two residuals come within float rounding (at such a near-tie float rows pick by
// rounding, as kme.hpp says).
TEST(Kme, BatchedStepsChooseThePivotsOfOnePassPerStep) {
  DoubleMatrix uniform(1500, 2);
  SeededRandom rng(16);
  for (Eigen::Index i = 0; i < uniform.size(); ++i) uniform.data()[i] = rng.unit();
  const struct {
    DoubleMatrix points;
    double bandwidth;
    PivotRows rows;
  } cases[] = {{unit_data(1500, 2, 15).cast<double>(), 0.08, PivotRows::Double}, {uniform, 0.05, PivotRows::Float}};
  for (const auto& c : cases) {
    const auto single = pivoted_cholesky(c.points, l2(c.bandwidth), 1e-5, 0, c.rows, 1);
    ASSERT_EQ(single.pivots.size(), 1500u);
    for (const std::size_t lookahead : {std::size_t{7}, kPivotLookahead}) {
      const auto batched = pivoted_cholesky(c.points, l2(c.bandwidth), 1e-5, 0, c.rows, lookahead);
      std::size_t same = 0;
      while (same < batched.pivots.size() && batched.pivots[same] == single.pivots[same]) ++same;
      EXPECT_EQ(batched.pivots, single.pivots) << "lookahead " << lookahead << ": the first " << same << " agree";
      ASSERT_EQ(batched.L.rows(), single.L.rows());
      EXPECT_LT((batched.L - single.L).cwiseAbs().maxCoeff(), 1e-12) << "lookahead " << lookahead;
    }
  }
}

// The batch pass sums blocks of consecutive rows at once and the rows left over one at a time
// (kme.cpp); both must do each sum's operations in the same order, so a point's residuals must
// not depend on where its row sits. Rotating the input moves every point to another slot (and
// the rows past each block to others): the same points must be chosen, and the largest residual
// left must be the same double, bit for bit. A block whose sums were made in another order (a
// matrix product, or additions not fused as in the per-row pass) changes residuals in their last
// bits, and so max_residual.
TEST(Kme, BlockedRowsSumAsSingleRows) {
  DoubleMatrix p(1999, 2);  // uniform: no two residuals tie, so the lower-index rule never decides
  SeededRandom rng(17);
  for (Eigen::Index i = 0; i < p.size(); ++i) p.data()[i] = rng.unit();
  const KernelSpec k = l2(0.05);
  for (const auto rows : {PivotRows::Float, PivotRows::Double}) {
    const auto base = pivoted_cholesky(p, k, 1e-5, 300, rows);
    ASSERT_EQ(base.pivots.size(), 300u);
    for (const Eigen::Index shift : {1, 2, 3, 4, 7}) {
      // Point 0 stays first: every residual starts at k(z, z) = 1, and that tie goes to the
      // lowest index; after it the residuals differ.
      const auto n = static_cast<std::size_t>(p.rows()), s = static_cast<std::size_t>(shift);
      DoubleMatrix q(p.rows(), p.cols());
      q.row(0) = p.row(0);
      for (std::size_t i = 1; i < n; ++i) q.row(static_cast<Eigen::Index>(1 + (i - 1 + s) % (n - 1))) = p.row(static_cast<Eigen::Index>(i));
      const auto rotated = pivoted_cholesky(q, k, 1e-5, 300, rows);
      std::vector<std::size_t> back(rotated.pivots.size());
      for (std::size_t a = 0; a < back.size(); ++a) {
        const std::size_t j = rotated.pivots[a];
        back[a] = j == 0 ? 0 : 1 + (j - 1 + (n - 1) - s) % (n - 1);
      }
      EXPECT_EQ(back, base.pivots) << "shift " << shift;
      EXPECT_EQ(rotated.max_residual, base.max_residual) << "shift " << shift;
      EXPECT_TRUE(rotated.L == base.L) << "shift " << shift;
    }
  }
}

TEST(Kme, PivotedCholeskyIsTheSameOnAnyNumberOfThreads) {
  const DoubleMatrix p = unit_data(2500, 3, 12).cast<double>();
  const KernelSpec k = l2(0.15);
  const int before = omp_get_max_threads();
  for (const auto rows : {PivotRows::Float, PivotRows::Double}) {
    omp_set_num_threads(1);
    const auto one = pivoted_cholesky(p, k, 1e-5, 200, rows);
    omp_set_num_threads(3);
    const auto three = pivoted_cholesky(p, k, 1e-5, 200, rows);
    omp_set_num_threads(before);
    EXPECT_EQ(one.pivots, three.pivots);
    EXPECT_TRUE(one.L == three.L);
    EXPECT_EQ(one.max_residual, three.max_residual);
  }
}

TEST(Kme, WeightsReproduceTheEmbeddingOnThePublicPoints) {
  // Noise off, the released function equals f_D at every pivot (the projection of mu onto
  // span{phi(z)} interpolates <phi(z_p), mu>); weighting by beta instead of w = B beta does not.
  const DenseMatrix data = unit_data(2000, 1, 8);
  const KernelSpec k = l2(0.25);
  KmeOptions o;
  o.points = 400;
  o.tol = 1e-10;
  o.seed = 3;
  KmeRelease kme(data, k, Domain{0, 1}, o);
  const WeightedPoints wp = kme.release(1.0, 0.01, nullptr);
  const DenseMatrix z = wp.points.cast<Real>();
  const auto at_pivots = wp.evaluate(z, k);
  const auto truth = exact(data, z, k);
  EXPECT_LT(max_abs_diff(at_pivots, truth), 1e-6);
  WeightedPoints wrong = wp;
  wrong.weights = kme.alpha();
  EXPECT_GT(max_abs_diff(wrong.evaluate(z, k), truth), 1e-2);
  // ... and approximates it everywhere (public points cover the domain).
  const DenseMatrix q = grid_1d(97, 0, 1);
  EXPECT_LT(max_abs_diff(wp.evaluate(q, k), exact(data, q, k)), 1e-3);
}

TEST(Kme, NoiseIsTheGaussianMechanismAtSensitivityTwoOverN) {
  EXPECT_NEAR(kme_sigma(0.5, 1e-2, 2e-3), 2e-3 * std::sqrt(2 * std::log(125.0)) / 0.5, 1e-15);
  EXPECT_DOUBLE_EQ(kme_sigma(2.0, 1e-2, 2e-3), analytic_gaussian_sigma(2.0, 1e-2, 2e-3));
  const DenseMatrix data = unit_data(500, 1, 9);
  const KernelSpec k = l2(0.3);
  KmeOptions o;
  o.points = 200;
  o.seed = 4;
  KmeRelease kme(data, k, Domain{0, 1}, o);
  const auto clean = kme.release(0.5, 0.01, nullptr);
  SeededRandom rng(12);
  // beta - alpha = L^T (w - w0) must be N(0, sigma^2 I).
  const auto pc = pivoted_cholesky(kme.public_points(), k, o.tol, o.max_rank);
  double s2 = 0;
  std::size_t n = 0;
  double sigma = 0;
  for (int rep = 0; rep < 40; ++rep) {
    const auto noisy = kme.release(0.5, 0.01, &rng, &sigma);
    Eigen::VectorXd dw(static_cast<Eigen::Index>(noisy.weights.size()));
    for (std::size_t i = 0; i < noisy.weights.size(); ++i) dw(static_cast<Eigen::Index>(i)) = noisy.weights[i] - clean.weights[i];
    const Eigen::VectorXd db = pc.L.transpose() * dw;
    s2 += db.squaredNorm();
    n += static_cast<std::size_t>(db.size());
  }
  EXPECT_NEAR(sigma, kme_sigma(0.5, 0.01, 2.0 / 500), 1e-15);
  EXPECT_NEAR(s2 / n / (sigma * sigma), 1.0, 0.08);
}

// ---------------------------------------------------------------- spectral
TEST(Spectral, NoiseFreeLimitAndSensitivity) {
  const DenseMatrix data = unit_data(2000, 1, 10);
  const KernelSpec k = l2(0.3);
  const DenseMatrix q = grid_1d(101, 0, 1);
  const auto truth = exact(data, q, k);
  SpectralRelease s20(data, k, Domain{0, 1}, 20);
  SpectralRelease s2(data, k, Domain{0, 1}, 2);
  const double e20 = max_abs_diff(s20.evaluate(s20.release(1, nullptr), q), truth);
  const double e2 = max_abs_diff(s2.evaluate(s2.release(1, nullptr), q), truth);
  EXPECT_LT(e20, e2);
  EXPECT_LT(e20, 0.02);
  // Brute force: replacing one record moves the coefficients by at most the L1 bound.
  DenseMatrix other = data;
  other(0, 0) = other(0, 0) < 0.5f ? 1.0f : 0.0f;
  SpectralRelease o20(other, k, Domain{0, 1}, 20);
  double l1 = 0;
  for (std::size_t j = 0; j < 20; ++j) l1 += std::abs(o20.coefficients()[j] - s20.coefficients()[j]);
  EXPECT_LE(l1, s20.l1_sensitivity());
  EXPECT_GT(l1, 0.1 * s20.l1_sensitivity());
  // Laplace of scale L1 / eps on every coefficient.
  SeededRandom rng(13);
  double s1 = 0;
  const double eps = 0.5, b = s20.l1_sensitivity() / eps;
  for (int rep = 0; rep < 200; ++rep) {
    const auto c = s20.release(eps, &rng);
    for (std::size_t j = 0; j < 20; ++j) s1 += std::abs(c[j] - s20.coefficients()[j]);
  }
  EXPECT_NEAR(s1 / 4000 / b, 1.0, 0.05);
}

// ---------------------------------------------------------------- PFDA
TEST(Pfda, ManyEigenpairsNoiseFreeLimitAndNoiseVariance) {
  const DenseMatrix data = unit_data(2000, 1, 14);
  const KernelSpec k = l2(0.2);
  PfdaOptions o;
  o.phi = 1e-6;
  o.grid = 400;
  PfdaRelease pf(data, k, Domain{0, 1}, o);
  EXPECT_GT(pf.eigenpairs(), 10);
  const DenseMatrix q = grid_1d(81, 0.05, 0.95);
  EXPECT_LT(max_abs_diff(pf.evaluate(pf.release(1, 0.01, nullptr), q), exact(data, q, k)), 0.01);
  // sigma = Delta sqrt(2 ln(2/delta)) / eps for eps <= 1; the noise at a grid point has
  // variance sigma^2 sum_j tau_j v_j(t)^2 = sigma^2 C(t, t) (up to truncation): C(t,t) = 1.
  const double eps = 0.5, delta = 0.01;
  EXPECT_NEAR(pf.sigma(eps, delta), pf.sensitivity() * std::sqrt(2 * std::log(2 / delta)) / eps, 1e-18);
  EXPECT_LE(pf.sensitivity(), 2.0 * 1.01 / 2000 / (2 * std::sqrt(o.phi)) + 1e-15);  // <= M/(N sqrt(phi))
  const auto clean = pf.release(eps, delta, nullptr);
  SeededRandom rng(15);
  double s2 = 0;
  const int reps = 400, at = 200;
  for (int rep = 0; rep < reps; ++rep) {
    const auto f = pf.release(eps, delta, &rng);
    s2 += (f[at] - clean[at]) * (f[at] - clean[at]);
  }
  const double sig = pf.sigma(eps, delta);
  EXPECT_NEAR(s2 / reps / (sig * sig), 1.0, 0.2);
}

// ---------------------------------------------------------------- histogram
TEST(Histogram, CountsNoiseAndNoiseFreeLimit) {
  const DenseMatrix data = unit_data(5000, 2, 16);
  HistogramRelease h(data, Domain{0, 1}, 10);
  EXPECT_EQ(h.cells(), 100u);
  EXPECT_EQ(std::accumulate(h.counts().begin(), h.counts().end(), std::int64_t{0}), 5000);
  // Cell of the first record holds it.
  const int c0 = std::min(9, int(data(0, 0) * 10)), c1 = std::min(9, int(data(0, 1) * 10));
  EXPECT_GE(h.counts()[static_cast<std::size_t>(c0 * 10 + c1)], 1);
  // Discrete Laplace of scale 1/eps: variance 2a/(1-a)^2, a = exp(-eps).
  SeededRandom rng(17);
  const double eps = 0.7;
  double s2 = 0;
  for (int rep = 0; rep < 200; ++rep) {
    const auto nc = h.noisy_counts(eps, 1.0, &rng);
    for (std::size_t c = 0; c < nc.size(); ++c) s2 += double(nc[c] - h.counts()[c]) * double(nc[c] - h.counts()[c]);
  }
  EXPECT_NEAR(s2 / 20000 / DiscreteLaplace(1 / eps).variance(), 1.0, 0.05);
  const auto wp = h.points(h.noisy_counts(eps, 1.0, &rng));
  EXPECT_NEAR(std::accumulate(wp.weights.begin(), wp.weights.end(), 0.0), 1.0, 1e-12);
  // Fine bins, no noise: the bin-centre KDE is close to the exact one.
  const DenseMatrix one = unit_data(5000, 1, 18);
  HistogramRelease h1(one, Domain{0, 1}, 200);
  const DenseMatrix q = grid_1d(51, 0, 1);
  const KernelSpec k = l2(0.2);
  EXPECT_LT(max_abs_diff(h1.points(h1.counts()).evaluate(q, k), exact(one, q, k)), 5e-3);
}

// ---------------------------------------------------------------- PrivBayes
TEST(PrivBayes, SampleCountNetworkNoiseFreeLimitAndNoiseScale) {
  // x1 = x0 (strong dependence), x2 independent: the noise-free network links x1 and x0.
  SeededRandom g(19);
  DenseMatrix data(20000, 3);
  for (Eigen::Index i = 0; i < data.rows(); ++i) {
    data(i, 0) = static_cast<Real>(g.unit());
    data(i, 1) = data(i, 0);
    data(i, 2) = static_cast<Real>(g.unit());
  }
  PrivBayesOptions o;
  o.degree = 1;
  o.bins = 16;
  PrivBayes pb(data, TableBox::uniform(3, 0, 1), o);
  SeededRandom sampler(20);
  PrivBayesNetwork net;
  WeightedPoints wp;
  wp.points = pb.fit(1.0, nullptr, &net).sample(30000, sampler);
  wp.weights.assign(30000, 1.0 / 30000);
  EXPECT_EQ(wp.points.rows(), 30000);
  EXPECT_EQ(wp.points.cols(), 3);
  ASSERT_EQ(net.order.size(), 3u);
  EXPECT_EQ(net.order[0], 0);
  EXPECT_EQ(net.order[1], 1);
  EXPECT_EQ(net.parents[1], std::vector<int>{0});
  // Synthetic points keep the dependence: |x0 - x1| <= one bin.
  for (Eigen::Index i = 0; i < 1000; ++i) EXPECT_LE(std::abs(wp.points(i, 0) - wp.points(i, 1)), 2.0 / 16 + 1e-9);
  // KDE through the synthetic points is close to the exact one (bins narrower than the kernel).
  DenseMatrix q(200, 3);
  for (Eigen::Index i = 0; i < q.rows(); ++i) q.row(i) = data.row(i * 37);
  const KernelSpec k = l2(1.0);
  const auto est = wp.evaluate(q, k), truth = exact(data, q, k);
  double rel = 0;
  for (std::size_t i = 0; i < est.size(); ++i) rel += std::abs(est[i] - truth[i]) / truth[i];
  EXPECT_LT(rel / 200, 0.03);
  // Noise scales as the paper: S(I) and 4 (d - k) / (n eps2).
  const double n = 20000;
  EXPECT_NEAR(pb.mi_sensitivity(), std::log2(n) / n + (n - 1) / n * std::log2(n / (n - 1)), 1e-15);
  EXPECT_NEAR(pb.conditional_noise_scale(2.0), 4.0 * 2 / (n * 0.7 * 2.0), 1e-15);
  EXPECT_NEAR(pb.mutual_information(1, {0}), 4.0, 0.01);  // 16 near-equiprobable bins: 4 bits
  EXPECT_LT(pb.mutual_information(2, {0}), 0.01);
  // Private release still yields M points.
  SeededRandom rng(21);
  EXPECT_EQ(pb.fit(0.1, &rng).sample(30000, sampler).rows(), 30000);
}

}  // namespace
}  // namespace privrace::baselines
