#pragma once
// The release paths the auditor checks, built from the library's own code: the release API
// (ExactBuilder, ExactSketch::release, save_release, ReleaseMerge) and the noise samplers,
// exactly as `privrace sketch` and `privrace merge` call them. Small sketches (R = 4, W = 8 by
// default) keep a release at a few microseconds, so a verdict can rest on 10^5 - 10^6 releases.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "privrace/audit/auditor.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace::audit {

struct PathOptions {
  double epsilon = 1.0;
  double delta = 1e-5;      // Gaussian paths only
  std::size_t rows = 4;     // R
  std::size_t width = 8;    // W
  std::size_t records = 16; // |D|
  std::uint64_t seed = 7;   // data and LSH seed (not the noise)
};

// Every built-in path, in a fixed order.
std::vector<std::string> path_names();
// Throws UsageError naming the known paths for an unknown name.
AuditPath make_path(const std::string& name, const PathOptions& options = {});

// Building blocks, shared with the tests' deliberately broken variants.
DenseMatrix audit_points(std::size_t n, std::size_t dim, std::uint64_t seed);
SetCollection audit_sets(std::size_t n, std::uint64_t seed);
DenseMatrix with_row(const DenseMatrix& d, const DenseMatrix& candidates, Eigen::Index row);
SetCollection with_set(const SetCollection& d, const SetCollection& candidates, std::size_t index);
// The release API's builder of an audit sketch on `kernel`: R x W of the options, one thread (the
// runs are the parallel axis), the public hash seed derive_seed(seed, 2). builder.build(D) is the
// exact sketch of D as `privrace sketch` builds it.
ExactBuilder audit_builder(const std::string& kernel, const PathOptions& options, PairMode pair_mode = PairMode::Query);

// The whole-file check's files: a private folder (memory-backed /dev/shm where writable, else
// the temporary directory), removed with everything in it when the last path using it goes.
class ScratchFolder {
 public:
  ScratchFolder();
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  std::string next_path();  // a new file name in the folder (thread-safe)
 private:
  std::string dir_;
  std::atomic<std::uint64_t> next_{0};
};
// The file's bytes; the file is removed.
std::string take_file(const std::string& path);
// One release as `privrace sketch` writes it: a release of the release API (ExactSketch::release,
// noise once) written by save_release with the "build" record the command writes (input
// "audit"); returns the file's bytes.
std::string write_released_file(ScratchFolder& folder, const Release& release);
// The candidate whose insertion changes the exact counts most (L1, then L2): D' = D + it.
Eigen::Index most_sensitive_row(const ExactBuilder& builder, const DenseMatrix& d, const DenseMatrix& candidates);
// Observation of a released sketch: its counts, and the per-count noise variance it records.
void observe(const RaceSketch& sketch, Observation& out);
std::vector<double> exact_values(const RaceSketch& sketch);
std::vector<double> exact_values(const ExactSketch& exact);

}  // namespace privrace::audit
