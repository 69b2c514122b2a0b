// Classification method `objpert_ovr`: objective perturbation (Chaudhuri et al. 2011) made
// multi-class by one-vs-rest, epsilon / K per class (the derivation is at
// objective_perturbation_one_vs_rest in baselines/objective_perturbation.hpp).
#include <chrono>

#include "classify_task.hpp"
#include "params.hpp"
#include "privrace/baselines/objective_perturbation.hpp"
#include "privrace/core/random.hpp"

namespace privrace::experiments {
namespace {

struct ObjectivePerturbationOvrParams {
  double lambda = 0;
  static const ParamTable<ObjectivePerturbationOvrParams>& table() {
    static const auto t = ParamTable<ObjectivePerturbationOvrParams>().add(
        &ObjectivePerturbationOvrParams::lambda, "lambda", ParamSpec::Kind::PositiveNumber, nullptr,
        "L2 regulariser Lambda > 0 of every binary problem");
    return t;
  }
};

class ObjectivePerturbationOvrMethod final : public TypedMethod<ClassifyContext, ObjectivePerturbationOvrParams> {
 public:
  std::string name() const override { return "objpert_ovr"; }
  std::string task() const override { return "classification"; }
  void run(const ClassifyContext& ctx, const ObjectivePerturbationOvrParams& p, const CellGroup& group,
           const Emit& emit) const override {
    const double lambda = p.lambda;
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      SeededRandom rng(cell.noise_seed);
      const auto t0 = std::chrono::steady_clock::now();
      const OneVsRestResult fit = objective_perturbation_one_vs_rest(ctx.train_lr, ctx.train_y, ctx.classes, cell.epsilon, lambda, rng);
      const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto t1 = std::chrono::steady_clock::now();
      const Eigen::MatrixXd margins = ctx.test_lr * fit.weights();  // test x K
      std::vector<int> pred(static_cast<std::size_t>(margins.rows()));
      std::size_t correct = 0;
      for (Eigen::Index j = 0; j < margins.rows(); ++j) {
        Eigen::Index best = 0;
        margins.row(j).maxCoeff(&best);  // ties: the lower class index
        pred[static_cast<std::size_t>(j)] = static_cast<int>(best);
        correct += pred[static_cast<std::size_t>(j)] == ctx.test_y[static_cast<std::size_t>(j)];
      }
      CellResult r;
      const double acc = static_cast<double>(correct) / static_cast<double>(pred.size());
      r.metrics = {{"accuracy", acc}, {"error", 1 - acc}};
      r.build_seconds = build;
      r.query_seconds_per_query =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() / static_cast<double>(pred.size());
      json eps_prime = json::array(), noise = json::array();
      for (const auto& f : fit.fits) {
        eps_prime.push_back(f.epsilon_prime);
        noise.push_back(f.noise_norm);
      }
      r.details = {{"classes", ctx.classes},
                   {"epsilon_per_class", fit.epsilon_per_class},
                   {"budget", "one-vs-rest: every record is in all K binary problems, so each gets epsilon / K "
                              "(basic sequential composition)"},
                   {"epsilon_prime", eps_prime},
                   {"noise_norm", noise},
                   {"neighbors", "replace"},
                   {"row_scaling", "[2x - 1, 1] / sqrt(d + 1)"}};
      emit(i, std::move(r));
    }
  }
};

}  // namespace

void register_classify_ovr(Registry& registry) { registry.add_method(std::make_unique<ObjectivePerturbationOvrMethod>()); }

}  // namespace privrace::experiments
