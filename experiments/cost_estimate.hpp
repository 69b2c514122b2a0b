#pragma once
// How long a run will take, from measured wall time per cell. Two sources, best first:
// records of earlier runs of the same config (their "wall_seconds"), and the calibration
// table configs/calibration/cell_costs.json written by scripts/measure_cell_costs.sh.
// Costs are kept in thread-seconds and divided by the threads of the coming run: that
// assumes linear scaling in threads, so an estimate for more threads than were measured is
// a lower bound, and the printed basis says which threads the measurement had.
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace privrace::experiments {

class CellCostModel {
 public:
  // One measured cell: its method label, grid parameters, wall seconds and OpenMP threads.
  // A group's first cell also carries the work its cells share (the build a method reuses
  // for every epsilon), so first and later cells are priced apart: a group of n cells costs
  // first + (n - 1) * later. A cell of unknown position counts as both.
  // `shared` of the seconds (part of a first cell's) made work that every repetition of the
  // same parameters reuses (experiments/shared_work.hpp): it is priced once per parameter
  // point (shared_seconds), not once per group.
  enum class Position { first, later, unknown };
  // The shared part ran on `shared_threads` (0: the cell's threads), under --jobs all of the
  // run's (SharedWorkThreads), and is priced at those.
  void add(const std::string& label, const nlohmann::json& params, double seconds, int threads,
           Position position = Position::unknown, double shared = 0.0, int shared_threads = 0);
  // Every record with "wall_seconds" ("first_of_group" gives its position, "shared_work_seconds"
  // its shared part; the caller passes only records of the right config). Returns how many
  // were used.
  std::size_t add_records(const std::vector<nlohmann::json>& records);
  // One config's entry of the calibration table:
  //   {"threads": T, "prepare_seconds": P, "reference_seconds": R (optional),
  //    "cells": [{"label", "params", "first_seconds" (optional), "seconds",
  //               "shared_seconds" (optional), "reference_seconds" (optional)}, ...]}
  // where "seconds" is a later cell's (or, without "first_seconds", any cell's) mean and
  // "shared_seconds" the work reused across repetitions, not included in "first_seconds".
  // The machine's speed: a cell's times are scaled by nominal_reference / its reference_seconds
  // (the cell's, else the entry's; speed_reference_seconds measured when it was timed), so that
  // cells timed while the machine ran slower or faster are priced at one speed, the table's
  // nominal one. A cell without a reference, or a nominal_reference of 0, is taken as measured.
  // Throws privrace::InputError naming `where` and the field when one is missing or mistyped.
  void add_table_entry(const nlohmann::json& entry, const std::string& where, double nominal_reference = 0.0);
  // Seconds a group of n cells of label/params is expected to take at `threads`: from its
  // exact parameters if measured, else from the mean over the label's measured parameters;
  // NaN when nothing of the label was measured.
  double group_seconds(const std::string& label, const nlohmann::json& params, std::size_t n, int threads) const;
  // Seconds of the work the repetitions of label/params share, paid once by a run that has
  // any of their cells pending (exact parameters, else the label's mean); 0 when none.
  double shared_seconds(const std::string& label, const nlohmann::json& params, int threads) const;
  // The same from the mean over every measured point of the config (prices methods never
  // measured); NaN if none.
  double any_group_seconds(std::size_t n, int threads) const;
  // The run's set-up (data, exact answers) before its first cell; 0 when unknown.
  double prepare_seconds(int threads) const;
  bool empty() const { return by_label_.empty(); }

 private:
  struct Mean {
    double thread_seconds = 0;
    std::size_t n = 0;
    void add(double v) { thread_seconds += v, ++n; }
    double value() const { return thread_seconds / static_cast<double>(n); }
  };
  struct Point {
    Mean first, later, shared;
    // Thread-seconds of a group of n cells; a position never measured takes the other's.
    double group(std::size_t n) const;
  };
  std::map<std::string, std::map<std::string, Point>> by_label_;  // label -> params dump -> point
  double prepare_thread_seconds_ = 0;
};

// Seconds until the last group ends when `jobs` workers take the groups in order, as the runner
// does under --jobs: `group_seconds[i]` is a group's thread-seconds over the run's threads (what
// CellCostModel returns), so on its threads / jobs threads it takes jobs times that. Groups that
// pack evenly give the sum; a dear group late in the order leaves the other workers idle, and the
// estimate waits for it (a quick profile's one slow baseline). One job: the sum.
double makespan_seconds(const std::vector<double>& group_seconds, int jobs);

// Seconds this machine takes, now, for a fixed single-thread workload: chains of fused
// multiply-adds (the arithmetic of the kernels) and dependent reads scattered over a 256 KB table
// (the latency of the exact kernel sums' and samplers' table reads), the median of nine tries.
// Calibration cells record it (scripts/measure_cell_costs.sh), so that the machine's drift in
// speed (a shared VM's varies by a factor of two within days) is not read as a change in cost.
double speed_reference_seconds();

// The calibration table's path under a checkout or an install's share/privrace.
std::string cell_cost_table_path(const std::string& repo_root);

// "3h05m", "12m30s", "45s"; "?" for NaN.
std::string format_duration(double seconds);

}  // namespace privrace::experiments
