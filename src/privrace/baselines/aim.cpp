#include "privrace/baselines/aim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numbers>
#include <string>

#include "privrace/baselines/mst.hpp"
#include "privrace/core/clock.hpp"
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

// The workload, checked: the options' cliques, or every min(degree, d)-way marginal; each
// clique sorted, of attributes of the table, none repeated.
std::vector<pgm::Clique> checked_workload(const AimOptions& opt, std::size_t d) {
  std::vector<pgm::Clique> workload = opt.workload;
  if (workload.empty()) {
    if (opt.degree < 1) throw UsageError("aim: degree must be at least 1");
    pgm::Clique cur;
    k_subsets(static_cast<int>(d), std::min(opt.degree, static_cast<int>(d)), 0, cur, workload);
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
  return workload;
}

// Candidates: the workload's downward closure with weights (w_r: the attributes r shares with
// each workload clique, summed); those larger than the bound can never be measured and are
// dropped before their tables exist.
Candidates candidates_of(const std::vector<pgm::Clique>& workload, const std::vector<int>& domain, double max_cells) {
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
  // sum_s |r intersect s| = sum_{a in r} #{s : a in s}: integer sums, exact in doubles (the same
  // value as summing |r intersect s| over the workload, in |r| additions instead of |workload|).
  std::vector<double> containing(domain.size(), 0.0);
  for (const pgm::Clique& s : workload)
    for (const int a : s) containing[static_cast<std::size_t>(a)] += 1.0;
  for (auto& [r, wr] : weight)
    for (const int a : r) wr += containing[static_cast<std::size_t>(a)];
  Candidates cands;
  for (const auto& [r, wr] : weight)
    if (pgm::clique_cells(r, domain) <= max_cells) {
      cands.cliques.push_back(r);
      cands.weights.push_back(wr);
    }
  return cands;
}

void DataMarginals::count(const Candidates& cands, const std::vector<char>& needed) {
  std::vector<std::size_t> todo;
  for (std::size_t c = 0; c < needed.size(); ++c)
    if (needed[c] && !done_[c]) todo.push_back(c);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(todo.size()); ++t) {
    const std::size_t c = todo[static_cast<std::size_t>(t)];
    // pgm::data_marginal's counts, kept as 32-bit integers (half the memory; the same doubles).
    const pgm::Clique& r = cands.cliques[c];
    std::vector<std::uint32_t>& out = table_[c];
    out.assign(static_cast<std::size_t>(pgm::clique_cells(r, domain_)), 0u);
    std::vector<std::uint32_t> key(n_, 0u);
    for (const int a : r) {
      const auto b = static_cast<std::uint32_t>(domain_[static_cast<std::size_t>(a)]);
      const std::uint16_t* col = &codes_[static_cast<std::size_t>(a) * n_];
      for (std::size_t i = 0; i < n_; ++i) key[i] = key[i] * b + col[i];
    }
    for (const std::uint32_t k : key) ++out[k];
  }
  for (const std::size_t c : todo) done_[c] = 1;
}

// A round's choice: the eligible candidates (inside the current tree, or a tree within the
// annealed size bound `limit`) and their qualities, in candidate order.
struct Eligible {
  std::vector<std::size_t> index;
  std::vector<double> quality;
};

Eligible eligible_candidates(pgm::GraphicalModel& model, const Candidates& cands, DataMarginals& data,
                             const std::vector<pgm::Clique>& measured, const std::vector<int>& domain, double limit,
                             double sigma) {
  const double sqrt2pi = std::sqrt(2.0 / std::numbers::pi);
  const std::size_t count = cands.cliques.size();
  std::vector<double> quality(count);
  std::vector<char> eligible(count);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::ptrdiff_t c = 0; c < static_cast<std::ptrdiff_t>(count); ++c) {
    const auto ci = static_cast<std::size_t>(c);
    const pgm::Clique& r = cands.cliques[ci];
    bool ok = model.tree().containing(r) >= 0;
    if (!ok) ok = pgm::JunctionTree::size_of(measured, domain, &r) <= limit;  // the model with r measured too
    eligible[ci] = ok;
  }
  // The data marginals of the eligible candidates not counted before (a candidate never
  // eligible is never counted).
  data.count(cands, eligible);
  model.prepare_conditionals();  // read by every candidate's marginal below
  std::vector<pgm::Clique> sets;
  std::vector<std::size_t> of_set;
  for (std::size_t c = 0; c < count; ++c)
    if (eligible[c]) {
      sets.push_back(cands.cliques[c]);
      of_set.push_back(c);
    }
  // (Nothing may escape the parallel loop: a model marginal too large to compute, which depends
  // on the model only, makes the candidate ineligible this round.)
  model.for_each_marginal(sets, [&](std::size_t i, const std::vector<double>* est) {
    const std::size_t ci = of_set[i];
    if (!est) {
      eligible[ci] = 0;
      return;
    }
    const std::vector<std::uint32_t>& dat = data.of(ci);
    double l1 = 0;
    for (std::size_t k = 0; k < est->size(); ++k) l1 += std::abs(static_cast<double>(dat[k]) - model.total() * (*est)[k]);
    quality[ci] = cands.weights[ci] * (l1 - sqrt2pi * sigma * static_cast<double>(est->size()));
  });
  Eligible out;
  for (std::size_t c = 0; c < count; ++c)
    if (eligible[c]) {
      out.index.push_back(c);
      out.quality.push_back(quality[c]);
    }
  return out;
}

// The rounds' inputs: the encoded table, its candidates' data marginals and the budget's constants.
struct RoundInputs {
  const std::vector<std::uint16_t>& codes;
  std::size_t n;
  const std::vector<int>& domain;
  const Candidates& cands;
  DataMarginals& data;
  double rho, alpha, l2, quality_sens, max_cells;
};

// What the rounds carry from one to the next and report: the budget, the measurements and the
// model fit to them.
struct RoundState {
  double sigma = 0, eps_t = 0, rho_used = 0;
  double rho_select = 0, rho_measure = 0;
  int annealed = 0;
  std::vector<pgm::Measurement> ms;
  std::vector<pgm::Clique> measured;
  pgm::GraphicalModel model;
  double est_seconds = 0;
  nlohmann::json rounds = nlohmann::json::array();
};

// The rounds' start: every one-way marginal measured with noise `sigma`, and the model fit to
// them; `eps_t`: the first round's selection budget.
RoundState one_way_start(const std::vector<std::uint16_t>& codes, std::size_t n, const std::vector<int>& domain, double sigma,
                         double eps_t, const pgm::EstimationOptions& round_opt, RandomSource& noise) {
  RoundState s;
  s.sigma = sigma;
  s.eps_t = eps_t;
  for (std::size_t j = 0; j < domain.size(); ++j)
    s.ms.push_back(pgm::measure(codes, n, {static_cast<int>(j)}, domain, s.sigma, noise));
  const auto t_est = std::chrono::steady_clock::now();
  s.model = pgm::estimate(domain, s.ms, round_opt);
  s.est_seconds += seconds_since(t_est);
  for (std::size_t j = 0; j < domain.size(); ++j) s.measured.push_back({static_cast<int>(j)});
  return s;
}

// One round t: when the budget left pays for at most two more rounds, this one spends it all;
// pick the worst-answered eligible candidate (exponential mechanism), measure it (Gaussian
// mechanism) and refit; anneal when the refit moved its marginal by at most the noise's
// expected size. Returns whether it was the last round.
bool aim_round(int t, const RoundInputs& in, const pgm::EstimationOptions& round_opt, RandomSource& noise, RoundState& s,
               std::vector<pgm::Clique>& selected) {
  const double sqrt2pi = std::sqrt(2.0 / std::numbers::pi);
  const double l2 = in.l2, remaining = in.rho - s.rho_used;
  bool last = false;
  if (remaining <= 2 * (l2 * l2 / (2 * s.sigma * s.sigma) + s.eps_t * s.eps_t / 8)) {
    s.sigma = l2 * std::sqrt(1 / (2 * in.alpha * remaining));
    s.eps_t = std::sqrt(8 * (1 - in.alpha) * remaining);
    last = true;
  }
  const double limit = s.rho_used / in.rho * in.max_cells;
  const Eligible el = eligible_candidates(s.model, in.cands, in.data, s.measured, in.domain, limit, s.sigma);
  const std::size_t pick = el.index[pgm::exponential_mechanism(el.quality, s.eps_t, in.quality_sens, noise)];
  const pgm::Clique& r = in.cands.cliques[pick];
  const std::vector<double> before = s.model.marginal(r);
  s.ms.push_back(pgm::measure(in.codes, in.n, r, in.domain, s.sigma, noise));
  const double rho_m = l2 * l2 / (2 * s.sigma * s.sigma), rho_s = s.eps_t * s.eps_t / 8;
  s.rho_used = last ? in.rho : s.rho_used + rho_m + rho_s;
  s.rho_select += rho_s;
  s.rho_measure += rho_m;
  selected.push_back(r);
  if (std::find(s.measured.begin(), s.measured.end(), r) == s.measured.end()) s.measured.push_back(r);
  const auto t_est = std::chrono::steady_clock::now();
  s.model = pgm::estimate(in.domain, s.ms, round_opt, &s.model);
  s.est_seconds += seconds_since(t_est);
  const std::vector<double> after = s.model.marginal(r);
  double moved = 0;
  for (std::size_t k = 0; k < after.size(); ++k) moved += std::abs(after[k] - before[k]) * s.model.total();
  const double threshold = sqrt2pi * s.sigma * static_cast<double>(after.size());
  s.rounds.push_back({{"round", t},
                      {"clique", r},
                      {"sigma", s.sigma},
                      {"epsilon", s.eps_t},
                      {"rho_measure", rho_m},
                      {"rho_select", rho_s},
                      {"candidates", el.index.size()},
                      {"pgm_iterations", s.model.last_iterations},
                      {"pgm_stop", s.model.last_stop},
                      {"model_cells", pgm::JunctionTree::size_of(s.measured, in.domain)},
                      {"last", last}});
  if (last) return true;
  if (moved <= threshold) {
    s.sigma /= 2;
    s.eps_t *= 2;
    ++s.annealed;
  }
  return false;
}

}  // namespace aim_detail

void AimGenerator::fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy,
                       RandomSource& noise) {
  const auto shape = begin_fit(table, box, privacy, opt_.bins);
  const std::size_t n = shape.first, d = shape.second;
  selected_.clear();
  if (!(opt_.alpha > 0 && opt_.alpha < 1)) throw UsageError("aim: alpha must be in (0, 1)");
  if (opt_.rounds_per_attribute < 1) throw UsageError("aim: rounds_per_attribute must be at least 1");
  if (opt_.round_iterations < 1 || opt_.final_iterations < 1) throw UsageError("aim: iterations must be at least 1");
  const auto [l2, score_sens] = marginal_sensitivities(opt_.neighbors, name());
  const std::vector<int> domain(d, opt_.bins);
  const std::vector<pgm::Clique> workload = aim_detail::checked_workload(opt_, d);
  // Size of the initial model, before anything is allocated.
  const double initial_cells = static_cast<double>(d) * opt_.bins;
  if (!(opt_.max_cells >= initial_cells))
    throw UsageError("aim: the initial model (the one-way marginals of " + std::to_string(d) + " attributes, " +
                     std::to_string(opt_.bins) + " bins) needs " + std::to_string(initial_cells) +
                     " cells; max_cells is " + std::to_string(opt_.max_cells) + " (expected at least that many)");
  const aim_detail::Candidates cands = aim_detail::candidates_of(workload, domain, opt_.max_cells);
  const double max_w = *std::max_element(cands.weights.begin(), cands.weights.end());
  const double quality_sens = score_sens * max_w;

  const std::vector<std::uint16_t> codes = pgm::encode_table(table, box, opt_.bins);
  aim_detail::DataMarginals data(codes, n, domain, cands.cliques.size());

  const double rho = pgm::zcdp_rho(privacy.epsilon, privacy.delta);
  const double T = static_cast<double>(opt_.rounds_per_attribute) * static_cast<double>(d);
  const double alpha = opt_.alpha;
  pgm::EstimationOptions round_opt;
  round_opt.iterations = opt_.round_iterations;
  round_opt.tolerance = 1e-4;  // a round's model only guides the next selection
  aim_detail::RoundState s = aim_detail::one_way_start(codes, n, domain, l2 * std::sqrt(T / (2 * alpha * rho)),
                                                       std::sqrt(8 * (1 - alpha) * rho / T), round_opt, noise);
  const double rho_one_way = static_cast<double>(d) * l2 * l2 / (2 * s.sigma * s.sigma);
  s.rho_used = rho_one_way;

  const aim_detail::RoundInputs in{codes, n, domain, cands, data, rho, alpha, l2, quality_sens, opt_.max_cells};
  for (int t = 1; s.rho_used < rho; ++t)
    if (aim_detail::aim_round(t, in, round_opt, noise, s, selected_)) break;
  pgm::EstimationOptions final_opt;
  final_opt.iterations = opt_.final_iterations;
  final_opt.tolerance = 1e-8;
  const auto t_est = std::chrono::steady_clock::now();
  model_ = std::make_unique<pgm::GraphicalModel>(pgm::estimate(domain, s.ms, final_opt, &s.model));
  const double final_seconds = seconds_since(t_est);
  s.est_seconds += final_seconds;
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
               {"selection_rho", s.rho_select},
               {"measurement_rho", s.rho_measure},
               {"total_rho", rho_one_way + s.rho_select + s.rho_measure},
               {"alpha", alpha},
               {"T", T}}},
             {"rounds", s.rounds},
             {"annealing_steps", s.annealed},
             {"noise", "discrete Gaussian on counts (sigma^2 rounded up)"},
             {"workload_cliques", workload.size()},
             {"workload", wl.size() <= 200 ? wl : nlohmann::json("(" + std::to_string(wl.size()) + " cliques)")},
             {"candidates", cands.cliques.size()},
             {"max_cells", opt_.max_cells},
             {"model_cells", pgm::JunctionTree::size_of(s.measured, domain)},
             {"bins", opt_.bins},
             {"discretisation", "equal-width bins over the public box (the paper compresses domains instead)"},
             {"estimated_total", model_->total()},
             {"pgm_seconds", s.est_seconds},
             {"final_pgm_seconds", final_seconds},
             {"final_pgm_iterations", model_->last_iterations},
             {"final_pgm_stop", model_->last_stop},
             {"box", box.to_json()}};
}

}  // namespace privrace::baselines
