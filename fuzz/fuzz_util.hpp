#pragma once
// Shared by the libFuzzer targets: the readers take paths, so each input is written to a
// private temporary file first. Only the library's documented errors may escape a reader;
// anything else (a crash, a sanitizer report, std::bad_alloc, a stray exception) is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace privrace::fuzz {

inline std::string temp_path(const char* suffix) {
  static const std::string dir = [] {
    const char* t = std::getenv("TMPDIR");
    return std::string(t ? t : "/tmp");
  }();
  return dir + "/privrace-fuzz-" + std::to_string(::getpid()) + suffix;
}

inline void write_bytes(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace privrace::fuzz
