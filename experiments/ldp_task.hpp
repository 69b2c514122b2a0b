#pragma once
// The local-DP ERM task family (Wang, Gaboardi & Xu 2018, "Empirical Risk Minimization in
// Non-interactive Local Differential Privacy"): excess empirical risk against the number of
// simulated players n, for Algorithm 2 (ldp_bernstein), Algorithm 3 (ldp_bernstein_1bit),
// input perturbation, the interactive LDP-SGD of Duchi, Jordan & Wainwright, and the
// non-private optimum. See experiments/README.md and configs/README.md.
#include "experiment.hpp"

namespace privrace::experiments {

std::unique_ptr<Task> make_ldp_erm_task();
std::vector<std::unique_ptr<Method>> make_ldp_erm_methods();
// Section 6: k-way marginals (Chebyshev Algorithm 4, per-query randomised response, central histogram).
std::unique_ptr<Task> make_ldp_marginals_task();
std::vector<std::unique_ptr<Method>> make_ldp_marginals_methods();
// Section 7: sparse linear regression by projection + compressed sensing, against full-dimension LDP-SGD.
std::unique_ptr<Task> make_ldp_highdim_task();
std::vector<std::unique_ptr<Method>> make_ldp_highdim_methods();
// Section 6.2: Gaussian-kernel smooth queries (trigonometric Algorithm 5, per-query LDP averaging).
std::unique_ptr<Task> make_ldp_smooth_task();
std::vector<std::unique_ptr<Method>> make_ldp_smooth_methods();

}  // namespace privrace::experiments
