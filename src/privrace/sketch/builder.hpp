#pragma once
// Parallel one-pass construction. Each OpenMP thread fills its own sub-sketch over a static
// slice of every chunk; sub-sketches are merged by integer addition at the end, so the counts
// are bit-identical for any thread count. When R x W x threads would not fit in memory, the
// threads split the sketch's rows instead (each hashes every point for its own rows; no merge).
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "privrace/core/types.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace {

// How a build shares its work among threads. Auto picks one (dense: replicate while the copies
// fit, else split_rows; sets: two_phase); a report names the one used (never Auto, but for the
// empty report of a part without records).
enum class BuildStrategy {
  Auto,
  Replicate,  // per-thread sub-sketches merged by addition
  SplitRows,  // threads split the sketch's rows
  TwoPhase,   // sets: hash disjoint points, then fill disjoint rows of the one sketch (set_builder.hpp)
};
// "auto" | "replicate" | "split_rows" | "two_phase" (the one parse of a strategy's name, at the
// front ends). UsageError otherwise, naming the option (`option_prefix` + "strategy") and the
// values `kernel` accepts: "--strategy must be one of auto, replicate, split_rows for the l2
// kernel, got 'NAME'" (set kernels add two_phase). Whether `kernel` takes the strategy named is
// ReleaseParams::validate's check (check_build_strategy), made once the kernel is final.
BuildStrategy parse_build_strategy(const std::string& name, Kernel kernel, std::string_view option_prefix = "--");
// UsageError (the message above) when `kernel` cannot be built with `strategy` (two_phase is for sets).
void check_build_strategy(BuildStrategy strategy, Kernel kernel, std::string_view option_prefix = "--");
std::string to_string(BuildStrategy strategy);
// Headers and records write a strategy by its name.
NLOHMANN_JSON_SERIALIZE_ENUM(BuildStrategy, {{BuildStrategy::Auto, "auto"},
                                             {BuildStrategy::Replicate, "replicate"},
                                             {BuildStrategy::SplitRows, "split_rows"},
                                             {BuildStrategy::TwoPhase, "two_phase"}})

struct BuildOptions {
  int threads = 0;             // 0 = OpenMP default (OMP_NUM_THREADS or all cores)
  std::size_t batch = 4096;    // points per batch (one GEMM per row block)
  std::size_t row_block = 16;  // sketch rows hashed and filled together: their counts stay in L2
  double memory_fraction = 0.5;  // replicate sub-sketches only while they fit in this share of RAM
  BuildStrategy strategy = BuildStrategy::Auto;  // Auto | Replicate | SplitRows (TwoPhase: set_builder.hpp)
  // Replicate strategy: each thread allocates its own sub-sketch and faults its pages in, in
  // parallel, before the fill (first touch by the thread that fills it; the page faults are
  // then a stage of their own instead of stalls inside the hashing loop). false = allocate the
  // sub-sketches one after another on the calling thread (the former path, kept for the benchmark).
  bool prefault_partials = true;
};

// Wall-clock seconds per stage, summed over the add calls: what a scaling study needs to see
// which stage stops gaining threads (privrace sketch --timings prints them).
struct BuildStages {
  double allocate = 0.0;  // per-thread sub-sketches allocated and their pages faulted in (first touch)
  double read = 0.0;      // build_dense_stream: waiting for the (serial) chunk reader
  double validate = 0.0;  // serial record validation before each parallel region
  double fill = 0.0;      // hashing + counting, the parallel region
  double fill_thread_max = 0.0, fill_thread_mean = 0.0;  // busy time per thread inside fill: imbalance
  double merge = 0.0;     // sub-sketches added into the target
};

struct BuildReport {
  std::size_t points = 0;
  int threads = 1;
  BuildStrategy strategy = BuildStrategy::Auto;  // the one used: Replicate, SplitRows or (sets) TwoPhase
  double seconds = 0.0;  // allocate + validate + fill + merge (not read)
  BuildStages stages;
};

// Streams chunks: `next(chunk)` fills up to a bounded number of rows and returns how many (0 = end).
using DenseChunkReader = std::function<std::size_t(DenseMatrix& chunk)>;

class SketchBuilder {
 public:
  SketchBuilder(RaceSketch& target, BuildOptions opts = {});
  ~SketchBuilder();
  SketchBuilder(const SketchBuilder&) = delete;
  SketchBuilder& operator=(const SketchBuilder&) = delete;

  void add_dense(const DenseRef& chunk);  // any number of rows; parallel inside
  void add_sets(const SetCollection& sets, std::size_t begin, std::size_t end);
  BuildReport finish();  // merges the sub-sketches into the target
  // Time a streaming caller spent reading its input, reported as stages.read.
  void add_read_seconds(double s) { stages_.read += s; }

 private:
  RaceSketch& target_;
  BuildOptions opts_;
  int threads_;
  bool split_rows_;
  std::vector<std::unique_ptr<RaceSketch>> partials_;  // one per thread (replicate strategy)
  std::size_t points_ = 0;
  double seconds_ = 0.0;
  BuildStages stages_;
  std::vector<double> thread_busy_;  // per thread, summed over fills
  bool finished_ = false;
};

BuildReport build_dense(RaceSketch& target, const DenseRef& data, const BuildOptions& opts = {});
BuildReport build_dense_stream(RaceSketch& target, const DenseChunkReader& next, const BuildOptions& opts = {});
BuildReport build_sets(RaceSketch& target, const SetCollection& sets, const BuildOptions& opts = {});

}  // namespace privrace
