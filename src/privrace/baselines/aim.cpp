#include "privrace/baselines/aim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numbers>
#include <string>

#include "privrace/baselines/mst.hpp"
#include "privrace/core/error.hpp"

namespace privrace::baselines {
namespace aim_detail {

std::string text(const pgm::Clique& c) {
  std::string s = "{";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::to_string(c[i]);
  return s + "}";
}

// All k-subsets of 0..d-1.
void k_subsets(int d, int k, int start, pgm::Clique& cur, std::vector<pgm::Clique>& out) {
  if (static_cast<int>(cur.size()) == k) {
    out.push_back(cur);
    return;
  }
  for (int i = start; i < d; ++i) {
    cur.push_back(i);
    k_subsets(d, k, i + 1, cur, out);
    cur.pop_back();
  }
}

}  // namespace aim_detail

void AimGenerator::fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy,
                       RandomSource& noise) {
  using aim_detail::text;
  const auto shape = begin_fit(table, box, privacy, opt_.bins);
  const std::size_t n = shape.first, d = shape.second;
  selected_.clear();
  if (!(opt_.alpha > 0 && opt_.alpha < 1)) throw UsageError("aim: alpha must be in (0, 1)");
  if (opt_.rounds_per_attribute < 1) throw UsageError("aim: rounds_per_attribute must be at least 1");
  if (opt_.round_iterations < 1 || opt_.final_iterations < 1) throw UsageError("aim: iterations must be at least 1");
  const auto [l2, score_sens] = marginal_sensitivities(opt_.neighbors, name());
  const std::vector<int> domain(d, opt_.bins);
  // The workload, checked.
  std::vector<pgm::Clique> workload = opt_.workload;
  if (workload.empty()) {
    if (opt_.degree < 1) throw UsageError("aim: degree must be at least 1");
    pgm::Clique cur;
    aim_detail::k_subsets(static_cast<int>(d), std::min(opt_.degree, static_cast<int>(d)), 0, cur, workload);
  }
  for (pgm::Clique& w : workload) {
    if (w.empty()) throw UsageError("aim: the workload has an empty clique; expected attribute indices");
    for (const int a : w)
      if (a < 0 || static_cast<std::size_t>(a) >= d)
        throw UsageError("aim: workload clique " + text(w) + " names attribute " + std::to_string(a) +
                         "; the table has " + std::to_string(d) + " attributes (expected indices 0.." +
                         std::to_string(d - 1) + ")");
    std::sort(w.begin(), w.end());
    if (std::adjacent_find(w.begin(), w.end()) != w.end())
      throw UsageError("aim: workload clique " + text(w) + " repeats an attribute");
  }
  // Size of the initial model, before anything is allocated.
  const double initial_cells = static_cast<double>(d) * opt_.bins;
  if (!(opt_.max_cells >= initial_cells))
    throw UsageError("aim: the initial model (the one-way marginals of " + std::to_string(d) + " attributes, " +
                     std::to_string(opt_.bins) + " bins) needs " + std::to_string(initial_cells) +
                     " cells; max_cells is " + std::to_string(opt_.max_cells) + " (expected at least that many)");
  // Candidates: the workload's downward closure with weights; those larger than the bound can
  // never be measured and are dropped before their tables exist.
  std::map<pgm::Clique, double> weight;
  for (const pgm::Clique& w : workload) {
    const std::size_t k = w.size();
    for (std::uint64_t mask = 1; mask < (std::uint64_t{1} << k); ++mask) {
      pgm::Clique r;
      for (std::size_t i = 0; i < k; ++i)
        if (mask >> i & 1) r.push_back(w[i]);
      weight.emplace(r, 0.0);
    }
  }
  for (auto& [r, wr] : weight)
    for (const pgm::Clique& s : workload) {
      std::size_t common = 0;
      for (const int a : r) common += std::binary_search(s.begin(), s.end(), a);
      wr += static_cast<double>(common);
    }
  std::vector<pgm::Clique> cands;
  std::vector<double> cand_w;
  for (const auto& [r, wr] : weight)
    if (pgm::clique_cells(r, domain) <= opt_.max_cells) {
      cands.push_back(r);
      cand_w.push_back(wr);
    }
  const double max_w = *std::max_element(cand_w.begin(), cand_w.end());
  const double quality_sens = score_sens * max_w;

  const std::vector<std::uint16_t> codes = pgm::encode_table(table, box, opt_.bins);
  std::map<pgm::Clique, std::vector<double>> data_cache;
  auto data_of = [&](const pgm::Clique& r) -> const std::vector<double>& {
    auto it = data_cache.find(r);
    if (it == data_cache.end()) it = data_cache.emplace(r, pgm::data_marginal(codes, n, r, domain)).first;
    return it->second;
  };
  for (const pgm::Clique& r : cands) data_of(r);

  const double rho = pgm::zcdp_rho(privacy.epsilon, privacy.delta);
  const double T = static_cast<double>(opt_.rounds_per_attribute) * static_cast<double>(d);
  const double alpha = opt_.alpha;
  double sigma = l2 * std::sqrt(T / (2 * alpha * rho));
  double eps_t = std::sqrt(8 * (1 - alpha) * rho / T);
  const double sqrt2pi = std::sqrt(2.0 / std::numbers::pi);

  // Initial one-way measurements.
  std::vector<pgm::Measurement> ms;
  for (std::size_t j = 0; j < d; ++j) ms.push_back(pgm::measure(codes, n, {static_cast<int>(j)}, domain, sigma, noise));
  const double rho_one_way = static_cast<double>(d) * l2 * l2 / (2 * sigma * sigma);
  double rho_used = rho_one_way;
  pgm::EstimationOptions round_opt;
  round_opt.iterations = opt_.round_iterations;
  round_opt.tolerance = 1e-4;  // a round's model only guides the next selection
  auto t_est = std::chrono::steady_clock::now();
  double est_seconds = 0;
  pgm::GraphicalModel model = pgm::estimate(domain, ms, round_opt);
  est_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_est).count();
  std::vector<pgm::Clique> measured;
  for (std::size_t j = 0; j < d; ++j) measured.push_back({static_cast<int>(j)});

  nlohmann::json rounds = nlohmann::json::array();
  double rho_select = 0, rho_measure = 0;
  int annealed = 0;
  std::vector<double> quality(cands.size());
  std::vector<char> eligible(cands.size());
  for (int t = 1; rho_used < rho; ++t) {
    const double remaining = rho - rho_used;
    bool last = false;
    if (remaining <= 2 * (l2 * l2 / (2 * sigma * sigma) + eps_t * eps_t / 8)) {
      sigma = l2 * std::sqrt(1 / (2 * alpha * remaining));
      eps_t = std::sqrt(8 * (1 - alpha) * remaining);
      last = true;
    }
    // Eligible candidates: inside the current tree, or a tree within the annealed size bound.
    const double limit = rho_used / rho * opt_.max_cells;
    std::vector<std::size_t> idx;
    model.prepare_conditionals();  // read by every candidate's marginal below
#pragma omp parallel for schedule(dynamic, 1)
    for (std::ptrdiff_t c = 0; c < static_cast<std::ptrdiff_t>(cands.size()); ++c) {
      const auto ci = static_cast<std::size_t>(c);
      bool ok = model.tree().containing(cands[ci]) >= 0;
      if (!ok) {
        std::vector<pgm::Clique> with = measured;
        with.push_back(cands[ci]);
        ok = pgm::JunctionTree::size_of(with, domain) <= limit;
      }
      if (ok) {
        // (Nothing may escape the parallel loop: a model marginal too large to compute, which
        // depends on the model only, makes the candidate ineligible this round.)
        try {
          const std::vector<double> est = model.marginal(cands[ci]);
          const std::vector<double>& dat = data_cache.at(cands[ci]);
          double l1 = 0;
          for (std::size_t k = 0; k < est.size(); ++k) l1 += std::abs(dat[k] - model.total() * est[k]);
          quality[ci] = cand_w[ci] * (l1 - sqrt2pi * sigma * static_cast<double>(est.size()));
        } catch (const std::exception&) {
          ok = false;
        }
      }
      eligible[ci] = ok;
    }
    std::vector<double> qs;
    for (std::size_t c = 0; c < cands.size(); ++c)
      if (eligible[c]) {
        idx.push_back(c);
        qs.push_back(quality[c]);
      }
    const std::size_t pick = idx[pgm::exponential_mechanism(qs, eps_t, quality_sens, noise)];
    const pgm::Clique& r = cands[pick];
    const std::vector<double> before = model.marginal(r);
    ms.push_back(pgm::measure(codes, n, r, domain, sigma, noise));
    const double rho_m = l2 * l2 / (2 * sigma * sigma), rho_s = eps_t * eps_t / 8;
    rho_used = last ? rho : rho_used + rho_m + rho_s;
    rho_select += rho_s;
    rho_measure += rho_m;
    selected_.push_back(r);
    if (std::find(measured.begin(), measured.end(), r) == measured.end()) measured.push_back(r);
    t_est = std::chrono::steady_clock::now();
    model = pgm::estimate(domain, ms, round_opt, &model);
    est_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_est).count();
    const std::vector<double> after = model.marginal(r);
    double moved = 0;
    for (std::size_t k = 0; k < after.size(); ++k) moved += std::abs(after[k] - before[k]) * model.total();
    const double threshold = sqrt2pi * sigma * static_cast<double>(after.size());
    rounds.push_back({{"round", t},
                      {"clique", r},
                      {"sigma", sigma},
                      {"epsilon", eps_t},
                      {"rho_measure", rho_m},
                      {"rho_select", rho_s},
                      {"candidates", idx.size()},
                      {"pgm_iterations", model.last_iterations},
                      {"pgm_stop", model.last_stop},
                      {"model_cells", pgm::JunctionTree::size_of(measured, domain)},
                      {"last", last}});
    if (last) break;
    if (moved <= threshold) {
      sigma /= 2;
      eps_t *= 2;
      ++annealed;
    }
  }
  pgm::EstimationOptions final_opt;
  final_opt.iterations = opt_.final_iterations;
  final_opt.tolerance = 1e-8;
  t_est = std::chrono::steady_clock::now();
  model_ = std::make_unique<pgm::GraphicalModel>(pgm::estimate(domain, ms, final_opt, &model));
  const double final_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_est).count();
  est_seconds += final_seconds;
  box_ = box;
  bins_ = opt_.bins;
  nlohmann::json wl = nlohmann::json::array();
  for (const pgm::Clique& w : workload) wl.push_back(w);
  record_ = {{"generator", name()},
             {"epsilon", privacy.epsilon},
             {"delta", privacy.delta},
             {"rho", rho},
             {"accounting", "rho-zCDP; epsilon = rho + 2 sqrt(rho log(1/delta))"},
             {"neighbors", opt_.neighbors == "replace" ? "replace one record, n public" : "add or remove one record"},
             {"marginal_l2_sensitivity", l2},
             {"quality_sensitivity", quality_sens},
             {"budget_split",
              {{"one_way_rho", rho_one_way},
               {"selection_rho", rho_select},
               {"measurement_rho", rho_measure},
               {"total_rho", rho_one_way + rho_select + rho_measure},
               {"alpha", alpha},
               {"T", T}}},
             {"rounds", rounds},
             {"annealing_steps", annealed},
             {"noise", "discrete Gaussian on counts (sigma^2 rounded up)"},
             {"workload_cliques", workload.size()},
             {"workload", wl.size() <= 200 ? wl : nlohmann::json("(" + std::to_string(wl.size()) + " cliques)")},
             {"candidates", cands.size()},
             {"max_cells", opt_.max_cells},
             {"model_cells", pgm::JunctionTree::size_of(measured, domain)},
             {"bins", opt_.bins},
             {"discretisation", "equal-width bins over the public box (the paper compresses domains instead)"},
             {"estimated_total", model_->total()},
             {"pgm_seconds", est_seconds},
             {"final_pgm_seconds", final_seconds},
             {"final_pgm_iterations", model_->last_iterations},
             {"final_pgm_stop", model_->last_stop},
             {"box", box.to_json()}};
}

}  // namespace privrace::baselines
