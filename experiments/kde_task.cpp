#include "kde_task.hpp"

#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <iostream>

#include "metrics.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/progress.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/builder.hpp"
#include "params.hpp"
#include "race_params.hpp"
#include "release_sweep.hpp"

namespace fs = std::filesystem;

namespace privrace::experiments {
namespace {

constexpr char kCacheMagic[8] = {'P', 'R', 'G', 'T', 'C', 'A', 'C', 'H'};
constexpr std::uint32_t kCacheVersion = 1;


template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string matrix_digest(const DenseMatrix& m) {
  return sha256_hex(m.data(), static_cast<std::size_t>(m.size()) * sizeof(Real));
}

// Where the KDE task's queries come from.
enum class QuerySource { HeldOut, Grid };

// The config's "task" object, decoded once (params.hpp: TypedTask).
struct KdeOptions {
  Kernel kernel = Kernel::L2;
  double bandwidth = 1.0;
  std::size_t power = 1;
  std::size_t queries = 2000;
  QuerySource query_source = QuerySource::HeldOut;
  std::uint64_t query_seed = 1;
  WrittenNumber grid_from = 0.0, grid_to = 1.0;  // the ground truth's cache key holds them as written
  static const ParamTable<KdeOptions>& table() {
    using K = ParamSpec::Kind;
    using O = KdeOptions;
    static const auto t = ParamTable<O>()
        .add(&O::kernel, "kernel", {{"l2", Kernel::L2}, {"angular", Kernel::Angular}}, "l2", "LSH kernel of the ground truth (and of RACE)")
        .add(&O::bandwidth, "bandwidth", K::PositiveNumber, 1.0, "p-stable bucket width w (l2)")
        .add(&O::power, "power", K::PositiveInt, 1, "concatenated hashes p: kernel k^p")
        .add(&O::queries, "queries", K::PositiveInt, 2000, "held-out queries (or grid points)")
        .add(&O::query_source, "query_source", {{"held_out", QuerySource::HeldOut}, {"grid", QuerySource::Grid}}, "held_out",
             "held_out: a seeded sample removed from the data; grid: evenly spaced (1-D)")
        .add(&O::query_seed, "query_seed", K::NonNegativeInt, 1, "seed of the held-out split")
        .add(&O::grid_from, "grid_from", K::Number, 0.0, "grid: first point")
        .add(&O::grid_to, "grid_to", K::Number, 1.0, "grid: last point");
    return t;
  }
};

// The query set (held out from the data, or an evenly spaced 1-D grid), the rows sketched and
// the spacing of the l2 error.
void choose_queries(KdeContext& ctx, const ExperimentConfig& cfg, const KdeOptions& o) {
  const std::size_t q = o.queries;
  if (o.query_source == QuerySource::HeldOut) {
    if (q >= static_cast<std::size_t>(ctx.data.x.rows()))
      throw ConfigError(cfg.file + ": $.task.queries: " + std::to_string(q) + " held-out queries leave no data (the data set has " +
                        std::to_string(ctx.data.x.rows()) + " rows)");
    const Split split = seeded_split(static_cast<std::size_t>(ctx.data.x.rows()), q, o.query_seed);
    ctx.queries = select_rows(ctx.data.x, split.held_out);
    ctx.train = select_rows(ctx.data.x, split.kept);
    ctx.spacing = 1.0 / static_cast<double>(q);  // l2_error = root mean square error
  } else {
    if (ctx.data.x.cols() != 1)
      throw ConfigError(cfg.file + ": $.task.query_source: \"grid\" needs 1-dimensional data (this data has " +
                        std::to_string(ctx.data.x.cols()) + " features)");
    const double a = o.grid_from, b = o.grid_to;
    ctx.queries.resize(static_cast<Eigen::Index>(q), 1);
    for (std::size_t i = 0; i < q; ++i)
      ctx.queries(static_cast<Eigen::Index>(i), 0) = static_cast<Real>(q == 1 ? a : a + (b - a) * i / (q - 1));
    ctx.train = ctx.data.x;
    ctx.spacing = q > 1 ? (b - a) / static_cast<double>(q - 1) : 1.0;
  }
}

class KdeTask final : public TypedTask<KdeOptions> {
 public:
  std::string name() const override { return "kde"; }
  std::vector<std::string> metrics() const override {
    return {"mre", "mre_debiased", "l2_error", "l2_error_debiased"};
  }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const KdeOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<KdeContext>();
    ctx->config = &cfg;
    ctx->kernel.kernel = o.kernel;
    ctx->kernel.bandwidth = o.bandwidth;
    ctx->kernel.power = o.power;
    const json& entry = env.datasets->entry(cfg.dataset);
    Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
    prep = Preprocessing::from_json(cfg.preprocessing, prep);
    ctx->data = load_dataset(*env.datasets, cfg.dataset, prep, env.search);

    const std::size_t q = o.queries;
    const std::string source = o.query_source == QuerySource::HeldOut ? "held_out" : "grid";
    choose_queries(*ctx, cfg, o);

    // Ground truth, cached under a key naming everything it depends on (data bytes included).
    const json key_json = {{"what", "kde exact density"},
                           {"dataset", cfg.dataset},
                           {"stand_in", ctx->data.stand_in},
                           {"preprocessing", ctx->data.preprocessing},
                           {"queries", {{"source", source}, {"count", q}, {"seed", o.query_seed},
                                        {"grid", {o.grid_from, o.grid_to}}}},
                           {"kernel", ctx->kernel.to_json()},
                           {"train_rows", ctx->train.rows()},
                           {"train_sha256", matrix_digest(ctx->train)},
                           {"queries_sha256", matrix_digest(ctx->queries)}};
    const std::string key = key_json.dump();
    const std::string path = (fs::path(env.cache_dir) / ("kde-" + sha256_hex(key.data(), key.size()).substr(0, 24) + ".bin")).string();
    if (read_truth_cache(path, key, ctx->truth)) {
      ctx->cache_hit = true;
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      if (Progress::enabled())
        std::cerr << "exact kernel sums: " << ctx->train.rows() << " rows x " << ctx->queries.rows() << " queries...\n";
      auto sums = exact_kernel_sums(ctx->train, ctx->queries, ctx->kernel);
      const double n = static_cast<double>(ctx->train.rows());
      for (auto& s : sums) s /= n;
      ctx->truth = std::move(sums);
      write_truth_cache(path, key, ctx->truth);
      if (Progress::enabled()) std::cerr << "exact kernel sums: " << seconds_since(t0) << " s, cached in " << path << "\n";
    }
    ctx->data_summary = {{"name", cfg.dataset},
                         {"stand_in", ctx->data.stand_in},
                         {"rows", ctx->data.x.rows()},
                         {"dim", ctx->data.x.cols()},
                         {"train_rows", ctx->train.rows()},
                         {"queries", ctx->queries.rows()},
                         {"query_source", source},
                         {"checksum", ctx->data.checksum_status},
                         {"scale", ctx->data.preprocessing.value("scale", "none")},
                         {"kernel", ctx->kernel.to_json()}};
    if (ctx->data.stand_in) ctx->data_summary["stand_in_reason"] = ctx->data.stand_in_reason;
    note_substitute(ctx->data_summary, ctx->data);  // real data of another version than the paper's
    if (const auto& pp = ctx->data.preprocessing; pp.contains("pca")) {
      // The projection is fit on the data: the records say so (the full basis stays in the
      // preprocessing record that keys the ground-truth cache).
      const json& pca = pp.at("pca");
      ctx->data_summary["pca"] = {{"components", pca.at("components")},
                                  {"input_dim", pca.at("input_dim")},
                                  {"explained_variance_ratio", pca.at("explained_variance_ratio")},
                                  {"private", false}};
    }
    if (ctx->data.preprocessing.contains("max_rows")) ctx->data_summary["max_rows"] = ctx->data.preprocessing.at("max_rows");
    return ctx;
  }
};

// Parameters every KDE RACE method shares (all but how R is chosen).
struct RaceSketchParams {
  std::size_t width = 0;
  QueryOptions query;  // estimator, mom_groups
  RaceNoise noise;
  std::string check() const {
    if (const std::string e = noise.check(); !e.empty()) return e;
    if (width > (std::uint64_t{1} << 32)) return "width must be at most 2^32";
    return {};
  }
  static const ParamTable<RaceSketchParams>& table() {
    static const auto t = ParamTable<RaceSketchParams>()
                              .add(&RaceSketchParams::width, "width", ParamSpec::Kind::PositiveInt, 1000, "sketch columns W")
                              .add(&RaceSketchParams::query, query_estimator_table())
                              .add(&RaceSketchParams::noise, RaceNoise::table());
    return t;
  }
};

// Private RACE (Coleman & Shrivastava, Algorithm 1 + 2) on the task's kernel, R rows for each
// cell given by rows_for(epsilon). The counts before noise depend only on (R, W, LSH seed), so
// consecutive cells with the same R share one hashing pass, and every epsilon privatizes its
// own copy with fresh, independent noise (the exact counts are never released or stored).
void run_race_cells(const KdeContext& ctx, const RaceSketchParams& p, const CellGroup& group, const Method::Emit& emit,
                    const std::function<std::size_t(double)>& rows_for,
                    const std::function<json(double)>& rule_details) {
  std::optional<ExactSketch> exact;
  double hash_seconds = 0;
  // The exact counts for this cell's R: hashed again only when R changes.
  const auto exact_for = [&](double epsilon) -> const ExactSketch& {
    const std::size_t rows = rows_for(epsilon);
    if (exact && exact->counts().rows() == rows) return *exact;
    exact.reset();  // free the previous counts before hashing again
    ReleaseParams params;
    params.family.kernel = ctx.kernel.kernel;
    params.family.bandwidth = ctx.kernel.bandwidth;
    params.family.power = ctx.kernel.power;
    params.family.rows = rows;
    params.width = p.width;
    params.threads = ctx.threads;
    exact.emplace(build_group_exact(params, group, ctx.train));
    hash_seconds = exact->report().seconds;  // the build's own time (not the family or the counts' allocation)
    return *exact;
  };

  QueryOptions plain = p.query, debiased = p.query;
  debiased.debias = true;
  sweep_epsilons(
      group, emit,
      [&](double epsilon, const NoiseSource& noise) { return exact_for(epsilon).release(p.noise.privacy(epsilon), noise); },
      [&](const CellRelease<Release>& c) {
        const RaceSketch& sketch = c.release.sketch();
        const auto t2 = std::chrono::steady_clock::now();
        const auto dens = race_densities(sketch, ctx.queries, {plain, debiased});
        const double query_seconds = seconds_since(t2);
        CellResult r;
        r.metrics = ctx.metrics(dens[0], dens[1]);
        r.build_seconds = hash_seconds + c.noise_seconds;
        r.query_seconds_per_query = query_seconds / static_cast<double>(ctx.queries.rows());
        r.details = {{"hash_seconds", hash_seconds},
                     {"noise_seconds", c.noise_seconds},
                     {"build_strategy", to_string(c.release.build().strategy)},
                     {"n_hat", sketch.n_hat()},
                     {"n_train", ctx.train.rows()},
                     {"noise_scale", sketch.privacy().noise_scale.value_or(0.0)},
                     {"realised_epsilon", sketch.privacy().realised_epsilon.value_or(c.cell.epsilon)}};
        if (rule_details) {
          const json extra = rule_details(c.cell.epsilon);  // named: a temporary would die before the loop
          for (const auto& [k, v] : extra.items()) r.details[k] = v;
        }
        // The qualitative density plot (CCS'21 Figure 3, eps = 1) draws the released function, as
        // the baselines keep it: small grids, first repetition only.
        if (group.rep == 0 && ctx.queries.rows() <= 500 && std::abs(c.cell.epsilon - 1.0) < 1e-9) {
          r.details["released_on_queries"] = dens[0];
          r.details["truth_on_queries"] = ctx.truth;
        }
        return r;
      });
}

// RACE with R from the config (the paper's figures sweep R and keep the best per epsilon).
struct RaceKdeParams {
  std::size_t rows = 0;
  RaceSketchParams sketch;
  std::string check() const { return sketch.check(); }
  static const ParamTable<RaceKdeParams>& table() {
    static const auto t = ParamTable<RaceKdeParams>()
                              .add(&RaceKdeParams::rows, "rows", ParamSpec::Kind::PositiveInt, nullptr, "sketch rows R")
                              .add(&RaceKdeParams::sketch, RaceSketchParams::table());
    return t;
  }
};

class RaceKdeMethod final : public TypedMethod<KdeContext, RaceKdeParams> {
 public:
  std::string name() const override { return "race"; }
  std::string task() const override { return "kde"; }

  void run(const KdeContext& ctx, const RaceKdeParams& p, const CellGroup& group, const Emit& emit) const override {
    const std::size_t rows = p.rows;
    run_race_cells(ctx, p.sketch, group, emit, [rows](double) { return rows; }, nullptr);
  }
};

// RACE with R fixed by Corollary 1's rule, R = ceil(level N eps / sqrt 2) (derivation at
// corollary1_rows in tasks/kde.hpp), capped at max_rows, so no grid is searched and the cost of
// tuning R is visible next to the best-over-grid curve. The rule never reads the queries or
// the ground truth. ASSUMPTION: N, the number of sketched rows, is public, as the paper's
// Corollary 1 assumes (f~ <= N); under add/remove-one DP N itself is not released, so a data
// owner would put a public upper bound on N here, which only makes R larger. Each cell's noise
// is calibrated to its own R: one record touches one cell per row, L1 sensitivity R, Laplace
// scale R / eps (privacy/budget.hpp). Not in the rule: the noise of N-hat = total / R, whose
// sd sqrt(2 R W) / eps grows with R (the corollary's bound takes N as known).
struct RaceCorollary1Params {
  double level = 0;
  std::size_t max_rows = 0;
  RaceSketchParams sketch;
  std::string check() const {
    if (level > 1.0) return "level must be at most 1 (k(x, q) <= 1)";
    return sketch.check();
  }
  static const ParamTable<RaceCorollary1Params>& table() {
    using K = ParamSpec::Kind;
    static const auto t =
        ParamTable<RaceCorollary1Params>()
            .add(&RaceCorollary1Params::level, "level", K::PositiveNumber, 1.0,
                 "assumed mean of sqrt(k(x, q)): f~ = level N (1 = the paper's bound f~ <= N)")
            .add(&RaceCorollary1Params::max_rows, "max_rows", K::PositiveInt, 10000, "memory cap on R (R x W int64 counts per copy)")
            .add(&RaceCorollary1Params::sketch, RaceSketchParams::table());
    return t;
  }
};

class RaceCorollary1KdeMethod final : public TypedMethod<KdeContext, RaceCorollary1Params> {
 public:
  std::string name() const override { return "race_corollary1"; }
  std::string task() const override { return "kde"; }

  void run(const KdeContext& ctx, const RaceCorollary1Params& p, const CellGroup& group, const Emit& emit) const override {
    const double n = static_cast<double>(ctx.train.rows());  // public by assumption (see above)
    const double level = p.level;
    const auto max_rows = p.max_rows;
    const auto rule = [=](double eps) { return corollary1_rows(n, eps, level); };
    run_race_cells(
        ctx, p.sketch, group, emit,
        [=](double eps) { return static_cast<std::size_t>(std::min(rule(eps), static_cast<double>(max_rows))); },
        [=](double eps) {
          return json{{"rows_rule", "corollary1: R = ceil(level * N * eps / sqrt(2)), capped at max_rows"},
                      {"rows_assumption", "N (rows sketched) treated as public, as in the paper's Corollary 1"},
                      {"n_assumed", n},
                      {"level", level},
                      {"rows_by_rule", rule(eps)},
                      {"rows", std::min(rule(eps), static_cast<double>(max_rows))},
                      {"rows_capped", rule(eps) > static_cast<double>(max_rows)}};
        });
  }
};

}  // namespace

json KdeContext::metrics(const std::vector<double>& plain, const std::vector<double>& debiased) const {
  return {{"mre", mean_relative_error(plain, truth)},
          {"mre_debiased", mean_relative_error(debiased, truth)},
          {"l2_error", l2_function_error(plain, truth, spacing)},
          {"l2_error_debiased", l2_function_error(debiased, truth, spacing)}};
}

void register_kde_task(Registry& registry) {
  registry.add_task(std::make_unique<KdeTask>());
  registry.add_method(std::make_unique<RaceKdeMethod>());
  registry.add_method(std::make_unique<RaceCorollary1KdeMethod>());
}

bool read_truth_cache(const std::string& path, const std::string& key, std::vector<double>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t head = sizeof kCacheMagic + 4 + 8;
  if (bytes.size() < head + 8 + 4 || std::memcmp(bytes.data(), kCacheMagic, sizeof kCacheMagic) != 0) return false;
  std::uint32_t version, crc_stored;
  std::uint64_t key_len, count;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&key_len, bytes.data() + 12, 8);
  if (version != kCacheVersion || key_len > bytes.size() - head) return false;
  if (bytes.compare(head, key_len, key) != 0 || key_len != key.size()) return false;
  const std::size_t pos = head + key_len;
  if (bytes.size() < pos + 8 + 4) return false;
  std::memcpy(&count, bytes.data() + pos, 8);
  if (count > (bytes.size() - pos - 12) / 8 || bytes.size() != pos + 8 + count * 8 + 4) {
    std::cerr << "warning: " << path << ": truncated ground-truth cache; recomputing\n";
    return false;
  }
  std::memcpy(&crc_stored, bytes.data() + bytes.size() - 4, 4);
  const auto crc = static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size() - 4)));
  if (crc != crc_stored) {
    std::cerr << "warning: " << path << ": ground-truth cache fails its checksum; recomputing\n";
    return false;
  }
  out.resize(count);
  std::memcpy(out.data(), bytes.data() + pos + 8, count * 8);
  return true;
}

void write_truth_cache(const std::string& path, const std::string& key, const std::vector<double>& truth) {
  std::string out(kCacheMagic, sizeof kCacheMagic);
  put(out, kCacheVersion);
  put(out, static_cast<std::uint64_t>(key.size()));
  out += key;
  put(out, static_cast<std::uint64_t>(truth.size()));
  out.append(reinterpret_cast<const char*>(truth.data()), truth.size() * sizeof(double));
  const auto crc = static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size())));
  put(out, crc);
  write_file_atomically(path, out);
}

}  // namespace privrace::experiments
