#pragma once
// Parallel one-pass construction. Each OpenMP thread fills its own sub-sketch over a static
// slice of every chunk; sub-sketches are merged by integer addition at the end, so the counts
// are bit-identical for any thread count. When R x W x threads would not fit in memory, the
// threads split the sketch's rows instead (each hashes every point for its own rows; no merge).
#include <cstddef>
#include <functional>
#include <string>

#include "privrace/core/types.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace {

struct BuildOptions {
  int threads = 0;             // 0 = OpenMP default (OMP_NUM_THREADS or all cores)
  std::size_t batch = 4096;    // points per batch (one GEMM per row block)
  std::size_t row_block = 16;  // sketch rows hashed and filled together: their counts stay in L2
  double memory_fraction = 0.5;  // replicate sub-sketches only while they fit in this share of RAM
  std::string strategy = "auto";  // auto | replicate | split_rows
};

struct BuildReport {
  std::size_t points = 0;
  int threads = 1;
  std::string strategy;  // "replicate" or "split_rows"
  double seconds = 0.0;
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

 private:
  RaceSketch& target_;
  BuildOptions opts_;
  int threads_;
  bool split_rows_;
  std::vector<std::unique_ptr<RaceSketch>> partials_;  // one per thread (replicate strategy)
  std::size_t points_ = 0;
  double seconds_ = 0.0;
  bool finished_ = false;
};

BuildReport build_dense(RaceSketch& target, const DenseRef& data, const BuildOptions& opts = {});
BuildReport build_dense_stream(RaceSketch& target, const DenseChunkReader& next, const BuildOptions& opts = {});
BuildReport build_sets(RaceSketch& target, const SetCollection& sets, const BuildOptions& opts = {});

}  // namespace privrace
