#pragma once
// The synthetic-data generators' hyperparameters as the M2M and KDE methods declare them
// (m2m_synthetic.cpp, kde_baselines.cpp): each ParamSpec a method registers for its generator
// names an option of that generator and is bound to the typed field of that name in
// baselines::SyntheticOptions (the one list of names and fields is in synthetic_params.cpp).
// The table is part of the method's parameter table (params.hpp), so the framework decodes
// the cell's values into the options and the generator never sees the JSON.
#include <string>
#include <vector>

#include "params.hpp"
#include "privrace/baselines/synthetic_generators.hpp"

namespace privrace::experiments {

// `hyperparameters` bound to the options of `generator`; the other fields keep their defaults.
// Error for a name that is no option of the generator (a parameter it would otherwise silently
// ignore) or an unknown generator.
ParamTable<baselines::SyntheticOptions> synthetic_table(const std::string& generator,
                                                        const std::vector<ParamSpec>& hyperparameters);

// synthetic_table(generator, hyperparameters).decode(params).
baselines::SyntheticOptions synthetic_options(const std::string& generator, const std::vector<ParamSpec>& hyperparameters,
                                              const json& params);

}  // namespace privrace::experiments
