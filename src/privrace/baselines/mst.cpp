#include "privrace/baselines/mst.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>

#include "privrace/core/error.hpp"

namespace privrace::baselines {

std::pair<double, double> marginal_sensitivities(const std::string& neighbors, const std::string& generator) {
  if (neighbors == "add-remove") return {1.0, 1.0};
  if (neighbors == "replace") return {std::sqrt(2.0), 2.0};
  throw UsageError(generator + ": neighbors '" + neighbors + "' is unknown; expected add-remove or replace");
}

namespace {

// The tree's edge scores: the L1 error of the one-way model `indep` on each pair's two-way marginal.
std::vector<double> pair_scores(const std::vector<std::uint16_t>& codes, std::size_t n, const std::vector<int>& domain,
                                const pgm::GraphicalModel& indep, const std::vector<std::pair<int, int>>& pairs) {
  std::vector<double> score(pairs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::ptrdiff_t p = 0; p < static_cast<std::ptrdiff_t>(pairs.size()); ++p) {
    const auto [i, j] = pairs[static_cast<std::size_t>(p)];
    const pgm::Clique c{i, j};
    const std::vector<double> data = pgm::data_marginal(codes, n, c, domain);
    const std::vector<double> est = indep.marginal(c);
    double l1 = 0;
    for (std::size_t k = 0; k < data.size(); ++k) l1 += std::abs(data[k] - indep.total() * est[k]);
    score[static_cast<std::size_t>(p)] = l1;
  }
  return score;
}

// Kruskal with private choices: d - 1 edges appended to `edges`, each picked by the exponential
// mechanism (eps_edge, sensitivity score_sens) among the pairs that join two components.
void private_spanning_tree(const std::vector<std::pair<int, int>>& pairs, const std::vector<double>& score, std::size_t d,
                           double eps_edge, double score_sens, RandomSource& noise, std::vector<std::pair<int, int>>& edges) {
  std::vector<std::size_t> comp(d);
  std::iota(comp.begin(), comp.end(), std::size_t{0});
  auto find = [&](std::size_t x) {
    while (comp[x] != x) x = comp[x] = comp[comp[x]];
    return x;
  };
  for (std::size_t step = 0; step + 1 < d; ++step) {
    std::vector<std::size_t> cand;
    std::vector<double> cs;
    for (std::size_t p = 0; p < pairs.size(); ++p)
      if (find(static_cast<std::size_t>(pairs[p].first)) != find(static_cast<std::size_t>(pairs[p].second))) {
        cand.push_back(p);
        cs.push_back(score[p]);
      }
    const std::size_t pick = cand[pgm::exponential_mechanism(cs, eps_edge, score_sens, noise)];
    edges.push_back(pairs[pick]);
    comp[find(static_cast<std::size_t>(pairs[pick].first))] = find(static_cast<std::size_t>(pairs[pick].second));
  }
}

}  // namespace

void MstGenerator::fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy,
                       RandomSource& noise) {
  const auto shape = begin_fit(table, box, privacy, opt_.bins);
  const std::size_t n = shape.first, d = shape.second;
  edges_.clear();
  if (opt_.iterations < 1) throw UsageError("mst: iterations must be at least 1");
  const auto [l2, score_sens] = marginal_sensitivities(opt_.neighbors, name());
  const double b = opt_.bins;
  const double tree_cells = d > 1 ? static_cast<double>(d - 1) * b * b : b;
  if (!(opt_.max_cells >= tree_cells))
    throw UsageError("mst: a spanning tree of " + std::to_string(d) + " attributes with " + std::to_string(opt_.bins) +
                     " bins needs " + std::to_string(static_cast<double>(tree_cells)) +
                     " cells in its clique tables; max_cells is " + std::to_string(opt_.max_cells) +
                     " (expected at least that many)");
  const std::vector<int> domain(d, opt_.bins);
  const std::vector<std::uint16_t> codes = pgm::encode_table(table, box, opt_.bins);
  const double rho = pgm::zcdp_rho(privacy.epsilon, privacy.delta);
  const double rho_part = d > 1 ? rho / 3 : rho;

  // 1. One-way marginals.
  const double sigma1 = l2 * std::sqrt(static_cast<double>(d) / (2 * rho_part));
  std::vector<pgm::Measurement> ms;
  for (std::size_t j = 0; j < d; ++j)
    ms.push_back(pgm::measure(codes, n, {static_cast<int>(j)}, domain, sigma1, noise));
  double sigma2 = 0, eps_edge = 0;
  if (d > 1) {
    // 2. The tree: L1 errors of the one-way model on every pair, Kruskal with private choices.
    pgm::EstimationOptions eo;
    eo.iterations = opt_.iterations;
    const pgm::GraphicalModel indep = pgm::estimate(domain, ms, eo);
    std::vector<std::pair<int, int>> pairs;
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = i + 1; j < d; ++j) pairs.emplace_back(static_cast<int>(i), static_cast<int>(j));
    const std::vector<double> score = pair_scores(codes, n, domain, indep, pairs);
    eps_edge = std::sqrt(8 * rho_part / static_cast<double>(d - 1));
    private_spanning_tree(pairs, score, d, eps_edge, score_sens, noise, edges_);
    // 3. The tree's two-way marginals.
    sigma2 = l2 * std::sqrt(static_cast<double>(d - 1) / (2 * rho_part));
    for (const auto& [i, j] : edges_) ms.push_back(pgm::measure(codes, n, {i, j}, domain, sigma2, noise));
  }
  // 4. Private-PGM on everything measured.
  pgm::EstimationOptions eo;
  eo.iterations = opt_.iterations;
  const auto t0 = std::chrono::steady_clock::now();
  model_ = std::make_unique<pgm::GraphicalModel>(pgm::estimate(domain, ms, eo));
  const double est_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  box_ = box;
  bins_ = opt_.bins;
  nlohmann::json edges = nlohmann::json::array();
  for (const auto& [i, j] : edges_) edges.push_back({i, j});
  const double rho_sel = d > 1 ? static_cast<double>(d - 1) * eps_edge * eps_edge / 8 : 0.0;
  const double rho_two = d > 1 ? static_cast<double>(d - 1) * l2 * l2 / (2 * sigma2 * sigma2) : 0.0;
  record_ = {{"generator", name()},
             {"epsilon", privacy.epsilon},
             {"delta", privacy.delta},
             {"rho", rho},
             {"accounting", "rho-zCDP; epsilon = rho + 2 sqrt(rho log(1/delta))"},
             {"neighbors", opt_.neighbors == "replace" ? "replace one record, n public" : "add or remove one record"},
             {"marginal_l2_sensitivity", l2},
             {"score_sensitivity", score_sens},
             {"budget_split",
              {{"one_way_rho", d * l2 * l2 / (2 * sigma1 * sigma1)},
               {"selection_rho", rho_sel},
               {"two_way_rho", rho_two},
               {"total_rho", d * l2 * l2 / (2 * sigma1 * sigma1) + rho_sel + rho_two},
               {"parts", d > 1 ? "rho/3 each" : "all of rho to the one marginal"}}},
             {"one_way_sigma", sigma1},
             {"two_way_sigma", sigma2},
             {"selection_epsilon_per_edge", eps_edge},
             {"noise", "discrete Gaussian on counts (sigma^2 rounded up)"},
             {"tree_edges", edges},
             {"bins", opt_.bins},
             {"discretisation", "equal-width bins over the public box (the paper compresses domains instead)"},
             {"estimated_total", model_->total()},
             {"pgm_iterations", model_->last_iterations},
             {"pgm_stop", model_->last_stop},
             {"pgm_seconds", est_seconds},
             {"box", box.to_json()}};
}

}  // namespace privrace::baselines
