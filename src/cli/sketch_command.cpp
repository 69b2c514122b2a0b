// `privrace sketch` and `privrace merge`: options -> the release API (sketch/release.hpp) -> a file.
#include <omp.h>
#include <sys/stat.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#ifdef PRIVRACE_WITH_MPI
#include "distributed.hpp"
#endif
#include "inputs.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/number.hpp"
#include "privrace/core/zeroed_pages.hpp"
#include "privrace/io/edge_list.hpp"
#include "privrace/io/table_reader.hpp"
#include "privrace/lsh/kernel_registry.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/sketch/release.hpp"
#include "privrace/sketch/sketch_io.hpp"

namespace privrace::cli {

namespace {


// The records of a set kernel: one set per line, or a graph's out-neighbourhoods. `info` gets
// the graph summary for the header.
SetCollection read_set_input(const SketchJob& job, nlohmann::json& info) {
  if (!job.graph_input) return read_sets(job.input);
  const EdgeListOptions eopts = edge_list_options(job);
  EdgeListReport g;
  bool cached = false;
  SetCollection sets = job.vm.count("graph-cache")
                           ? read_edge_list_cached(job.input, job.vm["graph-cache"].as<std::string>(), eopts, &g, &cached)
                           : read_edge_list(job.input, eopts, &g);
  info = graph_record(g, eopts, cached);
  return without_empty_sets(std::move(sets));
}

// --like FILE: the public parameters of a sketch file (read and checked as any sketch) or of a
// parameters file (JSON with "family" and "width"). Options given as well must agree with them.
void apply_like(const po::variables_map& vm, ReleaseParams& params, std::string& kernel_name) {
  const std::string path = vm["like"].as<std::string>();
  nlohmann::json header;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open the --like file");
    char magic[8] = {};
    in.read(magic, sizeof magic);
    if (in.gcount() == 8 && std::string_view(magic, 8) == "PRIVRACE") {
      load_sketch(path, &header);
    } else {
      try {
        in.clear();
        in.seekg(0);
        header = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception& e) {
        throw InputError(path + ": --like expects a sketch file or a JSON parameters file (" + e.what() + ")");
      }
    }
  }
  ReleaseParams like;
  try {
    like = like_params(header, params);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  const FamilySpec &a = params.family, &b = like.family;
  const std::pair<const char*, bool> agree[] = {
      {"kernel", a.kernel == b.kernel},       {"rows", a.rows == b.rows},
      {"width", params.width == like.width},  {"bandwidth", a.bandwidth == b.bandwidth},
      {"power", a.power == b.power},          {"pair-mode", a.pair_mode == b.pair_mode},
      {"features", a.features == b.features}, {"sigma", a.sigma == b.sigma},
      {"bins", a.bins == b.bins},             {"domain", a.lo == b.lo && a.hi == b.hi},
      {"hash-seed", params.hash_seed == like.hash_seed}};
  for (const auto& [name, same] : agree)
    if (vm.count(name) && !vm[name].defaulted() && !same)
      throw UsageError("--" + std::string(name) + " differs from the parameters of --like " + path + " (leave it out to take theirs)");
  params = like;
  kernel_name = to_string(params.family.kernel);
}

// The summary line's shape of a sketch: "l2, R=50, W=64" for the LSH kernels; the feature maps'
// own terms, "hist, 3 attributes x 32 bins" and "rff, 200 features (100 cos + 100 sin sums)".
std::string sketch_shape(const std::string& kernel, const Release& release) {
  const std::size_t rows = release.rows(), width = release.width();
  const std::string plural = width == 1 ? "" : "s";
  if (kernel == "hist")
    return kernel + ", " + std::to_string(rows) + (rows == 1 ? " attribute" : " attributes") + " x " + std::to_string(width) +
           " bin" + plural;
  if (kernel == "rff")
    return kernel + ", " + std::to_string(rows * width) + " features (" + std::to_string(width) + " cos + " +
           std::to_string(width) + " sin sum" + plural + ")";
  return kernel + ", R=" + std::to_string(rows) + ", W=" + std::to_string(width);
}

}  // namespace

namespace {

// The options' values that are not the job's own fields, as the option parser fills them.
struct SketchOptionValues {
  std::string mechanism, neighbors, pair_mode, strategy, domain;
  double bandwidth = 1.0, delta = 0.0, sigma = 1.0, num_share = 0.98;
};

// The sketch command's options, filling `job` and `v`.
void add_sketch_options(po::options_description& desc, SketchJob& job, SketchOptionValues& v, const std::string& threads_help) {
  // --kernel's help: every registered kernel, "NAME (HELP)", as the registry lists them.
  std::string kernel_help;
  for (const Kernel k : registered_kernels()) {
    const KernelInfo& info = kernel_info(k);
    kernel_help += (kernel_help.empty() ? "" : " | ") + info.name + (info.help.empty() ? "" : " (" + info.help + ")");
  }
  desc.add_options()("help,h", "show this help")
      ("input,i", po::value(&job.inputs)->required()->multitoken(), "data file: CSV (header optional), whitespace, libsvm or sets; .gz allowed; - = stdin. "
                 "Several tables are read as one, their records in order (each file's header line skipped): repeat --input "
                 "or list the files after it, give a quoted glob ('part-*.csv.gz', expanded in sorted order) or @LIST "
                 "(a file of paths, one per line; relative paths are relative to LIST's folder). "
                 "Under mpirun (a -DPRIVRACE_MPI=ON build) each rank reads its byte range of one plain CSV/whitespace file, "
                 "or, for several, whole files assigned by size; a set file or an edge list is split by bytes too (an edge "
                 "list's pairs then go to the ranks that own their nodes); one .gz file, stdin, libsvm, a .jlg file or "
                 "--graph-cache cannot be split and is read by rank 0 alone")
      ("output,o", po::value(&job.output)->required(), "sketch file to write (written atomically)")
      ("kernel,k", po::value(&job.kernel)->default_value("l2"), kernel_help.c_str())
      ("bandwidth", po::value(&v.bandwidth)->default_value(1.0), "p-stable bucket width w (l2)")
      ("power,p", po::value<std::string>()->default_value("1"), "concatenated hashes per row (p)")
      ("rows,R", po::value<std::string>(), "sketch rows R (LSH kernels)")
      ("width,W", po::value<std::string>(), "sketch columns W (LSH kernels)")
      ("features", po::value<std::string>()->default_value("0"), "rff: number of features m = 2 m' (even)")
      ("sigma", po::value(&v.sigma)->default_value(1.0), "rff: Gaussian kernel bandwidth sigma")
      ("bins", po::value<std::string>()->default_value("0"), "hist: equal bins per attribute")
      ("domain", po::value(&v.domain), "hist: LO:HI for every attribute, or LO1:HI1,LO2:HI2,... one per attribute; records outside are refused")
      ("num-share", po::value(&v.num_share)->default_value(0.98, "0.98"), "rff/hist: share of epsilon for the feature sums (epsilon_num); the released record count gets the rest (epsilon_den)")
      ("epsilon,e", po::value<std::string>(), "privacy budget epsilon > 0")
      ("delta", po::value(&v.delta)->default_value(0.0), "delta for --mechanism gaussian or discrete_gaussian")
      ("mechanism", po::value(&v.mechanism)->default_value("discrete_laplace"), "discrete_laplace | floored_laplace (the paper's floor(S + Lap(R/eps))) | gaussian (analytic sigma, rounded) | discrete_gaussian (exact, sigma from zCDP)")
      ("neighbors", po::value(&v.neighbors)->default_value("add-remove"), "add-remove (unbounded DP) | replace (doubles the sensitivity)")
      ("seed", po::value<std::uint64_t>(), "fix the LSH seed and the noise (reproducible; the file is marked NOT fit for release); "
               "with --hash-seed, the noise only")
      ("hash-seed", po::value<std::uint64_t>(), "fix the hash functions only (recorded as family.seed, a public parameter): releases of "
                    "several owners built with one hash seed merge, while each draws its own noise from the OS and stays fit for release")
      ("like", po::value<std::string>(), "take every public parameter (kernel, R, W, bandwidth, power, pair mode, features, sigma, bins, "
               "domain, hash seed) from an existing sketch file or a parameters file (JSON with 'family' and 'width'), so that "
               "this release merges with it; options given as well must agree")
      ("threads,t", po::value<std::string>()->default_value("0"), threads_help.c_str())
      ("no-privacy", "write the exact counts without noise (never for release)")
      ("format", po::value(&job.format)->default_value("auto"), "auto | csv | whitespace | libsvm | sets (one set of ids per line) | edgelist (SNAP 'u v' lines, .gz ok: node u's set = its out-neighbours) | jlg")
      ("dim", po::value<std::string>()->default_value("0"), "libsvm: number of features (needed when reading stdin)")
      ("pair-mode", po::value(&v.pair_mode)->default_value("query"), "angular_pair: insert (x and -x, sensitivity 2R) | query (q and -q, sensitivity R)")
      ("strategy", po::value(&v.strategy)->default_value("auto"), "parallel build: auto | replicate (per-thread sketches) | split_rows | two_phase (sets: the default)")
      ("undirected", "edgelist: add every edge in both directions (an undirected graph listed once or twice)")
      ("drop-self-loops", "edgelist: drop u-u edges (they are counted in the summary either way)")
      ("nodes", po::value<std::string>(), "edgelist: declared node count; ids must be below it")
      ("graph-cache", po::value<std::string>(), "edgelist: binary CSR cache file, reused while the input is unchanged")
      ("chunk-rows", po::value<std::string>()->default_value("65536"), "rows read per chunk (bounds memory), rounded up to a multiple of 4096 (the hashing batch) so that the sketch does not depend on it; under mpirun it must be one")
      ("quiet,q", "no summary on stderr")
      ("timings", "print the stage timings as one JSON line on stderr (read, allocate, fill, merge, noise, encode, write, fsync)");
  add_column_options(desc);  // --columns, --drop, --label-column
}

// The counts (range-checked), the hash family and the release's shape from the parsed options.
// Returns the column selection, checked before any data is read.
ColumnSelection read_family(SketchJob& job, const SketchOptionValues& v) {
  const po::variables_map& vm = job.vm;
  ReleaseParams& params = job.params;
  const std::string& kernel = job.kernel;
  // Counts are read as text and range-checked: "-5" must not wrap around (inputs.hpp).
  const auto power = count_option<std::size_t>(vm, "power", 1, 64);
  const auto features = count_option<std::size_t>(vm, "features", 0, kMaxSize);
  const auto bins = count_option<std::size_t>(vm, "bins", 0, kMaxSize);
  const int threads = threads_option(vm);
  const ColumnSelection columns = column_options(vm);  // the SPECs checked before any data is read
  job.dim = count_option<std::size_t>(vm, "dim", 0, kMaxSize);
  job.chunk_rows = count_option<std::size_t>(vm, "chunk-rows", 1, kMaxSize);
  count_option<std::uint64_t>(vm, "nodes", 0, kMaxSize);  // checked here, read by edge_list_options
  params.family.kernel = parse_suggesting([](const std::string& s) { return parse_kernel(s); }, kernel, kernel_names());
  params.family.bandwidth = v.bandwidth;
  params.family.power = power;
  params.family.pair_mode = parse_pair_mode(v.pair_mode);
  params.family.features = features;
  params.family.sigma = v.sigma;
  params.family.bins = bins;
  params.num_share = v.num_share;
  params.threads = threads;
  // The kernel named here (--like may replace it: validate checks the strategy against the final one).
  params.strategy = parse_build_strategy(v.strategy, params.family.kernel);
  if (vm.count("rows")) params.family.rows = count_option<std::size_t>(vm, "rows", 1, kMaxSize);
  if (vm.count("width")) params.width = count_option<std::size_t>(vm, "width", 1, kMaxSize);
  if (vm.count("domain")) std::tie(params.family.lo, params.family.hi) = parse_box_domain(v.domain);
  if (vm.count("hash-seed")) params.hash_seed = vm["hash-seed"].as<std::uint64_t>();
  if (vm.count("like")) apply_like(vm, params, job.kernel);
  return columns;
}

// rff and hist are feature-map sketches (M2M): their shape comes from --features / --bins and
// the data, and they release the record count with a share of epsilon; the LSH kernels need
// --rows and --width (or --like).
void check_shape_options(const SketchJob& job) {
  const po::variables_map& vm = job.vm;
  const std::string& kernel = job.kernel;
  const KernelInfo& info = kernel_info(job.params.kernel());
  if (info.feature_map) {
    if (vm.count("rows") || vm.count("width"))
      throw UsageError("--rows and --width do not apply to --kernel " + kernel + " (its shape comes from " +
                       (info.fields.bins_domain ? "--bins and the data" : "--features") + ")");
    // The rff features are bounded for any record, so the sketch has no domain; M2M's is
    // declared when answering. Refused rather than silently ignored.
    if (!info.fields.bins_domain && vm.count("domain"))
      throw UsageError("--domain does not apply to --kernel rff (its features are bounded for every record); "
                       "declare M2M's domain with privrace m2m --domain");
  } else if (!vm.count("like")) {
    if (!vm.count("rows")) throw UsageError("the option '--rows' is required but missing");
    if (!vm.count("width")) throw UsageError("the option '--width' is required but missing");
  }
}

// --no-privacy, or the privacy of the release: --epsilon and its mechanism; and the output flags.
void read_privacy(SketchJob& job, const SketchOptionValues& v) {
  const po::variables_map& vm = job.vm;
  ReleaseParams& params = job.params;
  job.no_privacy = vm.count("no-privacy") > 0;
  job.quiet = vm.count("quiet") > 0;
  job.timings = vm.count("timings") > 0;
  if (job.no_privacy) {
    if (vm.count("epsilon")) throw UsageError("--epsilon and --no-privacy exclude each other");
  } else {
    if (!vm.count("epsilon")) throw UsageError("--epsilon is required (or --no-privacy for an exact, non-releasable sketch)");
    PrivacySpec spec;
    const std::string text = vm["epsilon"].as<std::string>();
    const std::optional<double> epsilon = parse_finite_number(text);
    if (!epsilon || !(*epsilon > 0.0)) throw UsageError("--epsilon must be a positive number, got '" + text + "'");
    spec.epsilon = *epsilon;
    spec.delta = v.delta;
    spec.mechanism = parse_suggesting([](const std::string& s) { return parse_mechanism(s); }, v.mechanism, kMechanismNames);
    spec.neighbors = parse_suggesting([](const std::string& s) { return parse_neighbors(s); }, v.neighbors, kNeighborNames);
    params.privacy = spec;
  }
}

// The input files (expanded) and their format, checked against the kernel and the output.
void read_inputs(SketchJob& job, const ColumnSelection& columns) {
  const po::variables_map& vm = job.vm;
  ReleaseParams& params = job.params;
  const std::string& kernel = job.kernel;
  const std::string& format = job.format;
  const Kernel k = params.kernel();
  job.set_kernel = is_set_kernel(k);
  job.inputs = expand_inputs(job.inputs);
  check_output_target(job.output, job.inputs);  // not an input, nor a FIFO, link or device
  if (vm.count("graph-cache")) check_output_target(vm["graph-cache"].as<std::string>(), job.inputs);
  job.input = inputs_label(job.inputs);
  if (job.inputs.size() > 1 && job.set_kernel)
    throw UsageError("--kernel " + kernel + " reads one input file; several (" + job.input + ") are read as one table for the other kernels");
  job.graph_input = format == "edgelist" || format == "snap" || format == "jlg";
  if (job.graph_input && !job.set_kernel) throw UsageError("--format " + format + " needs --kernel jaccard");
  // An edge list's records are its nodes' out-neighbour sets, but its neighbouring inputs differ
  // in one edge (one line): the noise is calibrated to the sets that one edge changes.
  if (job.graph_input && params.privacy)
    params.privacy->unit = vm.count("undirected") ? NeighborUnit::UndirectedEdge : NeighborUnit::Edge;
  if (!job.graph_input && (vm.count("undirected") || vm.count("drop-self-loops") || vm.count("nodes") || vm.count("graph-cache")))
    throw UsageError("--undirected, --drop-self-loops, --nodes and --graph-cache apply to --format edgelist or jlg");
  if (job.set_kernel) {
    if (format != "auto" && format != "sets" && !job.graph_input)
      throw UsageError("the " + kernel + " kernel reads --format sets (one set of ids per line), edgelist or jlg");
    if (!columns.keep.empty() || !columns.drop.empty())
      throw UsageError("--columns and --drop select the columns of a table; the " + kernel + " kernel reads sets");
  } else {
    if (format == "sets") throw UsageError("--format sets needs --kernel jaccard");
    job.table.format = parse_suggesting([](const std::string& s) { return parse_table_format(s); }, format, kSketchFormatNames);
    job.table.columns = columns;
    job.table.dim = job.dim;
  }
}

}  // namespace

SketchJob parse_sketch(int argc, char** argv) {
  SketchJob job;
  SketchOptionValues v;
  po::options_description desc("options");
  const std::string threads_help = "OpenMP threads (0 = all, at most " + std::to_string(kMaxThreads) + ")";
  add_sketch_options(desc, job, v, threads_help);
  job.vm = parse("usage: privrace sketch --input FILE --rows R --width W (--epsilon E | --no-privacy) -o OUT.rsk [options]\n"
                 "       privrace sketch --input FILE --kernel rff --features M --sigma S (--epsilon E | --no-privacy) -o OUT.rsk\n"
                 "       privrace sketch --input FILE --kernel hist --bins B --domain LO:HI (--epsilon E | --no-privacy) -o OUT.rsk\n"
                 "       mpirun -np K privrace sketch ... (built with -DPRIVRACE_MPI=ON): the same sketch, byte for byte, from K ranks",
                 desc, argc, argv);
  const ColumnSelection columns = read_family(job, v);
  check_shape_options(job);
  read_privacy(job, v);
  if (job.vm.count("seed")) job.params.seed = job.vm["seed"].as<std::uint64_t>();
  job.params.validate();  // every parameter and the memory bound, before any data is read
  if (job.params.threads > 0) omp_set_num_threads(job.params.threads);  // the noise, the encoder and the checksum too
  read_inputs(job, columns);
  return job;
}

EdgeListOptions edge_list_options(const SketchJob& job) {
  EdgeListOptions eopts;
  eopts.format = parse_edge_list_format(job.format);
  eopts.symmetrise = job.vm.count("undirected") > 0;
  eopts.keep_self_loops = job.vm.count("drop-self-loops") == 0;
  eopts.declared_nodes = count_option<std::uint64_t>(job.vm, "nodes", 0, kMaxSize);
  return eopts;
}

nlohmann::json graph_record(const EdgeListReport& g, const EdgeListOptions& eopts, bool from_cache) {
  nlohmann::json record = {{"nodes", g.nodes}, {"edge_lines", g.lines}, {"stored_edges", g.edges}, {"self_loops", g.self_loops},
          {"self_loops_kept", eopts.keep_self_loops}, {"duplicates", g.duplicates}, {"max_degree", g.max_degree},
          {"empty_sets", g.empty_sets}, {"symmetrised", g.symmetrised}, {"from_cache", from_cache}};
  if (eopts.declared_nodes > 0) record["declared_nodes"] = eopts.declared_nodes;
  return record;
}

SetCollection without_empty_sets(SetCollection sets) {
  SetCollection out;
  out.ids = std::move(sets.ids);
  out.offsets.reserve(sets.offsets.size());
  for (std::size_t i = 1; i < sets.offsets.size(); ++i)
    if (sets.offsets[i] != sets.offsets[i - 1]) out.offsets.push_back(sets.offsets[i]);
  return out;
}

nlohmann::json public_graph_record(const nlohmann::json& graph) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : {"symmetrised", "self_loops_kept", "declared_nodes"})
    if (graph.contains(key)) out[key] = graph.at(key);
  return out;
}

ExactSketch build_local(const SketchJob& job, const MasterSeed& seed, nlohmann::json& graph_info, double& read_seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  if (job.set_kernel) {
    if (job.progress) job.progress->stage("reading " + job.input);
    const SetCollection sets = read_set_input(job, graph_info);
    if (sets.size() == 0) throw InputError(job.input + ": no sets");
    read_seconds = seconds_since(t0);
    if (job.progress) job.progress->stage("building (" + std::to_string(sets.size()) + " sets read)");
    return build_exact(job.params, seed, sets);
  }
  if (job.inputs.size() > 1) {  // several tables, read as one: the records of each file in turn
    TableSequence files(job.inputs, job.table);
    return build_table(job, seed, files.dim(), [&](DenseMatrix& chunk) { return files.next_chunk(chunk, job.chunk_rows); },
                       [&](std::uint64_t n) { return files.locate(n); });
  }
  TableReader reader(job.input, job.table);
  return build_table(job, seed, reader.dim(), [&](DenseMatrix& chunk) { return reader.next_chunk(chunk, job.chunk_rows); });
}

ExactSketch build_table(const SketchJob& job, const MasterSeed& seed, std::size_t dim, const DenseChunkReader& next,
                        std::uint64_t first_record) {
  return build_table(job, seed, dim, next,
                     [&](std::uint64_t n) { return job.input + ": record " + std::to_string(n + first_record); });
}

ExactSketch build_table(const SketchJob& job, const MasterSeed& seed, std::size_t dim, const DenseChunkReader& next,
                        const std::function<std::string(std::uint64_t)>& locate) {
  try {
    if (!job.progress) return build_exact(job.params, seed, dim, next);
    job.progress->stage("reading and hashing");
    return build_exact(job.params, seed, dim, [&](DenseMatrix& chunk) {
      const std::size_t n = next(chunk);
      job.progress->add_rows(n);
      return n;
    });
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind("record ", 0) == 0) {  // a record the family refused: name the file and the record
      std::size_t digits = 7;
      while (digits < what.size() && std::isdigit(static_cast<unsigned char>(what[digits]))) ++digits;
      if (digits > 7) throw InputError(locate(std::stoull(what.substr(7, digits - 7))) + what.substr(digits));
      throw InputError(job.input + ": " + what);
    }
    throw;
  }
}

int cmd_sketch(int argc, char** argv) {
#ifdef PRIVRACE_WITH_MPI
  if (launched_by_mpi()) return distributed_sketch(argc, argv);
#endif
  SketchJob job = parse_sketch(argc, argv);
  // One sketch a process: a released block (the set builder's column matrix) is never taken
  // again at its size, and unmapped at once it gives its pages back for the encoder's buffers
  // instead of holding them to the end (Slashdot: 627 MB off the peak).
  set_page_cache_limit(0);
  ProgressLine progress("privrace: sketch", !job.quiet);  // a terminal's stderr only
  if (progress.active()) job.progress = &progress;
  // Batches of BuildOptions::batch rows start at each chunk's start, and a dense family's hash of
  // a row is one GEMM over its batch, whose float rounding depends on the batch's size: chunks on
  // the batch grid make every --chunk-rows give the same counts. (mpirun refuses other sizes:
  // its ranks' chunks must start on the grid.)
  const std::size_t kBatchRows = BuildOptions{}.batch;  // not constexpr: clang cannot evaluate its std::string member
  job.chunk_rows = (job.chunk_rows + kBatchRows - 1) / kBatchRows * kBatchRows;
  const MasterSeed seed = MasterSeed::resolve(job.params.seed);
  const auto t0 = std::chrono::steady_clock::now();
  double read_seconds = 0.0;  // graphs are read before the build; tables stream into it
  nlohmann::json graph_info;
  ExactSketch exact = build_local(job, seed, graph_info, read_seconds);
  write_sketch(job, std::move(exact), seed, t0, read_seconds, graph_info);
  return 0;
}

void write_sketch(const SketchJob& job, ExactSketch&& exact, const MasterSeed& seed, std::chrono::steady_clock::time_point t0,
                  double read_seconds, const nlohmann::json& graph_info, const nlohmann::json& distributed) {
  const double build_seconds = seconds_since(t0) - read_seconds;
  if (job.progress) job.progress->stage("adding noise");
  const Release release = std::move(exact).release();  // noise once (or, --no-privacy, the exact counts)
  const double noise_seconds = seconds_since(t0) - read_seconds - build_seconds;
  write_release(job, release, seed, t0, read_seconds, build_seconds, noise_seconds, graph_info, distributed);
}

void write_release(const SketchJob& job, const Release& release, const MasterSeed& seed, std::chrono::steady_clock::time_point t0,
                   double read_seconds, double build_seconds, double noise_seconds, const nlohmann::json& graph_info,
                   const nlohmann::json& distributed) {
  const std::string& input = job.input;
  const std::string& output = job.output;
  const std::string& kernel = job.kernel;
  const bool no_privacy = job.no_privacy;
  const BuildReport& report = release.build();
  nlohmann::json extra = {{"build", release.build_record(input)}};
  // A private file keeps the graph options only (public); the statistics (nodes, edges, degrees,
  // duplicates, self-loops) are exact: they go to the summary line below.
  if (!graph_info.is_null()) extra["graph"] = release.is_private() ? public_graph_record(graph_info) : graph_info;
  const double before_write = seconds_since(t0);
  SketchWriteTimings write_timings;
  if (job.progress) job.progress->stage("writing " + output);
  save_release(output, release, extra, &write_timings);
  if (job.progress) job.progress->clear();  // the summary and timings lines start on a clean line
  if (job.timings) {
    // Wall seconds per stage. Tables stream: "read" is the time the build waited for the
    // (serial) reader, inside "build". fill_thread_max / fill_thread_mean shows imbalance.
    const auto& st = report.stages;
    const NoiseReport& noise_report = release.noise();
    nlohmann::json timings = {
        {"threads", report.threads}, {"strategy", report.strategy}, {"points", report.points},
        {"rows", release.rows()}, {"width", release.width()}, {"total", seconds_since(t0)},
        {"graph_read", read_seconds}, {"build", build_seconds}, {"read", st.read}, {"allocate", st.allocate},
        {"validate", st.validate}, {"fill", st.fill}, {"fill_thread_max", st.fill_thread_max},
        {"fill_thread_mean", st.fill_thread_mean}, {"merge", st.merge}, {"noise", noise_seconds},
        {"noise_setup", noise_report.setup_seconds}, {"noise_draw", noise_report.draw_seconds},
        {"noise_blocks", noise_report.blocks}, {"encode", write_timings.encode_seconds},
        {"write", write_timings.write_seconds}, {"fsync", write_timings.sync_seconds}, {"file_bytes", write_timings.bytes}};
    for (const auto& [key, value] : distributed.items()) timings[key] = value;  // ranks, reduce, ...
    std::fprintf(stderr, "privrace: timings %s\n", timings.dump().c_str());
  }
  if (!job.quiet) {
    const double total = seconds_since(t0);
    const std::string ranks = distributed.contains("ranks") ? std::to_string(distributed["ranks"].get<int>()) + " rank(s) x " : "";
    std::fprintf(stderr, "privrace: sketched %zu records (%s) on %s%d thread(s), %s, in %.3f s "
                 "(%sbuild %.3f s, noise %.3f s, write %.3f s)%s -> %s\n",
                 report.points, sketch_shape(kernel, release).c_str(), ranks.c_str(), report.threads, to_string(report.strategy).c_str(), total,
                 read_seconds > 0 ? ("read " + std::to_string(read_seconds).substr(0, 5) + " s, ").c_str() : "",
                 build_seconds, noise_seconds, total - before_write,
                 no_privacy ? " WITHOUT NOISE" : (seed.fixed() ? " (seeded noise: NOT fit for release)" : ""), output.c_str());
    if (!graph_info.is_null())
      std::fprintf(stderr, "privrace: graph: %s nodes, %s neighbours stored from %s edge lines%s; %s self-loops (%s), %s duplicate edges removed; max degree %s\n",
                   graph_info["nodes"].dump().c_str(), graph_info["stored_edges"].dump().c_str(), graph_info["edge_lines"].dump().c_str(),
                   graph_info["symmetrised"].get<bool>() ? " (symmetrised)" : "", graph_info["self_loops"].dump().c_str(),
                   graph_info["self_loops_kept"].get<bool>() ? "kept" : "dropped", graph_info["duplicates"].dump().c_str(),
                   graph_info["max_degree"].dump().c_str());
  }
}

void warn_if_not_for_release(const PrivacyRecord& privacy, const std::string& path) {
  if (const auto warning = release_warning(privacy)) std::fprintf(stderr, "privrace: warning: %s: %s\n", path.c_str(), warning->c_str());
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
  check_output_target(output, inputs);  // not an input, nor a FIFO, link or device
  // One file twice (under any name) is a sketch merged with itself: its noise twice, N-hat doubled.
  std::vector<std::pair<dev_t, ino_t>> seen;
  for (const std::string& in : inputs) {
    struct stat st {};
    if (in == "-" || ::stat(in.c_str(), &st) != 0) continue;  // the reader names what is wrong with it
    for (std::size_t j = 0; j < seen.size(); ++j)
      if (seen[j] == std::pair{st.st_dev, st.st_ino})
        throw UsageError("cannot merge '" + in + "': it is the same file as an earlier input (a sketch merged with itself would "
                         "count its records twice and its noise twice)");
    seen.emplace_back(st.st_dev, st.st_ino);
  }
  RaceSketch merged = load_sketch(inputs[0]);
  warn_if_not_for_release(merged.privacy(), inputs[0]);
  ReleaseMerge merge(merged, inputs[0]);
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    RaceSketch part = load_sketch(inputs[i]);
    warn_if_not_for_release(part.privacy(), inputs[i]);
    merge.add(part, inputs[i]);
  }
  merge.finish();
  save_sketch(output, merged, vm.count("no-privacy") > 0, {{"merged_inputs", inputs}});
  return 0;
}

}  // namespace privrace::cli
