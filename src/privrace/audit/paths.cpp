#include "privrace/audit/paths.hpp"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "privrace/core/error.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/mean_mechanisms.hpp"
#include "privrace/ldp/randomizers.hpp"
#include "privrace/lsh/gaussian.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/release.hpp"
#include "privrace/sketch/sketch_io.hpp"

namespace privrace::audit {

ScratchFolder::ScratchFolder() {
  std::string root = "/dev/shm";  // memory-backed where there is one: a file costs microseconds
  if (::access(root.c_str(), W_OK) != 0) root = std::filesystem::temp_directory_path().string();
  std::string name = root + "/privrace-audit-XXXXXX";
  if (!::mkdtemp(name.data())) throw Error("audit: cannot create a scratch folder in " + root);
  dir_ = name;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string ScratchFolder::next_path() { return dir_ + "/release" + std::to_string(next_.fetch_add(1)) + ".rsk"; }

std::string take_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("audit: cannot read back " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return bytes;
}

std::string write_released_file(ScratchFolder& folder, const Release& release) {
  const std::string path = folder.next_path();
  save_release(path, release, {{"build", release.build_record("audit")}});
  return take_file(path);
}

namespace {

constexpr std::size_t kDim = 2;
constexpr std::size_t kCandidates = 32;

std::unique_ptr<RandomSource> noise_rng(const NoiseSource& noise) {
  if (noise.seeded) return std::make_unique<SeededRandom>(noise.seed);
  return std::make_unique<CryptoRandom>();
}

PrivacySpec spec_for(const PathOptions& o, NoiseMechanism m, NeighborRelation rel = NeighborRelation::AddRemove) {
  PrivacySpec spec;
  spec.epsilon = o.epsilon;
  spec.mechanism = m;
  spec.delta = is_gaussian(m) ? o.delta : 0.0;
  spec.neighbors = rel;
  return spec;
}

Claim claim_for(const PrivacySpec& spec) {
  return {spec.epsilon, spec.delta, is_gaussian(spec.mechanism)};
}

// The path's released files: of D, or of its neighbour D' (`neighbour`), built and noised
// through the release API and written as a file is released.
template <typename Records>
void release_files_of_d_or_neighbour(AuditPath& p, const ExactBuilder& builder, const Records& d, const Records& d_prime,
                                     const PrivacySpec& spec) {
  p.release_files = [builder, d, d_prime, spec, folder = std::make_shared<ScratchFolder>()](bool neighbour,
                                                                                           const NoiseSource& noise) {
    return std::vector<std::string>{write_released_file(*folder, builder.build(neighbour ? d_prime : d).release(spec, noise))};
  };
}

// The path's releases: of D, or of D' (`neighbour`), observed; and their released files.
template <typename Records>
void release_d_or_neighbour(AuditPath& p, const ExactBuilder& builder, const Records& d, const Records& d_prime,
                            const PrivacySpec& spec) {
  p.release = [builder, d, d_prime, spec](bool neighbour, const NoiseSource& noise, Observation& out) {
    observe(builder.build(neighbour ? d_prime : d).release(spec, noise).sketch(), out);
  };
  release_files_of_d_or_neighbour(p, builder, d, d_prime, spec);
}

// A dense sketch path: build(D or D') and release it (noise once) through the release API, observe.
AuditPath dense_sketch_path(const std::string& name, const std::string& description, const PathOptions& o,
                            const ExactBuilder& builder, const PrivacySpec& spec) {
  const DenseMatrix d = audit_points(o.records, kDim, o.seed);
  const DenseMatrix candidates = audit_points(kCandidates, kDim, derive_seed(o.seed, 1));
  DenseMatrix d_prime;
  if (spec.neighbors == NeighborRelation::AddRemove) {
    d_prime = with_row(d, candidates, most_sensitive_row(builder, d, candidates));
  } else {
    // Replace the first record of D by the candidate that moves the counts most (L1 2R when
    // the two records share no cell in any row).
    const DenseMatrix rest = d.bottomRows(d.rows() - 1);
    const auto base = exact_values(builder.build(d));
    Eigen::Index best = 0;
    double best_l1 = -1;
    for (Eigen::Index i = 0; i < candidates.rows(); ++i) {
      const auto v = exact_values(builder.build(with_row(rest, candidates, i)));
      double l1 = 0;
      for (std::size_t c = 0; c < v.size(); ++c) l1 += std::abs(v[c] - base[c]);
      if (l1 > best_l1) {
        best_l1 = l1;
        best = i;
      }
    }
    d_prime = with_row(rest, candidates, best);
  }
  check_neighbours(d, d_prime, spec.neighbors);
  AuditPath p;
  p.name = name;
  p.description = description;
  p.claim = claim_for(spec);
  p.exact = exact_values(builder.build(d));
  p.exact_neighbour = exact_values(builder.build(d_prime));
  release_d_or_neighbour(p, builder, d, d_prime, spec);
  return p;
}

AuditPath sets_path(const PathOptions& o) {
  const ExactBuilder builder = audit_builder("jaccard", o);
  const SetCollection d = audit_sets(o.records, o.seed);
  const SetCollection candidates = audit_sets(kCandidates, derive_seed(o.seed, 1));
  const auto base = exact_values(builder.build(d));
  std::size_t best = 0;
  double best_l1 = -1;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto v = exact_values(builder.build(with_set(d, candidates, i)));
    double l1 = 0;
    for (std::size_t c = 0; c < v.size(); ++c) l1 += std::abs(v[c] - base[c]);
    if (l1 > best_l1) {
      best_l1 = l1;
      best = i;
    }
  }
  const SetCollection d_prime = with_set(d, candidates, best);
  check_neighbours(d, d_prime, NeighborRelation::AddRemove);
  const PrivacySpec spec = spec_for(o, NoiseMechanism::DiscreteLaplace);
  AuditPath p;
  p.name = "sets_minhash";
  p.description = "sets, densified one-permutation MinHash (jaccard kernel), discrete Laplace, scale R/eps";
  p.claim = claim_for(spec);
  p.exact = base;
  p.exact_neighbour = exact_values(builder.build(d_prime));
  release_d_or_neighbour(p, builder, d, d_prime, spec);
  return p;
}

// Two data owners sketch disjoint parts A and B, privatize each, and `privrace merge` adds the
// released sketches (parallel composition: the sum is eps-DP). The neighbour record joins A.
AuditPath merge_path(const PathOptions& o) {
  const ExactBuilder builder = audit_builder("l2", o);
  const DenseMatrix all = audit_points(o.records, kDim, o.seed);
  const Eigen::Index half = all.rows() / 2;
  const DenseMatrix a = all.topRows(half), b = all.bottomRows(all.rows() - half);
  const DenseMatrix candidates = audit_points(kCandidates, kDim, derive_seed(o.seed, 1));
  const DenseMatrix a_prime = with_row(a, candidates, most_sensitive_row(builder, a, candidates));
  check_neighbours(a, a_prime, NeighborRelation::AddRemove);
  const PrivacySpec spec = spec_for(o, NoiseMechanism::DiscreteLaplace);
  auto exact_sum = [&](const DenseMatrix& first) {
    ExactSketch s = builder.build(first);
    s.merge(builder.build(b));
    return exact_values(s);
  };
  AuditPath p;
  p.name = "merge_disjoint";
  p.description = "merge of two private sketches of disjoint data (A + B), the neighbour record in A";
  p.claim = claim_for(spec);
  p.exact = exact_sum(a);
  p.exact_neighbour = exact_sum(a_prime);
  p.release = [builder, a, a_prime, b, spec](bool neighbour, const NoiseSource& noise, Observation& out) {
    RaceSketch first = builder.build(neighbour ? a_prime : a).release(spec, {noise.seeded, derive_seed(noise.seed, 0)}).take_sketch();
    const Release second = builder.build(b).release(spec, {noise.seeded, derive_seed(noise.seed, 1)});
    ReleaseMerge merge(first);  // as `privrace merge` adds them (parallel composition)
    merge.add(second.sketch());
    merge.finish();
    observe(first, out);
  };
  // The files: each owner's release, as `privrace sketch` writes it, and their merge, as
  // `privrace merge` writes it from those two files.
  p.release_files = [builder, a, a_prime, b, spec, folder = std::make_shared<ScratchFolder>()](bool neighbour,
                                                                                               const NoiseSource& noise) {
    std::vector<std::string> files;
    files.push_back(write_released_file(
        *folder, builder.build(neighbour ? a_prime : a).release(spec, {noise.seeded, derive_seed(noise.seed, 0)})));
    files.push_back(write_released_file(*folder, builder.build(b).release(spec, {noise.seeded, derive_seed(noise.seed, 1)})));
    const std::string path_a = folder->next_path(), path_b = folder->next_path(), merged_path = folder->next_path();
    write_file_atomically(path_a, files[0]);
    write_file_atomically(path_b, files[1]);
    RaceSketch merged = load_sketch(path_a);
    ReleaseMerge merge(merged, "a.rsk");
    merge.add(load_sketch(path_b), "b.rsk");
    merge.finish();
    save_sketch(merged_path, merged, false, {{"merged_inputs", {"a.rsk", "b.rsk"}}});
    take_file(path_a);
    take_file(path_b);
    files.push_back(take_file(merged_path));
    return files;
  };
  return p;
}

// Two releases by one owner: a sketch of A, then of A + B (say, last week's and this week's
// data), each eps-DP with its own fresh noise: together 2 eps (sequential composition). The
// observables include the difference of the two releases, where shared noise would cancel.
AuditPath two_releases_path(const PathOptions& o) {
  const ExactBuilder builder = audit_builder("l2", o);
  const DenseMatrix all = audit_points(o.records, kDim, o.seed);
  const DenseMatrix a = all.topRows(all.rows() / 2);
  const DenseMatrix candidates = audit_points(kCandidates, kDim, derive_seed(o.seed, 1));
  const DenseMatrix all_prime = with_row(all, candidates, most_sensitive_row(builder, all, candidates));
  check_neighbours(all, all_prime, NeighborRelation::AddRemove);
  const PrivacySpec spec = spec_for(o, NoiseMechanism::DiscreteLaplace);
  auto pair_values = [](const std::vector<double>& first, const std::vector<double>& second) {
    std::vector<double> v = first;
    v.insert(v.end(), second.begin(), second.end());
    for (std::size_t c = 0; c < first.size(); ++c) v.push_back(second[c] - first[c]);
    return v;
  };
  const auto exact_a = exact_values(builder.build(a));
  AuditPath p;
  p.name = "two_releases";
  p.description = "two releases (A, then A + B), each eps-DP with its own noise; claim 2 eps";
  p.claim = {2.0 * spec.epsilon, 0.0, false};
  p.exact = pair_values(exact_a, exact_values(builder.build(all)));
  p.exact_neighbour = pair_values(exact_a, exact_values(builder.build(all_prime)));
  p.release = [builder, a, all, all_prime, spec, pair_values](bool neighbour, const NoiseSource& noise, Observation& out) {
    const Release first = builder.build(a).release(spec, {noise.seeded, derive_seed(noise.seed, 0)});
    const Release second = builder.build(neighbour ? all_prime : all).release(spec, {noise.seeded, derive_seed(noise.seed, 1)});
    Observation one, two;
    observe(first.sketch(), one);
    observe(second.sketch(), two);
    out.values = pair_values(one.values, two.values);
    out.recorded_variance = one.recorded_variance;
    out.recorded_variance.insert(out.recorded_variance.end(), two.recorded_variance.begin(), two.recorded_variance.end());
    for (std::size_t c = 0; c < one.values.size(); ++c)
      out.recorded_variance.push_back(one.recorded_variance[c] + two.recorded_variance[c]);
  };
  p.release_files = [builder, a, all, all_prime, spec, folder = std::make_shared<ScratchFolder>()](bool neighbour,
                                                                                                   const NoiseSource& noise) {
    std::vector<std::string> files;
    files.push_back(write_released_file(*folder, builder.build(a).release(spec, {noise.seeded, derive_seed(noise.seed, 0)})));
    files.push_back(write_released_file(
        *folder, builder.build(neighbour ? all_prime : all).release(spec, {noise.seeded, derive_seed(noise.seed, 1)})));
    return files;
  };
  return p;
}

// The noise mechanisms on their own, on a query of R counts to each of which one record adds 1
// (a RACE sketch's changed cells: L1 = R, L2 = sqrt(R), race_sensitivity), calibrated as
// privatize calibrates them.
AuditPath mechanism_path(const std::string& name, const PathOptions& o) {
  const std::size_t cells = o.rows;
  const Sensitivity sens = race_sensitivity(o.rows, 1, NeighborRelation::AddRemove);
  AuditPath p;
  p.name = name;
  p.exact.assign(cells, static_cast<double>(o.records));
  p.exact_neighbour.assign(cells, static_cast<double>(o.records + 1));
  const auto exact = p.exact, exact_neighbour = p.exact_neighbour;
  auto counts_of = [exact, exact_neighbour](bool neighbour) {
    const auto& src = neighbour ? exact_neighbour : exact;
    return std::vector<std::int64_t>(src.begin(), src.end());
  };
  auto finish = [](const std::vector<std::int64_t>& counts, double variance, Observation& out) {
    out.values.assign(counts.begin(), counts.end());
    out.recorded_variance.assign(counts.size(), variance);
  };
  if (name == "mechanism_discrete_laplace_bernoulli" || name == "mechanism_discrete_laplace_table") {
    const bool table = name == "mechanism_discrete_laplace_table";
    const DiscreteLaplace noise(sens.l1 / o.epsilon);
    auto bulk = table ? noise.bulk_sampler() : nullptr;
    if (table && !bulk) throw UsageError("audit: no table sampler for this scale");
    p.description = table ? "discrete Laplace, exact geometric table sampler (DiscreteLaplace::add_to)"
                          : "discrete Laplace, Bernoulli(exp) construction (DiscreteLaplace::sample)";
    p.claim = {o.epsilon, 0.0, false};
    p.release = [noise, bulk, counts_of, finish](bool neighbour, const NoiseSource& source, Observation& out) {
      auto counts = counts_of(neighbour);
      auto rng = noise_rng(source);
      if (bulk) noise.add_to(counts, *rng, bulk.get());
      else
        for (auto& c : counts) c += noise.sample(*rng);
      finish(counts, noise.variance(), out);
    };
  } else if (name == "mechanism_floored_laplace") {
    const double scale = sens.l1 / o.epsilon;
    p.description = "floor(count + Laplace(R/eps)) (the paper's Algorithm 1 as printed)";
    p.claim = {o.epsilon, 0.0, false};
    p.release = [scale, counts_of, finish](bool neighbour, const NoiseSource& source, Observation& out) {
      auto counts = counts_of(neighbour);
      auto rng = noise_rng(source);
      for (auto& c : counts) c = static_cast<std::int64_t>(std::floor(static_cast<double>(c) + sample_laplace(*rng, scale)));
      finish(counts, floored_laplace_variance(scale), out);
    };
  } else if (name == "mechanism_discrete_gaussian") {
    // MST's and AIM's measurements: rho-zCDP from (eps, delta), sigma = Delta_2 / sqrt(2 rho).
    const double rho = zcdp_rho(o.epsilon, o.delta);
    const DiscreteGaussian noise(sens.l2 / std::sqrt(2.0 * rho));
    p.description = "discrete Gaussian (exact, Canonne-Kamath-Steinke), sigma from rho-zCDP at L2 sensitivity sqrt(R)";
    p.claim = {o.epsilon, o.delta, true};
    p.release = [noise, counts_of, finish](bool neighbour, const NoiseSource& source, Observation& out) {
      auto counts = counts_of(neighbour);
      auto rng = noise_rng(source);
      for (auto& c : counts) c += noise.sample(*rng);
      finish(counts, noise.sigma2(), out);
    };
  } else {
    const double sigma = analytic_gaussian_sigma(o.epsilon, o.delta, sens.l2);
    p.description = "Gaussian, analytic calibration at L2 sensitivity sqrt(R), rounded";
    p.claim = {o.epsilon, o.delta, true};
    p.release = [sigma, counts_of, finish](bool neighbour, const NoiseSource& source, Observation& out) {
      auto counts = counts_of(neighbour);
      auto rng = noise_rng(source);
      for (auto& c : counts) c += static_cast<std::int64_t>(std::llround(sigma * sample_normal(*rng)));
      finish(counts, sigma * sigma + 1.0 / 12.0, out);
    };
  }
  return p;
}

// M2M feature sketches (RFF, HIST): the feature sums and the record count, released with the
// epsilon_num / epsilon_den split of feature_privacy_spec (num_share 0.98), through the release
// API. The observables are the noisy sums (grid units) and the noisy count.
AuditPath feature_path(const std::string& kind, const PathOptions& o) {
  ReleaseParams params;
  params.family.kernel = kind == "rff" ? Kernel::Rff : Kernel::Hist;
  // One frequency (m' = 1): a record's change is one (cos, sin) pair, and the candidate search
  // finds a phase near pi/4 where its L1 norm reaches the sqrt(2) G of the sensitivity. With many
  // pairs the worst case needs every phase there at once, and the audit would measure a loose bound.
  params.family.features = 2;
  params.family.sigma = 1.0;
  params.family.bins = o.width;
  params.family.lo = {-8.0};
  params.family.hi = {8.0};
  params.threads = 1;
  params.hash_seed = derive_seed(o.seed, 3);
  const ExactBuilder builder = ExactBuilder::dense(params, MasterSeed::of(o.seed, true), kDim);
  FeatureSketchPrivacy fp;
  fp.epsilon = o.epsilon;
  const PrivacySpec spec = feature_privacy_spec(fp);
  const DenseMatrix d = audit_points(o.records, kDim, o.seed);
  const DenseMatrix candidates = audit_points(kCandidates, kDim, derive_seed(o.seed, 1));
  const DenseMatrix d_prime = with_row(d, candidates, most_sensitive_row(builder, d, candidates));
  check_neighbours(d, d_prime, NeighborRelation::AddRemove);
  auto with_count = [](const ExactSketch& s) {
    auto v = exact_values(s);
    v.push_back(static_cast<double>(s.counts().records()));
    return v;
  };
  AuditPath p;
  p.name = "m2m_" + kind;
  p.description = kind + " feature sketch (M2M) with its record count, epsilon_num = 0.98 eps, epsilon_den = 0.02 eps";
  p.claim = claim_for(spec);
  p.exact = with_count(builder.build(d));
  p.exact_neighbour = with_count(builder.build(d_prime));
  p.release = [builder, d, d_prime, spec](bool neighbour, const NoiseSource& noise, Observation& out) {
    const Release release = builder.build(neighbour ? d_prime : d).release(spec, noise);
    observe(release.sketch(), out);
    const PrivacyRecord& rec = release.sketch().privacy();
    out.values.push_back(rec.count_value().value());
    out.recorded_variance.push_back(rec.count_noise_variance.value());
  };
  release_files_of_d_or_neighbour(p, builder, d, d_prime, spec);
  return p;
}

// Local randomisers: one player's report on her extreme values u = 0 (D) and u = 1 (D').
AuditPath ldp_path(const std::string& name, const PathOptions& o) {
  AuditPath p;
  p.name = name;
  p.claim = {o.epsilon, 0.0, false};
  if (name == "ldp_bit") {
    const ldp::BitRandomizer r(o.epsilon);
    p.description = "LDP 1-bit randomiser (P(1 | u) = p_lo + (p_hi - p_lo) u)";
    p.exact = {0.0};
    p.exact_neighbour = {1.0};
    p.release = [r](bool neighbour, const NoiseSource& source, Observation& out) {
      auto rng = noise_rng(source);
      out.values = {r.report(neighbour ? 1.0 : 0.0, rng->next()) ? 1.0 : 0.0};
      out.recorded_variance.clear();  // a bit: no additive noise to compare
    };
  } else {
    const auto r = std::make_shared<const ldp::LaplaceRandomizer>(o.epsilon, 1, 64);
    p.description = "LDP Laplace randomiser (lattice of 64 levels + discrete Laplace of scale 64 / eps)";
    p.exact = {0.0};
    p.exact_neighbour = {64.0};
    const double variance = DiscreteLaplace(r->noise_scale()).variance();
    p.release = [r, variance](bool neighbour, const NoiseSource& source, Observation& out) {
      auto rng = noise_rng(source);
      const double u = neighbour ? 1.0 : 0.0;
      std::int64_t report = 0;
      r->report(std::span<const double>(&u, 1), std::span<std::int64_t>(&report, 1), *rng);
      out.values = {static_cast<double>(report)};
      out.recorded_variance = {variance};
    };
  }
  return p;
}

// LDP mean mechanisms: one player's report on her extreme inputs, t = -1 (D) and t = 1 (D')
// for PM and HM; for PrivUnit (d = 3) u = e_1 (D) and -e_1 (D'), observed through <Z, e_1>
// (a post-processing, so a lower bound on it is one on the report).
AuditPath ldp_mean_path(const std::string& name, const PathOptions& o) {
  AuditPath p;
  p.name = name;
  p.claim = {o.epsilon, 0.0, false};
  if (name == "ldp_djw_l2") {
    // Duchi-Jordan-Wainwright's l2 gradient randomiser (LDP-SGD's baseline): g = L e_1 (D) and
    // -L e_1 (D'), d = 3, L = 1. |Z| = B always and E[Z] = g, so Var <Z, e_1> = B^2 / 3 - L^2.
    constexpr std::size_t d = 3;
    const double eps = o.epsilon, B = ldp::djw_l2_scale(d, 1.0, eps);
    p.description = "LDP DJW l2 randomiser (d = 3, L = 1), observed <Z, e_1>";
    p.exact = {1.0};
    p.exact_neighbour = {-1.0};
    p.release = [eps, B](bool neighbour, const NoiseSource& source, Observation& out) {
      auto rng = noise_rng(source);
      const double g[d] = {neighbour ? -1.0 : 1.0, 0.0, 0.0};
      double z[d];
      ldp::djw_l2_privatize(g, d, 1.0, eps, *rng, z);
      out.values = {z[0]};
      out.recorded_variance = {B * B / 3.0 - 1.0};
    };
    return p;
  }
  if (name == "ldp_privunit") {
    const auto pu = std::make_shared<const ldp::PrivUnit>(3, o.epsilon);
    p.description = "LDP PrivUnit (d = 3, Asi-Feldman-Talwar split), observed <Z, e_1>";
    p.exact = {1.0};
    p.exact_neighbour = {-1.0};
    const double variance = pu->projection_variance();
    p.release = [pu, variance](bool neighbour, const NoiseSource& source, Observation& out) {
      auto rng = noise_rng(source);
      const double u[3] = {neighbour ? -1.0 : 1.0, 0.0, 0.0};
      double z[3];
      pu->report(u, *rng, z);
      out.values = {z[0]};
      out.recorded_variance = {variance};
    };
    return p;
  }
  p.exact = {-1.0};
  p.exact_neighbour = {1.0};
  if (name == "ldp_piecewise") {
    const ldp::PiecewiseMechanism pm(o.epsilon);
    p.description = "LDP Piecewise Mechanism (Wang et al. 2019), t = -1 vs 1";
    p.release = [pm](bool neighbour, const NoiseSource& source, Observation& out) {
      auto rng = noise_rng(source);
      out.values = {pm.report(neighbour ? 1.0 : -1.0, *rng)};
      out.recorded_variance = {pm.variance(1.0)};
    };
  } else {
    const ldp::HybridMechanism hm(o.epsilon);
    p.description = "LDP Hybrid Mechanism (Wang et al. 2019), t = -1 vs 1";
    p.release = [hm](bool neighbour, const NoiseSource& source, Observation& out) {
      auto rng = noise_rng(source);
      out.values = {hm.report(neighbour ? 1.0 : -1.0, *rng)};
      out.recorded_variance = {hm.variance(1.0)};
    };
  }
  return p;
}

}  // namespace

std::vector<std::string> path_names() {
  return {"race_pstable",
          "race_srp",
          "regression_query_pairs",
          "regression_insert_pairs",
          "sets_minhash",
          "merge_disjoint",
          "race_pstable_replace",
          "race_pstable_floored_laplace",
          "race_pstable_gaussian",
          "race_pstable_discrete_gaussian",
          "two_releases",
          "mechanism_discrete_laplace_bernoulli",
          "mechanism_discrete_laplace_table",
          "mechanism_floored_laplace",
          "mechanism_gaussian",
          "mechanism_discrete_gaussian",
          "m2m_rff",
          "m2m_hist",
          "ldp_bit",
          "ldp_laplace",
          "ldp_piecewise",
          "ldp_hybrid",
          "ldp_privunit",
          "ldp_djw_l2"};
}

AuditPath make_path(const std::string& name, const PathOptions& o) {
  using NM = NoiseMechanism;
  if (name == "race_pstable")
    return dense_sketch_path(name, "dense RACE, p-stable (l2) LSH, discrete Laplace, scale R/eps", o,
                             audit_builder("l2", o), spec_for(o, NM::DiscreteLaplace));
  if (name == "race_srp")
    return dense_sketch_path(name, "dense RACE, signed random projections (angular), discrete Laplace", o,
                             audit_builder("angular", o), spec_for(o, NM::DiscreteLaplace));
  if (name == "regression_query_pairs")
    return dense_sketch_path(name, "regression sketch, pairs at query time (1 cell a row), scale R/eps", o,
                             audit_builder("angular_pair", o, PairMode::Query), spec_for(o, NM::DiscreteLaplace));
  if (name == "regression_insert_pairs")
    return dense_sketch_path(name, "regression sketch, x and -x inserted (2 cells a row), scale 2R/eps", o,
                             audit_builder("angular_pair", o, PairMode::Insert), spec_for(o, NM::DiscreteLaplace));
  if (name == "sets_minhash") return sets_path(o);
  if (name == "merge_disjoint") return merge_path(o);
  if (name == "race_pstable_replace")
    return dense_sketch_path(name, "dense RACE, replace-one neighbours, scale 2R/eps", o, audit_builder("l2", o),
                             spec_for(o, NM::DiscreteLaplace, NeighborRelation::Replace));
  if (name == "race_pstable_floored_laplace")
    return dense_sketch_path(name, "dense RACE, floor(S + Laplace(R/eps))", o, audit_builder("l2", o),
                             spec_for(o, NM::FlooredLaplace));
  if (name == "race_pstable_gaussian")
    return dense_sketch_path(name, "dense RACE, analytic Gaussian at L2 sensitivity sqrt(R)", o, audit_builder("l2", o),
                             spec_for(o, NM::Gaussian));
  if (name == "race_pstable_discrete_gaussian")
    return dense_sketch_path(name, "dense RACE, exact discrete Gaussian, sigma from rho-zCDP at L2 sensitivity sqrt(R)", o,
                             audit_builder("l2", o), spec_for(o, NM::DiscreteGaussian));
  if (name == "two_releases") return two_releases_path(o);
  if (name == "m2m_rff") return feature_path("rff", o);
  if (name == "m2m_hist") return feature_path("hist", o);
  if (name == "ldp_bit" || name == "ldp_laplace") return ldp_path(name, o);
  if (name == "ldp_piecewise" || name == "ldp_hybrid" || name == "ldp_privunit" || name == "ldp_djw_l2")
    return ldp_mean_path(name, o);
  if (name.rfind("mechanism_", 0) == 0) {
    const auto names = path_names();
    if (std::find(names.begin(), names.end(), name) != names.end()) return mechanism_path(name, o);
  }
  std::string known;
  for (const auto& n : path_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("audit: unknown path '" + name + "' (known: " + known + ")");
}

DenseMatrix audit_points(std::size_t n, std::size_t dim, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(dim));
  fill_gaussian(rng, x.data(), n * dim);
  return x;
}

SetCollection audit_sets(std::size_t n, std::uint64_t seed) {
  SeededRandom rng(seed);
  SetCollection sets;
  for (std::size_t i = 0; i < n; ++i) {
    std::set<std::uint32_t> s;
    while (s.size() < 6) s.insert(static_cast<std::uint32_t>(rng.below(64)));
    const std::vector<std::uint32_t> v(s.begin(), s.end());
    sets.push_back(v);
  }
  return sets;
}

DenseMatrix with_row(const DenseMatrix& d, const DenseMatrix& candidates, Eigen::Index row) {
  DenseMatrix out(d.rows() + 1, d.cols());
  out.topRows(d.rows()) = d;
  out.row(d.rows()) = candidates.row(row);
  return out;
}

SetCollection with_set(const SetCollection& d, const SetCollection& candidates, std::size_t index) {
  SetCollection out = d;
  out.push_back(candidates.set(index));
  return out;
}

ExactBuilder audit_builder(const std::string& kernel, const PathOptions& o, PairMode pair_mode) {
  ReleaseParams params;
  params.family.kernel = parse_kernel(kernel);
  params.family.rows = o.rows;
  params.family.bandwidth = 1.0;
  // SRP: 2^3 = 8 codes fill W = 8 columns one-to-one; the pair sketch's 2^2 codes leave room
  // for x and -x in different columns.
  params.family.power = kernel == "angular" ? 3 : kernel == "angular_pair" ? 2 : 1;
  params.family.pair_mode = pair_mode;
  params.width = o.width;
  params.threads = 1;
  params.hash_seed = derive_seed(o.seed, 2);  // public; the noise comes from each run's source
  const MasterSeed seed = MasterSeed::of(o.seed, true);
  return is_set_kernel(params.family.kernel) ? ExactBuilder::sets(params, seed) : ExactBuilder::dense(params, seed, kDim);
}

Eigen::Index most_sensitive_row(const ExactBuilder& builder, const DenseMatrix& d, const DenseMatrix& candidates) {
  const auto base = exact_values(builder.build(d));
  Eigen::Index best = 0;
  double best_l1 = -1, best_l2 = -1;
  for (Eigen::Index i = 0; i < candidates.rows(); ++i) {
    const auto v = exact_values(builder.build(with_row(d, candidates, i)));
    double l1 = 0, l2 = 0;
    for (std::size_t c = 0; c < v.size(); ++c) {
      const double delta = v[c] - base[c];
      l1 += std::abs(delta);
      l2 += delta * delta;
    }
    if (l1 > best_l1 || (l1 == best_l1 && l2 > best_l2)) {
      best = i;
      best_l1 = l1;
      best_l2 = l2;
    }
  }
  return best;
}

std::vector<double> exact_values(const ExactSketch& exact) { return exact_values(exact.counts()); }

std::vector<double> exact_values(const RaceSketch& sketch) {
  const auto counts = sketch.counts();
  return {counts.begin(), counts.end()};
}

void observe(const RaceSketch& sketch, Observation& out) {
  const auto counts = sketch.counts();
  out.values.assign(counts.begin(), counts.end());
  const PrivacyRecord& p = sketch.privacy();
  if (p.noise_variance) out.recorded_variance.assign(counts.size(), *p.noise_variance);
  else out.recorded_variance.clear();
}

}  // namespace privrace::audit
