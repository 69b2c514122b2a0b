#pragma once
// Every synthetic-data generator by name, with its typed options: DP-Copula, PrivBayes,
// DP-WGAN, MST and AIM (synthetic.hpp is their common interface).
#include <memory>
#include <string>

#include "privrace/baselines/aim.hpp"
#include "privrace/baselines/dp_copula.hpp"
#include "privrace/baselines/dp_wgan.hpp"
#include "privrace/baselines/mst.hpp"
#include "privrace/baselines/privbayes.hpp"
#include "privrace/baselines/synthetic.hpp"

namespace privrace::baselines {

// Each generator's options; make_synthetic_generator reads those of the generator it makes.
struct SyntheticOptions {
  DpCopulaOptions dp_copula;
  PrivBayesOptions privbayes;
  DpWganOptions dp_wgan;
  MstOptions mst;
  AimOptions aim;
};

// "dp_copula" | "privbayes" | "dp_wgan" | "mst" | "aim", made with options.<name>.
// UsageError for an unknown name.
std::unique_ptr<SyntheticGenerator> make_synthetic_generator(const std::string& name, const SyntheticOptions& options = {});

}  // namespace privrace::baselines
