// Private-PGM, MST and AIM (baselines/private_pgm.hpp, mst.hpp, aim.hpp): belief propagation
// against brute force, estimation from exact marginals of a tree-structured distribution, the
// generators' marginals at a very large epsilon, their budget records, deterministic sampling,
// the size refusals and the errors for bad settings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "privrace/baselines/aim.hpp"
#include "privrace/baselines/mst.hpp"
#include "privrace/baselines/private_pgm.hpp"
#include "privrace/baselines/synthetic_generators.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"

namespace privrace::baselines {
namespace {

using pgm::Clique;

// Every assignment of the domain, first attribute slowest.
void for_each_assignment(const std::vector<int>& domain, const std::function<void(const std::vector<int>&)>& f) {
  std::vector<int> x(domain.size(), 0);
  for (;;) {
    f(x);
    std::size_t i = domain.size();
    while (i-- > 0) {
      if (++x[i] < domain[i]) break;
      x[i] = 0;
      if (i == 0) return;
    }
  }
}

std::size_t cell_of(const Clique& c, const std::vector<int>& x, const std::vector<int>& domain) {
  std::size_t idx = 0;
  for (const int a : c)
    idx = idx * static_cast<std::size_t>(domain[static_cast<std::size_t>(a)]) +
          static_cast<std::size_t>(x[static_cast<std::size_t>(a)]);
  return idx;
}

// A model of `pots` with seeded potentials uniform in [-1.5, 1.5], calibrated, and a marginal of
// its distribution p(x) ~ exp(sum of potentials) by brute force over every assignment.
struct BruteForceModel {
  std::vector<int> domain;
  pgm::GraphicalModel model;
  std::vector<double> joint;  // p(x), assignments in for_each_assignment's order

  BruteForceModel(const std::vector<int>& dom, const std::vector<Clique>& pots, std::uint64_t seed)
      : domain(dom), model(dom, pots) {
    SeededRandom rng(seed);
    for (auto& [c, th] : model.potentials())
      for (double& v : th) v = 3 * (rng.unit() - 0.5);
    model.calibrate();
    double z = 0;
    for_each_assignment(domain, [&](const std::vector<int>& x) {
      double s = 0;
      for (const auto& [c, th] : model.potentials()) s += th[cell_of(c, x, domain)];
      joint.push_back(std::exp(s));
      z += joint.back();
    });
    for (double& p : joint) p /= z;
  }
  std::vector<double> marginal(const Clique& q) const {
    std::vector<double> out(static_cast<std::size_t>(pgm::clique_cells(q, domain)), 0.0);
    std::size_t k = 0;
    for_each_assignment(domain, [&](const std::vector<int>& x) { out[cell_of(q, x, domain)] += joint[k++]; });
    return out;
  }
};

// The bit-mask min-fill triangulation (the one AIM calls for every candidate of every round)
// returns exactly the cliques, in the same order, of the elimination written pair by pair: over
// random models of 2- and 3-way cliques with 1 to 130 attributes (one to three 64-bit words,
// word edges included), sparse to dense, and models grown one clique at a time as AIM grows them.
TEST(PrivatePgm, BitMaskTriangulationEqualsTheDefinition) {
  SeededRandom rng(2026);
  std::size_t compared = 0, multi_word = 0;
  for (const std::size_t d : {1u, 2u, 5u, 16u, 54u, 63u, 64u, 65u, 100u, 130u}) {
    for (const std::size_t count : {0u, 1u, 3u, 10u, 30u, 90u}) {
      std::vector<Clique> cliques;
      for (std::size_t k = 0; k < count && d >= 2; ++k) {
        const std::size_t size = std::min<std::size_t>(d, 2 + (rng.next() & 1));
        Clique c;
        while (c.size() < size) {
          const int a = static_cast<int>(rng.next() % d);
          if (std::find(c.begin(), c.end(), a) == c.end()) c.push_back(a);
        }
        std::sort(c.begin(), c.end());
        cliques.push_back(c);
        // Every prefix: the models AIM checks as it adds measured cliques.
        EXPECT_EQ(pgm::JunctionTree::triangulate(cliques, d), pgm::JunctionTree::triangulate_by_definition(cliques, d))
            << "d = " << d << ", " << cliques.size() << " cliques";
        // One more clique given apart (AIM's candidate) is the same as appended.
        const Clique& extra = cliques[rng.next() % cliques.size()];
        std::vector<Clique> with(cliques.begin(), cliques.end() - 1);
        with.push_back(extra);
        const std::vector<Clique> head(cliques.begin(), cliques.end() - 1);
        EXPECT_EQ(pgm::JunctionTree::triangulate(head, d, &extra), pgm::JunctionTree::triangulate_by_definition(with, d));
        ++compared;
        multi_word += d > 64;
      }
      EXPECT_EQ(pgm::JunctionTree::triangulate(cliques, d), pgm::JunctionTree::triangulate_by_definition(cliques, d));
    }
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(multi_word, 300u);
  // Both refuse an attribute outside the domain, naming it.
  EXPECT_THROW(pgm::JunctionTree::triangulate({{0, 7}}, 5), UsageError);
  EXPECT_THROW(pgm::JunctionTree::triangulate_by_definition({{0, 7}}, 5), UsageError);
}

// The subtree a model marginal eliminates over: the one-pass rule equals pruning unneeded leaves
// one at a time, on junction trees of random models and random sets of needed cliques.
TEST(PrivatePgm, SpanningSubtreeEqualsLeafPruning) {
  SeededRandom rng(41);
  std::size_t compared = 0;
  for (int model = 0; model < 60; ++model) {
    const std::size_t d = 3 + rng.next() % 25;
    const std::vector<int> domain(d, 2);
    std::vector<Clique> cliques;
    for (std::size_t a = 0; a < d; ++a) cliques.push_back({static_cast<int>(a)});
    for (std::size_t k = rng.next() % (2 * d); k-- > 0;) {
      Clique c{static_cast<int>(rng.next() % d), static_cast<int>(rng.next() % d)};
      std::sort(c.begin(), c.end());
      if (c[0] != c[1]) cliques.push_back(c);
    }
    const pgm::JunctionTree tree = pgm::JunctionTree::build(cliques, domain);
    const std::size_t k = tree.cliques().size();
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<char> needed(k, 0);
      for (std::size_t c = 0; c < k; ++c) needed[c] = rng.next() % 4 == 0;
      // The definition: remove a clique that is not needed and has at most one neighbour left.
      std::vector<char> in(k, 1);
      for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t c = 0; c < k; ++c) {
          if (!in[c] || needed[c]) continue;
          int neighbours = 0;
          for (std::size_t o = 0; o < k; ++o)
            if (in[o] && o != c && (tree.parent(c) == static_cast<int>(o) || tree.parent(o) == static_cast<int>(c))) ++neighbours;
          if (neighbours <= 1) in[c] = 0, changed = true;
        }
      }
      EXPECT_EQ(tree.spanning_subtree(needed), in) << "model " << model << ", trial " << trial;
      ++compared;
    }
    for (std::size_t a = 0; a < d; ++a) EXPECT_EQ(tree.home(static_cast<int>(a)), tree.containing({static_cast<int>(a)}));
  }
  EXPECT_EQ(compared, 1200u);
}

TEST(PrivatePgm, BeliefPropagationEqualsBruteForce) {
  const std::vector<int> domain{2, 3, 2, 3, 2};
  // A cycle 0-1-2-0 (triangulated into one clique), a chain 2-3, and 4 on its own; potentials
  // nested in others ({1} in {0, 1} in {0, 1, 2}, {3} in {2, 3}) are folded into them.
  const std::vector<Clique> pots{{0, 1}, {1, 2}, {0, 2}, {2, 3}, {4}, {1}, {0, 1, 2}, {3}};
  const BruteForceModel truth(domain, pots, 3);
  const pgm::GraphicalModel& model = truth.model;
  for (const Clique& q :
       std::vector<Clique>{{0}, {0, 1}, {1, 2}, {0, 1, 2}, {2, 3}, {1, 3}, {0, 3}, {3, 4}, {0, 1, 3, 4}}) {
    const std::vector<double> brute = truth.marginal(q);
    const std::vector<double> bp = model.marginal(q);
    ASSERT_EQ(bp.size(), brute.size());
    for (std::size_t i = 0; i < bp.size(); ++i)
      EXPECT_NEAR(bp[i], brute[i], 1e-12) << "clique size " << q.size() << " cell " << i;
    // The conditionals kept for many marginals (AIM) give the same numbers, bit for bit, and a
    // later calibration drops them: the marginals follow the new potentials.
    pgm::GraphicalModel prepared = model;
    prepared.prepare_conditionals();
    EXPECT_EQ(prepared.marginal(q), bp) << "clique size " << q.size();
    for (auto& [c, th] : prepared.potentials()) th[0] += 1.0;
    prepared.calibrate();  // must drop the conditionals of the former potentials
    pgm::GraphicalModel fresh = model;
    for (auto& [c, th] : fresh.potentials()) th[0] += 1.0;
    fresh.calibrate();
    EXPECT_EQ(prepared.marginal(q), fresh.marginal(q)) << "clique size " << q.size();
    EXPECT_NE(prepared.marginal(q), bp) << "clique size " << q.size();
  }
}

// Three parts joined by empty separators ({0, 1, 2, 3}, {4}, {5, 6}): a marginal across them is
// the product of each part's marginal (the model makes the parts independent), against brute
// force; and for_each_marginal, which reuses the smaller sets' marginals as parts of the larger
// ones, gives every 1-, 2- and 3-way set exactly marginal()'s numbers, prepared or not.
TEST(PrivatePgm, MarginalsAcrossIndependentPartsAndBatchedEqualBruteForce) {
  const std::vector<int> domain{2, 3, 2, 3, 2, 2, 3};
  const std::vector<Clique> pots{{0, 1}, {1, 2}, {0, 2}, {2, 3}, {4}, {5, 6}, {1}};
  const BruteForceModel truth(domain, pots, 8);
  const pgm::GraphicalModel& model = truth.model;
  std::vector<Clique> sets;
  for (int a = 0; a < 7; ++a) {
    sets.push_back({a});
    for (int b = a + 1; b < 7; ++b) {
      sets.push_back({a, b});
      for (int c = b + 1; c < 7; ++c) sets.push_back({a, b, c});
    }
  }
  sets.push_back({0, 3, 4, 6});  // four attributes over the three parts, none measured together
  int across = 0;
  for (const Clique& q : sets) {
    const std::vector<double> brute = truth.marginal(q);
    const std::vector<double> m = model.marginal(q);
    ASSERT_EQ(m.size(), brute.size());
    for (std::size_t i = 0; i < m.size(); ++i) EXPECT_NEAR(m[i], brute[i], 1e-12) << "set of " << q.size() << " cell " << i;
    if (model.tree().containing(q) < 0 && std::count_if(q.begin(), q.end(), [](int a) { return a == 4 || a >= 5; }) > 0 &&
        std::count_if(q.begin(), q.end(), [](int a) { return a < 4; }) > 0)
      ++across;
  }
  EXPECT_GE(across, 40);
  for (const bool prepared : {false, true}) {
    pgm::GraphicalModel m = model;
    if (prepared) m.prepare_conditionals();
    std::vector<std::vector<double>> got(sets.size());
    std::vector<int> calls(sets.size(), 0);
    m.for_each_marginal(sets, [&](std::size_t i, const std::vector<double>* mu) {
      ASSERT_NE(mu, nullptr);
      got[i] = *mu;
      ++calls[i];  // each index once (its own slot: no race)
    });
    for (std::size_t i = 0; i < sets.size(); ++i) {
      EXPECT_EQ(calls[i], 1);
      EXPECT_EQ(got[i], model.marginal(sets[i])) << "set " << i << (prepared ? ", prepared" : "");
    }
  }
}

// SubsetMap (belief propagation's maps as runs) equals index_map cell for cell, and its loops
// (combine: a sum in place, a product in place and a product into another table; sum_to) give
// the doubles of the same loops over index_map, bit for bit: every subset of a 4-attribute
// clique (sizes 2, 3, 1, 4), the empty and the full one included.
TEST(PrivatePgm, SubsetMapEqualsIndexMapAndItsLoops) {
  const std::vector<int> domain{2, 3, 1, 4, 5};
  const Clique c{0, 1, 3, 4};
  SeededRandom rng(4);
  std::vector<double> w(static_cast<std::size_t>(pgm::clique_cells(c, domain)));
  for (double& x : w) x = rng.unit() - 0.3;
  for (unsigned mask = 0; mask < 16; ++mask) {
    Clique sub;
    for (std::size_t i = 0; i < 4; ++i)
      if (mask >> i & 1) sub.push_back(c[i]);
    SCOPED_TRACE("subset mask " + std::to_string(mask));
    const std::vector<std::uint32_t> map = pgm::index_map(c, sub, domain);
    const pgm::SubsetMap runs(c, sub, domain);
    ASSERT_EQ(runs.cells(), map.size());
    for (std::size_t i = 0; i < map.size(); ++i) ASSERT_EQ(runs[i], map[i]) << "cell " << i;
    const auto sc = static_cast<std::size_t>(pgm::clique_cells(sub, domain));
    std::vector<double> v(sc);
    for (double& x : v) x = rng.unit() + 0.1;
    std::vector<double> want = w, got = w;
    for (std::size_t i = 0; i < map.size(); ++i) want[i] += v[map[i]];
    runs.combine(got, v, got, std::plus<>());
    EXPECT_EQ(got, want);
    for (std::size_t i = 0; i < map.size(); ++i) want[i] *= v[map[i]];
    runs.combine(got, v, got, std::multiplies<>());
    EXPECT_EQ(got, want);
    for (std::size_t i = 0; i < map.size(); ++i) want[i] = w[i] * v[map[i]];
    runs.combine(w, v, got, std::multiplies<>());
    EXPECT_EQ(got, want);
    std::vector<double> sum_want(sc, 0.0), sum_got;
    for (std::size_t i = 0; i < map.size(); ++i) sum_want[map[i]] += w[i];
    runs.sum_to(w, sum_got, sc);
    EXPECT_EQ(sum_got, sum_want);
  }
}

TEST(PrivatePgm, ExactTreeMarginalsAreRecovered) {
  // A tree 0 - 1, 1 - 2, 1 - 3 with random conditionals; measurements are its exact (noise-free)
  // counts for N = 1000 (sigma 1): the fitted model must reproduce them.
  const std::vector<int> domain{3, 4, 3, 2};
  SeededRandom rng(11);
  auto random_dist = [&](std::size_t k) {
    std::vector<double> p(k);
    for (double& v : p) v = 0.2 + rng.unit();
    const double s = std::accumulate(p.begin(), p.end(), 0.0);
    for (double& v : p) v /= s;
    return p;
  };
  const std::vector<double> p0 = random_dist(3);
  std::vector<std::vector<double>> p1(3), p2(4), p3(4);
  for (auto& v : p1) v = random_dist(4);
  for (auto& v : p2) v = random_dist(3);
  for (auto& v : p3) v = random_dist(2);
  const double n = 1000;
  std::vector<std::vector<double>> exact(6);
  const std::vector<Clique> cl{{0}, {1}, {0, 1}, {1, 2}, {1, 3}, {2}};
  for (std::size_t m = 0; m < cl.size(); ++m)
    exact[m].assign(static_cast<std::size_t>(pgm::clique_cells(cl[m], domain)), 0.0);
  for_each_assignment(domain, [&](const std::vector<int>& x) {
    const double p = p0[static_cast<std::size_t>(x[0])] *
                     p1[static_cast<std::size_t>(x[0])][static_cast<std::size_t>(x[1])] *
                     p2[static_cast<std::size_t>(x[1])][static_cast<std::size_t>(x[2])] *
                     p3[static_cast<std::size_t>(x[1])][static_cast<std::size_t>(x[3])];
    for (std::size_t m = 0; m < cl.size(); ++m) exact[m][cell_of(cl[m], x, domain)] += n * p;
  });
  std::vector<pgm::Measurement> ms;
  for (std::size_t m = 0; m < cl.size(); ++m) ms.push_back({cl[m], exact[m], 1.0});
  // Both descents: scaled steps then mirror descent (the default), and mirror descent alone.
  for (const bool scaled : {true, false}) {
    SCOPED_TRACE(scaled ? "scaled steps" : "mirror descent only");
    pgm::EstimationOptions o;
    o.iterations = scaled ? 3000 : 20000;
    o.tolerance = 0;
    o.scaled_steps = scaled;
    const pgm::GraphicalModel model = pgm::estimate(domain, ms, o);
    EXPECT_NEAR(model.total(), n, 1e-9);
    EXPECT_LT(pgm::estimation_loss(model, ms), 1e-8);
    for (std::size_t m = 0; m < cl.size(); ++m) {
      const std::vector<double> mu = model.marginal(cl[m]);
      for (std::size_t i = 0; i < mu.size(); ++i)
        EXPECT_NEAR(n * mu[i], exact[m][i], 1e-4) << "measurement " << m << " cell " << i;
    }
    // The unmeasured pair (2, 3) follows from the tree: conditionally independent given 1.
    std::vector<double> want(6, 0.0);
    for_each_assignment(domain, [&](const std::vector<int>& x) {
      want[static_cast<std::size_t>(x[2] * 2 + x[3])] +=
          p0[static_cast<std::size_t>(x[0])] * p1[static_cast<std::size_t>(x[0])][static_cast<std::size_t>(x[1])] *
          p2[static_cast<std::size_t>(x[1])][static_cast<std::size_t>(x[2])] *
          p3[static_cast<std::size_t>(x[1])][static_cast<std::size_t>(x[3])];
    });
    const std::vector<double> got = model.marginal({2, 3});
    for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-7);
  }
}

// A noisy measurement has cells below 0 where the data have none; the model can only take their
// mass towards 0. The scaled steps pushed such a cell's potential down by up to 20 a step for
// ever; over AIM's warm-started rounds that ended two fits early (docs/privacy-baselines.md, Private-PGM).
// A cell whose expected count is already negligible (below 1e-6 records) is not pushed further
// down; every other cell moves.
TEST(PrivatePgm, ACellMeasuredBelowZeroIsNotPushedDownOnceItsCountIsNegligible) {
  const std::vector<int> domain{4, 4};
  const Clique pair{0, 1};
  std::vector<double> y(16, 60.0);
  y[0] = -5;  // noisy count of an empty cell
  y[1] = 20;
  const std::vector<pgm::Measurement> ms{{pair, y, 1.0}};
  pgm::GraphicalModel warm(domain, {pair});
  std::vector<double>& th = warm.potentials().at(pair);
  th.assign(16, 0.0);
  th[0] = -40;  // expected count ~ 900 e^-40 ~ 4e-15 records
  pgm::EstimationOptions o;
  o.iterations = 1;
  o.tolerance = 0;
  const pgm::GraphicalModel next = pgm::estimate(domain, ms, o, &warm);
  ASSERT_EQ(next.last_iterations, 1);
  EXPECT_EQ(next.last_stop, "iterations");
  const std::vector<double>& moved = next.potentials().at(pair);
  EXPECT_EQ(moved[0], -40.0) << "the negligible cell measured below 0 stays where it is";
  EXPECT_LT(moved[1], 0.0) << "a cell measured below the model's count moves down";
  EXPECT_LT(pgm::estimation_loss(next, ms), pgm::estimation_loss(warm, ms));
  // Without the measurement below 0 nothing is special: the same cell is pushed up.
  y[0] = 5;
  const pgm::GraphicalModel up = pgm::estimate(domain, {{pair, y, 1.0}}, o, &warm);
  EXPECT_GT(up.potentials().at(pair)[0], -40.0);
  // The stop is recorded: a loose tolerance ends the fit as converged before its iterations.
  o.iterations = 500;
  o.tolerance = 1e-3;
  const pgm::GraphicalModel done = pgm::estimate(domain, ms, o, &warm);
  EXPECT_EQ(done.last_stop, "converged");
  EXPECT_LT(done.last_iterations, 500);
}

TEST(PrivatePgm, ZcdpConversionAndDiscreteGaussian) {
  for (const double eps : {0.01, 1.0, 100.0}) {
    const double rho = pgm::zcdp_rho(eps, 1e-9);
    EXPECT_NEAR(pgm::zcdp_epsilon(rho, 1e-9), eps, 1e-12 * eps);
  }
  const pgm::DiscreteGaussian g(3.0);
  EXPECT_GE(g.sigma2(), 9.0);
  SeededRandom rng(5);
  double s = 0, s2 = 0;
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) {
    const double v = static_cast<double>(g.sample(rng));
    s += v;
    s2 += v * v;
  }
  EXPECT_NEAR(s / draws, 0.0, 0.1);
  EXPECT_NEAR(s2 / draws, 9.0, 0.35);  // the discrete Gaussian's variance is below sigma^2 by < 1e-8 here
  // A large sigma (the 128-bit acceptance test): mean and variance of 20000 draws.
  const pgm::DiscreteGaussian big(5e5);
  double b1 = 0, b2 = 0;
  for (int i = 0; i < 20000; ++i) {
    const double v = static_cast<double>(big.sample(rng)) / 5e5;
    b1 += v;
    b2 += v * v;
  }
  EXPECT_NEAR(b1 / 20000, 0.0, 0.03);
  EXPECT_NEAR(b2 / 20000, 1.0, 0.05);
  EXPECT_THROW(pgm::DiscreteGaussian(0.0), UsageError);
  EXPECT_THROW(pgm::DiscreteGaussian(2e7), UsageError);
}

// MST's and AIM's options with `bins` bins per column under `neighbors` (make_synthetic_generator
// reads those of the generator it makes).
SyntheticOptions pgm_options(int bins, const std::string& neighbors = "add-remove") {
  SyntheticOptions o;
  o.mst.bins = o.aim.bins = bins;
  o.mst.neighbors = o.aim.neighbors = neighbors;
  return o;
}

// A Markov chain over 8 bins per column (values at bin centres of [0, 1]): column j + 1 is
// column j moved by -1, 0 or +1 (mod 8) with probabilities 1/4, 1/2, 1/4.
DenseMatrix chain_table(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom g(seed);
  DenseMatrix t(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < t.rows(); ++i) {
    int v = static_cast<int>(g.below(8));
    for (Eigen::Index j = 0; j < t.cols(); ++j) {
      if (j > 0) {
        const auto u = g.below(4);
        v = (v + (u == 0 ? 7 : u == 1 ? 1 : 0)) % 8;
      }
      t(i, j) = static_cast<Real>((v + 0.5) / 8);
    }
  }
  return t;
}

// Largest |frequency difference| over the cells of every 1-way and 2-way marginal (8 bins).
double max_marginal_gap(const DenseMatrix& real, const DoubleMatrix& syn, bool pairs) {
  const auto d = static_cast<std::size_t>(real.cols());
  auto bin = [](double v) { return std::min(7, static_cast<int>(v * 8)); };
  double gap = 0;
  for (std::size_t a = 0; a < d; ++a)
    for (std::size_t b = pairs ? a + 1 : a; b < (pairs ? d : a + 1); ++b) {
      std::vector<double> fr(64, 0.0), fs(64, 0.0);
      for (Eigen::Index i = 0; i < real.rows(); ++i)
        fr[static_cast<std::size_t>(bin(real(i, static_cast<Eigen::Index>(a))) * 8 +
                                    bin(real(i, static_cast<Eigen::Index>(b))))] +=
            1.0 / static_cast<double>(real.rows());
      for (Eigen::Index i = 0; i < syn.rows(); ++i)
        fs[static_cast<std::size_t>(bin(syn(i, static_cast<Eigen::Index>(a))) * 8 +
                                    bin(syn(i, static_cast<Eigen::Index>(b))))] +=
            1.0 / static_cast<double>(syn.rows());
      for (std::size_t c = 0; c < 64; ++c) gap = std::max(gap, std::abs(fr[c] - fs[c]));
    }
  return gap;
}

void expect_generator_fits(SyntheticGenerator& gen, const std::string& split_key) {
  const DenseMatrix t = chain_table(20000, 5, 7);
  const TableBox box = TableBox::uniform(5, 0, 1);
  SeededRandom noise(9);
  const SyntheticPrivacy priv{1e4, 1e-9};
  gen.fit(t, box, priv, noise);
  const DoubleMatrix syn = gen.sample(100000, 3);
  ASSERT_EQ(syn.cols(), 5);
  EXPECT_TRUE((syn.array() >= 0).all() && (syn.array() <= 1).all());
  // Tolerances: 100k synthetic rows give a cell frequency's standard error below 0.0016.
  EXPECT_LT(max_marginal_gap(t, syn, false), 0.006) << gen.name() << " one-way";
  EXPECT_LT(max_marginal_gap(t, syn, true), 0.008) << gen.name() << " two-way";
  // Budget: the parts add up to rho, and rho to (epsilon, delta).
  const nlohmann::json rec = gen.privacy_record();
  const double rho = rec.at("rho").get<double>();
  EXPECT_NEAR(pgm::zcdp_epsilon(rho, 1e-9), 1e4, 1e-8);
  const auto& split = rec.at("budget_split");
  double sum = 0;
  for (const auto& k : {std::string("one_way_rho"), std::string("selection_rho"), split_key})
    sum += split.at(k).get<double>();
  EXPECT_NEAR(sum, rho, 1e-9 * rho);
  EXPECT_NEAR(split.at("total_rho").get<double>(), rho, 1e-9 * rho);
  EXPECT_EQ(rec.at("delta").get<double>(), 1e-9);
  // Deterministic per seed.
  const DoubleMatrix a = gen.sample(5000, 42), b = gen.sample(5000, 42), c = gen.sample(5000, 43);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
}

TEST(Mst, LargeEpsilonMatchesMarginalsAndRecordsBudget) {
  MstOptions o;
  o.bins = 8;
  MstGenerator gen(o);
  expect_generator_fits(gen, "two_way_rho");
  // The chain's edges are the tree.
  std::vector<std::pair<int, int>> e = gen.edges();
  std::sort(e.begin(), e.end());
  EXPECT_EQ(e, (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
  const nlohmann::json rec = gen.privacy_record();
  const auto& split = rec.at("budget_split");
  EXPECT_NEAR(split.at("one_way_rho").get<double>(), split.at("two_way_rho").get<double>(),
              1e-9 * split.at("two_way_rho").get<double>());
  EXPECT_NEAR(split.at("one_way_rho").get<double>(), split.at("selection_rho").get<double>(),
              1e-9 * split.at("two_way_rho").get<double>());
}

TEST(Aim, LargeEpsilonMatchesMarginalsAndRecordsBudget) {
  AimOptions o;
  o.bins = 8;
  o.degree = 2;        // the pairs; at this epsilon AIM measures them all and the model becomes
  o.max_cells = 2048;  // the full 8^5 joint (seconds) unless the size bound stops it
  AimGenerator gen(o);
  expect_generator_fits(gen, "measurement_rho");
  EXPECT_LE(gen.privacy_record().at("model_cells").get<double>(), 2048.0);
  EXPECT_FALSE(gen.selected().empty());
  const nlohmann::json rec = gen.privacy_record();
  EXPECT_EQ(rec.at("rounds").size(), gen.selected().size());
  EXPECT_TRUE(rec.at("rounds").back().at("last").get<bool>());
}

// AIM's candidates: the workload's downward closure, each with w_r = sum over workload cliques
// s of |r intersect s| as the definition sums it (the implementation sums per attribute), and
// the size cut. Random workloads of 1- to 4-way cliques over 9 attributes of mixed domains.
TEST(Aim, CandidateWeightsEqualTheDefinition) {
  SeededRandom rng(12);
  const std::vector<int> domain = {2, 3, 16, 5, 4, 16, 2, 7, 3};
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Clique> workload;
    const int count = 1 + static_cast<int>(rng.below(12));
    for (int w = 0; w < count; ++w) {
      Clique c;
      const std::size_t size = 1 + rng.below(4);
      while (c.size() < size) {
        const int a = static_cast<int>(rng.below(domain.size()));
        if (std::find(c.begin(), c.end(), a) == c.end()) c.push_back(a);
      }
      std::sort(c.begin(), c.end());
      workload.push_back(c);
    }
    const double max_cells = trial % 2 ? 200.0 : 1e9;
    std::vector<Clique> closure;
    for (const Clique& w : workload)
      for (std::uint64_t mask = 1; mask < (std::uint64_t{1} << w.size()); ++mask) {
        Clique r;
        for (std::size_t i = 0; i < w.size(); ++i)
          if (mask >> i & 1) r.push_back(w[i]);
        if (pgm::clique_cells(r, domain) <= max_cells) closure.push_back(r);
      }
    std::sort(closure.begin(), closure.end());
    closure.erase(std::unique(closure.begin(), closure.end()), closure.end());
    const aim_detail::Candidates cands = aim_detail::candidates_of(workload, domain, max_cells);
    ASSERT_EQ(cands.cliques, closure) << "trial " << trial;
    for (std::size_t c = 0; c < closure.size(); ++c) {
      double w = 0;
      for (const Clique& s : workload) {
        std::size_t common = 0;
        for (const int a : closure[c]) common += std::binary_search(s.begin(), s.end(), a);
        w += static_cast<double>(common);
      }
      EXPECT_EQ(cands.weights[c], w) << "trial " << trial << " candidate " << c;
    }
  }
}

// The data marginals AIM counts for the candidates a round finds eligible (32-bit counts, only
// those asked for, each once) are pgm::data_marginal's counts.
TEST(Aim, LazyDataMarginalsEqualDataMarginal) {
  const std::vector<int> domain = {3, 16, 5, 16, 2};
  const std::size_t n = 1999;
  SeededRandom rng(8);
  std::vector<std::uint16_t> codes(n * domain.size());
  for (std::size_t j = 0; j < domain.size(); ++j)
    for (std::size_t i = 0; i < n; ++i) codes[j * n + i] = static_cast<std::uint16_t>(rng.below(static_cast<std::uint64_t>(domain[j])));
  const aim_detail::Candidates cands = aim_detail::candidates_of({{0, 1, 3}, {1, 2, 4}, {0, 3, 4}}, domain, 1e9);
  aim_detail::DataMarginals data(codes, n, domain, cands.cliques.size());
  std::vector<char> needed(cands.cliques.size(), 0);
  for (std::size_t c = 0; c < needed.size(); c += 2) needed[c] = 1;
  data.count(cands, needed);
  for (std::size_t c = 0; c < needed.size(); ++c) {
    if (!needed[c]) {
      EXPECT_TRUE(data.of(c).empty()) << "candidate " << c << " was not asked for";
      continue;
    }
    const std::vector<double> want = pgm::data_marginal(codes, n, cands.cliques[c], domain);
    ASSERT_EQ(data.of(c).size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) ASSERT_EQ(static_cast<double>(data.of(c)[k]), want[k]) << "candidate " << c;
  }
  std::fill(needed.begin(), needed.end(), 1);
  data.count(cands, needed);
  for (std::size_t c = 0; c < needed.size(); ++c) {
    const std::vector<double> want = pgm::data_marginal(codes, n, cands.cliques[c], domain);
    for (std::size_t k = 0; k < want.size(); ++k) ASSERT_EQ(static_cast<double>(data.of(c)[k]), want[k]) << "candidate " << c;
  }
}

TEST(MstAim, SameNoiseSeedSameFit) {
  const DenseMatrix t = chain_table(3000, 4, 2);
  for (const std::string name : {"mst", "aim"}) {
    auto g1 = make_synthetic_generator(name, pgm_options(8));
    auto g2 = make_synthetic_generator(name, pgm_options(8));
    SeededRandom n1(4), n2(4);
    g1->fit(t, TableBox::uniform(4, 0, 1), {1.0, 1e-6}, n1);
    g2->fit(t, TableBox::uniform(4, 0, 1), {1.0, 1e-6}, n2);
    EXPECT_TRUE(g1->sample(2000, 5) == g2->sample(2000, 5)) << name;
    nlohmann::json r1 = g1->privacy_record(), r2 = g2->privacy_record();
    for (const char* timing : {"pgm_seconds", "final_pgm_seconds"}) {
      r1.erase(timing);
      r2.erase(timing);
    }
    EXPECT_EQ(r1, r2) << name;
  }
}

TEST(MstAim, ReplaceNeighboursDoubleTheSensitivities) {
  const DenseMatrix t = chain_table(2000, 4, 3);
  const TableBox box = TableBox::uniform(4, 0, 1);
  for (const std::string name : {"mst", "aim"}) {
    auto add = make_synthetic_generator(name, pgm_options(8));
    auto rep = make_synthetic_generator(name, pgm_options(8, "replace"));
    SeededRandom n1(1), n2(1);
    add->fit(t, box, {1.0, 1e-9}, n1);
    rep->fit(t, box, {1.0, 1e-9}, n2);
    const nlohmann::json a = add->privacy_record(), r = rep->privacy_record();
    EXPECT_EQ(a.at("marginal_l2_sensitivity").get<double>(), 1.0) << name;
    EXPECT_DOUBLE_EQ(r.at("marginal_l2_sensitivity").get<double>(), std::sqrt(2.0)) << name;
    EXPECT_EQ(r.at("neighbors"), "replace one record, n public") << name;
    EXPECT_NEAR(r.at("budget_split").at("total_rho").get<double>(), r.at("rho").get<double>(),
                1e-12 * r.at("rho").get<double>());
    if (name == "mst") {
      EXPECT_DOUBLE_EQ(r.at("one_way_sigma").get<double>(), std::sqrt(2.0) * a.at("one_way_sigma").get<double>());
      EXPECT_EQ(r.at("score_sensitivity").get<double>(), 2.0);
    } else {
      EXPECT_DOUBLE_EQ(r.at("quality_sensitivity").get<double>(), 2 * a.at("quality_sensitivity").get<double>());
      EXPECT_DOUBLE_EQ(r.at("rounds")[0].at("sigma").get<double>(),
                       std::sqrt(2.0) * a.at("rounds")[0].at("sigma").get<double>());
    }
  }
}

template <typename F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(MstAim, SizeRefusalsComeBeforeAllocation) {
  // 1000 attributes with 65535 bins: a spanning tree would need 999 x 65535^2 = 4.3e12 cells,
  // which could not be allocated; the refusal names the size.
  const DenseMatrix wide = DenseMatrix::Constant(2, 1000, 0.5f);
  MstOptions mo;
  mo.bins = 65535;
  MstGenerator mst(mo);
  SeededRandom noise(1);
  std::string msg = usage_error([&] { mst.fit(wide, TableBox::uniform(1000, 0, 1), {1.0, 1e-9}, noise); });
  EXPECT_NE(msg.find("needs 4290"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_cells"), std::string::npos) << msg;
  // A bound below any tree of 4 attributes x 8 bins (3 x 64 cells).
  mo.bins = 8;
  mo.max_cells = 100;
  MstGenerator small(mo);
  const DenseMatrix t = chain_table(100, 4, 1);
  msg = usage_error([&] { small.fit(t, TableBox::uniform(4, 0, 1), {1.0, 1e-9}, noise); });
  EXPECT_NE(msg.find("needs 192"), std::string::npos) << msg;
  // AIM: the initial model of 4 one-way marginals (32 cells) above a bound of 20.
  AimOptions ao;
  ao.bins = 8;
  ao.max_cells = 20;
  AimGenerator aim(ao);
  msg = usage_error([&] { aim.fit(t, TableBox::uniform(4, 0, 1), {1.0, 1e-9}, noise); });
  EXPECT_NE(msg.find("initial model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs 32"), std::string::npos) << msg;
  EXPECT_THROW(aim.sample(10, 1), UsageError);  // nothing was fitted
  // A bound that fits the one-way model but no 3-way candidate: AIM runs on smaller cliques.
  ao.max_cells = 200;
  AimGenerator aim2(ao);
  aim2.fit(t, TableBox::uniform(4, 0, 1), {1.0, 1e-9}, noise);
  EXPECT_LE(aim2.privacy_record().at("model_cells").get<double>(), 200.0);
}

TEST(MstAim, BadSettingsAreRefusedWithTheirReason) {
  const DenseMatrix t = chain_table(100, 4, 1);
  const TableBox box = TableBox::uniform(4, 0, 1);
  SeededRandom noise(1);
  AimOptions ao;
  ao.workload = {{0, 1}, {2, 7}};
  AimGenerator aim(ao);
  std::string msg = usage_error([&] { aim.fit(t, box, {1.0, 1e-9}, noise); });
  EXPECT_NE(msg.find("workload clique {2, 7} names attribute 7"), std::string::npos) << msg;
  for (const std::string name : {"mst", "aim"}) {
    auto g = make_synthetic_generator(name);
    for (const double delta : {0.0, 1.0, -0.5}) {
      msg = usage_error([&] { g->fit(t, box, {1.0, delta}, noise); });
      EXPECT_NE(msg.find("delta"), std::string::npos) << name << ": " << msg;
    }
    for (const double eps : {0.0, -1.0}) {
      msg = usage_error([&] { g->fit(t, box, {eps, 1e-9}, noise); });
      EXPECT_NE(msg.find("epsilon"), std::string::npos) << name << ": " << msg;
    }
    msg = usage_error([&] { g->sample(0, 1); });
    EXPECT_NE(msg.find("at least 1 row"), std::string::npos) << msg;
  }
  msg = usage_error([&] { make_synthetic_generator("mst", pgm_options(16, "swap"))->fit(t, box, {1.0, 1e-9}, noise); });
  EXPECT_NE(msg.find("add-remove or replace"), std::string::npos) << msg;
}

}  // namespace
}  // namespace privrace::baselines
