#include "privrace/sketch/privatize.hpp"

#include <cmath>
#include <functional>
#include <memory>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace {

void privatize(RaceSketch& sketch, const PrivacySpec& spec, const NoiseSource& source) {
  spec.validate();
  if (sketch.is_private()) throw UsageError("the sketch already carries noise; it is privatized once, after the merge");
  const Sensitivity sens = race_sensitivity(sketch.rows(), sketch.family().cells_per_record(), spec.neighbors);
  auto counts = sketch.mutable_counts();
  const std::size_t width = sketch.width(), rows = sketch.rows();
  double realised_epsilon = spec.epsilon;
  double noise_scale = 0.0;
  std::string sampler = "inversion";
  std::function<void(std::span<std::int64_t>, RandomSource&)> perturb;  // one count row
  switch (spec.mechanism) {
    case NoiseMechanism::DiscreteLaplace: {
      // P(Z = z) ~ exp(-eps |z| / L1): the geometric mechanism (Ghosh et al. 2009) is eps-DP for
      // integer queries with L1 sensitivity L1; the scale is rounded up, so eps only shrinks.
      const DiscreteLaplace noise(sens.l1 / spec.epsilon);
      noise_scale = noise.scale();
      realised_epsilon = sens.l1 / noise.scale();
      // Both samplers are exact; the table one pays its set-up only for large sketches.
      constexpr std::size_t kBulkCounts = std::size_t{1} << 18;
      std::shared_ptr<const ExactGeometric> bulk = counts.size() >= kBulkCounts ? noise.bulk_sampler() : nullptr;
      sampler = bulk ? "exact_geometric_table" : "bernoulli_exp";
      perturb = [noise, bulk](std::span<std::int64_t> row, RandomSource& rng) { noise.add_to(row, rng, bulk.get()); };
      break;
    }
    case NoiseMechanism::FlooredLaplace: {
      // Algorithm 1 as printed: floor(S + Lap(L1 / eps)); the floor is post-processing.
      noise_scale = sens.l1 / spec.epsilon;
      perturb = [noise_scale](std::span<std::int64_t> row, RandomSource& rng) {
        for (auto& c : row) c = static_cast<std::int64_t>(std::floor(static_cast<double>(c) + sample_laplace(rng, noise_scale)));
      };
      break;
    }
    case NoiseMechanism::Gaussian: {
      // Analytic Gaussian mechanism at L2 sensitivity; rounding to integers is post-processing.
      noise_scale = analytic_gaussian_sigma(spec.epsilon, spec.delta, sens.l2);
      sampler = "box_muller";
      perturb = [noise_scale](std::span<std::int64_t> row, RandomSource& rng) {
        for (auto& c : row) c += static_cast<std::int64_t>(std::llround(noise_scale * sample_normal(rng)));
      };
      break;
    }
  }
  // Rows are perturbed in parallel. Seeded noise uses one stream per row, so the result does
  // not depend on the thread count; release noise uses one CSPRNG instance per thread.
#pragma omp parallel
  {
    std::unique_ptr<RandomSource> os_rng;
    if (!source.seeded) os_rng = std::make_unique<CryptoRandom>();
#pragma omp for schedule(static)
    for (std::size_t r = 0; r < rows; ++r) {
      std::unique_ptr<RandomSource> row_rng;
      if (source.seeded) row_rng = std::make_unique<SeededRandom>(derive_seed(source.seed, r));
      RandomSource& rng = source.seeded ? *row_rng : *os_rng;
      perturb(counts.subspan(r * width, width), rng);
    }
  }
  sketch.set_privacy({{"private", true},
                      {"epsilon", spec.epsilon},
                      {"delta", spec.delta},
                      {"realised_epsilon", realised_epsilon},
                      {"mechanism", to_string(spec.mechanism)},
                      {"neighbors", to_string(spec.neighbors)},
                      {"sensitivity_l1", sens.l1},
                      {"sensitivity_l2", sens.l2},
                      {"noise_scale", noise_scale},
                      {"noise_source", source.seeded ? "seeded" : CryptoRandom::name()},
                      {"noise_sampler", sampler},
                      {"fit_for_release", !source.seeded}});
  if (source.seeded) sketch.set_privacy([&] {
      auto p = sketch.privacy();
      p["noise_seed"] = source.seed;
      p["warning"] = "noise drawn from a seeded generator for reproducible experiments: NOT fit for release";
      return p;
    }());
}

}  // namespace privrace

namespace privrace {
nlohmann::json merged_privacy(const std::vector<nlohmann::json>& parts) {
  std::size_t n_private = 0;
  for (const auto& p : parts) n_private += p.value("private", false) ? 1 : 0;
  if (n_private == 0) return {{"private", false}, {"merged_parts", parts.size()}};
  if (n_private != parts.size())
    throw UsageError("cannot merge a private sketch with a non-private one: the sum would expose exact counts");
  double eps = 0.0, delta = 0.0, realised = 0.0;
  bool fit = true;
  std::string mechanism = parts.front().value("mechanism", "?");
  for (const auto& p : parts) {
    eps = std::max(eps, p.value("epsilon", 0.0));
    realised = std::max(realised, p.value("realised_epsilon", p.value("epsilon", 0.0)));
    delta = std::max(delta, p.value("delta", 0.0));
    fit = fit && p.value("fit_for_release", false);
    if (p.value("mechanism", "?") != mechanism) mechanism = "mixed";
  }
  return {{"private", true},
          {"epsilon", eps},
          {"delta", delta},
          {"realised_epsilon", realised},
          {"mechanism", mechanism},
          {"composition", "parallel: the merged sketches are assumed to cover disjoint records"},
          {"fit_for_release", fit},
          {"merged_from", parts}};
}
}  // namespace privrace
