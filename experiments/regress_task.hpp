#pragma once
// The regression task family (private-race paper Figure 5 / CCS'21 Figure 5): a seeded
// train/test split, Wang's (2018) preprocessing for every method, test mean squared error.
// Methods: the RACE surrogate-loss regression (both placements of the SRP pair), SSP, AdaSSP,
// ObjPert, OPS, AdaOPS, PrivBayes synthetic data (regress_privbayes.cpp), and the non-private
// least squares and trivial references.
#include "experiment.hpp"

namespace privrace::experiments {

struct RegressContext : TaskContext {
  // Preprocessed (Wang 2018): features standardised with the training means and standard
  // deviations, each row scaled to unit norm, y centred by the training mean and divided by
  // the training max |y| (test targets use the same map). The means, deviations and max |y|
  // come from the training data without noise: that preprocessing is not private, as in Wang's
  // and the RACE paper's experiments; the records say so.
  DoubleMatrix train_x, test_x;
  Eigen::VectorXd train_y, test_y;
};

// Task regression; methods race_regression, ssp, adassp, objpert_linear, ops, adaops, least_squares, trivial.
void register_regress_task(Registry& registry);
// Method privbayes_regression: PrivBayes synthetic data + least squares (regress_privbayes.cpp).
void register_regress_privbayes(Registry& registry);

}  // namespace privrace::experiments
