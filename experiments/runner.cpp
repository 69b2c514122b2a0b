// The run loop: results file, resume, cells, records; the summary is summary.cpp's.
#include <omp.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <map>
#include <set>
#include <sstream>

#include "cost_estimate.hpp"
#include "experiment.hpp"
#include "privrace/core/version.hpp"
#include "privrace/core/progress.hpp"
#include "privrace/core/random.hpp"
#include "privrace/io/sketch_file.hpp"
#include "results.hpp"
#include "runner.hpp"
#include "shared_work.hpp"
#include "summary.hpp"

#ifndef PRIVRACE_SOURCE_DIR
#define PRIVRACE_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;

namespace privrace::experiments {

// --------------------------------------------------------------------------------------
// Registry

void Registry::add_task(std::unique_ptr<Task> task) {
  const std::string n = task->name();
  if (tasks_.count(n)) throw Error("task '" + n + "' is registered twice");
  tasks_[n] = std::move(task);
}

void Registry::add_method(std::unique_ptr<Method> method) {
  const std::string n = method->name();
  if (methods_.count(n)) throw Error("method '" + n + "' is registered twice");
  methods_[n] = std::move(method);
}

const Task* Registry::task(const std::string& name) const {
  const auto it = tasks_.find(name);
  return it == tasks_.end() ? nullptr : it->second.get();
}

const Method* Registry::method(const std::string& name) const {
  const auto it = methods_.find(name);
  return it == methods_.end() ? nullptr : it->second.get();
}

std::vector<std::string> Registry::task_names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : tasks_) out.push_back(n);
  return out;
}

std::vector<std::string> Registry::method_names(const std::string& task) const {
  std::vector<std::string> out;
  for (const auto& [n, m] : methods_)
    if (task.empty() || m->task() == task) out.push_back(n);
  return out;
}

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
    register_builtin(r);
    return r;
  }();
  return registry;
}

// --------------------------------------------------------------------------------------
// Seeds, records, output directories

std::uint64_t text_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json finite_or_null(const json& metrics) {
  json out = json::object();
  for (const auto& [k, v] : metrics.items())
    out[k] = (v.is_number() && !std::isfinite(v.get<double>())) ? json() : v;
  return out;
}

// Fails before any work when `dir` cannot hold new files.
void check_writable_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create results directory '" + dir + "': " + ec.message());
  std::string probe = (fs::path(dir) / ".write-test-XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) throw Error("results directory '" + dir + "' is not writable: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

// --------------------------------------------------------------------------------------
// The run: outputs, plan (grid expansion), estimate, run, summarise.

namespace {

// Where a run writes, and the finished records it resumes from. A plan writes nothing: it reads
// the finished records without taking the file's lock.
struct Outputs {
  std::string out_dir, cache_dir, stem;
  std::optional<ResultsFile> results_file;  // not for a plan
  std::vector<json> planned_records;        // a plan: the finished records of this fingerprint
  std::set<std::string> planned_keys;

  bool finished(const std::string& key) const {
    return results_file ? results_file->done(key) : planned_keys.count(key) > 0;
  }
  const std::vector<json>& records() const { return results_file ? results_file->records() : planned_records; }
};

// Output locations are checked before any work, so a long run cannot fail at the end.
void open_outputs(const RunOptions& options, const ExperimentConfig& cfg, const std::string& repo, Outputs& out,
                  RunReport& report) {
  out.out_dir = options.out_dir.empty() ? (fs::path(repo) / "results").string() : options.out_dir;
  out.cache_dir = (fs::path(out.out_dir) / "cache").string();
  if (!options.plan_only) {
    check_writable_dir(out.out_dir);
    check_writable_dir(out.cache_dir);
  }
  out.stem = cfg.name + (cfg.quick ? "-quick" : "");
  const fs::path dir(out.out_dir);
  report.results_path = (dir / (out.stem + ".jsonl")).string();
  report.csv_path = (dir / (out.stem + ".csv")).string();
  report.summary_path = (dir / (out.stem + ".summary.json")).string();
  report.timing_path = (dir / (out.stem + ".timing.csv")).string();
  report.unavailable_path = (dir / (out.stem + ".unavailable.jsonl")).string();
  if (options.plan_only) {
    for (auto& r : read_finished_records(report.results_path))
      if (r.value("config_fingerprint", "") == cfg.fingerprint()) {
        out.planned_keys.insert(r.at("key").get<std::string>());
        out.planned_records.push_back(std::move(r));
      }
  } else {
    out.results_file.emplace(report.results_path, cfg.fingerprint());
  }
}

// k of n indices evenly spread, first and last included (k = 1: the middle one).
std::vector<std::size_t> spread_indices(std::size_t n, std::size_t k) {
  if (k == 1) return {n / 2};
  std::vector<std::size_t> p;
  for (std::size_t j = 0; j < k; ++j) p.push_back(j * (n - 1) / (k - 1));
  return p;
}

// The groups of one method entry: params x repetition, each with its pending epsilons (cells).
bool same_epsilon(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)); }

void plan_method(const ExperimentConfig& cfg, const MethodSpec& m, const Method& method, std::size_t k,
                 const std::vector<double>& only_epsilons, const Outputs& out, RunReport& report,
                 std::vector<CellGroup>& groups) {
  const std::vector<json> grid = m.expand();
  std::vector<std::size_t> points(grid.size());
  for (std::size_t i = 0; i < points.size(); ++i) points[i] = i;
  if (k > 0 && k < grid.size()) points = spread_indices(grid.size(), k);
  const int repetitions = k > 0 ? 1 : m.repetitions;
  for (const std::size_t point : points)
    for (int rep = 0; rep < repetitions; ++rep) {
      const json& params = grid[point];
      CellGroup g;
      g.method = &m;
      g.params = params;
      g.rep = rep;
      g.seed = derive_seed(cfg.seed, text_hash(m.label + "|" + params.dump() + "|" + std::to_string(rep)));
      std::vector<double> eps = method.uses_epsilon() ? cfg.epsilons : std::vector<double>{NAN};
      if (method.uses_epsilon() && !only_epsilons.empty())
        std::erase_if(eps, [&](double e) {
          return std::none_of(only_epsilons.begin(), only_epsilons.end(), [&](double o) { return same_epsilon(e, o); });
        });
      // Calibration prices a cell by method and parameters, whatever its epsilon: K evenly
      // spread epsilons (the smallest and the largest included) measure it.
      if (k > 0 && k < eps.size()) {
        std::vector<double> spread;
        for (const std::size_t j : spread_indices(eps.size(), k)) spread.push_back(eps[j]);
        eps = spread;
      }
      for (const double e : eps) {
        ++report.cells_total;
        PendingCell cell;
        cell.epsilon = e;
        cell.key = cell_key(m.label, params, e, rep);
        cell.noise_seed = derive_seed(g.seed, text_hash(cell.key));
        if (out.finished(cell.key)) {
          ++report.cells_skipped;
          continue;
        }
        g.cells.push_back(cell);
      }
      if (!g.cells.empty()) groups.push_back(std::move(g));
    }
}

// Expands the grid: method x params x repetition (a group) x epsilon (its cells).
std::vector<CellGroup> plan_groups(const ExperimentConfig& cfg, const Registry& registry, const RunOptions& options,
                                   const Outputs& out, RunReport& report) {
  for (const auto& label : options.only_labels)
    if (std::none_of(cfg.methods.begin(), cfg.methods.end(), [&](const MethodSpec& m) { return m.label == label; })) {
      std::string labels;
      for (const auto& m : cfg.methods) labels += (labels.empty() ? "'" : ", '") + m.label + "'";
      throw UsageError("--method: '" + label + "' is no method label of " + cfg.name + " (its labels: " + labels + ")");
    }
  for (const double e : options.only_epsilons)
    if (std::none_of(cfg.epsilons.begin(), cfg.epsilons.end(), [&](double c) { return same_epsilon(c, e); }))
      throw UsageError("--epsilon: " + json(e).dump() + " is not among the epsilons of " + cfg.name);
  std::vector<CellGroup> groups;
  for (const auto& m : cfg.methods) {
    if (!options.only_labels.empty() &&
        std::find(options.only_labels.begin(), options.only_labels.end(), m.label) == options.only_labels.end())
      continue;
    plan_method(cfg, m, *registry.method(m.name), options.sample_grid_points, options.only_epsilons, out, report, groups);
  }
  return groups;
}

// The calibration table's entry for this config (if any) into `table`; its facts into `meta`.
void read_cost_table(const std::string& table_path, const std::string& stem, CellCostModel& table, json& meta) {
  if (!fs::exists(table_path)) return;
  json t;
  try {
    std::ifstream in(table_path);
    t = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(table_path + ": not valid JSON: " + e.what());
  }
  if (!t.is_object() || !t.contains("configs") || !t.at("configs").is_object())
    throw InputError(table_path + ": $.configs: expected an object of config entries");
  // The nominal speed: cells that record the machine's speed reference when they were timed are
  // priced as if timed at this one (cost_estimate.hpp); cells without one are taken as timed at it.
  double nominal = 0.0;
  if (t.contains("reference_seconds")) {
    const json& r = t.at("reference_seconds");
    if (!r.is_number() || !(r.get<double>() > 0) || !std::isfinite(r.get<double>()))
      throw InputError(table_path + ": $.reference_seconds: expected a positive number");
    nominal = r.get<double>();
  }
  if (t.at("configs").contains(stem)) {
    table.add_table_entry(t.at("configs").at(stem), table_path + " (configs." + stem + ")", nominal);
    meta = t.at("configs").at(stem);
    // An entry measured on another machine than the table's default names its own.
    if (!meta.contains("machine")) meta["machine"] = t.value("machine", "unknown machine");
    if (nominal > 0) meta["nominal_reference"] = nominal;
  }
}

// Prices the pending cells from measured wall times: this config's own records first, then
// the calibration table (see cost_estimate.hpp for the linear-in-threads assumption).
void estimate(const std::vector<CellGroup>& groups, const Outputs& out, const std::string& repo, int threads,
              RunReport& report) {
  const std::size_t pending = report.cells_total - report.cells_skipped;
  CellCostModel own, table;
  const std::size_t measured = own.add_records(out.records());
  const std::string table_path = cell_cost_table_path(repo);
  json table_meta;
  read_cost_table(table_path, out.stem, table, table_meta);
  // A quick profile's method that neither its records nor its own entry measured is priced from
  // the full profile's entry of the same config (the method's own measurements, at the full
  // run's parameters), not from the mean over other methods: one slow baseline missing from a
  // quick entry would otherwise be priced like the cheapest.
  CellCostModel full;
  json full_meta;
  const std::string quick_suffix = "-quick";
  if (out.stem.size() > quick_suffix.size() &&
      out.stem.compare(out.stem.size() - quick_suffix.size(), quick_suffix.size(), quick_suffix) == 0)
    read_cost_table(table_path, out.stem.substr(0, out.stem.size() - quick_suffix.size()), full, full_meta);
  std::size_t from_full = 0;
  std::vector<double> group_costs;  // in the order the workers take the groups
  bool any = false;
  std::set<std::string> shared_paid;  // label + params whose shared work is priced
  for (const auto& g : groups) {
    const std::size_t n = g.cells.size();
    const CellCostModel* source = &own;
    double c = own.group_seconds(g.method->label, g.params, n, threads);
    if (std::isnan(c)) source = &table, c = table.group_seconds(g.method->label, g.params, n, threads);
    if (std::isnan(c)) {
      source = &full, c = full.group_seconds(g.method->label, g.params, n, threads);
      if (!std::isnan(c)) from_full += n;
    }
    if (!std::isnan(c) && shared_paid.insert(g.method->label + g.params.dump()).second)
      c += source->shared_seconds(g.method->label, g.params, threads);
    if (std::isnan(c)) {
      report.cells_unpriced += n;
      c = own.empty() ? table.any_group_seconds(n, threads) : own.any_group_seconds(n, threads);
    }
    if (!std::isnan(c)) {
      group_costs.push_back(c);
      any = true;
    }
  }
  double total = makespan_seconds(group_costs, report.jobs);
  // A resumed run prepares again (data, cached exact answers): priced as last measured.
  if (pending > 0) total += measured > 0 ? own.prepare_seconds(threads) : table.prepare_seconds(threads);
  report.estimate_seconds = pending == 0 ? 0.0 : any ? total : NAN;
  std::vector<std::string> basis;
  if (measured > 0) basis.push_back(std::to_string(measured) + " cells timed in " + report.results_path);
  if (!table.empty())
    basis.push_back(table_path + " (" + table_meta.value("machine", "") + ", " +
                    std::to_string(table_meta.value("threads", 0)) + " threads" +
                    (table_meta.value("jobs", 1) > 1 ? " x " + std::to_string(table_meta.value("jobs", 1)) + " jobs" : "") +
                    (table_meta.contains("nominal_reference")
                         ? ", priced at the speed reference " + table_meta.at("nominal_reference").dump() + " s"
                         : "") +
                    ")");
  if (from_full > 0)
    basis.push_back(std::to_string(from_full) + " cells of methods the quick entry lacks priced from the full profile's entry (" +
                    full_meta.value("machine", "") + ")");
  if (basis.empty()) basis.push_back("no measurement of this config (scripts/measure_cell_costs.sh makes one)");
  for (std::size_t i = 0; i < basis.size(); ++i) report.estimate_basis += (i ? "; " : "") + basis[i];
}

// The task's data, split and ground truth; refuses to mix real and stand-in records.
std::unique_ptr<TaskContext> prepare_context(const ExperimentConfig& cfg, const Task& task, const RunEnvironment& env,
                                             const ResultsFile& results, RunReport& report, double& prepare_seconds) {
  const auto prepare_start = std::chrono::steady_clock::now();
  auto context = task.prepare(cfg, env);
  prepare_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - prepare_start).count();
  context->threads = env.threads;
  report.stand_in = context->data.stand_in;
  if (context->data.stand_in)
    std::cerr << "warning: data set '" << cfg.dataset << "' not found (" << context->data.stand_in_reason
              << "); using a SYNTHETIC STAND-IN of the same shape; every record says so\n";
  for (const auto& r : results.records())
    if (r.value("stand_in", false) != context->data.stand_in)
      throw Error("'" + report.results_path + "' holds records computed on " +
                  (r.value("stand_in", false) ? "a synthetic stand-in" : "the real data") + " but this run uses " +
                  (context->data.stand_in ? "a synthetic stand-in" : "the real data") +
                  "; move the file away or choose another --out directory");
  return context;
}

// What the runner knows of a cell beyond the method's result.
struct CellFacts {
  double wall_seconds = 0;
  bool first_of_group = false;
  double prepare_seconds = 0;
  int threads = 0;
  int jobs = 1;                    // groups running at once beside this one (itself included)
  double shared_work_seconds = 0;  // work this cell made that later repetitions reuse (shared_work.hpp)
  int shared_work_threads = 0;     // the threads that work ran on (0: none made)
  double waited_seconds = 0;       // waited for another worker's shared work (not priced: shared_work.hpp)
};

// The fields that name a cell, shared by its record and by an unavailable cell's record.
json cell_identity(const ExperimentConfig& cfg, const CellGroup& g, const PendingCell& cell) {
  return {{"config", cfg.name},
          {"config_fingerprint", cfg.fingerprint()},
          {"key", cell.key},
          {"task", cfg.task},
          {"figure", cfg.figure},
          {"dataset", cfg.dataset},
          {"method", g.method->name},
          {"label", g.method->label},
          {"params", g.params},
          {"epsilon", std::isnan(cell.epsilon) ? json() : json(cell.epsilon)},
          {"rep", g.rep},
          {"seed", g.seed},
          {"noise_seed", cell.noise_seed},
          {"git_commit", git_commit()},
          {"quick", cfg.quick}};
}

json make_record(const ExperimentConfig& cfg, const TaskContext& context, const CellGroup& g, const PendingCell& cell,
                 const CellResult& result, const CellFacts& facts) {
  json record = cell_identity(cfg, g, cell);
  record.update({{"stand_in", context.data.stand_in},
                 {"data", context.data_summary},
                 {"metrics", finite_or_null(result.metrics)},
                 {"primary_metric", cfg.metric},
                 {"selection", cfg.selection},
                 {"build_seconds", result.build_seconds},
                 {"query_seconds_per_query", result.query_seconds_per_query},
                 {"threads", facts.threads},
                 {"jobs", facts.jobs},
                 {"wall_seconds", facts.wall_seconds},
                 {"first_of_group", facts.first_of_group},
                 {"shared_work_seconds", facts.shared_work_seconds},
                 {"shared_work_threads", facts.shared_work_threads},
                 {"waited_seconds", facts.waited_seconds},
                 {"run_prepare_seconds", facts.prepare_seconds},
                 {"finished_at", utc_now()},
                 {"details", result.details}});
  return record;
}

// A cell that could not run because an optional module is missing (UnavailableError): the
// record's identity (config, key, method, params, epsilon, rep, seeds), "status": "unavailable"
// and the reason. Kept in NAME.unavailable.jsonl, never in NAME.jsonl: the cell is not finished,
// so the next run tries it again.
json unavailable_record(const ExperimentConfig& cfg, const CellGroup& g, const PendingCell& cell, const std::string& reason) {
  json record = cell_identity(cfg, g, cell);
  record.update({{"status", "unavailable"}, {"reason", reason}, {"recorded_at", utc_now()}});
  return record;
}

// Runs every pending cell, appending its record as soon as it is done. Returns false when
// options.stop_after stopped the run (tests: as if killed after the last durable record).
// With jobs > 1, that many workers take the groups in order, each running its groups on
// context.threads OpenMP threads; a record is made from its own group's seeds only, so the
// records are those of one job, in the order the cells finish. A failing group stops the
// others at their next cell, and its error is the run's. A group whose method throws
// UnavailableError (an optional module is missing) is no failure: its cells not yet emitted go
// to `unavailable` with the reason, and the method's later groups are not started (the module
// stays missing for the process); they are recorded with the same reason.
bool run_groups(const ExperimentConfig& cfg, const Registry& registry, const RunOptions& options,
                const std::vector<CellGroup>& groups, const TaskContext& context, double prepare_seconds, int jobs,
                ResultsFile& results, RunReport& report, std::vector<json>& unavailable) {
  Progress progress(cfg.name, report.cells_total - report.cells_skipped);
  std::mutex output;  // the results file, the progress line and the report
  std::size_t written = 0;
  bool stopped = false;
  std::exception_ptr failure;
  std::atomic<std::size_t> next_group{0};
  std::atomic<bool> halt{false};
  std::map<std::string, std::string> missing;  // method name -> why it cannot run (under `output`)
  struct Stop {};
  const auto worker = [&] {
    if (jobs > 1) omp_set_num_threads(context.threads);  // this thread's parallel regions
    try {
      for (std::size_t k = 0; !halt && (k = next_group++) < groups.size();) {
        const CellGroup& g = groups[k];
        std::string reason;
        {
          std::lock_guard<std::mutex> lock(output);
          if (const auto it = missing.find(g.method->name); it != missing.end()) reason = it->second;
        }
        std::vector<bool> emitted(g.cells.size(), false);
        const auto record_unavailable = [&] {
          std::lock_guard<std::mutex> lock(output);
          if (halt) return;
          for (std::size_t i = 0; i < g.cells.size(); ++i)
            if (!emitted[i]) {
              unavailable.push_back(unavailable_record(cfg, g, g.cells[i], reason));
              progress.advance();
            }
        };
        if (!reason.empty()) {
          record_unavailable();
          continue;
        }
        // A cell's wall time runs from the previous cell of its group (or the group's start), so
        // the group's shared work is carried by its first cell, which the record marks.
        auto last = std::chrono::steady_clock::now();
        CellFacts facts{0, true, prepare_seconds, context.threads, jobs};
        take_shared_work_seconds();  // nothing made outside a group belongs to its cells
        take_shared_work_threads();
        take_waited_seconds();
        try {
          registry.method(g.method->name)->run_group(context, g, [&](std::size_t i, CellResult result) {
            const auto now = std::chrono::steady_clock::now();
            facts.wall_seconds = std::chrono::duration<double>(now - last).count();
            facts.shared_work_seconds = take_shared_work_seconds();
            facts.shared_work_threads = take_shared_work_threads();
            facts.waited_seconds = take_waited_seconds();
            last = now;
            json record = make_record(cfg, context, g, g.cells.at(i), result, facts);
            facts.first_of_group = false;
            std::lock_guard<std::mutex> lock(output);
            if (halt) throw Stop{};
            results.append(record);
            emitted.at(i) = true;
            progress.advance();
            ++report.cells_run;
            if (options.stop_after && ++written >= options.stop_after) {
              stopped = true;
              halt = true;
              throw Stop{};
            }
          });
        } catch (const UnavailableError& e) {
          reason = e.what();
          if (reason.empty()) reason = "an optional module is missing";
          {
            std::lock_guard<std::mutex> lock(output);
            missing.emplace(g.method->name, reason);
          }
          record_unavailable();
        }
      }
    } catch (const Stop&) {
    } catch (...) {
      std::lock_guard<std::mutex> lock(output);
      if (!failure) failure = std::current_exception();
      halt = true;
    }
  };
  if (jobs <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int j = 0; j < jobs; ++j) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  progress.finish();
  if (failure) std::rethrow_exception(failure);
  return !stopped;
}

// NAME.unavailable.jsonl after a run: the cells this run could not run, and those of earlier
// runs that this one did not try (--method, --epsilon) and that are still unfinished; removed
// when none is left. Rewritten atomically under the results file's lock. Returns its records.
std::vector<json> update_unavailable(const ExperimentConfig& cfg, const std::string& path, const ResultsFile& results,
                                     const std::vector<CellGroup>& groups, const std::vector<json>& fresh) {
  std::set<std::string> tried;
  for (const auto& g : groups)
    for (const auto& c : g.cells) tried.insert(c.key);
  std::vector<json> keep;
  for (auto& r : read_finished_records(path)) {
    const std::string key = r.at("key").get<std::string>();
    if (r.value("config_fingerprint", "") == cfg.fingerprint() && !results.done(key) && !tried.count(key))
      keep.push_back(std::move(r));
  }
  keep.insert(keep.end(), fresh.begin(), fresh.end());
  if (keep.empty()) {
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) throw Error("cannot remove '" + path + "': " + ec.message());
    return keep;
  }
  std::string text;
  for (const auto& r : keep) text += r.dump() + "\n";
  write_file_atomically(path, text);
  return keep;
}

}  // namespace

RunReport run_experiment(const RunOptions& options, const Registry& registry) {
  const std::string repo = options.repo_root.empty() ? std::string(PRIVRACE_SOURCE_DIR) : options.repo_root;
  const DatasetRegistry datasets = DatasetRegistry::load_from_repo(repo);
  const ExperimentConfig cfg = load_config(options.config_path, options.quick, registry, datasets);
  const Task* task = registry.task(cfg.task);

  const int threads = options.threads >= 0 ? options.threads : cfg.threads;
  if (threads > 0) omp_set_num_threads(threads);
  RunReport report;
  report.threads = omp_get_max_threads();
  if (options.jobs < 1) throw UsageError("--jobs must be >= 1");
  if (options.jobs > report.threads)
    throw UsageError("--jobs " + std::to_string(options.jobs) + " exceeds the " + std::to_string(report.threads) +
                     " threads of the run: every job needs at least one thread (raise --threads)");
  report.jobs = options.jobs;

  Outputs out;
  open_outputs(options, cfg, repo, out, report);
  const std::vector<CellGroup> groups = plan_groups(cfg, registry, options, out, report);
  const std::size_t pending = report.cells_total - report.cells_skipped;
  estimate(groups, out, repo, report.threads, report);
  if (options.plan_only) return report;
  if (Progress::enabled() || report.cells_skipped > 0)
    std::cerr << cfg.name << ": " << report.cells_total << " cells, " << report.cells_skipped
              << " already in " << report.results_path << ", " << pending << " to run"
              << (pending > 0 && std::isfinite(report.estimate_seconds) ? ", estimated " + format_duration(report.estimate_seconds) : std::string()) << "\n";
  ResultsFile& results = *out.results_file;

  json data_note;
  std::vector<json> unavailable;  // this run's cells whose method's optional module is missing
  if (pending > 0) {
    RunEnvironment env;
    env.datasets = &datasets;
    env.search.data_dir = options.data_dir;
    env.search.repo_root = repo;
    env.cache_dir = out.cache_dir;
    env.threads = report.threads;
    double prepare_seconds = 0;
    const auto context = prepare_context(cfg, *task, env, results, report, prepare_seconds);
    data_note = context->data_summary;
    context->threads = report.threads / report.jobs;  // each group's share (the task prepared on all)
    context->run_threads = report.threads;
    if (!run_groups(cfg, registry, options, groups, *context, prepare_seconds, report.jobs, results, report,
                    unavailable))
      return report;
  }
  report.unavailable = unavailable_by_label(cfg, unavailable);
  const std::vector<json> still_unavailable =
      update_unavailable(cfg, report.unavailable_path, results, groups, unavailable);
  summarise(cfg, *task, results.records(), data_note, options.print_summary, report, still_unavailable);
  return report;
}

int exit_status(const RunReport& report) { return report.unavailable.empty() ? 0 : kExitMethodsUnavailable; }

std::string unavailable_summary(const RunReport& report) {
  if (report.unavailable.empty()) return {};
  std::size_t cells = 0;
  for (const auto& u : report.unavailable) cells += u.cells;
  std::ostringstream out;
  out << "privrace-experiment: " << cells << " cell" << (cells == 1 ? "" : "s") << " of " << report.unavailable.size()
      << " method" << (report.unavailable.size() == 1 ? "" : "s")
      << " could not run (an optional module is missing); every other method ran. Recorded in " << report.unavailable_path
      << "; a rerun tries them again:\n";
  for (const auto& u : report.unavailable) {
    std::string reason = u.reason;
    for (std::size_t at = 0; (at = reason.find('\n', at)) != std::string::npos; at += 5) reason.replace(at, 1, "\n    ");
    out << "  " << u.label << " (" << u.method << "): " << u.cells << " cell" << (u.cells == 1 ? "" : "s") << ": "
        << reason << "\n";
  }
  return out.str();
}

}  // namespace privrace::experiments
