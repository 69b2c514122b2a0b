#include "privrace/io/dataset.hpp"

#include <zlib.h>

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
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

// ---------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), for checking data files against the registry.
namespace {

class Sha256 {
 public:
  Sha256() { reset(); }
  void reset() {
    h_ = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au, 0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    len_ = 0;
    fill_ = 0;
  }
  void update(const unsigned char* p, std::size_t n) {
    len_ += n;
    if (fill_) {
      const std::size_t take = std::min(n, 64 - fill_);
      std::memcpy(buf_ + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ < 64) return;
      block(buf_);
      fill_ = 0;
    }
    for (; n >= 64; p += 64, n -= 64) block(p);
    std::memcpy(buf_, p, n);
    fill_ = n;
  }
  std::string hex() {
    const std::uint64_t bits = len_ * 8;
    const unsigned char one = 0x80, zero = 0;
    update(&one, 1);
    while (fill_ != 56) update(&zero, 1);
    unsigned char be[8];
    for (int i = 0; i < 8; ++i) be[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(be, 8);
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (const std::uint32_t w : h_)
      for (int s = 28; s >= 0; s -= 4) out += digits[(w >> s) & 15];
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void block(const unsigned char* p) {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) | (std::uint32_t{p[4 * i + 2]} << 8) |
             std::uint32_t{p[4 * i + 3]};
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a; h_[1] += b; h_[2] += c; h_[3] += d; h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }

  std::array<std::uint32_t, 8> h_;
  std::uint64_t len_;
  unsigned char buf_[64];
  std::size_t fill_;
};

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

// Whole file, decompressing gzip transparently (gzread passes plain files through).
std::string read_maybe_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  std::string out;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int errnum = 0;
      const std::string msg = gzerror(f, &errnum);
      gzclose(f);
      throw InputError(path + ": cannot decompress: " + msg);
    }
    if (n == 0) {
      // A truncated gzip stream ends with a soft Z_BUF_ERROR, not n < 0: refuse it too.
      int errnum = Z_OK;
      const std::string msg = gzerror(f, &errnum);
      gzclose(f);
      if (errnum != Z_OK) throw InputError(path + ": cannot decompress: " + msg);
      return out;
    }
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
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

// Splits a CSV line into trimmed fields; double quotes group ("" is a literal quote).
void split_csv(std::string_view line, std::vector<std::string>& fields) {
  fields.clear();
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
      was_quoted = true;
    } else if (c == ',') {
      fields.push_back(was_quoted ? cur : trim(cur));
      cur.clear();
      was_quoted = false;
    } else {
      cur += c;
    }
  }
  fields.push_back(was_quoted ? cur : trim(cur));
}

// Lines of a text with \n, \r\n or \r line ends; `fn(line, line_number)`.
template <typename Fn>
void for_each_line(const std::string& text, Fn&& fn) {
  std::size_t pos = 0, line_no = 0;
  if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0) pos = 3;
  while (pos < text.size()) {
    std::size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    fn(std::string_view(text).substr(pos, end - pos), line_no);
    pos = end;
    if (pos < text.size() && text[pos] == '\r') {
      ++pos;
      if (pos < text.size() && text[pos] == '\n') ++pos;
    } else if (pos < text.size()) {
      ++pos;  // '\n'
    }
  }
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

// Tables with text fields: quoted CSV, categorical levels, money columns, row filters.
void read_text_file_table(const std::string& name, const json& entry, const json& file_entry, const std::string& path,
                          const std::vector<int>& cols, RawTable& out) {
  const std::string text = read_maybe_gz(path);
  const bool header = file_entry.value("header", entry.value("header", false));
  const int expected = as_int(file_entry, "columns", as_int(entry, "columns", 0));
  const int label = as_int(entry, "label", 0);
  const auto levels = categorical_levels(entry);
  const auto money_cols = int_list(entry, "money");
  const auto skip_cols = int_list(entry, "skip_unparsable");
  std::set<std::string> na;
  if (entry.contains("na_values"))
    for (const auto& v : entry.at("na_values")) na.insert(v.get<std::string>());
  // "na_fill": a missing numeric feature takes this public constant instead of dropping the
  // row (a data-independent imputation, so it costs no privacy; Nomao has a '?' in most rows).
  // A missing categorical value drops the row unless the marker is listed as a level of its
  // own (then it is coded like any level); a missing label always drops the row.
  std::optional<double> na_fill;
  if (entry.contains("na_fill") && !entry.at("na_fill").is_null()) {
    if (!entry.at("na_fill").is_number())
      throw InputError("registry entry '" + name + "': na_fill: expected a number, found " + entry.at("na_fill").dump());
    na_fill = entry.at("na_fill").get<double>();
  }
  std::vector<std::pair<int, std::string>> filters;
  if (entry.contains("filters"))
    for (const auto& f : entry.at("filters")) filters.emplace_back(f.at("column").get<int>(), f.at("equals").get<std::string>());

  auto is_in = [](const std::vector<int>& v, int c) { return std::find(v.begin(), v.end(), c) != v.end(); };
  std::vector<std::string> fields;
  std::vector<float> values;
  std::vector<double> labels;
  std::size_t data_row = 0, skipped = 0, filled = 0;
  bool first = true;
  for_each_line(text, [&](std::string_view line, std::size_t line_no) {
    if (trim(line).empty()) return;
    if (first && header) {
      first = false;
      return;
    }
    first = false;
    ++data_row;
    split_csv(line, fields);
    const std::string where = path + ":" + std::to_string(line_no) + ": data row " + std::to_string(data_row) + ": ";
    if (expected > 0 && fields.size() != static_cast<std::size_t>(expected))
      throw InputError(where + "registry entry '" + name + "' expects " + std::to_string(expected) + " fields, found " +
                       std::to_string(fields.size()));
    for (const auto& [c, want] : filters)
      if (static_cast<std::size_t>(c) > fields.size() || trim(fields[static_cast<std::size_t>(c - 1)]) != want) {
        ++skipped;
        return;
      }
    auto value_of = [&](int c, double& v) -> int {  // 1 ok, 0 skip row, throws otherwise
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
      if (parse_number(f, is_in(money_cols, c), v)) return 1;
      if (is_in(skip_cols, c)) return 0;
      throw InputError(where + "column " + std::to_string(c) + ": expected a number, found " + shown(f) +
                       " (registry entry '" + name + "')");
    };
    const std::size_t start = values.size(), filled_before = filled;
    for (const int c : cols) {
      double v = 0;
      if (!value_of(c, v)) {
        values.resize(start);
        filled = filled_before;
        ++skipped;
        return;
      }
      values.push_back(static_cast<float>(v));
    }
    if (label > 0) {
      double v = 0;
      if (!value_of(label, v)) {
        values.resize(start);
        filled = filled_before;
        ++skipped;
        return;
      }
      if (!levels.count(label)) check_label(name, entry, v, path, data_row);
      labels.push_back(v);
    }
  });
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

LoadedDataset finish(const std::string& name, const json& entry, const Preprocessing& prep, const std::vector<int>& cols,
                     RawTable raw) {
  LoadedDataset out;
  out.name = name;
  json applied = prep.to_json();
  applied["features"] = cols;
  // Subsample first, so every later step sees the rows that are used.
  if (prep.max_rows > 0 && static_cast<std::size_t>(raw.x.rows()) > prep.max_rows) {
    Split s = seeded_split(static_cast<std::size_t>(raw.x.rows()), prep.max_rows, prep.subsample_seed);
    std::sort(s.held_out.begin(), s.held_out.end());
    raw.x = select_rows(raw.x, s.held_out);
    if (!raw.y.empty()) {
      std::vector<double> y;
      for (const auto i : s.held_out) y.push_back(raw.y[i]);
      raw.y = std::move(y);
    }
  }
  const auto names = feature_names(entry, cols);
  // Categorical coding.
  std::vector<std::pair<double, double>> bounds;
  std::vector<bool> bounds_public;
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
  // Scaling.
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
  // Principal components (after scaling, so the declared scaling decides what "variance"
  // means: with unit_cube every feature's range counts equally).
  if (prep.pca_components > 0) {
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

std::string sha256_hex(const void* data, std::size_t size) {
  Sha256 h;
  h.update(static_cast<const unsigned char*>(data), size);
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = in.gcount();
    if (got > 0) h.update(reinterpret_cast<const unsigned char*>(buf.data()), static_cast<std::size_t>(got));
  }
  if (in.bad()) throw InputError("cannot read '" + path + "'");
  return h.hex();
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
    dirs.push_back((fs::path(search.repo_root).parent_path() / "shared" / "datasets").string());
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
