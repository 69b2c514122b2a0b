// Synthetic-data generators on a 27,000 x 10 table (the shape of the M2M paper's LifeSci and
// Random10): DP-Copula fit + one synthetic table of the same size (target: under 1 s), PrivBayes
// (degree 2, 16 bins) the same, DP-WGAN's training at epsilon = 1, delta = 1e-5 with the default
// schedule (1000 generator steps x 5 DP-SGD critic steps, expected batch 256; target: under
// 5 minutes), and the RDP accountant's noise-multiplier search. MST (16 bins, epsilon = 1,
// delta = 1e-9; target: under 2 s a fit), AIM (16 bins, every 3-way marginal as the workload;
// target: under 60 s a fit) and one Private-PGM iteration (per belief-propagation pass) on MST's
// measurements and on one 3-attribute clique of 4096 cells. Baseline in the same run: one
// pass over the table computing its column means.
// The KDE cell of PrivBayes on codrna's shape (59,535 x 8, degree 5, 16 bins, 100,000 synthetic
// points, 2,000 queries; target: under 3 s): the fit at one epsilon (network scores shared, as
// in an experiment), the sampling, and the released function at the queries. AIM's size check (a
// min-fill triangulation per candidate) by bit masks and by the pair-by-pair elimination that
// the tests check it against (triangulate_by_definition), and its candidates' weights. PrivBayes's
// greedy network from scratch on regress_gas's shape (5,400 x 129, degree 2, 4 bins).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <exception>

#include "privrace/baselines/dp_copula.hpp"
#include "privrace/baselines/aim.hpp"
#include "privrace/baselines/dp_wgan.hpp"
#include "privrace/baselines/function_release.hpp"
#include "privrace/baselines/mst.hpp"
#include "privrace/baselines/private_pgm.hpp"
#include "privrace/baselines/privbayes.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/rdp_accountant.hpp"

using namespace privrace;
using namespace privrace::baselines;

namespace {
constexpr std::size_t kRows = 27000, kCols = 10;

// Correlated rows in [0, 1]^10: a latent factor plus noise, squashed.
const DenseMatrix& table() {
  static const DenseMatrix t = [] {
    SeededRandom rng(1);
    DenseMatrix x(kRows, kCols);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const double f = rng.unit();
      for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = static_cast<Real>(0.5 * f + 0.5 * rng.unit());
    }
    return x;
  }();
  return t;
}
}  // namespace

static void BM_ColumnMeansBaseline(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(table().cast<double>().colwise().mean().eval());
}
BENCHMARK(BM_ColumnMeansBaseline)->Unit(benchmark::kMillisecond);

static void BM_DpCopulaFitAndSample(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    DpCopula gen;
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {1.0, 0}, noise);
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
BENCHMARK(BM_DpCopulaFitAndSample)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_PrivBayesFitAndSample(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    PrivBayesGenerator gen;
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {1.0, 0}, noise);
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
BENCHMARK(BM_PrivBayesFitAndSample)->Unit(benchmark::kMillisecond)->UseRealTime();

namespace {
constexpr std::size_t kCodrnaRows = 59535, kCodrnaCols = 8, kSynthetic = 100000, kQueries = 2000;

DenseMatrix unit_rows(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const double f = rng.unit();
    for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = static_cast<Real>(0.6 * f + 0.4 * rng.unit());
  }
  return x;
}

const DenseMatrix& codrna_shaped() {
  static const DenseMatrix t = unit_rows(kCodrnaRows, kCodrnaCols, 2);
  return t;
}

const PrivBayes& codrna_privbayes() {
  static const PrivBayes pb(codrna_shaped(), TableBox::uniform(kCodrnaCols, 0, 1), PrivBayesOptions{.degree = 5, .bins = 16});
  return pb;
}

const WeightedPoints& codrna_release() {
  static const WeightedPoints wp = [] {
    SeededRandom noise(3), sampler(4);
    WeightedPoints w;
    w.points = codrna_privbayes().fit(1.0, &noise).sample(kSynthetic, sampler);
    w.weights.assign(kSynthetic, 1.0 / kSynthetic);
    return w;
  }();
  return wp;
}

const KernelSpec kCodrnaKernel{Kernel::L2, 0.5, 1};
}  // namespace

static void BM_PrivBayesCodrnaFit(benchmark::State& state) {
  const PrivBayes& pb = codrna_privbayes();
  std::uint64_t seed = 10;
  for (auto _ : state) {
    SeededRandom noise(++seed);
    benchmark::DoNotOptimize(pb.fit(1.0, &noise));
  }
}
BENCHMARK(BM_PrivBayesCodrnaFit)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_PrivBayesCodrnaSample(benchmark::State& state) {
  SeededRandom noise(5);
  const PrivBayesModel model = codrna_privbayes().fit(1.0, &noise);
  std::uint64_t seed = 20;
  for (auto _ : state) {
    SeededRandom sampler(++seed);
    benchmark::DoNotOptimize(model.sample(kSynthetic, sampler).data());
  }
}
BENCHMARK(BM_PrivBayesCodrnaSample)->Unit(benchmark::kMillisecond)->UseRealTime();

// The greedy network from scratch on regress_gas's shape (5,400 x 129, degree 2, 4 bins: about
// 350k mutual informations and 11M score look-ups a fit), its conditionals and 100,000 rows; the
// score cache cleared before each fit. One iteration: seconds.
static void BM_PrivBayesGasShapedFit(benchmark::State& state) {
  static const DenseMatrix t = unit_rows(5400, 129, 8);
  static const PrivBayes pb(t, TableBox::uniform(129, 0, 1), PrivBayesOptions{.degree = 2, .bins = 4});
  std::uint64_t seed = 30;
  for (auto _ : state) {
    pb.clear_score_cache();
    SeededRandom noise(++seed), sampler(seed);
    const std::size_t before = pb.score_evaluations();
    benchmark::DoNotOptimize(pb.fit(1.0, &noise).sample(kSynthetic, sampler).data());
    state.counters["scores"] = static_cast<double>(pb.score_evaluations() - before);
  }
}
BENCHMARK(BM_PrivBayesGasShapedFit)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The released function (weighted_kernel_sums over the synthetic points) at the queries.
static void BM_ReleasedFunctionAtQueries(benchmark::State& state) {
  const WeightedPoints& wp = codrna_release();
  static const DenseMatrix queries = unit_rows(kQueries, kCodrnaCols, 6);
  for (auto _ : state) benchmark::DoNotOptimize(wp.evaluate(queries, kCodrnaKernel));
}
BENCHMARK(BM_ReleasedFunctionAtQueries)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_NoiseMultiplierSearch(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(find_noise_multiplier(1.0, 256.0 / kRows, 5000, 1e-5));
}
BENCHMARK(BM_NoiseMultiplierSearch)->Unit(benchmark::kMillisecond);

// range(0) = torch threads. One iteration: the training is minutes at full size.
static void BM_DpWganTrain(benchmark::State& state) {
  std::uint64_t seed = 1;
  try {
    DpWgan probe;  // a build without libtorch has no module: say so instead of aborting the run
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    DpWganOptions o;
    o.threads = static_cast<int>(state.range(0));
    DpWgan gen(o);
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {1.0, 1e-5}, noise);
    state.counters["sigma"] = gen.noise_multiplier();
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
// range(0) = epsilon (delta = 1e-9). A fit and one synthetic table of the same size.
static void BM_MstFitAndSample(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    MstGenerator gen;
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {static_cast<double>(state.range(0)), 1e-9}, noise);
    state.counters["pgm_seconds"] = gen.privacy_record().at("pgm_seconds").get<double>();
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
BENCHMARK(BM_MstFitAndSample)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond)->UseRealTime();

// range(0) = epsilon. One iteration: a fit is seconds to a minute.
static void BM_AimFitAndSample(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    AimGenerator gen;
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {static_cast<double>(state.range(0)), 1e-9}, noise);
    const nlohmann::json rec = gen.privacy_record();
    state.counters["rounds"] = static_cast<double>(rec.at("rounds").size());
    state.counters["model_cells"] = rec.at("model_cells").get<double>();
    state.counters["pgm_seconds"] = rec.at("pgm_seconds").get<double>();
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
BENCHMARK(BM_AimFitAndSample)->Arg(1)->Arg(10)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

// AIM's size check, the min-fill triangulation of the measured cliques plus one candidate, once
// per candidate per round: 54 attributes (covtype), the 54 one-way cliques and 30 seeded random
// 3-way ones, 100 candidate 3-way cliques an iteration. range(0) = 0: the elimination written
// pair by pair (triangulate_by_definition, the tests' reference); 1: neighbour sets as bit masks
// (triangulate, the one AIM calls).
static void BM_AimSizeCheckTriangulation(benchmark::State& state) {
  constexpr std::size_t kAttributes = 54;
  SeededRandom rng(7);
  const auto random_triple = [&] {
    pgm::Clique c;
    while (c.size() < 3) {
      const int a = static_cast<int>(rng.next() % kAttributes);
      if (std::find(c.begin(), c.end(), a) == c.end()) c.push_back(a);
    }
    std::sort(c.begin(), c.end());
    return c;
  };
  std::vector<pgm::Clique> measured;
  for (int a = 0; a < static_cast<int>(kAttributes); ++a) measured.push_back({a});
  for (int k = 0; k < 30; ++k) measured.push_back(random_triple());
  std::vector<pgm::Clique> candidates;
  for (int k = 0; k < 100; ++k) candidates.push_back(random_triple());
  std::size_t cliques = 0;
  for (auto _ : state) {
    for (const pgm::Clique& c : candidates) {
      std::vector<pgm::Clique> with = measured;
      with.push_back(c);
      cliques += state.range(0) == 0 ? pgm::JunctionTree::triangulate_by_definition(with, kAttributes).size()
                                     : pgm::JunctionTree::triangulate(with, kAttributes).size();
    }
  }
  benchmark::DoNotOptimize(cliques);
  state.counters["s_per_candidate"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(candidates.size()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AimSizeCheckTriangulation)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// AIM's candidates of covtype's workload (54 attributes, every 3-way marginal: 26,289 candidates
// and their weights, each summing its attributes' workload counts).
static void BM_AimCandidates(benchmark::State& state) {
  std::vector<pgm::Clique> workload;
  for (int a = 0; a < 54; ++a)
    for (int b = a + 1; b < 54; ++b)
      for (int c = b + 1; c < 54; ++c) workload.push_back({a, b, c});
  const std::vector<int> domain(54, 16);
  for (auto _ : state) benchmark::DoNotOptimize(aim_detail::candidates_of(workload, domain, double(1 << 20)).weights.data());
}
BENCHMARK(BM_AimCandidates)->Unit(benchmark::kMillisecond);

// A round's candidate marginals on covtype's shape: 54 attributes of 16 bins, a model of the 54
// one-way cliques and 12 seeded random 3-way ones, as a round of AIM at a large epsilon has
// (random potentials, calibrated, conditionals kept), and every 1-, 2- and 3-way set (26,289). range(0) = 0: marginal() one candidate after
// another (in parallel); 1: for_each_marginal, the 2-way marginals kept as parts of the 3-way ones.
static void BM_AimCandidateMarginals(benchmark::State& state) {
  constexpr int kAttributes = 54;
  const std::vector<int> domain(kAttributes, 16);
  SeededRandom rng(7);
  std::vector<pgm::Clique> pots;
  for (int a = 0; a < kAttributes; ++a) pots.push_back({a});
  while (pots.size() < kAttributes + 12) {
    pgm::Clique c;
    while (c.size() < 3) {
      const int a = static_cast<int>(rng.next() % kAttributes);
      if (std::find(c.begin(), c.end(), a) == c.end()) c.push_back(a);
    }
    std::sort(c.begin(), c.end());
    if (std::find(pots.begin(), pots.end(), c) == pots.end()) pots.push_back(c);
  }
  pgm::GraphicalModel model(domain, pots);
  for (auto& [c, th] : model.potentials())
    for (double& v : th) v = 2 * (rng.unit() - 0.5);
  model.calibrate();
  model.prepare_conditionals();
  std::vector<pgm::Clique> sets;
  for (int a = 0; a < kAttributes; ++a) {
    sets.push_back({a});
    for (int b = a + 1; b < kAttributes; ++b) {
      sets.push_back({a, b});
      for (int c = b + 1; c < kAttributes; ++c) sets.push_back({a, b, c});
    }
  }
  std::vector<double> first(sets.size());
  for (auto _ : state) {
    if (state.range(0) == 0) {
#pragma omp parallel for schedule(dynamic, 1)
      for (std::size_t i = 0; i < sets.size(); ++i) {
        try {
          first[i] = model.marginal(sets[i])[0];
        } catch (const std::exception&) {  // too large to compute: AIM's candidate is ineligible
          first[i] = -1;
        }
      }
    } else {
      model.for_each_marginal(sets, [&](std::size_t i, const std::vector<double>* m) { first[i] = m ? (*m)[0] : -1; });
    }
    benchmark::DoNotOptimize(first.data());
  }
  state.counters["measured_3way"] = static_cast<double>(pots.size()) - kAttributes;
  state.counters["model_cells"] = pgm::JunctionTree::size_of(pots, domain);
  state.SetLabel(state.range(0) == 0 ? "marginal() each" : "for_each_marginal");
}
BENCHMARK(BM_AimCandidateMarginals)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Private-PGM: range(0) = 0: MST's 19 measurements (10 one-way, a 9-edge chain of pairs) of the
// binned table; 1: one 3-way and three 2-way measurements inside one 4096-cell clique. 200
// mirror-descent iterations (no scaled steps, no early stop); the counter is per BP pass.
static void BM_PrivatePgmIterations(benchmark::State& state) {
  const std::vector<std::uint16_t> codes = pgm::encode_table(table(), TableBox::uniform(kCols, 0, 1), 16);
  const std::vector<int> domain(kCols, 16);
  SeededRandom noise(3);
  std::vector<pgm::Measurement> ms;
  if (state.range(0) == 0) {
    for (int j = 0; j < static_cast<int>(kCols); ++j) ms.push_back(pgm::measure(codes, kRows, {j}, domain, 10.0, noise));
    for (int j = 0; j + 1 < static_cast<int>(kCols); ++j) ms.push_back(pgm::measure(codes, kRows, {j, j + 1}, domain, 10.0, noise));
  } else {
    ms.push_back(pgm::measure(codes, kRows, {0, 1, 2}, domain, 10.0, noise));
    for (const pgm::Clique& c : {pgm::Clique{0, 1}, pgm::Clique{1, 2}, pgm::Clique{0, 2}})
      ms.push_back(pgm::measure(codes, kRows, c, domain, 10.0, noise));
  }
  pgm::EstimationOptions o;
  o.iterations = 200;
  o.tolerance = 0;
  o.scaled_steps = false;
  int passes = 0;
  for (auto _ : state) {
    const pgm::GraphicalModel m = pgm::estimate(domain, ms, o);
    passes += m.last_bp_passes;
    benchmark::DoNotOptimize(m.total());
  }
  state.counters["bp_passes"] = benchmark::Counter(passes, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PrivatePgmIterations)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_DpWganTrain)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_MAIN();
