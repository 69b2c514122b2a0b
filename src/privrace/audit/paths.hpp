#pragma once
// The release paths the auditor checks, built from the library's own code: the sketch
// builder, privatize, merge and the noise samplers, exactly as `privrace sketch` and
// `privrace merge` call them. Small sketches (R = 4, W = 8 by default) keep a release at a
// few microseconds, so a verdict can rest on 10^5 - 10^6 releases.
#include <memory>
#include <string>
#include <vector>

#include "privrace/audit/auditor.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/sketch/race_sketch.hpp"

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
std::shared_ptr<const LshFamily> audit_family(const std::string& kernel, const PathOptions& options,
                                              const std::string& pair_mode = "query");
// The exact sketch of D through the parallel builder (one thread: the runs are the parallel axis).
RaceSketch exact_sketch(std::shared_ptr<const LshFamily> family, std::size_t width, const DenseMatrix& data);
RaceSketch exact_sketch(std::shared_ptr<const LshFamily> family, std::size_t width, const SetCollection& data);
// The candidate whose insertion changes the exact counts most (L1, then L2): D' = D + it.
Eigen::Index most_sensitive_row(const std::shared_ptr<const LshFamily>& family, std::size_t width,
                                const DenseMatrix& d, const DenseMatrix& candidates);
// Observation of a released sketch: its counts, and the per-count noise variance it records.
void observe(const RaceSketch& sketch, Observation& out);
std::vector<double> exact_values(const RaceSketch& sketch);

}  // namespace privrace::audit
