"""The catalogue of figures the plot scripts draw: which PNG is which paper figure.

scripts/publish_figures.sh reads it for the "paper figure" column of docs/figures/README.md;
`python3 plots/figures.py` prints it as a Markdown table. A pattern is an fnmatch pattern over
PNG names (no directory). Papers: private RACE = Coleman & Shrivastava (arXiv figure numbers,
CCS'21 in brackets); M2M = Houssiau et al.; LDP ERM = Wang, Gaboardi & Xu (a theory paper with
no experiments: its figures here are the project's own checks of the stated rates).
Needs no matplotlib.
"""
import fnmatch
import sys

# (pattern, script, paper figure, what the figure shows)
FIGURES = [
    ("kde_sf.png", "plot_kde.py", "private RACE Fig. 2 [CCS'21 Fig. 3], SF panel",
     "L2 function error against ε, every method at its best setting per ε"),
    ("kde_nyc.png", "plot_kde.py", "private RACE Fig. 2 [CCS'21 Fig. 3], NYC panel",
     "L2 function error against ε"),
    ("kde_codrna.png", "plot_kde.py", "private RACE Fig. 2 [CCS'21 Fig. 3], codrna panel",
     "mean relative error against ε"),
    ("kde_skin.png", "plot_kde.py", "private RACE Fig. 2 [CCS'21 Fig. 3], skin panel (RACE only); Corollary 1 and "
     "Theorem 4", "RACE: best R, R by Corollary 1, median of means"),
    ("kde_skin_baselines.png", "plot_kde.py", "private RACE Fig. 2 [CCS'21 Fig. 3], skin panel",
     "mean relative error against ε, RACE against the baselines"),
    ("kde_skin_rw.png", "plot_kde.py", "private RACE Discussion: \"any R and W in [100, 1k]\" (no paper figure)",
     "RACE's mean relative error against ε, one panel per W, one line per R"),
    ("race_rw.png", "plot_race_rw.py", "private RACE Section 6 sentences on R and W; CCS'21 Section 5.1 histogram "
     "release in high dimension (no paper figure)", "the R and W each task needs against ε; RACE against the histogram release"),
    ("kde_covtype.png", "plot_kde.py", "CCS'21 Fig. 7 (54-d covtype)", "mean relative error against ε"),
    ("kde_covtype_pca.png", "plot_kde.py", "CCS'21 Fig. 7 (8 principal components)",
     "mean relative error against ε, every baseline"),
    ("kde_sf_density_eps1.png", "plot_kde_baselines.py", "CCS'21 Fig. 3, top row (SF density at ε = 1)",
     "the released densities against the ground truth"),
    ("kde_nyc_density_eps1.png", "plot_kde_baselines.py", "CCS'21 Fig. 3, top row (NYC density at ε = 1)",
     "the released densities against the ground truth"),
    ("kde_baselines.png", "plot_kde_baselines.py", "CCS'21 Figs. 3 and 7 side by side (overview, not published)",
     "the six KDE data sets in one figure"),
    ("classify.png", "plot_classify.py", "private RACE Fig. 3 [CCS'21 Fig. 4] (+ nursery, no paper figure)",
     "test accuracy against ε"),
    ("regress.png", "plot_regress.py", "private RACE Fig. 4 [CCS'21 Fig. 5]",
     "test MSE against ε; off-scale values marked on the panel's edge"),
    ("graph.png", "plot_graph.py", "CCS'21 Fig. 6", "mean relative error of Jaccard kernel sums against ε"),
    ("scaling_graph.png", "plot_graph.py", "CCS'21 Table 4 (parallel sketch build; the project's figure)",
     "speedup and build time per edge against threads"),
    ("modes.png", "plot_race_apps.py", "private RACE Section 4, mode finding (no paper figure)",
     "distance to the true modes and share recovered against ε"),
    ("anomaly.png", "plot_race_apps.py", "private RACE Section 4, anomaly detection (no paper figure)",
     "ROC AUC against ε"),
    ("diversity.png", "plot_race_apps.py", "private RACE Section 4, diversity sampling (no paper figure)",
     "mixture components hit against ε"),
    ("neighbors.png", "plot_race_apps.py", "private RACE abstract, near-neighbour search (no paper figure)",
     "recall@k against ε"),
    ("m2m_fig3_random10.png", "plot_m2m.py", "M2M Fig. 3, top row (Random10)",
     "five tasks' error against ε, one panel per task"),
    ("m2m_fig3_lifesci.png", "plot_m2m.py", "M2M Fig. 3, bottom row (LifeSci stand-in)",
     "five tasks' error against ε, one panel per task"),
    ("m2m_logistic.png", "plot_m2m.py", "M2M Fig. 4", "AUC of logistic regression against ε"),
    ("ldp_erm_linear_generated_p*.png", "plot_ldp.py", "LDP ERM Theorem 3 / Corollary 1 (no paper figure): "
     "linear loss, generated players, one figure per dimension p", "excess risk against n per ε, and exact hits where any"),
    ("ldp_erm_linear_real_p*.png", "plot_ldp.py", "LDP ERM Theorem 3 / Corollary 1 (no paper figure): "
     "linear loss, airfoil rows, one figure per p", "excess risk against n per ε, and exact hits where any"),
    ("ldp_erm_logistic_generated_p*.png", "plot_ldp.py", "LDP ERM Theorem 3 / Corollary 1 (no paper figure): "
     "logistic loss, generated players, one figure per p", "excess risk against n per ε, and exact hits where any"),
    ("ldp_erm_logistic_real_p*.png", "plot_ldp.py", "LDP ERM Theorem 3 / Corollary 1 (no paper figure): "
     "logistic loss, real rows, one figure per p", "excess risk against n per ε, and exact hits where any"),
    ("ldp_marginals_*.png", "plot_ldp.py", "LDP ERM Section 6, k-way marginals (no paper figure), one figure per "
     "player source", "max error over the marginals against d, per (k, ε)"),
    ("ldp_smooth_queries_*.png", "plot_ldp.py", "LDP ERM Section 6.2, smooth queries (no paper figure), one figure "
     "per player source", "max error against n and per bandwidth, per ε"),
    ("ldp_highdim_n*.png", "plot_ldp.py", "LDP ERM Section 7, high-dimensional sparse regression (no paper figure), "
     "one figure per number of players", "excess risk against the Gaussian width, per ε"),
]

# Published names of an earlier layout (docs/figures/ keeps them until a full run remakes the
# figures): what each was and what replaced it.
SUPERSEDED = [
    ("m2m_fig3.png", "plot_m2m.py", "M2M Fig. 3 (earlier 10-panel layout; now m2m_fig3_random10.png and "
     "m2m_fig3_lifesci.png)"),
    ("ldp_erm_*_exact_hits.png", "plot_ldp.py", "LDP ERM exact hits (earlier layout; now the bottom row of "
     "ldp_erm_LOSS_SOURCE_pP.png)"),
    ("ldp_erm_*.png", "plot_ldp.py", "LDP ERM Theorem 3 / Corollary 1 (earlier 12-panel layout; now one figure per "
     "p: ldp_erm_LOSS_SOURCE_pP.png)"),
    ("ldp_highdim.png", "plot_ldp.py", "LDP ERM Section 7 (earlier 12-panel layout; now ldp_highdim_nN.png, one per "
     "number of players)"),
    ("ldp_smooth_queries.png", "plot_ldp.py", "LDP ERM Section 6.2 (earlier layout; now ldp_smooth_queries_SOURCE.png, "
     "one per player source)"),
]


def paper_figure(png):
    """The catalogue row of a PNG name (pattern, script, paper figure[, what it shows]), a row of
    SUPERSEDED for a name of an earlier layout, or None."""
    for row in FIGURES + SUPERSEDED:
        if fnmatch.fnmatch(png, row[0]):
            return row
    return None


def markdown():
    lines = ["| figure | drawn by | paper figure | shows |", "|---|---|---|---|"]
    lines += [f"| `{p}` | `plots/{s}` | {f} | {w} |" for p, s, f, w in FIGURES]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
