// The `privrace` command: sketch, query, merge, info, m2m.
// Exit codes: 0 success, 2 bad usage, 1 any other error (bad input, I/O, resources).
#include <omp.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/core/version.hpp"
#include "privrace/io/edge_list.hpp"
#include "privrace/io/table_reader.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "privrace/tasks/graph.hpp"
#include "privrace/tasks/m2m.hpp"

namespace po = boost::program_options;
using namespace privrace;

namespace {

constexpr const char* kTopUsage =
    "usage: privrace <command> [options]\n"
    "\n"
    "commands:\n"
    "  sketch   build a differentially private RACE sketch of a table or a collection of sets\n"
    "  query    estimate densities (kernel sum / N-hat) from a sketch\n"
    "  merge    add sketches built with identical parameters and seeds\n"
    "  info     print a sketch's header (and, with --counts, its counts)\n"
    "  m2m      estimate moments, CDFs, covariance or counting queries from a feature sketch (M2M)\n"
    "\n"
    "Run 'privrace <command> --help' for the options of one command, 'privrace --version' for the version.\n";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Parses argv after the command name; --help prints `desc` and exits 0.
po::variables_map parse(const std::string& usage, const po::options_description& desc, int argc, char** argv,
                        const po::positional_options_description* positional = nullptr) {
  po::variables_map vm;
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(desc);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      std::cout << usage << "\n" << desc;
      std::exit(0);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

int cmd_sketch(int argc, char** argv) {
  po::options_description desc("options");
  std::string input, output, kernel, format, mechanism, neighbors, pair_mode, strategy, domain;
  double bandwidth = 1.0, delta = 0.0, sigma = 1.0, num_share = 0.98;
  std::size_t power = 1, rows = 0, width = 0, dim = 0, chunk_rows = 0, features = 0, bins = 0;
  int threads = 0, label_column = 0;
  desc.add_options()("help,h", "show this help")
      ("input,i", po::value(&input)->required(), "data file: CSV (header optional), whitespace, libsvm or sets; .gz allowed; - = stdin")
      ("output,o", po::value(&output)->required(), "sketch file to write (written atomically)")
      ("kernel,k", po::value(&kernel)->default_value("l2"), "l2 (p-stable) | angular (SRP) | angular_pair (regression surrogate) | jaccard (densified MinHash) | jaccard_classic (independent MinHashes) | rff (random Fourier features, for M2M) | hist (per-attribute histograms, for M2M)")
      ("bandwidth", po::value(&bandwidth)->default_value(1.0), "p-stable bucket width w (l2)")
      ("power,p", po::value(&power)->default_value(1), "concatenated hashes per row (p)")
      ("rows,R", po::value(&rows), "sketch rows R (LSH kernels)")
      ("width,W", po::value(&width), "sketch columns W (LSH kernels)")
      ("features", po::value(&features)->default_value(0), "rff: number of features m = 2 m' (even)")
      ("sigma", po::value(&sigma)->default_value(1.0), "rff: Gaussian kernel bandwidth sigma")
      ("bins", po::value(&bins)->default_value(0), "hist: equal bins per attribute")
      ("domain", po::value(&domain), "hist: LO:HI for every attribute, or LO1:HI1,LO2:HI2,... one per attribute; records outside are refused")
      ("num-share", po::value(&num_share)->default_value(0.98), "rff/hist: share of epsilon for the feature sums (epsilon_num); the released record count gets the rest (epsilon_den)")
      ("epsilon,e", po::value<std::string>(), "privacy budget epsilon > 0")
      ("delta", po::value(&delta)->default_value(0.0), "delta for --mechanism gaussian")
      ("mechanism", po::value(&mechanism)->default_value("discrete_laplace"), "discrete_laplace | floored_laplace (the paper's floor(S + Lap(R/eps))) | gaussian")
      ("neighbors", po::value(&neighbors)->default_value("add-remove"), "add-remove (unbounded DP) | replace (doubles the sensitivity)")
      ("seed", po::value<std::uint64_t>(), "fix the LSH seed and the noise (reproducible; the file is marked NOT fit for release)")
      ("threads,t", po::value(&threads)->default_value(0), "OpenMP threads (0 = all)")
      ("no-privacy", "write the exact counts without noise (never for release)")
      ("label-column", po::value(&label_column)->default_value(0), "1-based column to drop from the features (CSV/whitespace)")
      ("format", po::value(&format)->default_value("auto"), "auto | csv | whitespace | libsvm | sets (one set of ids per line) | edgelist (SNAP 'u v' lines, .gz ok: node u's set = its out-neighbours) | jlg")
      ("dim", po::value(&dim)->default_value(0), "libsvm: number of features (needed when reading stdin)")
      ("pair-mode", po::value(&pair_mode)->default_value("query"), "angular_pair: insert (x and -x, sensitivity 2R) | query (q and -q, sensitivity R)")
      ("strategy", po::value(&strategy)->default_value("auto"), "parallel build: auto | replicate (per-thread sketches) | split_rows | two_phase (sets: the default)")
      ("undirected", "edgelist: add every edge in both directions (an undirected graph listed once or twice)")
      ("drop-self-loops", "edgelist: drop u-u edges (they are counted in the summary either way)")
      ("nodes", po::value<std::uint64_t>(), "edgelist: declared node count; ids must be below it")
      ("graph-cache", po::value<std::string>(), "edgelist: binary CSR cache file, reused while the input is unchanged")
      ("chunk-rows", po::value(&chunk_rows)->default_value(65536), "rows read per chunk (bounds memory)")
      ("quiet,q", "no summary on stderr")
      ("timings", "print the stage timings as one JSON line on stderr (read, allocate, fill, merge, noise, encode, write, fsync)");
  const auto vm = parse("usage: privrace sketch --input FILE --rows R --width W (--epsilon E | --no-privacy) -o OUT.rsk [options]\n"
                        "       privrace sketch --input FILE --kernel rff --features M --sigma S (--epsilon E | --no-privacy) -o OUT.rsk\n"
                        "       privrace sketch --input FILE --kernel hist --bins B --domain LO:HI (--epsilon E | --no-privacy) -o OUT.rsk",
                        desc, argc, argv);
  // rff and hist are feature-map sketches (M2M): their shape comes from --features / --bins and
  // the data, and they release the record count with a share of epsilon.
  const bool feature_kernel = kernel == "rff" || kernel == "hist";
  std::vector<double> domain_lo, domain_hi;
  if (feature_kernel) {
    if (vm.count("rows") || vm.count("width"))
      throw UsageError("--rows and --width do not apply to --kernel " + kernel + " (its shape comes from " +
                       (kernel == "rff" ? "--features" : "--bins and the data") + ")");
    if (kernel == "rff") {
      if (features == 0 || features % 2 != 0)
        throw UsageError("--features must be a positive even number (m = 2 m' random Fourier features), got " +
                         std::to_string(features));
      if (!(sigma > 0.0) || !std::isfinite(sigma)) throw UsageError("--sigma must be a positive number, got " + std::to_string(sigma));
      if (mechanism == "floored_laplace")
        throw UsageError("--mechanism floored_laplace adds floating-point Laplace noise; the rff sums get exact discrete Laplace on their grid (or gaussian)");
      // The rff features are bounded for any record, so the sketch has no domain; M2M's is
      // declared when answering. Refused rather than silently ignored.
      if (vm.count("domain"))
        throw UsageError("--domain does not apply to --kernel rff (its features are bounded for every record); "
                         "declare M2M's domain with privrace m2m --domain");
      rows = 2;
      width = features / 2;
    } else {
      if (bins == 0) throw UsageError("--bins must be at least 1, got 0");
      if (!vm.count("domain")) throw UsageError("--kernel hist needs --domain LO:HI (or one LO:HI per attribute, comma-separated)");
      std::tie(domain_lo, domain_hi) = parse_box_domain(domain);
      width = bins;
    }
    if (!(num_share > 0.0 && num_share < 1.0))
      throw UsageError("--num-share must be in (0, 1) (the record count needs a share of epsilon), got " + std::to_string(num_share));
  } else {
    if (!vm.count("rows")) throw UsageError("the option '--rows' is required but missing");
    if (!vm.count("width")) throw UsageError("the option '--width' is required but missing");
  }
  const bool no_privacy = vm.count("no-privacy") > 0;
  PrivacySpec spec;
  if (no_privacy) {
    if (vm.count("epsilon")) throw UsageError("--epsilon and --no-privacy exclude each other");
  } else {
    if (!vm.count("epsilon")) throw UsageError("--epsilon is required (or --no-privacy for an exact, non-releasable sketch)");
    const std::string text = vm["epsilon"].as<std::string>();
    std::size_t used = 0;
    try {
      spec.epsilon = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || !(spec.epsilon > 0.0) || !std::isfinite(spec.epsilon))
      throw UsageError("--epsilon must be a positive number, got '" + text + "'");
    spec.delta = delta;
    spec.mechanism = parse_mechanism(mechanism);
    spec.neighbors = parse_neighbors(neighbors);
    if (feature_kernel) spec.count_share = 1.0 - num_share;
    spec.validate();
  }
  if (!feature_kernel && rows == 0) throw UsageError("--rows must be at least 1");
  if (width == 0) throw UsageError("--width must be at least 1");
  if (chunk_rows == 0) throw UsageError("--chunk-rows must be at least 1");
  if (threads < 0) throw UsageError("--threads must be 0 (all) or positive, got " + std::to_string(threads));
  if (threads > 0) omp_set_num_threads(threads);  // the noise, the encoder and the checksum too
  if (rows > 0) check_sketch_fits(rows, width, 1);  // refuse before reading any data (hist: rows = attributes)

  const bool seeded = vm.count("seed") > 0;
  const std::uint64_t master = seeded ? vm["seed"].as<std::uint64_t>() : os_random_seed();
  FamilySpec fam;
  fam.kernel = kernel;
  fam.bandwidth = bandwidth;
  fam.power = power;
  fam.rows = rows;
  fam.seed = derive_seed(master, 101);
  fam.pair_mode = pair_mode;
  fam.features = features;
  fam.sigma = sigma;
  fam.bins = bins;
  fam.lo = domain_lo;
  fam.hi = domain_hi;
  const bool set_kernel = kernel == "jaccard" || kernel == "jaccard_classic";
  const bool graph_input = format == "edgelist" || format == "snap" || format == "jlg";
  if (graph_input && !set_kernel) throw UsageError("--format " + format + " needs --kernel jaccard");
  if (!graph_input && (vm.count("undirected") || vm.count("drop-self-loops") || vm.count("nodes") || vm.count("graph-cache")))
    throw UsageError("--undirected, --drop-self-loops, --nodes and --graph-cache apply to --format edgelist or jlg");
  if (kernel != "l2" && kernel != "angular" && kernel != "angular_pair" && !set_kernel && !feature_kernel)
    make_family(fam);  // throws the unknown-kernel message

  BuildOptions build;
  build.threads = threads;
  build.strategy = strategy;
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<RaceSketch> sketch;
  BuildReport report;
  double read_seconds = 0.0;  // graphs are read before the build; tables stream into it
  nlohmann::json graph_info;
  if (set_kernel) {
    if (format != "auto" && format != "sets" && !graph_input)
      throw UsageError("the " + kernel + " kernel reads --format sets (one set of ids per line), edgelist or jlg");
    SetCollection sets;
    if (graph_input) {
      EdgeListOptions eopts;
      eopts.format = parse_edge_list_format(format);
      eopts.symmetrise = vm.count("undirected") > 0;
      eopts.keep_self_loops = vm.count("drop-self-loops") == 0;
      if (vm.count("nodes")) eopts.declared_nodes = vm["nodes"].as<std::uint64_t>();
      EdgeListReport g;
      bool cached = false;
      if (vm.count("graph-cache")) sets = read_edge_list_cached(input, vm["graph-cache"].as<std::string>(), eopts, &g, &cached);
      else sets = read_edge_list(input, eopts, &g);
      graph_info = {{"nodes", g.nodes}, {"edge_lines", g.lines}, {"stored_edges", g.edges}, {"self_loops", g.self_loops},
                    {"self_loops_kept", eopts.keep_self_loops}, {"duplicates", g.duplicates}, {"max_degree", g.max_degree},
                    {"empty_sets", g.empty_sets}, {"symmetrised", g.symmetrised}, {"from_cache", cached}};
    } else {
      sets = read_sets(input);
    }
    if (sets.size() == 0) throw InputError(input + ": no sets");
    read_seconds = seconds_since(t0);
    sketch.emplace(std::shared_ptr<const LshFamily>(make_family(fam)), width);
    // Sets go through the two-phase builder (no per-thread sketch copies, no merge).
    report = build_set_sketch(*sketch, sets, SetBuildOptions{.threads = threads, .strategy = strategy});
  } else {
    if (format == "sets") throw UsageError("--format sets needs --kernel jaccard");
    TableOptions topts;
    topts.format = parse_table_format(format);
    topts.label_column = label_column;
    topts.dim = dim;
    TableReader reader(input, topts);
    fam.dim = reader.dim();
    sketch.emplace(std::shared_ptr<const LshFamily>(make_family(fam)), width);
    try {
      report = build_dense_stream(
          *sketch, [&](DenseMatrix& chunk) { return reader.next_chunk(chunk, chunk_rows); }, build);
    } catch (const InputError& e) {
      const std::string what = e.what();
      if (what.rfind("record ", 0) == 0) throw InputError(input + ": " + what);  // a record the family refused
      throw;
    }
  }
  const double build_seconds = seconds_since(t0) - read_seconds;
  NoiseReport noise_report;
  if (!no_privacy) noise_report = privatize(*sketch, spec, NoiseSource{seeded, derive_seed(master, 202)});
  else if (feature_kernel) record_exact_count(*sketch);
  const double noise_seconds = seconds_since(t0) - read_seconds - build_seconds;
  nlohmann::json extra = {{"build", {{"points", report.points}, {"threads", report.threads}, {"strategy", report.strategy},
                                     {"input", std::filesystem::path(input).filename().string()}}}};
  if (!graph_info.is_null()) extra["graph"] = graph_info;
  const double before_write = seconds_since(t0);
  SketchWriteTimings write_timings;
  save_sketch(output, *sketch, no_privacy, extra, &write_timings);
  if (vm.count("timings")) {
    // Wall seconds per stage. Tables stream: "read" is the time the build waited for the
    // (serial) reader, inside "build". fill_thread_max / fill_thread_mean shows imbalance.
    const auto& st = report.stages;
    const nlohmann::json timings = {
        {"threads", report.threads}, {"strategy", report.strategy}, {"points", report.points},
        {"rows", sketch->rows()}, {"width", sketch->width()}, {"total", seconds_since(t0)},
        {"graph_read", read_seconds}, {"build", build_seconds}, {"read", st.read}, {"allocate", st.allocate},
        {"validate", st.validate}, {"fill", st.fill}, {"fill_thread_max", st.fill_thread_max},
        {"fill_thread_mean", st.fill_thread_mean}, {"merge", st.merge}, {"noise", noise_seconds},
        {"noise_setup", noise_report.setup_seconds}, {"noise_draw", noise_report.draw_seconds},
        {"noise_blocks", noise_report.blocks}, {"encode", write_timings.encode_seconds},
        {"write", write_timings.write_seconds}, {"fsync", write_timings.sync_seconds}, {"file_bytes", write_timings.bytes}};
    std::fprintf(stderr, "privrace: timings %s\n", timings.dump().c_str());
  }
  if (!vm.count("quiet")) {
    const double total = seconds_since(t0);
    std::fprintf(stderr, "privrace: sketched %zu records (%s, R=%zu, W=%zu) on %d thread(s), %s, in %.3f s "
                 "(%sbuild %.3f s, noise %.3f s, write %.3f s)%s -> %s\n",
                 report.points, kernel.c_str(), rows, width, report.threads, report.strategy.c_str(), total,
                 read_seconds > 0 ? ("read " + std::to_string(read_seconds).substr(0, 5) + " s, ").c_str() : "",
                 build_seconds, noise_seconds, total - before_write, no_privacy ? " WITHOUT NOISE" : (seeded ? " (seeded noise: NOT fit for release)" : ""), output.c_str());
    if (!graph_info.is_null())
      std::fprintf(stderr, "privrace: graph: %s nodes, %s neighbours stored from %s edge lines%s; %s self-loops (%s), %s duplicate edges removed; max degree %s\n",
                   graph_info["nodes"].dump().c_str(), graph_info["stored_edges"].dump().c_str(), graph_info["edge_lines"].dump().c_str(),
                   graph_info["symmetrised"].get<bool>() ? " (symmetrised)" : "", graph_info["self_loops"].dump().c_str(),
                   graph_info["self_loops_kept"].get<bool>() ? "kept" : "dropped", graph_info["duplicates"].dump().c_str(),
                   graph_info["max_degree"].dump().c_str());
  }
  return 0;
}

int cmd_query(int argc, char** argv) {
  po::options_description desc("options");
  std::string sketch_path, queries, estimator, format;
  std::size_t groups = 5;
  int threads = 0;
  desc.add_options()("help,h", "show this help")
      ("sketch", po::value(&sketch_path)->required(), "sketch file (positional)")
      ("queries,Q", po::value(&queries)->required(), "query file: same layout as the sketched data (sets for jaccard); - = stdin")
      ("estimator", po::value(&estimator)->default_value("mean"), "mean | mom (median of means)")
      ("mom-groups", po::value(&groups)->default_value(5), "groups for the median of means")
      ("debias", "remove the 1/W collisions of the column hash: (E W - N) / (W - 1)")
      ("kernel-sum", "print the kernel-sum estimate instead of dividing by N-hat")
      ("format", po::value(&format)->default_value("auto"), "query file format: auto | csv | whitespace | libsvm | sets")
      ("threads,t", po::value(&threads)->default_value(0), "OpenMP threads answering batches of queries (0 = all); the output is the same for any count");
  po::positional_options_description pos;
  pos.add("sketch", 1);
  const auto vm = parse("usage: privrace query SKETCH.rsk --queries FILE [--estimator mean|mom] [--debias]", desc, argc, argv, &pos);
  QueryOptions opts;
  opts.estimator = parse_estimator(estimator);
  opts.mom_groups = groups;
  opts.debias = vm.count("debias") > 0;
  if (threads < 0) throw UsageError("--threads must be 0 (all) or positive, got " + std::to_string(threads));
  opts.threads = threads;
  if (threads > 0) omp_set_num_threads(threads);  // the file's decoder too
  if (groups == 0) throw UsageError("--mom-groups must be at least 1");
  const RaceSketch sketch = load_sketch(sketch_path);
  std::vector<double> sums;
  if (sketch.family().input_kind() == InputKind::Sets) {
    const SetCollection sets = read_sets(queries);
    sums = sketch.query_sets(SetBatch{&sets, 0, sets.size()}, opts);
  } else {
    TableOptions topts;
    topts.format = parse_table_format(format);
    topts.dim = sketch.family().dim();
    TableReader reader(queries, topts);
    if (reader.dim() != sketch.family().dim())
      throw InputError(queries + ": queries have " + std::to_string(reader.dim()) + " columns, the sketch was built on " +
                       std::to_string(sketch.family().dim()) + "-dimensional data");
    DenseMatrix chunk;
    while (const std::size_t n = reader.next_chunk(chunk, 65536)) {
      const auto part = sketch.query_dense(chunk.topRows(static_cast<Eigen::Index>(n)), opts);
      sums.insert(sums.end(), part.begin(), part.end());
    }
  }
  const double n_hat = sketch.n_hat();
  const bool raw = vm.count("kernel-sum") > 0;
  if (!raw && !(n_hat > 0.0))
    std::fprintf(stderr, "privrace: warning: N-hat = %g is not positive (noise dominates); densities are meaningless\n", n_hat);
  std::string out;
  char buf[64];
  for (const double s : sums) {
    std::snprintf(buf, sizeof buf, "%.9g\n", raw ? s : s / n_hat);
    out += buf;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int cmd_merge(int argc, char** argv) {
  po::options_description desc("options");
  std::vector<std::string> inputs;
  std::string output;
  desc.add_options()("help,h", "show this help")
      ("inputs", po::value(&inputs)->multitoken(), "sketch files (positional)")
      ("output,o", po::value(&output)->required(), "merged sketch file")
      ("no-privacy", "allow writing the merge of non-private sketches");
  po::positional_options_description pos;
  pos.add("inputs", -1);
  const auto vm = parse("usage: privrace merge A.rsk B.rsk ... -o C.rsk", desc, argc, argv, &pos);
  if (inputs.size() < 2) throw UsageError("merge needs at least two sketch files");
  RaceSketch merged = load_sketch(inputs[0]);
  std::vector<nlohmann::json> parts{merged.privacy()};
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const RaceSketch next = load_sketch(inputs[i]);
    const std::string diff = merged.incompatibility(next);
    if (!diff.empty())
      throw InputError("cannot merge '" + inputs[i] + "' into '" + inputs[0] + "': different " + diff);
    merged.merge(next);
    parts.push_back(next.privacy());
  }
  merged.set_privacy(merged_privacy(parts));
  save_sketch(output, merged, vm.count("no-privacy") > 0, {{"merged_inputs", inputs}});
  return 0;
}

int cmd_info(int argc, char** argv) {
  po::options_description desc("options");
  std::string sketch_path;
  desc.add_options()("help,h", "show this help")("sketch", po::value(&sketch_path)->required(), "sketch file (positional)")
      ("counts", "also print the R x W counts as CSV (one row per line)");
  po::positional_options_description pos;
  pos.add("sketch", 1);
  const auto vm = parse("usage: privrace info SKETCH.rsk [--counts]", desc, argc, argv, &pos);
  nlohmann::json header;
  const RaceSketch sketch = load_sketch(sketch_path, &header);
  if (!sketch.family().accumulates_values()) header["n_hat"] = sketch.n_hat();
  std::cout << header.dump(2) << "\n";
  if (vm.count("counts")) {
    std::string line;
    for (std::size_t r = 0; r < sketch.rows(); ++r) {
      line.clear();
      for (std::size_t c = 0; c < sketch.width(); ++c) {
        if (c) line += ',';
        line += std::to_string(sketch.row(r)[c]);
      }
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  }
  return 0;
}

// M2M (Houssiau et al.): post-processing of a released feature sketch, no budget spent.
int cmd_m2m(int argc, char** argv) {
  po::options_description desc("options");
  std::string sketch_path, domain;
  M2mRequest request;
  desc.add_options()("help,h", "show this help")
      ("sketch", po::value(&sketch_path)->required(), "feature sketch file: rff, hist, or a RACE sketch (positional)")
      ("task", po::value(&request.task)->required(), "mean | moment2 | cdf | cov | count")
      ("domain", po::value(&domain)->required(), "LO:HI, the box [LO, HI]^d every record lies in (M2M's psi is uniform on it)")
      ("samples", po::value(&request.samples)->default_value(100000), "n_s synthetic points")
      ("seed", po::value(&request.seed)->default_value(0x4d324d), "seed of the synthetic points (public)")
      ("queries", po::value(&request.queries_path), "count: one query per line, 'i op value; j op value; k op value', op <= or >=, attributes from 0");
  po::positional_options_description pos;
  pos.add("sketch", 1);
  parse("usage: privrace m2m SKETCH --task mean|moment2|cdf|cov|count --domain LO:HI [--samples N] [--queries FILE]", desc,
        argc, argv, &pos);
  std::tie(request.lo, request.hi) = parse_domain(domain);
  if (request.samples == 0) throw UsageError("--samples must be positive");
  const FeatureSketchRelease release = load_feature_release(sketch_path);
  const std::string out = answer_m2m(release, request);  // complete before anything is printed
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kTopUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kTopUsage, stdout);
    return 0;
  }
  if (command == "--version" || command == "version") {
    std::printf("privrace %s (%s)\n", version(), git_commit());
    return 0;
  }
  try {
    if (command == "sketch") return cmd_sketch(argc - 1, argv + 1);
    if (command == "query") return cmd_query(argc - 1, argv + 1);
    if (command == "merge") return cmd_merge(argc - 1, argv + 1);
    if (command == "info") return cmd_info(argc - 1, argv + 1);
    if (command == "m2m") return cmd_m2m(argc - 1, argv + 1);
    std::fprintf(stderr, "privrace: unknown command '%s'\n\n%s", command.c_str(), kTopUsage);
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "privrace %s: %s\n", command.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "privrace %s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
}
