#pragma once
// The synthetic-data methods of the m2m task: dp_copula, privbayes_m2m, dp_wgan
// (m2m_synthetic.cpp).
#include "experiment.hpp"

namespace privrace::experiments {

void register_m2m_synthetic(Registry& registry);

}  // namespace privrace::experiments
