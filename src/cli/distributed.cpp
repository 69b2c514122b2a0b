// `mpirun -np K privrace sketch ...` (built with -DPRIVRACE_MPI=ON): the sketch command across
// MPI ranks. MPI is started only when an MPI launcher started this process (its environment
// says so); a plain `privrace sketch` never calls into MPI.
//
// Every rank parses the same options into the same job (sketch_command.cpp); the ranks compare
// their command lines before anything is read. The distributed path adds two things around the
// same release calls as one process (build_exact, partial_counts, add_reduced_records, release):
//
// Which records are mine. A plain CSV or whitespace file of S bytes is read in shares: rank k
// takes the records whose first byte lies in [k S / K, (k + 1) S / K) (TableShare: the share
// starts after the line holding byte k S / K - 1). Rank 0 reads the start of the whole file
// once: format, field count and the header line's byte offset are broadcast, and the share
// holding the header line skips it. Each rank counts its records (a pass without parsing), the
// counts are all-gathered, and an exclusive prefix sum gives every rank the global index of its
// first record. The builder hashes records in batches of 4096 on a grid of global indices
// (one GEMM per batch; a point's result may depend on its place in its batch), so each rank
// hands the records before its first grid point (its "head", < 4096 of them) to the rank that
// holds the start of that batch, which hashes the batch whole, exactly as one process does.
// Chunks (--chunk-rows, a multiple of 4096 here) start on the grid. Seeded sketches are
// therefore byte-identical to one process for any K and any split of the bytes.
// Gzip input, stdin, libsvm (and set or graph inputs) cannot be split: rank 0 reads them all
// and the other ranks contribute zero counts.
//
// Sum the exact counts. The int64 counts are summed to rank 0 with MPI_Reduce in pieces of at
// most 2^28 counts; rank 0 adds the noise ONCE and writes the file atomically. Without --seed,
// rank 0 draws the master seed and broadcasts it.
//
// Failures: after every phase the ranks agree on whether any failed; the failing rank prints
// its message (naming the rank), every rank exits with the same code, and no file is written.
#include "distributed.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/table_reader.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace::cli {

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

namespace {

constexpr std::size_t kBatch = 4096;                            // BuildOptions::batch: the hashing grid
constexpr std::size_t kMaxReduceCounts = std::size_t{1} << 28;  // counts per MPI_Reduce call


std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// This rank's failure, if any: its message and exit code (2 usage, 1 anything else).
struct Failure {
  std::string message;
  int code = 0;
};

template <class F>
void attempt(Failure& f, F&& step) {
  if (f.code != 0) return;
  try {
    step();
  } catch (const UsageError& e) {
    f = {e.what(), 2};
  } catch (const std::exception& e) {
    f = {std::string("error: ") + e.what(), 1};
  }
}

// Collective: the worst exit code of any rank (0: every rank is fine). A failed rank prints
// its message (`once`: only the first failed rank, for failures every rank shares, such as a
// bad option); rank 0 adds that nothing was written.
int agree(const Failure& f, int rank, bool once = false) {
  const int ranks = [] {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }();
  std::vector<int> codes(static_cast<std::size_t>(ranks));
  MPI_Allgather(&f.code, 1, MPI_INT, codes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const auto first = std::find_if(codes.begin(), codes.end(), [](int c) { return c != 0; });
  if (first == codes.end()) return 0;
  if (f.code != 0 && (!once || first - codes.begin() == rank))
    std::fprintf(stderr, "privrace sketch: rank %d: %s\n", rank, f.message.c_str());
  if (rank == 0) std::fprintf(stderr, "privrace sketch: a rank failed; no output written\n");
  return *std::max_element(codes.begin(), codes.end());
}

// Where each rank's records lie in the file's record order, and how the batches that straddle
// ranks are assembled.
struct Shares {
  std::vector<std::uint64_t> count, first;  // per rank: records, global index of the first
  // Records before the rank's first grid point: they complete a batch begun on an earlier rank.
  std::uint64_t head(int k) const {
    const auto i = static_cast<std::size_t>(k);
    const std::uint64_t off = first[i] % kBatch;
    return off == 0 || count[i] == 0 ? 0 : std::min<std::uint64_t>(count[i], kBatch - off);
  }
  // The rank that holds the start of the batch rank k's head belongs to.
  int owner(int k) const {
    const std::uint64_t start = first[static_cast<std::size_t>(k)] - first[static_cast<std::size_t>(k)] % kBatch;
    for (int j = k - 1; j >= 0; --j)
      if (count[static_cast<std::size_t>(j)] > 0 && first[static_cast<std::size_t>(j)] <= start) return j;
    return 0;  // unreachable: record `start` lies on an earlier rank
  }
};

int run(int argc, char** argv, int rank, int ranks) {
  const auto t0 = std::chrono::steady_clock::now();
  Failure f;
  SketchJob job;
  attempt(f, [&] {
    job = parse_sketch(argc, argv);
    if (job.chunk_rows % kBatch != 0)
      throw UsageError("under mpirun --chunk-rows must be a multiple of 4096 (the builder's batch), got " +
                       std::to_string(job.chunk_rows));
  });
  // Every rank's command line, compared before anything is read.
  std::string line;
  for (int i = 0; i < argc; ++i) line += std::string(argv[i]) + '\0';
  const std::uint64_t hash = fnv1a(line);
  std::vector<std::uint64_t> hashes(static_cast<std::size_t>(ranks));
  MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  if (const int code = agree(f, rank, /*once=*/true)) return code;
  for (int r = 1; r < ranks; ++r)
    if (hashes[static_cast<std::size_t>(r)] != hashes[0]) {
      if (rank == 0)
        std::fprintf(stderr, "privrace sketch: ranks disagree on their parameters (rank %d differs from rank 0); "
                             "every rank must get the same options\n", r);
      return 2;
    }

  // One master seed for every rank: the LSH functions must be the same everywhere.
  std::uint64_t master = 0;
  if (rank == 0) attempt(f, [&] { master = MasterSeed::resolve(job.params.seed).value(); });
  if (const int code = agree(f, rank)) return code;
  MPI_Bcast(&master, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const MasterSeed seed = MasterSeed::of(master, job.params.seed.has_value());

  std::optional<ExactSketch> exact;
  nlohmann::json graph_info;
  double read_seconds = 0.0;  // graphs (rank 0); tables stream into the build
  nlohmann::json dist = {{"ranks", ranks}};
  if (job.set_kernel) {
    // Sets and graphs are not split yet: rank 0 reads and builds them all, the others add zeros.
    attempt(f, [&] {
      if (rank == 0) exact.emplace(build_local(job, seed, graph_info, read_seconds));
      else exact.emplace(build_exact(job.params, seed, SetCollection{}));
    });
  } else {
    // Rank 0 reads the start of the whole file: format, fields, header, and whether it splits.
    std::optional<TableReader> whole;
    std::array<std::uint64_t, 7> lay{};  // splittable, format, fields, dim, has header, header offset, bytes
    if (rank == 0)
      attempt(f, [&] {
        whole.emplace(job.input, job.table);
        const TableLayout l = whole->layout();
        lay = {l.splittable ? 1u : 0u, static_cast<std::uint64_t>(l.format), l.fields, l.dim, l.header_at ? 1u : 0u,
               l.header_at.value_or(0), l.bytes};
        if (l.splittable) whole.reset();
        else if (ranks > 1 && !job.quiet)
          std::fprintf(stderr, "privrace sketch: %s is %s and cannot be split: rank 0 reads it all\n", job.input.c_str(),
                       l.why_not.c_str());
      });
    if (const int code = agree(f, rank)) return code;
    MPI_Bcast(lay.data(), static_cast<int>(lay.size()), MPI_UINT64_T, 0, MPI_COMM_WORLD);
    const auto dim = static_cast<std::size_t>(lay[3]);
    dist["split"] = lay[0] == 1;

    if (lay[0] == 0) {
      attempt(f, [&] {
        if (rank == 0) {
          TableReader& reader = *whole;
          exact.emplace(build_table(job, seed, dim, [&](DenseMatrix& chunk) { return reader.next_chunk(chunk, job.chunk_rows); }));
        } else {
          exact.emplace(build_table(job, seed, dim, [](DenseMatrix&) -> std::size_t { return 0; }));
        }
      });
    } else {
      TableOptions topts = job.table;
      topts.format = static_cast<TableFormat>(lay[1]);
      TableShare share;
      const std::uint64_t bytes = lay[6], k = static_cast<std::uint64_t>(rank), K = static_cast<std::uint64_t>(ranks);
      // k S / K without overflow: S < 2^64 / K for any file and rank count in practice.
      share.begin = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) * k / K);
      share.end = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) * (k + 1) / K);
      share.fields = static_cast<std::size_t>(lay[2]);
      if (lay[4] == 1) share.header_at = lay[5];
      topts.share = share;

      // Pass 1: count this share's records; every rank learns where every share starts.
      const auto tc = std::chrono::steady_clock::now();
      std::uint64_t mine = 0;
      attempt(f, [&] { mine = TableReader(job.input, topts).count_remaining(); });
      if (const int code = agree(f, rank)) return code;
      Shares s;
      s.count.resize(static_cast<std::size_t>(ranks));
      MPI_Allgather(&mine, 1, MPI_UINT64_T, s.count.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
      s.first.assign(s.count.size(), 0);
      for (std::size_t r = 1; r < s.count.size(); ++r) s.first[r] = s.first[r - 1] + s.count[r - 1];
      dist["count_pass"] = seconds_since(tc);

      // Pass 2: this rank's head first (it completes a batch begun on an earlier rank).
      std::optional<TableReader> reader;
      DenseMatrix head;
      const std::uint64_t h = s.head(rank);
      attempt(f, [&] {
        if (h * dim * sizeof(Real) > static_cast<std::uint64_t>(INT_MAX))
          throw UsageError("records of " + std::to_string(dim) + " attributes are too wide to exchange between ranks");
        reader.emplace(job.input, topts);
        if (h > 0 && reader->next_chunk(head, h) != h) throw InputError(job.input + ": the file changed while it was read");
      });
      if (const int code = agree(f, rank)) return code;
      // The heads go to the batch's owner, which appends them to its last chunk in rank order.
      std::vector<int> senders;
      for (int r = rank + 1; r < ranks; ++r)
        if (s.head(r) > 0 && s.owner(r) == rank) senders.push_back(r);
      std::vector<DenseMatrix> received(senders.size());
      std::vector<MPI_Request> requests;
      if (h > 0) {
        requests.emplace_back();
        MPI_Isend(head.data(), static_cast<int>(h * dim * sizeof(Real)), MPI_BYTE, s.owner(rank), 23, MPI_COMM_WORLD,
                  &requests.back());
      }
      for (std::size_t i = 0; i < senders.size(); ++i) {
        const std::uint64_t n = s.head(senders[i]);
        received[i].resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(dim));
        requests.emplace_back();
        MPI_Irecv(received[i].data(), static_cast<int>(n * dim * sizeof(Real)), MPI_BYTE, senders[i], 23, MPI_COMM_WORLD,
                  &requests.back());
      }
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);

      // The rest of the share, in chunks on the global grid; the received heads complete the last.
      std::uint64_t remaining = s.count[static_cast<std::size_t>(rank)] - h;
      attempt(f, [&] {
        exact.emplace(build_table(
            job, seed, dim,
            [&](DenseMatrix& chunk) -> std::size_t {
              if (remaining == 0) return 0;
              const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(job.chunk_rows, remaining));
              std::size_t got = reader->next_chunk(chunk, want);  // timed by the builder (stages.read)
              if (got != want) throw InputError(job.input + ": the file changed while it was read");
              remaining -= got;
              if (remaining == 0 && !received.empty()) {
                std::size_t total = got;
                for (const DenseMatrix& m : received) total += static_cast<std::size_t>(m.rows());
                chunk.conservativeResize(static_cast<Eigen::Index>(total), static_cast<Eigen::Index>(dim));
                for (const DenseMatrix& m : received) {
                  chunk.middleRows(static_cast<Eigen::Index>(got), m.rows()) = m;
                  got += static_cast<std::size_t>(m.rows());
                }
              }
              return got;
            },
            s.first[static_cast<std::size_t>(rank)] + h));
        if (reader->next_chunk(head, 1) != 0) throw InputError(job.input + ": the file changed while it was read");
      });
    }
  }
  if (const int code = agree(f, rank)) return code;

  // Exact integer sums at rank 0, in pieces MPI's int counts can address.
  const auto t_reduce = std::chrono::steady_clock::now();
  auto counts = exact->partial_counts();
  for (std::size_t off = 0; off < counts.size(); off += kMaxReduceCounts) {
    const int len = static_cast<int>(std::min(kMaxReduceCounts, counts.size() - off));
    if (rank == 0) MPI_Reduce(MPI_IN_PLACE, counts.data() + off, len, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    else MPI_Reduce(counts.data() + off, nullptr, len, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  }
  const std::uint64_t local = exact->report().points;
  std::uint64_t all = 0;
  MPI_Reduce(&local, &all, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  dist["reduce"] = seconds_since(t_reduce);

  // Noise once, at rank 0, which writes the file (the header of one process: same fields, same order).
  int status = 0;
  if (rank == 0) {
    attempt(f, [&] {
      exact->add_reduced_records(static_cast<std::int64_t>(all - local));
      write_sketch(job, std::move(*exact), seed, t0, read_seconds, graph_info, dist);
    });
    if (f.code != 0) std::fprintf(stderr, "privrace sketch: rank 0: %s\n", f.message.c_str());
    status = f.code;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

// The launcher's rank of this process, before MPI is started (for --help).
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 0;
}

}  // namespace

int distributed_sketch(int argc, char** argv) {
  // --help: printed once (the launcher's rank 0), without starting MPI.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      if (launcher_rank() == 0) parse_sketch(argc, argv);  // prints the help and exits
      return 0;
    }
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);  // MPI calls only outside OpenMP regions
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int code = 1;
  try {
    code = run(argc, argv, rank, ranks);
  } catch (const std::exception& e) {
    // Outside the collective error handling (a failed MPI call): the whole job stops.
    std::fprintf(stderr, "privrace sketch: rank %d: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}

}  // namespace privrace::cli
