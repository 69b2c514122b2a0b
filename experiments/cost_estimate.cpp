#include "cost_estimate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <functional>
#include <queue>

#include "privrace/core/error.hpp"

namespace privrace::experiments {

using nlohmann::json;

void CellCostModel::add(const std::string& label, const json& params, double seconds, int threads,
                        Position position, double shared, int shared_threads) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  Point& p = by_label_[label][params.dump()];
  if (shared > 0 && std::isfinite(shared)) {
    shared = std::min(shared, seconds);
    p.shared.add(shared * std::max(shared_threads > 0 ? shared_threads : threads, 1));
    seconds -= shared;
  }
  const double v = seconds * std::max(threads, 1);
  if (position != Position::later) p.first.add(v);
  if (position != Position::first) p.later.add(v);
}

double CellCostModel::Point::group(std::size_t n) const {
  const double f = first.n ? first.value() : later.value();
  const double l = later.n ? later.value() : first.value();
  return n == 0 ? 0.0 : f + static_cast<double>(n - 1) * l;
}

std::size_t CellCostModel::add_records(const std::vector<json>& records) {
  std::size_t used = 0;
  for (const auto& r : records) {
    const auto w = r.find("wall_seconds");
    if (w == r.end() || !w->is_number()) continue;
    const auto f = r.find("first_of_group");
    const Position pos = f == r.end() || !f->is_boolean() ? Position::unknown
                         : f->get<bool>()                 ? Position::first
                                                          : Position::later;
    const auto sh = r.find("shared_work_seconds");
    // A wait for another worker's shared work is priced with that work (shared_work.hpp).
    const double waited = std::clamp(r.value("waited_seconds", 0.0), 0.0, w->get<double>());
    add(r.value("label", ""), r.value("params", json::object()), w->get<double>() - waited, r.value("threads", 1), pos,
        sh != r.end() && sh->is_number() ? sh->get<double>() : 0.0, r.value("shared_work_threads", 0));
    const auto p = r.find("run_prepare_seconds");
    // The task is prepared on every thread of the run: a group's threads times the jobs.
    if (p != r.end() && p->is_number())
      prepare_thread_seconds_ = p->get<double>() * std::max(r.value("threads", 1), 1) * std::max(r.value("jobs", 1), 1);
    ++used;
  }
  return used;
}

void CellCostModel::add_table_entry(const json& entry, const std::string& where, double nominal_reference) {
  const auto need = [&](const json& obj, const char* field, bool (json::*is)() const noexcept, const char* what,
                        const std::string& at) -> const json& {
    if (!obj.is_object() || !obj.contains(field) || !(obj.at(field).*is)())
      throw InputError(where + ": " + at + "." + field + ": expected " + what);
    return obj.at(field);
  };
  const int threads = need(entry, "threads", &json::is_number_integer, "an integer", "$").get<int>();
  if (threads < 1) throw InputError(where + ": $.threads: expected an integer >= 1");
  int jobs = 1;  // groups that ran at once; the task was prepared on threads x jobs
  if (entry.contains("jobs")) {
    jobs = need(entry, "jobs", &json::is_number_integer, "an integer", "$").get<int>();
    if (jobs < 1) throw InputError(where + ": $.jobs: expected an integer >= 1");
  }
  // The factor from the speed a time was measured at to the nominal one (1 without a reference).
  const auto reference_of = [&](const json& obj, const std::string& at, double fallback) {
    if (!obj.contains("reference_seconds")) return fallback;
    const double r = need(obj, "reference_seconds", &json::is_number, "a number", at).get<double>();
    if (!(r > 0) || !std::isfinite(r)) throw InputError(where + ": " + at + ".reference_seconds: expected a positive number");
    return r;
  };
  const double entry_reference = reference_of(entry, "$", 0.0);
  const auto speed = [&](double reference) {
    return nominal_reference > 0 && reference > 0 ? nominal_reference / reference : 1.0;
  };
  if (entry.contains("prepare_seconds")) {
    const double p = need(entry, "prepare_seconds", &json::is_number, "a number", "$").get<double>();
    prepare_thread_seconds_ = std::max(p, 0.0) * threads * jobs * speed(entry_reference);
  }
  const json& cells = need(entry, "cells", &json::is_array, "an array", "$");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string at = "$.cells[" + std::to_string(i) + "]";
    const std::string label = need(cells[i], "label", &json::is_string, "a string", at).get<std::string>();
    const json& params = need(cells[i], "params", &json::is_object, "an object", at);
    const double f = speed(reference_of(cells[i], at, entry_reference));
    const double s = need(cells[i], "seconds", &json::is_number, "a number", at).get<double>() * f;
    if (cells[i].contains("shared_seconds")) {
      const double sh = need(cells[i], "shared_seconds", &json::is_number, "a number", at).get<double>() * f;
      if (sh > 0 && std::isfinite(sh)) by_label_[label][params.dump()].shared.add(sh * threads);
    }
    if (cells[i].contains("first_seconds")) {
      add(label, params, need(cells[i], "first_seconds", &json::is_number, "a number", at).get<double>() * f, threads,
          Position::first);
      add(label, params, s, threads, Position::later);
    } else {
      add(label, params, s, threads, Position::unknown);
    }
  }
}

double CellCostModel::group_seconds(const std::string& label, const json& params, std::size_t n, int threads) const {
  const auto it = by_label_.find(label);
  if (it == by_label_.end()) return NAN;
  const double t = std::max(threads, 1);
  const auto exact = it->second.find(params.dump());
  if (exact != it->second.end()) return exact->second.group(n) / t;
  // Unmeasured parameters: the mean over the measured ones (each parameter point counts once,
  // so a point measured many times does not dominate).
  double sum = 0;
  for (const auto& [key, p] : it->second) sum += p.group(n);
  return sum / static_cast<double>(it->second.size()) / t;
}

double CellCostModel::shared_seconds(const std::string& label, const json& params, int threads) const {
  const auto it = by_label_.find(label);
  if (it == by_label_.end()) return 0.0;
  const auto once = [](const Point& p) { return p.shared.n ? p.shared.value() : 0.0; };
  const double t = std::max(threads, 1);
  const auto exact = it->second.find(params.dump());
  if (exact != it->second.end()) return once(exact->second) / t;
  double sum = 0;
  for (const auto& [key, p] : it->second) sum += once(p);
  return sum / static_cast<double>(it->second.size()) / t;
}

double CellCostModel::any_group_seconds(std::size_t n, int threads) const {
  double sum = 0;
  std::size_t count = 0;
  for (const auto& [label, points] : by_label_)
    for (const auto& [key, p] : points) {
      sum += p.group(n);
      ++count;
    }
  return count ? sum / static_cast<double>(count) / std::max(threads, 1) : NAN;
}

double CellCostModel::prepare_seconds(int threads) const { return prepare_thread_seconds_ / std::max(threads, 1); }

double makespan_seconds(const std::vector<double>& group_seconds, int jobs) {
  jobs = std::max(jobs, 1);
  // When each worker is next free; a group goes to the one free first.
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int j = 0; j < jobs; ++j) free_at.push(0.0);
  double end = 0.0;
  for (const double c : group_seconds) {
    const double start = free_at.top();
    free_at.pop();
    const double done = start + (std::isfinite(c) ? std::max(c, 0.0) : 0.0) * jobs;
    free_at.push(done);
    end = std::max(end, done);
  }
  return end;
}

double speed_reference_seconds() {
  // Eight independent chains of fused multiply-adds (not contracted away: the sum is kept), then
  // dependent reads through a fixed random cycle over 32,768 slots of 8 bytes (256 KB: past the
  // first-level cache, as the kernel and sampler tables are). About 0.05 s a try on the 2-core VM.
  constexpr int kChains = 8;
  constexpr std::size_t kFmaSteps = 8'000'000, kSlots = 1u << 15, kReads = 8'000'000;
  std::vector<std::uint64_t> next(kSlots);
  {
    std::vector<std::uint64_t> order(kSlots);
    for (std::size_t i = 0; i < kSlots; ++i) order[i] = i;
    std::uint64_t x = 0x9E3779B97F4A7C15ULL;  // a fixed shuffle: the same cycle on every machine
    for (std::size_t i = kSlots - 1; i > 0; --i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::swap(order[i], order[x % (i + 1)]);
    }
    for (std::size_t i = 0; i < kSlots; ++i) next[order[i]] = order[(i + 1) % kSlots];
  }
  volatile double sink = 0;
  volatile std::uint64_t sink_index = 0;
  std::vector<double> tries;
  for (int attempt = 0; attempt < 9; ++attempt) {
    const auto t0 = std::chrono::steady_clock::now();
    double acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = 1.0 + 1e-9 * c;
    const double m = sink + 0.999999999, a = 1e-9;
    for (std::size_t k = 0; k < kFmaSteps; ++k)
      for (int c = 0; c < kChains; ++c) acc[c] = std::fma(acc[c], m, a);
    std::uint64_t at = sink_index;
    for (std::size_t k = 0; k < kReads; ++k) at = next[at];
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (int c = 0; c < kChains; ++c) total += acc[c];
    sink = total * 0.0;  // 0, but only after the chains are done
    sink_index = at;  // the next try starts where this one stopped: the same single cycle
    tries.push_back(t);
  }
  std::nth_element(tries.begin(), tries.begin() + 4, tries.end());
  return tries[4];  // the median: the speed cells see, where a shared machine's speed wanders
}

std::string cell_cost_table_path(const std::string& repo_root) {
  return (std::filesystem::path(repo_root) / "configs" / "calibration" / "cell_costs.json").string();
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  const long s = std::lround(std::max(seconds, 0.0));
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

}  // namespace privrace::experiments
