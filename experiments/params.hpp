#pragma once
// Typed method parameters. Each method declares a plain struct of its parameters and ONE
// table beside it binding every member to its ParamSpec (name, kind, default, choices, help):
//
//   struct RaceParams {
//     std::size_t rows = 0;
//     Estimator estimator = Estimator::Mean;
//     RaceNoise noise;                       // a shared group, by composition
//     std::string check() const;             // cross-parameter checks ("" = fine)
//     static const ParamTable<RaceParams>& table();
//   };
//   const ParamTable<RaceParams>& RaceParams::table() {
//     static const auto t = ParamTable<RaceParams>()
//         .add(&RaceParams::rows, "rows", Kind::PositiveInt, nullptr, "sketch rows R")
//         .add(&RaceParams::estimator, "estimator", {{"mean", Estimator::Mean}, {"mom", ...}}, "mean", "...")
//         .add(&RaceParams::noise, race_noise_table());
//     return t;
//   }
//
// The method's ParamSpec list (Method::parameters(): config validation, messages, the README)
// is the table's specs(); the config's JSON values are checked against it in config.cpp, and a
// grid point is decoded into the struct by the framework (TypedMethod::run_group), so a method's
// run() receives `const Params&` and never reads JSON for its parameters.
#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "experiment.hpp"

namespace privrace::experiments {

// A number option that records (or cache keys) echo as the config wrote it: 5 stays 5 and
// 5.0 stays 5.0, as when the option was read from JSON. A member of this type is bound like
// any other (ParamTable::add reads and writes it through from_json / to_json below).
struct WrittenNumber {
  double value = 0;
  bool integer = false;  // written without a fraction or exponent
  WrittenNumber() = default;
  WrittenNumber(double v) : value(v) {}  // NOLINT: a default, written as a double
  operator double() const { return value; }
};
inline void from_json(const json& j, WrittenNumber& n) {
  n.value = j.get<double>();
  n.integer = j.is_number_integer();
}
inline void to_json(json& j, const WrittenNumber& n) {
  j = n.integer ? json(static_cast<std::int64_t>(n.value)) : json(n.value);
}

template <class P>
class ParamTable {
 public:
  using Kind = ParamSpec::Kind;
  using Read = std::function<void(P&, const json&)>;
  using Write = std::function<void(const P&, json&)>;

  // A number, an integer, a bool or a free string (choices, when given, restrict the string).
  template <class T>
    requires(!std::is_enum_v<T>)
  ParamTable& add(T P::*member, std::string name, Kind kind, json default_value, std::string help,
                  std::vector<std::string> choices = {}) {
    return add({std::move(name), kind, std::move(default_value), std::move(choices), std::move(help)},
               [member](P& p, const json& v) { p.*member = v.get<T>(); },
               [member](const P& p, json& v) { v = p.*member; });
  }
  // A field of a member struct (a library's options), bound directly: `group.member`.
  template <class G, class T>
    requires(!std::is_enum_v<T>)
  ParamTable& add(G P::*group, T G::*member, std::string name, Kind kind, json default_value, std::string help,
                  std::vector<std::string> choices = {}) {
    return add({std::move(name), kind, std::move(default_value), std::move(choices), std::move(help)},
               [group, member](P& p, const json& v) { (p.*group).*member = v.get<T>(); },
               [group, member](const P& p, json& v) { v = (p.*group).*member; });
  }
  // A choice-valued string decoded into an enum: each choice's name and value, in the order
  // messages list them.
  template <class E>
    requires std::is_enum_v<E>
  ParamTable& add(E P::*member, std::string name, std::vector<std::pair<std::string, E>> choices, json default_value,
                  std::string help) {
    std::vector<std::string> names;
    for (const auto& c : choices) names.push_back(c.first);
    return add({std::move(name), Kind::String, std::move(default_value), std::move(names), std::move(help)},
               [member, choices](P& p, const json& v) {
                 const auto& s = v.template get_ref<const std::string&>();
                 for (const auto& [text, value] : choices)
                   if (text == s) p.*member = value;
               },
               [member, choices](const P& p, json& v) {
                 for (const auto& [text, value] : choices)
                   if (value == p.*member) v = text;
               });
  }
  // Every field of a shared group's table, stored in the member `group` (composition).
  template <class G>
  ParamTable& add(G P::*group, const ParamTable<G>& table) {
    for (const auto& f : table.fields_)
      add(f.spec, [group, read = f.read](P& p, const json& v) { read(p.*group, v); },
          [group, write = f.write](const P& p, json& v) { write(p.*group, v); });
    return *this;
  }
  // The general entry: a spec and how its value is read into (and written from) the struct.
  ParamTable& add(ParamSpec spec, Read read, Write write) {
    fields_.push_back({std::move(spec), std::move(read), std::move(write)});
    return *this;
  }

  std::vector<ParamSpec> specs() const {
    std::vector<ParamSpec> out;
    for (const auto& f : fields_) out.push_back(f.spec);
    return out;
  }
  // A grid point (every value already checked against specs()) as the struct.
  P decode(const json& point) const {
    P p{};
    for (const auto& f : fields_) f.read(p, point.at(f.spec.name));
    return p;
  }
  // The struct as a grid point (the tests check decode and encode are inverse).
  json encode(const P& p) const {
    json out = json::object();
    for (const auto& f : fields_) f.write(p, out[f.spec.name]);
    return out;
  }

 private:
  template <class>
  friend class ParamTable;
  struct Field {
    ParamSpec spec;
    Read read;
    Write write;
  };
  std::vector<Field> fields_;
};

// The parameters of a method that takes none.
struct NoParams {
  static const ParamTable<NoParams>& table() {
    static const ParamTable<NoParams> t;
    return t;
  }
};

// The shape of every method: it solves the task whose driver prepares a `Ctx` (KdeContext,
// RegressContext, ...) and receives that context typed, and its parameters decoded into
// `Params` (the table is Params::table(), or the method's own param_table() when its
// parameters depend on how it was registered). The one checked downcast is here.
template <class Ctx, class Params>
class TypedMethod : public Method {
 public:
  std::vector<ParamSpec> parameters() const final { return param_table().specs(); }
  std::string check(const json& point) const final { return check_params(param_table().decode(point)); }
  json round_trip(const json& point) const final { return param_table().encode(param_table().decode(point)); }
  void run_group(const TaskContext& context, const CellGroup& group, const Emit& emit) const final {
    const auto* typed = dynamic_cast<const Ctx*>(&context);
    if (!typed)
      throw Error("method '" + name() + "' (task '" + task() + "') was given the context of another task");
    const Params params = param_table().decode(group.params);
    run(*typed, params, group, emit);
  }

 protected:
  virtual const ParamTable<Params>& param_table() const {
    if constexpr (requires { Params::table(); })
      return Params::table();
    else
      throw Error("method '" + name() + "' has no parameter table");
  }
  // Cross-parameter checks after each value passed its ParamSpec: Params::check() when declared.
  virtual std::string check_params(const Params& p) const {
    if constexpr (requires { p.check(); })
      return p.check();
    else
      return {};
  }
  // Runs every cell of the group, as Method::run_group describes.
  virtual void run(const Ctx& context, const Params& params, const CellGroup& group, const Emit& emit) const = 0;
};

// The shape of every task driver: its options (the config's "task" object) are a plain struct
// with a table, like a method's parameters. options() is generated from the table, the config
// parser decodes the checked options once (decode_options, into ExperimentConfig::task_params)
// and prepare() receives the struct: no task reads its options from JSON.
template <class Options>
class TypedTask : public Task {
 public:
  std::vector<ParamSpec> options() const final { return Options::table().specs(); }
  std::any decode_options(const json& options) const final {
    return std::make_shared<const Options>(Options::table().decode(options));
  }
  json round_trip_options(const json& options) const final {
    return Options::table().encode(Options::table().decode(options));
  }
  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& config, const RunEnvironment& env) const final {
    return prepare(config, *options_of(config), env);
  }

 protected:
  // The config's decoded options (decoded here only for a config built by hand).
  static std::shared_ptr<const Options> options_of(const ExperimentConfig& config) {
    if (const auto* decoded = std::any_cast<std::shared_ptr<const Options>>(&config.task_params)) return *decoded;
    return std::make_shared<const Options>(Options::table().decode(config.task_options));
  }
  // Loads data, splits, computes the ground truth (Task::prepare), given the decoded options.
  virtual std::unique_ptr<TaskContext> prepare(const ExperimentConfig& config, const Options& options,
                                               const RunEnvironment& env) const = 0;
};

}  // namespace privrace::experiments
