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
  void add(const std::string& label, const nlohmann::json& params, double seconds, int threads);
  // Every record with "wall_seconds" (the caller passes only records of the right config).
  // Returns how many were used.
  std::size_t add_records(const std::vector<nlohmann::json>& records);
  // One config's entry of the calibration table:
  //   {"threads": T, "prepare_seconds": P, "cells": [{"label", "params", "seconds"}, ...]}
  // Throws privrace::Error naming `where` when a field is missing or of the wrong type.
  void add_table_entry(const nlohmann::json& entry, const std::string& where);
  // Seconds one cell of label/params is expected to take at `threads`: the mean of its exact
  // parameters if measured, else the mean over the label's measured parameters; NaN when
  // nothing of the label was measured.
  double cell_seconds(const std::string& label, const nlohmann::json& params, int threads) const;
  // Mean over every measured cell of the config (prices methods never measured); NaN if none.
  double any_cell_seconds(int threads) const;
  // The run's set-up (data, exact answers) before its first cell; 0 when unknown.
  double prepare_seconds(int threads) const;
  bool empty() const { return by_label_.empty(); }

 private:
  struct Mean {
    double thread_seconds = 0;
    std::size_t n = 0;
    double value() const { return thread_seconds / static_cast<double>(n); }
  };
  std::map<std::string, std::map<std::string, Mean>> by_label_;  // label -> params dump -> mean
  double prepare_thread_seconds_ = 0;
};

// The calibration table's path under a checkout or an install's share/privrace.
std::string cell_cost_table_path(const std::string& repo_root);

// "3h05m", "12m30s", "45s"; "?" for NaN.
std::string format_duration(double seconds);

}  // namespace privrace::experiments
