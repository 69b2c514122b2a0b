#pragma once
// Smooth queries under non-interactive LDP by trigonometric polynomials (Wang, Gaboardi & Xu
// 2018, Section 6.2, Algorithm 5, built on Lemma 5 of Wang et al. 2016, "Differentially private
// data releasing for smooth queries"). Our reconstruction, since the extracted text lost the
// formulas:
//
// Data universe [-1, 1]^d. With x_a = cos(theta_a), theta_a in [0, pi], a query f on [-1, 1]^d
// becomes g(theta) = f(cos theta_1, ..., cos theta_d), even and 2 pi-periodic in each theta_a,
// and is approximated by the even trigonometric polynomial of degree t - 1 per variable
//     p(x) = sum_{r in {0..t-1}^d} c_r prod_a cos(r_a theta_a) = sum_r c_r prod_a T_{r_a}(x_a)
// (T_r the Chebyshev polynomials). Every query of the family shares the basis
// phi_r(x) = prod_a T_{r_a}(x_a) in [-1, 1], so the players send the basis once through
// LDP-AVG, whatever the number of queries, and the server answers each query by
// sum_r c_r mean(phi_r) with its own public coefficients. phi_0 = 1 is known and not sent:
// D = t^d - 1 values a player.
//
// Coefficients: the cosine (Chebyshev) expansion of f truncated at t - 1 per variable, computed
// by Chebyshev-Gauss quadrature on N >= t nodes per axis (the discrete cosine transform, one
// axis at a time). For an analytic f such as a Gaussian kernel the truncation error falls
// geometrically in t, at a rate set by the bandwidth (about exp(-c t sigma)); the coefficients
// are bounded by 2 max |f| (Lemma 5's property 2). approximation_error() measures the max of
// |f - p| on a fine grid (a public property of the query, not of the data).
//
// The query family of the experiment: Gaussian kernel density at a grid of centres c with
// several bandwidths sigma, f_{c,sigma}(x) = exp(-||x - c||^2 / (2 sigma^2)) in (0, 1].
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace privrace::ldp {

// n points of [-1, 1]^d, row-major.
struct PointData {
  std::size_t n = 0, d = 0;
  std::vector<double> x;
  std::size_t clipped = 0;  // coordinates moved into [-1, 1] by clip_to_cube
  const double* row(std::size_t i) const { return x.data() + i * d; }
};
// Coordinates outside [-1, 1]: clamped and the rows counted when clip is true, otherwise an
// InputError naming the first such row, coordinate and value.
std::size_t clip_to_cube(PointData& data, bool clip, const std::string& source);

struct KernelQuery {
  std::vector<double> centre;
  double bandwidth = 1;
  double operator()(const double* x) const;
};
// centres_per_axis^d centres on the grid {-1 + (2i + 1) / c} x ... times each bandwidth
// (queries ordered bandwidth-major). UsageError for a non-positive bandwidth or count.
std::vector<KernelQuery> kde_query_family(int d, int centres_per_axis, const std::vector<double>& bandwidths);
// Exact answers (1/n) sum_i f_q(x_i); fixed blocks, so independent of threads.
std::vector<double> exact_kernel_answers(const PointData& data, const std::vector<KernelQuery>& queries, int threads = 0);

class TrigonometricBasis {
 public:
  // Degree t - 1 per variable. UsageError unless d >= 1 and t >= 1; ResourceError, before any
  // allocation, when the t^d coefficients of every query would not fit in max_bytes.
  TrigonometricBasis(int d, int t, std::size_t queries = 1, double max_bytes = 2.0 * 1073741824.0);
  int dimension() const { return d_; }
  int degree() const { return t_; }
  std::size_t terms() const { return terms_; }  // t^d (including the constant)
  std::size_t sent() const { return terms_ - 1; }  // D: the values a player sends
  // phi_r(x) for the sent term j (r = j + 1 in base-t digits, last variable fastest).
  double value(std::size_t j, const double* x) const;
  // All t^d values phi_r(x), the constant first.
  void values(const double* x, double* out) const;
  // The truncated cosine expansion of f (t^d coefficients), nodes per axis N >= t (0: 4 t + 16).
  std::vector<double> coefficients(const std::function<double(const double*)>& f, int nodes = 0) const;
  // sum_r c_r m_r with m_0 = 1 and m_{j+1} = sent_means[j].
  double answer(const std::vector<double>& coefficients, const std::vector<double>& sent_means) const;
  // max |f - p| over a grid of `per_axis`^d points of [-1, 1]^d (a property of the query).
  double approximation_error(const std::function<double(const double*)>& f, const std::vector<double>& coefficients,
                             int per_axis = 0) const;
  // The exact means of the sent terms over the data (no privacy; tests and references).
  std::vector<double> exact_means(const PointData& data) const;

 private:
  int d_, t_;
  std::size_t terms_;
};

enum class SmoothProtocol { Bit, Laplace };
SmoothProtocol parse_smooth_protocol(const std::string& name);  // "bit" | "laplace"

struct SmoothRelease {
  std::vector<double> answers;
  std::vector<double> sent_means;  // the released basis means
  std::uint64_t reports_per_player = 0;
};
// Algorithm 5: the players send phi_r(x), r != 0, mapped to u = (phi + 1) / 2 in [0, 1], through
//   Bit:     Lemma 2's LDP-AVG in its 1-bit form (one public term per player, one bit, whole eps);
//   Laplace: Algorithm 1 on all D terms (lattice + exact discrete Laplace, eps / D each);
// the server debiases, maps back (m = 2 u - 1) and answers every query from its coefficients.
SmoothRelease ldp_trigonometric_queries(const PointData& data, const TrigonometricBasis& basis,
                                        const std::vector<std::vector<double>>& coefficients, double eps,
                                        SmoothProtocol protocol, std::uint64_t seed, int threads = 0);
// Baseline: per-query LDP averaging. Each player is assigned one query by public coins and
// sends f_q(x) in [0, 1] as one bit with the whole eps; the server debiases per query.
std::vector<double> ldp_per_query_kernel_answers(const PointData& data, const std::vector<KernelQuery>& queries,
                                                 double eps, std::uint64_t seed, int threads = 0);

}  // namespace privrace::ldp
