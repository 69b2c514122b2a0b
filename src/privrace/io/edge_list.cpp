#include "privrace/io/edge_list.hpp"

#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string_view>

#include "privrace/core/memory.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/io/table_reader.hpp"

namespace privrace {

namespace {

constexpr std::uint64_t kMaxId = 0xFFFFFFFEULL;  // ids are uint32 and n = max id + 1 must fit too
constexpr double kMiB = 1048576.0;

std::string mib(double bytes) { return std::to_string(static_cast<long long>(bytes / kMiB + 0.5)) + " MiB"; }

std::string show(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 60)) out += (c >= 32 && c < 127) ? c : '?';
  if (s.size() > 60) out += "...";
  return "'" + out + "'";
}

// Bytes the CSR build needs at its peak, for m stored edge entries over n nodes.
double csr_bytes(double n, double m, bool symmetrise) {
  // offsets + cursors (8 B a node each) and the ids (4 B an entry); symmetrising adds the
  // transpose (another offsets + ids) and the merged output (up to twice the entries).
  const double directed = 16.0 * (n + 1) + 4.0 * m;
  return symmetrise ? directed + 8.0 * (n + 1) + 4.0 * m + 8.0 * (n + 1) + 8.0 * m : directed;
}

void check_budget(double need, std::uint64_t limit, const std::string& what) {
  if (need > static_cast<double>(limit))
    throw ResourceError(what + " needs about " + mib(need) + ", more than the " + mib(static_cast<double>(limit)) +
                        " allowed (80% of memory unless a limit is set); refused before allocating");
}

bool is_sep(char c) { return c == ' ' || c == '\t' || c == ','; }

}  // namespace

std::uint64_t graph_memory_limit(std::uint64_t limit) {
  if (limit) return limit;
  const double mem = physical_memory_bytes();
  return static_cast<std::uint64_t>(0.8 * mem);
}

EdgeListFormat parse_edge_list_format(const std::string& name) {
  if (name == "auto") return EdgeListFormat::Auto;
  if (name == "edgelist" || name == "snap") return EdgeListFormat::Snap;
  if (name == "jlg") return EdgeListFormat::Jlg;
  throw UsageError("unknown edge list format '" + name + "' (expected auto, edgelist or jlg)");
}

SetCollection transpose_sets(const SetCollection& sets, std::uint64_t nodes) {
  SetCollection t;
  t.offsets.assign(nodes + 1, 0);
  for (const std::uint32_t v : sets.ids) ++t.offsets[v + 1];
  for (std::uint64_t i = 0; i < nodes; ++i) t.offsets[i + 1] += t.offsets[i];
  t.ids.resize(sets.ids.size());
  std::vector<std::uint64_t> cursor(t.offsets.begin(), t.offsets.end() - 1);
  // Sources in increasing order, so every transposed set comes out sorted.
  for (std::size_t u = 0; u < sets.size(); ++u)
    for (const std::uint32_t v : sets.set(u)) t.ids[cursor[v]++] = static_cast<std::uint32_t>(u);
  return t;
}

namespace {
// Adjacency lists by source: counting sort (degrees by relaxed atomic increments: contention is
// rare; prefix sums; scatter). Order inside a list is fixed later by sorting, so threads do not
// matter. Self-loops are counted, and dropped unless kept.
SetCollection bucket_by_source(const std::vector<std::uint64_t>& edges, std::uint64_t nodes, bool keep_self_loops,
                               std::uint64_t& self_loops) {
  const std::size_t m = edges.size();
  SetCollection d;
  d.offsets.assign(nodes + 1, 0);
  std::uint64_t loops = 0;
#pragma omp parallel for reduction(+ : loops) schedule(static)
  for (std::size_t i = 0; i < m; ++i) {
    const auto u = static_cast<std::uint32_t>(edges[i] >> 32), v = static_cast<std::uint32_t>(edges[i]);
    if (u == v) {
      ++loops;
      if (!keep_self_loops) continue;
    }
    std::atomic_ref<std::uint64_t>(d.offsets[u + 1]).fetch_add(1, std::memory_order_relaxed);
  }
  self_loops += loops;
  for (std::uint64_t i = 0; i < nodes; ++i) d.offsets[i + 1] += d.offsets[i];
  d.ids.resize(d.offsets[nodes]);
  std::vector<std::uint64_t> cursor(d.offsets.begin(), d.offsets.end() - 1);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < m; ++i) {
    const auto u = static_cast<std::uint32_t>(edges[i] >> 32), v = static_cast<std::uint32_t>(edges[i]);
    if (u == v && !keep_self_loops) continue;
    d.ids[std::atomic_ref<std::uint64_t>(cursor[u]).fetch_add(1, std::memory_order_relaxed)] = v;
  }
  return d;
}

// Out(u) u In(u): each sorted list merged with its transpose's.
SetCollection symmetrised(const SetCollection& d, std::uint64_t nodes) {
  const SetCollection t = transpose_sets(d, nodes);
  SetCollection out;
  out.offsets.assign(nodes + 1, 0);
#pragma omp parallel for schedule(dynamic, 1024)
  for (std::uint64_t u = 0; u < nodes; ++u) {
    const auto a = d.set(u), b = t.set(u);
    std::size_t i = 0, j = 0, k = 0;
    while (i < a.size() && j < b.size()) {
      if (a[i] < b[j]) ++i;
      else if (b[j] < a[i]) ++j;
      else ++i, ++j;
      ++k;
    }
    out.offsets[u + 1] = k + (a.size() - i) + (b.size() - j);
  }
  for (std::uint64_t i = 0; i < nodes; ++i) out.offsets[i + 1] += out.offsets[i];
  out.ids.resize(out.offsets[nodes]);
#pragma omp parallel for schedule(dynamic, 1024)
  for (std::uint64_t u = 0; u < nodes; ++u) {
    const auto a = d.set(u), b = t.set(u);
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), out.ids.begin() + static_cast<std::ptrdiff_t>(out.offsets[u]));
  }
  return out;
}
}  // namespace

// Each list sorted and de-duplicated in place; then compacted in order (serial: in-place moves
// only go left, so a node's new range never overlaps a later node's unread data).
std::uint64_t sort_and_deduplicate(SetCollection& d, std::uint64_t nodes, int threads) {
  std::vector<std::uint64_t> kept(nodes);
  std::uint64_t dups = 0;
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) schedule(dynamic, 1024) reduction(+ : dups)
  for (std::uint64_t u = 0; u < nodes; ++u) {
    auto* b = d.ids.data() + d.offsets[u];
    auto* e = d.ids.data() + d.offsets[u + 1];
    std::sort(b, e);
    auto* ue = std::unique(b, e);
    kept[u] = static_cast<std::uint64_t>(ue - b);
    dups += static_cast<std::uint64_t>(e - ue);
  }
  std::uint64_t pos = 0;
  for (std::uint64_t u = 0; u < nodes; ++u) {
    const std::uint64_t from = d.offsets[u];
    if (from != pos) std::memmove(d.ids.data() + pos, d.ids.data() + from, kept[u] * sizeof(std::uint32_t));
    d.offsets[u] = pos;
    pos += kept[u];
  }
  d.offsets[nodes] = pos;
  d.ids.resize(pos);
  d.ids.shrink_to_fit();
  return dups;
}

SetCollection edges_to_sets(std::vector<std::uint64_t>& edges, std::uint64_t nodes, bool symmetrise, bool keep_self_loops,
                            EdgeListReport& report, std::uint64_t memory_limit) {
  const std::uint64_t limit = graph_memory_limit(memory_limit);
  const std::size_t m = edges.size();
  check_budget(csr_bytes(static_cast<double>(nodes), static_cast<double>(m), symmetrise) + 8.0 * static_cast<double>(m), limit,
               "a graph of " + std::to_string(nodes) + " nodes and " + std::to_string(m) + " edges");
  SetCollection d = bucket_by_source(edges, nodes, keep_self_loops, report.self_loops);
  std::vector<std::uint64_t>().swap(edges);
  report.duplicates += sort_and_deduplicate(d, nodes);
  SetCollection out = symmetrise ? symmetrised(d, nodes) : std::move(d);
  report.nodes = nodes;
  report.edges = out.ids.size();
  report.symmetrised = symmetrise;
  report.max_degree = 0;
  report.empty_sets = 0;
  for (std::uint64_t u = 0; u < nodes; ++u) {
    const std::uint64_t deg = out.offsets[u + 1] - out.offsets[u];
    report.max_degree = std::max(report.max_degree, deg);
    report.empty_sets += deg == 0;
  }
  return out;
}

namespace {

// Streams lines out of a plain or gzip file (zlib reads both) in 1 MiB blocks; a UTF-8 BOM at
// the start is skipped (as by TextLines, which reads byte shares under mpirun).
class GzLines {
 public:
  explicit GzLines(const std::string& path) : path_(path) {
    file_ = path == "-" ? gzdopen(::dup(0), "rb") : gzopen(path.c_str(), "rb");
    if (!file_) throw InputError("cannot open '" + path + "': " + (errno ? std::strerror(errno) : "out of memory"));
    gzbuffer(file_, 1u << 20);
    block_ = std::make_unique_for_overwrite<char[]>(kBlockSize);  // uninitialised: no 1 MiB memset a file
  }
  ~GzLines() { gzclose(file_); }
  GzLines(const GzLines&) = delete;
  GzLines& operator=(const GzLines&) = delete;

  // Calls f(line, line_number) for each line without its end ("\n", "\r\n" or "\r").
  template <typename F>
  void for_each(F&& f) {
    std::string carry;
    std::uint64_t line_no = 0;
    bool skip_lf = false;  // the previous block ended in '\r': a leading '\n' belongs to it
    bool first = true;
    for (;;) {
      const int n = gzread(file_, block_.get(), kBlockSize);
      if (n < 0) {
        int err = 0;
        const char* msg = gzerror(file_, &err);
        throw InputError(path_ + ": read error after line " + std::to_string(line_no) + ": " + (msg ? msg : "zlib error"));
      }
      if (n == 0) {
        // zlib reports a truncated gzip stream as a soft Z_BUF_ERROR and then returns 0 like a
        // clean end: without this check the edges before the cut would be read as the graph.
        int err = Z_OK;
        const char* msg = gzerror(file_, &err);
        if (err != Z_OK)
          throw InputError(path_ + ": read error after line " + std::to_string(line_no) + ": " + (msg ? msg : "zlib error"));
        break;
      }
      const char* p = block_.get();
      const char* const end = p + n;
      if (first && n >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;  // a UTF-8 BOM, as the table reader
      first = false;
      if (skip_lf && p != end && *p == '\n') ++p;
      skip_lf = false;
      while (p != end) {
        const char* q = p;
        while (q != end && *q != '\n' && *q != '\r') ++q;
        if (q == end) {
          carry.append(p, end);
          break;
        }
        ++line_no;
        if (!carry.empty()) {
          carry.append(p, q);
          f(std::string_view(carry), line_no);
          carry.clear();
        } else {
          f(std::string_view(p, static_cast<std::size_t>(q - p)), line_no);
        }
        if (*q == '\r') {
          if (q + 1 == end) skip_lf = true;
          else if (q[1] == '\n') ++q;
        }
        p = q + 1;
      }
    }
    if (!carry.empty()) f(std::string_view(carry), ++line_no);
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  static constexpr unsigned kBlockSize = 1u << 20;
  std::unique_ptr<char[]> block_;
};

// Parses an unsigned decimal field; returns false if it is not one (or exceeds 2^63).
bool parse_uint(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = v;
  return true;
}

// "# Nodes: 82168 Edges: 948464" (SNAP's header comment).
void scan_snap_comment(std::string_view line, EdgeListReport& rep) {
  auto number_after = [&](std::string_view key) -> std::uint64_t {
    const auto k = line.find(key);
    if (k == std::string_view::npos) return 0;
    std::size_t i = k + key.size();
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] >= '0' && line[j] <= '9') ++j;
    std::uint64_t v = 0;
    return parse_uint(line.substr(i, j - i), v) ? v : 0;
  };
  if (const auto n = number_after("Nodes:")) rep.declared_nodes = n;
  if (const auto e = number_after("Edges:")) rep.declared_edges = e;
}

}  // namespace

namespace {

// The fields of an edge line after its leading blanks (`i`): runs of tabs, spaces or commas
// separate them; at most 4 are kept. Returns how many.
std::size_t split_fields(std::string_view line, std::size_t i, std::string_view (&f)[4]) {
  std::size_t nf = 0;
  while (i < line.size() && nf < 4) {
    std::size_t j = i;
    while (j < line.size() && !is_sep(line[j])) ++j;
    f[nf++] = line.substr(i, j - i);
    while (j < line.size() && is_sep(line[j])) ++j;
    i = j;
  }
  return nf;
}

// The first non-blank byte of a line, or npos for a blank line.
std::size_t first_field(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  return i == line.size() ? std::string_view::npos : i;
}

// The (0-based) source and target of an edge line, checked against the declared range and
// 32 bits; `where()` gives the message prefix "PATH:LINE: ".
template <typename Where>
void edge_ids(std::string_view line, const std::string_view (&f)[4], std::size_t nf, bool jlg, std::uint64_t declared,
              const Where& where, std::uint64_t (&id)[2]) {
  if (nf < 2)
    throw InputError(where() + "expected two node ids (source and target), found " + show(line));
  for (int k = 0; k < 2; ++k) {
    if (!parse_uint(f[k], id[k]))
      throw InputError(where() + "expected a node id (a non-negative integer) in field " + std::to_string(k + 1) +
                       ", found " + show(f[k]));
    if (jlg) {
      if (id[k] == 0) throw InputError(where() + "node ids in a .jlg file are 1-based, found 0");
      --id[k];
    }
    if (declared && id[k] >= declared)
      throw InputError(where() + "node id " + std::string(f[k]) + " is beyond the declared range (" +
                       (jlg ? "1.." + std::to_string(declared) : "0.." + std::to_string(declared - 1)) + ")");
    if (id[k] > kMaxId - 1) throw InputError(where() + "node id " + std::string(f[k]) + " does not fit in 32 bits");
  }
}

}  // namespace

SetCollection read_edge_list(const std::string& path, const EdgeListOptions& opts, EdgeListReport* report_out) {
  EdgeListReport rep;
  EdgeListFormat format = opts.format;
  if (format == EdgeListFormat::Auto)
    format = (path.size() >= 4 && path.compare(path.size() - 4, 4, ".jlg") == 0) ? EdgeListFormat::Jlg : EdgeListFormat::Snap;
  const bool jlg = format == EdgeListFormat::Jlg;
  bool symmetrise = opts.symmetrise;
  std::uint64_t declared = opts.declared_nodes;  // the range ids are checked against (0 = none)
  const std::uint64_t limit = graph_memory_limit(opts.memory_limit);
  bool header_seen = !jlg;
  std::uint64_t max_id = 0;
  std::vector<std::uint64_t> edges;
  GzLines lines(path);
  lines.for_each([&](std::string_view line, std::uint64_t no) {
    const auto where = [&] { return path + ":" + std::to_string(no) + ": "; };
    const std::size_t i = first_field(line);
    if (i == std::string_view::npos) return;  // blank
    if (line[i] == '#' || line[i] == '%') {
      if (!jlg) scan_snap_comment(line, rep);
      return;
    }
    std::string_view f[4];
    const std::size_t nf = split_fields(line, i, f);
    if (!header_seen) {  // .jlg header: nodes,edges,u|d,name
      std::uint64_t n = 0, e = 0;
      if (nf < 3 || !parse_uint(f[0], n) || !parse_uint(f[1], e) || (f[2] != "u" && f[2] != "d"))
        throw InputError(where() + "expected a .jlg header 'nodes,edges,u|d,name', found " + show(line));
      if (n > kMaxId) throw InputError(where() + "the header declares " + std::to_string(n) + " nodes, more than 2^32 - 2");
      rep.declared_nodes = n;
      rep.declared_edges = e;
      if (opts.declared_nodes && opts.declared_nodes != n)
        throw InputError(where() + "the header declares " + std::to_string(n) + " nodes, the caller expects " +
                         std::to_string(opts.declared_nodes));
      declared = n;
      if (f[2] == "u") symmetrise = true;
      header_seen = true;
      // The declared edge count bounds the buffer: check it before reading further.
      check_budget(8.0 * static_cast<double>(e) + csr_bytes(static_cast<double>(n), static_cast<double>(e) * (symmetrise ? 2.0 : 1.0), symmetrise),
                   limit, path + ": a graph of " + std::to_string(n) + " nodes and " + std::to_string(e) + " edges");
      edges.reserve(e);
      return;
    }
    std::uint64_t id[2];
    edge_ids(line, f, nf, jlg, declared, where, id);
    max_id = std::max({max_id, id[0], id[1]});
    if (edges.size() == edges.capacity()) {
      // Growing the buffer: check the whole build (buffer + CSR) still fits before allocating.
      const double next = std::max<double>(1024.0, 2.0 * static_cast<double>(edges.capacity()));
      check_budget(8.0 * next + csr_bytes(static_cast<double>(max_id + 1), next, symmetrise), limit,
                   path + ": after " + std::to_string(edges.size()) + " edges, the graph (edge buffer and CSR)");
      edges.reserve(static_cast<std::size_t>(next));
    }
    edges.push_back(pack_edge(static_cast<std::uint32_t>(id[0]), static_cast<std::uint32_t>(id[1])));
  });
  if (jlg && !header_seen) throw InputError(path + ": empty graph (no .jlg header line)");
  rep.lines = edges.size();
  if (edges.empty()) throw InputError(path + ": empty graph (no edges)");
  const std::uint64_t nodes = std::max(max_id + 1, declared);
  const std::uint64_t keep_declared_n = rep.declared_nodes, keep_declared_e = rep.declared_edges;
  SetCollection sets = edges_to_sets(edges, nodes, symmetrise, opts.keep_self_loops, rep, limit);
  rep.declared_nodes = keep_declared_n;
  rep.declared_edges = keep_declared_e;
  if (report_out) *report_out = rep;
  return sets;
}

EdgeLines read_edge_lines(const std::string& path, const EdgeListOptions& opts,
                          std::optional<std::pair<std::uint64_t, std::uint64_t>> range) {
  if (opts.format == EdgeListFormat::Jlg || (opts.format == EdgeListFormat::Auto && path.size() >= 4 &&
                                             path.compare(path.size() - 4, 4, ".jlg") == 0))
    throw UsageError(path + ": a .jlg file is read whole (read_edge_list), not as edge lines");
  const std::uint64_t limit = graph_memory_limit(opts.memory_limit);
  EdgeLines out;
  const auto add = [&](std::string_view line, const auto& where) {
    const std::size_t i = first_field(line);
    if (i == std::string_view::npos || line[i] == '#' || line[i] == '%') return;  // blank or comment
    std::string_view f[4];
    const std::size_t nf = split_fields(line, i, f);
    std::uint64_t id[2];
    edge_ids(line, f, nf, false, opts.declared_nodes, where, id);
    out.max_id = std::max({out.max_id, id[0], id[1]});
    if (out.edges.size() == out.edges.capacity()) {
      // The buffer, its copy sorted by destination rank, and what the rank receives.
      const double next = std::max<double>(1024.0, 2.0 * static_cast<double>(out.edges.capacity()));
      check_budget(3.0 * 8.0 * next, limit, path + ": after " + std::to_string(out.edges.size()) + " edges, the edge buffers");
      out.edges.reserve(static_cast<std::size_t>(next));
    }
    out.edges.push_back(pack_edge(static_cast<std::uint32_t>(id[0]), static_cast<std::uint32_t>(id[1])));
  };
  if (range) {
    TextLines lines(path, range->first, range->second);
    std::string_view line;
    const auto where = [&] { return path + ":" + std::to_string(lines.file_line()) + ": "; };
    while (lines.next(line)) add(line, where);
  } else {
    GzLines lines(path);
    lines.for_each([&](std::string_view line, std::uint64_t no) {
      add(line, [&] { return path + ":" + std::to_string(no) + ": "; });
    });
  }
  return out;
}

SetCollection pairs_to_sets(std::vector<std::uint64_t>& directed, std::vector<std::uint64_t>& reverse, EdgeListReport& report,
                            std::vector<std::uint32_t>* nodes) {
  std::sort(directed.begin(), directed.end());
  const auto end = std::unique(directed.begin(), directed.end());
  report.duplicates += static_cast<std::uint64_t>(directed.end() - end);
  directed.erase(end, directed.end());
  std::vector<std::uint64_t> all;
  if (reverse.empty()) {
    all = std::move(directed);
  } else {
    std::sort(reverse.begin(), reverse.end());
    reverse.erase(std::unique(reverse.begin(), reverse.end()), reverse.end());
    all.reserve(directed.size() + reverse.size());
    std::set_union(directed.begin(), directed.end(), reverse.begin(), reverse.end(), std::back_inserter(all));
    std::vector<std::uint64_t>().swap(reverse);
  }
  std::vector<std::uint64_t>().swap(directed);
  SetCollection sets;
  sets.ids.resize(all.size());
  if (nodes != nullptr) nodes->clear();
  std::uint64_t max_degree = 0;
  for (std::size_t a = 0; a < all.size();) {
    const std::uint64_t u = all[a] >> 32;
    std::size_t b = a;
    for (; b < all.size() && all[b] >> 32 == u; ++b) sets.ids[b] = static_cast<std::uint32_t>(all[b]);
    sets.offsets.push_back(b);
    if (nodes != nullptr) nodes->push_back(static_cast<std::uint32_t>(u));
    max_degree = std::max<std::uint64_t>(max_degree, b - a);
    a = b;
  }
  report.edges += all.size();
  report.max_degree = std::max(report.max_degree, max_degree);
  return sets;
}

// ---------------------------------------------------------------------------------------------
// CSR cache

namespace {

constexpr char kCsrMagic[8] = {'P', 'R', 'V', 'R', 'C', 'S', 'R', '\0'};
constexpr std::uint32_t kCsrVersion = 1;

struct SourceStamp {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

SourceStamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  return {static_cast<std::uint64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
}

std::uint32_t option_flags(const std::string& path, const EdgeListOptions& o) {
  EdgeListFormat f = o.format;
  if (f == EdgeListFormat::Auto)
    f = (path.size() >= 4 && path.compare(path.size() - 4, 4, ".jlg") == 0) ? EdgeListFormat::Jlg : EdgeListFormat::Snap;
  return (o.symmetrise ? 1u : 0u) | (o.keep_self_loops ? 2u : 0u) | (f == EdgeListFormat::Jlg ? 4u : 0u);
}

template <typename T>
void put(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
}
template <typename T>
T get(const std::string& in, std::size_t& pos) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += sizeof(T);
  return static_cast<T>(v);
}

std::uint32_t crc(const char* p, std::size_t n) {
  return static_cast<std::uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(p), n));
}

constexpr std::size_t kHeaderBytes = 8 + 4 + 8 + 8 + 4 + 8 + 10 * 8 + 8 + 8;

}  // namespace

void write_csr_cache(const std::string& cache_path, const std::string& source_path, const EdgeListOptions& opts,
                     const SetCollection& sets, const EdgeListReport& r) {
  const SourceStamp st = stamp(source_path);
  std::string out;
  out.reserve(kHeaderBytes + sets.offsets.size() * 8 + sets.ids.size() * 4 + 4);
  out.append(kCsrMagic, sizeof kCsrMagic);
  put<std::uint32_t>(out, kCsrVersion);
  put<std::uint64_t>(out, st.size);
  put<std::int64_t>(out, st.mtime_ns);
  put<std::uint32_t>(out, option_flags(source_path, opts));
  put<std::uint64_t>(out, opts.declared_nodes);
  for (const std::uint64_t v : {r.nodes, r.lines, r.edges, r.self_loops, r.duplicates, r.max_degree, r.empty_sets,
                                r.declared_nodes, r.declared_edges, std::uint64_t{r.symmetrised}})
    put<std::uint64_t>(out, v);
  put<std::uint64_t>(out, sets.offsets.size());
  put<std::uint64_t>(out, sets.ids.size());
  // Bulk little-endian arrays (x86-64 and aarch64 are little-endian; checked at compile time).
  static_assert(std::endian::native == std::endian::little, "the CSR cache is written little-endian");
  out.append(reinterpret_cast<const char*>(sets.offsets.data()), sets.offsets.size() * 8);
  out.append(reinterpret_cast<const char*>(sets.ids.data()), sets.ids.size() * 4);
  put<std::uint32_t>(out, crc(out.data(), out.size()));
  write_file_atomically(cache_path, out);
}

bool read_csr_cache(const std::string& cache_path, const std::string& source_path, const EdgeListOptions& opts,
                    SetCollection& sets, EdgeListReport* report) {
  std::ifstream in(cache_path, std::ios::binary);
  if (!in) return false;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kCsrMagic || std::memcmp(bytes.data(), kCsrMagic, sizeof kCsrMagic) != 0)
    throw InputError(cache_path + ": not a privrace CSR cache (bad magic)");
  if (bytes.size() < kHeaderBytes + 4) throw InputError(cache_path + ": truncated CSR cache");
  std::size_t pos = sizeof kCsrMagic;
  if (get<std::uint32_t>(bytes, pos) != kCsrVersion) return false;  // another version: rebuild
  const SourceStamp st = stamp(source_path);
  const auto size = get<std::uint64_t>(bytes, pos);
  const auto mtime = get<std::int64_t>(bytes, pos);
  const auto flags = get<std::uint32_t>(bytes, pos);
  const auto declared = get<std::uint64_t>(bytes, pos);
  if (size != st.size || mtime != st.mtime_ns || flags != option_flags(source_path, opts) || declared != opts.declared_nodes)
    return false;  // stale or built with other options
  EdgeListReport r;
  for (std::uint64_t* v : {&r.nodes, &r.lines, &r.edges, &r.self_loops, &r.duplicates, &r.max_degree, &r.empty_sets,
                           &r.declared_nodes, &r.declared_edges})
    *v = get<std::uint64_t>(bytes, pos);
  r.symmetrised = get<std::uint64_t>(bytes, pos) != 0;
  const auto n_off = get<std::uint64_t>(bytes, pos);
  const auto n_ids = get<std::uint64_t>(bytes, pos);
  if (n_off == 0 || n_off > bytes.size() / 8 || n_ids > bytes.size() / 4 ||
      bytes.size() != kHeaderBytes + n_off * 8 + n_ids * 4 + 4)
    throw InputError(cache_path + ": truncated or inconsistent CSR cache");
  std::size_t tail = bytes.size() - 4;
  if (get<std::uint32_t>(bytes, tail) != crc(bytes.data(), bytes.size() - 4))
    throw InputError(cache_path + ": CSR cache checksum mismatch (corrupt file)");
  SetCollection s;
  s.offsets.resize(n_off);
  s.ids.resize(n_ids);
  std::memcpy(s.offsets.data(), bytes.data() + pos, n_off * 8);
  std::memcpy(s.ids.data(), bytes.data() + pos + n_off * 8, n_ids * 4);
  if (s.offsets.front() != 0 || s.offsets.back() != n_ids) throw InputError(cache_path + ": inconsistent CSR offsets");
  sets = std::move(s);
  if (report) *report = r;
  return true;
}

SetCollection read_edge_list_cached(const std::string& path, const std::string& cache_path, const EdgeListOptions& opts,
                                    EdgeListReport* report, bool* cache_hit) {
  SetCollection sets;
  EdgeListReport rep;
  bool hit = false;
  try {
    hit = read_csr_cache(cache_path, path, opts, sets, &rep);
  } catch (const InputError&) {
    hit = false;  // a corrupt cache is rebuilt, not fatal
  }
  if (!hit) {
    sets = read_edge_list(path, opts, &rep);
    write_csr_cache(cache_path, path, opts, sets, rep);
  }
  if (report) *report = rep;
  if (cache_hit) *cache_hit = hit;
  return sets;
}

}  // namespace privrace
