// `mpirun -np K privrace sketch ...` (built with -DPRIVRACE_MPI=ON): the sketch command across
// MPI ranks. MPI is started only when an MPI launcher started this process (its environment
// says so); a plain `privrace sketch` never calls into MPI.
//
// Every rank parses the same options into the same job (sketch_command.cpp); the ranks compare
// their command lines before anything is read. The distributed path adds two things around the
// same release calls as one process (build_exact, partial_counts, add_reduced_records, release or
// release_in_shares):
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
// One gzip file, stdin and libsvm cannot be split: rank 0 reads them all and the other ranks
// contribute zero counts.
//
// Sets and graphs (the jaccard kernels). A set's MinHash codes depend on the set alone, so no
// batch grid is needed: only every set must be sketched exactly once, whole. One set per line:
// rank k reads the lines whose first byte lies in its share [k S / K, (k + 1) S / K) and
// sketches them. An edge list: rank k reads the edge lines of its share, sends each (u, v) to
// the rank that owns u (a mix of u mod K) and, --undirected, (v, u) to v's (MPI_Alltoallv in
// rounds); each rank sorts and de-duplicates its nodes' neighbours into their sets, as
// read_edge_list does, and sketches them; the summary (nodes = max(largest id + 1, --nodes),
// duplicates, self-loops, ...) is summed over the ranks, and rank 0 also counts the nodes
// without a neighbour (empty sets). A gzip file or stdin is read by rank 0 alone (the sets of an
// edge list are still built and sketched on their nodes' ranks); a .jlg file or --graph-cache
// is read and sketched by rank 0 alone.
//
// Several input files (inputs.hpp) are read as one table, the records of each in turn. Whole
// files go to ranks by size (rank 0 looks the sizes up): largest first, each to the rank with
// the fewest bytes so far (LPT), so gzip files are read in parallel too, and ranks without a
// file contribute zeros. Each rank counts the records of its files, the per-file counts are
// summed over the ranks, and an exclusive prefix sum in list order gives every file the global
// index of its first record.
//
// Both cases are one plan: the records in global order are cut into pieces, each a run of one
// file's records held by one rank (a byte share of the one file, or a whole file). A piece's
// head (its records before its first grid point) goes to the rank holding the piece whose
// records start that batch; the rest of the piece (its body) starts on the grid, and its last
// chunk gets the heads that complete its last batch, in record order.
//
// Sum the exact counts, noise once. Below 4 ranks (or for small arrays) the int64 counts are
// summed to rank 0 with MPI_Reduce in pieces of at most 2^28 counts, and rank 0 adds the noise.
// From 4 ranks on a reduce-scatter leaves slice k of the sums on rank k, which noises it (each
// count still gets its noise once: the slices do not overlap) and encodes it as the file's
// payload blocks; the encoded slices (about 2 bytes a count instead of 8) are gathered at rank 0
// (plan_sum below), which checks their CRCs, decodes them into its counts and writes the blocks
// as received. Rank 0 writes the file atomically. Without --seed, rank 0
// draws the master seed and broadcasts it.
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
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "inputs.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/edge_list.hpp"
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
// From this many counts on (2 MiB of int64) the sum may be a reduce-scatter and a gather.
constexpr std::size_t kScatterReduceCounts = std::size_t{1} << 18;
// ... and by default only from this many ranks on: on the 16-core machine the reduce-scatter
// took 0.49-0.70x the reduce's time at 4, 8 and 16 ranks and 2.8x at 2 (docs/distributed.md).
constexpr int kScatterReduceMinRanks = 4;
enum class ReduceChoice { Automatic, Tree, Scatter };
// PRIVRACE_MPI_REDUCE: unset or "auto" (the rule above), "tree" or "scatter" (forced); anything
// else is a usage error.
ReduceChoice requested_reduce() {
  const char* v = std::getenv("PRIVRACE_MPI_REDUCE");
  if (v == nullptr || std::strcmp(v, "auto") == 0) return ReduceChoice::Automatic;
  if (std::strcmp(v, "tree") == 0) return ReduceChoice::Tree;
  if (std::strcmp(v, "scatter") == 0) return ReduceChoice::Scatter;
  throw UsageError(std::string("PRIVRACE_MPI_REDUCE='") + v + "': expected auto, tree or scatter");
}


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

// A run of consecutive records of one input file held by one rank: what the ranks read.
struct Piece {
  int rank = 0;
  std::size_t file = 0;        // index in job.inputs
  std::uint64_t first = 0;     // global index of its first record
  std::uint64_t count = 0;
  std::uint64_t in_file = 0;   // index of its first record in its file
};

// The pieces in record order, and how the batches that straddle pieces are assembled.
struct Plan {
  std::vector<Piece> pieces;
  // Records before the piece's first grid point: they complete a batch begun in an earlier piece.
  std::uint64_t head(std::size_t p) const {
    const Piece& x = pieces[p];
    const std::uint64_t off = x.first % kBatch;
    return off == 0 || x.count == 0 ? 0 : std::min<std::uint64_t>(x.count, kBatch - off);
  }
  bool has_body(std::size_t p) const { return pieces[p].count > head(p); }
  // The piece whose body holds the start of the batch piece p's head belongs to.
  std::size_t owner(std::size_t p) const {
    const std::uint64_t start = pieces[p].first - pieces[p].first % kBatch;
    for (std::size_t j = p; j-- > 0;)
      if (pieces[j].count > 0 && pieces[j].first <= start) return j;
    return 0;  // unreachable: record `start` lies in an earlier piece
  }
};

// Whole files to ranks: largest first, each to the rank with the fewest bytes so far (ties:
// the earlier file, the lower rank). Returns each file's rank; `load` gets each rank's bytes.
std::vector<int> assign_files(const std::vector<std::uint64_t>& bytes, int ranks, std::vector<std::uint64_t>& load) {
  std::vector<std::size_t> order(bytes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bytes[a] > bytes[b]; });
  load.assign(static_cast<std::size_t>(ranks), 0);
  std::vector<int> rank_of(bytes.size(), 0);
  for (const std::size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    rank_of[i] = static_cast<int>(least);
    load[static_cast<std::size_t>(least)] += bytes[i];
  }
  return rank_of;
}

InputError changed(const std::string& path) { return InputError(path + ": the file changed while it was read"); }

// The heads of this rank's pieces `mine` (their records before their first grid point), each
// read into heads[p]; the reader of the first piece is kept open in `kept` for its body.
void read_heads(const Plan& plan, const std::vector<std::size_t>& mine, std::size_t dim,
                const std::function<TableReader(std::size_t)>& open, const std::function<const std::string&(std::size_t)>& path,
                std::vector<DenseMatrix>& heads, std::optional<TableReader>& kept) {
  for (const std::size_t p : mine) {
    const std::uint64_t h = plan.head(p);
    if (h == 0) continue;
    if (h * dim * sizeof(Real) > static_cast<std::uint64_t>(INT_MAX))
      throw UsageError("records of " + std::to_string(dim) + " attributes are too wide to exchange between ranks");
    TableReader reader = open(p);
    if (reader.next_chunk(heads[p], h) != h) throw changed(path(p));
    if (p == mine.front()) kept.emplace(std::move(reader));
  }
}

// The heads go to the owners of their batches (this rank too: a send to itself). Messages
// between two ranks share one tag and are posted in piece order on both sides, which MPI
// matches in that order. owed[o]: the heads that complete the body of piece o (one of this
// rank's), received into received[q]. Collective.
void exchange_heads(const Plan& plan, const std::vector<std::size_t>& mine, std::size_t dim, int rank,
                    std::vector<DenseMatrix>& heads, std::vector<std::vector<std::size_t>>& owed,
                    std::vector<DenseMatrix>& received) {
  const std::vector<Piece>& pieces = plan.pieces;
  std::vector<MPI_Request> requests;
  for (const std::size_t p : mine)
    if (const std::uint64_t h = plan.head(p); h > 0) {
      requests.emplace_back();
      MPI_Isend(heads[p].data(), static_cast<int>(h * dim * sizeof(Real)), MPI_BYTE, pieces[plan.owner(p)].rank, 23,
                MPI_COMM_WORLD, &requests.back());
    }
  for (std::size_t q = 0; q < pieces.size(); ++q) {
    const std::uint64_t h = plan.head(q);
    if (h == 0) continue;
    const std::size_t o = plan.owner(q);
    if (pieces[o].rank != rank) continue;
    owed[o].push_back(q);
    received[q].resize(static_cast<Eigen::Index>(h), static_cast<Eigen::Index>(dim));
    requests.emplace_back();
    MPI_Irecv(received[q].data(), static_cast<int>(h * dim * sizeof(Real)), MPI_BYTE, pieces[q].rank, 23, MPI_COMM_WORLD,
              &requests.back());
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

// Where the builder's records came from: from record `at` on (0-based, in delivery order), the
// records of piece `piece` from its record `offset`.
struct Delivered {
  std::uint64_t at;  // records delivered before these
  std::size_t piece;
  std::uint64_t offset;  // in the piece
};

// The last chunk of a body (its first `got` rows read) completed by the heads it owes, in record
// order; each head's rows move out of `received`. Returns the chunk's rows.
std::size_t append_owed_heads(DenseMatrix& chunk, std::size_t got, std::size_t dim, const std::vector<std::size_t>& owed,
                              std::vector<DenseMatrix>& received, std::vector<Delivered>& delivered, std::uint64_t& total) {
  std::size_t rows = got;
  for (const std::size_t q : owed) rows += static_cast<std::size_t>(received[q].rows());
  if (rows > got) chunk.conservativeResize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(dim));
  for (const std::size_t q : owed) {
    chunk.middleRows(static_cast<Eigen::Index>(got), received[q].rows()) = received[q];
    delivered.push_back({total, q, 0});
    got += static_cast<std::size_t>(received[q].rows());
    total += static_cast<std::uint64_t>(received[q].rows());
    received[q].resize(0, 0);
  }
  return got;
}

// Pass 2 of a plan: this rank's heads to the owners of their batches, then its bodies (each
// completed by the heads it owns) through the builder. `open(p)` opens a reader at the first
// record of piece p (one of this rank's). Collective; returns agree()'s code.
int build_plan(const SketchJob& job, const MasterSeed& seed, std::size_t dim, const Plan& plan, int rank,
               const std::function<TableReader(std::size_t)>& open, Failure& f, std::optional<ExactSketch>& exact) {
  const std::vector<Piece>& pieces = plan.pieces;
  const auto path = [&](std::size_t p) -> const std::string& { return job.inputs[pieces[p].file]; };
  std::vector<std::size_t> mine;  // this rank's pieces with records, in record order
  for (std::size_t p = 0; p < pieces.size(); ++p)
    if (pieces[p].rank == rank && pieces[p].count > 0) mine.push_back(p);

  // Every head of this rank, read first. The reader of the first piece stays open for its body.
  std::vector<DenseMatrix> heads(pieces.size());
  std::optional<TableReader> kept;
  attempt(f, [&] { read_heads(plan, mine, dim, open, path, heads, kept); });
  if (const int code = agree(f, rank)) return code;
  std::vector<std::vector<std::size_t>> owed(pieces.size());  // per body: the heads that complete it
  std::vector<DenseMatrix> received(pieces.size());
  exchange_heads(plan, mine, dim, rank, heads, owed, received);
  heads.clear();

  // The bodies in record order, in chunks on the global grid; the owed heads complete the last
  // chunk of each. `delivered` maps the builder's record numbers back to files, for messages.
  std::vector<Delivered> delivered;
  std::uint64_t total = 0, remaining = 0;
  std::size_t next = 0;  // index in `mine` of the next body
  std::optional<TableReader> reader;
  std::size_t piece = 0;
  DenseMatrix scratch;
  attempt(f, [&] {
    exact.emplace(build_table(
        job, seed, dim,
        [&](DenseMatrix& chunk) -> std::size_t {
          if (!reader) {
            while (next < mine.size() && !plan.has_body(mine[next])) ++next;
            if (next == mine.size()) return 0;
            piece = mine[next++];
            const std::uint64_t h = plan.head(piece);
            if (h > 0 && kept && piece == mine.front()) {
              reader.emplace(std::move(*kept));  // its head is read already
            } else {
              reader.emplace(open(piece));
              if (h > 0 && reader->next_chunk(scratch, h) != h) throw changed(path(piece));
            }
            kept.reset();
            remaining = pieces[piece].count - h;
          }
          const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(job.chunk_rows, remaining));
          std::size_t got = reader->next_chunk(chunk, want);  // timed by the builder (stages.read)
          if (got != want) throw changed(path(piece));
          delivered.push_back({total, piece, pieces[piece].count - remaining});
          remaining -= got;
          total += got;
          if (remaining == 0) {
            if (reader->next_chunk(scratch, 1) != 0) throw changed(path(piece));
            reader.reset();
            got = append_owed_heads(chunk, got, dim, owed[piece], received, delivered, total);
          }
          return got;
        },
        [&](std::uint64_t n) {  // the n-th record delivered (1-based)
          const auto it = std::upper_bound(delivered.begin(), delivered.end(), n - 1,
                                           [](std::uint64_t v, const Delivered& d) { return v < d.at; });
          if (it == delivered.begin()) return job.input + ": record " + std::to_string(n);
          const Delivered& d = *std::prev(it);
          const Piece& x = pieces[d.piece];
          return job.inputs[x.file] + ": record " + std::to_string(x.in_file + d.offset + (n - 1 - d.at) + 1);
        }));
  });
  return agree(f, rank);
}

// Sets and graphs: which bytes of the one input file this rank reads.
struct TextPart {
  bool split = false;                // byte shares; else rank 0 reads the whole file and the others nothing
  bool whole = false;                // this rank reads the whole file
  std::uint64_t begin = 0, end = 0;  // this rank's share [k S / K, (k + 1) S / K) when split
};

// Rank 0 looks at the file (a plain regular file splits by bytes; gzip and stdin do not, said
// on stderr) and broadcasts what it found. Collective; returns agree()'s code.
int text_part(const SketchJob& job, int rank, int ranks, Failure& f, TextPart& part, nlohmann::json& dist) {
  std::array<std::uint64_t, 2> lay{};  // splittable, bytes
  if (rank == 0)
    attempt(f, [&] {
      const TextFileLayout l = text_file_layout(job.input);
      lay = {l.splittable ? 1u : 0u, l.bytes};
      if (!l.splittable && ranks > 1 && !job.quiet)
        std::fprintf(stderr, "privrace sketch: %s is %s and cannot be split: rank 0 reads it all\n", job.input.c_str(),
                     l.why_not.c_str());
    });
  if (const int code = agree(f, rank)) return code;
  MPI_Bcast(lay.data(), static_cast<int>(lay.size()), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  part.split = lay[0] == 1;
  part.whole = !part.split && rank == 0;
  if (part.split) {
    const std::uint64_t bytes = lay[1], k = static_cast<std::uint64_t>(rank), K = static_cast<std::uint64_t>(ranks);
    part.begin = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) * k / K);
    part.end = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) * (k + 1) / K);
  }
  dist["split"] = part.split;
  return 0;
}

std::uint64_t sum_all(std::uint64_t v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return v;
}
std::uint64_t max_all(std::uint64_t v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return v;
}
std::vector<std::uint64_t> gather_all(std::uint64_t v, int ranks) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(ranks));
  MPI_Allgather(&v, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  return all;
}

// One set per line: each rank reads the sets of its byte share and sketches them; a set's
// codes depend on the set alone and the counts are sums, so the sketch is one process's.
int build_set_file(const SketchJob& job, const MasterSeed& seed, int rank, int ranks, Failure& f,
                   std::optional<ExactSketch>& exact, double& read_seconds, nlohmann::json& dist) {
  const auto t0 = std::chrono::steady_clock::now();
  TextPart part;
  if (const int code = text_part(job, rank, ranks, f, part, dist)) return code;
  SetCollection sets;
  attempt(f, [&] {
    if (part.split) sets = read_sets(job.input, part.begin, part.end);
    else if (part.whole) sets = read_sets(job.input);
  });
  if (const int code = agree(f, rank)) return code;
  const std::uint64_t total = sum_all(sets.size());
  attempt(f, [&] {  // the same verdict on every rank
    if (total == 0) throw InputError(job.input + ": no sets");
  });
  if (const int code = agree(f, rank, /*once=*/true)) return code;
  dist["rank_sets"] = gather_all(sets.size(), ranks);
  read_seconds = seconds_since(t0);
  attempt(f, [&] { exact.emplace(build_exact(job.params, seed, sets)); });
  return agree(f, rank);
}

// Graphs. A node's rank: its id mixed (splitmix64's finaliser) mod K, so that runs of nearby
// ids, often of similar degree, spread over the ranks.
std::size_t owner_of(std::uint32_t u, std::size_t ranks) {
  std::uint64_t z = u + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::size_t>((z ^ (z >> 31)) % ranks);
}

constexpr std::uint64_t kRoundPairs = std::uint64_t{1} << 24;  // pairs a rank sends (or receives) per round, at most

// bucket[d] (this rank's pairs for rank d) to rank d; returns the pairs every rank sent here, in
// rank order. In rounds of at most kRoundPairs / K pairs from a rank to a rank, so MPI's int
// counts and displacements hold and each round's two buffers stay below 128 MiB. The buckets
// are freed. Collective.
std::vector<std::uint64_t> exchange_pairs(std::vector<std::vector<std::uint64_t>>& bucket) {
  const std::size_t K = bucket.size();
  std::vector<std::uint64_t> sendn(K), recvn(K);
  for (std::size_t d = 0; d < K; ++d) sendn[d] = bucket[d].size();
  MPI_Alltoall(sendn.data(), 1, MPI_UINT64_T, recvn.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  const std::uint64_t per = std::max<std::uint64_t>(1, kRoundPairs / K);
  const std::uint64_t most = *std::max_element(sendn.begin(), sendn.end());
  const std::uint64_t rounds = max_all((most + per - 1) / per);
  std::vector<std::uint64_t> where(K + 1, 0);  // where each sender's pairs go in `out`
  for (std::size_t s = 0; s < K; ++s) where[s + 1] = where[s] + recvn[s];
  std::vector<std::uint64_t> out(where[K]), sbuf, rbuf;
  std::vector<int> sc(K), sd(K), rc(K), rd(K);
  const auto slice = [per](std::uint64_t n, std::uint64_t t) { return t * per < n ? std::min(per, n - t * per) : 0; };
  for (std::uint64_t t = 0; t < rounds; ++t) {
    sbuf.clear();
    std::size_t rtotal = 0;
    for (std::size_t d = 0; d < K; ++d) {
      const std::uint64_t n = slice(sendn[d], t);
      sc[d] = static_cast<int>(n);
      sd[d] = static_cast<int>(sbuf.size());
      if (n > 0) {
        const auto from = bucket[d].begin() + static_cast<std::ptrdiff_t>(t * per);
        sbuf.insert(sbuf.end(), from, from + static_cast<std::ptrdiff_t>(n));
      }
      rc[d] = static_cast<int>(slice(recvn[d], t));
      rd[d] = static_cast<int>(rtotal);
      rtotal += static_cast<std::size_t>(rc[d]);
    }
    rbuf.resize(rtotal);
    MPI_Alltoallv(sbuf.data(), sc.data(), sd.data(), MPI_UINT64_T, rbuf.data(), rc.data(), rd.data(), MPI_UINT64_T,
                  MPI_COMM_WORLD);
    for (std::size_t s = 0; s < K; ++s)
      std::copy_n(rbuf.begin() + rd[s], rc[s], out.begin() + static_cast<std::ptrdiff_t>(where[s] + t * per));
  }
  for (auto& b : bucket) std::vector<std::uint64_t>().swap(b);
  return out;
}

// An edge list: each rank reads the edge lines of its byte share (a gzip file or stdin: rank 0
// reads them all), every (u, v) goes to u's rank and, --undirected, (v, u) to v's, and each
// rank builds the sets of its nodes (the targets of its directed pairs united with the sources
// of its reversed pairs, sorted and de-duplicated, as read_edge_list) and sketches them. Node
// ids are not compacted, so every node's set is the one of one process; the nodes without a
// neighbour (ids up to max(largest id + 1, --nodes)) are not records (without_empty_sets).
// A set's codes depend on the set alone and the counts are sums: the sketch is one process's.
int build_graph(const SketchJob& job, const MasterSeed& seed, int rank, int ranks, Failure& f, std::optional<ExactSketch>& exact,
                nlohmann::json& graph_info, double& read_seconds, nlohmann::json& dist) {
  const auto t0 = std::chrono::steady_clock::now();
  EdgeListOptions eopts;
  attempt(f, [&] { eopts = edge_list_options(job); });
  if (const int code = agree(f, rank, /*once=*/true)) return code;
  TextPart part;
  if (const int code = text_part(job, rank, ranks, f, part, dist)) return code;
  EdgeLines mine;
  attempt(f, [&] {
    if (part.split) mine = read_edge_lines(job.input, eopts, std::pair{part.begin, part.end});
    else if (part.whole) mine = read_edge_lines(job.input, eopts);
  });
  if (const int code = agree(f, rank)) return code;
  std::vector<std::uint64_t>& edges = mine.edges;
  std::array<std::uint64_t, 2> counts = {edges.size(), 0};  // edge lines, self-loops
  for (const std::uint64_t e : edges) counts[1] += (e >> 32) == (e & 0xFFFFFFFFu);
  if (!eopts.keep_self_loops)
    edges.erase(std::remove_if(edges.begin(), edges.end(), [](std::uint64_t e) { return (e >> 32) == (e & 0xFFFFFFFFu); }),
                edges.end());
  const std::vector<std::uint64_t> rank_lines = gather_all(counts[0], ranks);
  MPI_Allreduce(MPI_IN_PLACE, counts.data(), 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  const std::uint64_t max_id = max_all(mine.max_id);
  attempt(f, [&] {  // the same verdict on every rank
    if (counts[0] == 0) throw InputError(job.input + ": empty graph (no edges)");
  });
  if (const int code = agree(f, rank, /*once=*/true)) return code;
  const std::uint64_t nodes = std::max(max_id + 1, eopts.declared_nodes);

  // (u, v) to u's rank; --undirected: (v, u) to v's too (a self-loop needs no mirror).
  const auto te = std::chrono::steady_clock::now();
  const auto K = static_cast<std::size_t>(ranks);
  std::vector<std::vector<std::uint64_t>> out(K), in(K);
  for (const std::uint64_t e : edges) {
    const auto u = static_cast<std::uint32_t>(e >> 32), v = static_cast<std::uint32_t>(e);
    out[owner_of(u, K)].push_back(e);
    if (eopts.symmetrise && u != v) in[owner_of(v, K)].push_back(pack_edge(v, u));
  }
  std::vector<std::uint64_t>().swap(edges);
  std::vector<std::uint64_t> directed = exchange_pairs(out);
  std::vector<std::uint64_t> reverse = exchange_pairs(in);
  dist["exchange"] = seconds_since(te);

  EdgeListReport g;
  SetCollection sets;
  attempt(f, [&] { sets = pairs_to_sets(directed, reverse, g); });
  if (const int code = agree(f, rank)) return code;
  std::array<std::uint64_t, 3> sums = {sets.size(), g.edges, g.duplicates};
  const std::vector<std::uint64_t> rank_sets = gather_all(sets.size(), ranks);
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  g.nodes = nodes;
  g.lines = counts[0];
  g.self_loops = counts[1];
  g.edges = sums[1];
  g.duplicates = sums[2];
  g.max_degree = max_all(g.max_degree);
  g.empty_sets = nodes - sums[0];
  g.symmetrised = eopts.symmetrise;
  graph_info = graph_record(g, eopts, false);
  // The nodes without a neighbour are not records (without_empty_sets): nothing is added for them.
  dist["rank_edge_lines"] = rank_lines;
  dist["rank_nodes"] = rank_sets;  // nodes with a neighbour
  read_seconds = seconds_since(t0);
  attempt(f, [&] { exact.emplace(build_exact(job.params, seed, sets)); });
  return agree(f, rank);
}

// How the ranks' exact int64 counts are summed. The tree reduce moves the whole array up a tree,
// ceil(log2 K) times, and adds it on one rank a step: for a wide sketch that was most of the
// command (1.6 GB of counts: 7.3 s at 16 ranks, docs/scaling.md). From kScatterReduceCounts on and
// kScatterReduceMinRanks ranks (or whenever PRIVRACE_MPI_REDUCE=scatter), the array is cut into K
// contiguous slices, a reduce-scatter leaves slice k summed on rank k (each rank adds 1/K of the
// array), rank k noises its slice, and a gather brings the noisy slices to rank 0: about
// 2 (K - 1) / K of the array crosses a rank's link instead of log2 K of it, and the noise is
// drawn by every rank at once. At 2 ranks both move the same bytes and the tree was faster
// (docs/distributed.md). Slices start on noise blocks, so a seeded release is the same bytes.
struct SumPlan {
  bool scatter = false;
  std::vector<int> sizes, offsets;  // slice k: [offsets[k], offsets[k] + sizes[k]) of the array
};

SumPlan plan_sum(std::size_t n, int ranks) {
  SumPlan plan;
  const ReduceChoice choice = requested_reduce();
  const bool wide_enough = choice == ReduceChoice::Scatter || (choice == ReduceChoice::Automatic && ranks >= kScatterReduceMinRanks);
  // The gather's offsets are ints: arrays of 2^31 counts or more keep the reduce.
  plan.scatter = wide_enough && ranks > 1 && n >= kScatterReduceCounts && n <= static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (!plan.scatter) return plan;
  const std::size_t K = static_cast<std::size_t>(ranks);
  constexpr std::size_t A = ExactSketch::kShareAlignment;  // whole noise and encoding blocks
  const std::size_t slice = ((n + K - 1) / K + A - 1) / A * A;
  for (std::size_t k = 0; k < K; ++k) {
    plan.sizes.push_back(static_cast<int>(std::min(n, (k + 1) * slice) - std::min(n, k * slice)));
    plan.offsets.push_back(static_cast<int>(std::min(n, k * slice)));
  }
  return plan;
}

// The tree: the sums in rank 0's array (the other ranks' arrays are left as they were), in
// pieces MPI's int counts can address.
void reduce_counts_at_rank0(std::span<std::int64_t> counts, int rank) {
  for (std::size_t off = 0; off < counts.size(); off += kMaxReduceCounts) {
    const int len = static_cast<int>(std::min(kMaxReduceCounts, counts.size() - off));
    if (rank == 0) MPI_Reduce(MPI_IN_PLACE, counts.data() + off, len, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    else MPI_Reduce(counts.data() + off, nullptr, len, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  }
}

// The reduce-scatter: this rank's slice of the sums, written over its own slice of `counts`.
void reduce_scatter_counts(std::span<std::int64_t> counts, const SumPlan& plan, int rank) {
  const auto k = static_cast<std::size_t>(rank);
  std::vector<std::int64_t> mine(static_cast<std::size_t>(plan.sizes[k]));
  MPI_Reduce_scatter(counts.data(), mine.data(), plan.sizes.data(), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  std::copy(mine.begin(), mine.end(), counts.begin() + plan.offsets[k]);
}

// Every rank's encoded slice to rank 0, joined there in rank order after its own (the other
// ranks get nothing back). The frames travel as one byte string a rank (sent in pieces MPI's
// int counts can address), the block table beside them; rank 0 checks each block's CRC.
EncodedCountBlocks gather_encoded_at_rank0(EncodedCountBlocks mine, int rank, int ranks) {
  constexpr int kTag = 7301;
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  const auto send_bytes = [&](const char* data, std::size_t n) {
    for (std::size_t off = 0; off < n; off += kPiece)
      MPI_Send(data + off, static_cast<int>(std::min(kPiece, n - off)), MPI_CHAR, 0, kTag, MPI_COMM_WORLD);
  };
  if (rank != 0) {
    std::string bytes;
    bytes.reserve(mine.frame_bytes());
    std::vector<std::uint64_t> sizes;
    for (const auto f : mine.frames) bytes += f, sizes.push_back(f.size());
    const std::uint64_t head[4] = {mine.counts, sizes.size(), bytes.size(), static_cast<std::uint64_t>(mine.total)};
    MPI_Send(head, 4, MPI_UINT64_T, 0, kTag, MPI_COMM_WORLD);
    MPI_Send(mine.planes.data(), static_cast<int>(sizes.size()), MPI_UINT8_T, 0, kTag, MPI_COMM_WORLD);
    MPI_Send(sizes.data(), static_cast<int>(sizes.size()), MPI_UINT64_T, 0, kTag, MPI_COMM_WORLD);
    MPI_Send(mine.crcs.data(), static_cast<int>(sizes.size()), MPI_UINT32_T, 0, kTag, MPI_COMM_WORLD);
    send_bytes(bytes.data(), bytes.size());
    return {};
  }
  // Everything is received before anything is checked: a damaged slice must not leave a later
  // rank blocked in its send.
  struct Received {
    std::uint64_t counts = 0;
    std::int64_t total = 0;
    std::vector<std::uint8_t> planes;
    std::vector<std::uint64_t> sizes;
    std::vector<std::uint32_t> crcs;
    std::string bytes;
  };
  std::vector<Received> received;
  for (int r = 1; r < ranks; ++r) {
    std::uint64_t head[4] = {0, 0, 0, 0};
    MPI_Recv(head, 4, MPI_UINT64_T, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const auto blocks = static_cast<std::size_t>(head[1]);
    std::vector<std::uint8_t> planes(blocks);
    std::vector<std::uint64_t> sizes(blocks);
    std::vector<std::uint32_t> crcs(blocks);
    MPI_Recv(planes.data(), static_cast<int>(blocks), MPI_UINT8_T, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(sizes.data(), static_cast<int>(blocks), MPI_UINT64_T, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(crcs.data(), static_cast<int>(blocks), MPI_UINT32_T, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::string bytes(static_cast<std::size_t>(head[2]), '\0');
    for (std::size_t off = 0; off < bytes.size(); off += kPiece)
      MPI_Recv(bytes.data() + off, static_cast<int>(std::min(kPiece, bytes.size() - off)), MPI_CHAR, r, kTag, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    received.push_back({head[0], static_cast<std::int64_t>(head[3]), std::move(planes), std::move(sizes), std::move(crcs),
                        std::move(bytes)});
  }
  for (std::size_t k = 0; k < received.size(); ++k) {
    Received& got = received[k];
    mine.append(EncodedCountBlocks::adopt(std::move(got.bytes), got.counts, got.total, std::move(got.planes), std::move(got.sizes),
                                          std::move(got.crcs), "rank " + std::to_string(k + 1)));
  }
  return mine;
}

// Thrown inside the gather when another rank failed to noise its slice (that rank reports why).
struct PeerFailed : std::runtime_error {
  PeerFailed() : std::runtime_error("another rank failed") {}
};

// Every rank parses the same options into the same job; the ranks compare their command lines
// (and the files they name) before anything is read. Collective; returns the exit code (0: every
// rank has its job and they agree).
int parse_and_compare(int argc, char** argv, int rank, int ranks, Failure& f, SketchJob& job) {
  attempt(f, [&] {
    job = parse_sketch(argc, argv);
    if (job.chunk_rows % kBatch != 0)
      throw UsageError("under mpirun --chunk-rows must be a multiple of 4096 (the builder's batch), got " +
                       std::to_string(job.chunk_rows));
    (void)requested_reduce();  // a bad PRIVRACE_MPI_REDUCE is a usage error before any reading
  });
  std::string line;
  for (int i = 0; i < argc; ++i) line += std::string(argv[i]) + '\0';
  for (const std::string& input : job.inputs) line += input + '\0';  // a pattern or list may expand differently
  const std::uint64_t hash = fnv1a(line);
  std::vector<std::uint64_t> hashes(static_cast<std::size_t>(ranks));
  MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  if (const int code = agree(f, rank, /*once=*/true)) return code;
  for (int r = 1; r < ranks; ++r)
    if (hashes[static_cast<std::size_t>(r)] != hashes[0]) {
      if (rank == 0)
        std::fprintf(stderr, "privrace sketch: ranks disagree on their parameters or input files (rank %d differs "
                             "from rank 0); every rank must get the same options and see the same files\n", r);
      return 2;
    }
  return 0;
}

// What this rank built from its part of the input, and what the file records of how.
struct Built {
  std::optional<ExactSketch> exact;
  nlohmann::json graph_info;
  double read_seconds = 0.0;  // graphs (rank 0); tables stream into the build
  nlohmann::json dist;
};

// A .jlg file (its header line first) or a graph read through its CSR cache: rank 0 reads and
// builds it all, the others add zeros.
void build_graph_at_rank0(const SketchJob& job, const MasterSeed& seed, int rank, int ranks, Failure& f, Built& b) {
  if (rank == 0 && ranks > 1 && !job.quiet)
    std::fprintf(stderr, "privrace sketch: %s: rank 0 reads and sketches the whole graph\n",
                 job.format == "jlg" ? "a .jlg file" : "--graph-cache");
  b.dist["split"] = false;
  attempt(f, [&] {
    if (rank == 0) b.exact.emplace(build_local(job, seed, b.graph_info, b.read_seconds));
    else b.exact.emplace(build_exact(job.params, seed, SetCollection{}));
  });
}

// Several files: whole files to ranks by size (LPT), sizes looked up once by rank 0. A file that
// cannot be looked up counts 0 bytes; its rank reports why it cannot be opened. Collective;
// returns each file's rank.
std::vector<int> files_to_ranks(const SketchJob& job, int rank, int ranks, nlohmann::json& dist) {
  const std::size_t files = job.inputs.size();
  std::vector<std::uint64_t> bytes(files, 0);
  if (rank == 0)
    for (std::size_t i = 0; i < files; ++i) {
      std::error_code ec;
      const std::uintmax_t size = std::filesystem::file_size(job.inputs[i], ec);
      bytes[i] = ec ? 0 : static_cast<std::uint64_t>(size);
    }
  MPI_Bcast(bytes.data(), static_cast<int>(files), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  std::vector<std::uint64_t> load;
  std::vector<int> rank_of = assign_files(bytes, ranks, load);
  dist["split"] = false;
  dist["files"] = files;
  dist["rank_bytes"] = load;
  return rank_of;
}

// Several files read as one table, each whole by one rank. Collective; returns agree()'s code.
int build_files(const SketchJob& job, const MasterSeed& seed, int rank, int ranks, Failure& f, Built& b) {
  const std::size_t files = job.inputs.size();
  const std::vector<int> rank_of = files_to_ranks(job, rank, ranks, b.dist);

  // Pass 1: each rank counts the records of its files (and their columns); the per-file
  // counts, summed over the ranks, give every file the global index of its first record.
  const auto tc = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> count(files, 0), dims(files, 0);
  attempt(f, [&] {
    for (std::size_t i = 0; i < files; ++i)
      if (rank_of[i] == rank) {
        TableReader reader(job.inputs[i], job.table);
        dims[i] = reader.dim();
        count[i] = reader.count_remaining();
      }
  });
  if (const int code = agree(f, rank)) return code;
  MPI_Allreduce(MPI_IN_PLACE, count.data(), static_cast<int>(files), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, dims.data(), static_cast<int>(files), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  attempt(f, [&] {  // the same verdict on every rank
    for (std::size_t i = 1; i < files; ++i)
      check_same_columns(job.inputs[i], static_cast<std::size_t>(dims[i]), job.inputs[0], static_cast<std::size_t>(dims[0]));
  });
  if (const int code = agree(f, rank, /*once=*/true)) return code;
  Plan plan;  // one piece per file, in list order
  std::uint64_t first = 0;
  for (std::size_t i = 0; i < files; ++i) {
    plan.pieces.push_back({rank_of[i], i, first, count[i], 0});
    first += count[i];
  }
  b.dist["count_pass"] = seconds_since(tc);

  // Pass 2: heads to the owners of their batches, then this rank's files.
  return build_plan(job, seed, static_cast<std::size_t>(dims[0]), plan, rank,
                    [&](std::size_t p) { return TableReader(job.inputs[plan.pieces[p].file], job.table); }, f, b.exact);
}

// The start of the one input file, as rank 0 read it and broadcast it.
struct Layout {
  bool splittable = false;
  TableFormat format{};
  std::uint64_t fields = 0, dim = 0;
  std::optional<std::uint64_t> header_at;
  std::uint64_t bytes = 0;
};

// Rank 0 reads the start of the whole file: format, fields, header, and whether it splits; a
// file that does not split stays open in `whole`. Collective; returns agree()'s code.
int read_layout(const SketchJob& job, int rank, int ranks, Failure& f, std::optional<TableReader>& whole, Layout& layout) {
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
  layout.splittable = lay[0] == 1;
  layout.format = static_cast<TableFormat>(lay[1]);
  layout.fields = lay[2];
  layout.dim = lay[3];
  if (lay[4] == 1) layout.header_at = lay[5];
  layout.bytes = lay[6];
  return 0;
}

// One splittable file: rank k reads the records whose first byte lies in [k S / K, (k + 1) S / K).
// Collective; returns agree()'s code.
int build_share(const SketchJob& job, const MasterSeed& seed, const Layout& layout, int rank, int ranks, Failure& f,
                Built& b) {
  TableOptions topts = job.table;
  topts.format = layout.format;
  TableShare share;
  const std::uint64_t bytes = layout.bytes, k = static_cast<std::uint64_t>(rank), K = static_cast<std::uint64_t>(ranks);
  // k S / K without overflow: S < 2^64 / K for any file and rank count in practice.
  share.begin = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) * k / K);
  share.end = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) * (k + 1) / K);
  share.fields = static_cast<std::size_t>(layout.fields);
  share.header_at = layout.header_at;
  topts.share = share;

  // Pass 1: count this share's records; every rank learns where every share starts.
  const auto tc = std::chrono::steady_clock::now();
  std::uint64_t mine = 0;
  attempt(f, [&] { mine = TableReader(job.input, topts).count_remaining(); });
  if (const int code = agree(f, rank)) return code;
  std::vector<std::uint64_t> count(static_cast<std::size_t>(ranks));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, count.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  Plan plan;  // one piece per rank, in rank order
  std::uint64_t first = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::uint64_t n = count[static_cast<std::size_t>(r)];
    plan.pieces.push_back({r, 0, first, n, first});
    first += n;
  }
  b.dist["count_pass"] = seconds_since(tc);

  // Pass 2: the head of this rank's share to the owner of its batch, then the rest.
  return build_plan(job, seed, static_cast<std::size_t>(layout.dim), plan, rank,
                    [&](std::size_t) { return TableReader(job.input, topts); }, f, b.exact);
}

// One table file: in byte shares, or (gzip, stdin, libsvm) read by rank 0 alone while the
// others add zeros. Collective; returns agree()'s code.
int build_one_file(const SketchJob& job, const MasterSeed& seed, int rank, int ranks, Failure& f, Built& b) {
  std::optional<TableReader> whole;
  Layout layout;
  if (const int code = read_layout(job, rank, ranks, f, whole, layout)) return code;
  b.dist["split"] = layout.splittable;
  if (layout.splittable) return build_share(job, seed, layout, rank, ranks, f, b);
  const auto dim = static_cast<std::size_t>(layout.dim);
  attempt(f, [&] {
    if (rank == 0) {
      TableReader& reader = *whole;
      b.exact.emplace(build_table(job, seed, dim, [&](DenseMatrix& chunk) { return reader.next_chunk(chunk, job.chunk_rows); }));
    } else {
      b.exact.emplace(build_table(job, seed, dim, [](DenseMatrix&) -> std::size_t { return 0; }));
    }
  });
  return 0;
}

// This rank's exact sketch of its part of the input, whatever the input. Collective; returns the
// exit code (0: every rank built its part).
int build_part(const SketchJob& job, const MasterSeed& seed, int rank, int ranks, Failure& f, Built& b) {
  if (job.set_kernel && !job.graph_input) {
    if (const int code = build_set_file(job, seed, rank, ranks, f, b.exact, b.read_seconds, b.dist)) return code;
  } else if (job.set_kernel && job.format != "jlg" && !job.vm.count("graph-cache")) {
    if (const int code = build_graph(job, seed, rank, ranks, f, b.exact, b.graph_info, b.read_seconds, b.dist)) return code;
  } else if (job.set_kernel) {
    build_graph_at_rank0(job, seed, rank, ranks, f, b);
  } else if (job.inputs.size() > 1) {
    if (const int code = build_files(job, seed, rank, ranks, f, b)) return code;
  } else {
    if (const int code = build_one_file(job, seed, rank, ranks, f, b)) return code;
  }
  return agree(f, rank);
}

// The tree: noise once, at rank 0, which writes the file (the header of one process: same
// fields, same order). Returns rank 0's exit code (0 on the other ranks).
int noise_and_write_at_rank0(const SketchJob& job, const MasterSeed& seed, int rank,
                             std::chrono::steady_clock::time_point t0, std::uint64_t others, Failure& f, Built& b) {
  if (rank != 0) return 0;
  attempt(f, [&] {
    b.exact->add_reduced_records(static_cast<std::int64_t>(others));
    write_sketch(job, std::move(*b.exact), seed, t0, b.read_seconds, b.graph_info, b.dist);
  });
  if (f.code != 0) std::fprintf(stderr, "privrace sketch: rank 0: %s\n", f.message.c_str());
  return f.code;
}

// The reduce-scatter: each rank noises its slice where it lies (the release API's shares: block
// b of the array from the stream one process gives it) and encodes it; the encoded slices go to
// rank 0, which decodes them into its counts and writes the blocks as they came. Collective;
// returns agree()'s code when a rank failed before the gather, else 0 with rank 0's exit code in
// `status` (0 on the other ranks).
int noise_slices_and_write(const SketchJob& job, const MasterSeed& seed, const SumPlan& sum, int rank, int ranks,
                           std::chrono::steady_clock::time_point t0, std::uint64_t others, Failure& f, Built& b,
                           int& status) {
  const double build_seconds = seconds_since(t0) - b.read_seconds;
  bool agreed = false;
  int code = 0;
  double noise_encode_seconds = 0.0, gather_seconds = 0.0;
  std::optional<Release> release;
  const auto k = static_cast<std::size_t>(rank);
  const auto t_release = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point t_gathered;
  attempt(f, [&] {
    if (rank == 0) b.exact->add_reduced_records(static_cast<std::int64_t>(others));
    release = std::move(*b.exact).release_in_shares(static_cast<std::size_t>(sum.offsets[k]), static_cast<std::size_t>(sum.sizes[k]),
                                                    rank == 0, [&](EncodedCountBlocks mine) {
      noise_encode_seconds = seconds_since(t_release);
      agreed = true;  // no slice leaves its rank unless every rank has noised and encoded its own
      if ((code = agree(Failure{}, rank)) != 0) throw PeerFailed();
      const auto tg = std::chrono::steady_clock::now();
      EncodedCountBlocks joined = gather_encoded_at_rank0(std::move(mine), rank, ranks);
      gather_seconds = seconds_since(tg);
      t_gathered = std::chrono::steady_clock::now();
      return joined;
    });
  });
  if (!agreed) code = agree(f, rank);  // this rank failed before the gather: the others wait in theirs
  if (code != 0) return code;
  // Past the gather only rank 0 can still fail (a damaged slice, the write): the caller's status
  // broadcast gives every rank its code.
  if (rank == 0 && f.code == 0) {
    b.dist["noise_encode_rank0"] = noise_encode_seconds;
    b.dist["gather"] = gather_seconds;
    b.dist["join"] = seconds_since(t_gathered);  // the release holds the encoded blocks: nothing is decoded to write
    b.dist["noise_where"] = "each rank its slice";
    b.dist["encode_where"] = "each rank its slice";
    attempt(f, [&] {
      write_release(job, *release, seed, t0, b.read_seconds, build_seconds, release->noise_seconds(), b.graph_info, b.dist);
    });
  }
  if (rank == 0) {
    if (f.code != 0) std::fprintf(stderr, "privrace sketch: rank 0: %s\n", f.message.c_str());
    status = f.code;
  }
  return 0;
}

// Exact integer sums: at rank 0 (the tree), or slice k at rank k (the reduce-scatter); then the
// noise and the file. Collective; returns the exit code, the same on every rank.
int sum_and_write(const SketchJob& job, const MasterSeed& seed, int rank, int ranks, std::chrono::steady_clock::time_point t0,
                  Failure& f, Built& b) {
  const auto t_reduce = std::chrono::steady_clock::now();
  auto counts = b.exact->partial_counts();
  SumPlan sum;
  attempt(f, [&] { sum = plan_sum(counts.size(), ranks); });  // checked above: cannot fail here
  b.dist["reduce_method"] = sum.scatter ? "reduce_scatter_gather" : "reduce";
  if (sum.scatter) reduce_scatter_counts(counts, sum, rank);
  else reduce_counts_at_rank0(counts, rank);
  const std::uint64_t local = b.exact->report().points;
  std::uint64_t all = 0;
  MPI_Reduce(&local, &all, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  b.dist["reduce"] = seconds_since(t_reduce);

  int status = 0;
  if (!sum.scatter) status = noise_and_write_at_rank0(job, seed, rank, t0, all - local, f, b);
  else if (const int code = noise_slices_and_write(job, seed, sum, rank, ranks, t0, all - local, f, b, status)) return code;
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

int run(int argc, char** argv, int rank, int ranks) {
  const auto t0 = std::chrono::steady_clock::now();
  Failure f;
  SketchJob job;
  if (const int code = parse_and_compare(argc, argv, rank, ranks, f, job)) return code;

  // One master seed for every rank: the LSH functions must be the same everywhere.
  std::uint64_t master = 0;
  if (rank == 0) attempt(f, [&] { master = MasterSeed::resolve(job.params.seed).value(); });
  if (const int code = agree(f, rank)) return code;
  MPI_Bcast(&master, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const MasterSeed seed = MasterSeed::of(master, job.params.seed.has_value());

  Built built;
  built.dist = {{"ranks", ranks}};
  if (const int code = build_part(job, seed, rank, ranks, f, built)) return code;
  return sum_and_write(job, seed, rank, ranks, t0, f, built);
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
