#include "privrace/io/table_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <system_error>

#include "privrace/core/memory.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/number.hpp"

namespace privrace {
namespace {

constexpr unsigned kBlock = 1u << 20;            // gzread request size
constexpr std::size_t kMaxLine = 256u << 20;     // guards against binary input without line ends
constexpr std::size_t kFirstChunkRows = 8192;    // next_chunk grows from here up to max_rows

// ---------------------------------------------------------------------------------------
// Messages

// A field quoted for an error message: bounded length, control bytes escaped, so binary
// garbage cannot flood or corrupt the terminal.
std::string show(std::string_view s) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...";
  out += "'";
  return out;
}

class LineSource;
// The physical line of a share's source in the whole file (counted on demand: errors only).
std::size_t file_line(const LineSource& src);

// File and physical line for messages. `src`: a share's source, whose own count starts at the
// share; the line in the whole file is then counted when a message needs it.
struct Where {
  const std::string* name;
  std::size_t line;
  const LineSource* src = nullptr;
  std::string at() const { return *name + ":" + std::to_string(src != nullptr ? file_line(*src) : line) + ": "; }
  std::string at(std::size_t col) const { return at() + "column " + std::to_string(col) + ": "; }
};

// Error paths are out of line so the parsing loops stay small.
[[noreturn, gnu::cold, gnu::noinline]] void fail(std::string msg) { throw InputError(std::move(msg)); }

[[noreturn, gnu::cold, gnu::noinline]] void fail_number(const Where& w, std::size_t col, std::string_view s) {
  if (s.empty()) fail(w.at(col) + "expected a number, found an empty field");
  fail(w.at(col) + "expected a number, found " + show(s));
}

[[noreturn, gnu::cold, gnu::noinline]] void fail_ragged(const Where& w, std::size_t found, std::size_t expected,
                                                         std::size_t ref_line) {
  fail(w.at() + "found " + std::to_string(found) + " field" + (found == 1 ? "" : "s") + ", expected " +
       std::to_string(expected) + (ref_line > 0 ? " (as on line " + std::to_string(ref_line) + ")" : " (as on the table's first row)"));
}

// ---------------------------------------------------------------------------------------
// Numbers

double number(std::string_view s, const Where& w, std::size_t col) {
  double v;
  const NumberStatus st = parse_number(s, v);
  if (st == NumberStatus::Ok) [[likely]]
    return v;
  if (st == NumberStatus::NotFinite) fail(w.at(col) + "value " + show(s) + " is not finite");
  fail_number(w, col, s);
}

Real to_real(std::string_view s, const Where& w, std::size_t col) {
  const Real r = static_cast<Real>(number(s, w, col));
  if (std::isinf(r)) [[unlikely]]
    fail(w.at(col) + "value " + show(s) + " does not fit in single precision (|x| <= 3.4e38)");
  return r;
}

bool is_number(std::string_view s) {
  double v;
  return parse_number(s, v) != NumberStatus::NotNumber;
}

// ---------------------------------------------------------------------------------------
// Lines

// Physical lines from a plain or gzip file (or stdin), read in 1 MiB blocks. A line view
// stays valid until the next call to next().
class LineSource {
 public:
  LineSource(const std::string& path, const std::string& display) : display_(display), path_(path) { open_whole(path); }
  // A share of a plain regular file: the lines whose first byte lies in [begin, end), read
  // with read(2) (never through zlib: a share may start with bytes that look like a gzip header).
  LineSource(const std::string& path, const std::string& display, std::uint64_t begin, std::uint64_t end)
      : display_(display), path_(path) {
    open_share(begin, end);
  }
  // The whole file, or the share when there is one.
  LineSource(const std::string& path, const std::string& display, const std::optional<TableShare>& share)
      : display_(display), path_(path) {
    if (share) open_share(share->begin, share->end);
    else open_whole(path);
  }

 private:
  void open_whole(const std::string& path) {
    const int fd = path == "-" ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) open_error(path, errno);
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        open_error(path, EISDIR);  // open(2) accepts directories; read(2) would fail later
      }
      regular_ = S_ISREG(st.st_mode);
    }
    // gzdopen reads plain files transparently; dup() above keeps our stdin open after gzclose.
    gz_ = gzdopen(fd, "rb");
    if (gz_ == nullptr) {
      ::close(fd);
      open_error(path, ENOMEM);
    }
    gzbuffer(gz_, kBlock);
    // Uninitialised: zero-filling 2 MiB per file costs more than parsing a small one.
    cap_ = 2 * static_cast<std::size_t>(kBlock);
    buf_ = std::make_unique_for_overwrite<char[]>(cap_);
  }
  void open_share(std::uint64_t begin, std::uint64_t end) {
    ranged_ = true;
    share_begin_ = begin;
    limit_ = end;
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) open_error(path_, errno);
    regular_ = true;
    cap_ = 2 * static_cast<std::size_t>(kBlock);
    buf_ = std::make_unique_for_overwrite<char[]>(cap_);
    if (begin >= end) {
      done_ = true;
      return;
    }
    if (begin > 0) {
      // The line holding byte begin - 1 (with its terminator) belongs to an earlier share:
      // what follows it is the first line that starts at or after `begin`.
      first_ = false;
      base_ = begin - 1;
      if (::lseek(fd_, static_cast<off_t>(base_), SEEK_SET) < 0) fail(display_ + ": cannot seek: " + std::generic_category().message(errno));
      const std::uint64_t keep = limit_;
      limit_ = std::numeric_limits<std::uint64_t>::max();
      std::string_view discard;
      next(discard);
      limit_ = keep;
      line_no_ = 0;
    }
  }

 public:
  ~LineSource() {
    if (gz_ != nullptr) gzclose(gz_);
    if (fd_ >= 0) ::close(fd_);
  }
  LineSource(const LineSource&) = delete;
  LineSource& operator=(const LineSource&) = delete;

  // The next physical line without its terminator ("\n", "\r\n" or "\r"); false at end.
  bool next(std::string_view& line) {
    if (done_) return false;
    std::size_t scanned = 0;  // bytes of the pending partial line already searched
    for (;;) {
      if (skip_lf_ && begin_ < end_) {  // second half of a "\r\n" split across blocks
        if (buf_[begin_] == '\n') ++begin_;
        skip_lf_ = false;
      }
      if (!skip_lf_) {
        const char* p = buf_.get();
        std::size_t i = begin_ + scanned;
        while (i < end_ && p[i] != '\n' && p[i] != '\r') ++i;
        if (i < end_) {
          line_start_ = start_offset();
          if (line_start_ >= limit_) {  // the next share's first line
            done_ = true;
            return false;
          }
          line = std::string_view(p + begin_, i - begin_);
          skip_lf_ = p[i] == '\r';
          begin_ = i + 1;
          ++line_no_;
          return true;
        }
        scanned = end_ - begin_;
      }
      if (eof_) {
        skip_lf_ = false;
        if (begin_ == end_) return false;
        line_start_ = start_offset();
        if (line_start_ >= limit_) {
          done_ = true;
          return false;
        }
        line = std::string_view(buf_.get() + begin_, end_ - begin_);  // last line, no terminator
        begin_ = end_;
        ++line_no_;
        return true;
      }
      fill();
    }
  }

  std::size_t line_no() const { return line_no_; }
  bool regular() const { return regular_; }
  // File offset of the first byte of the line last returned.
  std::uint64_t line_start() const { return line_start_; }
  // A share's source: counts are relative to the share.
  bool ranged() const { return ranged_; }
  std::uint64_t share_begin() const { return share_begin_; }
  const std::string& path() const { return path_; }
  const std::string& display() const { return display_; }
  // zlib read the file as it is (not gzip-compressed); after the first line.
  bool direct() const { return gz_ == nullptr || gzdirect(gz_) == 1; }

 private:
  std::uint64_t start_offset() const {
    const std::uint64_t at = base_ + begin_;
    return bom_ != 0 && at == bom_ ? 0 : at;
  }

  [[noreturn]] static void open_error(const std::string& path, int err) {
    fail("cannot open '" + path + "': " + std::generic_category().message(err));
  }

  // gzerror() prefixes the name given to gzdopen ("<fd:3>: "); ours is better.
  static std::string zlib_message(const char* msg) {
    std::string_view m(msg);
    if (m.starts_with("<fd:")) {
      const auto colon = m.find(": ");
      if (colon != std::string_view::npos) m.remove_prefix(colon + 2);
    }
    return std::string(m);
  }

  void fill() {
    if (begin_ > 0) {  // keep only the partial line, at the front
      std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
      base_ += begin_;
      end_ -= begin_;
      begin_ = 0;
    }
    if (cap_ - end_ < kBlock) {
      if (end_ > kMaxLine) fail(display_ + ":" + std::to_string(line_no_ + 1) + ": line longer than 256 MiB");
      const std::size_t grown = std::max(2 * cap_, end_ + kBlock);
      auto bigger = std::make_unique_for_overwrite<char[]>(grown);
      std::memcpy(bigger.get(), buf_.get(), end_);
      buf_ = std::move(bigger);
      cap_ = grown;
    }
    if (ranged_) {
      ssize_t got;
      do got = ::read(fd_, buf_.get() + end_, kBlock);
      while (got < 0 && errno == EINTR);
      if (got < 0) fail(display_ + ": read error: " + std::generic_category().message(errno));
      if (got == 0) eof_ = true;
      if (first_) {
        first_ = false;
        if (got >= 3 && std::memcmp(buf_.get(), "\xEF\xBB\xBF", 3) == 0) begin_ = bom_ = 3;  // UTF-8 BOM
      }
      end_ += static_cast<std::size_t>(got);
      return;
    }
    const int n = gzread(gz_, buf_.get() + end_, kBlock);
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      fail(display_ + ": read error: " + (code == Z_ERRNO ? std::generic_category().message(errno) : zlib_message(msg)));
    }
    if (n == 0) {
      // zlib reports a truncated gzip stream as a soft Z_BUF_ERROR and then returns 0 like a
      // clean end; without this check the cut-off last line would be parsed as data.
      int code = Z_OK;
      const char* msg = gzerror(gz_, &code);
      if (code != Z_OK) fail(display_ + ": read error: " + zlib_message(msg));
      eof_ = true;
    }
    if (first_) {
      first_ = false;
      if (n >= 3 && std::memcmp(buf_.get(), "\xEF\xBB\xBF", 3) == 0) begin_ = bom_ = 3;  // UTF-8 BOM
    }
    end_ += static_cast<std::size_t>(n);
  }

  std::string display_, path_;
  gzFile gz_ = nullptr;
  int fd_ = -1;  // a share's file (read(2)); -1 otherwise
  bool ranged_ = false, done_ = false;
  std::uint64_t share_begin_ = 0, base_ = 0, line_start_ = 0;  // base_: file offset of buf_[0]
  std::uint64_t limit_ = std::numeric_limits<std::uint64_t>::max();
  std::size_t bom_ = 0;  // 3 after a UTF-8 BOM: its bytes belong to the first line (which starts at 0)
  std::unique_ptr<char[]> buf_;  // cap_ bytes; [begin_, end_) holds unread text
  std::size_t cap_ = 0;
  std::size_t begin_ = 0, end_ = 0, line_no_ = 0;
  bool eof_ = false, skip_lf_ = false, first_ = true, regular_ = false;
};

std::size_t file_line(const LineSource& src) {
  if (!src.ranged() || src.share_begin() == 0) return src.line_no();
  // Count the lines that start before this one, from the start of the file (an error path).
  try {
    LineSource whole(src.path(), src.display(), 0, src.line_start());
    std::string_view l;
    std::size_t lines = 0;
    while (whole.next(l)) ++lines;
    return lines + 1;
  } catch (const std::exception&) {
    return src.line_no();
  }
}

std::string display_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

inline bool blank(char c) { return c == ' ' || c == '\t'; }

// Blank lines and '#' comments carry no data in any table format.
bool skipped(std::string_view line) {
  for (const char c : line) {
    if (!blank(c)) return c == '#';
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// Field splitting. Both call f(field, column) with 1-based columns and return the count.

template <class F>
std::size_t split_whitespace(std::string_view line, F&& f) {
  const char* p = line.data();
  const char* const e = p + line.size();
  std::size_t col = 0;
  for (;;) {
    while (p != e && blank(*p)) ++p;
    if (p == e) return col;
    const char* s = p;
    while (p != e && !blank(*p)) ++p;
    f(std::string_view(s, static_cast<std::size_t>(p - s)), ++col);
  }
}

template <class F>
std::size_t split_csv(std::string_view line, std::string& scratch, const Where& w, F&& f) {
  const char* p = line.data();
  const char* const e = p + line.size();
  std::size_t col = 0;
  for (;;) {
    ++col;
    while (p != e && blank(*p)) ++p;
    std::string_view field;
    if (p != e && *p == '"') {
      // Quoted: unescape "" into scratch; commas inside are data.
      ++p;
      scratch.clear();
      for (;;) {
        const char* q = p == e ? nullptr : static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(e - p)));
        if (q == nullptr) fail(w.at(col) + "unterminated quoted field (quoted fields cannot span lines)");
        scratch.append(p, q);
        p = q + 1;
        if (p != e && *p == '"') {
          scratch.push_back('"');
          ++p;
          continue;
        }
        break;
      }
      while (p != e && blank(*p)) ++p;
      if (p != e && *p != ',')
        fail(w.at(col) + "expected ',' or end of line after a closing quote, found " + show(std::string_view(p, 1)));
      field = scratch;
    } else {
      const char* q = p == e ? nullptr : static_cast<const char*>(std::memchr(p, ',', static_cast<std::size_t>(e - p)));
      const char* end = q != nullptr ? q : e;
      const char* t = end;
      while (t != p && blank(t[-1])) --t;
      field = std::string_view(p, static_cast<std::size_t>(t - p));
      p = end;
    }
    f(field, col);
    if (p == e) return col;
    ++p;  // the comma
  }
}

// "idx:val" with a non-empty all-digit index.
bool looks_like_pair(std::string_view tok) {
  const auto colon = tok.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  return std::all_of(tok.begin(), tok.begin() + static_cast<std::ptrdiff_t>(colon),
                     [](char c) { return c >= '0' && c <= '9'; });
}

TableFormat detect_format(std::string_view line) {
  bool pair = false, comma_after_first = false;
  split_whitespace(line, [&](std::string_view tok, std::size_t col) {
    if (col == 1) return;  // libsvm multi-label files put commas in the first token
    if (tok.find(',') != std::string_view::npos) comma_after_first = true;
    if (looks_like_pair(tok)) pair = true;
  });
  if (pair && !comma_after_first) return TableFormat::Libsvm;
  return line.find(',') != std::string_view::npos ? TableFormat::Csv : TableFormat::Whitespace;
}

// One libsvm line: "label idx:val idx:val ... [# comment]". With row == nullptr only
// validates (the first pass that finds dim). Returns the largest index.
std::size_t parse_libsvm(std::string_view line, const Where& w, Real* row, std::size_t dim, double* label) {
  if (row != nullptr) std::fill(row, row + dim, Real(0));
  std::size_t prev = 0;
  bool stop = false;
  split_whitespace(line, [&](std::string_view tok, std::size_t col) {
    if (stop || tok.front() == '#') {  // trailing comment
      stop = true;
      return;
    }
    if (col == 1) {
      if (tok.find(':') != std::string_view::npos)
        fail(w.at(col) + "expected a label before the features, found " + show(tok));
      const double v = number(tok, w, col);
      if (label != nullptr) *label = v;
      return;
    }
    const auto colon = tok.find(':');
    std::uint64_t idx = 0;
    const char* ib = tok.data();
    const char* ie = ib + (colon == std::string_view::npos ? 0 : colon);
    const auto [ip, iec] = std::from_chars(ib, ie, idx);
    if (colon == std::string_view::npos || colon == 0 || ip != ie || iec != std::errc())
      fail(w.at(col) + "expected 'index:value', found " + show(tok));
    if (idx == 0) fail(w.at(col) + "feature index 0 (indices start at 1)");
    if (idx <= prev)
      fail(w.at(col) + "feature index " + std::to_string(idx) + " after " + std::to_string(prev) +
           " (indices must be increasing)");
    const Real v = to_real(tok.substr(colon + 1), w, col);
    if (row != nullptr) {
      if (idx > dim) fail(w.at() + "feature index " + std::to_string(idx) + " exceeds --dim " + std::to_string(dim));
      row[idx - 1] = v;
    }
    prev = static_cast<std::size_t>(idx);
  });
  return prev;
}

}  // namespace

// -----------------------------------------------------------------------------------------

TableFormat parse_table_format(const std::string& name) {
  if (name == "auto") return TableFormat::Auto;
  if (name == "csv") return TableFormat::Csv;
  if (name == "whitespace") return TableFormat::Whitespace;
  if (name == "libsvm") return TableFormat::Libsvm;
  throw UsageError("unknown table format '" + name + "' (expected auto, csv, whitespace or libsvm)");
}

bool ColumnSelection::uses_names() const {
  for (const auto* list : {&keep, &drop, &label_drop})
    for (const ColumnRef& r : *list)
      if (!r.name.empty()) return true;
  return false;
}

std::vector<ColumnRef> parse_column_spec(const std::string& spec, const std::string& option) {
  auto digits = [](std::string_view t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  auto column = [&](std::string_view t) -> std::size_t {
    std::size_t v = 0;
    const auto [q, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || q != t.data() + t.size() || v > (std::size_t{1} << 32))
      throw UsageError(option + ": column " + std::string(t) + " is out of range");
    if (v == 0) throw UsageError(option + ": columns are numbered from 1, got 0 in '" + spec + "'");
    return v;
  };
  std::vector<ColumnRef> out;
  std::string_view rest(spec);
  for (;;) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && blank(item.front())) item.remove_prefix(1);
    while (!item.empty() && blank(item.back())) item.remove_suffix(1);
    if (item.empty())
      throw UsageError(option + ": empty item in '" + spec + "' (expected comma-separated column numbers, ranges A-B or header names)");
    ColumnRef r;
    r.option = option;
    const std::size_t dash = item.find('-');
    if (digits(item)) {
      r.first = r.last = column(item);
    } else if (dash != std::string_view::npos && digits(item.substr(0, dash)) && digits(item.substr(dash + 1))) {
      r.first = column(item.substr(0, dash));
      r.last = column(item.substr(dash + 1));
      if (r.last < r.first) throw UsageError(option + ": the range " + std::string(item) + " ends before it starts");
    } else {
      r.name = std::string(item);
    }
    out.push_back(std::move(r));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

struct TableReader::Impl {
  std::string path, display;
  TableOptions opts;
  LineSource src;
  TableFormat format = TableFormat::Auto;
  std::size_t label_col = 0;  // 1-based, 0 = none (CSV/whitespace)
  std::size_t nfields = 0;    // fields per line (CSV/whitespace)
  // Per field (CSV/whitespace): its place in the feature row, or kSkip / kLabel.
  static constexpr std::ptrdiff_t kSkip = -1, kLabel = -2;
  std::vector<std::ptrdiff_t> role;
  std::size_t count_line = 0; // the line that fixed nfields, for ragged-row messages
  std::size_t dim = 0, rows = 0;
  bool header = false;
  std::optional<std::uint64_t> header_at;  // the header line's byte offset (a whole-file reader)
  std::optional<std::uint64_t> skip_at;    // a share: the header line to skip, if it lies here
  std::vector<std::string> names;
  std::string scratch;  // unquoted CSV field
  // The first data row, parsed during construction.
  bool pending = false;
  std::vector<Real> pending_row;
  double pending_label = 0;

  Impl(const std::string& p, const TableOptions& o) : path(p), display(display_name(p)), opts(o), src(p, display, o.share) {
    if (opts.label_column < 0)
      throw UsageError("label column must be 0 (none) or a 1-based column, got " + std::to_string(opts.label_column));
    if (opts.share) {
      // A share: the layout comes from the start of the whole file; no first line to look at.
      if (opts.format != TableFormat::Csv && opts.format != TableFormat::Whitespace)
        throw UsageError(display + ": a share of a table is read as csv or whitespace, not libsvm or auto");
      format = opts.format;
      nfields = opts.share->fields;
      label_col = static_cast<std::size_t>(opts.label_column);
      if (nfields == 0 || label_col > nfields) throw UsageError(display + ": a share needs the table's field count");
      skip_at = opts.share->header_at;
      if (!skip_at) {
        resolve(nullptr, Where{&display, 1});
      } else {
        // The header line (for names), read from the start of the file up to its offset.
        LineSource head(path, display, 0, *skip_at + 1);
        std::string_view l;
        while (head.next(l) && head.line_start() != *skip_at) {
        }
        std::vector<std::string> header_fields = split_fields(l, Where{&display, head.line_no()});
        resolve(&header_fields, Where{&display, head.line_no()});
      }
      return;
    }
    std::string_view line;
    if (!next_data_line(line)) fail(display + ": no data rows");
    format = opts.format == TableFormat::Auto ? detect_format(line) : opts.format;
    if (format == TableFormat::Libsvm)
      init_libsvm(line);
    else
      init_delimited(line);
  }

  bool next_data_line(std::string_view& line) {
    while (src.next(line)) {
      if (!skipped(line) && !(skip_at && src.line_start() == *skip_at)) return true;
    }
    return false;
  }

  Where where() const { return Where{&display, src.line_no(), src.ranged() ? &src : nullptr}; }

  // Rows are dense float32 of `dim` columns, read in chunks of at least kFirstChunkRows (or
  // max_rows): a sparse file's largest index decides the width, so one huge index (a typo, a
  // hostile file) would ask for terabytes. Refused before allocating, with the estimate.
  void check_chunk(std::size_t rows, const std::string& what) const {
    const double need = static_cast<double>(dim) * sizeof(Real) * static_cast<double>(rows);
    const double memory = physical_memory_bytes();
    if (need > 0.8 * memory)
      throw ResourceError(what + ": a chunk of " + std::to_string(rows) + " rows x " + std::to_string(dim) +
                          " columns needs " + std::to_string(static_cast<long long>(need / 1048576.0)) +
                          " MiB, more than 80% of this machine's memory; refused before allocating");
  }

  void init_libsvm(std::string_view line) {
    if (!opts.columns.keep.empty() || !opts.columns.drop.empty())
      throw UsageError(display + ": a column selection (--columns, --drop) applies to CSV and whitespace tables, not to "
                                 "libsvm input, whose features are index:value pairs");
    dim = opts.dim;
    if (dim == 0) {
      if (!src.regular())
        throw UsageError(display + ": libsvm input from stdin or a pipe needs --dim (the number of features); "
                                   "without it the file is read twice to find the largest index");
      // First pass over a separate handle; `line` of the main source stays valid.
      LineSource scan(path, display);
      std::string_view l;
      std::size_t widest_line = 0;
      while (scan.next(l)) {
        if (skipped(l)) continue;
        const std::size_t top = parse_libsvm(l, Where{&display, scan.line_no()}, nullptr, 0, nullptr);
        if (top > dim) dim = top, widest_line = scan.line_no();
      }
      if (dim == 0) fail(display + ": no feature indices found in the libsvm input; give --dim");
      check_chunk(kFirstChunkRows, display + ":" + std::to_string(widest_line) + ": feature index " + std::to_string(dim));
    } else {
      check_chunk(kFirstChunkRows, display + ": --dim " + std::to_string(dim));
    }
    pending_row.resize(dim);
    parse_libsvm(line, where(), pending_row.data(), dim, &pending_label);
    pending = true;
  }

  std::vector<std::string> split_fields(std::string_view line, const Where& w) {
    std::vector<std::string> fields;
    auto collect = [&](std::string_view f, std::size_t) { fields.emplace_back(f); };
    if (format == TableFormat::Csv) split_csv(line, scratch, w, collect);
    else split_whitespace(line, collect);
    return fields;
  }

  // The features' columns: `role` and dim from the selection, label_col and nfields. `header`:
  // the header line's fields (one fewer than nfields: they name the columns from the second on),
  // or nullptr when the file has none; `w` the line messages name.
  void resolve(const std::vector<std::string>* header, const Where& w) {
    const std::string s = nfields == 1 ? "" : "s";
    if (label_col > nfields)
      fail(w.at() + "label column " + std::to_string(label_col) + " is out of range: the table has " +
           std::to_string(nfields) + " column" + s);
    const std::size_t shift = header != nullptr && header->size() + 1 == nfields ? 1 : 0;
    auto columns_of = [&](const ColumnRef& r, const char* list, auto&& each) {
      const std::string opt = r.option.empty() ? std::string(list) : r.option;
      if (r.name.empty()) {
        if (r.last > nfields)
          fail(w.at() + opt + ": column " + std::to_string(r.last) + " is out of range: the table has " +
               std::to_string(nfields) + " column" + s);
        for (std::size_t c = r.first; c <= r.last; ++c) each(c);
        return;
      }
      if (header == nullptr)
        fail(w.at() + opt + ": the column name " + show(r.name) + " needs a header line, and " + display +
             " has none (its first line is a data row); select columns by number");
      std::vector<std::size_t> hits;
      for (std::size_t i = 0; i < header->size(); ++i)
        if ((*header)[i] == r.name) hits.push_back(i + 1 + shift);
      if (hits.empty()) {
        std::string all;
        for (const std::string& n : *header) all += (all.empty() ? "" : ", ") + show(n);
        fail(w.at() + opt + ": no column named " + show(r.name) + " in the header (its names: " + all + ")");
      }
      if (hits.size() > 1)
        fail(w.at() + opt + ": the header names columns " + std::to_string(hits[0]) + " and " + std::to_string(hits[1]) +
             " " + show(r.name) + "; select by number");
      each(hits[0]);
    };
    std::vector<std::size_t> order;  // kept columns, in feature order
    std::vector<char> kept(nfields + 1, 0), out(nfields + 1, 0);
    if (opts.columns.keep.empty()) {
      for (std::size_t c = 1; c <= nfields; ++c) order.push_back(c);
    } else {
      for (const ColumnRef& r : opts.columns.keep)
        columns_of(r, "columns", [&](std::size_t c) {
          const std::string opt = r.option.empty() ? std::string("columns") : r.option;
          if (kept[c]) fail(w.at() + opt + ": column " + std::to_string(c) + " is selected twice");
          kept[c] = 1;
          order.push_back(c);
        });
    }
    for (const ColumnRef& r : opts.columns.drop) columns_of(r, "drop", [&](std::size_t c) { out[c] = 1; });
    for (const ColumnRef& r : opts.columns.label_drop) columns_of(r, "label column", [&](std::size_t c) { out[c] = 1; });
    role.assign(nfields, kSkip);
    if (label_col > 0) role[label_col - 1] = kLabel;
    dim = 0;
    names.clear();
    for (const std::size_t c : order) {
      if (out[c] || c == label_col) continue;
      role[c - 1] = static_cast<std::ptrdiff_t>(dim++);
      if (header != nullptr) names.push_back(c > shift ? (*header)[c - 1 - shift] : std::string());
    }
    if (dim == 0) {
      if (opts.columns.empty()) fail(w.at() + "no feature columns (the only column is the label)");
      fail(w.at() + "no feature columns: the column selection leaves none of the table's " + std::to_string(nfields) +
           " column" + s);
    }
  }

  void init_delimited(std::string_view line) {
    const std::size_t first_line = src.line_no();
    std::vector<std::string> fields = split_fields(line, where());
    nfields = fields.size();
    count_line = first_line;
    label_col = static_cast<std::size_t>(opts.label_column);
    const Where at_first{&display, first_line};
    auto text = [](const std::string& f) { return !f.empty() && !is_number(f); };
    if (opts.header.has_value()) {
      header = *opts.header;
    } else if (opts.columns.uses_names()) {
      header = std::any_of(fields.begin(), fields.end(), text);
    } else {
      // A header iff a feature field is not a number. A selection that does not fit the first
      // line (a header one name short of the rows) is checked again below; meanwhile every
      // field but the label's counts.
      try {
        resolve(nullptr, at_first);
      } catch (const InputError&) {
        role.assign(nfields, 0);
        if (label_col > 0 && label_col <= nfields) role[label_col - 1] = kLabel;
      }
      for (std::size_t c = 0; c < nfields && !header; ++c) header = role[c] >= 0 && text(fields[c]);
    }
    if (!header) {
      resolve(nullptr, at_first);
    } else {
      header_at = src.line_start();
      if (!next_data_line(line)) fail(display + ": no data rows");
      // A header one name short of the rows: the first column is an unnamed row id.
      std::size_t row_fields = 0;
      const Where w = where();
      auto count = [](std::string_view, std::size_t) {};
      row_fields = format == TableFormat::Csv ? split_csv(line, scratch, w, count) : split_whitespace(line, count);
      if (row_fields == nfields + 1) {
        nfields = row_fields;
        count_line = src.line_no();
      }
      resolve(&fields, at_first);
    }
    pending_row.resize(dim);
    parse_delimited(line, pending_row.data(), &pending_label);
    pending = true;
  }

  void parse_delimited(std::string_view line, Real* row, double* label) {
    const Where w = where();
    *label = 0;
    const std::ptrdiff_t* roles = role.data();
    auto on_field = [&](std::string_view f, std::size_t col) {
      if (col > nfields) return;  // only counted, for the ragged-row message
      const std::ptrdiff_t r = roles[col - 1];
      if (r >= 0) [[likely]]
        row[r] = to_real(f, w, col);
      else if (r == kLabel)
        *label = number(f, w, col);
    };
    const std::size_t n =
        format == TableFormat::Csv ? split_csv(line, scratch, w, on_field) : split_whitespace(line, on_field);
    if (n != nfields) fail_ragged(w, n, nfields, count_line);
  }

  void parse(std::string_view line, Real* row, double* label) {
    if (format == TableFormat::Libsvm) {
      *label = 0;
      parse_libsvm(line, where(), row, dim, label);
    } else {
      parse_delimited(line, row, label);
    }
  }
};

TableReader::TableReader(const std::string& path, TableOptions opts) : impl_(std::make_unique<Impl>(path, opts)) {}
TableReader::~TableReader() = default;
TableReader::TableReader(TableReader&&) noexcept = default;
TableReader& TableReader::operator=(TableReader&&) noexcept = default;

std::size_t TableReader::dim() const { return impl_->dim; }
TableFormat TableReader::format() const { return impl_->format; }
bool TableReader::has_labels() const { return impl_->format == TableFormat::Libsvm || impl_->label_col > 0; }
std::size_t TableReader::rows_read() const { return impl_->rows; }

std::uint64_t TableReader::count_remaining() {
  Impl& im = *impl_;
  std::uint64_t n = im.pending ? 1 : 0;
  im.pending = false;
  im.pending_row = {};
  std::string_view line;
  while (im.next_data_line(line)) ++n;
  return n;
}

TableLayout TableReader::layout() const {
  const Impl& im = *impl_;
  TableLayout l;
  l.format = im.format;
  l.fields = im.nfields;
  l.dim = im.dim;
  l.header_at = im.header_at;
  struct stat st {};
  const bool regular = im.path != "-" && ::stat(im.path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (regular) l.bytes = static_cast<std::uint64_t>(st.st_size);
  if (im.opts.share) l.why_not = "already a share";
  else if (!regular) l.why_not = "not a regular file (stdin or a pipe)";
  else if (!im.src.direct()) l.why_not = "gzip-compressed";
  else if (im.format == TableFormat::Libsvm) l.why_not = "libsvm";
  l.splittable = l.why_not.empty();
  return l;
}
const std::string& TableReader::path() const { return impl_->path; }
bool TableReader::had_header() const { return impl_->header; }
std::vector<std::string> TableReader::column_names() const { return impl_->names; }

std::size_t TableReader::next_chunk(DenseMatrix& out, std::size_t max_rows, std::vector<double>* labels) {
  Impl& im = *impl_;
  const auto dim = static_cast<Eigen::Index>(im.dim);
  if (labels != nullptr) labels->clear();
  if (max_rows == 0) {
    out.resize(0, dim);
    return 0;
  }
  // Start small and double, so a huge max_rows (read_table) does not allocate up front.
  // Row-major with fixed column count: conservativeResize is a realloc, no copy loop.
  std::size_t cap = std::min(max_rows, kFirstChunkRows);
  im.check_chunk(cap, im.display);
  out.resize(static_cast<Eigen::Index>(cap), dim);
  std::size_t n = 0;
  double label = 0;
  if (im.pending) {
    std::copy(im.pending_row.begin(), im.pending_row.end(), out.data());
    if (labels != nullptr) labels->push_back(im.pending_label);
    im.pending = false;
    im.pending_row = {};
    n = 1;
  }
  std::string_view line;
  while (n < max_rows && im.next_data_line(line)) {
    if (n == cap) {
      cap = std::min(max_rows, 2 * cap);
      im.check_chunk(cap, im.display);
      out.conservativeResize(static_cast<Eigen::Index>(cap), dim);
    }
    im.parse(line, out.data() + n * im.dim, &label);
    if (labels != nullptr) labels->push_back(label);
    ++n;
  }
  if (n != cap) out.conservativeResize(static_cast<Eigen::Index>(n), dim);
  im.rows += n;
  return n;
}

struct CsvFieldReader::Impl {
  std::string path, display;
  LineSource src;
  std::string scratch;  // unquoted field
  Impl(const std::string& p) : path(p), display(display_name(p)), src(p, display) {}
};

CsvFieldReader::CsvFieldReader(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}
CsvFieldReader::~CsvFieldReader() = default;
CsvFieldReader::CsvFieldReader(CsvFieldReader&&) noexcept = default;
CsvFieldReader& CsvFieldReader::operator=(CsvFieldReader&&) noexcept = default;

bool CsvFieldReader::next(std::vector<std::string>& fields) {
  Impl& im = *impl_;
  std::string_view line;
  do {
    if (!im.src.next(line)) return false;
  } while (skipped(line));
  fields.clear();
  split_csv(line, im.scratch, Where{&im.display, im.src.line_no()},
            [&](std::string_view f, std::size_t) { fields.emplace_back(f); });
  return true;
}

std::size_t CsvFieldReader::line_no() const { return impl_->src.line_no(); }
const std::string& CsvFieldReader::path() const { return impl_->path; }

DenseMatrix read_table(const std::string& path, const TableOptions& opts, std::vector<double>* labels) {
  TableReader reader(path, opts);
  DenseMatrix out;
  reader.next_chunk(out, std::numeric_limits<std::size_t>::max(), labels);
  return out;
}

namespace {

// The sets of `src`'s lines (see read_sets).
SetCollection read_sets_from(LineSource& src, const std::string& display) {
  SetCollection sets;
  std::vector<std::uint32_t> cur;
  std::string_view line;
  auto sep = [](char c) { return c == ' ' || c == '\t' || c == ','; };
  while (src.next(line)) {
    const char* p = line.data();
    const char* const e = p + line.size();
    while (p != e && blank(*p)) ++p;
    if (p != e && *p == '#') continue;
    cur.clear();
    std::size_t col = 0;
    for (;;) {
      while (p != e && sep(*p)) ++p;
      if (p == e) break;
      const char* s = p;
      while (p != e && !sep(*p)) ++p;
      ++col;
      std::uint32_t id = 0;
      const auto [q, ec] = std::from_chars(s, p, id);
      if (q != p || ec != std::errc())
        fail(Where{&display, src.line_no(), src.ranged() ? &src : nullptr}.at(col) +
             "expected an element id (an integer 0..4294967295), found " + show(std::string_view(s, static_cast<std::size_t>(p - s))));
      cur.push_back(id);
    }
    std::sort(cur.begin(), cur.end());
    cur.erase(std::unique(cur.begin(), cur.end()), cur.end());
    sets.push_back(cur);
  }
  return sets;
}

}  // namespace

SetCollection read_sets(const std::string& path) {
  const std::string display = display_name(path);
  LineSource src(path, display);
  SetCollection sets = read_sets_from(src, display);
  if (sets.size() == 0) fail(display + ": no sets");
  return sets;
}

SetCollection read_sets(const std::string& path, std::uint64_t begin, std::uint64_t end) {
  const std::string display = display_name(path);
  LineSource src(path, display, begin, end);
  return read_sets_from(src, display);
}

TextFileLayout text_file_layout(const std::string& path) {
  TextFileLayout l;
  const std::string display = display_name(path);
  LineSource src(path, display);  // throws "cannot open"
  std::string_view first;
  src.next(first);  // zlib has looked at the first bytes: gzip or not
  struct stat st {};
  const bool regular = path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (regular) l.bytes = static_cast<std::uint64_t>(st.st_size);
  if (!regular) l.why_not = "not a regular file (stdin or a pipe)";
  else if (!src.direct()) l.why_not = "gzip-compressed";
  l.splittable = l.why_not.empty();
  return l;
}

struct TextLines::Impl {
  std::string display;
  LineSource src;
  Impl(const std::string& p) : display(display_name(p)), src(p, display) {}
  Impl(const std::string& p, std::uint64_t begin, std::uint64_t end) : display(display_name(p)), src(p, display, begin, end) {}
};

TextLines::TextLines(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}
TextLines::TextLines(const std::string& path, std::uint64_t begin, std::uint64_t end)
    : impl_(std::make_unique<Impl>(path, begin, end)) {}
TextLines::~TextLines() = default;
TextLines::TextLines(TextLines&&) noexcept = default;
TextLines& TextLines::operator=(TextLines&&) noexcept = default;
bool TextLines::next(std::string_view& line) { return impl_->src.next(line); }
std::uint64_t TextLines::file_line() const { return privrace::file_line(impl_->src); }

}  // namespace privrace
