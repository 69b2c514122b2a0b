#pragma once
// k-way marginals of binary data under non-interactive LDP by polynomial approximation
// (Wang, Gaboardi & Xu 2018, Section 6, Algorithm 4; the Chebyshev construction of Thaler,
// Ullman & Vadhan 2012). Our reconstruction, since the extracted text lost the formulas:
//
// A k-way marginal here is the monotone conjunction q_S(x) = prod_{i in S} x_i over |S| = k
// attributes (the fraction of records with all of S equal to 1; a full 2^k-cell table follows
// from the conjunctions over the subsets of S by inclusion-exclusion). With W(x) = {i : x_i = 0}
// and z = |S cap W(x)| in {0..k}, q_S(x) = g(z) with g(0) = 1 and g(z) = 0 for z >= 1. A
// polynomial p(z) = sum_m a_m z^m of degree t approximating g on {0..k} gives, because
// z^m = sum_j S2(m, j) j! C(z, j) and C(z, j) = sum_{T subset S, |T| = j} prod_{i in T} w_i
// (w_i = 1 - x_i), the linear form
//    q_S(x) ~ sum_{j=0}^t c_j sum_{T subset S, |T| = j} v_T(x),   c_j = sum_{m>=j} a_m S2(m, j) j!,
// in the monomials v_T(x) = prod_{i in T} (1 - x_i), |T| <= t: one vector of
// D = sum_{j=1}^t C(d, j) values in {0, 1} per player, whatever the number of queries. The
// players send it through LDP-AVG (sampled_bit_average: one public monomial, one bit) and the
// server answers every marginal from the averaged monomials.
//   * t = k: p is the interpolant prod_{m=1}^k (1 - z/m): exact (inclusion-exclusion).
//   * t < k: the Chebyshev choice p(z) = T_t((k - z)/(k - 1)) / T_t(k/(k - 1)): p(0) = 1 and
//     |p(z)| <= 1 / T_t(k/(k-1)) on 1..k, which is small once t ~ sqrt(k) log(1/alpha).
#include <cstdint>
#include <vector>

namespace privrace::ldp {

struct BinaryData {
  std::size_t n = 0, d = 0;
  std::vector<std::uint8_t> x;  // n x d, row-major, values 0/1
  const std::uint8_t* row(std::size_t i) const { return x.data() + i * d; }
};

// Every subset of {0..d-1} of size k, in lexicographic order.
std::vector<std::vector<int>> subsets_of_size(int d, int k);
// Exact q_S for each S (fraction of rows with all of S equal to 1).
std::vector<double> exact_conjunctions(const BinaryData& data, const std::vector<std::vector<int>>& queries);

class ChebyshevMarginals {
 public:
  // t = 0 means t = k (exact interpolation). UsageError unless 1 <= k <= d and 1 <= t <= k.
  ChebyshevMarginals(int d, int k, int t = 0);
  int degree() const { return t_; }
  std::size_t monomials() const { return subsets_.size(); }          // D
  const std::vector<int>& monomial(std::size_t j) const { return subsets_[j]; }
  // v_T(x) = prod_{i in T} (1 - x_i) for monomial j.
  double monomial_value(std::size_t j, const std::uint8_t* x) const {
    for (int i : subsets_[j])
      if (x[i]) return 0.0;
    return 1.0;
  }
  // The marginal of S from the averaged monomials (size D).
  double answer(const std::vector<double>& monomial_means, const std::vector<int>& S) const;
  // max over z = 1..k of |p(z)|: the approximation error of the polynomial itself.
  double approximation_error() const;
  const std::vector<double>& c() const { return c_; }

 private:
  std::size_t index(const std::vector<int>& T) const;  // rank of a subset among the monomials
  int d_, k_, t_;
  std::vector<double> a_;  // p's monomial coefficients a_0..a_t
  std::vector<double> c_;  // c_0..c_t
  std::vector<std::vector<int>> subsets_;
  std::vector<std::size_t> offset_;               // first index of size-j subsets
  std::vector<std::vector<std::uint64_t>> binom_;  // C(n, r) for n <= d
};

// The three releases of the marginals experiment; each returns the answers to `queries`.
// Algorithm 4 (Chebyshev monomials through LDP-AVG, one bit per player).
std::vector<double> ldp_chebyshev_marginals(const BinaryData& data, const std::vector<std::vector<int>>& queries, int k,
                                            int t, double eps, std::uint64_t seed, int threads = 0);
// Per-query randomised response: each player is assigned one query by public coins and sends
// her answer (a bit) by randomised response with the whole eps; the server debiases per query.
std::vector<double> ldp_rr_marginals(const BinaryData& data, const std::vector<std::vector<int>>& queries, double eps,
                                     std::uint64_t seed, int threads = 0);
// Central DP: the 2^d histogram with discrete Laplace noise of scale 1/eps (add/remove one record
// changes one cell by one: L1 sensitivity 1), marginals summed from it, n public. d <= 24.
std::vector<double> central_histogram_marginals(const BinaryData& data, const std::vector<std::vector<int>>& queries,
                                                double eps, std::uint64_t seed);

}  // namespace privrace::ldp
