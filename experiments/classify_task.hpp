#pragma once
// The classification task family (private-race paper Figure 4 / CCS'21 Figure 4): a seeded
// train/test split, accuracy on the held-out test rows. Methods: the private RACE classifier,
// L2-regularised logistic regression by objective perturbation, and the majority class.
#include "experiment.hpp"

namespace privrace::experiments {

struct ClassifyContext : TaskContext {
  DenseMatrix train_x, test_x;       // features in the unit cube (the registry's scaling)
  std::vector<int> train_y, test_y;  // class indices 0..classes-1
  std::vector<double> class_values;  // the label value of each class index
  std::size_t classes = 0;
  double bandwidth = 0;              // p-stable bucket width of the RACE classifier
  json bandwidth_selection;          // how it was chosen (recorded in every RACE record)
  // Objective perturbation's inputs: [2x - 1, 1] / sqrt(d + 1), so every row has norm <= 1
  // (a fixed public map of each record), and labels in {-1, +1} (train_pm: binary tasks only).
  DoubleMatrix train_lr, test_lr;
  Eigen::VectorXd train_pm;
};

// [2x - 1, 1] / sqrt(d + 1) of unit-cube rows: the logistic-regression inputs of objective
// perturbation (classification, one-vs-rest, M2M's dp_erm), every row of norm <= 1.
DoubleMatrix logistic_inputs(const DenseMatrix& x);

// Task classification; methods race_classifier, objective_perturbation, majority.
void register_classify_task(Registry& registry);
// Method objpert_ovr: objective perturbation one-vs-rest for K classes, epsilon / K per class (classify_ovr.cpp).
void register_classify_ovr(Registry& registry);

}  // namespace privrace::experiments
