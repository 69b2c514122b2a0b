#pragma once
// Task families for the private RACE paper's section-4 applications (tasks/race_apps.hpp):
// "modes" (mode finding), "anomaly" (anomaly detection by low density), "diversity"
// (inverse-density sampling) and "neighbors" (near-neighbour search). Each task prepares its
// data and ground truth once; each method supplies a density (private RACE, RACE on exact
// counts, the exact KDE, a private histogram, or a constant) that the task scores.
#include <memory>
#include <vector>

#include "experiment.hpp"

namespace privrace::experiments {

// Tasks modes, anomaly, diversity, neighbors and their methods.
void register_race_apps_task(Registry& registry);

}  // namespace privrace::experiments
