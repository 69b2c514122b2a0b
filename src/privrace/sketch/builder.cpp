#include "privrace/sketch/builder.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "privrace/core/memory.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"

namespace privrace {

namespace {
constexpr std::pair<BuildStrategy, const char*> kStrategyNames[] = {{BuildStrategy::Auto, "auto"},
                                                                    {BuildStrategy::Replicate, "replicate"},
                                                                    {BuildStrategy::SplitRows, "split_rows"},
                                                                    {BuildStrategy::TwoPhase, "two_phase"}};

[[noreturn]] void refuse_strategy(const std::string& name, Kernel kernel, std::string_view option_prefix) {
  const bool sets = is_set_kernel(kernel);
  throw UsageError(std::string(option_prefix) + "strategy must be one of auto, replicate, split_rows" + (sets ? ", two_phase" : "") +
                   " for the " + to_string(kernel) + " kernel, got '" + name + "'");
}
}  // namespace

BuildStrategy parse_build_strategy(const std::string& name, Kernel kernel, std::string_view option_prefix) {
  for (const auto& [strategy, text] : kStrategyNames)
    if (name == text) return strategy;
  refuse_strategy(name, kernel, option_prefix);
}

void check_build_strategy(BuildStrategy strategy, Kernel kernel, std::string_view option_prefix) {
  if (strategy == BuildStrategy::TwoPhase && !is_set_kernel(kernel)) refuse_strategy(to_string(strategy), kernel, option_prefix);
}

std::string to_string(BuildStrategy strategy) {
  for (const auto& [s, text] : kStrategyNames)
    if (s == strategy) return text;
  return "?";
}

namespace {
// Static slice t of [0, n) among T threads: contiguous, sizes differ by at most one.
std::pair<std::size_t, std::size_t> slice(std::size_t n, int t, int threads) {
  const std::size_t T = static_cast<std::size_t>(threads), i = static_cast<std::size_t>(t);
  return {n * i / T, n * (i + 1) / T};
}
}  // namespace

SketchBuilder::SketchBuilder(RaceSketch& target, BuildOptions opts) : target_(target), opts_(std::move(opts)) {
  threads_ = opts_.threads > 0 ? opts_.threads : omp_get_max_threads();
  if (opts_.batch == 0 || opts_.row_block == 0) throw UsageError("batch size and row block must be positive");
  if (target_.is_private()) throw UsageError("cannot add records to a sketch that already carries noise");
  const double copy_bytes = static_cast<double>(target_.rows()) * static_cast<double>(target_.width()) * 8.0;
  switch (opts_.strategy) {
    case BuildStrategy::Replicate: split_rows_ = false; break;
    case BuildStrategy::SplitRows: split_rows_ = true; break;
    case BuildStrategy::Auto:
      split_rows_ = threads_ > 1 && copy_bytes * threads_ > opts_.memory_fraction * physical_memory_bytes();
      break;
    default:
      throw UsageError("unknown build strategy '" + to_string(opts_.strategy) + "' (expected auto, replicate or split_rows)");
  }
  if (split_rows_) threads_ = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads_), target_.rows()));
  thread_busy_.assign(static_cast<std::size_t>(threads_), 0.0);
  if (!split_rows_ && threads_ > 1) {
    const double t0 = now_seconds();
    check_sketch_fits(target_.rows(), target_.width(), static_cast<std::size_t>(threads_) + 1);
    partials_.resize(static_cast<std::size_t>(threads_));
    // Thread 0 writes straight into the target; the others get zeroed copies.
    if (opts_.prefault_partials) {
      // Each thread allocates the sketch it will fill and writes one zero a page, so the page
      // faults happen here, all threads at once, each on its own memory (and on a NUMA machine
      // on its own node), instead of inside the fill's hot loop. A page that is already
      // resident (the allocator populates sketches over 64 MiB) costs one store.
#pragma omp parallel num_threads(threads_)
      {
        const auto t = static_cast<std::size_t>(omp_get_thread_num());
        if (t > 0) partials_[t] = std::make_unique<RaceSketch>(target_.family_ptr(), target_.width());
        auto counts = t == 0 ? target_.mutable_counts() : partials_[t]->mutable_counts();
        constexpr std::size_t kPageCounts = 4096 / sizeof(std::int64_t);
        // A read-modify-write that changes nothing: one write fault a page, the target's
        // counts kept (it may already hold some).
        for (std::size_t i = 0; i < counts.size(); i += kPageCounts)
          std::atomic_ref<std::int64_t>(counts[i]).fetch_or(0, std::memory_order_relaxed);
      }
    } else {
      for (int t = 1; t < threads_; ++t)
        partials_[static_cast<std::size_t>(t)] = std::make_unique<RaceSketch>(target_.family_ptr(), target_.width());
    }
    {  // one clock read: the total is exactly the sum of its stages
      const double dt = now_seconds() - t0;
      stages_.allocate += dt;
      seconds_ += dt;
    }
  }
}

SketchBuilder::~SketchBuilder() = default;

void SketchBuilder::add_dense(const DenseRef& chunk) {
  if (finished_) throw Error("SketchBuilder: add after finish");
  if (static_cast<std::size_t>(chunk.cols()) != target_.family().dim())
    throw InputError("data has " + std::to_string(chunk.cols()) + " columns, the sketch expects " +
                     std::to_string(target_.family().dim()));
  // Serially, before the parallel region: a refused record throws here, naming it.
  const double tv = now_seconds();
  target_.family().validate_dense(chunk, points_);
  const double t0 = now_seconds();
  stages_.validate += t0 - tv;
  seconds_ += t0 - tv;
  const std::size_t n = static_cast<std::size_t>(chunk.rows());
  const auto B = static_cast<Eigen::Index>(opts_.batch);
  // Batches are [b B, (b + 1) B) of the chunk whatever the thread count; threads take whole
  // batches. A point's hash (or feature values) then comes from the same GEMM position on any
  // number of threads, so even float rounding cannot make the counts depend on it.
  const std::size_t batches = (n + opts_.batch - 1) / opts_.batch;
#pragma omp parallel num_threads(threads_)
  {
    const int t = omp_get_thread_num();
    const double busy0 = now_seconds();
    CodeMatrix codes;
    // Blocked loops: a batch of points meets a block of rows at a time, so the block's counts
    // (row_block x W int64) stay in cache while thousands of points land in them.
    auto fill = [&](RaceSketch& dst, std::size_t batch, std::size_t r0, std::size_t r1) {
      const auto first = static_cast<Eigen::Index>(batch) * B;
      const auto points = chunk.middleRows(first, std::min<Eigen::Index>(B, static_cast<Eigen::Index>(n) - first));
      for (std::size_t rb = r0; rb < r1; rb += opts_.row_block)
        dst.add_dense_rows(points, rb, std::min(r1, rb + opts_.row_block), codes);
    };
    if (split_rows_) {
      const auto [r0, r1] = slice(target_.rows(), t, threads_);
      for (std::size_t b = 0; b < batches; ++b) fill(target_, b, r0, r1);
    } else {
      RaceSketch& mine = (t == 0) ? target_ : *partials_[static_cast<std::size_t>(t)];
      const auto [b0, b1] = slice(batches, t, threads_);
      for (std::size_t b = b0; b < b1; ++b) fill(mine, b, 0, mine.rows());
    }
    thread_busy_[static_cast<std::size_t>(t)] += now_seconds() - busy0;
  }
  points_ += n;
  {  // one clock read: the total is exactly the sum of its stages
    const double dt = now_seconds() - t0;
    stages_.fill += dt;
    seconds_ += dt;
  }
}

void SketchBuilder::add_sets(const SetCollection& sets, std::size_t begin, std::size_t end) {
  if (finished_) throw Error("SketchBuilder: add after finish");
  const double t0 = now_seconds();
  const std::size_t n = end - begin, B = opts_.batch;
#pragma omp parallel num_threads(threads_)
  {
    const int t = omp_get_thread_num();
    const double busy0 = now_seconds();
    CodeMatrix codes;
    if (split_rows_) {
      const auto [r0, r1] = slice(target_.rows(), t, threads_);
      for (std::size_t b = begin; b < end; b += B) {
        target_.family().hash_sets(SetBatch{&sets, b, std::min(end, b + B)}, codes, r0, r1);
        target_.add_codes(codes, r0, r1);
      }
    } else {
      RaceSketch& mine = (t == 0) ? target_ : *partials_[static_cast<std::size_t>(t)];
      const auto [i0, i1] = slice(n, t, threads_);
      for (std::size_t b = begin + i0; b < begin + i1; b += B) {
        target_.family().hash_sets(SetBatch{&sets, b, std::min(begin + i1, b + B)}, codes);
        mine.add_codes(codes, 0, mine.rows());
      }
    }
    thread_busy_[static_cast<std::size_t>(t)] += now_seconds() - busy0;
  }
  points_ += n;
  {  // one clock read: the total is exactly the sum of its stages
    const double dt = now_seconds() - t0;
    stages_.fill += dt;
    seconds_ += dt;
  }
}

BuildReport SketchBuilder::finish() {
  if (!finished_) {
    const double t0 = now_seconds();
    // Merge by addition in column blocks: each thread owns a contiguous range of counters and
    // adds the sub-sketches into it one after another, a cache-sized block at a time, so every
    // inner loop is a unit-stride vector add. Integer sums: the order is irrelevant.
    if (partials_.size() > 1) {
      auto dst = target_.mutable_counts();
      const std::size_t cells = dst.size();
      constexpr std::size_t kBlock = 4096;  // 32 KiB of the target: stays in L1 across the sources
      const std::size_t blocks = (cells + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads_) schedule(static)
      for (std::size_t b = 0; b < blocks; ++b) {
        std::int64_t* out = dst.data() + b * kBlock;
        const std::size_t len = std::min(kBlock, cells - b * kBlock);
        for (std::size_t t = 1; t < partials_.size(); ++t) {
          const std::int64_t* in = partials_[t]->counts().data() + b * kBlock;
          for (std::size_t i = 0; i < len; ++i) out[i] += in[i];
        }
      }
    }
    partials_.clear();
    target_.add_records(static_cast<std::int64_t>(points_));
    {  // one clock read: the total is exactly the sum of its stages
      const double dt = now_seconds() - t0;
      stages_.merge += dt;
      seconds_ += dt;
    }
    double sum = 0.0, top = 0.0;
    for (const double b : thread_busy_) {
      sum += b;
      top = std::max(top, b);
    }
    stages_.fill_thread_max = top;
    stages_.fill_thread_mean = thread_busy_.empty() ? 0.0 : sum / static_cast<double>(thread_busy_.size());
    finished_ = true;
  }
  return {points_, threads_, split_rows_ ? BuildStrategy::SplitRows : BuildStrategy::Replicate, seconds_, stages_};
}

BuildReport build_dense(RaceSketch& target, const DenseRef& data, const BuildOptions& opts) {
  SketchBuilder builder(target, opts);
  builder.add_dense(data);
  return builder.finish();
}

BuildReport build_dense_stream(RaceSketch& target, const DenseChunkReader& next, const BuildOptions& opts) {
  SketchBuilder builder(target, opts);
  DenseMatrix chunk;
  for (;;) {
    const double t0 = now_seconds();
    const std::size_t n = next(chunk);
    builder.add_read_seconds(now_seconds() - t0);
    if (n == 0) break;
    builder.add_dense(chunk.topRows(static_cast<Eigen::Index>(n)));
  }
  return builder.finish();
}

BuildReport build_sets(RaceSketch& target, const SetCollection& sets, const BuildOptions& opts) {
  SketchBuilder builder(target, opts);
  builder.add_sets(sets, 0, sets.size());
  return builder.finish();
}

}  // namespace privrace
