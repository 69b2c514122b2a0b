#pragma once
// The epsilon sweep every sketch method shares: the group builds its exact counts once (they
// depend on the parameters and the group seed, never on epsilon); each cell gets a privatized
// copy with the noise seed the runner gave it, and the method scores that release. Noise seeds
// and noise timing are handled here only: a method never derives a noise seed or calls
// privatize() itself. RACE sketches are built and released by the release API (build_exact and
// ExactSketch::release, the calls every front end uses; the RACE classifier's class sketches and
// the regression surrogate through their task's calls to it), with the group's seed as the public
// hash seed (build_group_exact); M2M's feature sums (built by the API in build_feature_sums) pass
// their own library release call, release_feature_sketch, to sweep_epsilons.
#include <chrono>
#include <cstddef>
#include <utility>

#include "experiment.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace::experiments {

// The noise of one cell: the runner's seed for it (seeded, so a record can be reproduced).
inline NoiseSource cell_noise(const PendingCell& cell) { return NoiseSource{true, cell.noise_seed}; }

// A group's public hash seed: the group seed (runner.cpp derives it from the config seed, the
// method, its parameters and the repetition; never from epsilon or the data).
inline std::uint64_t group_hash_seed(const CellGroup& group) { return group.seed; }

// A group's exact counts, built by the release API: the group's hash seed is the release's public
// hash seed (ReleaseParams::hash_seed, as `privrace sketch --hash-seed` gives one) and the noise
// is each cell's (cell_noise), never the master seed's.
template <class Records>
ExactSketch build_group_exact(ReleaseParams params, const CellGroup& group, const Records& records) {
  params.hash_seed = group_hash_seed(group);
  return build_exact(params, MasterSeed::of(group.seed, true), records);
}

// What a method scores: the cell, its release and the seconds its noise took.
template <class Released>
struct CellRelease {
  std::size_t index;
  const PendingCell& cell;
  const Released& release;
  double noise_seconds;  // the noise alone when the release reports it (Release), else the call
};

// For every cell of the group: release = privatize(cell.epsilon, cell_noise(cell)) (a new
// private copy of the group's exact build), result = score(CellRelease{...}), emitted at once.
template <class Privatize, class Score>
void sweep_epsilons(const CellGroup& group, const Method::Emit& emit, Privatize&& privatize, Score&& score) {
  for (std::size_t i = 0; i < group.cells.size(); ++i) {
    const PendingCell& cell = group.cells[i];
    const auto t0 = std::chrono::steady_clock::now();
    const auto release = privatize(cell.epsilon, cell_noise(cell));
    double noise_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if constexpr (requires { release.noise_seconds(); }) noise_seconds = release.noise_seconds();  // not the copy
    emit(i, score(CellRelease<std::decay_t<decltype(release)>>{i, cell, release, noise_seconds}));
  }
}

// RACE sketches: each cell releases exact.release(spec_of(epsilon), its noise).
template <class SpecOf, class Score>
void sweep_epsilons(const ExactSketch& exact, const CellGroup& group, const Method::Emit& emit, SpecOf&& spec_of,
                    Score&& score) {
  sweep_epsilons(
      group, emit, [&](double epsilon, const NoiseSource& noise) { return exact.release(spec_of(epsilon), noise); },
      std::forward<Score>(score));
}

}  // namespace privrace::experiments
