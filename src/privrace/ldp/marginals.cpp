#include "privrace/ldp/marginals.hpp"

#include <cmath>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/ldp/protocols.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::ldp {

std::vector<std::vector<int>> subsets_of_size(int d, int k) {
  std::vector<std::vector<int>> out;
  if (k < 0 || k > d) return out;
  std::vector<int> s(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) s[static_cast<std::size_t>(i)] = i;
  while (true) {
    out.push_back(s);
    int i = k - 1;
    while (i >= 0 && s[static_cast<std::size_t>(i)] == d - k + i) --i;
    if (i < 0) break;
    ++s[static_cast<std::size_t>(i)];
    for (int j = i + 1; j < k; ++j) s[static_cast<std::size_t>(j)] = s[static_cast<std::size_t>(j - 1)] + 1;
  }
  return out;
}

std::vector<double> exact_conjunctions(const BinaryData& data, const std::vector<std::vector<int>>& queries) {
  std::vector<double> out(queries.size(), 0.0);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    std::size_t c = 0;
    for (std::size_t i = 0; i < data.n; ++i) {
      bool all = true;
      for (int a : queries[q]) all = all && data.row(i)[a];
      c += all;
    }
    out[q] = data.n ? static_cast<double>(c) / static_cast<double>(data.n) : 0.0;
  }
  return out;
}

namespace {
using Poly = std::vector<double>;  // coefficients, lowest degree first
Poly mul(const Poly& a, const Poly& b) {
  Poly r(a.size() + b.size() - 1, 0.0);
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < b.size(); ++j) r[i + j] += a[i] * b[j];
  return r;
}
Poly add(Poly a, const Poly& b, double s) {
  if (a.size() < b.size()) a.resize(b.size(), 0.0);
  for (std::size_t i = 0; i < b.size(); ++i) a[i] += s * b[i];
  return a;
}
double eval(const Poly& p, double z) {
  double v = 0;
  for (std::size_t i = p.size(); i-- > 0;) v = v * z + p[i];
  return v;
}
}  // namespace

ChebyshevMarginals::ChebyshevMarginals(int d, int k, int t) : d_(d), k_(k), t_(t == 0 ? k : t) {
  if (d < 1 || k < 1 || k > d)
    throw UsageError("k-way marginals: need 1 <= k <= d (got k = " + std::to_string(k) + ", d = " + std::to_string(d) + ")");
  if (t_ < 1 || t_ > k)
    throw UsageError("k-way marginals: polynomial degree t = " + std::to_string(t_) + ", expected 1 <= t <= k = " +
                     std::to_string(k));
  if (t_ == k || k == 1) {
    t_ = k;  // the interpolant prod_{m=1}^k (1 - z/m)
    a_ = {1.0};
    for (int m = 1; m <= k; ++m) a_ = mul(a_, {1.0, -1.0 / m});
  } else {
    // T_t(u) with u = (k - z)/(k - 1), divided by T_t(k/(k-1)).
    const Poly u = {static_cast<double>(k) / (k - 1), -1.0 / (k - 1)};
    Poly t0 = {1.0}, t1 = u;
    for (int j = 2; j <= t_; ++j) {
      Poly t2 = add(mul(u, t1), t0, -0.5);
      for (auto& v : t2) v *= 2.0;  // T_{j} = 2u T_{j-1} - T_{j-2}
      t0 = std::move(t1);
      t1 = std::move(t2);
    }
    a_ = t_ == 1 ? u : t1;
    const double norm = eval(a_, 0.0);
    for (auto& v : a_) v /= norm;
  }
  a_.resize(static_cast<std::size_t>(t_) + 1, 0.0);
  // Stirling numbers of the second kind S2(m, j), m, j <= t.
  std::vector<std::vector<double>> s2(static_cast<std::size_t>(t_) + 1, std::vector<double>(static_cast<std::size_t>(t_) + 1, 0.0));
  s2[0][0] = 1;
  for (int m = 1; m <= t_; ++m)
    for (int j = 1; j <= m; ++j) s2[m][j] = j * s2[m - 1][j] + s2[m - 1][j - 1];
  c_.assign(static_cast<std::size_t>(t_) + 1, 0.0);
  for (int j = 0; j <= t_; ++j) {
    double fact = 1;
    for (int q = 2; q <= j; ++q) fact *= q;
    for (int m = j; m <= t_; ++m) c_[j] += a_[m] * s2[m][j] * fact;
  }
  binom_.assign(static_cast<std::size_t>(d) + 1, std::vector<std::uint64_t>(static_cast<std::size_t>(t_) + 2, 0));
  for (int n = 0; n <= d; ++n) {
    binom_[n][0] = 1;
    for (int r = 1; r <= t_ + 1 && r <= n; ++r) binom_[n][r] = binom_[n - 1][r - 1] + (r <= n - 1 ? binom_[n - 1][r] : 0);
  }
  offset_.assign(static_cast<std::size_t>(t_) + 2, 0);
  for (int j = 1; j <= t_; ++j) {
    offset_[j] = subsets_.size();
    for (auto& s : subsets_of_size(d, j)) subsets_.push_back(std::move(s));
  }
  offset_[t_ + 1] = subsets_.size();
}

std::size_t ChebyshevMarginals::index(const std::vector<int>& T) const {
  // Lexicographic rank of T among the size-|T| subsets of {0..d-1}.
  const int j = static_cast<int>(T.size());
  std::size_t rank = 0;
  int prev = -1;
  for (int pos = 0; pos < j; ++pos) {
    for (int v = prev + 1; v < T[pos]; ++v) rank += binom_[d_ - 1 - v][j - 1 - pos];
    prev = T[pos];
  }
  return offset_[j] + rank;
}

double ChebyshevMarginals::answer(const std::vector<double>& means, const std::vector<int>& S) const {
  double total = c_[0];
  const int k = static_cast<int>(S.size());
  for (int j = 1; j <= t_ && j <= k; ++j) {
    double sum = 0;
    for (const auto& pick : subsets_of_size(k, j)) {
      std::vector<int> T(pick.size());
      for (std::size_t q = 0; q < pick.size(); ++q) T[q] = S[pick[q]];
      sum += means[index(T)];
    }
    total += c_[j] * sum;
  }
  return total;
}

double ChebyshevMarginals::approximation_error() const {
  double e = 0;
  for (int z = 1; z <= k_; ++z) e = std::max(e, std::abs(eval(a_, z)));
  return e;
}

std::vector<double> ldp_chebyshev_marginals(const BinaryData& data, const std::vector<std::vector<int>>& queries, int k,
                                            int t, double eps, std::uint64_t seed, int threads) {
  const ChebyshevMarginals cm(static_cast<int>(data.d), k, t);
  const VectorEstimate est = sampled_bit_average(
      data.n, cm.monomials(), eps, derive_seed(seed, 1), derive_seed(seed, 2),
      [&](std::uint64_t i, std::size_t j) { return cm.monomial_value(j, data.row(i)); }, threads);
  std::vector<double> out(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q) out[q] = cm.answer(est.mean, queries[q]);
  return out;
}

std::vector<double> ldp_rr_marginals(const BinaryData& data, const std::vector<std::vector<int>>& queries, double eps,
                                     std::uint64_t seed, int threads) {
  const VectorEstimate est = sampled_bit_average(
      data.n, queries.size(), eps, derive_seed(seed, 1), derive_seed(seed, 2),
      [&](std::uint64_t i, std::size_t q) {
        for (int a : queries[q])
          if (!data.row(i)[a]) return 0.0;
        return 1.0;
      },
      threads);
  return est.mean;
}

std::vector<double> central_histogram_marginals(const BinaryData& data, const std::vector<std::vector<int>>& queries,
                                                double eps, std::uint64_t seed) {
  check_epsilon(eps);
  if (data.d > 24) throw ResourceError("central histogram: 2^" + std::to_string(data.d) + " cells; d <= 24 supported");
  const std::size_t cells = std::size_t{1} << data.d;
  std::vector<std::int64_t> hist(cells, 0);
  for (std::size_t i = 0; i < data.n; ++i) {
    std::size_t c = 0;
    for (std::size_t a = 0; a < data.d; ++a) c |= static_cast<std::size_t>(data.row(i)[a]) << a;
    ++hist[c];
  }
  if (std::isfinite(eps)) {
    SeededRandom rng(seed);
    const DiscreteLaplace noise(1.0 / eps);
    noise.add_to(hist, rng, noise.bulk_sampler().get());
  }
  std::vector<double> out(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q) {
    std::size_t mask = 0;
    for (int a : queries[q]) mask |= std::size_t{1} << a;
    std::int64_t s = 0;
    for (std::size_t c = 0; c < cells; ++c)
      if ((c & mask) == mask) s += hist[c];
    out[q] = data.n ? static_cast<double>(s) / static_cast<double>(data.n) : 0.0;
  }
  return out;
}

}  // namespace privrace::ldp
