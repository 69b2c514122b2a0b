#pragma once
// `privrace sketch --input`: one table, or several read as one (the records of each file in
// turn). Used by the single-process command (sketch_command.cpp) and under mpirun
// (distributed.cpp), which assigns whole files to ranks.
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "privrace/core/error.hpp"

#include "privrace/core/limits.hpp"
#include "privrace/core/types.hpp"
#include "privrace/io/table_reader.hpp"

namespace privrace::cli {

// Count options (rows, width, threads, ...) are declared as text, po::value<std::string>(),
// and read here: Boost.Program_options would wrap "-5" into a size_t as 2^64 - 5. The value of
// option `name` as T, or UsageError "--NAME must be an integer in MIN..MAX, got 'TEXT'";
// `fallback` when the option is absent and has no default.
template <class T>
T count_option(const boost::program_options::variables_map& vm, const std::string& name, std::int64_t min,
               std::int64_t max, T fallback = T{}) {
  if (!vm.count(name)) return fallback;
  return static_cast<T>(parse_count("--" + name, vm[name].as<std::string>(), min, max));
}
// --NAME's thread count (parse_threads: 0..kMaxThreads); 0 (all cores) when absent.
inline int threads_option(const boost::program_options::variables_map& vm, const std::string& name = "threads") {
  return vm.count(name) ? parse_threads("--" + name, vm[name].as<std::string>()) : 0;
}
// Largest value of a size option (rows, width, features, bins, dim, ...): 2^32, the bound of
// a sketch's width and of a sketch file's header fields.
inline constexpr std::int64_t kMaxSize = std::int64_t{1} << 32;

// "Did you mean": the name of `names` closest to `given` by edit distance (insertions, deletions,
// substitutions and swaps of neighbours each count 1), when it is close enough to be a slip:
// at most max(1, |given| / 3) edits. Ties go to the earlier name; nullopt when none is close.
std::size_t edit_distance(std::string_view a, std::string_view b);
std::optional<std::string> closest_name(std::string_view given, const std::vector<std::string>& names);
// `message` with " (did you mean 'NAME'?)" after its first sentence when a name is close: a
// library message "unknown kernel 'l22' (expected l2, ...)" becomes
// "unknown kernel 'l22' (did you mean 'l2'?); expected l2, ...". Unchanged otherwise.
std::string with_suggestion(const std::string& message, std::string_view given, const std::vector<std::string>& names);
// parse(given), a UsageError from it rethrown with the suggestion (the library's parse_kernel,
// parse_mechanism, ... know their names but not the CLI's hint).
template <class Parse>
auto parse_suggesting(Parse&& parse, const std::string& given, const std::vector<std::string>& names) -> decltype(parse(given)) {
  try {
    return parse(given);
  } catch (const UsageError& e) {
    throw UsageError(with_suggestion(e.what(), given, names));
  }
}
// The names each enum accepts (for the suggestions; the kernels' come from the kernel registry,
// lsh/kernel_registry.hpp: kernel_names()).
extern const std::vector<std::string> kMechanismNames, kNeighborNames, kEstimatorNames, kTableFormatNames,
    kSketchFormatNames;

// --columns SPEC, --drop SPEC and --label-column SPEC (each may be repeated): which columns of a
// CSV or whitespace table are the features (sketch and query read them alike). SPEC: comma-
// separated 1-based columns, ranges A-B or header names. --label-column drops its columns as
// --drop does (0 = none; libsvm input ignores it, its label being its first token).
void add_column_options(boost::program_options::options_description& desc);
// Their values as the table reader's selection; UsageError on a malformed SPEC.
ColumnSelection column_options(const boost::program_options::variables_map& vm);

// The files the --input values name, in order. Each value is
//  - a path, taken as it is ("-" = stdin, allowed only alone);
//  - a glob pattern (a value holding '*', '?' or '[' that names no existing file), expanded
//    here, not by a shell, into the matching paths in sorted (byte) order;
//  - @LIST: a text file with one path per line, in the order given (blank lines and lines
//    starting with '#' skipped; a relative path is relative to LIST's folder).
// UsageError when a pattern matches no file, a list names none, or "-" is not the only input;
// InputError when a list cannot be read.
std::vector<std::string> expand_inputs(const std::vector<std::string>& given);

// The name the sketch header records for several inputs: "FIRST .. LAST (N files)" (file
// names without their folders), the same whichever form listed them.
std::string inputs_label(const std::vector<std::string>& paths);

// InputError unless `path` has as many feature columns as the first input.
void check_same_columns(const std::string& path, std::size_t dim, const std::string& first, std::size_t first_dim);

// Several tables read as one, in order: each file is read (format, header line, label column)
// as when it is the only input, and chunks are filled across the ends of files, so the builder
// sees the same chunks, batch for batch, as for one file holding all the records. Every file
// must have the same number of feature columns. One file is open at a time.
class TableSequence {
 public:
  TableSequence(std::vector<std::string> paths, TableOptions opts);  // opens the first file
  std::size_t dim() const { return dim_; }
  // Up to max_rows records (fewer only at the end of the last file); 0 at the end.
  std::size_t next_chunk(DenseMatrix& out, std::size_t max_rows);
  // The n-th record delivered so far (1-based): "PATH: record M", M counted in its file.
  std::string locate(std::uint64_t n) const;

 private:
  std::vector<std::string> paths_;
  TableOptions opts_;
  std::size_t dim_ = 0, file_ = 0;
  std::optional<TableReader> reader_;
  DenseMatrix part_;
  std::vector<std::uint64_t> starts_;  // records delivered before each opened file
  std::uint64_t delivered_ = 0;
};

}  // namespace privrace::cli
