#pragma once
// Shared helpers for the tests: seeded data generators, a chi-square goodness-of-fit check,
// and scratch directories and files.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <span>
#include <string>

#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"
#include "privrace/lsh/gaussian.hpp"

namespace privrace::testing {

// n points in d dimensions: a mixture of 3 Gaussian clusters (seeded).
inline DenseMatrix clustered_points(std::size_t n, std::size_t d, std::uint64_t seed, double spread = 1.0) {
  SeededRandom rng(seed);
  DenseMatrix centres(3, static_cast<Eigen::Index>(d));
  fill_gaussian(rng, centres.data(), 3 * d);
  centres *= 3.0f;
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  fill_gaussian(rng, x.data(), n * d);
  x *= static_cast<float>(spread);
  for (Eigen::Index i = 0; i < x.rows(); ++i) x.row(i) += centres.row(static_cast<Eigen::Index>(rng.below(3)));
  return x;
}

// Pearson chi-square of observed counts against expected probabilities (bins with expected
// count < 5 are pooled into their neighbour). Returns {statistic, degrees of freedom}.
inline std::pair<double, double> chi_square(const std::map<long long, long long>& observed,
                                            const std::function<double(long long)>& pmf, long long lo, long long hi,
                                            long long total) {
  double stat = 0.0, df = -1.0, exp_acc = 0.0, obs_acc = 0.0;
  double tail_p = 1.0;
  for (long long k = lo; k <= hi; ++k) tail_p -= pmf(k);
  auto count_at = [&](long long k) {
    auto it = observed.find(k);
    return it == observed.end() ? 0.0 : static_cast<double>(it->second);
  };
  double outside = static_cast<double>(total);
  for (long long k = lo; k <= hi; ++k) outside -= count_at(k);
  for (long long k = lo; k <= hi; ++k) {
    exp_acc += pmf(k) * static_cast<double>(total);
    obs_acc += count_at(k);
    if (exp_acc >= 5.0) {
      stat += (obs_acc - exp_acc) * (obs_acc - exp_acc) / exp_acc;
      df += 1.0;
      exp_acc = obs_acc = 0.0;
    }
  }
  exp_acc += tail_p * static_cast<double>(total);
  obs_acc += outside;
  if (exp_acc > 0.0) {
    stat += (obs_acc - exp_acc) * (obs_acc - exp_acc) / exp_acc;
    df += 1.0;
  }
  return {stat, df};
}

// Upper 1e-4 quantile of chi-square(df), Wilson-Hilferty approximation (z = 3.719).
inline double chi_square_critical(double df) {
  const double z = 3.719, a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// A fresh directory under the system temp directory, removed with everything in it at scope end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "privrace-test-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Writes bytes to p, creating its parent directories.
inline void write(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// Reference definitions of the experiments' metrics (experiments/metrics.hpp) for the tests
// of the layers below the experiments, which do not link them; test_metrics checks that the
// fast versions agree with these.
// mean_i |est_i - truth_i| / |truth_i| over every i (the callers' truths are non-zero).
inline double reference_mean_relative_error(std::span<const double> est, std::span<const double> truth) {
  double e = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) e += std::abs(est[i] - truth[i]) / std::abs(truth[i]);
  return e / static_cast<double>(truth.size());
}
// ROC AUC from its definition: over all (positive, negative) pairs, 1 when the positive scores
// higher, 1/2 on a tie. O(P N).
inline double reference_auc(std::span<const double> score, std::span<const int> label) {
  double wins = 0, pairs = 0;
  for (std::size_t i = 0; i < score.size(); ++i)
    for (std::size_t j = 0; j < score.size(); ++j)
      if (label[i] != 0 && label[j] == 0) {
        wins += score[i] > score[j] ? 1.0 : score[i] == score[j] ? 0.5 : 0.0;
        pairs += 1;
      }
  return wins / pairs;
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("privrace_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The message of the exception f throws, or "(no exception)".
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// A command line run through the shell from `dir` (relative paths are relative to it): its exit
// code (-1 when a signal ended it), stdout and stderr.
struct CommandResult {
  int code;
  std::string out, err;
};
inline CommandResult run_command(const std::string& command, const std::filesystem::path& dir) {
  const std::filesystem::path err_file = dir / ".stderr";
  const std::string cmd = "cd '" + dir.string() + "' && " + command + " 2>'" + err_file.string() + "'";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  std::ifstream e(err_file);
  std::string err((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err};
}

}  // namespace privrace::testing
