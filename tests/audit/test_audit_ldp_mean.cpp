// The auditor on the LDP mean mechanisms: the real paths (ldp_piecewise, ldp_hybrid,
// ldp_privunit, run with the other real paths in test_audit) pass here with a bound close to the
// claim, and deliberately mis-scaled variants (they live here, never in the library) fail.
// PRIVRACE_AUDIT_THOROUGH=1 runs 10^6 releases a data set instead of the default.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "privrace/audit/auditor.hpp"
#include "privrace/audit/paths.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/mean_mechanisms.hpp"

namespace privrace::audit {
namespace {

AuditOptions options(std::size_t runs) {
  const char* v = std::getenv("PRIVRACE_AUDIT_THOROUGH");
  AuditOptions o;
  o.runs = v && std::string(v) == "1" ? 1000000 : runs;
  o.confidence = 0.99;
  o.seed = 20190408;
  return o;
}

std::unique_ptr<RandomSource> rng_for(const NoiseSource& noise) {
  return noise.seeded ? std::unique_ptr<RandomSource>(std::make_unique<SeededRandom>(noise.seed))
                      : std::unique_ptr<RandomSource>(std::make_unique<CryptoRandom>());
}

// A scalar report on t = -1 (D) and t = 1 (D'), claimed eps-LDP, honestly recording its variance.
template <class M>
AuditPath scalar_variant(const std::string& name, const M& mech, double claimed) {
  AuditPath p;
  p.name = name;
  p.claim = {claimed, 0.0, false};
  p.exact = {-1.0};
  p.exact_neighbour = {1.0};
  p.release = [mech](bool neighbour, const NoiseSource& noise, Observation& out) {
    auto rng = rng_for(noise);
    out.values = {mech.report(neighbour ? 1.0 : -1.0, *rng)};
    out.recorded_variance = {mech.variance(1.0)};
  };
  return p;
}

// PM with e^eps where the paper has e^{eps/2} (C, p and the interval all from 2 eps).
AuditPath broken_piecewise_half_epsilon() {
  return scalar_variant("broken: PM with e^eps for e^(eps/2)", ldp::PiecewiseMechanism(2.0), 1.0);
}

// HM whose PM and Duchi halves each get the whole budget twice over.
AuditPath broken_hybrid_double() {
  return scalar_variant("broken: HM at 2 eps", ldp::HybridMechanism(2.0), 1.0);
}

// PrivUnit with the whole eps given to the cap probability and again to the cap threshold
// (eps0 = eps1 = eps instead of eps0 + eps1 = eps).
AuditPath broken_privunit_split() {
  const auto pu = std::make_shared<const ldp::PrivUnit>(ldp::PrivUnit::with_split(3, 1.0, 1.0));
  AuditPath p;
  p.name = "broken: PrivUnit with eps0 = eps1 = eps";
  p.claim = {1.0, 0.0, false};
  p.exact = {1.0};
  p.exact_neighbour = {-1.0};
  const double variance = pu->projection_variance();
  p.release = [pu, variance](bool neighbour, const NoiseSource& noise, Observation& out) {
    auto rng = rng_for(noise);
    const double u[3] = {neighbour ? -1.0 : 1.0, 0.0, 0.0};
    double z[3];
    pu->report(u, *rng, z);
    out.values = {z[0]};
    out.recorded_variance = {variance};
  };
  return p;
}

TEST(AuditLdpMean, RealPathsPassCloseToTheClaim) {
  for (const char* name : {"ldp_piecewise", "ldp_hybrid", "ldp_privunit", "ldp_djw_l2"}) {
    const auto r = run_audit(make_path(name), options(100000));
    std::cout << r.summary() << std::endl;
    EXPECT_TRUE(r.pass()) << r.summary();
    EXPECT_TRUE(r.variance_tested) << name;
    EXPECT_GT(r.epsilon_lower, 0.6) << r.summary();
  }
}

TEST(AuditLdpMean, PiecewiseWithTheWrongExponentFails) {
  const auto r = run_audit(broken_piecewise_half_epsilon(), options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.epsilon_ok);
}

TEST(AuditLdpMean, HybridAtTwiceEpsilonFails) {
  const auto r = run_audit(broken_hybrid_double(), options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.epsilon_ok);
}

// DJW's l2 randomiser run at twice the epsilon it claims (hemisphere odds e^{2 eps}).
AuditPath broken_djw_double() {
  AuditPath p;
  p.name = "broken: DJW l2 at 2 eps";
  p.claim = {1.0, 0.0, false};
  p.exact = {1.0};
  p.exact_neighbour = {-1.0};
  const double B = ldp::djw_l2_scale(3, 1.0, 2.0);
  p.release = [B](bool neighbour, const NoiseSource& noise, Observation& out) {
    auto rng = rng_for(noise);
    const double g[3] = {neighbour ? -1.0 : 1.0, 0.0, 0.0};
    double z[3];
    ldp::djw_l2_privatize(g, 3, 1.0, 2.0, *rng, z);
    out.values = {z[0]};
    out.recorded_variance = {B * B / 3.0 - 1.0};
  };
  return p;
}

TEST(AuditLdpMean, DjwAtTwiceEpsilonFails) {
  const auto r = run_audit(broken_djw_double(), options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.epsilon_ok);
}

TEST(AuditLdpMean, PrivUnitSpendingTheBudgetTwiceFails) {
  const auto r = run_audit(broken_privunit_split(), options(20000));
  std::cout << r.summary() << std::endl;
  EXPECT_FALSE(r.epsilon_ok);
}

}  // namespace
}  // namespace privrace::audit
