// Table reader: CSV, whitespace, libsvm and one-set-per-line files, plain or gzip. The first
// byte picks the format, the header rule and whether the rest is gzip-compressed first (so
// the decompressed text is fuzzed too, not only the gzip header).
#include <zlib.h>

#include "fuzz_util.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/table_reader.hpp"

using namespace privrace;

namespace {
std::string gzip(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(size)) + 32, '\0');
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  ++data;
  --size;
  const bool compress = mode & 0x10, raw_gz = mode & 0x20;
  const std::string path = fuzz::temp_path(compress || raw_gz ? ".gz" : ".txt");
  if (compress) {
    const std::string gz = gzip(data, size);
    fuzz::write_bytes(path, reinterpret_cast<const std::uint8_t*>(gz.data()), gz.size());
  } else {
    fuzz::write_bytes(path, data, size);  // raw bytes, possibly named .gz: a corrupt archive
  }
  try {
    if ((mode & 0x0F) == 5) {
      (void)read_sets(path);
    } else {
      TableOptions opts;
      opts.format = static_cast<TableFormat>((mode & 0x0F) % 4);
      opts.label_column = (mode & 0x40) ? 1 : 0;
      if (mode & 0x80) opts.header = false;
      if (opts.format == TableFormat::Libsvm && (mode & 0x40)) opts.dim = 4;
      std::vector<double> labels;
      TableReader reader(path, opts);
      DenseMatrix chunk;
      while (reader.next_chunk(chunk, 7, &labels) > 0) {
      }
    }
  } catch (const Error&) {
    // InputError / UsageError / ResourceError: the documented refusals.
  }
  std::remove(path.c_str());
  return 0;
}
