// A run's summary: the mean and sd of the primary metric per method, parameters and epsilon,
// the table printed at the end of a run, the build and query times at each method's best
// setting, and the files written from them (summary.hpp).
#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "results.hpp"

namespace fs = std::filesystem;

namespace privrace::experiments {

namespace {

struct Aggregate {
  std::string label;
  json params;
  json epsilon;  // number or null
  std::vector<double> values;
  double mean = NAN, sd = NAN;
  bool best = false;
  std::vector<std::string> keys;
};

std::string fmt(double v) {
  if (std::isnan(v)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

// Mean and sample sd of the primary metric for every (label, params, epsilon); with
// best_over_grid, the grid point with the best mean at each (label, epsilon) is marked.
std::vector<Aggregate> aggregate(const ExperimentConfig& cfg, const std::vector<json>& records, bool lower_better) {
  std::map<std::string, Aggregate> groups;
  std::vector<std::string> order;
  for (const auto& r : records) {
    const std::string id = r.value("label", "") + "|" + r.value("params", json::object()).dump() + "|" +
                           r.value("epsilon", json()).dump();
    auto [it, fresh] = groups.try_emplace(id);
    if (fresh) {
      order.push_back(id);
      it->second.label = r.value("label", "");
      it->second.params = r.value("params", json::object());
      it->second.epsilon = r.value("epsilon", json());
    }
    const json m = r.value("metrics", json::object());
    if (m.contains(cfg.metric) && m.at(cfg.metric).is_number()) it->second.values.push_back(m.at(cfg.metric).get<double>());
    it->second.keys.push_back(r.value("key", ""));
  }
  std::vector<Aggregate> out;
  for (const auto& id : order) {
    Aggregate a = groups.at(id);
    if (!a.values.empty()) {
      double s = 0;
      for (const double v : a.values) s += v;
      a.mean = s / static_cast<double>(a.values.size());
      double ss = 0;
      for (const double v : a.values) ss += (v - a.mean) * (v - a.mean);
      a.sd = a.values.size() > 1 ? std::sqrt(ss / static_cast<double>(a.values.size() - 1)) : 0.0;
    }
    out.push_back(std::move(a));
  }
  std::map<std::string, std::size_t> best;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::string cell = out[i].label + "|" + out[i].epsilon.dump();
    if (std::isnan(out[i].mean)) continue;
    const auto it = best.find(cell);
    if (it == best.end() || (lower_better ? out[i].mean < out[it->second].mean : out[i].mean > out[it->second].mean))
      best[cell] = i;
  }
  if (cfg.selection == "best_over_grid")
    for (const auto& [cell, i] : best) out[i].best = true;
  return out;
}

// The grid parameters that vary in a method's grid, as "rows=100 width=1000".
std::string varying(const ExperimentConfig& cfg, const std::string& label, const json& params) {
  std::string s;
  for (const auto& m : cfg.methods)
    if (m.label == label)
      for (const auto& [k, values] : m.grid)
        if (values.size() > 1 && params.contains(k)) s += (s.empty() ? "" : " ") + k + "=" + params.at(k).dump();
  return s;
}

std::string summary_table(const ExperimentConfig& cfg, const std::vector<Aggregate>& aggs, const json& data_note) {
  std::ostringstream out;
  out << cfg.name << (cfg.quick ? " (quick)" : "") << ": " << cfg.metric << ", mean +- sd over repetitions";
  out << (cfg.selection == "best_over_grid" ? "; best grid point per epsilon (its parameters in [ ])" : "") << "\n";
  out << "data: " << data_note.dump() << "\n";
  std::vector<std::string> labels;
  for (const auto& m : cfg.methods) labels.push_back(m.label);
  std::vector<json> eps;
  for (const auto& a : aggs)
    if (std::find(eps.begin(), eps.end(), a.epsilon) == eps.end()) eps.push_back(a.epsilon);
  std::sort(eps.begin(), eps.end(), [](const json& a, const json& b) {
    if (a.is_null() != b.is_null()) return a.is_null();
    return !a.is_null() && a.get<double>() < b.get<double>();
  });
  const int width = 44;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-10s", "epsilon");
  out << buf;
  for (const auto& l : labels) {
    std::snprintf(buf, sizeof buf, " | %-*s", width, l.c_str());
    out << buf;
  }
  out << "\n" << std::string(10 + labels.size() * (width + 3), '-') << "\n";
  for (const auto& e : eps) {
    std::snprintf(buf, sizeof buf, "%-10s", e.is_null() ? "-" : fmt(e.get<double>()).c_str());
    out << buf;
    for (const auto& l : labels) {
      std::vector<const Aggregate*> here;
      for (const auto& a : aggs)
        if (a.label == l && a.epsilon == e) here.push_back(&a);
      std::string cell;
      if (here.empty()) {
        cell = "";
      } else {
        const Aggregate* pick = here.front();
        if (cfg.selection == "best_over_grid") {
          for (const auto* a : here)
            if (a->best) pick = a;
          cell = fmt(pick->mean) + " +- " + fmt(pick->sd) + " (n=" + std::to_string(pick->values.size()) + ")";
          const std::string v = varying(cfg, l, pick->params);
          if (!v.empty()) cell += " [" + v + "]";
        } else {
          cell = fmt(pick->mean) + " +- " + fmt(pick->sd) +
                 (here.size() > 1 ? " (+" + std::to_string(here.size() - 1) + " grid points in the CSV)" : "");
        }
      }
      std::snprintf(buf, sizeof buf, " | %-*s", width, cell.c_str());
      out << buf;
    }
    out << "\n";
  }
  return out.str();
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Build and per-query time of every method at its best setting (CCS'21 Table 3), one row per
// label. Best setting = the grid point with the best mean primary metric at eps = 1 (Table 3's
// budget); with no eps = 1 cell, the grid point that is best at the most epsilons. Times are
// medians over that setting's records at eps = 1 (every repetition; all its records when it was
// not chosen at eps = 1): build = the epsilon-independent work (hashing, lattice, basis) + one
// cell's noise. A label whose every
// cell was refused (no finite metric) gets a row with the reason and no times.
json timing_table(const ExperimentConfig& cfg, const std::vector<json>& records, const std::vector<Aggregate>& aggs,
                  bool lower_better) {
  const auto better = [&](double a, double b) { return lower_better ? a < b : a > b; };
  json rows = json::array();
  for (const auto& m : cfg.methods) {
    std::vector<const Aggregate*> mine;
    for (const auto& a : aggs)
      if (a.label == m.label && !std::isnan(a.mean)) mine.push_back(&a);
    json row = {{"label", m.label}, {"method", m.name}};
    if (mine.empty()) {
      std::string why = "no finite " + cfg.metric;
      for (const auto& r : records)
        if (r.value("label", "") == m.label && r.value("details", json::object()).contains("refused")) {
          why = "refused: " + r.at("details").at("refused").get<std::string>();
          break;
        }
      bool any = false;
      for (const auto& r : records) any = any || r.value("label", "") == m.label;
      if (!any) continue;  // not run (yet)
      row["note"] = why;
      rows.push_back(row);
      continue;
    }
    const Aggregate* pick = nullptr;
    for (const auto* a : mine)
      if (a->epsilon.is_number() && std::abs(a->epsilon.get<double>() - 1.0) < 1e-9 && (!pick || better(a->mean, pick->mean)))
        pick = a;
    std::string rule = "best mean " + cfg.metric + " at eps = 1";
    if (!pick) {  // count, per grid point, the epsilons at which it is best
      std::map<std::string, const Aggregate*> best_at;  // epsilon -> best aggregate
      for (const auto* a : mine) {
        auto& b = best_at[a->epsilon.dump()];
        if (!b || better(a->mean, b->mean)) b = a;
      }
      std::map<std::string, int> wins;
      for (const auto& [e, a] : best_at) ++wins[a->params.dump()];
      int most = -1;
      for (const auto* a : mine)
        if (wins[a->params.dump()] > most) {
          most = wins[a->params.dump()];
          pick = a;
        }
      rule = m.grid.empty() ? "only setting" : "best " + cfg.metric + " at the most epsilons";
    }
    const bool at_eps1 = pick->epsilon.is_number() && std::abs(pick->epsilon.get<double>() - 1.0) < 1e-9;
    std::vector<double> build, query;
    std::set<long long> rule_rows;
    int threads = 0;
    for (const auto& r : records) {
      if (r.value("label", "") != m.label || r.value("params", json::object()) != pick->params) continue;
      // At eps = 1 only when chosen there: a method whose work depends on eps (R by Corollary 1)
      // is timed at the budget it was chosen for.
      if (at_eps1 && !(r.value("epsilon", json()).is_number() && std::abs(r.at("epsilon").get<double>() - 1.0) < 1e-9))
        continue;
      if (r.contains("build_seconds") && r.at("build_seconds").is_number()) build.push_back(r.at("build_seconds").get<double>());
      if (r.contains("query_seconds_per_query") && r.at("query_seconds_per_query").is_number())
        query.push_back(r.at("query_seconds_per_query").get<double>());
      threads = r.value("threads", threads);
      // A method that picks R itself (race_corollary1) names it in its details.
      if (const json d = r.value("details", json::object()); d.contains("rows_by_rule") && d.at("rows").is_number())
        rule_rows.insert(static_cast<long long>(d.at("rows").get<double>()));
    }
    std::string setting = varying(cfg, m.label, pick->params);
    for (const long long rr : rule_rows) setting += (setting.empty() ? "rows=" : ",") + std::to_string(rr);
    if (!rule_rows.empty()) setting += " (by rule)";
    row["params"] = pick->params;
    row["setting"] = setting;
    row["selected_by"] = rule;
    row["build_seconds"] = build.empty() ? json() : json(median(build));
    row["query_ms"] = query.empty() ? json() : json(1e3 * median(query));
    row["cells"] = build.size();
    row["threads"] = threads;
    if (at_eps1) row[cfg.metric + "_at_eps1"] = pick->mean;
    rows.push_back(row);
  }
  return rows;
}

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num_or_empty(const json& v, const char* format) {
  if (!v.is_number()) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v.get<double>());
  return buf;
}

std::string timing_csv(const ExperimentConfig& cfg, const json& rows) {
  std::string out = "label,method,setting,build_seconds,query_ms,cells,threads," + cfg.metric + "_at_eps1,selected_by,note\n";
  for (const auto& r : rows)
    out += csv_field(r.value("label", "")) + "," + r.value("method", "") + "," + csv_field(r.value("setting", "")) + "," +
           num_or_empty(r.value("build_seconds", json()), "%.6g") + "," + num_or_empty(r.value("query_ms", json()), "%.6g") +
           "," + (r.contains("cells") ? r.at("cells").dump() : "") + "," + (r.contains("threads") ? r.at("threads").dump() : "") +
           "," + num_or_empty(r.value(cfg.metric + "_at_eps1", json()), "%.6g") + "," +
           csv_field(r.value("selected_by", "")) + "," + csv_field(r.value("note", "")) + "\n";
  return out;
}

std::string timing_text(const json& rows) {
  std::ostringstream out;
  out << "build and per-query time at each method's best setting (medians over its eps = 1 cells):\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-28s %-22s %12s %12s  %s\n", "method", "setting", "build (s)", "query (ms)", "note");
  out << buf;
  for (const auto& r : rows) {
    const std::string b = num_or_empty(r.value("build_seconds", json()), "%.4g");
    const std::string q = num_or_empty(r.value("query_ms", json()), "%.4g");
    std::snprintf(buf, sizeof buf, "%-28s %-22s %12s %12s  %s\n", r.value("label", "").c_str(), r.value("setting", "").c_str(),
                  b.empty() ? "-" : b.c_str(), q.empty() ? "-" : q.c_str(), r.value("note", "").c_str());
    out << buf;
  }
  return out.str();
}

}  // namespace

// Unavailable-cell records by method label, in config order: cells and the first reason.
std::vector<UnavailableMethod> unavailable_by_label(const ExperimentConfig& cfg, const std::vector<json>& records) {
  std::vector<UnavailableMethod> out;
  for (const auto& m : cfg.methods) {
    UnavailableMethod u{m.label, m.name, "", 0};
    for (const auto& r : records)
      if (r.value("label", "") == m.label) {
        if (u.cells++ == 0) u.reason = r.value("reason", "");
      }
    if (u.cells > 0) out.push_back(std::move(u));
  }
  return out;
}

void summarise(const ExperimentConfig& cfg, const Task& task, const std::vector<json>& records, json data_note,
               bool print, RunReport& report, const std::vector<json>& unavailable) {
  if (data_note.is_null() && !records.empty()) data_note = records.back().value("data", json());
  if (!records.empty() && records.back().value("stand_in", false)) report.stand_in = true;
  const bool lower_better = task.lower_is_better(cfg.metric);
  const auto aggs = aggregate(cfg, records, lower_better);
  std::set<std::string> best_keys;
  json rows = json::array();
  for (const auto& a : aggs) {
    if (a.best) best_keys.insert(a.keys.begin(), a.keys.end());
    rows.push_back({{"label", a.label}, {"params", a.params}, {"epsilon", a.epsilon}, {"n", a.values.size()},
                    {"mean", std::isnan(a.mean) ? json() : json(a.mean)}, {"sd", std::isnan(a.sd) ? json() : json(a.sd)},
                    {"best_over_grid", a.best}});
  }
  write_file_atomically(report.csv_path, records_to_csv(records, best_keys));
  const json timing = timing_table(cfg, records, aggs, lower_better);
  write_file_atomically(report.timing_path, timing_csv(cfg, timing));
  json summary = {{"config", cfg.name},        {"metric", cfg.metric},   {"selection", cfg.selection},
                  {"quick", cfg.quick},        {"data", data_note},      {"stand_in", report.stand_in},
                  {"lower_is_better", lower_better}, {"rows", rows},
                  {"timing", timing}};
  std::string tables_text;
  const json tables = task.summary_tables(cfg, records, tables_text);
  if (!tables.is_null()) summary["tables"] = tables;
  // Methods with cells that could not run (an optional module missing): tried again by a rerun.
  if (const auto missing = unavailable_by_label(cfg, unavailable); !missing.empty()) {
    json rows_missing = json::array();
    for (const auto& u : missing)
      rows_missing.push_back({{"label", u.label}, {"method", u.method}, {"cells", u.cells}, {"reason", u.reason}});
    summary["unavailable"] = rows_missing;
  }
  write_file_atomically(report.summary_path, summary.dump(2) + "\n");
  report.summary_table = summary_table(cfg, aggs, data_note) + timing_text(timing) + tables_text;
  if (print) {
    std::cout << report.summary_table;
    std::cout << "results: " << report.results_path << " (+ " << fs::path(report.csv_path).filename().string() << ", "
              << fs::path(report.summary_path).filename().string() << ", "
              << fs::path(report.timing_path).filename().string() << ")\n";
  }
}

}  // namespace privrace::experiments
