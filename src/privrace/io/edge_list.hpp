#pragma once
// Graphs as neighbour sets. Reads SNAP-style edge lists (plain or gzip: one "u v" pair a line,
// separated by tabs, spaces or commas; '#' and '%' lines are comments; LF, CRLF or CR line
// ends) and the LightGraphs ".jlg" variant (gzip text, header "nodes,edges,u|d,name", then
// "u,v" lines with 1-based ids) into a SetCollection: node i's set = its out-neighbours,
// sorted and de-duplicated. Memory: an 8-byte-per-edge buffer while reading, then a counting
// sort into the CSR (4 bytes per stored neighbour); no per-node vectors.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "privrace/core/types.hpp"

namespace privrace {

enum class EdgeListFormat { Auto, Snap, Jlg };  // Auto: ".jlg" => Jlg, anything else => Snap
EdgeListFormat parse_edge_list_format(const std::string& name);  // "auto" | "edgelist"/"snap" | "jlg"

struct EdgeListOptions {
  EdgeListFormat format = EdgeListFormat::Auto;
  // false: node u's set is the targets of u's lines (directed, as in the file).
  // true: every edge is added in both directions (undirected graphs; correct whether the file
  // lists each pair once or twice: the mirrored copies are merged, not counted as duplicates).
  // A .jlg file whose header says 'u' is always symmetrised.
  bool symmetrise = false;
  bool keep_self_loops = true;  // false drops u-u lines (they are counted either way)
  // Node ids must be < declared_nodes (0 = no declared count; .jlg headers declare one).
  // The node count is max(max id + 1, declared_nodes): ids that never occur are empty sets.
  std::uint64_t declared_nodes = 0;
  // Refuse (ResourceError, with the estimate) when the graph would need more bytes than
  // this. 0 = 80% of physical memory.
  std::uint64_t memory_limit = 0;
};

struct EdgeListReport {
  std::uint64_t nodes = 0;         // sets in the collection
  std::uint64_t lines = 0;         // edge lines read
  std::uint64_t edges = 0;         // stored neighbours: sum of set sizes
  std::uint64_t self_loops = 0;    // u-u lines in the input (kept or dropped per the options)
  std::uint64_t duplicates = 0;    // lines repeating an earlier (u, v) of the same direction
  std::uint64_t max_degree = 0;    // largest set
  std::uint64_t empty_sets = 0;    // nodes with no (out-)neighbour
  std::uint64_t declared_nodes = 0, declared_edges = 0;  // from the header / "# Nodes: N Edges: M", 0 if none
  bool symmetrised = false;
};

// Throws InputError "PATH:LINE: ..." for a malformed line (quoting what was found), an id
// beyond the declared range or 2^32 - 2, and "PATH: empty graph (no edges)"; ResourceError
// before allocating when the graph would not fit (the message gives the estimate).
SetCollection read_edge_list(const std::string& path, const EdgeListOptions& opts = {}, EdgeListReport* report = nullptr);

// The steps of read_edge_list for a graph read by several processes (privrace sketch under
// mpirun): each reads its lines, the pairs go to the process that owns their source, and each
// builds the sets of its nodes.
//
// The edge lines of a SNAP edge list (not .jlg) as packed (source, target) pairs in file order,
// with read_edge_list's checks and messages ("PATH:LINE: ..."; the declared range is
// opts.declared_nodes); nothing is dropped or merged. `range` = [begin, end): the lines whose
// first byte lies there, of a plain regular file (line numbers are still the whole file's);
// none = the whole file, plain or gzip. No lines is not an error here.
struct EdgeLines {
  std::vector<std::uint64_t> edges;  // pack_edge(source, target), one per edge line
  std::uint64_t max_id = 0;          // the largest id on any line (0 if none)
};
EdgeLines read_edge_lines(const std::string& path, const EdgeListOptions& opts,
                          std::optional<std::pair<std::uint64_t, std::uint64_t>> range = std::nullopt);
// The non-empty sets of the nodes whose pairs these are, in increasing node order: node u's set
// = the targets of its `directed` pairs (u, v) (self-loops already kept or dropped) united with
// the sources of its `reverse` pairs, packed pack_edge(u, w) for an edge (w, u) (symmetrising),
// sorted and de-duplicated, as read_edge_list builds u's set. Both vectors are consumed.
// `report`: `duplicates` gets the repeated directed pairs, `edges` the stored neighbours and
// `max_degree` the largest set (added / maxed in); `nodes`, if given, gets each set's node.
SetCollection pairs_to_sets(std::vector<std::uint64_t>& directed, std::vector<std::uint64_t>& reverse, EdgeListReport& report,
                            std::vector<std::uint32_t>* nodes = nullptr);

// Same, through a binary CSR cache: when `cache_path` holds a cache of the same source (size and
// mtime), the same options and an intact checksum, it is loaded instead of parsing; otherwise
// the source is parsed and the cache (re)written atomically. `cache_hit` says which happened.
SetCollection read_edge_list_cached(const std::string& path, const std::string& cache_path, const EdgeListOptions& opts = {},
                                    EdgeListReport* report = nullptr, bool* cache_hit = nullptr);

// The CSR cache file on its own:
//   "PRVRCSR\0" | u32 version | u64 source size | i64 source mtime (ns) | u32 option flags
//   | report (10 x u64) | u64 nodes + 1 | u64 ids | offsets (u64 each) | ids (u32 each)
//   | u32 CRC-32 of every byte before it (integers little-endian, as the sketch files).
void write_csr_cache(const std::string& cache_path, const std::string& source_path, const EdgeListOptions& opts,
                     const SetCollection& sets, const EdgeListReport& report);
// Returns false (and leaves `sets` alone) when the cache is missing, stale or for other options;
// throws InputError when it exists but is corrupt (bad magic, truncated, checksum).
bool read_csr_cache(const std::string& cache_path, const std::string& source_path, const EdgeListOptions& opts,
                    SetCollection& sets, EdgeListReport* report = nullptr);

// Builds the CSR of sorted, de-duplicated out-neighbour sets from (src, dst) pairs, in parallel.
// `edges` is consumed (freed as soon as it is no longer needed). Shared by the reader and the
// R-MAT generator's tests. Counts duplicates and self-loops into `report`.
SetCollection edges_to_sets(std::vector<std::uint64_t>& edges, std::uint64_t nodes, bool symmetrise, bool keep_self_loops,
                            EdgeListReport& report, std::uint64_t memory_limit = 0);
// Packing used by `edges`: src in the high 32 bits, dst in the low 32 bits.
inline std::uint64_t pack_edge(std::uint32_t u, std::uint32_t v) { return (std::uint64_t{u} << 32) | v; }

// Byte budget for graph structures: `limit` if non-zero, else 80% of physical memory.
std::uint64_t graph_memory_limit(std::uint64_t limit);

// Sorts and de-duplicates every set of a CSR whose sets may hold repeats, in place, and compacts
// the ids (the reader's and the R-MAT generator's last pass). Returns the repeats removed.
std::uint64_t sort_and_deduplicate(SetCollection& sets, std::uint64_t nodes, int threads = 0);

// Transpose (in-neighbour sets) of a set collection over nodes [0, nodes): node v's set = {u : v in set(u)}.
SetCollection transpose_sets(const SetCollection& sets, std::uint64_t nodes);

}  // namespace privrace
