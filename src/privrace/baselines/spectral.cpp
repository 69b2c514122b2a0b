#include "privrace/baselines/spectral.hpp"

#include <cmath>
#include <numbers>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {

double SpectralRelease::basis(int j, double t) {
  return j == 0 ? 1.0 : std::numbers::sqrt2 * std::cos(std::numbers::pi * j * t);
}

SpectralRelease::SpectralRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, int terms, int G)
    : dom_(dom) {
  if (train.cols() != 1) throw UsageError("spectral: 1-dimensional data only (the series lives on [0, 1])");
  if (terms < 1) throw UsageError("spectral: at least one coefficient");
  DoubleMatrix grid(G, 1);
  for (int g = 0; g < G; ++g) grid(g, 0) = dom.from_unit((g + 0.5) / G);
  const DenseMatrix clipped = clip_to_domain(train, dom).cast<Real>();
  const std::vector<double> F = kde_at(clipped, grid, spec);  // parallel exact KDE on the grid
  // Basis table (terms x G): the sensitivity loop below would otherwise spend its time in cos
  // (perf: 55% in __cos_fma before the table).
  std::vector<double> phi(static_cast<std::size_t>(terms) * static_cast<std::size_t>(G));
  for (int j = 0; j < terms; ++j)
    for (int g = 0; g < G; ++g) phi[static_cast<std::size_t>(j) * G + static_cast<std::size_t>(g)] = basis(j, (g + 0.5) / G);
  c_.assign(static_cast<std::size_t>(terms), 0.0);
  for (int j = 0; j < terms; ++j) {
    double s = 0;
    for (int g = 0; g < G; ++g) s += F[static_cast<std::size_t>(g)] * phi[static_cast<std::size_t>(j) * G + static_cast<std::size_t>(g)];
    c_[static_cast<std::size_t>(j)] = s / G;
  }
  // sup_x |g_j(x)| over a public x grid (data-independent), in parallel over x.
  const int X = 1024;
  std::vector<double> sup(static_cast<std::size_t>(terms), 0.0);
#pragma omp parallel
  {
    std::vector<double> local(static_cast<std::size_t>(terms), 0.0), kv(static_cast<std::size_t>(G));
#pragma omp for schedule(static)
    for (int xi = 0; xi <= X; ++xi) {
      const double x = dom.from_unit(static_cast<double>(xi) / X);
      for (int g = 0; g < G; ++g) {
        const double y = grid(g, 0);
        kv[static_cast<std::size_t>(g)] = kernel_value(spec, &x, &y, 1);
      }
      for (int j = 0; j < terms; ++j) {
        double s = 0;
        const double* pj = &phi[static_cast<std::size_t>(j) * G];
        for (int g = 0; g < G; ++g) s += kv[static_cast<std::size_t>(g)] * pj[g];
        local[static_cast<std::size_t>(j)] = std::max(local[static_cast<std::size_t>(j)], std::abs(s / G));
      }
    }
#pragma omp critical
    for (int j = 0; j < terms; ++j) sup[static_cast<std::size_t>(j)] = std::max(sup[static_cast<std::size_t>(j)], local[static_cast<std::size_t>(j)]);
  }
  const double n = static_cast<double>(train.rows());
  for (double s : sup) l1_ += 2.0 * 1.01 * s / n;
}

std::vector<double> SpectralRelease::release(double epsilon, RandomSource* rng) const {
  std::vector<double> c = c_;
  if (rng)
    for (auto& v : c) v += sample_laplace(*rng, l1_ / epsilon);
  return c;
}

std::vector<double> SpectralRelease::evaluate(const std::vector<double>& coef, const DenseRef& queries) const {
  std::vector<double> out(static_cast<std::size_t>(queries.rows()));
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t q = 0; q < static_cast<std::ptrdiff_t>(queries.rows()); ++q) {
    const double t = dom_.to_unit(queries(q, 0));
    double s = 0;
    for (std::size_t j = 0; j < coef.size(); ++j) s += coef[j] * basis(static_cast<int>(j), t);
    out[static_cast<std::size_t>(q)] = s;
  }
  return out;
}

}  // namespace privrace::baselines
