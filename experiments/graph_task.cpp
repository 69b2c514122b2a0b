#include "graph_task.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <mutex>

#include "metrics.hpp"
#include "kde_task.hpp"  // read_truth_cache / write_truth_cache: the same cache file format
#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/progress.hpp"
#include "privrace/core/random.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/budget.hpp"
#include "race_params.hpp"
#include "release_sweep.hpp"
#include "privrace/sketch/sketch_io.hpp"

namespace privrace::experiments {
namespace fs = std::filesystem;

namespace {


std::string csr_digest(const SetCollection& s) {
  const std::string a = sha256_hex(s.offsets.data(), s.offsets.size() * sizeof(std::uint64_t));
  const std::string b = sha256_hex(s.ids.data(), s.ids.size() * sizeof(std::uint32_t));
  const std::string ab = a + b;
  return sha256_hex(ab.data(), ab.size());
}

// The first search directory holding the entry's data file, or "" (then `tried` lists the
// directories searched).
std::string find_graph_file(const json& entry, const DataSearch& search, std::string& tried) {
  const std::string rel = entry.at("files").at(0).at("path").get<std::string>();
  for (const auto& dir : data_search_path(search)) {
    const fs::path p = fs::path(dir) / rel;
    if (fs::is_regular_file(p)) return p.string();
    tried += (tried.empty() ? "" : ", ") + dir;
  }
  if (tried.empty()) tried = "(no directory)";
  return {};
}

// Edges in the registry's unit: stored neighbours when directed, unordered pairs when not.
std::uint64_t registry_edges(const SetCollection& g, bool directed, bool keep_loops) {
  if (directed) return g.ids.size();
  std::uint64_t loops = 0;
  if (keep_loops)
    for (std::uint64_t u = 0; u < g.size(); ++u) {
      const auto s = g.set(u);
      loops += std::binary_search(s.begin(), s.end(), static_cast<std::uint32_t>(u));
    }
  return (g.ids.size() + loops) / 2;
}

// An R-MAT graph with the registry's node and edge counts, for a graph whose file is absent.
// Duplicate edges grow with density, so the edge factor is corrected (a few regenerations,
// each cheap next to the exact sums) until the edge count is within 1% of the registry's.
SetCollection rmat_stand_in(const json& entry, const std::string& name, bool directed, bool keep_loops,
                            std::uint64_t seed, int threads, EdgeListReport& rep, json& detail) {
  const std::uint64_t nodes = entry.at("nodes").get<std::uint64_t>(), edges = entry.at("edges").get<std::uint64_t>();
  unsigned scale = 1;
  while ((std::uint64_t{1} << scale) < nodes) ++scale;
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the name: each data set its own graph
  for (const unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ULL;
  RmatOptions ro;
  ro.scale = scale;
  ro.seed = derive_seed(seed, h);
  ro.undirected = !directed;
  ro.keep_self_loops = keep_loops;
  ro.nodes = nodes;  // ids past the data set's node count fold back as they are drawn
  ro.threads = threads;
  double factor = static_cast<double>(edges) / static_cast<double>(std::uint64_t{1} << scale);
  SetCollection g;
  std::uint64_t got = 0;
  int rounds = 0;
  for (; rounds < 5; ++rounds) {
    ro.edge_factor = factor;
    g = generate_rmat(ro, &rep);
    got = registry_edges(g, directed, keep_loops);
    if (std::abs(static_cast<double>(got) - static_cast<double>(edges)) <= 0.01 * static_cast<double>(edges)) break;
    factor *= std::clamp(static_cast<double>(edges) / static_cast<double>(std::max<std::uint64_t>(got, 1)), 0.5, 4.0);
  }
  rep.symmetrised = !directed;
  detail = {{"stand_in_for", name}, {"nodes", nodes}, {"edges", got}, {"registry_edges", edges}, {"scale", ro.scale},
            {"edge_factor", ro.edge_factor}, {"seed", ro.seed}, {"a", ro.a}, {"b", ro.b}, {"c", ro.c},
            {"folded_to_nodes", nodes}, {"rounds", std::min(rounds + 1, 5)}};
  return g;
}

// The config's "task" object, decoded once (params.hpp: TypedTask). The choice-valued options
// stay strings: they name data sources and registry fields, not a library enum.
struct GraphOptions {
  std::string source = "dataset", directed = "registry", self_loops = "registry";
  std::size_t power = 1, queries = 2000;
  std::uint64_t query_seed = 1;
  bool ground_truth = true;
  unsigned rmat_scale = 19;
  double rmat_edge_factor = 13.0;
  std::uint64_t rmat_seed = 1;
  static const ParamTable<GraphOptions>& table();
};

const ParamTable<GraphOptions>& GraphOptions::table() {
  using K = ParamSpec::Kind;
  using O = GraphOptions;
  static const auto t = ParamTable<O>()
      .add(&O::source, "source", K::String, "dataset", "dataset: the registry's edge list (absent: an R-MAT graph of its nodes and edges stands in); rmat: a synthetic R-MAT graph of rmat_scale standing in for it", {"dataset", "rmat"})
      .add(&O::directed, "directed", K::String, "registry", "undirected: every edge in both sets (registry: its 'directed' field)", {"registry", "directed", "undirected"})
      .add(&O::self_loops, "self_loops", K::String, "registry", "u-u edges (registry: its 'self_loops' field, else keep)", {"registry", "keep", "drop"})
      .add(&O::power, "power", K::PositiveInt, 1, "kernel J^p")
      .add(&O::queries, "queries", K::PositiveInt, 2000, "query nodes (seeded uniform choice)")
      .add(&O::query_seed, "query_seed", K::NonNegativeInt, 1, "seed of the query-node choice")
      .add(&O::ground_truth, "ground_truth", K::Bool, true, "compute the exact sums (false: timing studies only)")
      .add(&O::rmat_scale, "rmat_scale", K::PositiveInt, 19, "rmat: 2^scale nodes")
      .add(&O::rmat_edge_factor, "rmat_edge_factor", K::PositiveNumber, 13.0, "rmat: generated edges per node")
      .add(&O::rmat_seed, "rmat_seed", K::NonNegativeInt, 1, "rmat, and the R-MAT stand-in for an absent graph file: generator seed");
  return t;
}

// The graph of a config: the registry's edge list (cached as CSR), an R-MAT stand-in for an
// absent file, or a synthetic R-MAT graph. Returns the record's "source_detail".
json load_graph(GraphContext& c, const ExperimentConfig& cfg, const GraphOptions& o, const RunEnvironment& env,
                const json& entry, bool directed, const std::string& loops, bool synthetic, EdgeListReport& rep) {
  json source_json;
  std::string path;  // the registry graph's file
  std::string missing;  // why it is absent: an R-MAT graph of its size stands in
  if (c.source == "dataset") {
    if (entry.value("kind", "table") != "graph")
      throw ConfigError(cfg.file + ": $.dataset.name: '" + cfg.dataset + "' is not a graph data set");
    std::string tried;
    path = find_graph_file(entry, env.search, tried);
    if (path.empty()) {
      missing = "no copy of " + entry.at("files").at(0).at("path").get<std::string>() + " in " + tried;
      const auto positive = [&](const char* key) {
        return entry.contains(key) && entry.at(key).is_number_unsigned() && entry.at(key).get<std::uint64_t>() > 0;
      };
      const bool sized = positive("nodes") && positive("edges");
      if (!env.search.allow_stand_in || !sized)
        throw InputError("graph data set '" + cfg.dataset + "': " + missing +
                         (sized ? std::string()
                                : " (registry entry '" + cfg.dataset +
                                      "' gives no positive \"nodes\" and \"edges\" to size an R-MAT stand-in)") +
                         "; fetch it with datasets/fetch.sh " + cfg.dataset + ", or use task.source = \"rmat\"");
    }
  }
  if (!missing.empty()) {
    c.source = "rmat";
    json detail;
    c.sets = rmat_stand_in(entry, cfg.dataset, directed, loops == "keep", o.rmat_seed,
                              env.threads, rep, detail);
    c.data.stand_in = true;
    c.data.stand_in_reason = missing + "; an R-MAT graph of the registry's size (" + std::to_string(c.sets.size()) +
                                " nodes, " + detail.at("edges").dump() + " edges; the registry says " +
                                entry.at("edges").dump() + ") stands in";
    source_json = {{"rmat", detail}};
  } else if (c.source == "dataset") {
    EdgeListOptions eo;
    eo.format = entry.value("format", "snap_edgelist") == "jlg" ? EdgeListFormat::Jlg : EdgeListFormat::Snap;
    eo.symmetrise = !directed;
    eo.keep_self_loops = loops == "keep";
    fs::create_directories(env.cache_dir);
    const std::string cache = (fs::path(env.cache_dir) / ("graph-" + cfg.dataset + (eo.symmetrise ? "-u" : "-d") +
                                                           (eo.keep_self_loops ? "k" : "s") + ".csr")).string();
    c.sets = read_edge_list_cached(path, cache, eo, &rep, &c.graph_cache_hit);
    c.data.files = {path};
    c.data.data_dir = fs::path(path).parent_path().string();
    if (entry.contains("substitute")) c.data.substitute = entry.at("substitute");  // another version of the paper's graph
    source_json = {{"file", fs::path(path).filename().string()}, {"csr_cache", cache}};
  } else {
    RmatOptions ro;
    ro.scale = o.rmat_scale;
    ro.edge_factor = o.rmat_edge_factor;
    ro.seed = o.rmat_seed;
    ro.undirected = !directed;
    ro.keep_self_loops = loops == "keep";
    ro.threads = env.threads;
    c.sets = generate_rmat(ro, &rep);
    c.data.stand_in = !synthetic;
    if (!synthetic)
      c.data.stand_in_reason = "R-MAT synthetic graph (scale " + std::to_string(ro.scale) + ", edge factor " +
                                  std::to_string(ro.edge_factor) + ") in place of " + cfg.dataset;
    source_json = {{"rmat", {{"scale", ro.scale}, {"edge_factor", ro.edge_factor}, {"seed", ro.seed}, {"a", ro.a}, {"b", ro.b}, {"c", ro.c}}}};
  }
  return source_json;
}

// The exact Jaccard sums of the query nodes (power 1), cached under a key of the CSR's bytes.
void exact_truth(GraphContext& c, const ExperimentConfig& cfg, const RunEnvironment& env, const json& source_json,
                 std::size_t q, std::uint64_t query_seed) {
  // The common-neighbour engine adds J itself; J^p would need per-pair values.
  if (c.power != 1) throw ConfigError(cfg.file + ": $.task.power: the exact ground truth supports power 1 only");
  // Keyed by the CSR's bytes, so a changed file, loader or option can never reuse it.
  const json key_json = {{"what", "graph exact jaccard sums"}, {"dataset", cfg.dataset}, {"source", source_json.contains("rmat") ? source_json : json("dataset")},
                         {"power", c.power}, {"queries", q}, {"query_seed", query_seed},
                         {"csr_sha256", csr_digest(c.sets)}};
  const std::string key = key_json.dump();
  const std::string path = (fs::path(env.cache_dir) / ("graph-" + sha256_hex(key.data(), key.size()).substr(0, 24) + ".bin")).string();
  if (read_truth_cache(path, key, c.truth) && c.truth.size() == c.query_nodes.size()) {
    c.truth_cache_hit = true;
  } else {
    const auto t1 = std::chrono::steady_clock::now();
    if (Progress::enabled()) std::cerr << "exact Jaccard sums: " << c.query_nodes.size() << " query nodes...\n";
    SetCollection transposed;
    if (!c.symmetric) transposed = transpose_sets(c.sets, c.nodes);
    c.truth = exact_jaccard_sums_nodes(c.sets, c.symmetric ? c.sets : transposed, c.query_nodes, env.threads);
    c.truth_seconds = seconds_since(t1);
    fs::create_directories(env.cache_dir);  // also when no file was read (an R-MAT graph)
    write_truth_cache(path, key, c.truth);
    if (Progress::enabled()) std::cerr << "exact Jaccard sums: " << c.truth_seconds << " s, cached in " << path << "\n";
  }
}

// The record's data summary of a loaded graph.
json graph_summary(const GraphContext& c, const json& source_json, bool directed, const std::string& loops,
                   const EdgeListReport& rep) {
  return {{"name", c.data.name},
          {"stand_in", c.data.stand_in},
          {"source", c.source},
          {"source_detail", source_json},
          {"nodes", c.nodes},
          {"edges", c.edges},
          {"directed", directed},
          {"self_loops", loops},
          {"self_loops_seen", rep.self_loops},
          {"duplicates", rep.duplicates},
          {"max_degree", rep.max_degree},
          {"empty_sets", rep.empty_sets},
          {"queries", c.query_nodes.size()},
          {"power", c.power},
          {"graph_cache_hit", c.graph_cache_hit},
          {"load_seconds", c.load_seconds},
          {"truth_cache_hit", c.truth_cache_hit},
          {"truth_seconds", c.truth_seconds}};
}

class GraphTask final : public TypedTask<GraphOptions> {
 public:
  std::string name() const override { return "graph"; }
  std::vector<std::string> metrics() const override { return {"mre", "mre_debiased", "mre_density"}; }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const GraphOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<GraphContext>();
    ctx->config = &cfg;
    const json& entry = env.datasets->entry(cfg.dataset);
    ctx->source = o.source;
    ctx->power = o.power;
    const std::string dir_opt = o.directed;
    const bool directed = dir_opt == "registry" ? entry.value("directed", true) : dir_opt == "directed";
    std::string loops = o.self_loops;
    if (loops == "registry") loops = entry.value("self_loops", "keep");
    EdgeListReport rep;
    ctx->data.name = cfg.dataset;
    const auto t0 = std::chrono::steady_clock::now();
    // A synthetic registry entry (R-MAT) is generated, whatever task.source says, and is the
    // data set itself; R-MAT in place of a real entry (task.source = "rmat", or its file
    // absent) is a stand-in and recorded as such.
    const bool synthetic = entry.value("synthetic", "") == "rmat";
    if (synthetic) ctx->source = "rmat";
    const json source_json = load_graph(*ctx, cfg, o, env, entry, directed, loops, synthetic, rep);
    ctx->load_seconds = seconds_since(t0);
    ctx->symmetric = !directed || rep.symmetrised;
    ctx->nodes = ctx->sets.size();
    ctx->edges = ctx->sets.ids.size();

    const std::size_t q = o.queries;
    ctx->query_nodes = choose_query_nodes(ctx->nodes, q, o.query_seed);
    ctx->query_sets = sets_of_nodes(ctx->sets, ctx->query_nodes);

    if (o.ground_truth) exact_truth(*ctx, cfg, env, source_json, q, o.query_seed);
    ctx->data_summary = graph_summary(*ctx, source_json, directed, loops, rep);
    if (ctx->data.stand_in) ctx->data_summary["stand_in_reason"] = ctx->data.stand_in_reason;
    note_substitute(ctx->data_summary, ctx->data);  // real data of another version than the paper's
    return ctx;
  }
};

// The graph sketch both graph methods build (densified MinHash, R x W).
struct GraphSketchParams {
  std::size_t rows = 0, width = 0;
  BuildStrategy strategy = BuildStrategy::Auto;
  int threads = 0;
  static const ParamTable<GraphSketchParams>& table() {
    using K = ParamSpec::Kind;
    using P = GraphSketchParams;
    static const auto t = ParamTable<P>()
                              .add(&P::rows, "rows", K::PositiveInt, 2000, "sketch rows R")
                              .add(&P::width, "width", K::PositiveInt, 100000, "sketch columns W")
                              .add(&P::strategy, "strategy",
                                   {{"auto", BuildStrategy::Auto},
                                    {"two_phase", BuildStrategy::TwoPhase},
                                    {"replicate", BuildStrategy::Replicate},
                                    {"split_rows", BuildStrategy::SplitRows}},
                                   "auto", "parallel build strategy")
                              .add(&P::threads, "threads", K::NonNegativeInt, 0, "build threads (0 = the run's)");
    return t;
  }
};

// RaceSketch::debiased is affine in the estimate but sums all R x W counts (N-hat) on every
// call; 2000 calls on Slashdot's 200M counts took minutes. Two calls give the same map.
std::vector<double> debias_all(const RaceSketch& sketch, const std::vector<double>& sums) {
  const double b = sketch.debiased(0.0), a = sketch.debiased(1.0) - b;
  std::vector<double> out(sums.size());
  for (std::size_t k = 0; k < sums.size(); ++k) out[k] = a * sums[k] + b;
  return out;
}

// The release parameters of a graph sketch (densified MinHash, R x W, p) with its build's threads
// and strategy: the method's "threads" when set, else the run's.
ReleaseParams jaccard_params(const GraphSketchParams& p, std::size_t power, int run_threads) {
  ReleaseParams params;
  params.family.kernel = Kernel::Jaccard;
  params.family.rows = p.rows;
  params.family.power = power;
  params.width = p.width;
  params.threads = p.threads > 0 ? p.threads : run_threads;
  params.strategy = p.strategy;
  return params;
}

struct RaceGraphParams {
  GraphSketchParams sketch;
  NoiseMechanism mechanism = NoiseMechanism::DiscreteLaplace;
  QueryOptions query;  // estimator, mom_groups
  bool file_bytes = false;
  std::string check() const {
    if (sketch.width > (std::uint64_t{1} << 32)) return "width must be at most 2^32";
    return {};
  }
  static const ParamTable<RaceGraphParams>& table() {
    using K = ParamSpec::Kind;
    using P = RaceGraphParams;
    static const auto t =
        ParamTable<P>()
            .add(&P::sketch, GraphSketchParams::table())
            .add(&P::mechanism, "mechanism",
                 {{"discrete_laplace", NoiseMechanism::DiscreteLaplace}, {"floored_laplace", NoiseMechanism::FlooredLaplace}},
                 "discrete_laplace", "noise")
            .add(&P::query, query_estimator_table())
            .add(&P::file_bytes, "file_bytes", K::Bool, false,
                 "write the first cell's sketch of rep 0 (.rsk, compressed) and record its size");
    return t;
  }
};

class RaceGraphMethod final : public TypedMethod<GraphContext, RaceGraphParams> {
 public:
  std::string name() const override { return "race_graph"; }
  std::string task() const override { return "graph"; }

  void run(const GraphContext& ctx, const RaceGraphParams& p, const CellGroup& group, const Emit& emit) const override {
    if (ctx.truth.size() != ctx.query_nodes.size())
      throw ConfigError(ctx.config->file + ": $.task.ground_truth: race_graph needs the exact sums (set it to true)");
    const std::size_t rows = p.sketch.rows, width = p.sketch.width;
    check_sketch_fits(rows, width, 2);  // the exact counts + one privatized copy
    const ExactSketch exact = build_group_exact(jaccard_params(p.sketch, ctx.power, ctx.threads), group, ctx.sets);
    const BuildReport& br = exact.report();
    const double hash_seconds = br.seconds;  // the build's own time (not the family or the counts' allocation)

    const QueryOptions& plain = p.query;  // debiased estimates come from debias_all
    const SetBatch queries{&ctx.query_sets, 0, ctx.query_sets.size()};
    // The LSH error floor: the same queries on the exact counts (never released).
    const auto exact_sums = exact.counts().query_sets(queries, plain);
    const double mre_nonprivate = mean_relative_error(exact_sums, ctx.truth);
    const auto exact_deb = debias_all(exact.counts(), exact_sums);
    const double mre_nonprivate_debiased = mean_relative_error(exact_deb, ctx.truth);

    const auto mechanism = p.mechanism;
    const auto spec_of = [&](double epsilon) {
      PrivacySpec spec;
      spec.epsilon = epsilon;
      spec.mechanism = mechanism;
      return spec;
    };
    sweep_epsilons(exact, group, emit, spec_of, [&](const CellRelease<Release>& c) {
      const RaceSketch& sketch = c.release.sketch();
      const auto t2 = std::chrono::steady_clock::now();
      const auto sums = sketch.query_sets(queries, plain);
      const double query_seconds = seconds_since(t2);
      const auto deb = debias_all(sketch, sums);

      json file_bytes = nullptr;
      if (p.file_bytes && group.rep == 0 && c.index == 0) {
        const fs::path tmp = fs::temp_directory_path() / ("privrace-graph-" + std::to_string(c.cell.noise_seed) + ".rsk");
        try {
          save_sketch(tmp.string(), sketch);
          file_bytes = static_cast<std::uint64_t>(fs::file_size(tmp));
        } catch (const std::exception& e) {
          std::cerr << "warning: sketch file size not measured: " << e.what() << "\n";
        }
        std::error_code ec;
        fs::remove(tmp, ec);
      }
      CellResult r;
      r.metrics = ctx.metrics(sums, deb, sketch.n_hat());
      r.build_seconds = hash_seconds + c.noise_seconds;
      r.query_seconds_per_query = query_seconds / static_cast<double>(sums.size());
      r.details = {{"hash_seconds", hash_seconds},
                   {"noise_seconds", c.noise_seconds},
                   {"build_strategy", br.strategy},
                   {"build_threads", br.threads},
                   {"nodes", ctx.nodes},
                   {"edges", ctx.edges},
                   {"n_hat", sketch.n_hat()},
                   {"mre_nonprivate", mre_nonprivate},
                   {"mre_nonprivate_debiased", mre_nonprivate_debiased},
                   {"sketch_bytes_raw", static_cast<std::uint64_t>(rows) * width * sizeof(std::int64_t)},
                   {"sketch_file_bytes", file_bytes},
                   {"noise_scale", sketch.privacy().noise_scale.value_or(0.0)}};
      return r;
    });
  }
};

// Build time only: each group generates (or reuses) an R-MAT graph of its own scale and
// sketches it with its own thread count, so one config covers 1..T threads x growing graphs.
struct RaceGraphScalingParams {
  GraphSketchParams sketch;
  unsigned rmat_scale = 0;
  double edge_factor = 0;
  std::uint64_t graph_seed = 0;
  static const ParamTable<RaceGraphScalingParams>& table() {
    using K = ParamSpec::Kind;
    using P = RaceGraphScalingParams;
    static const auto t = ParamTable<P>()
                              .add(&P::sketch, GraphSketchParams::table())
                              .add(&P::rmat_scale, "rmat_scale", K::PositiveInt, nullptr, "2^scale nodes")
                              .add(&P::edge_factor, "edge_factor", K::PositiveNumber, 16.0, "generated edges per node")
                              .add(&P::graph_seed, "graph_seed", K::NonNegativeInt, 1, "R-MAT seed");
    return t;
  }
};

class RaceGraphScalingMethod final : public TypedMethod<GraphContext, RaceGraphScalingParams> {
 public:
  std::string name() const override { return "race_graph_scaling"; }
  std::string task() const override { return "graph"; }
  bool uses_epsilon() const override { return false; }

  void run(const GraphContext& ctx, const RaceGraphScalingParams& p, const CellGroup& group, const Emit& emit) const override {
    RmatOptions ro;
    ro.scale = p.rmat_scale;
    ro.edge_factor = p.edge_factor;
    ro.seed = p.graph_seed;
    ro.threads = ctx.threads;
    std::shared_ptr<const SetCollection> graph;
    double generate_seconds = 0;
    {
      // Consecutive groups usually share the graph (only threads or rep differ): keep the last.
      std::lock_guard<std::mutex> lock(mutex_);
      const json key = {ro.scale, ro.edge_factor, ro.seed};
      if (!cached_ || cached_key_ != key) {
        cached_.reset();
        const auto t0 = std::chrono::steady_clock::now();
        cached_ = std::make_shared<const SetCollection>(generate_rmat(ro));
        generate_seconds = seconds_since(t0);
        cached_key_ = key;
      }
      graph = cached_;
    }
    const std::size_t rows = p.sketch.rows, width = p.sketch.width;
    check_sketch_fits(rows, width, 1);
    const ExactSketch exact = build_group_exact(jaccard_params(p.sketch, 1, ctx.threads), group, *graph);  // timed, never released
    const BuildReport& br = exact.report();
    const double build_seconds = br.seconds;  // the build's own time (not the family or the counts' allocation)
    const double edges = static_cast<double>(graph->ids.size());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      CellResult r;
      r.metrics = {{"mre", nan}, {"mre_debiased", nan}, {"mre_density", nan}};
      r.build_seconds = build_seconds;
      r.details = {{"nodes", graph->size()},
                   {"edges", graph->ids.size()},
                   {"build_threads", br.threads},
                   {"build_strategy", br.strategy},
                   {"ns_per_edge", build_seconds / edges * 1e9},
                   {"ns_per_edge_row", build_seconds / (edges * static_cast<double>(rows)) * 1e9},
                   {"generate_seconds", generate_seconds},
                   {"sketch_bytes_raw", static_cast<std::uint64_t>(rows) * width * sizeof(std::int64_t)}};
      emit(i, std::move(r));
    }
  }

 private:
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const SetCollection> cached_;
  mutable json cached_key_;
};

}  // namespace

json GraphContext::metrics(const std::vector<double>& sums, const std::vector<double>& debiased_sums, double n_hat) const {
  const double n = static_cast<double>(nodes);
  std::vector<double> dens(sums.size()), truth_dens(truth.size());
  for (std::size_t i = 0; i < sums.size(); ++i) dens[i] = n_hat > 0 ? sums[i] / n_hat : std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < truth.size(); ++i) truth_dens[i] = truth[i] / n;
  return {{"mre", mean_relative_error(sums, truth)},
          {"mre_debiased", mean_relative_error(debiased_sums, truth)},
          {"mre_density", mean_relative_error(dens, truth_dens)}};
}

void register_graph_task(Registry& registry) {
  registry.add_task(std::make_unique<GraphTask>());
  registry.add_method(std::make_unique<RaceGraphMethod>());
  registry.add_method(std::make_unique<RaceGraphScalingMethod>());
}

}  // namespace privrace::experiments
