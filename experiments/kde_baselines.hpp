#pragma once
// The function-release baselines for the KDE task: bernstein, kme, spectral, pfda,
// histogram, privbayes. Each is a Method over KdeContext; the work that does not depend on
// epsilon (lattice / Gram / grid kernel sums, discretisation) runs once per cell group and
// every epsilon adds its own fresh noise.
#include "experiment.hpp"

namespace privrace::experiments {

void register_kde_baselines(Registry& registry);

}  // namespace privrace::experiments
