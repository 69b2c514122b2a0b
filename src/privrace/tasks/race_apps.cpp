#include "privrace/tasks/race_apps.hpp"

#include <nlopt.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace {
namespace {

double pow_int(double v, std::size_t p) {
  double r = 1.0;
  for (std::size_t i = 0; i < p; ++i) r *= v;
  return r;
}

double distance(const double* a, const double* b, std::size_t d) {
  double s = 0;
  for (std::size_t j = 0; j < d; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return std::sqrt(s);
}

}  // namespace

ExactKde::ExactKde(const DenseRef& data, const KernelSpec& spec) : spec_(spec) {
  if (spec.kernel != Kernel::L2)
    throw UsageError("exact KDE for mode search: only the l2 (p-stable) kernel, not '" + to_string(spec.kernel) + "'");
  if (!(spec.bandwidth > 0)) throw UsageError("exact KDE: bandwidth must be positive");
  if (spec.power == 0) throw UsageError("exact KDE: power must be at least 1");
  const auto n = static_cast<std::size_t>(data.rows());
  const auto d = static_cast<Eigen::Index>(data.cols());
  if (n == 0) throw InputError("exact KDE: the data set is empty");
  // Merge identical rows (lexicographic sort of row indices).
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const auto less = [&](std::size_t a, std::size_t b) {
    for (Eigen::Index j = 0; j < d; ++j) {
      const Real x = data(static_cast<Eigen::Index>(a), j), y = data(static_cast<Eigen::Index>(b), j);
      if (x != y) return x < y;
    }
    return a < b;
  };
  std::sort(order.begin(), order.end(), less);
  std::vector<std::size_t> firsts;
  std::vector<double> counts;
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = static_cast<Eigen::Index>(order[i]);
    if (!firsts.empty() && data.row(r) == data.row(static_cast<Eigen::Index>(firsts.back()))) {
      counts.back() += 1;
    } else {
      firsts.push_back(order[i]);
      counts.push_back(1);
    }
  }
  points_.resize(static_cast<Eigen::Index>(firsts.size()), d);
  for (std::size_t i = 0; i < firsts.size(); ++i)
    points_.row(static_cast<Eigen::Index>(i)) = data.row(static_cast<Eigen::Index>(firsts[i])).cast<double>();
  weights_.resize(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) weights_[i] = counts[i] / static_cast<double>(n);
}

double ExactKde::at(const double* q) const {
  const auto d = static_cast<std::size_t>(points_.cols());
  const double inv_w = 1.0 / spec_.bandwidth;
  double sum = 0;
  for (Eigen::Index i = 0; i < points_.rows(); ++i) {
    const double k = pstable_kernel_tabulated(distance(points_.row(i).data(), q, d) * inv_w);
    sum += weights_[static_cast<std::size_t>(i)] * (spec_.power == 1 ? k : pow_int(k, spec_.power));
  }
  return sum;
}

std::vector<double> ExactKde::operator()(const DenseRef& points) const {
  if (points.cols() != points_.cols()) throw InputError("exact KDE: queries have the wrong dimension");
  std::vector<double> out(static_cast<std::size_t>(points.rows()));
  const auto m = static_cast<std::ptrdiff_t>(points.rows());
#pragma omp parallel for schedule(dynamic, 4) if (m > 8)
  for (std::ptrdiff_t i = 0; i < m; ++i) {
    const Eigen::VectorXd q = points.row(i).cast<double>().transpose();
    out[static_cast<std::size_t>(i)] = at(q.data());
  }
  return out;
}

RaceDensity::RaceDensity(const RaceSketch& sketch) : sketch_(&sketch), n_hat_(sketch.n_hat()) {
  // A noisy N-hat can be tiny or negative at small epsilon; dividing by max(N-hat, 1) keeps
  // the order of the estimates (what modes, scores and weights use) and a finite scale.
  divisor_ = std::max(n_hat_, 1.0);
}

std::vector<double> RaceDensity::operator()(const DenseRef& points) const {
  QueryOptions mean;
  auto out = sketch_->query_dense(points, mean);
  for (auto& v : out) v /= divisor_;
  return out;
}

// ---------------------------------------------------------------------------------------

void SearchBox::validate(std::size_t dim) const {
  if (lower.size() != dim || upper.size() != dim)
    throw UsageError("search box: " + std::to_string(lower.size()) + " lower and " + std::to_string(upper.size()) +
                     " upper bounds for " + std::to_string(dim) + "-dimensional data");
  for (std::size_t j = 0; j < dim; ++j)
    if (!std::isfinite(lower[j]) || !std::isfinite(upper[j]) || !(lower[j] < upper[j]))
      throw UsageError("search box: coordinate " + std::to_string(j + 1) + " is empty or unbounded: [" +
                       std::to_string(lower[j]) + ", " + std::to_string(upper[j]) + "] (expected finite lower < upper)");
}

namespace {

// The options and box checked (UsageError naming the option), and the local optimiser they name.
nlopt::algorithm mode_search_algorithm(const SearchBox& box, const ModeSearchOptions& o) {
  if (o.modes == 0) throw UsageError("mode search: k = 0 modes requested (expected at least 1)");
  if (o.starts == 0) throw UsageError("mode search: starts must be at least 1");
  if (o.max_evaluations == 0) throw UsageError("mode search: max_evaluations must be at least 1");
  if (!(o.initial_step > 0) || !(o.x_tolerance > 0) || !(o.min_separation >= 0))
    throw UsageError("mode search: initial_step and x_tolerance must be positive, min_separation non-negative");
  const std::size_t d = box.lower.size();
  if (d == 0) throw UsageError("search box: no coordinates");
  box.validate(d);
  if (o.algorithm == "sbplx") return nlopt::LN_SBPLX;
  if (o.algorithm == "neldermead") return nlopt::LN_NELDERMEAD;
  throw UsageError("mode search: algorithm '" + o.algorithm + "' (expected sbplx or neldermead)");
}

// Starting points from the best cells of a public grid of o.grid^d cells: greedy by density, a
// cell within min_separation of a chosen start skipped while others remain, so the starts spread
// over distinct bumps; the rest fill up in order. Returns the density evaluations spent.
std::size_t grid_starts(const DensityFunction& f, const SearchBox& box, const ModeSearchOptions& o,
                        std::vector<std::vector<double>>& start_points) {
  const std::size_t d = box.lower.size();
  const double cells = std::pow(static_cast<double>(o.grid), static_cast<double>(d));
  if (cells > double(1 << 22))
    throw UsageError("mode search: a grid of " + std::to_string(o.grid) + "^" + std::to_string(d) + " points is too large (at most 2^22)");
  const auto total = static_cast<std::size_t>(cells);
  DenseMatrix pts(static_cast<Eigen::Index>(total), static_cast<Eigen::Index>(d));
  for (std::size_t c = 0; c < total; ++c) {
    std::size_t rest = c;
    for (std::size_t j = 0; j < d; ++j) {
      const auto v = rest % o.grid;
      rest /= o.grid;
      pts(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(j)) = static_cast<Real>(
          box.lower[j] + (static_cast<double>(v) + 0.5) / static_cast<double>(o.grid) * (box.upper[j] - box.lower[j]));
    }
  }
  const std::vector<double> values = f(pts);
  const auto ranked = top_k(values, total);
  std::vector<std::size_t> chosen;
  std::vector<char> used(total, 0);
  const auto cell_point = [&](std::size_t c) {
    std::vector<double> p(d);
    for (std::size_t j = 0; j < d; ++j) p[j] = pts(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(j));
    return p;
  };
  for (std::size_t r = 0; r < total && chosen.size() < o.starts; ++r) {
    const auto p = cell_point(ranked[r]);
    bool separate = true;
    for (std::size_t s = 0; s < chosen.size() && separate; ++s)
      separate = distance(p.data(), start_points[s].data(), d) >= o.min_separation;
    if (!separate) continue;
    start_points[chosen.size()] = p;
    chosen.push_back(ranked[r]);
    used[r] = 1;
  }
  for (std::size_t r = 0; r < total && chosen.size() < o.starts; ++r)
    if (!used[r]) {
      start_points[chosen.size()] = cell_point(ranked[r]);
      chosen.push_back(ranked[r]);
    }
  for (std::size_t s = chosen.size(); s < o.starts; ++s) start_points[s] = start_points[s % std::max<std::size_t>(1, chosen.size())];
  return total;
}

// One local climb of the density from `start` inside the box; `evaluations` gets its count.
Mode climb(const DensityFunction& f, const SearchBox& box, const ModeSearchOptions& o, nlopt::algorithm alg,
           const std::vector<double>& start, std::size_t& evaluations) {
  const std::size_t d = box.lower.size();
  std::vector<double> x = start;
  DenseMatrix point(1, static_cast<Eigen::Index>(d));
  std::size_t count = 0;
  auto objective = [&](const std::vector<double>& v) {
    for (std::size_t j = 0; j < d; ++j) point(0, static_cast<Eigen::Index>(j)) = static_cast<Real>(v[j]);
    ++count;
    return f(point)[0];
  };
  using Objective = decltype(objective);
  nlopt::opt opt(alg, static_cast<unsigned>(d));
  opt.set_lower_bounds(box.lower);
  opt.set_upper_bounds(box.upper);
  opt.set_max_objective(
      [](const std::vector<double>& v, std::vector<double>&, void* data) { return (*static_cast<Objective*>(data))(v); },
      &objective);
  opt.set_maxeval(static_cast<int>(o.max_evaluations));
  opt.set_xtol_abs(o.x_tolerance);
  std::vector<double> step(d);
  for (std::size_t j = 0; j < d; ++j) step[j] = std::min(o.initial_step, 0.25 * (box.upper[j] - box.lower[j]));
  opt.set_initial_step(step);
  double best = 0;
  try {
    opt.optimize(x, best);
  } catch (const nlopt::roundoff_limited&) {
    best = objective(x);  // x holds the best point found
  }
  evaluations = count;
  return Mode{x, best};
}

// The local maxima, highest density first (ties: lower start index), kept greedily when at least
// min_separation from every one kept; the best o.modes of them.
ModeSearchResult select_modes(const std::vector<Mode>& local, const ModeSearchOptions& o, std::size_t d) {
  std::vector<std::size_t> order(o.starts);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return local[a].density > local[b].density; });
  ModeSearchResult res;
  std::vector<Mode> kept;
  for (const auto i : order) {
    bool separate = true;
    for (const auto& m : kept)
      if (distance(m.point.data(), local[i].point.data(), d) < o.min_separation) separate = false;
    if (separate) kept.push_back(local[i]);
  }
  res.local_maxima = kept.size();
  if (kept.size() > o.modes) kept.resize(o.modes);
  res.modes = std::move(kept);
  return res;
}

}  // namespace

ModeSearchResult find_modes(const DensityFunction& f, const SearchBox& box, const ModeSearchOptions& o) {
  const nlopt::algorithm alg = mode_search_algorithm(box, o);
  const std::size_t d = box.lower.size();
  // Starting points: the best cells of a public grid, or seeded uniform points.
  std::vector<std::vector<double>> start_points(o.starts, std::vector<double>(d));
  std::size_t grid_evaluations = 0;
  if (o.grid > 0) {
    grid_evaluations = grid_starts(f, box, o, start_points);
  } else {
    for (std::size_t s = 0; s < o.starts; ++s) {
      SeededRandom rng(derive_seed(o.seed, s));
      for (std::size_t j = 0; j < d; ++j) start_points[s][j] = box.lower[j] + rng.unit() * (box.upper[j] - box.lower[j]);
    }
  }

  std::vector<Mode> local(o.starts);
  std::vector<std::size_t> evals(o.starts, 0);
  std::vector<std::string> failures(o.starts);
  const auto starts = static_cast<std::ptrdiff_t>(o.starts);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::ptrdiff_t s = 0; s < starts; ++s) {
    const auto i = static_cast<std::size_t>(s);
    try {
      local[i] = climb(f, box, o, alg, start_points[i], evals[i]);
    } catch (const std::exception& e) {
      failures[i] = e.what();
    }
  }
  for (const auto& msg : failures)
    if (!msg.empty()) throw Error("mode search: " + msg);
  ModeSearchResult res = select_modes(local, o, d);
  res.evaluations = grid_evaluations;
  for (const auto e : evals) res.evaluations += e;
  return res;
}

ModeMatch match_modes(const std::vector<Mode>& found, const DoubleMatrix& truth, double radius) {
  ModeMatch m;
  const auto d = static_cast<std::size_t>(truth.cols());
  if (found.empty() || truth.rows() == 0) {
    m.mean_distance = m.max_distance = std::numeric_limits<double>::quiet_NaN();
    return m;
  }
  for (const auto& f : found) {
    if (f.point.size() != d) throw UsageError("match_modes: mode dimension differs from the true modes'");
    double best = std::numeric_limits<double>::infinity();
    for (Eigen::Index t = 0; t < truth.rows(); ++t) best = std::min(best, distance(f.point.data(), truth.row(t).data(), d));
    m.mean_distance += best;
    m.max_distance = std::max(m.max_distance, best);
  }
  m.mean_distance /= static_cast<double>(found.size());
  for (Eigen::Index t = 0; t < truth.rows(); ++t) {
    bool hit = false;
    for (const auto& f : found) hit = hit || distance(f.point.data(), truth.row(t).data(), d) <= radius;
    m.recovered += hit;
  }
  return m;
}

// ---------------------------------------------------------------------------------------

Mixture sample_mixture(const MixtureSpec& s, std::size_t n) {
  if (s.dim == 0 || s.components == 0) throw UsageError("mixture: dim and components must be at least 1");
  if (!(s.sd > 0) || !(s.box > 0) || !(s.min_separation >= 0)) throw UsageError("mixture: sd and box must be positive");
  if (!s.weights.empty() && s.weights.size() != s.components)
    throw UsageError("mixture: " + std::to_string(s.weights.size()) + " weights for " + std::to_string(s.components) + " components");
  std::vector<double> w = s.weights.empty() ? std::vector<double>(s.components, 1.0) : s.weights;
  double total = 0;
  for (const double v : w) {
    if (!(v > 0) || !std::isfinite(v)) throw UsageError("mixture: weights must be positive");
    total += v;
  }
  SeededRandom rng(s.seed);
  Mixture m;
  m.means.resize(static_cast<Eigen::Index>(s.components), static_cast<Eigen::Index>(s.dim));
  for (std::size_t c = 0; c < s.components; ++c) {
    bool placed = false;
    for (int attempt = 0; attempt < 100000 && !placed; ++attempt) {
      for (std::size_t j = 0; j < s.dim; ++j) m.means(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(j)) = rng.unit() * s.box;
      placed = true;
      for (std::size_t o = 0; o < c && placed; ++o)
        placed = distance(m.means.row(static_cast<Eigen::Index>(c)).data(), m.means.row(static_cast<Eigen::Index>(o)).data(), s.dim) >=
                 s.min_separation;
    }
    if (!placed)
      throw UsageError("mixture: cannot place " + std::to_string(s.components) + " means " + std::to_string(s.min_separation) +
                       " apart in [0, " + std::to_string(s.box) + "]^" + std::to_string(s.dim));
  }
  m.points.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(s.dim));
  m.labels.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double u = rng.unit() * total;
    std::size_t c = 0;
    while (c + 1 < s.components && u >= w[c]) u -= w[c++];
    m.labels[i] = static_cast<int>(c);
    for (std::size_t j = 0; j < s.dim; ++j)
      m.points(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = static_cast<Real>(
          m.means(static_cast<Eigen::Index>(c), static_cast<Eigen::Index>(j)) + s.sd * sample_normal(rng));
  }
  return m;
}

// ---------------------------------------------------------------------------------------

std::vector<std::size_t> inverse_density_sample(std::span<const double> density, std::size_t k, double floor,
                                                RandomSource& rng) {
  if (!(floor > 0)) throw UsageError("diversity sampling: the density floor must be positive");
  if (k > density.size())
    throw UsageError("diversity sampling: " + std::to_string(k) + " draws without replacement from " +
                     std::to_string(density.size()) + " points");
  // Efraimidis & Spirakis (2006): key_i = u_i^(1 / w_i); the k largest keys are a weighted
  // sample without replacement. With w_i = 1 / max(f_i, floor): log key_i = log(u_i) max(f_i, floor).
  std::vector<std::pair<double, std::size_t>> keys(density.size());
  for (std::size_t i = 0; i < density.size(); ++i) {
    const double f = std::isnan(density[i]) ? floor : std::max(density[i], floor);
    keys[i] = {std::log(rng.open_unit()) * f, i};
  }
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k), keys.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  std::vector<std::size_t> out(k);
  for (std::size_t i = 0; i < k; ++i) out[i] = keys[i].second;
  return out;
}

std::vector<std::size_t> uniform_sample(std::size_t n, std::size_t k, RandomSource& rng) {
  if (k > n) throw UsageError("uniform sampling: " + std::to_string(k) + " draws from " + std::to_string(n) + " points");
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  for (std::size_t i = 0; i < k; ++i) std::swap(idx[i], idx[i + rng.below(n - i)]);
  idx.resize(k);
  return idx;
}

double component_coverage(std::span<const std::size_t> picked, std::span<const int> labels, std::size_t components) {
  if (components == 0) throw UsageError("coverage: no components");
  std::vector<char> hit(components, 0);
  for (const auto i : picked) {
    if (i >= labels.size()) throw UsageError("coverage: index out of range");
    const int c = labels[i];
    if (c < 0 || static_cast<std::size_t>(c) >= components) throw UsageError("coverage: label out of range");
    hit[static_cast<std::size_t>(c)] = 1;
  }
  return static_cast<double>(std::count(hit.begin(), hit.end(), 1)) / static_cast<double>(components);
}

// ---------------------------------------------------------------------------------------

std::vector<std::size_t> top_k(std::span<const double> score, std::size_t k) {
  std::vector<std::size_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](std::size_t a, std::size_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
  idx.resize(k);
  return idx;
}

std::vector<std::vector<std::size_t>> exact_neighbors(const DenseRef& data, const DenseRef& queries, std::size_t k) {
  if (data.cols() != queries.cols()) throw InputError("exact neighbours: queries have the wrong dimension");
  if (k == 0 || k > static_cast<std::size_t>(data.rows()))
    throw UsageError("exact neighbours: k = " + std::to_string(k) + " (expected 1.." + std::to_string(data.rows()) + ")");
  std::vector<std::vector<std::size_t>> out(static_cast<std::size_t>(queries.rows()));
  const auto m = static_cast<std::ptrdiff_t>(queries.rows());
#pragma omp parallel for schedule(dynamic, 4)
  for (std::ptrdiff_t q = 0; q < m; ++q) {
    std::vector<double> neg(static_cast<std::size_t>(data.rows()));
    for (Eigen::Index i = 0; i < data.rows(); ++i)
      neg[static_cast<std::size_t>(i)] = -(data.row(i).cast<double>() - queries.row(q).cast<double>()).squaredNorm();
    out[static_cast<std::size_t>(q)] = top_k(neg, k);
  }
  return out;
}

SketchNeighbors sketch_neighbors(const RaceSketch& sketch, const DenseRef& candidates, const DenseRef& queries,
                                 std::size_t k) {
  const LshFamily& family = sketch.family();
  if (static_cast<std::size_t>(candidates.cols()) != family.dim() || static_cast<std::size_t>(queries.cols()) != family.dim())
    throw InputError("sketch neighbours: points have the wrong dimension for the sketch");
  const std::size_t rows = sketch.rows();
  const auto n = candidates.rows();
  // Codes of every candidate (rows x n). A collision is equality of the LSH codes themselves
  // (what k(x, q) is the probability of), not of the rehashed columns, which add 1/W.
  CodeMatrix codes(static_cast<Eigen::Index>(rows), n);
  {
    CodeMatrix batch;
    for (Eigen::Index b = 0; b < n; b += 4096) {
      const Eigen::Index len = std::min<Eigen::Index>(4096, n - b);
      family.hash_dense(candidates.middleRows(b, len), batch);
      codes.middleCols(b, len) = batch;
    }
  }
  CodeMatrix qcodes;
  family.hash_dense(queries, qcodes);
  SketchNeighbors out;
  out.by_collisions.resize(static_cast<std::size_t>(queries.rows()));
  out.by_weighted.resize(static_cast<std::size_t>(queries.rows()));
  const auto m = static_cast<std::ptrdiff_t>(queries.rows());
#pragma omp parallel for schedule(dynamic, 2)
  for (std::ptrdiff_t q = 0; q < m; ++q) {
    std::vector<std::uint64_t> qc(rows);
    for (std::size_t r = 0; r < rows; ++r) qc[r] = qcodes(static_cast<Eigen::Index>(r), q);
    const std::vector<double> cell = sketch.row_estimates_single(qc.data());  // S[r, column_r(q)]
    std::vector<double> coll(static_cast<std::size_t>(n), 0.0), weighted(static_cast<std::size_t>(n), 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint64_t* row = codes.row(static_cast<Eigen::Index>(r)).data();
      for (Eigen::Index i = 0; i < n; ++i)
        if (row[i] == qc[r]) {
          coll[static_cast<std::size_t>(i)] += 1.0;
          weighted[static_cast<std::size_t>(i)] += cell[r];
        }
    }
    out.by_collisions[static_cast<std::size_t>(q)] = top_k(coll, k);
    out.by_weighted[static_cast<std::size_t>(q)] = top_k(weighted, k);
  }
  return out;
}

double recall_at_k(const std::vector<std::vector<std::size_t>>& found, const std::vector<std::vector<std::size_t>>& truth) {
  if (found.size() != truth.size() || truth.empty()) throw UsageError("recall@k: query counts differ or are zero");
  double sum = 0;
  for (std::size_t q = 0; q < truth.size(); ++q) {
    std::size_t hit = 0;
    for (const auto t : truth[q]) hit += std::find(found[q].begin(), found[q].end(), t) != found[q].end();
    sum += truth[q].empty() ? 0.0 : static_cast<double>(hit) / static_cast<double>(truth[q].size());
  }
  return sum / static_cast<double>(truth.size());
}

}  // namespace privrace
