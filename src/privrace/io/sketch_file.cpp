#include "privrace/io/sketch_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "privrace/core/error.hpp"

namespace privrace {

namespace {
constexpr char kMagic[8] = {'P', 'R', 'I', 'V', 'R', 'A', 'C', 'E'};

template <typename T>
void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
}

template <typename T>
T get_le(const std::string& in, std::size_t& pos) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += sizeof(T);
  return static_cast<T>(v);
}

std::string encode_counts(const std::vector<std::int64_t>& counts) {
  std::string raw;
  raw.reserve(counts.size() * 2);
  std::int64_t prev = 0;
  for (const std::int64_t c : counts) {
    const std::int64_t d = static_cast<std::int64_t>(static_cast<std::uint64_t>(c) - static_cast<std::uint64_t>(prev));
    std::uint64_t z = (static_cast<std::uint64_t>(d) << 1) ^ static_cast<std::uint64_t>(d >> 63);  // zigzag
    while (z >= 0x80) {
      raw.push_back(static_cast<char>((z & 0x7F) | 0x80));
      z >>= 7;
    }
    raw.push_back(static_cast<char>(z));
    prev = c;
  }
  uLongf bound = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(bound, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &bound, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 1) != Z_OK)  // level 1: noisy counts gain little from more effort
    throw Error("zlib compression of the counts failed");
  packed.resize(bound);
  put_le<std::uint64_t>(packed, raw.size());  // trailing: the uncompressed size
  return packed;
}

std::vector<std::int64_t> decode_counts(const std::string& path, const std::string& payload, std::size_t expected) {
  if (payload.size() < 8) throw InputError(path + ": counts payload is truncated");
  std::size_t pos = payload.size() - 8;
  const auto raw_size = get_le<std::uint64_t>(payload, pos);
  if (raw_size > expected * 10 + 16) throw InputError(path + ": counts payload declares an impossible size");
  std::string raw(raw_size, '\0');
  uLongf out_len = static_cast<uLongf>(raw_size);
  if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &out_len, reinterpret_cast<const Bytef*>(payload.data()),
                 static_cast<uLong>(payload.size() - 8)) != Z_OK ||
      out_len != raw_size)
    throw InputError(path + ": counts payload is corrupt (zlib)");
  std::vector<std::int64_t> counts;
  counts.reserve(expected);
  std::int64_t prev = 0;
  std::size_t i = 0;
  while (i < raw.size()) {
    std::uint64_t z = 0;
    int shift = 0;
    for (;;) {
      if (i >= raw.size() || shift > 63) throw InputError(path + ": counts payload is corrupt (varint)");
      const auto byte = static_cast<unsigned char>(raw[i++]);
      z |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) break;
      shift += 7;
    }
    const auto d = static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
    prev = static_cast<std::int64_t>(static_cast<std::uint64_t>(prev) + static_cast<std::uint64_t>(d));
    counts.push_back(prev);
  }
  if (counts.size() != expected)
    throw InputError(path + ": holds " + std::to_string(counts.size()) + " counters, the header says rows x width = " +
                     std::to_string(expected));
  return counts;
}
}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
  if (path == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0)
      throw Error("cannot write to standard output");
    return;
  }
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) throw Error("cannot create a file in '" + dir.string() + "': " + std::strerror(errno));
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw Error("cannot write '" + path + "': " + what + ": " + std::strerror(err));
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    done += static_cast<std::size_t>(w);
  }
  if (::fsync(fd) != 0) fail("fsync");
  if (::fchmod(fd, 0644) != 0) fail("chmod");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw Error("cannot write '" + path + "': close: " + std::strerror(errno));
  }
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw Error("cannot write '" + path + "': rename: " + std::strerror(err));
  }
}

void write_sketch_file(const std::string& path, const SketchFileContents& contents) {
  const std::string header = contents.header.dump();
  const std::string payload = encode_counts(contents.counts);
  std::string out(kMagic, sizeof(kMagic));
  put_le<std::uint32_t>(out, kSketchFileVersion);
  put_le<std::uint64_t>(out, header.size());
  out += header;
  put_le<std::uint64_t>(out, payload.size());
  out += payload;
  const uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(out.data()), out.size());
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(crc));
  write_file_atomically(path, out);
}

SketchFileContents read_sketch_file(const std::string& path) {
  std::string bytes;
  if (path == "-") {
    bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::size_t min_size = sizeof(kMagic) + 4 + 8 + 8 + 4;
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw InputError(path + ": not a privrace sketch file (bad magic)");
  if (bytes.size() < min_size) throw InputError(path + ": truncated (" + std::to_string(bytes.size()) + " bytes)");
  std::size_t pos = sizeof(kMagic);
  const auto version = get_le<std::uint32_t>(bytes, pos);
  if (version != kSketchFileVersion)
    throw InputError(path + ": format version " + std::to_string(version) + ", this build reads version " +
                     std::to_string(kSketchFileVersion));
  const auto header_len = get_le<std::uint64_t>(bytes, pos);
  if (header_len > bytes.size() - pos) throw InputError(path + ": truncated inside the header");
  const std::string header_text = bytes.substr(pos, header_len);
  pos += header_len;
  if (bytes.size() - pos < 12) throw InputError(path + ": truncated after the header");
  const auto payload_len = get_le<std::uint64_t>(bytes, pos);
  if (payload_len > bytes.size() - pos || bytes.size() - pos - payload_len != 4)
    throw InputError(path + ": truncated or trailing bytes (payload length does not match the file size)");
  const std::string payload = bytes.substr(pos, payload_len);
  pos += payload_len;
  const std::size_t body = pos;
  const auto stored_crc = get_le<std::uint32_t>(bytes, pos);
  const uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), body);
  if (static_cast<std::uint32_t>(crc) != stored_crc) throw InputError(path + ": checksum mismatch: the file is corrupted");
  SketchFileContents out;
  try {
    out.header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": header is not valid JSON: " + e.what());
  }
  for (const char* field : {"rows", "width"})
    if (!out.header.contains(field) || !out.header.at(field).is_number_unsigned())
      throw InputError(path + ": header field '" + field + "' is missing or not a positive integer");
  const auto rows = out.header.at("rows").get<std::uint64_t>(), width = out.header.at("width").get<std::uint64_t>();
  if (rows == 0 || width == 0 || rows > (1ULL << 32) || width > (1ULL << 32))
    throw InputError(path + ": header field 'rows' or 'width' out of range");
  out.counts = decode_counts(path, payload, static_cast<std::size_t>(rows * width));
  return out;
}

}  // namespace privrace
