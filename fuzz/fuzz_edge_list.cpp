// Edge-list (SNAP-style text) and .jlg readers. The first byte picks the format and options.
#include "fuzz_util.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/edge_list.hpp"

using namespace privrace;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  ++data;
  --size;
  const bool jlg = mode & 1;
  const std::string path = fuzz::temp_path(jlg ? ".jlg" : ".txt");
  fuzz::write_bytes(path, data, size);
  try {
    EdgeListOptions opts;
    opts.format = jlg ? parse_edge_list_format("jlg") : parse_edge_list_format((mode & 2) ? "auto" : "edgelist");
    opts.symmetrise = mode & 4;
    opts.keep_self_loops = !(mode & 8);
    if (mode & 16) opts.declared_nodes = 1000;
    opts.memory_limit = std::uint64_t{256} << 20;  // hostile ids must be refused, not allocated
    EdgeListReport report;
    (void)read_edge_list(path, opts, &report);
  } catch (const Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
