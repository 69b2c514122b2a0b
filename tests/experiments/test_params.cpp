// Typed method parameters (experiments/params.hpp): every method's ParamSpec list is generated
// from its struct's table, a grid point decodes into the struct and back unchanged, and a
// misspelt or mistyped parameter in a config is refused with the path-bearing ConfigError.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>
#include <string>

#include "experiment.hpp"
#include "params.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "race_params.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;
using namespace privrace::experiments;
using nlohmann::json;

namespace {

using privrace::testing::TempDir;
using privrace::testing::write;

// A registry with one (absent) 2-D data set: enough for parse_config.
struct Datasets {
  TempDir dir;
  Datasets() {
    const json reg = {{"schema", 1},
                      {"datasets",
                       {{"tiny",
                         {{"kind", "table"}, {"source_url", "test"}, {"format", "csv"}, {"rows", 3000}, {"columns", 2},
                          {"files", {{{"path", "tiny/tiny.csv"}, {"sha256", nullptr}, {"sha256_note", "test"}}}},
                          {"features", {1, 2}}, {"label", nullptr}, {"bounds", {{0, 1}, {0, 1}}},
                          {"preprocessing", {{"scale", "none"}}}}}}}};
    write(dir.path / "datasets" / "registry.json", reg.dump());
  }
  DatasetRegistry registry() const { return DatasetRegistry::load_from_repo(dir.path.string()); }
};

json kde_config(const json& method) {
  return {{"name", "t"},
          {"task", {{"type", "kde"}, {"queries", 100}}},
          {"dataset", {{"name", "tiny"}}},
          {"methods", json::array({method})},
          {"epsilons", {1}},
          {"repetitions", 1}};
}

std::string config_error(const json& j) {
  const Datasets ds;
  try {
    parse_config(j, "configs/x.json", false, builtin_registry(), ds.registry());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(valid)";
}

// A valid value of `spec`'s kind, different for each `i` where the kind allows.
json sample_value(const ParamSpec& spec, std::size_t i) {
  using K = ParamSpec::Kind;
  switch (spec.kind) {
    case K::PositiveInt:
    case K::NonNegativeInt: return static_cast<std::uint64_t>(i + 2);
    case K::PositiveNumber: return 0.25 + static_cast<double>(i);
    case K::Number: return -0.5 - static_cast<double>(i);
    case K::Bool: return i % 2 == 0;
    case K::String: return spec.choices.empty() ? json("s" + std::to_string(i)) : json(spec.choices[i % spec.choices.size()]);
  }
  return nullptr;
}

}  // namespace

TEST(MethodParams, AMisspeltParameterIsRefusedWithItsPath) {
  EXPECT_EQ(config_error(kde_config({{"name", "race"}, {"grid", {{"rows", {10}}}}, {"fixed", {{"widht", 100}}}})),
            "configs/x.json: $.methods[0].fixed.widht: unknown parameter of method 'race' (expected one of rows, width, "
            "estimator, mom_groups, mechanism, delta, neighbors)");
  EXPECT_EQ(config_error(kde_config({{"name", "race"}, {"grid", {{"rows", {10}}, {"estimater", {"mom"}}}}})),
            "configs/x.json: $.methods[0].grid.estimater: unknown parameter of method 'race' (expected one of rows, width, "
            "estimator, mom_groups, mechanism, delta, neighbors)");
  EXPECT_EQ(config_error(kde_config({{"name", "race"}})),
            "configs/x.json: $.methods[0].grid.rows: missing (required parameter of method 'race': a positive integer)");
}

TEST(MethodParams, AMistypedParameterIsRefusedWithItsPath) {
  const json rows = {{"rows", {10}}};
  EXPECT_EQ(config_error(kde_config({{"name", "race"}, {"grid", rows}, {"fixed", {{"width", "wide"}}}})),
            "configs/x.json: $.methods[0].fixed.width: expected a positive integer");
  EXPECT_EQ(config_error(kde_config({{"name", "race"}, {"grid", rows}, {"fixed", {{"estimator", "median"}}}})),
            "configs/x.json: $.methods[0].fixed.estimator: expected one of mean, mom");
  EXPECT_EQ(config_error(kde_config({{"name", "race"}, {"grid", {{"rows", {10}}, {"mechanism", {"gaussian", 3}}}}})),
            "configs/x.json: $.methods[0].grid.mechanism: expected an array of one of discrete_laplace, floored_laplace, gaussian, discrete_gaussian");
  // A cross-parameter rule of the struct (RaceNoise::check), with the grid point it failed at.
  const std::string gaussian = config_error(kde_config({{"name", "race"}, {"grid", rows}, {"fixed", {{"mechanism", "gaussian"}}}}));
  EXPECT_EQ(gaussian.rfind("configs/x.json: $.methods[0]: mechanism gaussian needs 0 < delta < 1 (at {", 0), 0u) << gaussian;
  EXPECT_EQ(config_error(kde_config({{"name", "race"}, {"grid", rows}, {"fixed", {{"mechanism", "gaussian"}, {"delta", 1e-6}}}})),
            "(valid)");
}

// The generated list of one method, field by field: names, kinds, defaults in the table's order.
TEST(MethodParams, TheRaceKdeMethodsSpecsAreItsStructsFields) {
  const auto specs = builtin_registry().method("race")->parameters();
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"rows", "width", "estimator", "mom_groups", "mechanism", "delta", "neighbors"}));
  EXPECT_TRUE(specs[0].default_value.is_null());  // required
  EXPECT_EQ(specs[1].default_value, 1000);
  EXPECT_EQ(specs[2].default_value, "mean");
  EXPECT_EQ(specs[2].choices, (std::vector<std::string>{"mean", "mom"}));
  EXPECT_EQ(specs[3].default_value, 5);
  EXPECT_EQ(specs[4].choices, (std::vector<std::string>{"discrete_laplace", "floored_laplace", "gaussian", "discrete_gaussian"}));
  EXPECT_TRUE(specs[5].default_value.is_number_float());  // 0.0, as the records' keys write it
  EXPECT_EQ(specs[6].default_value, "add-remove");
}

// Every built-in method: unique names, and each field decodes into its own member and back
// (distinct values per field, then the defaults), so no spec is unbound or bound twice.
TEST(MethodParams, EveryMethodsSpecsRoundTripThroughItsStruct) {
  const Registry& registry = builtin_registry();
  for (const auto& name : registry.method_names()) {
    const Method& m = *registry.method(name);
    const auto specs = m.parameters();
    std::set<std::string> seen;
    json varied = json::object(), defaults = json::object();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_TRUE(seen.insert(specs[i].name).second) << name << ": " << specs[i].name << " twice";
      EXPECT_EQ(check_value(specs[i], sample_value(specs[i], i)), "") << name << "." << specs[i].name;
      varied[specs[i].name] = sample_value(specs[i], i);
      defaults[specs[i].name] = specs[i].default_value.is_null() ? sample_value(specs[i], i) : specs[i].default_value;
      if (!specs[i].default_value.is_null()) {
        EXPECT_EQ(check_value(specs[i], specs[i].default_value), "") << name << "." << specs[i].name << " default";
      }
    }
    EXPECT_EQ(m.round_trip(varied), varied) << name;
    EXPECT_EQ(m.round_trip(defaults), defaults) << name;
  }
}

// The mechanism by itself: an enum field, a field of a library struct, a shared group.
TEST(MethodParams, ATableDecodesEnumsMembersOfMembersAndGroups) {
  struct Toy {
    Estimator estimator = Estimator::Mean;
    QueryOptions query;
    RaceNoise noise;
    int n = 0;
  };
  using K = ParamSpec::Kind;
  ParamTable<Toy> t;
  t.add(&Toy::estimator, "estimator", {{"mean", Estimator::Mean}, {"mom", Estimator::MedianOfMeans}}, "mean", "")
      .add(&Toy::query, &QueryOptions::mom_groups, "mom_groups", K::PositiveInt, 5, "")
      .add(&Toy::noise, RaceNoise::table())
      .add(&Toy::n, "n", K::NonNegativeInt, nullptr, "");
  const json point = {{"estimator", "mom"}, {"mom_groups", 7}, {"mechanism", "gaussian"}, {"delta", 1e-6},
                      {"neighbors", "replace"}, {"n", 3}};
  const Toy toy = t.decode(point);
  EXPECT_EQ(toy.estimator, Estimator::MedianOfMeans);
  EXPECT_EQ(toy.query.mom_groups, 7u);
  EXPECT_EQ(toy.noise.mechanism, NoiseMechanism::Gaussian);
  EXPECT_EQ(toy.noise.delta, 1e-6);
  EXPECT_EQ(toy.noise.neighbors, NeighborRelation::Replace);
  EXPECT_EQ(toy.noise.check(), "");
  EXPECT_EQ(toy.n, 3);
  EXPECT_EQ(t.encode(toy), point);
  ASSERT_EQ(t.specs().size(), 6u);
  EXPECT_EQ(t.specs()[2].name, "mechanism");
  EXPECT_EQ(t.specs()[2].default_value, "discrete_laplace");
}

// --------------------------------------------------------------------------------------
// Task options: the same tables, decoded once by the config parser (TypedTask).

// A mistyped or unknown task option is refused at parse time with its path.
TEST(TaskOptions, AMistypedTaskOptionIsRefusedWithItsPath) {
  json j = kde_config({{"name", "race"}, {"grid", {{"rows", {10}}}}});
  j["task"]["queries"] = "many";
  EXPECT_EQ(config_error(j), "configs/x.json: $.task.queries: expected a positive integer");
  j["task"]["queries"] = 100;
  j["task"]["query_source"] = "random";
  EXPECT_EQ(config_error(j), "configs/x.json: $.task.query_source: expected one of held_out, grid");
  j["task"]["query_source"] = "grid";
  j["task"]["kernel"] = 2;
  EXPECT_EQ(config_error(j), "configs/x.json: $.task.kernel: expected one of l2, angular");
  j["task"].erase("kernel");
  j["task"]["bandwith"] = 1.0;
  EXPECT_EQ(config_error(j).rfind("configs/x.json: $.task.bandwith: unknown key (expected one of type, kernel,", 0), 0u)
      << config_error(j);
}

// Every built-in task: unique option names, and each option decodes into its own member and
// back (distinct values per option, then the defaults), so no spec is unbound or bound twice.
TEST(TaskOptions, EveryTasksOptionsRoundTripThroughItsStruct) {
  const Registry& registry = builtin_registry();
  for (const auto& name : registry.task_names()) {
    const Task& t = *registry.task(name);
    const auto specs = t.options();
    std::set<std::string> seen;
    json varied = json::object(), defaults = json::object();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_TRUE(seen.insert(specs[i].name).second) << name << ": " << specs[i].name << " twice";
      EXPECT_EQ(check_value(specs[i], sample_value(specs[i], i)), "") << name << "." << specs[i].name;
      varied[specs[i].name] = sample_value(specs[i], i);
      ASSERT_FALSE(specs[i].default_value.is_null()) << name << "." << specs[i].name << ": every task option has a default";
      EXPECT_EQ(check_value(specs[i], specs[i].default_value), "") << name << "." << specs[i].name << " default";
      defaults[specs[i].name] = specs[i].default_value;
    }
    EXPECT_TRUE(t.decode_options(defaults).has_value()) << name << ": no options struct";
    EXPECT_EQ(t.round_trip_options(varied), varied) << name;
    EXPECT_EQ(t.round_trip_options(defaults).dump(), defaults.dump()) << name;  // number types kept
  }
}

// The parser decodes the options once into the config; a number the records echo keeps the
// form it was written in (5 stays 5, 5.0 stays 5.0).
TEST(TaskOptions, TheParserDecodesTheOptionsOnce) {
  const Datasets ds;
  const ExperimentConfig cfg =
      parse_config(kde_config({{"name", "race"}, {"grid", {{"rows", {10}}}}}), "configs/x.json", false, builtin_registry(),
                   ds.registry());
  EXPECT_TRUE(cfg.task_params.has_value());
  const Task& anomaly = *builtin_registry().task("anomaly");
  for (const json& label : {json(5), json(5.0), json(-0.5)}) {
    json given = json::object();
    for (const auto& s : anomaly.options()) given[s.name] = s.default_value;
    given["anomaly_label"] = label;
    EXPECT_EQ(anomaly.round_trip_options(given).at("anomaly_label").dump(), label.dump());
  }
}
