#include "data/dataset.hpp"

#include <openssl/evp.h>

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/io/table_reader.hpp"
#include "privrace/lsh/gaussian.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace privrace {

namespace {

// "line L, column C" of a byte offset, for JSON parse errors.
std::string line_col(const std::string& text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

std::string shown(const std::string& s) {
  std::string t = s.size() > 40 ? s.substr(0, 40) + "..." : s;
  return "'" + t + "'";
}

bool parse_number(const std::string& field, bool money, double& out) {
  std::string s = field;
  if (money) {
    s.erase(std::remove(s.begin(), s.end(), ','), s.end());
    if (!s.empty() && s[0] == '$') s.erase(0, 1);
  }
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  const auto [ptr, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && ptr == e && std::isfinite(out);
}

// The parsed table before preprocessing: selected feature columns (categorical ones hold
// the 0-based level index), their level counts (0 = numeric), and the labels.
struct RawTable {
  DenseMatrix x;
  std::vector<int> levels;
  std::vector<double> y;
  std::vector<std::string> names;
  std::size_t skipped = 0;
  std::size_t filled = 0;  // missing numeric values replaced by the entry's na_fill
};

int as_int(const json& j, const char* key, int fallback) {
  return j.contains(key) && j.at(key).is_number_integer() ? j.at(key).get<int>() : fallback;
}

std::vector<int> int_list(const json& entry, const char* key) {
  std::vector<int> out;
  if (entry.contains(key) && entry.at(key).is_array())
    for (const auto& v : entry.at(key)) out.push_back(v.get<int>());
  return out;
}

std::map<int, std::vector<std::string>> categorical_levels(const json& entry) {
  std::map<int, std::vector<std::string>> out;
  if (entry.contains("categorical"))
    for (const auto& [col, levels] : entry.at("categorical").items())
      out[std::stoi(col)] = levels.get<std::vector<std::string>>();
  return out;
}

std::vector<int> selected_features(const std::string& name, const json& entry, const Preprocessing& prep) {
  std::vector<int> cols = prep.features.empty() ? int_list(entry, "features") : prep.features;
  if (cols.empty())
    throw UsageError("data set '" + name + "': the registry has no default feature list" +
                     (entry.contains("notes") ? " (" + entry.at("notes").get<std::string>() + ")" : std::string()) +
                     "; give preprocessing.features");
  const int label = as_int(entry, "label", -1);
  for (const int c : cols) {
    if (c < 1) throw UsageError("data set '" + name + "': feature column " + std::to_string(c) + " is not a 1-based column");
    if (c == label && entry.value("format", "") != "libsvm")
      throw UsageError("data set '" + name + "': column " + std::to_string(c) + " is the label, not a feature");
  }
  return cols;
}

std::vector<std::string> feature_names(const json& entry, const std::vector<int>& cols) {
  const auto reg_cols = int_list(entry, "features");
  std::vector<std::string> reg_names;
  if (entry.contains("feature_names")) reg_names = entry.at("feature_names").get<std::vector<std::string>>();
  std::vector<std::string> out;
  for (const int c : cols) {
    const auto it = std::find(reg_cols.begin(), reg_cols.end(), c);
    const std::size_t k = static_cast<std::size_t>(it - reg_cols.begin());
    out.push_back(it != reg_cols.end() && k < reg_names.size() ? reg_names[k] : "col" + std::to_string(c));
  }
  return out;
}

void check_label(const std::string& name, const json& entry, double v, const std::string& file, std::size_t row) {
  if (!entry.contains("label_values")) return;
  for (const auto& allowed : entry.at("label_values"))
    if (allowed.get<double>() == v) return;
  std::ostringstream os;
  os << file << ": data row " << row << ": label " << v << " is not one of " << entry.at("label_values").dump()
     << " (registry entry '" << name << "')";
  throw InputError(os.str());
}

// Numeric tables (csv / whitespace / libsvm) through TableReader.
void read_numeric_file(const std::string& name, const json& entry, const json& file_entry, const std::string& path,
                       const std::vector<int>& cols, RawTable& out) {
  const std::string format = entry.at("format").get<std::string>();
  TableOptions opts;
  opts.format = parse_table_format(format);
  const int label = as_int(entry, "label", 0);
  if (format == "libsvm") {
    opts.dim = static_cast<std::size_t>(as_int(entry, "dim", 0));
  } else {
    opts.label_column = std::max(label, 0);
    opts.header = file_entry.value("header", entry.value("header", false));
  }
  TableReader reader(path, opts);
  const int expected_columns = as_int(file_entry, "columns", as_int(entry, "columns", 0));
  if (format != "libsvm" && expected_columns > 0) {
    const std::size_t found = reader.dim() + (label > 0 ? 1 : 0);
    if (found != static_cast<std::size_t>(expected_columns))
      throw InputError(path + ": data row 1: registry entry '" + name + "' expects " + std::to_string(expected_columns) +
                       " columns, found " + std::to_string(found));
  }
  std::vector<Eigen::Index> index;
  for (const int c : cols) {
    long k = c - 1;
    if (format != "libsvm" && label > 0 && c > label) --k;
    if (k < 0 || static_cast<std::size_t>(k) >= reader.dim())
      throw InputError(path + ": feature column " + std::to_string(c) + " is outside the " +
                       std::to_string(reader.dim() + (label > 0 ? 1 : 0)) + " columns of the file");
    index.push_back(static_cast<Eigen::Index>(k));
  }
  DenseMatrix chunk;
  std::vector<double> labels;
  for (;;) {
    const std::size_t before = reader.rows_read();
    const std::size_t n = reader.next_chunk(chunk, 1 << 16, label != -1 ? &labels : nullptr);
    if (n == 0) break;
    const Eigen::Index base = out.x.rows();
    out.x.conservativeResize(base + static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(cols.size()));
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < index.size(); ++j)
        out.x(base + static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) =
            chunk(static_cast<Eigen::Index>(i), index[j]);
      if (reader.has_labels() && label >= 0) {
        check_label(name, entry, labels[i], path, before + i + 1);
        out.y.push_back(labels[i]);
      }
    }
  }
}

// How the registry says a text table's fields are read: header, field count, label column,
// categorical levels, money columns, unparsable columns to skip, missing-value markers, the
// missing-value fill and the row filters.
struct TextTableRules {
  bool header = false;
  int expected = 0;  // fields a row (0: any)
  int label = 0;     // 1-based label column (0: none)
  std::map<int, std::vector<std::string>> levels;
  std::vector<int> money_cols, skip_cols;
  std::set<std::string> na;
  // "na_fill": a missing numeric feature takes this public constant instead of dropping the
  // row (a data-independent imputation, so it costs no privacy; Nomao has a '?' in most rows).
  // A missing categorical value drops the row unless the marker is listed as a level of its
  // own (then it is coded like any level); a missing label always drops the row.
  std::optional<double> na_fill;
  std::vector<std::pair<int, std::string>> filters;  // (column, value): rows whose column differs are dropped

  static TextTableRules of(const std::string& name, const json& entry, const json& file_entry) {
    TextTableRules r;
    r.header = file_entry.value("header", entry.value("header", false));
    r.expected = as_int(file_entry, "columns", as_int(entry, "columns", 0));
    r.label = as_int(entry, "label", 0);
    r.levels = categorical_levels(entry);
    r.money_cols = int_list(entry, "money");
    r.skip_cols = int_list(entry, "skip_unparsable");
    if (entry.contains("na_values"))
      for (const auto& v : entry.at("na_values")) r.na.insert(v.get<std::string>());
    if (entry.contains("na_fill") && !entry.at("na_fill").is_null()) {
      if (!entry.at("na_fill").is_number())
        throw InputError("registry entry '" + name + "': na_fill: expected a number, found " + entry.at("na_fill").dump());
      r.na_fill = entry.at("na_fill").get<double>();
    }
    if (entry.contains("filters"))
      for (const auto& f : entry.at("filters")) r.filters.emplace_back(f.at("column").get<int>(), f.at("equals").get<std::string>());
    return r;
  }

  // The value of 1-based column c of a row's fields into v: 1 read, 0 the row is dropped (a
  // missing or unparsable value the rules allow to skip); InputError `where` + what is wrong
  // otherwise. `filled` counts the missing values filled.
  int value_of(const std::string& name, const std::string& where, const std::vector<std::string>& fields, int c, double& v,
               std::size_t& filled) const {
    if (static_cast<std::size_t>(c) > fields.size())
      throw InputError(where + "column " + std::to_string(c) + " is missing (" + std::to_string(fields.size()) + " fields)");
    const std::string& f = fields[static_cast<std::size_t>(c - 1)];
    if (const auto it = levels.find(c); it != levels.end()) {
      const auto& lv = it->second;
      const auto pos = std::find(lv.begin(), lv.end(), f);
      if (pos == lv.end() && na.count(f)) return 0;
      if (pos == lv.end())
        throw InputError(where + "column " + std::to_string(c) + ": " + shown(f) + " is not a level of registry entry '" +
                         name + "' (expected one of " + join(lv, ", ") + ")");
      v = static_cast<double>(pos - lv.begin());
      return 1;
    }
    if (na.count(f)) {
      if (!na_fill || c == label) return 0;
      v = *na_fill;
      ++filled;
      return 1;
    }
    const auto is_in = [](const std::vector<int>& cs, int col) { return std::find(cs.begin(), cs.end(), col) != cs.end(); };
    if (parse_number(f, is_in(money_cols, c), v)) return 1;
    if (is_in(skip_cols, c)) return 0;
    throw InputError(where + "column " + std::to_string(c) + ": expected a number, found " + shown(f) +
                     " (registry entry '" + name + "')");
  }
};

// Tables with text fields: categorical levels, money columns ("$1,234"), row filters on text
// columns, missing-value markers. TableReader only returns numbers, so these go through the
// engine's CsvFieldReader (the same CSV tokenizer, fields as text) and are interpreted here.
void read_text_file_table(const std::string& name, const json& entry, const json& file_entry, const std::string& path,
                          const std::vector<int>& cols, RawTable& out) {
  CsvFieldReader reader(path);
  const TextTableRules rules = TextTableRules::of(name, entry, file_entry);
  std::vector<std::string> fields;
  std::vector<float> values;
  std::vector<double> labels;
  std::size_t data_row = 0, skipped = 0, filled = 0;
  if (rules.header) reader.next(fields);
  // One data row; returns without adding it when a filter or a missing value drops it.
  auto read_row = [&] {
    ++data_row;
    const std::string where =
        path + ":" + std::to_string(reader.line_no()) + ": data row " + std::to_string(data_row) + ": ";
    if (rules.expected > 0 && fields.size() != static_cast<std::size_t>(rules.expected))
      throw InputError(where + "registry entry '" + name + "' expects " + std::to_string(rules.expected) + " fields, found " +
                       std::to_string(fields.size()));
    for (const auto& [c, want] : rules.filters)
      if (static_cast<std::size_t>(c) > fields.size() || trim(fields[static_cast<std::size_t>(c - 1)]) != want) {
        ++skipped;
        return;
      }
    const std::size_t start = values.size(), filled_before = filled;
    const auto drop = [&] {
      values.resize(start);
      filled = filled_before;
      ++skipped;
    };
    for (const int c : cols) {
      double v = 0;
      if (!rules.value_of(name, where, fields, c, v, filled)) return drop();
      values.push_back(static_cast<float>(v));
    }
    if (rules.label > 0) {
      double v = 0;
      if (!rules.value_of(name, where, fields, rules.label, v, filled)) return drop();
      if (!rules.levels.count(rules.label)) check_label(name, entry, v, path, data_row);
      labels.push_back(v);
    }
  };
  while (reader.next(fields)) read_row();
  const std::size_t n = values.size() / std::max<std::size_t>(cols.size(), 1);
  if (n == 0) throw InputError(path + ": no data rows (registry entry '" + name + "')");
  const Eigen::Index base = out.x.rows();
  out.x.conservativeResize(base + static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < cols.size(); ++j)
      out.x(base + static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = values[i * cols.size() + j];
  out.y.insert(out.y.end(), labels.begin(), labels.end());
  out.skipped += skipped;
  out.filled += filled;
}

std::vector<const json*> files_with_roles(const json& entry, const std::vector<std::string>& roles) {
  std::vector<const json*> out;
  for (const auto& f : entry.at("files"))
    if (std::find(roles.begin(), roles.end(), f.value("role", "data")) != roles.end()) out.push_back(&f);
  return out;
}

std::vector<int> column_levels(const json& entry, const std::vector<int>& cols) {
  const auto levels = categorical_levels(entry);
  std::vector<int> out;
  for (const int c : cols) {
    const auto it = levels.find(c);
    out.push_back(it == levels.end() ? 0 : static_cast<int>(it->second.size()));
  }
  return out;
}

// Public domain bounds of a column from the registry ("bounds" aligned with "features").
std::optional<std::pair<double, double>> registry_bounds(const json& entry, int col) {
  if (!entry.contains("bounds")) return std::nullopt;
  const auto reg_cols = int_list(entry, "features");
  const auto it = std::find(reg_cols.begin(), reg_cols.end(), col);
  const auto k = static_cast<std::size_t>(it - reg_cols.begin());
  if (it == reg_cols.end() || k >= entry.at("bounds").size()) return std::nullopt;
  return std::make_pair(entry.at("bounds")[k][0].get<double>(), entry.at("bounds")[k][1].get<double>());
}

// Subsample first, so every later step sees the rows that are used.
void subsample(const Preprocessing& prep, RawTable& raw) {
  if (!(prep.max_rows > 0 && static_cast<std::size_t>(raw.x.rows()) > prep.max_rows)) return;
  Split s = seeded_split(static_cast<std::size_t>(raw.x.rows()), prep.max_rows, prep.subsample_seed);
  std::sort(s.held_out.begin(), s.held_out.end());
  raw.x = select_rows(raw.x, s.held_out);
  if (!raw.y.empty()) {
    std::vector<double> y;
    for (const auto i : s.held_out) y.push_back(raw.y[i]);
    raw.y = std::move(y);
  }
}

// The public bounds of each output column: the coding's, else the registry's (public), else
// none (the data's own range is then used by unit_cube scaling, and recorded as such).
struct ColumnBounds {
  std::vector<std::pair<double, double>> bounds;
  std::vector<bool> is_public;
};

// Categorical coding: binary coding expands a column of k levels into k one-hot columns.
// Fills out.x and out.feature_names; returns each output column's bounds.
ColumnBounds encode_columns(const json& entry, const Preprocessing& prep, const std::vector<int>& cols, const RawTable& raw,
                            LoadedDataset& out) {
  const auto names = feature_names(entry, cols);
  ColumnBounds cb;
  auto& bounds = cb.bounds;
  auto& bounds_public = cb.is_public;
  std::vector<Eigen::Index> source;  // output column -> raw column (binary coding expands)
  std::vector<int> level_of;         // output column -> level for one-hot, -1 = copy
  for (std::size_t j = 0; j < cols.size(); ++j) {
    const int k = raw.levels[j];
    if (k > 0 && prep.categorical == "binary") {
      for (int l = 0; l < k; ++l) {
        source.push_back(static_cast<Eigen::Index>(j));
        level_of.push_back(l);
        out.feature_names.push_back(names[j] + "=" + std::to_string(l));
        bounds.emplace_back(0.0, 1.0);
        bounds_public.push_back(true);
      }
    } else {
      source.push_back(static_cast<Eigen::Index>(j));
      level_of.push_back(-1);
      out.feature_names.push_back(names[j]);
      if (k > 0) {
        bounds.emplace_back(0.0, static_cast<double>(k - 1));
        bounds_public.push_back(true);
      } else if (const auto b = registry_bounds(entry, cols[j])) {
        bounds.push_back(*b);
        bounds_public.push_back(true);
      } else {
        bounds.emplace_back(0.0, 0.0);
        bounds_public.push_back(false);
      }
    }
  }
  const Eigen::Index n = raw.x.rows(), d = static_cast<Eigen::Index>(source.size());
  out.x.resize(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j) {
      const float v = raw.x(i, source[static_cast<std::size_t>(j)]);
      const int l = level_of[static_cast<std::size_t>(j)];
      out.x(i, j) = l < 0 ? v : (static_cast<int>(v) == l ? 1.0f : 0.0f);
    }
  return cb;
}

// The declared scaling of every column (unit_cube from the columns' bounds, unit_sphere by the
// largest row norm, or a divisor), recorded in `applied`.
void scale_columns(const Preprocessing& prep, const ColumnBounds& cb, LoadedDataset& out, json& applied) {
  const Eigen::Index n = out.x.rows(), d = out.x.cols();
  const auto& bounds = cb.bounds;
  const auto& bounds_public = cb.is_public;
  if (prep.scale == "unit_cube") {
    json used = json::array();
    for (Eigen::Index j = 0; j < d; ++j) {
      auto [lo, hi] = bounds[static_cast<std::size_t>(j)];
      if (!bounds_public[static_cast<std::size_t>(j)] && n > 0) {
        // No public bounds in the registry: the data's own range (fine for experiments, but
        // it is not private: a release would need public bounds).
        lo = out.x.col(j).minCoeff();
        hi = out.x.col(j).maxCoeff();
      }
      used.push_back({{"lo", lo}, {"hi", hi}, {"from", bounds_public[static_cast<std::size_t>(j)] ? "registry" : "data"}});
      const double span = hi - lo;
      for (Eigen::Index i = 0; i < n; ++i)
        out.x(i, j) = span > 0 ? static_cast<float>(std::clamp((out.x(i, j) - lo) / span, 0.0, 1.0)) : 0.0f;
    }
    applied["bounds"] = used;
  } else if (prep.scale == "unit_sphere") {
    double max_norm = 0;
    for (Eigen::Index i = 0; i < n; ++i) max_norm = std::max(max_norm, static_cast<double>(out.x.row(i).norm()));
    if (max_norm > 0) out.x /= static_cast<float>(max_norm);
    applied["divided_by_max_norm"] = max_norm;
  } else if (prep.scale == "divide") {
    out.x /= static_cast<float>(prep.divide_by);
  }
}

// Principal components (after scaling, so the declared scaling decides what "variance" means:
// with unit_cube every feature's range counts equally), recorded in `applied`.
void project_pca(const std::string& name, const Preprocessing& prep, LoadedDataset& out, json& applied) {
  const Eigen::Index n = out.x.rows(), d = out.x.cols();
  if (prep.pca_components > static_cast<std::size_t>(d))
    throw UsageError("data set '" + name + "': preprocessing.pca.components = " + std::to_string(prep.pca_components) +
                     " exceeds the " + std::to_string(d) + " features");
  if (n < 2) throw UsageError("data set '" + name + "': preprocessing.pca needs at least 2 rows");
  const PcaFit pca = fit_pca(out.x, prep.pca_components);
  out.x = pca.project(out.x);
  const auto k = static_cast<Eigen::Index>(prep.pca_components);
  json used = json::array();
  if (prep.pca_scale == "unit_cube") {
    for (Eigen::Index j = 0; j < k; ++j) {
      const double lo = out.x.col(j).minCoeff(), hi = out.x.col(j).maxCoeff(), span = hi - lo;
      used.push_back({{"lo", lo}, {"hi", hi}, {"from", "data"}});
      for (Eigen::Index i = 0; i < n; ++i)
        out.x(i, j) = span > 0 ? static_cast<float>(std::clamp((out.x(i, j) - lo) / span, 0.0, 1.0)) : 0.0f;
    }
  }
  std::vector<double> ratio(static_cast<std::size_t>(k));
  for (Eigen::Index j = 0; j < k; ++j)
    ratio[static_cast<std::size_t>(j)] = pca.total_variance > 0 ? pca.variance(j) / pca.total_variance : 0.0;
  std::vector<std::vector<double>> basis(static_cast<std::size_t>(k));
  for (Eigen::Index j = 0; j < k; ++j) basis[static_cast<std::size_t>(j)].assign(pca.basis.col(j).data(), pca.basis.col(j).data() + d);
  applied["pca"] = {{"components", prep.pca_components},
                    {"input_dim", d},
                    {"scale", prep.pca_scale},
                    {"explained_variance", std::vector<double>(pca.variance.data(), pca.variance.data() + k)},
                    {"explained_variance_ratio", ratio},
                    {"fit_on", "every loaded row (held-out queries included), after the scaling above"},
                    {"private", false},
                    {"mean", std::vector<double>(pca.mean.data(), pca.mean.data() + d)},
                    {"basis", basis}};
  if (prep.pca_scale == "unit_cube") applied["pca"]["bounds"] = used;
  std::vector<std::string> pc_names;
  for (Eigen::Index j = 0; j < k; ++j) pc_names.push_back("pc" + std::to_string(j + 1));
  out.feature_names = pc_names;
}

LoadedDataset finish(const std::string& name, const json& entry, const Preprocessing& prep, const std::vector<int>& cols,
                     RawTable raw) {
  LoadedDataset out;
  out.name = name;
  json applied = prep.to_json();
  applied["features"] = cols;
  subsample(prep, raw);
  const ColumnBounds cb = encode_columns(entry, prep, cols, raw, out);
  scale_columns(prep, cb, out, applied);
  if (prep.pca_components > 0) project_pca(name, prep, out, applied);
  out.y = std::move(raw.y);
  out.rows_skipped = raw.skipped;
  out.values_filled = raw.filled;
  out.preprocessing = applied;
  return out;
}

std::uint64_t name_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

// SHA-256 through OpenSSL's EVP interface, for checking data files against the registry.
namespace {

std::string hex_digest(const unsigned char* md, unsigned len) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out += digits[md[i] >> 4];
    out += digits[md[i] & 15];
  }
  return out;
}

[[noreturn]] void openssl_failure(const char* what) {
  throw Error(std::string("sha256: OpenSSL ") + what + " failed");
}

}  // namespace

std::string sha256_hex(const void* data, std::size_t size) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_Digest(data, size, md, &len, EVP_sha256(), nullptr) != 1) openssl_failure("EVP_Digest");
  return hex_digest(md, len);
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) openssl_failure("EVP_DigestInit_ex");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = in.gcount();
    if (got > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(got)) != 1)
      openssl_failure("EVP_DigestUpdate");
  }
  if (in.bad()) throw InputError("cannot read '" + path + "'");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) openssl_failure("EVP_DigestFinal_ex");
  return hex_digest(md, len);
}

// ---------------------------------------------------------------------------------------
// Registry

DatasetRegistry DatasetRegistry::load(const std::string& path) {
  DatasetRegistry r;
  r.path_ = path;
  const std::string text = read_text_file(path);
  try {
    r.json_ = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path + ":" + line_col(text, e.byte == 0 ? 0 : e.byte - 1) + ": not valid JSON: " + e.what());
  }
  if (!r.json_.is_object() || !r.json_.contains("datasets") || !r.json_.at("datasets").is_object())
    throw InputError(path + ": $.datasets: expected an object of data set entries");
  for (const auto& [name, e] : r.json_.at("datasets").items()) {
    if (!e.is_object() || !e.contains("files") || !e.at("files").is_array() || !e.contains("format"))
      throw InputError(path + ": $.datasets." + name + ": expected an object with 'files' and 'format'");
  }
  return r;
}

DatasetRegistry DatasetRegistry::load_from_repo(const std::string& repo_root) {
  return load((fs::path(repo_root) / "datasets" / "registry.json").string());
}

bool DatasetRegistry::contains(const std::string& name) const { return json_.at("datasets").contains(name); }

const json& DatasetRegistry::entry(const std::string& name) const {
  if (!contains(name)) throw UsageError("unknown data set '" + name + "' (known: " + join(names(), ", ") + ")");
  return json_.at("datasets").at(name);
}

std::vector<std::string> DatasetRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : json_.at("datasets").items()) out.push_back(name);
  return out;
}

// ---------------------------------------------------------------------------------------
// Preprocessing

Preprocessing Preprocessing::from_json(const json& j, const Preprocessing& defaults) {
  Preprocessing p = defaults;
  if (j.is_null()) return p;
  if (!j.is_object()) throw UsageError("preprocessing: expected an object");
  for (const auto& [key, v] : j.items()) {
    if (key == "features") {
      if (!v.is_array()) throw UsageError("preprocessing.features: expected an array of 1-based column numbers");
      p.features.clear();
      for (const auto& c : v) {
        if (!c.is_number_integer() || c.get<int>() < 1)
          throw UsageError("preprocessing.features: expected an array of 1-based column numbers");
        p.features.push_back(c.get<int>());
      }
    } else if (key == "categorical") {
      if (!v.is_string() || (v != "integer" && v != "binary"))
        throw UsageError("preprocessing.categorical: expected \"integer\" or \"binary\"");
      p.categorical = v.get<std::string>();
    } else if (key == "scale") {
      if (!v.is_string() || (v != "none" && v != "unit_cube" && v != "unit_sphere" && v != "divide"))
        throw UsageError("preprocessing.scale: expected one of \"none\", \"unit_cube\", \"unit_sphere\", \"divide\"");
      p.scale = v.get<std::string>();
    } else if (key == "divide_by") {
      if (!v.is_number() || !(v.get<double>() > 0)) throw UsageError("preprocessing.divide_by: expected a positive number");
      p.divide_by = v.get<double>();
    } else if (key == "max_rows") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) throw UsageError("preprocessing.max_rows: expected a non-negative integer");
      p.max_rows = v.get<std::size_t>();
    } else if (key == "subsample_seed") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) throw UsageError("preprocessing.subsample_seed: expected a non-negative integer");
      p.subsample_seed = v.get<std::uint64_t>();
    } else if (key == "pca") {
      // {"components": k, "scale": "unit_cube" | "none"}
      if (!v.is_object()) throw UsageError("preprocessing.pca: expected an object {\"components\": k, \"scale\": ...}");
      for (const auto& [pk, pv] : v.items()) {
        if (pk == "components") {
          if (!pv.is_number_integer() || pv.get<std::int64_t>() < 1)
            throw UsageError("preprocessing.pca.components: expected a positive integer");
          p.pca_components = pv.get<std::size_t>();
        } else if (pk == "scale") {
          if (!pv.is_string() || (pv != "none" && pv != "unit_cube"))
            throw UsageError("preprocessing.pca.scale: expected \"none\" or \"unit_cube\"");
          p.pca_scale = pv.get<std::string>();
        } else {
          throw UsageError("preprocessing.pca." + pk + ": unknown key (expected components, scale)");
        }
      }
      if (p.pca_components == 0) throw UsageError("preprocessing.pca.components: missing (a positive integer)");
    } else if (key == "roles") {
      if (!v.is_array() || v.empty()) throw UsageError("preprocessing.roles: expected a non-empty array of file roles");
      p.roles = v.get<std::vector<std::string>>();
    } else {
      throw UsageError("preprocessing." + key +
                       ": unknown key (expected features, categorical, scale, divide_by, max_rows, subsample_seed, pca, roles)");
    }
  }
  return p;
}

Preprocessing Preprocessing::from_json(const json& j) { return from_json(j, Preprocessing()); }

json Preprocessing::to_json() const {
  json j = {{"categorical", categorical}, {"scale", scale}, {"roles", roles}};
  if (!features.empty()) j["features"] = features;
  if (scale == "divide") j["divide_by"] = divide_by;
  if (max_rows) {
    j["max_rows"] = max_rows;
    j["subsample_seed"] = subsample_seed;
  }
  if (pca_components) j["pca"] = {{"components", pca_components}, {"scale", pca_scale}};
  return j;
}

PcaFit fit_pca(const DenseMatrix& x, std::size_t k) {
  const Eigen::Index n = x.rows(), d = x.cols();
  if (k == 0 || k > static_cast<std::size_t>(d))
    throw UsageError("pca: " + std::to_string(k) + " components of " + std::to_string(d) + " features");
  if (n < 2) throw UsageError("pca: needs at least 2 rows");
  const Eigen::MatrixXd xd = x.cast<double>();
  PcaFit fit;
  fit.mean = xd.colwise().mean().transpose();
  const Eigen::MatrixXd centred = xd.rowwise() - fit.mean.transpose();
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(d, d);
  cov.selfadjointView<Eigen::Lower>().rankUpdate(centred.transpose());
  cov = cov.selfadjointView<Eigen::Lower>();
  cov /= static_cast<double>(n - 1);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(cov);
  if (eig.info() != Eigen::Success) throw Error("pca: the covariance eigensolver did not converge");
  // Eigen orders eigenvalues ascending: take the last k, reversed.
  const auto kk = static_cast<Eigen::Index>(k);
  fit.basis.resize(d, kk);
  fit.variance.resize(kk);
  for (Eigen::Index j = 0; j < kk; ++j) {
    fit.basis.col(j) = eig.eigenvectors().col(d - 1 - j);
    fit.variance(j) = std::max(0.0, eig.eigenvalues()(d - 1 - j));
    // Sign convention (eigenvectors are defined up to sign): the largest |entry| is positive.
    Eigen::Index at;
    fit.basis.col(j).cwiseAbs().maxCoeff(&at);
    if (fit.basis(at, j) < 0) fit.basis.col(j) = -fit.basis.col(j);
  }
  fit.total_variance = std::max(0.0, eig.eigenvalues().sum());
  return fit;
}

DenseMatrix PcaFit::project(const DenseMatrix& x) const {
  const Eigen::MatrixXd centred = x.cast<double>().rowwise() - mean.transpose();
  return (centred * basis).cast<Real>();
}

json LoadedDataset::describe() const {
  json j = {{"name", name},
            {"rows", x.rows()},
            {"dim", x.cols()},
            {"stand_in", stand_in},
            {"checksum", checksum_status},
            {"rows_skipped", rows_skipped},
            {"values_filled", values_filled},
            {"preprocessing", preprocessing}};
  if (stand_in) j["stand_in_reason"] = stand_in_reason;
  if (!data_dir.empty()) j["data_dir"] = data_dir;
  note_substitute(j, *this);
  return j;
}

void note_substitute(json& summary, const LoadedDataset& data) {
  if (!data.substitute.is_null()) summary["substitute"] = data.substitute;
}

// ---------------------------------------------------------------------------------------
// Search and loading

std::vector<std::string> data_search_path(const DataSearch& search) {
  std::vector<std::string> dirs;
  if (!search.data_dir.empty()) dirs.push_back(search.data_dir);
  if (const char* env = std::getenv("PRIVRACE_DATA"); env && *env) dirs.emplace_back(env);
  if (!search.repo_root.empty()) {
    dirs.push_back((fs::path(search.repo_root) / "datasets").string());
    // "--repo ." or "repo/" has no parent to take: the sibling shared/ is found from the
    // absolute, normalised root.
    fs::path root = fs::absolute(search.repo_root).lexically_normal();
    if (root.filename().empty()) root = root.parent_path();
    dirs.push_back((root.parent_path() / "shared" / "datasets").string());
  }
  return dirs;
}

Split seeded_split(std::size_t rows, std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> idx(rows);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  SeededRandom rng(seed);
  count = std::min(count, rows);
  // Partial Fisher-Yates: the first `count` slots are a uniform sample without replacement.
  for (std::size_t i = 0; i < count; ++i) std::swap(idx[i], idx[i + rng.below(rows - i)]);
  Split s;
  s.held_out.assign(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(count));
  s.kept.assign(idx.begin() + static_cast<std::ptrdiff_t>(count), idx.end());
  std::sort(s.kept.begin(), s.kept.end());  // keeps the file order of the sketched rows
  return s;
}

DenseMatrix select_rows(const DenseMatrix& x, const std::vector<std::size_t>& rows) {
  DenseMatrix out(static_cast<Eigen::Index>(rows.size()), x.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = x.row(static_cast<Eigen::Index>(rows[i]));
  return out;
}

LoadedDataset make_stand_in(const DatasetRegistry& registry, const std::string& name, const Preprocessing& prep,
                            std::uint64_t seed, const std::string& reason) {
  const json& entry = registry.entry(name);
  if (entry.value("kind", "table") != "table")
    throw UsageError("data set '" + name + "' is a graph; the table stand-in does not apply");
  const json si = entry.value("stand_in", json::object());
  std::vector<int> cols;
  if (prep.features.empty() && int_list(entry, "features").empty()) {
    const int dim = as_int(si, "dim", 1);
    for (int c = 1; c <= dim; ++c) cols.push_back(c);
  } else {
    cols = selected_features(name, entry, prep);
  }
  const std::size_t rows = static_cast<std::size_t>(si.value("rows", entry.value("rows", 1000)));
  RawTable raw;
  raw.levels = column_levels(entry, cols);
  const Eigen::Index d = static_cast<Eigen::Index>(cols.size());
  raw.x.resize(static_cast<Eigen::Index>(rows), d);
  SeededRandom rng(derive_seed(seed, name_hash(name)));
  // A mixture of 5 Gaussian clusters inside each column's range: a density with structure,
  // so KDE errors and classifiers behave roughly as on real data.
  constexpr int kClusters = 5;
  Eigen::MatrixXd centres(kClusters, d), spread(kClusters, d);
  std::vector<std::pair<double, double>> range;
  for (Eigen::Index j = 0; j < d; ++j) {
    auto b = registry_bounds(entry, cols[static_cast<std::size_t>(j)]);
    range.push_back(b ? *b : std::make_pair(0.0, 1.0));
    for (int k = 0; k < kClusters; ++k) {
      centres(k, j) = range.back().first + (0.15 + 0.7 * rng.unit()) * (range.back().second - range.back().first);
      spread(k, j) = (0.03 + 0.1 * rng.unit()) * (range.back().second - range.back().first);
    }
  }
  const bool has_label = as_int(entry, "label", -1) >= 0 && !entry.at("label").is_null();
  const auto label_levels = categorical_levels(entry);
  std::vector<double> label_values;
  if (entry.contains("label_values")) label_values = entry.at("label_values").get<std::vector<double>>();
  const int label = as_int(entry, "label", -1);
  const int label_k = label_levels.count(label) ? static_cast<int>(label_levels.at(label).size()) : 0;
  Eigen::VectorXd weights(d);
  for (Eigen::Index j = 0; j < d; ++j) weights(j) = rng.unit() - 0.5;
  for (std::size_t i = 0; i < rows; ++i) {
    const int k = static_cast<int>(rng.below(kClusters));
    double target = 0;
    for (Eigen::Index j = 0; j < d; ++j) {
      const int lv = raw.levels[static_cast<std::size_t>(j)];
      double v;
      if (lv > 0) {
        v = static_cast<double>((static_cast<std::uint64_t>(k) + rng.below(2)) % static_cast<std::uint64_t>(lv));
      } else {
        double z;
        fill_gaussian(rng, &z, 1);
        v = std::clamp(centres(k, j) + spread(k, j) * z, range[static_cast<std::size_t>(j)].first,
                       range[static_cast<std::size_t>(j)].second);
      }
      raw.x(static_cast<Eigen::Index>(i), j) = static_cast<float>(v);
      target += weights(j) * v;
    }
    if (has_label) {
      if (!label_values.empty()) {
        raw.y.push_back(label_values[static_cast<std::size_t>(k) % label_values.size()]);
      } else if (label_k > 0) {
        raw.y.push_back(static_cast<double>(k % label_k));
      } else {
        double z;
        fill_gaussian(rng, &z, 1);
        raw.y.push_back(target + 0.1 * z);
      }
    }
  }
  LoadedDataset out = finish(name, entry, prep, cols, std::move(raw));
  out.stand_in = true;
  out.stand_in_reason = reason;
  return out;
}

LoadedDataset load_dataset(const DatasetRegistry& registry, const std::string& name, const Preprocessing& prep,
                           const DataSearch& search) {
  const json& entry = registry.entry(name);
  const std::string format = entry.at("format").get<std::string>();
  if (entry.value("kind", "table") == "graph" || format == "snap_edgelist" || format == "jlg")
    throw UsageError("data set '" + name + "' is a graph (" + format + "); load it with the graph loader");
  const auto files = files_with_roles(entry, prep.roles);
  if (files.empty()) throw UsageError("data set '" + name + "' has no file with role " + join(prep.roles, "/"));

  const auto dirs = data_search_path(search);
  std::string found_dir;
  std::vector<std::string> partial;
  for (const auto& dir : dirs) {
    std::size_t present = 0;
    for (const auto* f : files)
      if (fs::is_regular_file(fs::path(dir) / f->at("path").get<std::string>())) ++present;
    if (present == files.size()) {
      found_dir = dir;
      break;
    }
    if (present > 0) partial.push_back(dir + " (" + std::to_string(present) + " of " + std::to_string(files.size()) + " files)");
  }
  if (found_dir.empty()) {
    std::string reason = "no copy of " + files.front()->at("path").get<std::string>() +
                         (files.size() > 1 ? " (+" + std::to_string(files.size() - 1) + " more)" : std::string()) +
                         " in " + (dirs.empty() ? std::string("any data directory") : join(dirs, ", "));
    if (!partial.empty()) reason += "; incomplete in " + join(partial, ", ");
    if (!search.allow_stand_in) throw InputError("data set '" + name + "': " + reason);
    return make_stand_in(registry, name, prep, 0x57A9D1, reason);
  }

  const auto cols = selected_features(name, entry, prep);
  RawTable raw;
  raw.levels = column_levels(entry, cols);
  raw.names = feature_names(entry, cols);
  std::vector<std::string> paths;
  std::string checksum = "ok";
  for (const auto* f : files) {
    const std::string path = (fs::path(found_dir) / f->at("path").get<std::string>()).string();
    paths.push_back(path);
    if (!search.verify_checksums) {
      checksum = "not_checked";
    } else if (!f->contains("sha256") || f->at("sha256").is_null()) {
      if (checksum == "ok") checksum = "no_reference";
    } else {
      const std::string got = sha256_file(path);
      if (got != f->at("sha256").get<std::string>()) {
        std::cerr << "warning: " << path << ": sha256 " << got << " differs from the registry's "
                  << f->at("sha256").get<std::string>() << " (a different version of the file?)\n";
        checksum = "mismatch";
      }
    }
    if (format == "text_csv")
      read_text_file_table(name, entry, *f, path, cols, raw);
    else
      read_numeric_file(name, entry, *f, path, cols, raw);
  }
  if (raw.x.rows() == 0) throw InputError("data set '" + name + "': no rows left after the registry's filters");
  LoadedDataset out = finish(name, entry, prep, cols, std::move(raw));
  if (entry.contains("substitute")) {
    const json& sub = entry.at("substitute");
    if (!sub.is_object() || !sub.contains("label") || !sub.at("label").is_string() || !sub.contains("detail") ||
        !sub.at("detail").is_string())
      throw InputError(registry.path() + ": $.datasets." + name +
                       ".substitute: expected an object {\"label\": short text, \"detail\": text}");
    out.substitute = sub;
  }
  out.data_dir = found_dir;
  out.files = paths;
  out.checksum_status = checksum;
  return out;
}

}  // namespace privrace
