// Config parsing and validation: every error names the file and the JSON path.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "experiment.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/limits.hpp"
#include "privrace/privacy/budget.hpp"

namespace privrace::experiments {
namespace {

// JSON written by hand parses as unsigned, JSON built in C++ as signed: accept both.
bool is_count(const json& v, std::int64_t min) {
  return (v.is_number_unsigned() && v.get<std::uint64_t>() >= static_cast<std::uint64_t>(min)) ||
         (v.is_number_integer() && v.get<std::int64_t>() >= min);
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// Cells (grid point x epsilon x repetition) one config may ask for: far above every shipped
// figure, far below what a typo in a grid can produce.
constexpr double kMaxGridCells = 1e6;

std::string count_text(double n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

struct Checker {
  std::string file;
  [[noreturn]] void fail(const JsonPath& at, const std::string& what) const {
    throw ConfigError(file + ": " + at.str() + ": " + what);
  }
  const json& field(const json& obj, const std::string& key, const JsonPath& at) const {
    if (!obj.contains(key)) fail(at / key, "missing (required)");
    return obj.at(key);
  }
  void object(const json& j, const JsonPath& at) const {
    if (!j.is_object()) fail(at, "expected an object");
  }
  void known_keys(const json& obj, const JsonPath& at, const std::vector<std::string>& keys) const {
    for (const auto& [k, v] : obj.items())
      if (std::find(keys.begin(), keys.end(), k) == keys.end())
        fail(at / k, "unknown key (expected one of " + join(keys) + ")");
  }
  std::string string(const json& j, const JsonPath& at) const {
    if (!j.is_string()) fail(at, "expected a string");
    return j.get<std::string>();
  }
};

// Fills defaults and validates `options` against `specs`; unknown keys are errors.
json apply_specs(const Checker& c, const json& given, const JsonPath& at, const std::vector<ParamSpec>& specs,
                 const std::vector<std::string>& extra_keys) {
  json out = json::object();
  std::vector<std::string> keys = extra_keys;
  for (const auto& s : specs) keys.push_back(s.name);
  c.known_keys(given, at, keys);
  for (const auto& s : specs) {
    if (given.contains(s.name)) {
      const std::string problem = check_value(s, given.at(s.name));
      if (!problem.empty()) c.fail(at / s.name, problem);
      out[s.name] = given.at(s.name);
    } else if (s.default_value.is_null()) {
      c.fail(at / s.name, "missing (required: " + describe_kind(s) + ")");
    } else {
      out[s.name] = s.default_value;
    }
  }
  return out;
}

std::vector<double> parse_epsilons(const Checker& c, const json& j, const JsonPath& at) {
  std::vector<double> out;
  if (j.is_array()) {
    if (j.empty()) c.fail(at, "expected a non-empty array of positive numbers");
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_number() || !(j[i].get<double>() > 0) || !std::isfinite(j[i].get<double>()))
        c.fail(at[i], "expected a positive number");
      out.push_back(canonical_epsilon(j[i].get<double>()));
    }
  } else if (j.is_object() && j.contains("logspace")) {
    const JsonPath lp = at / "logspace";
    const json& spec = j.at("logspace");
    c.object(spec, lp);
    c.known_keys(spec, lp, {"from", "to", "count"});
    const json& from = c.field(spec, "from", lp);
    const json& to = c.field(spec, "to", lp);
    const json& count = c.field(spec, "count", lp);
    if (!from.is_number() || !(from.get<double>() > 0)) c.fail(lp / "from", "expected a positive number");
    if (!to.is_number() || !(to.get<double>() >= from.get<double>())) c.fail(lp / "to", "expected a number >= from");
    if (!is_count(count, 1) || !count.is_number_integer() || count.get<std::uint64_t>() > 10000)
      c.fail(lp / "count", "expected a positive integer (at most 10000)");
    const double a = std::log10(from.get<double>()), b = std::log10(to.get<double>());
    const int n = count.get<int>();
    for (int i = 0; i < n; ++i) out.push_back(canonical_epsilon(std::pow(10.0, n == 1 ? a : a + (b - a) * i / (n - 1))));
    c.known_keys(j, at, {"logspace"});
  } else {
    c.fail(at, "expected an array of positive numbers or {\"logspace\": {\"from\", \"to\", \"count\"}}");
  }
  std::set<double> seen;
  for (const double e : out)
    if (!seen.insert(e).second) c.fail(at, "epsilon " + std::to_string(e) + " is listed twice");
  return out;
}

}  // namespace

std::string describe_kind(const ParamSpec& s) {
  switch (s.kind) {
    case ParamSpec::Kind::PositiveInt: return "a positive integer";
    case ParamSpec::Kind::NonNegativeInt: return "a non-negative integer";
    case ParamSpec::Kind::PositiveNumber: return "a positive number";
    case ParamSpec::Kind::Number: return "a number";
    case ParamSpec::Kind::Bool: return "true or false";
    case ParamSpec::Kind::String:
      return s.choices.empty() ? "a string" : "one of " + join(s.choices);
  }
  return "a value";
}

std::string check_value(const ParamSpec& s, const json& v) {
  bool ok = false;
  switch (s.kind) {
    case ParamSpec::Kind::PositiveInt: ok = is_count(v, 1); break;
    case ParamSpec::Kind::NonNegativeInt: ok = is_count(v, 0); break;
    case ParamSpec::Kind::PositiveNumber: ok = v.is_number() && v.get<double>() > 0 && std::isfinite(v.get<double>()); break;
    case ParamSpec::Kind::Number: ok = v.is_number() && std::isfinite(v.get<double>()); break;
    case ParamSpec::Kind::Bool: ok = v.is_boolean(); break;
    case ParamSpec::Kind::String:
      ok = v.is_string() && (s.choices.empty() ||
                             std::find(s.choices.begin(), s.choices.end(), v.get<std::string>()) != s.choices.end());
      break;
  }
  return ok ? std::string() : "expected " + describe_kind(s);
}

double canonical_epsilon(double eps) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", eps);
  return std::strtod(buf, nullptr);
}

std::string cell_key(const std::string& label, const json& params, double epsilon, int rep) {
  char eps[64];
  if (std::isnan(epsilon))
    std::snprintf(eps, sizeof eps, "none");
  else
    std::snprintf(eps, sizeof eps, "%.12g", epsilon);
  return label + "|" + params.dump() + "|eps=" + eps + "|rep=" + std::to_string(rep);
}

std::vector<json> MethodSpec::expand() const {
  std::vector<json> points{fixed};
  for (const auto& [param, values] : grid) {
    std::vector<json> next;
    for (const auto& p : points)
      for (const auto& v : values) {
        json q = p;
        q[param] = v;
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
}

std::string ExperimentConfig::fingerprint() const {
  const json j = {{"task", task}, {"task_options", task_options}, {"dataset", dataset},
                  {"preprocessing", preprocessing}, {"seed", seed}, {"quick", quick}};
  return sha256_hex(j.dump().data(), j.dump().size()).substr(0, 16);
}

namespace {

// Validates the "quick" section (even without --quick, so its mistakes surface early) and, with
// --quick, applies it to `j`: its keys replace the config's ("task" and "dataset" are merged), a
// quick grid entry replaces the full run's value, in "grid" or in "fixed". Removes "quick".
void apply_quick(const Checker& c, json& j, bool quick) {
  if (!j.contains("quick")) return;
  const JsonPath qp = JsonPath() / "quick";
  const json& q = j.at("quick");
  c.object(q, qp);
  c.known_keys(q, qp, {"repetitions", "epsilons", "grids", "task", "dataset", "methods"});
  if (q.contains("grids")) {
    c.object(q.at("grids"), qp / "grids");
    for (const auto& [label, g] : q.at("grids").items()) {
      bool found = false;
      for (const auto& m : j.value("methods", json::array()))
        if (m.is_object() && (m.value("label", m.value("name", std::string())) == label)) found = true;
      if (!found) c.fail(qp / "grids" / label, "no method with this label (or name) in $.methods");
      c.object(g, qp / "grids" / label);
    }
  }
  if (quick) {
    json patch = q;
    patch.erase("grids");
    for (const char* merged : {"task", "dataset"})
      if (patch.contains(merged) && j.contains(merged) && j.at(merged).is_object() && patch.at(merged).is_object()) {
        json t = j.at(merged);
        t.merge_patch(patch.at(merged));
        patch[merged] = t;
      }
    for (auto& [k, v] : patch.items()) j[k] = v;
    if (q.contains("grids") && j.contains("methods") && j.at("methods").is_array())
      for (auto& m : j.at("methods"))
        if (m.is_object()) {
          const std::string label = m.value("label", m.value("name", std::string()));
          if (q.at("grids").contains(label))
            for (const auto& [param, values] : q.at("grids").at(label).items()) {
              if (m.contains("fixed") && m.at("fixed").is_object()) m["fixed"].erase(param);
              m["grid"][param] = values;
            }
        }
  }
  j.erase("quick");
}

// $.task: the task type and its options (defaults filled in).
const Task& parse_task(const Checker& c, const json& j, const Registry& registry, ExperimentConfig& cfg) {
  const JsonPath tp = JsonPath() / "task";
  const json& task = c.field(j, "task", JsonPath());
  c.object(task, tp);
  cfg.task = c.string(c.field(task, "type", tp), tp / "type");
  const Task* driver = registry.task(cfg.task);
  if (!driver) c.fail(tp / "type", "unknown task '" + cfg.task + "' (known: " + join(registry.task_names()) + ")");
  cfg.task_options = apply_specs(c, task, tp, driver->options(), {"type"});
  cfg.task_params = driver->decode_options(cfg.task_options);  // once: prepare() reads the struct
  return *driver;
}

// $.dataset: a registered data set and its preprocessing.
void parse_dataset(const Checker& c, const json& j, const DatasetRegistry& datasets, ExperimentConfig& cfg) {
  const JsonPath dp = JsonPath() / "dataset";
  const json& ds = c.field(j, "dataset", JsonPath());
  c.object(ds, dp);
  c.known_keys(ds, dp, {"name", "preprocessing"});
  cfg.dataset = c.string(c.field(ds, "name", dp), dp / "name");
  if (!datasets.contains(cfg.dataset))
    c.fail(dp / "name", "unknown data set '" + cfg.dataset + "' (known: " + join(datasets.names()) + ")");
  if (ds.contains("preprocessing")) {
    c.object(ds.at("preprocessing"), dp / "preprocessing");
    try {
      (void)Preprocessing::from_json(ds.at("preprocessing"));
    } catch (const UsageError& e) {
      c.fail(dp / "preprocessing", e.what());
    }
    cfg.preprocessing = ds.at("preprocessing");
  }
}

// $.metric (default: the task's first) and $.selection.
void parse_metric(const Checker& c, const json& j, const Task& driver, ExperimentConfig& cfg) {
  const JsonPath root;
  const auto metrics = driver.metrics();
  cfg.metric = j.contains("metric") ? c.string(j.at("metric"), root / "metric") : metrics.front();
  if (std::find(metrics.begin(), metrics.end(), cfg.metric) == metrics.end())
    c.fail(root / "metric", "task '" + cfg.task + "' records " + join(metrics) + ", not '" + cfg.metric + "'");
  if (j.contains("selection")) {
    cfg.selection = c.string(j.at("selection"), root / "selection");
    if (cfg.selection != "best_over_grid" && cfg.selection != "all")
      c.fail(root / "selection", "expected \"best_over_grid\" or \"all\"");
  }
}

// $.repetitions; returns the most a method may ask for: the full run's repetitions (with
// --quick, $.repetitions is the quick one, `input` the config before the quick patch).
std::uint64_t parse_repetitions(const Checker& c, const json& j, const json& input, ExperimentConfig& cfg) {
  const JsonPath root;
  const json& reps = c.field(j, "repetitions", root);
  if (!is_count(reps, 1)) c.fail(root / "repetitions", "expected a positive integer");
  if (!reps.is_number_integer() || reps.get<std::uint64_t>() > 1000000)
    c.fail(root / "repetitions", "expected at most 1000000 repetitions");
  cfg.repetitions = reps.get<int>();
  const json& full_reps = input.contains("repetitions") ? input.at("repetitions") : reps;
  return is_count(full_reps, 1) && full_reps.is_number_integer() ? full_reps.get<std::uint64_t>() : 1000000;
}

// A method entry's "grid" and "fixed" values against its ParamSpecs; defaults fill the rest.
void parse_method_params(const Checker& c, const json& m, const JsonPath& at, const Method& method, MethodSpec& spec) {
  const auto params = method.parameters();
  auto find_spec = [&](const std::string& key) -> const ParamSpec* {
    for (const auto& p : params)
      if (p.name == key) return &p;
    return nullptr;
  };
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  const json grid = m.value("grid", json::object());
  const json fixed = m.value("fixed", json::object());
  c.object(grid, at / "grid");
  c.object(fixed, at / "fixed");
  for (const auto& [key, values] : grid.items()) {
    const ParamSpec* ps = find_spec(key);
    if (!ps)
      c.fail(at / "grid" / key, "unknown parameter of method '" + spec.name + "' (expected one of " + join(names) + ")");
    std::string plural = describe_kind(*ps);
    if (plural.rfind("a ", 0) == 0) plural = plural.substr(2) + "s";
    if (!values.is_array() || values.empty()) c.fail(at / "grid" / key, "expected an array of " + plural);
    for (std::size_t k = 0; k < values.size(); ++k)
      if (!check_value(*ps, values[k]).empty()) c.fail(at / "grid" / key, "expected an array of " + plural);
    spec.grid[key] = values.get<std::vector<json>>();
  }
  for (const auto& [key, value] : fixed.items()) {
    const ParamSpec* ps = find_spec(key);
    if (!ps)
      c.fail(at / "fixed" / key, "unknown parameter of method '" + spec.name + "' (expected one of " + join(names) + ")");
    if (grid.contains(key)) c.fail(at / "fixed" / key, "also given in grid; give it in one place");
    const std::string problem = check_value(*ps, value);
    if (!problem.empty()) c.fail(at / "fixed" / key, problem);
    spec.fixed[key] = value;
  }
  for (const auto& p : params)
    if (!grid.contains(p.name) && !fixed.contains(p.name)) {
      if (p.default_value.is_null())
        c.fail(at / "grid" / p.name, "missing (required parameter of method '" + spec.name + "': " + describe_kind(p) + ")");
      spec.fixed[p.name] = p.default_value;
    }
}

// The method entries' running totals: labels used so far and cells asked for.
struct MethodTally {
  std::set<std::string> labels;
  double cells = 0.0;
};

// $.methods[i]: name, label, grid / fixed, repetitions; the grid's size and every point's check.
MethodSpec parse_method(const Checker& c, const json& m, const JsonPath& at, const Registry& registry,
                        const ExperimentConfig& cfg, std::uint64_t max_method_reps, MethodTally& tally) {
  c.object(m, at);
  c.known_keys(m, at, {"name", "label", "grid", "fixed", "repetitions"});
  MethodSpec spec;
  spec.name = c.string(c.field(m, "name", at), at / "name");
  const Method* method = registry.method(spec.name);
  if (!method)
    c.fail(at / "name", "unknown method '" + spec.name + "' (methods for task '" + cfg.task +
                            "': " + join(registry.method_names(cfg.task)) + ")");
  if (method->task() != cfg.task)
    c.fail(at / "name", "method '" + spec.name + "' solves task '" + method->task() + "', not '" + cfg.task + "'");
  spec.label = m.contains("label") ? c.string(m.at("label"), at / "label") : spec.name;
  if (spec.label.empty() || spec.label.find('|') != std::string::npos)
    c.fail(at / "label", "expected a non-empty string without '|'");
  if (!tally.labels.insert(spec.label).second)
    c.fail(at / "label", "label '" + spec.label + "' is used twice; give each method entry its own label");
  parse_method_params(c, m, at, *method, spec);
  // A method may run fewer repetitions than the config (e.g. a generator that trains a network
  // per cell), never more; the quick section's repetitions cap it as they cap the config's.
  spec.repetitions = cfg.repetitions;
  if (m.contains("repetitions")) {
    const json& r = m.at("repetitions");
    if (!is_count(r, 1) || !r.is_number_integer()) c.fail(at / "repetitions", "expected a positive integer");
    if (r.get<std::uint64_t>() > max_method_reps)
      c.fail(at / "repetitions", "expected at most $.repetitions (" + std::to_string(max_method_reps) +
                                     "); a method may run fewer repetitions than the config, not more");
    spec.repetitions = std::min(cfg.repetitions, r.get<int>());
  }
  // Refused before the grid is expanded: a typo such as a 10^9-point grid must not allocate it.
  double points = 1.0;
  for (const auto& [param, values] : spec.grid) points *= static_cast<double>(values.size());
  tally.cells += points * static_cast<double>(cfg.epsilons.size()) * static_cast<double>(spec.repetitions);
  if (tally.cells > kMaxGridCells)
    c.fail(at / "grid", "the config asks for " + count_text(tally.cells) +
                            " cells (grid points x epsilons x repetitions, this method's grid has " +
                            count_text(points) + " points); at most " + count_text(kMaxGridCells) +
                            " are run in one config");
  for (const auto& point : spec.expand()) {
    const std::string problem = method->check(point);
    if (!problem.empty()) c.fail(at, problem + " (at " + point.dump() + ")");
  }
  return spec;
}

}  // namespace

ExperimentConfig parse_config(const json& input, const std::string& file, bool quick, const Registry& registry,
                              const DatasetRegistry& datasets) {
  const Checker c{file};
  const JsonPath root;
  c.object(input, root);
  json j = input;
  c.known_keys(j, root, {"name", "description", "figure", "task", "dataset", "metric", "selection", "methods",
                         "epsilons", "repetitions", "seed", "threads", "quick"});
  apply_quick(c, j, quick);

  ExperimentConfig cfg;
  cfg.file = file;
  cfg.quick = quick;
  cfg.name = c.string(c.field(j, "name", root), root / "name");
  if (!std::regex_match(cfg.name, std::regex("[A-Za-z0-9_.-]+")))
    c.fail(root / "name", "expected letters, digits, '_', '.' or '-' (it names the results file)");
  if (j.contains("description")) cfg.description = c.string(j.at("description"), root / "description");
  cfg.figure = j.contains("figure") ? c.string(j.at("figure"), root / "figure") : cfg.name;
  const Task& driver = parse_task(c, j, registry, cfg);
  parse_dataset(c, j, datasets, cfg);
  parse_metric(c, j, driver, cfg);
  // Epsilons and repetitions first: with them the size of every grid is known before it is expanded.
  cfg.epsilons = parse_epsilons(c, c.field(j, "epsilons", root), root / "epsilons");
  const std::uint64_t max_method_reps = parse_repetitions(c, j, input, cfg);

  const JsonPath mp = root / "methods";
  const json& methods = c.field(j, "methods", root);
  if (!methods.is_array() || methods.empty()) c.fail(mp, "expected a non-empty array of methods");
  MethodTally tally;
  for (std::size_t i = 0; i < methods.size(); ++i)
    cfg.methods.push_back(parse_method(c, methods[i], mp[i], registry, cfg, max_method_reps, tally));

  if (j.contains("seed")) {
    if (!is_count(j.at("seed"), 0)) c.fail(root / "seed", "expected a non-negative integer");
    cfg.seed = j.at("seed").get<std::uint64_t>();
  }
  if (j.contains("threads")) {
    if (!is_count(j.at("threads"), 0) || j.at("threads").get<std::int64_t>() > kMaxThreads)
      c.fail(root / "threads", "expected an integer in 0.." + std::to_string(kMaxThreads) + " (0 = all cores)");
    cfg.threads = j.at("threads").get<int>();
  }
  cfg.raw = j;
  return cfg;
}

ExperimentConfig load_config(const std::string& path, bool quick, const Registry& registry,
                             const DatasetRegistry& datasets) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open config '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann reports a byte offset; users need line and column.
    std::size_t line = 1, col = 1;
    const std::size_t stop = e.byte == 0 ? 0 : e.byte - 1;
    for (std::size_t i = 0; i < stop && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    if (const auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": not valid JSON: " + what);
  } catch (const json::exception& e) {
    // A number beyond double (1e999) is an out_of_range error, not a parse_error (found by fuzz_config).
    throw InputError(path + ": not valid JSON: " + e.what());
  }
  try {
    return parse_config(j, path, quick, registry, datasets);
  } catch (const json::exception& e) {
    // A field of the wrong JSON type that the validator missed (found by fuzz_config).
    throw InputError(path + ": " + e.what());
  }
}

}  // namespace privrace::experiments
