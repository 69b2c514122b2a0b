// The one list of built-in tasks and methods. A new method (KME, Bernstein, PrivBayes, a
// classifier, ...) is a class deriving from Method plus one line here; see README.md.
#include "experiment.hpp"
#include "kde_task.hpp"
#include "classify_task.hpp"
#include "regress_task.hpp"
#include "kde_baselines.hpp"
#include "graph_task.hpp"
#include "m2m_task.hpp"
#include "m2m_synthetic.hpp"
#include "ldp_task.hpp"
#include "race_apps_task.hpp"

namespace privrace::experiments {

void register_builtin(Registry& registry) {
  // Tasks (one driver per task family).
  registry.add_task(make_kde_task());
  registry.add_task(make_classification_task());
  registry.add_task(make_regression_task());
  registry.add_task(make_graph_task());
  registry.add_task(make_m2m_task());
  registry.add_task(make_ldp_erm_task());
  registry.add_task(make_ldp_marginals_task());
  registry.add_task(make_ldp_highdim_task());
  registry.add_task(make_ldp_smooth_task());
  for (auto& t : make_race_app_tasks()) registry.add_task(std::move(t));  // modes, anomaly, diversity, neighbors
  // Methods, grouped by task.
  registry.add_method(make_race_kde_method());
  registry.add_method(make_race_corollary1_kde_method());  // kde: R by Corollary 1
  registry.add_method(make_race_classifier_method());  // classification
  registry.add_method(make_objective_perturbation_method());
  registry.add_method(make_majority_method());
  registry.add_method(make_objective_perturbation_ovr_method());  // classification, K classes
  for (auto& m : make_regression_methods()) registry.add_method(std::move(m));  // regression
  registry.add_method(make_privbayes_regression_method());
  register_kde_baselines(registry);  // bernstein, kme, spectral, pfda, histogram, privbayes
  registry.add_method(make_race_graph_method());          // graph
  registry.add_method(make_race_graph_scaling_method());
  register_m2m_methods(registry);  // m2m: sketches, dp_erm, non-private references
  register_m2m_synthetic_methods(registry);  // m2m: dp_copula, privbayes_m2m, dp_wgan
  for (auto& m : make_race_app_methods()) registry.add_method(std::move(m));  // modes, anomaly, diversity, neighbors
  for (auto& m : make_ldp_erm_methods()) registry.add_method(std::move(m));  // ldp_erm
  for (auto& m : make_ldp_marginals_methods()) registry.add_method(std::move(m));  // ldp_marginals
  for (auto& m : make_ldp_highdim_methods()) registry.add_method(std::move(m));  // ldp_highdim
  for (auto& m : make_ldp_smooth_methods()) registry.add_method(std::move(m));  // ldp_smooth
}

}  // namespace privrace::experiments
