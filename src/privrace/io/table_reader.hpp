#pragma once
// Streaming readers for numeric tables (CSV, whitespace-separated, libsvm) and for
// one-set-per-line files. Input may be plain or gzip-compressed; "-" means stdin.
// All malformed input is reported as InputError naming file, physical line (1-based),
// column (1-based) and what was expected.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "privrace/core/types.hpp"

namespace privrace {

enum class TableFormat { Auto, Csv, Whitespace, Libsvm };

// "auto", "csv", "whitespace", "libsvm"; UsageError otherwise.
TableFormat parse_table_format(const std::string& name);

// One rank's share of a plain (uncompressed) regular file: the records whose first byte lies in
// [begin, end). Shares [k S / K, (k + 1) S / K) of a file of S bytes cover every record exactly
// once, whatever the line lengths and line ends. What every share must agree on comes from the
// start of the whole file (TableReader::layout() of a reader of the whole file): the field count
// and the byte offset of the header line, which the share holding that offset skips.
// A share may hold no record (allowed; next_chunk returns 0). Line numbers in messages are
// those of the whole file (counted from its start when an error is reported).
struct TableShare {
  std::uint64_t begin = 0, end = 0;
  std::size_t fields = 0;                   // fields per line, as in the file's first data row
  std::optional<std::uint64_t> header_at;   // byte offset of the header line, if the file has one
};

// One item of a column selection: a 1-based column, a range of columns, or a header name.
struct ColumnRef {
  std::size_t first = 0, last = 0;  // 1-based, first <= last (unused when `name` is set)
  std::string name;                 // a name of the header line; empty for numbers
  std::string option;               // where it came from, for messages ("--columns"); may be empty
};

// Which columns of a CSV or whitespace table are the features, resolved when the reader opens
// the file: names against the header line, numbers against the first row's field count.
//  - keep: the feature columns in this order (each at most once); empty = every column, in
//    file order.
//  - drop, label_drop: columns taken out of those kept (they need not be kept). label_drop is
//    --label-column: libsvm input ignores it (there the label is always the first token).
// Columns that are not features are never parsed: a date or a text column left out is skipped.
// A name needs a header line (a header-less file is refused); a header line one name short of
// the rows (a leading, unnamed row-id column) names the columns from the second on.
// libsvm input refuses keep and drop (its features are index:value pairs, not columns).
struct ColumnSelection {
  std::vector<ColumnRef> keep, drop, label_drop;
  bool empty() const { return keep.empty() && drop.empty() && label_drop.empty(); }
  bool uses_names() const;
};

// The text of --columns, --drop or --label-column: comma-separated items, each a 1-based column
// ("3"), a range ("2-5") or a header name (any other text; surrounding spaces trimmed). An item
// of digits is always a column number. UsageError naming `option` on an empty item, column 0 or
// a range that ends before it starts.
std::vector<ColumnRef> parse_column_spec(const std::string& spec, const std::string& option);

struct TableOptions {
  TableFormat format = TableFormat::Auto;
  // 1-based column split off as the label (CSV/whitespace); 0 = none.
  // libsvm ignores it: there the label is always the first token.
  int label_column = 0;
  // The feature columns (CSV/whitespace): see ColumnSelection. Empty = every column but the label.
  ColumnSelection columns;
  // libsvm: number of features; 0 = find the largest index with a first pass over the
  // file (impossible on stdin or a pipe: UsageError asking for --dim).
  std::size_t dim = 0;
  // nullopt = detect: the first line is a header iff a feature field is not a number (with
  // column names selected: iff any field is not a number).
  // Ignored for libsvm, which has no header.
  std::optional<bool> header;
  // Read only a share of the file (a distributed build): see TableShare. `format` must then be
  // Csv or Whitespace, and `header` is ignored (the share knows where the header line is).
  std::optional<TableShare> share;
};

// What a reader of a whole file found at its start, and whether the file can be read in shares.
struct TableLayout {
  TableFormat format = TableFormat::Auto;
  std::size_t fields = 0;   // fields per line (CSV/whitespace)
  std::size_t dim = 0;      // feature columns
  std::optional<std::uint64_t> header_at;  // byte offset of the header line
  std::uint64_t bytes = 0;  // file size (plain regular files)
  // Shares need a plain regular file in CSV or whitespace format; otherwise why not
  // ("gzip-compressed", "not a regular file (stdin or a pipe)", "libsvm").
  bool splittable = false;
  std::string why_not;
};

// Format rules:
//  - Auto looks at the first non-blank, non-comment line: an "idx:val" token after the
//    first => libsvm; else a ',' => CSV; else whitespace (any run of spaces/tabs).
//  - Line ends: "\n", "\r\n" or a lone "\r"; a final line may lack one. A UTF-8 BOM is
//    skipped. Blank lines and lines starting with '#' are skipped in every format.
//  - CSV fields may be double-quoted ("" escapes a quote); surrounding spaces are trimmed.
//    Quoted fields cannot span lines.
//  - Values must be finite and fit in float (the storage type); a leading '+' is accepted.
class TableReader {
 public:
  // Reads ahead to the first data row, so format, header and dim() are known afterwards.
  // Throws InputError "cannot open 'PATH': <reason>" and "PATH: no data rows".
  TableReader(const std::string& path, TableOptions opts = {});
  ~TableReader();
  TableReader(TableReader&&) noexcept;
  TableReader& operator=(TableReader&&) noexcept;
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  std::size_t dim() const;  // number of feature columns
  TableFormat format() const;  // the resolved format (never Auto)
  bool has_labels() const;     // libsvm, or a label column was given

  // Reads up to max_rows rows into `out` (resized to n x dim()) and, if `labels` is
  // non-null, their labels (resized to n; 0 when the input has no labels). Returns n;
  // 0 means end of input. Memory is bounded by the chunk, not by the input size.
  std::size_t next_chunk(DenseMatrix& out, std::size_t max_rows, std::vector<double>* labels = nullptr);

  // Counts the records left without parsing them (non-blank, non-comment lines; the header
  // line excluded) and consumes them: a distributed build's first pass over its share.
  std::uint64_t count_remaining();
  // The start of the file as this reader found it (a reader of a whole file, not a share).
  TableLayout layout() const;

  std::size_t rows_read() const;  // rows returned by next_chunk so far
  const std::string& path() const;
  bool had_header() const;
  // The feature columns' names from the header, in feature order, or empty.
  std::vector<std::string> column_names() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Rows of CSV fields as text, for tables whose columns are not all numbers (categorical
// levels, dates, money, names). The same reading rules as TableReader's CSV format (plain or
// gzip, "-" = stdin, any line end, BOM skipped, blank and '#' lines skipped, quoted fields
// with "" escapes, surrounding spaces trimmed); interpreting the fields is the caller's job.
// Malformed quoting is an InputError naming file, line and column.
class CsvFieldReader {
 public:
  // Throws InputError "cannot open 'PATH': <reason>".
  explicit CsvFieldReader(const std::string& path);
  ~CsvFieldReader();
  CsvFieldReader(CsvFieldReader&&) noexcept;
  CsvFieldReader& operator=(CsvFieldReader&&) noexcept;
  CsvFieldReader(const CsvFieldReader&) = delete;
  CsvFieldReader& operator=(const CsvFieldReader&) = delete;

  // The next data line's fields (replacing `fields`); false at end of input.
  bool next(std::vector<std::string>& fields);
  std::size_t line_no() const;  // physical line (1-based) of the row last returned
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads everything (rows x dim) and, if non-null, the labels.
// Throws InputError "PATH: no data rows" on empty input.
DenseMatrix read_table(const std::string& path, const TableOptions& opts = {},
                       std::vector<double>* labels = nullptr);

// One set per line: uint32 element ids separated by spaces, tabs or commas. Each set is
// sorted and de-duplicated; an empty (or all-blank) line is an empty set; lines starting
// with '#' are comments. Plain or gzip; "-" = stdin. Throws InputError "PATH: no sets"
// when the input holds no line at all.
SetCollection read_sets(const std::string& path);
// The sets of the lines whose first byte lies in [begin, end) of a plain regular file (a
// rank's share under mpirun, as TableShare): shares [k S / K, (k + 1) S / K) read every line
// of the whole file exactly once. A share may hold no set (no error); messages give the line
// in the whole file.
SetCollection read_sets(const std::string& path, std::uint64_t begin, std::uint64_t end);

// Whether a text file (sets, an edge list) can be read in byte shares: a plain regular file.
// `why_not` otherwise: "gzip-compressed" or "not a regular file (stdin or a pipe)". Throws
// InputError "cannot open 'PATH': <reason>".
struct TextFileLayout {
  bool splittable = false;
  std::uint64_t bytes = 0;  // file size (regular files)
  std::string why_not;
};
TextFileLayout text_file_layout(const std::string& path);

// Physical lines of a plain or gzip file ("-" = stdin), or of the lines whose first byte lies
// in [begin, end) of a plain regular file: the same line rules as the table reader (LF, CRLF
// or a lone CR; a UTF-8 BOM at the start of the file skipped; a last line without an end).
class TextLines {
 public:
  explicit TextLines(const std::string& path);  // throws InputError "cannot open 'PATH': ..."
  TextLines(const std::string& path, std::uint64_t begin, std::uint64_t end);
  ~TextLines();
  TextLines(TextLines&&) noexcept;
  TextLines& operator=(TextLines&&) noexcept;
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;

  // The next line without its end (valid until the next call); false at the end.
  bool next(std::string_view& line);
  // The line last returned, counted from the start of the whole file (for a share: counted
  // when asked, so call it for messages only).
  std::uint64_t file_line() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace privrace
