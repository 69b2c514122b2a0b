// Sketch-file reader, through load_sketch (the header is validated, the family rebuilt and the
// counts decoded). Inputs are whole files; the seed corpus holds valid sketches, and the
// target also fixes up the trailing CRC-32 when the first byte is odd, so mutations get past
// the checksum into the header and payload parsers.
#include <zlib.h>

#include <cstring>
#include <string>

#include "fuzz_util.hpp"
#include "privrace/core/error.hpp"
#include "privrace/sketch/sketch_io.hpp"

using namespace privrace;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool fix_crc = data[0] & 1;
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  if (fix_crc && bytes.size() >= 4) {
    const uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4);
    for (int i = 0; i < 4; ++i) bytes[bytes.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  }
  const std::string path = fuzz::temp_path(".sketch");
  fuzz::write_bytes(path, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  try {
    (void)load_sketch(path);
  } catch (const Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
