#pragma once
// The multivariate iterated Bernstein polynomial (Definition 6 of Wang, Gaboardi & Xu;
// Micchelli 1973 for the iterates) and its minimisation over [0, 1]^p.
//
// B_k is the tensor-product Bernstein operator on the grid T = {0, 1/k, ..., 1}^p:
//   B_k(f)(t) = sum_{v in {0..k}^p} f(v/k) prod_j b_{v_j,k}(t_j),  b_{v,k}(t) = C(k,v) t^v (1-t)^(k-v).
// Micchelli's 1-D iterate of order h is B_k^(h) = I - (I - B_k)^h = sum_{i=1}^h C(h,i) (-1)^(i-1) B_k^i,
// so B_k^(h)(f)(t) = sum_v c_v b_{v,k}(t) with c = C_h F, F the grid values and
//   C_h = sum_{i=1}^h C(h,i) (-1)^(i-1) M^(i-1) = sum_{j=0}^{h-1} (I - M)^j,
// M the (k+1)x(k+1) matrix M[u][v] = b_{v,k}(u/k). The multivariate iterate (Definition 6, after
// Aldà & Rubinstein) is the tensor product of the 1-D iterates: its coefficients are C_h applied
// along every axis, c = (C_h (x) ... (x) C_h) F, i.e. P(t) = sum_v F(v/k) prod_j b^(h)_{v_j,k}(t_j).
// (For p >= 2 and h >= 2 this differs from I - (I - (x)_j B_k)^h: docs/ldp-bernstein.md.)
// h = 1 is the plain Bernstein polynomial. It reproduces polynomials of degree <= 1 in each
// variable exactly; on t^2 the 1-D iterate gives t^2 - (t^2 - t) k^-h.
// Theorem 2 (Aldà & Rubinstein's Lemma, from Micchelli): for a (2h, T)-smooth f,
// ||B_k^(h) f - f||_inf = O(p T k^-h); the coefficients satisfy max|c| <= (2^h - 1)^p max|F|
// (Proposition 4 of Aldà & Rubinstein, per axis), which is how grid noise is amplified.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace privrace::ldp {

// (k+1)^p; ResourceError when it exceeds 2^62.
std::uint64_t grid_points(int k, int p);
// UsageError for k < 1, h < 1 or p < 1; ResourceError, before anything is allocated, when
// (k+1)^p grid points at `bytes_per_point` bytes would exceed max_bytes (the message gives
// the estimate).
void check_grid(int k, int h, int p, double bytes_per_point, double max_bytes);

// Grid point index (row-major, axis 0 slowest) -> t = v / k.
void grid_point(std::uint64_t index, int k, int p, double* t);

class IteratedBernstein {
 public:
  // grid_values: f on T, row-major with axis 0 slowest ((k+1)^p values).
  IteratedBernstein(int p, int k, int h, std::vector<double> grid_values);
  int dim() const { return p_; }
  int degree() const { return k_; }
  int order() const { return h_; }
  const std::vector<double>& coefficients() const { return coef_; }
  double operator()(std::span<const double> t) const;
  // Values on the tensor grid {0, 1/(m-1), ..., 1}^p (m^p values, row-major).
  std::vector<double> evaluate_grid(int m) const;
  // An upper bound on |dP/dt_j| over [0,1]^p: k max |c_{v+e_j} - c_v| (derivative of a Bernstein form).
  double lipschitz_bound() const;

  static void basis(int k, double t, double* out);  // b_{v,k}(t), v = 0..k
  // The 1-D coefficient matrix C_h = sum_{j<h} (I - M)^j ((k+1) x (k+1), row-major).
  static std::vector<double> iterate_matrix(int k, int h);

 private:
  int p_, k_, h_;
  std::vector<double> coef_;
};

struct PolynomialMinimum {
  std::vector<double> t;     // the minimiser found, in [0, 1]^p
  double value = 0;
  int grid_per_axis = 0;     // the dense search grid
  double grid_spacing = 0;
  // Global-minimum guarantee of the dense grid (the refinement only lowers the value):
  // value - min P <= (sqrt(p) spacing / 2) * sqrt(p) * lipschitz_bound = p spacing L / 2.
  double grid_error_bound = 0;
  int refinement_evaluations = 0;
  double seconds = 0;
};

// Dense grid of m points per axis (m = 0: the largest m with m^p <= max_grid_points, at most
// 4097), then local refinement by NLopt's Subplex from the best grid point inside the box.
PolynomialMinimum minimize(const IteratedBernstein& poly, int m = 0, std::uint64_t max_grid_points = 1u << 21);

// Theorem 3's degree (constants dropped, derived): the approximation error p T k^-h balances
// the grid noise (2^h - 1) (k+1)^p / (eps sqrt n) (Laplace with eps / (k+1)^p per point) at
// k = (eps sqrt n)^(1 / (h + p)); scale multiplies it. For the 1-bit protocol the per-point
// noise is c_eps (k+1)^(p/2) / sqrt n (each point sees n / (k+1)^p players), which gives
// k = (eps sqrt n)^(1 / (h + p/2)) (our derivation; the paper states the same rate as Theorem 3).
int theorem3_degree(double n, double eps, int p, int h, double scale = 1.0, bool one_bit = false);

}  // namespace privrace::ldp
