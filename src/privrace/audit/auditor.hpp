#pragma once
// Empirical differential-privacy auditor: runs a release many times on two neighbouring data
// sets D and D' with fresh noise and turns the frequencies of chosen output events into a
// LOWER bound on epsilon that holds with a stated confidence (Jagielski et al. 2020; the
// threshold tests of DP-Sniper and of Google's stochastic tester). A correct epsilon-DP release
// gives, for every event S,  P[M(D) in S] <= e^eps P[M(D') in S] + delta  and the same with D
// and D' swapped; Clopper-Pearson intervals on the two frequencies make the bound
//   eps_lower = ln((p_a_lower - delta) / p_b_upper)
// hold with probability >= the confidence. A bound above the claimed epsilon is proof (up to
// that confidence) that the release is not epsilon-DP.
//
// The runs are split in halves: the first half picks the event (statistic, direction and
// threshold) with the largest bound, the second half measures it, so choosing among many
// events costs nothing in confidence. Checks (each at its share of 1 - confidence):
//  * epsilon: the lower bound above, at the claimed delta;
//  * Gaussian profile (additive Gaussian noise only): a Gaussian mechanism that is (eps, delta)-DP
//    has L2-sensitivity / sigma <= mu, and is then (eps', delta_mu(eps'))-DP for every eps' >= 0
//    (Balle & Wang 2018, Theorem 8). The auditor bounds delta from below at eps' in a grid and
//    fails if it exceeds delta_mu(eps'): far more powerful than the single point (eps, delta);
//  * noise conformance: the pooled variance of the output around the exact (noise-free) values
//    must match the variance the release records. Extra noise cannot raise epsilon, but a
//    release that adds noise twice while recording it once reports false accuracy (and means
//    the code path is not the one that was reasoned about).
//  * the whole file (paths that write one): a released file must be epsilon-DP as a whole, not
//    only its counts. Each trial writes the release through the sketch file writer and the
//    check reads every byte that is not the counts' noise: the container's fields and every
//    header field except the noisy and derived ones (below). Its events are "field f equals
//    its value in a reference file of D" (and the complements); an exact value in a header (the
//    record count, graph statistics) differs deterministically between D and D', so the event
//    has probability 1 on one side and 0 on the other and the bound exceeds any claim. The
//    trials are their own (fewer: a file costs a write and a read), with their own share of
//    1 - confidence; half of them choose the field and direction, half measure it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"
#include "privrace/sketch/privatize.hpp"

namespace privrace::audit {

// What the release claims.
struct Claim {
  double epsilon = 1.0;
  double delta = 0.0;
  bool gaussian = false;  // additive Gaussian noise: also test the profile that (eps, delta) implies
};

// One release, post-processed into the numbers the auditor looks at (a function of the
// output: any post-processing keeps a lower bound valid).
struct Observation {
  std::vector<double> values;
  // The noise variance the release records for each value (empty: no conformance check).
  std::vector<double> recorded_variance;
};

// A release path: the exact (noise-free) observables on D and on D', and the release itself.
struct AuditPath {
  std::string name;
  std::string description;
  Claim claim;
  std::vector<double> exact;            // on D
  std::vector<double> exact_neighbour;  // on D'
  // One complete release on D (neighbour = false) or D', with noise from `noise`.
  std::function<void(bool neighbour, const NoiseSource& noise, Observation& out)> release;
  // The same release written as the files a data owner would publish, through the sketch file
  // writer (save_release / save_sketch): every file's bytes, in a fixed order. Empty: the path
  // writes no file (mechanisms, local randomisers) and the whole-file check is not run.
  std::function<std::vector<std::string>(bool neighbour, const NoiseSource& noise)> release_files;
};

struct AuditOptions {
  std::size_t runs = 1000000;  // releases on EACH of D and D' (half select the test, half measure it)
  double confidence = 0.99;    // probability that a correct release passes every check
  std::uint64_t seed = 1;      // base of the per-run noise seeds
  bool fresh_noise = false;    // true: the release CSPRNG instead of seeded streams (not reproducible)
  int threads = 0;             // runs in parallel; 0 = OpenMP default
  // Whole-file check: files written on EACH of D and D' (0: four times the fewest with which the
  // check could fail, at least 2000).
  std::size_t file_runs = 0;
};

struct AuditResult {
  std::string path;
  Claim claim;
  std::size_t runs = 0;
  double confidence = 0.0;
  std::size_t changed_values = 0;  // observables that differ between D and D'
  double l1_change = 0.0;          // their total absolute change
  // epsilon check
  double epsilon_lower = 0.0;
  std::string epsilon_event;  // which statistic, direction and threshold
  double p_a = 0.0, p_b = 0.0;  // the event's frequencies (more likely side, less likely side)
  bool epsilon_ok = true;
  // Gaussian profile check
  bool profile_tested = false;
  double profile_epsilon = 0.0, profile_delta_lower = 0.0, profile_delta_bound = 0.0;
  bool profile_ok = true;
  // noise conformance
  bool variance_tested = false;
  double variance_measured = 0.0, variance_recorded = 0.0, variance_tolerance = 0.0;
  bool variance_ok = true;
  // whole-file check
  bool file_tested = false;
  std::size_t file_runs = 0;     // files written on each of D and D'
  std::size_t file_fields = 0;   // fields compared (container and header, noisy and derived ones excluded)
  double file_epsilon_lower = 0.0;
  std::string file_event;        // which field and direction
  double file_p_a = 0.0, file_p_b = 0.0;
  bool file_ok = true;
  double seconds = 0.0;
  bool pass() const { return epsilon_ok && profile_ok && variance_ok && file_ok; }
  std::string verdict() const { return pass() ? "pass" : "fail"; }
  std::string summary() const;  // one line
};

// The fields of one released file that the whole-file check compares, as (name, JSON text) in
// file order: the container's magic, version and payload shape ("container.*"), then every
// header field by its dotted path (objects are walked, arrays are single fields), then
// "container.field_order". Left out, as the only fields a release may vary with the data through
// its noise: the counts themselves (the main checks' observables), the payload's per-block byte
// planes and compressed lengths and the CRC (functions of the noisy counts), and the noisy and
// derived header fields: "n_hat", and under "privacy" (its merged parts included) "count",
// "noise_id" and "noise_seed" (the audit's seeded noise streams; absent from a real release).
// This list is the auditor's own, independent of the writer's field classes. Error when the
// bytes are not a sketch file.
std::vector<std::pair<std::string, std::string>> file_fields(const std::string& bytes);

// Clopper-Pearson bounds for x successes in n trials, each one-sided at level alpha.
double clopper_pearson_lower(std::size_t x, std::size_t n, double alpha);
double clopper_pearson_upper(std::size_t x, std::size_t n, double alpha);

// delta of the Gaussian mechanism with L2-sensitivity / sigma = mu at epsilon (Balle & Wang 2018).
double gaussian_profile_delta(double mu, double epsilon);
// The largest mu for which the Gaussian mechanism is (epsilon, delta)-DP.
double gaussian_mu_for(double epsilon, double delta);

// Fewest runs (per data set) with which a release could fail the epsilon check at all: even if
// the event never happened on D and always on D', fewer runs could not bound epsilon above the
// claim. The auditor refuses fewer runs (UsageError naming this minimum).
std::size_t minimum_runs(const Claim& claim, double confidence);

// Refuses (UsageError) eps <= 0, delta outside [0, 1), confidence outside (0, 1), too few runs,
// and paths whose D and D' give identical exact outputs.
AuditResult run_audit(const AuditPath& path, const AuditOptions& options);

// Neighbour checks (UsageError saying what differs): D' is D plus one record (add-remove) or D
// with one record replaced (replace), as multisets of rows.
void check_neighbours(const DenseMatrix& d, const DenseMatrix& d_prime, NeighborRelation relation);
void check_neighbours(const SetCollection& d, const SetCollection& d_prime, NeighborRelation relation);

}  // namespace privrace::audit
