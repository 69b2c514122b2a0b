#pragma once
// Error types. The command-line front ends map them to exit codes:
// UsageError -> 2 (bad flags or arguments), every other privrace::Error -> 1;
// privrace-experiment records an UnavailableError's cells and exits 3 at the end.
#include <cstdio>
#include <stdexcept>
#include <string>

namespace privrace {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller asked for something that makes no sense (bad flag value, unknown kernel, ...).
class UsageError : public Error {
 public:
  using Error::Error;
};

// An optional module this build or install lacks (DP-WGAN's libtorch module): the method
// cannot run here, whatever its inputs. A UsageError to the front ends that do not tell it
// apart; privrace-experiment records the method's cells as unavailable and runs the others.
class UnavailableError : public UsageError {
 public:
  using UsageError::UsageError;
};

// Data or a file is malformed: the message names the file, row/line, field and expectation.
class InputError : public Error {
 public:
  using Error::Error;
};

// Parameters are valid in themselves but would not fit in memory.
class ResourceError : public Error {
 public:
  using Error::Error;
};

// A value in a message: 9 significant digits ("%.9g"), enough to tell inputs apart.
inline std::string message_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace privrace
