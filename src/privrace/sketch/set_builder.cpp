#include "privrace/sketch/set_builder.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/zeroed_pages.hpp"

namespace privrace {

namespace {
int resolve_threads(int t) { return t > 0 ? t : omp_get_max_threads(); }

// One chunk of the two-phase build: sets [first, first + size), whose mini batch bi puts its
// non-empty sets' columns at [start[bi], start[bi + 1]) of each row's slice of `cols`
// (R rows of `stride` column indices).
struct SetChunk {
  const SetCollection& sets;
  std::size_t first, size, mini_batch, stride;
  std::vector<std::size_t> start;
  std::uint32_t* cols;
  std::size_t batches() const { return start.size() - 1; }
  std::size_t filled() const { return start.back(); }
};

// Chunk: as many points as fit the column-index budget (4 bytes per row and point), a whole
// number of mini batches. More points per chunk = more increments per cached count row.
std::size_t chunk_points(std::size_t rows, std::size_t n, const SetBuildOptions& opts) {
  const std::size_t mb = opts.mini_batch;
  std::size_t chunk = std::max<std::size_t>(mb, opts.chunk_bytes / (4 * rows));
  chunk = std::min(chunk, std::max<std::size_t>(n, 1));
  return (chunk + mb - 1) / mb * mb;
}

// Where each mini batch's non-empty sets go in the chunk's column matrix.
void place_mini_batches(SetChunk& chunk) {
  const std::size_t batches = (chunk.size + chunk.mini_batch - 1) / chunk.mini_batch;
  const std::size_t end = chunk.first + chunk.size;
  const auto& offsets = chunk.sets.offsets;
  chunk.start.assign(batches + 1, 0);
  for (std::size_t bi = 0; bi < batches; ++bi) {
    std::size_t k = 0;
    for (std::size_t i = chunk.first + bi * chunk.mini_batch; i < std::min(end, chunk.first + (bi + 1) * chunk.mini_batch); ++i)
      k += offsets[i + 1] != offsets[i];
    chunk.start[bi + 1] = chunk.start[bi] + k;
  }
}

// Phase 1, inside a parallel region: hash disjoint mini batches (dynamic: set sizes vary by
// orders of magnitude), runs of non-empty sets at a time, into their columns.
void hash_chunk(const RaceSketch& sketch, const SetChunk& chunk) {
  const LshFamily& family = sketch.family();
  const auto& offsets = chunk.sets.offsets;
  const std::size_t R = sketch.rows(), end = chunk.first + chunk.size;
  CodeMatrix codes;
#pragma omp for schedule(dynamic, 4)
  for (std::size_t bi = 0; bi < chunk.batches(); ++bi) {
    const std::size_t i1 = std::min(end, chunk.first + (bi + 1) * chunk.mini_batch);
    std::size_t pos = chunk.start[bi];
    for (std::size_t a = chunk.first + bi * chunk.mini_batch; a < i1;) {
      if (offsets[a + 1] == offsets[a]) {
        ++a;
        continue;
      }
      std::size_t e = a + 1;
      while (e < i1 && offsets[e + 1] != offsets[e]) ++e;
      family.hash_sets(SetBatch{&chunk.sets, a, e}, codes);
      const auto b = static_cast<Eigen::Index>(e - a);
      for (std::size_t r = 0; r < R; ++r) {
        const ColumnHash& h = sketch.column_hash(r);
        const std::uint64_t* src = codes.row(static_cast<Eigen::Index>(r)).data();
        std::uint32_t* dst = chunk.cols + r * chunk.stride + pos;
        for (Eigen::Index j = 0; j < b; ++j) dst[j] = h(src[j]);
      }
      pos += e - a;
      a = e;
    }
  }
}

// Phase 2, inside a parallel region: disjoint rows of the one sketch; a count row stays in L2
// for the whole chunk.
void count_chunk(RaceSketch& sketch, const SetChunk& chunk) {
  const std::size_t R = sketch.rows(), filled = chunk.filled();
#pragma omp for schedule(static)
  for (std::size_t r = 0; r < R; ++r) {
    std::int64_t* row = sketch.row(r);
    const std::uint32_t* c = chunk.cols + r * chunk.stride;
    // While this row is being filled, pull the next row in sequentially (two lines every
    // eight increments): otherwise its first touch of each line is a random DRAM miss.
    const char* next = r + 1 < R ? reinterpret_cast<const char*>(sketch.row(r + 1)) : nullptr;
    const std::size_t next_bytes = next ? sketch.width() * sizeof(std::int64_t) : 0;
    std::size_t i = 0, ahead = 0;
    for (; i + 8 <= filled; i += 8) {
      if (ahead < next_bytes) {
        __builtin_prefetch(next + ahead, 1, 3);
        __builtin_prefetch(next + ahead + 64, 1, 3);
        ahead += 128;
      }
      ++row[c[i]];
      ++row[c[i + 1]];
      ++row[c[i + 2]];
      ++row[c[i + 3]];
      ++row[c[i + 4]];
      ++row[c[i + 5]];
      ++row[c[i + 6]];
      ++row[c[i + 7]];
    }
    for (; i < filled; ++i) ++row[c[i]];
  }
}

// Empty sets all get the same code in every row: counted and added in bulk (many R-MAT nodes
// are isolated; each would otherwise cost R increments).
void add_empty_sets(RaceSketch& sketch, std::uint64_t empties) {
  if (empties == 0) return;
  SetCollection empty;
  empty.push_back(std::span<const std::uint32_t>{});
  CodeMatrix codes;
  sketch.family().hash_sets(SetBatch{&empty, 0, 1}, codes);
  for (std::size_t r = 0; r < sketch.rows(); ++r)
    sketch.row(r)[sketch.column_hash(r)(codes(static_cast<Eigen::Index>(r), 0))] += static_cast<std::int64_t>(empties);
}
}  // namespace

BuildReport build_set_sketch(RaceSketch& sketch, const SetCollection& sets, const SetBuildOptions& opts) {
  const LshFamily& family = sketch.family();
  if (family.input_kind() != InputKind::Sets) throw UsageError("build_set_sketch needs a set kernel (jaccard)");
  BuildStrategy strategy = opts.strategy;
  if (strategy == BuildStrategy::Auto) strategy = family.mirrored_inserts() ? BuildStrategy::Replicate : BuildStrategy::TwoPhase;
  if (strategy == BuildStrategy::Replicate || strategy == BuildStrategy::SplitRows) {
    BuildOptions b;
    b.threads = opts.threads;
    b.strategy = strategy;
    return build_sets(sketch, sets, b);
  }
  if (sketch.is_private()) throw UsageError("cannot add records to a sketch that already carries noise");
  if (opts.mini_batch == 0) throw UsageError("mini batch must be positive");
  const double t0 = now_seconds();
  const int threads = resolve_threads(opts.threads);
  const std::size_t R = sketch.rows(), n = sets.size();
  const std::size_t stride = chunk_points(R, n, opts);
  // Phase 1 writes R rows far apart for every mini batch (the allocator's page policy).
  std::vector<std::uint32_t, ZeroedPageAllocator<std::uint32_t>> cols_mem(R * stride);
  std::uint64_t empties = 0;
  for (std::size_t c0 = 0; c0 < n; c0 += stride) {
    SetChunk chunk{sets, c0, std::min(stride, n - c0), opts.mini_batch, stride, {}, cols_mem.data()};
    place_mini_batches(chunk);
    empties += chunk.size - chunk.filled();
#pragma omp parallel num_threads(threads)
    {
      hash_chunk(sketch, chunk);  // the implicit barrier of its omp for ends phase 1
      count_chunk(sketch, chunk);
    }
  }
  add_empty_sets(sketch, empties);
  return {n, threads, BuildStrategy::TwoPhase, now_seconds() - t0, {}};
}

}  // namespace privrace
