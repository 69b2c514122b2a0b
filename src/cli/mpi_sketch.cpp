// privrace-mpi: the dense `privrace sketch` across MPI ranks (built with -DPRIVRACE_MPI=ON).
//   mpirun -np K privrace-mpi --input data.csv --rows R --width W --epsilon E -o out.rsk
// Every rank reads the table and keeps its share of every chunk: chunk c holds K x 65,536
// rows (K x --chunk-rows), rank k the batches [16 k / K, 16 (k + 1) / K) x 4096 of it, so each
// batch of 4096 rows is hashed by exactly the GEMM a single process would use. Each rank
// builds its exact sketch with OpenMP; the counts (exact int64) are summed to rank 0 with
// MPI_Reduce in pieces of at most 2^28 counts; rank 0 adds the noise ONCE and writes the
// file. With the same --seed (and --threads) the file is byte-identical to `privrace sketch`.
//
// The noise is added after the reduction, at one place, exactly as in one process: the
// released counts are exact sums plus one draw of the mechanism per counter, so the privacy
// analysis of privatize() applies unchanged. No rank ever writes or sends noisy or partial
// output; a failure on any rank is agreed on collectively and every rank exits 1, leaving no
// file (the write is atomic).
//
// Parameters must agree across ranks: each rank's canonical parameter string is hashed and the
// hashes compared before anything is read. Without --seed, rank 0 draws the master seed from
// the OS and broadcasts it (every rank must hash with the same LSH functions).
//
// The release goes through the library's release API (sketch/release.hpp) as in `privrace
// sketch`: validated parameters, seeds derived from the master there, the exact build of this
// rank's share, the reduction on its exact partial counts, one release at rank 0.
#include <mpi.h>
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
#include "privrace/io/table_reader.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/release.hpp"

namespace po = boost::program_options;
using namespace privrace;

namespace {

constexpr std::size_t kBatch = 4096;                        // the builder's default batch
constexpr std::size_t kMaxReduceCounts = std::size_t{1} << 28;  // counts per MPI_Reduce call

struct Options {
  std::string input, output, kernel, format, mechanism, neighbors, epsilon_text;
  double bandwidth = 1.0, delta = 0.0;
  std::size_t power = 1, rows = 0, width = 0, chunk_rows = 65536;
  int threads = 0, label_column = 0;
  bool no_privacy = false, seeded = false, quiet = false, timings = false;
  std::uint64_t seed = 0;
  std::string canonical() const {
    return input + "|" + output + "|" + kernel + "|" + format + "|" + mechanism + "|" + neighbors + "|" + epsilon_text + "|" +
           std::to_string(bandwidth) + "|" + std::to_string(delta) + "|" + std::to_string(power) + "|" + std::to_string(rows) +
           "|" + std::to_string(width) + "|" + std::to_string(chunk_rows) + "|" + std::to_string(threads) + "|" +
           std::to_string(label_column) + "|" + std::to_string(no_privacy) + "|" + std::to_string(seeded) + "|" +
           std::to_string(seed);
  }
};

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Options parse_options(int argc, char** argv) {
  Options o;
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")
      ("input,i", po::value(&o.input)->required(), "data file (CSV or whitespace, .gz allowed), read by every rank")
      ("output,o", po::value(&o.output)->required(), "sketch file, written by rank 0 (atomically)")
      ("kernel,k", po::value(&o.kernel)->default_value("l2"), "l2 | angular | angular_pair")
      ("bandwidth", po::value(&o.bandwidth)->default_value(1.0), "p-stable bucket width w (l2)")
      ("power,p", po::value(&o.power)->default_value(1), "concatenated hashes per row (p)")
      ("rows,R", po::value(&o.rows)->required(), "sketch rows R")
      ("width,W", po::value(&o.width)->required(), "sketch columns W")
      ("epsilon,e", po::value(&o.epsilon_text), "privacy budget epsilon > 0")
      ("delta", po::value(&o.delta)->default_value(0.0), "delta for --mechanism gaussian")
      ("mechanism", po::value(&o.mechanism)->default_value("discrete_laplace"), "discrete_laplace | floored_laplace | gaussian")
      ("neighbors", po::value(&o.neighbors)->default_value("add-remove"), "add-remove | replace")
      ("seed", po::value<std::uint64_t>(), "fix the LSH seed and the noise (the file is marked NOT fit for release)")
      ("threads,t", po::value(&o.threads)->default_value(0), "OpenMP threads per rank (0 = all)")
      ("no-privacy", "write the exact counts without noise (never for release)")
      ("label-column", po::value(&o.label_column)->default_value(0), "1-based column to drop from the features")
      ("format", po::value(&o.format)->default_value("auto"), "auto | csv | whitespace")
      ("chunk-rows", po::value(&o.chunk_rows)->default_value(65536), "rows per chunk and rank (a multiple of 4096)")
      ("timings", "rank 0 prints the stage timings as one JSON line on stderr")
      ("quiet,q", "no summary on stderr");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    if (vm.count("help")) {
      std::printf("usage: mpirun -np K privrace-mpi --input FILE --rows R --width W (--epsilon E | --no-privacy) -o OUT.rsk\n\n");
      std::cout << desc;
      std::exit(0);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  o.no_privacy = vm.count("no-privacy") > 0;
  o.quiet = vm.count("quiet") > 0;
  o.timings = vm.count("timings") > 0;
  o.seeded = vm.count("seed") > 0;
  if (o.seeded) o.seed = vm["seed"].as<std::uint64_t>();
  if (o.no_privacy == (vm.count("epsilon") > 0))
    throw UsageError(o.no_privacy ? "--epsilon and --no-privacy exclude each other"
                                  : "--epsilon is required (or --no-privacy for an exact, non-releasable sketch)");
  if (o.threads < 0) throw UsageError("--threads must be 0 (all) or positive, got " + std::to_string(o.threads));
  if (o.rows == 0) throw UsageError("--rows must be at least 1");
  if (o.width == 0) throw UsageError("--width must be at least 1");
  if (o.chunk_rows == 0 || o.chunk_rows % kBatch != 0)
    throw UsageError("--chunk-rows must be a positive multiple of 4096, got " + std::to_string(o.chunk_rows));
  if (o.kernel != "l2" && o.kernel != "angular" && o.kernel != "angular_pair")
    throw UsageError("privrace-mpi sketches tables with --kernel l2, angular or angular_pair, not '" + o.kernel + "'");
  return o;
}

PrivacySpec privacy_spec(const Options& o) {
  PrivacySpec spec;
  std::size_t used = 0;
  try {
    spec.epsilon = std::stod(o.epsilon_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != o.epsilon_text.size() || !(spec.epsilon > 0.0) || !std::isfinite(spec.epsilon))
    throw UsageError("--epsilon must be a positive number, got '" + o.epsilon_text + "'");
  spec.delta = o.delta;
  spec.mechanism = parse_mechanism(o.mechanism);
  spec.neighbors = parse_neighbors(o.neighbors);
  return spec;
}

// The options as the release API's parameters (the dense kernels, replicated per-thread sketches).
ReleaseParams release_params(const Options& o) {
  ReleaseParams params;
  params.family.kernel = parse_kernel(o.kernel);
  params.family.bandwidth = o.bandwidth;
  params.family.power = o.power;
  params.family.rows = o.rows;
  params.width = o.width;
  if (o.seeded) params.seed = o.seed;
  if (!o.no_privacy) params.privacy = privacy_spec(o);
  params.threads = o.threads;
  params.strategy = "replicate";
  return params;
}

// Every rank learns whether any rank failed; the failing ranks have printed their message.
bool all_ok(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

int run(int argc, char** argv, int rank, int ranks) {
  const double t0 = now_seconds();
  Options o;
  ReleaseParams params;
  std::string failure;
  int code = 0;
  try {
    o = parse_options(argc, argv);
    params = release_params(o);
    params.validate();  // every parameter and the memory bound, before anything is read
  } catch (const UsageError& e) {
    failure = e.what();
    code = 2;
  } catch (const std::exception& e) {
    failure = std::string("error: ") + e.what();
    code = 1;
  }
  // Every rank's parameters (or its failure to parse them) are compared before any reading.
  const std::uint64_t hash = failure.empty() ? fnv1a(o.canonical()) : 0;
  std::vector<std::uint64_t> hashes(static_cast<std::size_t>(ranks));
  MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  if (!failure.empty()) std::fprintf(stderr, "privrace-mpi: rank %d: %s\n", rank, failure.c_str());
  if (!all_ok(failure.empty())) return code != 0 ? code : 2;
  for (int r = 1; r < ranks; ++r)
    if (hashes[static_cast<std::size_t>(r)] != hashes[0]) {
      if (rank == 0)
        std::fprintf(stderr, "privrace-mpi: ranks disagree on their parameters (rank %d differs from rank 0); every rank must get the same options\n", r);
      return 2;
    }

  if (o.threads > 0) omp_set_num_threads(o.threads);  // the noise and the encoder too
  // One master seed for every rank: the LSH functions must be the same everywhere.
  std::uint64_t master = 0;
  if (rank == 0) master = MasterSeed::resolve(params.seed).value();
  MPI_Bcast(&master, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const MasterSeed seed = MasterSeed::of(master, params.seed.has_value());

  std::optional<ExactSketch> exact;
  std::uint64_t local_rows = 0, total_rows = 0;
  double read_seconds = 0.0;
  try {
    TableOptions topts;
    topts.format = parse_table_format(o.format);
    if (topts.format == TableFormat::Libsvm) throw UsageError("privrace-mpi reads CSV or whitespace tables");
    topts.label_column = o.label_column;
    TableReader reader(o.input, topts);
    // Chunk c: K x chunk_rows rows; this rank's share is a run of whole 4096-row batches, so
    // each batch is hashed by exactly the GEMM a single process would use.
    const std::size_t chunk = o.chunk_rows * static_cast<std::size_t>(ranks);
    const std::size_t batches_per_chunk = chunk / kBatch;
    const std::size_t b0 = batches_per_chunk * static_cast<std::size_t>(rank) / static_cast<std::size_t>(ranks);
    const std::size_t b1 = batches_per_chunk * static_cast<std::size_t>(rank + 1) / static_cast<std::size_t>(ranks);
    DenseMatrix rows;
    exact.emplace(build_exact(params, seed, reader.dim(), [&](DenseMatrix& share) -> std::size_t {
      for (;;) {  // the next chunk with a share for this rank, or the end
        const double tr = now_seconds();
        const std::size_t n = reader.next_chunk(rows, chunk);
        read_seconds += now_seconds() - tr;
        if (n == 0) return 0;
        total_rows += n;
        const std::size_t first = std::min(n, b0 * kBatch), last = std::min(n, b1 * kBatch);
        if (last > first) {
          share = rows.middleRows(static_cast<Eigen::Index>(first), static_cast<Eigen::Index>(last - first));
          local_rows += last - first;
          return last - first;
        }
      }
    }));
    if (total_rows < static_cast<std::uint64_t>(ranks))
      throw InputError(o.input + ": " + std::to_string(total_rows) + " records for " + std::to_string(ranks) +
                       " ranks: run at most as many ranks as there are records");
  } catch (const UsageError& e) {
    failure = e.what();
    code = 2;
  } catch (const std::exception& e) {
    failure = std::string("error: ") + e.what();
    code = 1;
  }
  if (!failure.empty()) std::fprintf(stderr, "privrace-mpi: rank %d: %s\n", rank, failure.c_str());
  if (!all_ok(failure.empty())) {
    if (rank == 0) std::fprintf(stderr, "privrace-mpi: a rank failed; no output written\n");
    return code != 0 ? code : 1;
  }

  // Exact integer sums at rank 0, in pieces MPI's int counts can address.
  const double t_reduce = now_seconds();
  auto counts = exact->partial_counts();
  for (std::size_t off = 0; off < counts.size(); off += kMaxReduceCounts) {
    const int len = static_cast<int>(std::min(kMaxReduceCounts, counts.size() - off));
    if (rank == 0) MPI_Reduce(MPI_IN_PLACE, counts.data() + off, len, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    else MPI_Reduce(counts.data() + off, nullptr, len, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  }
  std::uint64_t all_rows = 0;
  MPI_Reduce(&local_rows, &all_rows, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  const double reduce_seconds = now_seconds() - t_reduce;

  int status = 0;
  if (rank == 0) {
    try {
      if (all_rows != total_rows) throw Error("the ranks' shares add up to " + std::to_string(all_rows) + " rows, not " + std::to_string(total_rows));
      exact->add_reduced_records(static_cast<std::int64_t>(all_rows - local_rows));
      const Release release = std::move(*exact).release();  // noise once, after the reduction
      const BuildReport& report = release.build();
      // The header of `privrace sketch` (same fields, same order): the files can be compared byte for byte.
      SketchWriteTimings w;
      save_release(o.output, release, {{"build", release.build_record(o.input)}}, &w);
      if (o.timings) {
        const nlohmann::json t = {{"ranks", ranks}, {"threads", report.threads}, {"points", all_rows}, {"total", now_seconds() - t0},
                                  {"read", read_seconds}, {"fill", report.stages.fill}, {"merge", report.stages.merge},
                                  {"reduce", reduce_seconds}, {"noise", release.noise_seconds()}, {"encode", w.encode_seconds},
                                  {"write", w.write_seconds}, {"fsync", w.sync_seconds}};
        std::fprintf(stderr, "privrace-mpi: timings %s\n", t.dump().c_str());
      }
      if (!o.quiet)
        std::fprintf(stderr, "privrace-mpi: sketched %llu records on %d ranks x %d thread(s) in %.3f s%s -> %s\n",
                     static_cast<unsigned long long>(all_rows), ranks, report.threads, now_seconds() - t0,
                     o.no_privacy ? " WITHOUT NOISE" : (o.seeded ? " (seeded noise: NOT fit for release)" : ""), o.output.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "privrace-mpi: rank 0: error: %s\n", e.what());
      status = 1;
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);  // MPI calls only outside OpenMP regions
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int code = 1;
  try {
    code = run(argc, argv, rank, ranks);
  } catch (const std::exception& e) {
    // Outside the collective error handling (a failed MPI call): the whole job stops.
    std::fprintf(stderr, "privrace-mpi: rank %d: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
