// Sketches 1000 seeded points with the installed library and checks one exact property:
// without noise every row of a RACE sketch counts each record once, so N-hat = n.
#include <cstdio>
#include <memory>

#include "privrace/core/random.hpp"
#include "privrace/core/version.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/race_sketch.hpp"

int main() {
  using namespace privrace;
  DenseMatrix x(1000, 3);
  SeededRandom rng(7);
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = static_cast<Real>(rng.unit());
  FamilySpec spec;
  spec.kernel = privrace::Kernel::L2;
  spec.rows = 20;
  spec.dim = 3;
  spec.seed = 11;
  RaceSketch sketch(std::shared_ptr<const LshFamily>(make_family(spec)), 16);
  build_dense(sketch, x);
  std::printf("privrace %s: n_hat = %g\n", version(), sketch.n_hat());
  return sketch.n_hat() == 1000.0 ? 0 : 1;
}
