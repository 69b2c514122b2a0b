#pragma once
// The synthetic-data generators' hyperparameters as the M2M and KDE methods read them from a
// cell (m2m_synthetic.cpp, kde_baselines.cpp): each name of the method's ParamSpec list that
// belongs to the generator, validated by the config, lands in its typed field of
// baselines::SyntheticOptions; the generator never sees the JSON.
#include <string>
#include <vector>

#include "experiment.hpp"
#include "privrace/baselines/synthetic_generators.hpp"

namespace privrace::experiments {

// options.<generator> filled from params[spec.name] for every spec in `hyperparameters`; the
// other fields keep their defaults. Error for a name that is no option of the generator (a
// parameter it would otherwise silently ignore) or an unknown generator.
baselines::SyntheticOptions synthetic_options(const std::string& generator, const std::vector<ParamSpec>& hyperparameters,
                                              const json& params);

}  // namespace privrace::experiments
