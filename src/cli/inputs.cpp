// `privrace sketch --input`: the list of input files, and several tables read as one.
#include "inputs.hpp"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "privrace/core/error.hpp"

namespace privrace::cli {

namespace fs = std::filesystem;

namespace {

bool is_pattern(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// The regular files (and links to them) matching `pattern`, in byte order; folders are left out.
std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_MARK | GLOB_NOSORT, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      std::string p = g.gl_pathv[i];
      if (!p.empty() && p.back() != '/') out.push_back(std::move(p));
    }
  ::globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH) throw InputError("--input '" + pattern + "': cannot read the folders the pattern names");
  if (out.empty()) throw UsageError("--input '" + pattern + "': no file matches the pattern");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> read_list(const std::string& list) {
  std::ifstream in(list, std::ios::binary);
  if (!in) throw InputError("cannot open the input list '" + list + "': " + std::strerror(errno));
  const fs::path folder = fs::path(list).parent_path();
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const std::size_t e = line.find_last_not_of(" \t\r");
    const fs::path p = line.substr(b, e - b + 1);
    out.push_back(p.is_relative() && !folder.empty() ? (folder / p).string() : p.string());
  }
  if (in.bad()) throw InputError("cannot read the input list '" + list + "'");
  if (out.empty()) throw UsageError("--input @" + list + ": the list names no file (expected one path per line)");
  return out;
}

}  // namespace

const std::vector<std::string> kMechanismNames = {"discrete_laplace", "floored_laplace", "gaussian", "discrete_gaussian"};
const std::vector<std::string> kNeighborNames = {"add-remove", "replace"};
const std::vector<std::string> kEstimatorNames = {"mean", "mom"};
const std::vector<std::string> kTableFormatNames = {"auto", "csv", "whitespace", "libsvm"};
const std::vector<std::string> kSketchFormatNames = {"auto", "csv", "whitespace", "libsvm", "sets", "edgelist", "jlg"};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus the swap of two neighbouring characters.
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::optional<std::string> closest_name(std::string_view given, const std::vector<std::string>& names) {
  if (given.empty()) return std::nullopt;
  const std::size_t limit = std::max<std::size_t>(1, given.size() / 3);
  std::optional<std::string> best;
  std::size_t best_d = limit + 1;
  for (const std::string& name : names) {
    if (name == given) return std::nullopt;  // not a slip: the name is valid (the error is another)
    const std::size_t d = edit_distance(given, name);
    if (d < best_d && d < std::max(given.size(), name.size())) best_d = d, best = name;
  }
  return best;
}

std::string with_suggestion(const std::string& message, std::string_view given, const std::vector<std::string>& names) {
  const std::optional<std::string> name = closest_name(given, names);
  if (!name) return message;
  const std::string hint = " (did you mean '" + *name + "'?)";
  const std::size_t open = message.find(" (expected ");
  if (open != std::string::npos && !message.empty() && message.back() == ')')
    return message.substr(0, open) + hint + "; " + message.substr(open + 2, message.size() - open - 3);
  return message + hint;
}

void add_column_options(boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  desc.add_options()
      ("columns", po::value<std::vector<std::string>>(), "feature columns in this order (CSV/whitespace): comma-separated 1-based "
                  "numbers, ranges A-B or header names, e.g. 'Temperature,Humidity' or 3-7; other columns are skipped unread "
                  "(dates, text). Repeatable")
      ("drop", po::value<std::vector<std::string>>(), "columns left out of the features (same SPEC as --columns). Repeatable")
      ("label-column", po::value<std::vector<std::string>>(), "column(s) to drop from the features, as --drop (0 = none; "
                       "libsvm input ignores it). Repeatable");
}

ColumnSelection column_options(const boost::program_options::variables_map& vm) {
  ColumnSelection sel;
  auto each = [&](const char* name, std::vector<ColumnRef>& into, auto&& one) {
    if (!vm.count(name)) return;
    for (const std::string& spec : vm[name].as<std::vector<std::string>>()) one(spec, into);
  };
  auto append = [](std::vector<ColumnRef>& into, std::vector<ColumnRef> refs) {
    into.insert(into.end(), std::make_move_iterator(refs.begin()), std::make_move_iterator(refs.end()));
  };
  each("columns", sel.keep, [&](const std::string& spec, auto& into) { append(into, parse_column_spec(spec, "--columns")); });
  each("drop", sel.drop, [&](const std::string& spec, auto& into) { append(into, parse_column_spec(spec, "--drop")); });
  each("label-column", sel.label_drop, [&](const std::string& spec, auto& into) {
    // One integer, as the option has always taken: 0 = none, and a sign is refused as a count is.
    const bool integer = !spec.empty() && std::all_of(spec.begin() + (spec[0] == '-' || spec[0] == '+'), spec.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
    if (integer) {
      const auto k = static_cast<std::size_t>(parse_count("--label-column", spec, 0, std::int64_t{1} << 32));
      if (k > 0) into.push_back(ColumnRef{k, k, "", "--label-column"});
      return;
    }
    append(into, parse_column_spec(spec, "--label-column"));
  });
  return sel;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const std::string& v : given) {
    if (v.size() > 1 && v[0] == '@') {
      const std::vector<std::string> listed = read_list(v.substr(1));
      out.insert(out.end(), listed.begin(), listed.end());
    } else if (std::error_code ec; v != "-" && is_pattern(v) && !fs::exists(v, ec)) {
      const std::vector<std::string> matched = expand_glob(v);
      out.insert(out.end(), matched.begin(), matched.end());
    } else {
      out.push_back(v);
    }
  }
  if (out.empty()) throw UsageError("the option '--input' is required but missing");
  if (out.size() > 1 && std::find(out.begin(), out.end(), "-") != out.end())
    throw UsageError("--input -: standard input can be the only input");
  return out;
}

std::string inputs_label(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return paths.front();
  return fs::path(paths.front()).filename().string() + " .. " + fs::path(paths.back()).filename().string() + " (" +
         std::to_string(paths.size()) + " files)";
}

void check_same_columns(const std::string& path, std::size_t dim, const std::string& first, std::size_t first_dim) {
  if (dim != first_dim)
    throw InputError(path + ": records of " + std::to_string(dim) + " feature columns, expected " + std::to_string(first_dim) +
                     " as in " + first + " (every input must have the same columns" +
                     (dim > 0 && first_dim > 0 ? "; libsvm inputs: give --dim)" : ")"));
}

TableSequence::TableSequence(std::vector<std::string> paths, TableOptions opts)
    : paths_(std::move(paths)), opts_(std::move(opts)) {
  reader_.emplace(paths_.at(0), opts_);
  dim_ = reader_->dim();
  starts_.push_back(0);
}

std::size_t TableSequence::next_chunk(DenseMatrix& out, std::size_t max_rows) {
  std::size_t got = 0;
  while (got < max_rows && reader_) {
    DenseMatrix& into = got == 0 ? out : part_;
    const std::size_t n = reader_->next_chunk(into, max_rows - got);
    if (n == 0) {  // this file is done: the next one continues the chunk
      reader_.reset();
      if (++file_ < paths_.size()) {
        reader_.emplace(paths_[file_], opts_);
        check_same_columns(paths_[file_], reader_->dim(), paths_[0], dim_);
        starts_.push_back(delivered_ + got);
      }
      continue;
    }
    if (got > 0) {
      out.conservativeResize(static_cast<Eigen::Index>(got + n), static_cast<Eigen::Index>(dim_));
      out.middleRows(static_cast<Eigen::Index>(got), static_cast<Eigen::Index>(n)) = part_.topRows(static_cast<Eigen::Index>(n));
    }
    got += n;
  }
  if (got == 0) out.resize(0, static_cast<Eigen::Index>(dim_));
  delivered_ += got;
  return got;
}

std::string TableSequence::locate(std::uint64_t n) const {
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), n - 1);
  const auto i = static_cast<std::size_t>(it - starts_.begin()) - 1;
  return paths_[i] + ": record " + std::to_string(n - starts_[i]);
}

}  // namespace privrace::cli
