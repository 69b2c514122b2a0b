#pragma once
// What privrace-experiment does with a run's report (runner.cpp): the exit status and the
// stderr summary of the methods that could not run.
#include <string>

#include "experiment.hpp"

namespace privrace::experiments {

// Exit status of a run that finished but left cells of some methods unrun because an optional
// module is missing (report.unavailable non-empty); 0 done, 1 error, 2 bad flags.
inline constexpr int kExitMethodsUnavailable = 3;

// 0, or kExitMethodsUnavailable when some cells could not run.
int exit_status(const RunReport& report);

// The methods that could not run, their cell counts and why, for stderr; "" when none.
std::string unavailable_summary(const RunReport& report);

}  // namespace privrace::experiments
