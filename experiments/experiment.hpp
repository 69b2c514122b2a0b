#pragma once
// The experiment framework behind `privrace-experiment`: config validation, the task and
// method registries, grid expansion, and the run loop. See experiments/README.md.
//
// A config names one TASK (a driver per task family: kde, later classification, regression,
// graph, m2m) and a list of METHODS to compare on it. The task driver loads the data, makes
// the split / query set and the ground truth once (TaskContext); each method then runs
// groups of cells that share (method, params, repetition) and differ only in epsilon, so
// work that does not depend on epsilon (hashing the data into a sketch, a non-private
// fit) is done once per group. Every finished cell is appended to results/NAME.jsonl.
#include <any>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "data/dataset.hpp"

namespace privrace::experiments {

using nlohmann::json;

// A config that is valid JSON but not a valid experiment. The message is
// "<file>: <json path>: <what was expected>", e.g.
// "configs/x.json: $.methods[1].grid.rows: expected an array of positive integers".
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

// "$", "$.methods[1].grid.rows", ... for messages.
class JsonPath {
 public:
  JsonPath() = default;
  JsonPath operator/(const std::string& key) const { return JsonPath(path_ + "." + key); }
  JsonPath operator[](std::size_t i) const { return JsonPath(path_ + "[" + std::to_string(i) + "]"); }
  const std::string& str() const { return path_; }

 private:
  explicit JsonPath(std::string p) : path_(std::move(p)) {}
  std::string path_ = "$";
};

// One hyperparameter (or task option) a method (or task) accepts.
struct ParamSpec {
  enum class Kind { PositiveInt, NonNegativeInt, PositiveNumber, Number, Bool, String };
  std::string name;
  Kind kind = Kind::PositiveNumber;
  json default_value;                // null = required
  std::vector<std::string> choices;  // String only: the allowed values (empty = any)
  std::string help;
};
// "a positive integer", "one of mean, mom", ... (used in messages and the README).
std::string describe_kind(const ParamSpec& spec);
// Checks one value; returns "" when valid, else what was expected.
std::string check_value(const ParamSpec& spec, const json& value);

// --------------------------------------------------------------------------------------
// Configs

struct MethodSpec {
  std::string name;   // registry key
  std::string label;  // display name and part of the cell key; unique within a config
  std::map<std::string, std::vector<json>> grid;  // hyperparameter -> values to sweep
  json fixed = json::object();                    // hyperparameter -> single value
  // Repetitions of this method: its own "repetitions" key (at most the config's), else the
  // config's; with --quick, at most the quick section's. Filled in by parse_config.
  int repetitions = 1;
  std::vector<json> expand() const;               // every grid point, fixed + defaults merged in
};

struct ExperimentConfig {
  std::string file;  // path it was read from (for messages)
  std::string name;  // results/NAME.jsonl
  std::string description;
  std::string figure;  // plot name (default: name)
  std::string task;    // task type
  json task_options;   // the task object with defaults filled in (records, fingerprint)
  // task_options decoded once by the task's options table (TypedTask, params.hpp): what
  // prepare() reads. Filled in by parse_config; empty when the config was built by hand.
  std::any task_params;
  std::string dataset;
  json preprocessing = json::object();  // as written in the config (merged over the registry's)
  std::string metric;                   // primary metric
  std::string selection = "best_over_grid";  // best_over_grid | all
  std::vector<MethodSpec> methods;
  std::vector<double> epsilons;
  int repetitions = 1;
  std::uint64_t seed = 1;
  int threads = 0;
  bool quick = false;
  json raw;  // the validated JSON (after the quick patch)

  // Hash of everything that changes the meaning of a cell's result (task, data set,
  // preprocessing, seed, quick) but not the grid, epsilons or repetitions, so extending a
  // sweep resumes while changing the data refuses to mix records.
  std::string fingerprint() const;
};

class Registry;
// Parses and validates; `quick` applies the config's "quick" section. Throws ConfigError
// (invalid), InputError (unreadable, or not JSON: "<file>:<line>:<column>: not valid JSON").
ExperimentConfig load_config(const std::string& path, bool quick, const Registry& registry,
                             const DatasetRegistry& datasets);
ExperimentConfig parse_config(const json& j, const std::string& file, bool quick, const Registry& registry,
                              const DatasetRegistry& datasets);

// --------------------------------------------------------------------------------------
// Tasks and methods

// What the runner gives a task driver.
struct RunEnvironment {
  const DatasetRegistry* datasets = nullptr;
  DataSearch search;
  std::string cache_dir;  // results/cache
  int threads = 1;        // OpenMP threads in use
};

// Prepared once per run by the task driver and shared (read-only) by every cell. Task
// drivers derive from it (e.g. KdeContext); methods receive it typed (TypedMethod<KdeContext, Params>).
struct TaskContext {
  virtual ~TaskContext() = default;
  const ExperimentConfig* config = nullptr;
  LoadedDataset data;        // the preprocessed data set (before the split)
  json data_summary;         // recorded in every record: name, rows, dim, stand_in, ...
  int threads = 1;           // a group's OpenMP threads: the run's threads / jobs
  int run_threads = 1;       // all of the run's threads: work the groups share is made on them
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  // Keys of the config's "task" object besides "type" (validated and defaulted by the runner).
  // A TypedTask (params.hpp) generates them from its options struct's table.
  virtual std::vector<ParamSpec> options() const = 0;
  // The checked, defaulted options decoded into the task's options struct (stored in
  // ExperimentConfig::task_params); empty for a task without one.
  virtual std::any decode_options(const json& options) const { (void)options; return {}; }
  // The options decoded and written back (the tests check each field is bound to its member).
  virtual json round_trip_options(const json& options) const { return options; }
  // Metric names every cell records; the first is the default primary metric.
  virtual std::vector<std::string> metrics() const = 0;
  virtual bool lower_is_better(const std::string& metric) const { (void)metric; return true; }
  // Loads data, splits, computes (or reads from env.cache_dir) the ground truth.
  virtual std::unique_ptr<TaskContext> prepare(const ExperimentConfig& config, const RunEnvironment& env) const = 0;
  // Tables a paper reports besides the curves (e.g. the M2M paper's Table 1), computed from all
  // records: stored under "tables" in NAME.summary.json, `text` appended to the printed summary.
  virtual json summary_tables(const ExperimentConfig& config, const std::vector<json>& records, std::string& text) const {
    (void)config;
    (void)records;
    (void)text;
    return nullptr;
  }
};

// One cell still to run inside a group.
struct PendingCell {
  double epsilon = 0;           // NaN for methods that do not use epsilon
  std::uint64_t noise_seed = 0;  // fresh for every cell
  std::string key;
};

// Cells sharing method, params and repetition.
struct CellGroup {
  const MethodSpec* method = nullptr;
  json params;             // one grid point, defaults filled in (cell keys, records); a method
                           // receives it decoded into its parameter struct (params.hpp)
  int rep = 0;
  std::uint64_t seed = 0;  // data-independent randomness of the group (LSH seed, ...)
  std::vector<PendingCell> cells;
};

struct CellResult {
  json metrics = json::object();  // every metric of Task::metrics(), numbers (NaN -> null)
  double build_seconds = 0;       // time to build the release (shared work + this cell's noise)
  double query_seconds_per_query = 0;
  json details = json::object();  // method-specific facts (noise scale, N-hat, ...)
};

class Method {
 public:
  virtual ~Method() = default;
  virtual std::string name() const = 0;  // the "name" configs use
  virtual std::string task() const = 0;  // the task type it solves
  // Generated from the method's parameter table (params.hpp: TypedMethod).
  virtual std::vector<ParamSpec> parameters() const = 0;
  // False for non-private references: one cell per (params, rep), epsilon recorded as null.
  virtual bool uses_epsilon() const { return true; }
  // Cross-parameter checks after each value passed its ParamSpec; return "" or the problem.
  // TypedMethod decodes the point into the method's parameter struct and asks it.
  virtual std::string check(const json& params) const { (void)params; return {}; }
  // The point decoded into the method's parameter struct and written back (the tests check
  // that every field is bound to the member its name says).
  virtual json round_trip(const json& params) const { return params; }
  // Runs every cell of the group; call emit(i, result) as soon as group.cells[i] is done
  // (it is written to disk at once, so a killed run keeps it). Must be deterministic
  // given group.seed and the cells' noise seeds.
  using Emit = std::function<void(std::size_t, CellResult)>;
  virtual void run_group(const TaskContext& context, const CellGroup& group, const Emit& emit) const = 0;
};

// Methods derive from TypedMethod<Ctx, Params> (params.hpp): the task's context typed and
// the parameters decoded into the method's struct.

class Registry {
 public:
  void add_task(std::unique_ptr<Task> task);
  void add_method(std::unique_ptr<Method> method);
  const Task* task(const std::string& name) const;      // nullptr if unknown
  const Method* method(const std::string& name) const;  // nullptr if unknown
  std::vector<std::string> task_names() const;
  std::vector<std::string> method_names(const std::string& task = "") const;

 private:
  std::map<std::string, std::unique_ptr<Task>> tasks_;
  std::map<std::string, std::unique_ptr<Method>> methods_;
};

// Every built-in task and method (experiments/builtin.cpp): the one place a new one is listed.
void register_builtin(Registry& registry);
const Registry& builtin_registry();

// --------------------------------------------------------------------------------------
// Running

struct RunOptions {
  std::string config_path;
  bool quick = false;
  std::string out_dir;   // default <repo>/results
  int threads = -1;      // -1 = the config's
  // Groups run at once, each on threads / jobs OpenMP threads (docs/experiments.md, "Jobs"):
  // for methods that leave cores idle. Records are those of one job; only their order in the
  // file, their timings and their "threads" differ.
  int jobs = 1;
  std::string data_dir;  // --data-dir
  std::string repo_root;
  bool print_summary = true;
  // Tests: stop (as if killed) after this many new cells; 0 = never.
  std::size_t stop_after = 0;
  // Count the cells and estimate the time, then return: no data is read, nothing is written.
  bool plan_only = false;
  // Calibration (--sample K): repetition 0 only, and at most K grid points per method and K
  // epsilons, each evenly spread over its list (first and last included); 0 = the whole grid.
  std::size_t sample_grid_points = 0;
  // Part of a profile (--methods, --epsilons): only these method labels and these epsilons
  // (methods without an epsilon run whatever the list); empty = all. A cell's seed depends on
  // its label, parameters, epsilon and repetition only, so these are the full run's cells and
  // a later full run into the same directory skips them.
  std::vector<std::string> only_labels;
  std::vector<double> only_epsilons;
};

// A method whose cells could not run because an optional module is missing (UnavailableError):
// its cells of this run, recorded in NAME.unavailable.jsonl and tried again by the next run.
struct UnavailableMethod {
  std::string label, method, reason;
  std::size_t cells = 0;
};

struct RunReport {
  std::string results_path, csv_path, summary_path;
  std::string unavailable_path;  // NAME.unavailable.jsonl: the cells that could not run (absent when none)
  std::vector<UnavailableMethod> unavailable;  // this run's, in config order (runner.hpp: exit status 3)
  std::string timing_path;  // NAME.timing.csv: build / query time per method at its best setting
  std::size_t cells_total = 0, cells_skipped = 0, cells_run = 0;
  std::string summary_table;
  bool stand_in = false;
  // The estimate for the pending cells (NaN when nothing was ever measured), what it rests on,
  // and how many pending cells belong to methods never measured (priced at the config's mean).
  double estimate_seconds = NAN;
  std::string estimate_basis;
  std::size_t cells_unpriced = 0;
  int threads = 0;  // the run's OpenMP threads, over all jobs
  int jobs = 1;
};

RunReport run_experiment(const RunOptions& options, const Registry& registry = builtin_registry());

// The cell key written to (and looked up in) the results: label, params, epsilon, rep.
std::string cell_key(const std::string& label, const json& params, double epsilon, int rep);
// Epsilons are rounded to 12 significant digits so keys do not depend on how a list was made.
double canonical_epsilon(double eps);
// FNV-1a of a text: the runner's group and cell seeds are derive_seed(seed, text_hash(...)).
std::uint64_t text_hash(const std::string& s);

}  // namespace privrace::experiments
