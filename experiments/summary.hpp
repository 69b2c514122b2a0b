#pragma once
// A run's summary (summary.cpp): from every record of the results file, the CSV, the timing
// table (NAME.timing.csv), NAME.summary.json and the printed summary tables.
#include <string>
#include <vector>

#include "experiment.hpp"

namespace privrace::experiments {

// Unavailable-cell records by method label, in config order: cells and the first reason.
std::vector<UnavailableMethod> unavailable_by_label(const ExperimentConfig& cfg, const std::vector<json>& records);

// Regenerates the CSV, the timing table and the summary from everything in the jsonl (this
// run and earlier) and the still unavailable cells, and prints the summary when `print`.
// data_note: this run's data summary (null: the last record's). Fills report.summary_table and
// sets report.stand_in when the records are a stand-in's.
void summarise(const ExperimentConfig& cfg, const Task& task, const std::vector<json>& records, json data_note,
               bool print, RunReport& report, const std::vector<json>& unavailable);

}  // namespace privrace::experiments
