#include "privrace/audit/auditor.hpp"

#include <omp.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/special_functions/beta.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>
#include <unordered_map>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::audit {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The four checks (epsilon, Gaussian profile, noise conformance, whole file) share
// 1 - confidence equally (union bound), whether or not a path runs all four; the epsilon,
// profile and whole-file checks split theirs between the two Clopper-Pearson bounds.
double check_alpha(double confidence) { return (1.0 - confidence) / 4.0; }

double std_normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// Statistics of one release, from v_c = sign(d_c) (y_c - exact_c) - |d_c| over the values c that
// D and D' change (d = exact' - exact). On D' the release is shifted by d, so large v_c are
// more likely on D'. For noise with the discrete Laplace tail (memoryless), the event
// "every v_c >= 0" has probability ratio exactly e^(||d||_1 / scale) = e^eps: the strongest
// single event for the Laplace mechanisms. The weighted sum is the likelihood-ratio
// statistic of Gaussian noise.
enum Statistic { kMin = 0, kMax = 1, kSum = 2, kStatistics = 3 };
const char* statistic_name(int s) { return s == kMin ? "min_c v_c" : s == kMax ? "max_c v_c" : "sum_c |d_c| u_c"; }

// An event "statistic >= t" (upper = true) or "<= t", and which data set it favours.
struct Event {
  int statistic;
  bool upper;
  bool favours_neighbour;  // the event is likelier on D' (a = D', b = D) or on D (a = D, b = D')
};
const Event kEvents[] = {{kMin, true, true}, {kMax, false, false}, {kSum, true, true}, {kSum, false, false}};

std::size_t count_event(const std::vector<double>& sorted, double t, bool upper) {
  if (upper) return static_cast<std::size_t>(sorted.end() - std::lower_bound(sorted.begin(), sorted.end(), t));
  return static_cast<std::size_t>(std::upper_bound(sorted.begin(), sorted.end(), t) - sorted.begin());
}

std::size_t count_event_unsorted(const double* v, std::size_t n, double t, bool upper) {
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; ++i) c += upper ? (v[i] >= t) : (v[i] <= t);
  return c;
}

// Lower bound on epsilon from x_a of n on the favoured side and x_b of n on the other.
double epsilon_bound(std::size_t x_a, std::size_t x_b, std::size_t n, double delta, double alpha_each) {
  const double a = clopper_pearson_lower(x_a, n, alpha_each) - delta;
  const double b = clopper_pearson_upper(x_b, n, alpha_each);
  if (!(a > 0.0)) return kNegInf;
  return std::log(a / b);
}

// Lower bound on delta at eps' minus what the claimed Gaussian profile allows there.
double profile_excess(std::size_t x_a, std::size_t x_b, std::size_t n, double eps, double mu, double alpha_each) {
  return clopper_pearson_lower(x_a, n, alpha_each) - std::exp(eps) * clopper_pearson_upper(x_b, n, alpha_each) -
         gaussian_profile_delta(mu, eps);
}

std::vector<double> candidate_thresholds(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pooled;
  pooled.reserve(a.size() + b.size());
  pooled.insert(pooled.end(), a.begin(), a.end());
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::sort(pooled.begin(), pooled.end());
  pooled.erase(std::unique(pooled.begin(), pooled.end()), pooled.end());
  constexpr std::size_t kMaxCandidates = 1500;
  if (pooled.size() <= kMaxCandidates) return pooled;
  std::vector<double> out;
  for (std::size_t i = 0; i < kMaxCandidates; ++i) out.push_back(pooled[i * (pooled.size() - 1) / (kMaxCandidates - 1)]);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_event(const Event& e, double t) {
  std::ostringstream s;
  s << statistic_name(e.statistic) << (e.upper ? " >= " : " <= ") << t << " (likelier on "
    << (e.favours_neighbour ? "D'" : "D") << ")";
  return s.str();
}

void validate(const Claim& claim, const AuditOptions& options) {
  if (!(claim.epsilon > 0.0) || !std::isfinite(claim.epsilon))
    throw UsageError("audit: the claimed epsilon must be a positive finite number, got " + std::to_string(claim.epsilon));
  if (!(claim.delta >= 0.0 && claim.delta < 1.0))
    throw UsageError("audit: the claimed delta must be in [0, 1), got " + std::to_string(claim.delta));
  if (claim.gaussian && !(claim.delta > 0.0)) throw UsageError("audit: a Gaussian claim needs delta > 0");
  if (!(options.confidence > 0.0 && options.confidence < 1.0))
    throw UsageError("audit: the confidence must be in (0, 1), got " + std::to_string(options.confidence));
  const std::size_t minimum = minimum_runs(claim, options.confidence);
  if (options.runs < minimum)
    throw UsageError("audit: " + std::to_string(options.runs) + " runs are too few to ever bound epsilon above " +
                     std::to_string(claim.epsilon) + " at confidence " + std::to_string(options.confidence) +
                     ": at least " + std::to_string(minimum) + " runs per data set are needed");
}

// ---- The whole-file check --------------------------------------------------------------

using OrderedJson = nlohmann::ordered_json;

// Drops the noisy and derived fields (file_fields): n_hat at the top; count, noise_id and
// noise_seed in the privacy record and in each of its merged parts.
void drop_noisy_privacy_fields(OrderedJson& privacy) {
  if (!privacy.is_object()) return;
  for (const char* key : {"count", "noise_id", "noise_seed"}) privacy.erase(key);
  if (auto it = privacy.find("merged_from"); it != privacy.end() && it->is_array())
    for (auto& part : *it) drop_noisy_privacy_fields(part);
}

void flatten_fields(const OrderedJson& node, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      out.emplace_back(path, "{}");  // the object's presence (an empty object is a field too)
      flatten_fields(*it, path, out);
    } else {
      out.emplace_back(path, it->dump());
    }
  }
}

template <typename T>
T read_le(const std::string& bytes, std::size_t at) {
  if (at + sizeof(T) > bytes.size()) throw Error("audit: a released file is truncated");
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;  // little-endian hosts only, as the writer
}

// The events of the whole-file check: indicator k of a file set is "field k equals the
// reference's" (k >= 2), "the same fields as the reference" (k = 1) or "every field equal"
// (k = 0); each with the four directions below.
struct FileEvent {
  bool equal;              // the event is "equal" (true) or "differs" (false)
  bool favours_neighbour;  // likelier on D' (a = D') or on D
};
const FileEvent kFileEvents[] = {{true, false}, {false, true}, {true, true}, {false, false}};

}  // namespace

std::vector<std::pair<std::string, std::string>> file_fields(const std::string& bytes) {
  static constexpr char kMagic[] = "PRIVRACE";
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) throw Error("audit: a released file has no PRIVRACE magic");
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("container.magic", "\"PRIVRACE\"");
  const auto version = read_le<std::uint32_t>(bytes, 8);
  out.emplace_back("container.version", std::to_string(version));
  const auto header_length = read_le<std::uint64_t>(bytes, 12);
  if (header_length > bytes.size() - 20) throw Error("audit: a released file's header length exceeds the file");
  OrderedJson header = OrderedJson::parse(bytes.begin() + 20, bytes.begin() + 20 + static_cast<std::ptrdiff_t>(header_length));
  const std::size_t payload_at = 20 + header_length;
  const auto payload_length = read_le<std::uint64_t>(bytes, payload_at);
  if (payload_length > bytes.size() - payload_at - 8 || payload_at + 8 + payload_length + 4 != bytes.size())
    throw Error("audit: a released file's payload length does not match the file");
  if (version >= 2) {  // u64 counts | u64 blocks | ...: the shape (the rest are functions of the noisy counts)
    out.emplace_back("container.payload_counts", std::to_string(read_le<std::uint64_t>(bytes, payload_at + 8)));
    out.emplace_back("container.payload_blocks", std::to_string(read_le<std::uint64_t>(bytes, payload_at + 16)));
  }
  if (!header.is_object()) throw Error("audit: a released file's header is not a JSON object");
  header.erase("n_hat");
  if (auto it = header.find("privacy"); it != header.end()) drop_noisy_privacy_fields(*it);
  const std::size_t first_header_field = out.size();
  flatten_fields(header, "", out);
  std::string order;
  for (std::size_t i = first_header_field; i < out.size(); ++i) order += out[i].first + ";";
  out.emplace_back("container.field_order", order);
  return out;
}

namespace {

using FileFields = std::vector<std::pair<std::string, std::string>>;

// Every field of a release's files, named "fileF.FIELD".
FileFields fields_of(const std::vector<std::string>& files) {
  FileFields all;
  for (std::size_t f = 0; f < files.size(); ++f)
    for (auto& [name, value] : file_fields(files[f])) all.emplace_back("file" + std::to_string(f) + "." + name, std::move(value));
  return all;
}

// equal[side][half][k]: the runs of that half (the first n / 2, the rest) on that side (D, D')
// where indicator k holds: 0 every field equals the reference's, 1 the same field names,
// 2 + j field j of the reference equals its value there. Run i on side s draws its noise from
// derive_seed(base, 2 i + s): the same counts on any number of threads.
struct FileCounts {
  std::vector<std::size_t> equal[2][2];
};

FileCounts count_file_indicators(const AuditPath& path, const AuditOptions& options, const FileFields& reference,
                                 std::uint64_t base, std::size_t n, int threads) {
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t k = 0; k < reference.size(); ++k) index.emplace(reference[k].first, k);
  const std::size_t indicators = 2 + reference.size();
  FileCounts out;
  auto& equal = out.equal;
  for (auto& side : equal)
    for (auto& h : side) h.assign(indicators, 0);
  const std::size_t half = n / 2;
  std::exception_ptr failure;
#pragma omp parallel num_threads(threads)
  {
    omp_set_num_threads(1);
    std::vector<std::size_t> mine[2][2];
    for (auto& side : mine)
      for (auto& h : side) h.assign(indicators, 0);
    std::vector<char> hit(indicators);
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      if (failure) continue;
      try {
        for (int side = 0; side < 2; ++side) {
          const NoiseSource noise{!options.fresh_noise, derive_seed(base, 2 * i + static_cast<std::size_t>(side))};
          const auto fields = fields_of(path.release_files(side == 1, noise));
          std::fill(hit.begin(), hit.end(), 0);
          bool same_names = fields.size() == reference.size(), all_equal = same_names;
          for (std::size_t f = 0; f < fields.size(); ++f) {
            const auto it = index.find(fields[f].first);
            if (it == index.end()) {
              same_names = all_equal = false;
              continue;
            }
            const bool eq = reference[it->second].second == fields[f].second;
            hit[2 + it->second] = eq;
            all_equal = all_equal && eq && it->second == f;
          }
          hit[0] = all_equal;
          hit[1] = same_names;
          auto& counts = mine[side][i < half ? 0 : 1];
          for (std::size_t k = 0; k < indicators; ++k) counts[k] += static_cast<std::size_t>(hit[k]);
        }
      } catch (...) {
#pragma omp critical(audit_file_failure)
        if (!failure) failure = std::current_exception();
      }
    }
#pragma omp critical(audit_file_sums)
    for (int side = 0; side < 2; ++side)
      for (int h = 0; h < 2; ++h)
        for (std::size_t k = 0; k < indicators; ++k) equal[side][h][k] += mine[side][h][k];
  }
  if (failure) std::rethrow_exception(failure);
  return out;
}

// The whole-file check of `path` (release_files set): fills result.file_*.
void run_file_check(const AuditPath& path, const AuditOptions& options, AuditResult& result, int threads) {
  const double alpha = check_alpha(options.confidence);
  const std::size_t minimum = minimum_runs(path.claim, options.confidence);
  const std::size_t n = options.file_runs ? options.file_runs : std::max<std::size_t>(4 * minimum, 2000);
  if (n < minimum)
    throw UsageError("audit: " + std::to_string(n) + " file runs are too few to ever bound epsilon above " +
                     std::to_string(path.claim.epsilon) + ": at least " + std::to_string(minimum) + " are needed");
  const std::uint64_t base = derive_seed(options.seed, 0x66696c65ULL);  // "file": streams of their own
  // The reference: one release on D, from a stream no trial uses.
  const auto reference = fields_of(path.release_files(false, NoiseSource{!options.fresh_noise, derive_seed(base, ~std::uint64_t{0})}));
  if (reference.empty()) throw Error("audit: path '" + path.name + "' wrote no file");
  const std::size_t indicators = 2 + reference.size();
  const std::size_t half = n / 2;
  const FileCounts file_counts = count_file_indicators(path, options, reference, base, n, threads);
  const auto& equal = file_counts.equal;

  // x_a, x_b of event e on indicator k in half h of m runs.
  auto counts = [&](const FileEvent& e, std::size_t k, int h, std::size_t m) {
    const std::size_t on_d = equal[0][h][k], on_dp = equal[1][h][k];
    const std::size_t a = e.favours_neighbour ? on_dp : on_d, b = e.favours_neighbour ? on_d : on_dp;
    return e.equal ? std::pair{a, b} : std::pair{m - a, m - b};
  };
  double best = kNegInf;
  std::size_t best_k = 0;
  const FileEvent* best_e = &kFileEvents[0];
  // Single fields first, so that a tie names the field that gives the leak away.
  std::vector<std::size_t> order;
  for (std::size_t k = 2; k < indicators; ++k) order.push_back(k);
  order.push_back(1);
  order.push_back(0);
  for (const std::size_t k : order)
    for (const FileEvent& e : kFileEvents) {
      const auto [x_a, x_b] = counts(e, k, 0, half);
      if (x_a <= x_b) continue;
      const double bound = epsilon_bound(x_a, x_b, half, path.claim.delta, alpha / 2.0);
      if (bound > best) {
        best = bound;
        best_k = k;
        best_e = &e;
      }
    }
  const std::size_t measured = n - half;
  const auto [x_a, x_b] = counts(*best_e, best_k, 1, measured);
  result.file_tested = true;
  result.file_runs = n;
  result.file_fields = reference.size();
  result.file_epsilon_lower = std::max(0.0, epsilon_bound(x_a, x_b, measured, path.claim.delta, alpha / 2.0));
  const std::string what = best_k == 0   ? std::string("every field")
                           : best_k == 1 ? std::string("the set of fields")
                                         : "field '" + reference[best_k - 2].first + "'";
  result.file_event = what + (best_e->equal ? " equals" : " differs from") + " its value in D's reference file (likelier on " +
                      (best_e->favours_neighbour ? "D'" : "D") + ")";
  result.file_p_a = static_cast<double>(x_a) / static_cast<double>(measured);
  result.file_p_b = static_cast<double>(x_b) / static_cast<double>(measured);
  result.file_ok = result.file_epsilon_lower <= path.claim.epsilon;
}

}  // namespace

double clopper_pearson_lower(std::size_t x, std::size_t n, double alpha) {
  if (x == 0) return 0.0;
  return boost::math::ibeta_inv(static_cast<double>(x), static_cast<double>(n - x + 1), alpha);
}

double clopper_pearson_upper(std::size_t x, std::size_t n, double alpha) {
  if (x >= n) return 1.0;
  return boost::math::ibeta_inv(static_cast<double>(x + 1), static_cast<double>(n - x), 1.0 - alpha);
}

double gaussian_profile_delta(double mu, double epsilon) {
  // Balle & Wang 2018, Theorem 8 with sensitivity / sigma = mu.
  return std_normal_cdf(mu / 2.0 - epsilon / mu) - std::exp(epsilon) * std_normal_cdf(-mu / 2.0 - epsilon / mu);
}

double gaussian_mu_for(double epsilon, double delta) {
  // analytic_gaussian_sigma is the smallest sigma at sensitivity 1: mu = 1 / sigma.
  return 1.0 / analytic_gaussian_sigma(epsilon, delta, 1.0);
}

std::size_t minimum_runs(const Claim& claim, double confidence) {
  const double alpha_each = check_alpha(confidence) / 2.0;
  // Best case with n measuring runs: x_a = n, x_b = 0.
  auto best = [&](std::size_t n) { return epsilon_bound(n, 0, n, claim.delta, alpha_each); };
  std::size_t hi = 1;
  while (!(best(hi) > claim.epsilon)) {
    if (hi > (std::size_t{1} << 50)) throw UsageError("audit: no number of runs can bound this epsilon");
    hi *= 2;
  }
  std::size_t lo = hi / 2;  // best(lo) <= eps (or lo == 0)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (best(mid) > claim.epsilon ? hi : lo) = mid;
  }
  return 2 * hi;  // half of the runs choose the event, half measure it
}

std::string AuditResult::summary() const {
  std::ostringstream s;
  s.precision(4);
  s << path << ": " << verdict() << "  eps_claimed=" << claim.epsilon;
  if (claim.delta > 0) s << " delta=" << claim.delta;
  s << "  eps_lower=" << epsilon_lower << (epsilon_ok ? "" : " (ABOVE the claim)") << "  [" << epsilon_event
    << "; p=" << p_a << " vs " << p_b << "]";
  if (profile_tested)
    s << "  profile: delta_lower(eps'=" << profile_epsilon << ")=" << profile_delta_lower << " vs allowed "
      << profile_delta_bound << (profile_ok ? "" : " (ABOVE)");
  if (variance_tested)
    s << "  variance: measured " << variance_measured << " recorded " << variance_recorded << " +- "
      << variance_tolerance << (variance_ok ? "" : " (MISMATCH)");
  if (file_tested)
    s << "  file: eps_lower=" << file_epsilon_lower << (file_ok ? "" : " (ABOVE the claim)") << " [" << file_event
      << "; p=" << file_p_a << " vs " << file_p_b << "; " << file_fields << " fields, " << file_runs << " files per data set]";
  s << "  runs=" << runs << " per data set, confidence=" << confidence << ", " << seconds << " s";
  return s.str();
}

namespace {

// The statistics of the runs: per run i and side (D, D'), the minimum, maximum and weighted sum
// of the changed values' errors (signed by their change); on D, each value's error summed and
// the mean squared error w_i with its square (conformance), and the noise variance the release
// records. Run i on side s draws its noise from derive_seed(seed, 2 i + s): the same on any
// number of threads.
struct AuditRuns {
  std::vector<double> stats[2][kStatistics];
  std::vector<double> cell_sum;
  double w_sum = 0.0, w_sq = 0.0;
  std::vector<double> recorded;
  bool recorded_consistent = true;
};

AuditRuns collect_runs(const AuditPath& path, const AuditOptions& options, const std::vector<std::size_t>& changed,
                       const std::vector<double>& diff, int threads) {
  const std::size_t n = options.runs, cells = path.exact.size();
  AuditRuns r;
  for (auto& side : r.stats)
    for (auto& st : side) st.assign(n, 0.0);
  r.cell_sum.assign(cells, 0.0);
  std::exception_ptr failure;
#pragma omp parallel num_threads(threads)
  {
    // The runs are the parallel axis: the release's own parallel regions (builder, privatize)
    // run on one thread each, instead of nested teams that oversubscribe the cores.
    omp_set_num_threads(1);
    Observation obs;
    std::vector<double> my_cell_sum(cells, 0.0);
    double my_w = 0.0, my_w2 = 0.0;
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      if (failure) continue;
      try {
        for (int side = 0; side < 2; ++side) {
          const NoiseSource noise{!options.fresh_noise, derive_seed(options.seed, 2 * i + static_cast<std::size_t>(side))};
          obs.values.clear();
          obs.recorded_variance.clear();
          path.release(side == 1, noise, obs);
          if (obs.values.size() != cells) throw Error("audit: path '" + path.name + "' returned a different number of values");
          double vmin = std::numeric_limits<double>::infinity(), vmax = -vmin, sum = 0.0;
          for (std::size_t k = 0; k < changed.size(); ++k) {
            const double sign = diff[k] > 0 ? 1.0 : -1.0, mag = std::abs(diff[k]);
            const double u = sign * (obs.values[changed[k]] - path.exact[changed[k]]);
            vmin = std::min(vmin, u - mag);
            vmax = std::max(vmax, u - mag);
            sum += mag * u;
          }
          r.stats[side][kMin][i] = vmin;
          r.stats[side][kMax][i] = vmax;
          r.stats[side][kSum][i] = sum;
          if (side == 0) {
            double w = 0.0;
            for (std::size_t c = 0; c < cells; ++c) {
              const double e = obs.values[c] - path.exact[c];
              my_cell_sum[c] += e;
              w += e * e;
            }
            w /= static_cast<double>(cells);
            my_w += w;
            my_w2 += w * w;
            if (i == 0) {
#pragma omp critical(audit_recorded)
              r.recorded = obs.recorded_variance;
            } else if (i == n - 1 && !obs.recorded_variance.empty()) {
#pragma omp critical(audit_recorded)
              r.recorded_consistent = r.recorded_consistent && obs.recorded_variance.size() == cells;
            }
          }
        }
      } catch (...) {
#pragma omp critical(audit_failure)
        if (!failure) failure = std::current_exception();
      }
    }
#pragma omp critical(audit_sums)
    {
      for (std::size_t c = 0; c < cells; ++c) r.cell_sum[c] += my_cell_sum[c];
      r.w_sum += my_w;
      r.w_sq += my_w2;
    }
  }
  if (failure) std::rethrow_exception(failure);
  return r;
}

// The selection half's events: the one that bounds epsilon from below the most, and (Gaussian
// claims) the one whose delta profile exceeds the claim's the most, with their thresholds.
struct ChosenEvents {
  const Event* eps_event = &kEvents[0];
  double eps_threshold = 0.0;
  const Event* profile_event = &kEvents[0];
  double profile_threshold = 0.0, profile_eps = 0.0;
};

ChosenEvents choose_events(const AuditRuns& runs, const Claim& claim, std::size_t half, double alpha) {
  // Sorted copies for fast threshold counts.
  std::vector<double> sorted[2][kStatistics];
  for (int side = 0; side < 2; ++side)
    for (int st = 0; st < kStatistics; ++st) {
      sorted[side][st].assign(runs.stats[side][st].begin(), runs.stats[side][st].begin() + static_cast<std::ptrdiff_t>(half));
      std::sort(sorted[side][st].begin(), sorted[side][st].end());
    }
  ChosenEvents ch;
  const double mu = claim.gaussian ? gaussian_mu_for(claim.epsilon, claim.delta) : 0.0;
  const std::vector<double> profile_grid = {0.0, 0.25 * claim.epsilon, 0.5 * claim.epsilon,
                                            claim.epsilon, 1.5 * claim.epsilon};
  double best_eps = kNegInf, best_excess = kNegInf;
  std::map<std::pair<std::size_t, std::size_t>, double> eps_cache;
  for (const Event& e : kEvents) {
    const int s = e.statistic;
    const auto& on_a = sorted[e.favours_neighbour ? 1 : 0][s];
    const auto& on_b = sorted[e.favours_neighbour ? 0 : 1][s];
    for (const double t : candidate_thresholds(on_a, on_b)) {
      const std::size_t x_a = count_event(on_a, t, e.upper), x_b = count_event(on_b, t, e.upper);
      if (x_a <= x_b) continue;
      auto [it, inserted] = eps_cache.try_emplace({x_a, x_b}, 0.0);
      if (inserted) it->second = epsilon_bound(x_a, x_b, half, claim.delta, alpha / 2.0);
      if (it->second > best_eps) {
        best_eps = it->second;
        ch.eps_event = &e;
        ch.eps_threshold = t;
      }
      if (claim.gaussian)
        for (const double ep : profile_grid) {
          const double excess = profile_excess(x_a, x_b, half, ep, mu, alpha / 2.0);
          if (excess > best_excess) {
            best_excess = excess;
            ch.profile_event = &e;
            ch.profile_threshold = t;
            ch.profile_eps = ep;
          }
        }
    }
  }

  return ch;
}

// Conformance: the noise variance measured over the runs on D against the one the release records.
void check_recorded_variance(const AuditPath& path, const AuditRuns& runs, std::size_t n, double alpha, AuditResult& result) {
  const std::size_t cells = path.exact.size();
  const auto& recorded = runs.recorded;
  if (!runs.recorded_consistent || recorded.size() != cells)
    throw Error("audit: path '" + path.name + "' records a noise variance of the wrong length");
  // Pooled variance around the per-value means; the runs are independent, so the spread of
  // w_i gives its standard error whatever the dependence between values within a release.
  const double dn = static_cast<double>(n);
  double mean_sq = 0.0, rec = 0.0;
  for (std::size_t c = 0; c < cells; ++c) {
    const double m = runs.cell_sum[c] / dn;
    mean_sq += m * m;
    rec += recorded[c];
  }
  mean_sq /= static_cast<double>(cells);
  rec /= static_cast<double>(cells);
  const double w_mean = runs.w_sum / dn;
  const double w_var = std::max(0.0, (runs.w_sq / dn - w_mean * w_mean) * dn / (dn - 1.0));
  const double z = boost::math::quantile(boost::math::normal(), 1.0 - alpha / 2.0);
  result.variance_tested = true;
  result.variance_measured = w_mean - mean_sq;
  result.variance_recorded = rec;
  // 0.2% slack for the recorded figures that are approximations (the rounding term 1/12).
  result.variance_tolerance = z * std::sqrt(w_var / dn) + 0.002 * rec;
  result.variance_ok = std::abs(result.variance_measured - rec) <= result.variance_tolerance;
}

}  // namespace

AuditResult run_audit(const AuditPath& path, const AuditOptions& options) {
  validate(path.claim, options);
  if (!path.release) throw UsageError("audit: path '" + path.name + "' has no release");
  if (path.exact.size() != path.exact_neighbour.size() || path.exact.empty())
    throw UsageError("audit: path '" + path.name + "': D and D' give outputs of different shapes");
  const auto t0 = std::chrono::steady_clock::now();
  AuditResult result;
  result.path = path.name;
  result.claim = path.claim;
  result.runs = options.runs;
  result.confidence = options.confidence;

  // The values D and D' change, and by how much.
  std::vector<std::size_t> changed;
  std::vector<double> diff;
  for (std::size_t c = 0; c < path.exact.size(); ++c)
    if (path.exact_neighbour[c] != path.exact[c]) {
      changed.push_back(c);
      diff.push_back(path.exact_neighbour[c] - path.exact[c]);
      result.l1_change += std::abs(diff.back());
    }
  if (changed.empty())
    throw UsageError("audit: path '" + path.name + "': D and D' give identical exact outputs; choose a neighbouring "
                     "record that changes the output");
  result.changed_values = changed.size();

  const std::size_t n = options.runs;
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  const AuditRuns runs = collect_runs(path, options, changed, diff, threads);
  const auto& stats = runs.stats;

  const double alpha = check_alpha(options.confidence);
  const std::size_t half = n / 2, measured = n - half;
  // Selection half: the events and their thresholds.
  const double mu = path.claim.gaussian ? gaussian_mu_for(path.claim.epsilon, path.claim.delta) : 0.0;
  const ChosenEvents ch = choose_events(runs, path.claim, half, alpha);

  // Measuring half: the chosen events, counted once.
  auto measure = [&](const Event& e, double t, std::size_t& x_a, std::size_t& x_b) {
    const double* a = stats[e.favours_neighbour ? 1 : 0][e.statistic].data() + half;
    const double* b = stats[e.favours_neighbour ? 0 : 1][e.statistic].data() + half;
    x_a = count_event_unsorted(a, measured, t, e.upper);
    x_b = count_event_unsorted(b, measured, t, e.upper);
  };
  {
    std::size_t x_a = 0, x_b = 0;
    measure(*ch.eps_event, ch.eps_threshold, x_a, x_b);
    result.epsilon_lower = std::max(0.0, epsilon_bound(x_a, x_b, measured, path.claim.delta, alpha / 2.0));
    result.epsilon_event = format_event(*ch.eps_event, ch.eps_threshold);
    result.p_a = static_cast<double>(x_a) / static_cast<double>(measured);
    result.p_b = static_cast<double>(x_b) / static_cast<double>(measured);
    result.epsilon_ok = result.epsilon_lower <= path.claim.epsilon;
  }
  if (path.claim.gaussian) {
    std::size_t x_a = 0, x_b = 0;
    measure(*ch.profile_event, ch.profile_threshold, x_a, x_b);
    result.profile_tested = true;
    result.profile_epsilon = ch.profile_eps;
    result.profile_delta_bound = gaussian_profile_delta(mu, ch.profile_eps);
    result.profile_delta_lower = std::max(0.0, clopper_pearson_lower(x_a, measured, alpha / 2.0) -
                                                   std::exp(ch.profile_eps) * clopper_pearson_upper(x_b, measured, alpha / 2.0));
    result.profile_ok = result.profile_delta_lower <= result.profile_delta_bound;
  }
  if (!runs.recorded.empty()) check_recorded_variance(path, runs, n, alpha, result);
  if (path.release_files) run_file_check(path, options, result, threads);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

namespace {
template <typename Row>
void check_multisets(std::vector<Row> a, std::vector<Row> b, NeighborRelation relation, const std::string& what) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<Row> only_a, only_b;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only_a));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only_b));
  const std::string counts = "D has " + std::to_string(a.size()) + " " + what + ", D' " + std::to_string(b.size()) +
                             "; " + std::to_string(only_a.size()) + " only in D, " + std::to_string(only_b.size()) +
                             " only in D'";
  if (relation == NeighborRelation::AddRemove) {
    const bool ok = (only_a.size() == 0 && only_b.size() == 1) || (only_a.size() == 1 && only_b.size() == 0);
    if (!ok) throw UsageError("audit: D and D' are not add-remove neighbours (they must differ by one record): " + counts);
  } else {
    if (!(only_a.size() == 1 && only_b.size() == 1))
      throw UsageError("audit: D and D' are not replace neighbours (one record of D must be replaced): " + counts);
  }
}
}  // namespace

void check_neighbours(const DenseMatrix& d, const DenseMatrix& d_prime, NeighborRelation relation) {
  if (d.cols() != d_prime.cols())
    throw UsageError("audit: D has " + std::to_string(d.cols()) + " columns, D' " + std::to_string(d_prime.cols()));
  auto rows = [](const DenseMatrix& m) {
    std::vector<std::vector<Real>> out;
    for (Eigen::Index i = 0; i < m.rows(); ++i) out.emplace_back(m.row(i).data(), m.row(i).data() + m.cols());
    return out;
  };
  check_multisets(rows(d), rows(d_prime), relation, "rows");
}

void check_neighbours(const SetCollection& d, const SetCollection& d_prime, NeighborRelation relation) {
  auto sets = [](const SetCollection& s) {
    std::vector<std::vector<std::uint32_t>> out;
    for (std::size_t i = 0; i < s.size(); ++i) out.emplace_back(s.set(i).begin(), s.set(i).end());
    return out;
  };
  check_multisets(sets(d), sets(d_prime), relation, "sets");
}

}  // namespace privrace::audit
