// The one list of built-in tasks and methods. Every file that defines tasks or methods exposes
// one `void register_<file>(Registry&)` that adds them (a method is a TypedMethod<Ctx, Params> subclass, params.hpp);
// a new file adds one line here. See README.md, "Adding a method".
#include "classify_task.hpp"
#include "experiment.hpp"
#include "graph_task.hpp"
#include "kde_baselines.hpp"
#include "kde_task.hpp"
#include "ldp_task.hpp"
#include "m2m_synthetic.hpp"
#include "m2m_task.hpp"
#include "race_apps_task.hpp"
#include "regress_task.hpp"

namespace privrace::experiments {

void register_builtin(Registry& registry) {
  register_kde_task(registry);         // kde: race, race_corollary1
  register_kde_baselines(registry);    // kde: bernstein, kme, spectral, pfda, histogram, privbayes
  register_classify_task(registry);    // classification: race_classifier, objective_perturbation, majority
  register_classify_ovr(registry);     // classification: objpert_ovr
  register_regress_task(registry);     // regression: race_regression, Wang's baselines, references
  register_regress_privbayes(registry);  // regression: privbayes_regression
  register_graph_task(registry);       // graph: race_graph, race_graph_scaling
  register_m2m_task(registry);         // m2m: sketches, dp_erm, non-private references
  register_m2m_synthetic(registry);    // m2m: dp_copula, privbayes_m2m, dp_wgan
  register_race_apps_task(registry);   // modes, anomaly, diversity, neighbors
  register_ldp_task(registry);         // ldp_erm, ldp_marginals, ldp_highdim
  register_ldp_smooth(registry);       // ldp_smooth
}

}  // namespace privrace::experiments
