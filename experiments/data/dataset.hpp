#pragma once
// Named data sets: the registry (datasets/registry.json), where the files are found, how they
// are parsed and preprocessed, and the synthetic stand-in used when a file is absent.
//
// Column numbers in the registry and in configs are 1-BASED positions in the file's rows
// (for libsvm: the feature index of "idx:val"). Numeric tables are read by TableReader;
// tables with text fields (dates, categorical levels, salary columns) by the engine's
// CsvFieldReader (same tokenizer, fields as text), because TableReader only returns numbers;
// the levels, money columns, filters and missing-value markers are interpreted here.
//
// This is experiment infrastructure (privrace_experiments), not part of the engine library.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "privrace/core/types.hpp"

namespace privrace {

class DatasetRegistry {
 public:
  // Throws InputError naming the file (and line:column for invalid JSON).
  static DatasetRegistry load(const std::string& path);
  // <repo_root>/datasets/registry.json.
  static DatasetRegistry load_from_repo(const std::string& repo_root);

  bool contains(const std::string& name) const;
  // UsageError "unknown data set 'x' (known: a, b, ...)".
  const nlohmann::json& entry(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& path() const { return path_; }
  const nlohmann::json& json() const { return json_; }

 private:
  std::string path_;
  nlohmann::json json_;
};

// How a loaded table is turned into the matrix a task sees (a config may override the
// registry's defaults key by key).
struct Preprocessing {
  std::vector<int> features;         // 1-based file columns; empty = the registry's list
  std::string categorical = "integer";  // integer (level index 0..k-1) | binary (one-hot, k columns)
  std::string scale = "none";        // none | unit_cube | unit_sphere | divide
  double divide_by = 1.0;            // scale = divide (salaries: 250000)
  std::size_t max_rows = 0;          // 0 = all; else a seeded uniform subsample
  // After `scale`: project onto the top pca_components principal directions of the loaded
  // rows (0 = no projection), then scale the projected columns by pca_scale (none |
  // unit_cube, from the projected data's range). The basis is fit on the data, so it is NOT
  // private: it is preprocessing of the kind the papers treat as public (like data bounds).
  std::size_t pca_components = 0;
  std::string pca_scale = "unit_cube";
  std::uint64_t subsample_seed = 1;
  std::vector<std::string> roles = {"data"};  // which of the entry's files to read

  // Fills from a JSON object ({"scale": ..., ...}); throws UsageError naming the key.
  static Preprocessing from_json(const nlohmann::json& j, const Preprocessing& defaults);
  static Preprocessing from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
};

// Principal components of the rows of x (double precision): the column means, the top k
// eigenvectors of the sample covariance (columns of `basis`, orthonormal, in order of
// decreasing variance) and their variances. Eigen's self-adjoint eigensolver on the d x d
// covariance, so it costs n d^2 + d^3. UsageError if k is 0 or above the column count.
struct PcaFit {
  Eigen::VectorXd mean;      // d
  Eigen::MatrixXd basis;     // d x k, orthonormal columns
  Eigen::VectorXd variance;  // k, descending (sample variance along each direction, divisor n - 1)
  double total_variance = 0;  // trace of the covariance
  // (x - mean) basis: n x k.
  DenseMatrix project(const DenseMatrix& x) const;
};
PcaFit fit_pca(const DenseMatrix& x, std::size_t k);

struct DataSearch {
  std::string data_dir;   // --data-dir ("" = none)
  std::string repo_root;  // for <repo>/datasets and <repo>/../shared/datasets
  bool allow_stand_in = true;
  bool verify_checksums = true;  // sha256 of each file against the registry (mismatch = warning)
};

// The directories searched, in order: --data-dir, $PRIVRACE_DATA, <repo>/datasets,
// <repo>/../shared/datasets (entries that are empty are left out).
std::vector<std::string> data_search_path(const DataSearch& search);

struct LoadedDataset {
  std::string name;
  DenseMatrix x;           // rows x d after preprocessing
  std::vector<double> y;   // label / target per row; empty when the entry has none
  std::vector<std::string> feature_names;
  bool stand_in = false;
  std::string stand_in_reason;     // why the stand-in was used
  std::string data_dir;            // where the files were found ("" for a stand-in)
  std::vector<std::string> files;  // files read
  std::string checksum_status = "not_checked";  // ok | mismatch | not_checked | no_reference
  std::size_t rows_skipped = 0;    // rows dropped by the entry's filters (e.g. hourly pay)
  std::size_t values_filled = 0;   // missing numeric values set to the entry's na_fill
  nlohmann::json preprocessing;    // what was applied, including the bounds used for scaling
  // Real data, but another version than the paper's (the registry entry's "substitute":
  // {"label": short, for plot titles; "detail": what differs}); null when the data is the
  // paper's own, and for a synthetic stand-in (stand_in says that).
  nlohmann::json substitute;

  // A small description for experiment records.
  nlohmann::json describe() const;
};

// Copies data.substitute into a record's data summary (key "substitute") when it is set.
void note_substitute(nlohmann::json& summary, const LoadedDataset& data);

// Loads a table data set. Graph entries (format snap_edgelist / jlg) are refused with a
// UsageError (they have their own loader). When no search directory holds every file, a
// seeded synthetic stand-in of the registry's shape is generated (LoadedDataset::stand_in)
// unless search.allow_stand_in is false (then InputError naming the directories tried).
// A file that does not match its entry (column count, unparsable field, unknown categorical
// level, label outside label_values) is an InputError naming file, row and what was found.
// Missing values (the entry's "na_values") drop the row, except numeric features when the
// entry has "na_fill" (set to that constant) and categorical values whose marker is listed
// among the column's levels (coded as a level of its own).
LoadedDataset load_dataset(const DatasetRegistry& registry, const std::string& name, const Preprocessing& prep,
                           const DataSearch& search);

// The synthetic stand-in alone (same shape as the entry; seeded).
LoadedDataset make_stand_in(const DatasetRegistry& registry, const std::string& name, const Preprocessing& prep,
                            std::uint64_t seed, const std::string& reason);

// Hex SHA-256 of a file's bytes (InputError if it cannot be read).
std::string sha256_file(const std::string& path);
std::string sha256_hex(const void* data, std::size_t size);

// A seeded split: `count` rows chosen uniformly as queries / test rows, the rest kept.
struct Split {
  std::vector<std::size_t> held_out, kept;
};
Split seeded_split(std::size_t rows, std::size_t count, std::uint64_t seed);
DenseMatrix select_rows(const DenseMatrix& x, const std::vector<std::size_t>& rows);

}  // namespace privrace
