#include "results.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "privrace/core/error.hpp"

namespace privrace::experiments {

using nlohmann::json;

ResultsFile::ResultsFile(const std::string& path, const std::string& fingerprint) : path_(path) {
  // Created only if absent (O_EXCL), so that a run failing before its first record (bad data,
  // a task's set-up refusing its options) can remove the empty file it made and no other.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ >= 0) created_ = true;
  else if (errno == EEXIST) fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open results file '" + path + "' for writing: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    throw Error("'" + path + "' is locked: another privrace-experiment run is writing it");
  }
  std::string text;
  char buf[1 << 16];
  ::lseek(fd_, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  // A run killed inside write() leaves a last line without its newline: cut it off (the
  // cell was not finished and will run again); complete lines are never touched.
  const std::size_t keep = text.empty() ? 0 : text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (keep < text.size()) {
    repaired_ = text.size() - keep;
    if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0 || ::fsync(fd_) != 0)
      throw Error("cannot repair '" + path + "': " + std::strerror(errno));
    std::cerr << "note: " << path << ": removed a partial last record (" << repaired_
              << " bytes) left by an interrupted run; that cell will run again\n";
    text.resize(keep);
  }
  std::size_t line_no = 0, other = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    json r;
    try {
      r = json::parse(line);
    } catch (const json::parse_error&) {
      ++ignored_;
      std::cerr << "warning: " << path << ":" << line_no << ": not a JSON record; ignored\n";
      continue;
    }
    if (!r.is_object() || !r.contains("key") || !r.at("key").is_string()) {
      ++ignored_;
      std::cerr << "warning: " << path << ":" << line_no << ": record without a key; ignored\n";
      continue;
    }
    if (r.value("config_fingerprint", "") != fingerprint) {
      ++other;
      continue;
    }
    keys_.insert(r.at("key").get<std::string>());
    records_.push_back(std::move(r));
  }
  if (other > 0) {
    ::close(fd_);
    fd_ = -1;
    throw Error("'" + path + "' holds " + std::to_string(other) +
                " records of a different configuration (its task, data set, preprocessing or seed changed); "
                "move the file away or choose another --out directory, so no finished result is mixed up or lost");
  }
}

std::vector<json> read_finished_records(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  if (!in) return out;
  std::string line;
  // A last line without its newline is a record being written: not complete, skipped.
  while (std::getline(in, line)) {
    if (in.eof() || line.empty()) continue;
    try {
      json r = json::parse(line);
      if (r.is_object() && r.contains("key") && r.at("key").is_string()) out.push_back(std::move(r));
    } catch (const json::parse_error&) {
    }
  }
  return out;
}

ResultsFile::~ResultsFile() {
  if (fd_ < 0) return;
  if (created_ && appended_ == 0) ::unlink(path_.c_str());  // never leave an empty results file
  ::close(fd_);  // also releases the lock
}

void ResultsFile::append(const json& record) {
  const std::string line = record.dump() + "\n";
  // One write() for the whole line; a short write is completed, and fsync makes the record
  // durable before the next cell starts. A failed append (disk full, file-size limit) cuts the
  // file back to its finished records, so no partial line is left behind.
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  auto fail = [&](const std::string& what) {
    const int err = errno;
    if (before >= 0 && ::ftruncate(fd_, before) == 0) ::fsync(fd_);
    throw Error(what + " '" + path_ + "': " + std::strerror(err));
  };
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t w = ::write(fd_, line.data() + done, line.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("cannot append to");
    }
    done += static_cast<std::size_t>(w);
  }
  if (::fsync(fd_) != 0) fail("cannot fsync");
  keys_.insert(record.at("key").get<std::string>());
  records_.push_back(record);
  ++appended_;
}

namespace {

std::string csv_field(const json& v) {
  std::string s;
  if (v.is_null()) return "";
  if (v.is_string()) {
    s = v.get<std::string>();
  } else if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v.get<double>());
    s = buf;
  } else {
    s = v.dump();
  }
  if (s.find_first_of(",\"\n\r") != std::string::npos) {
    std::string q = "\"";
    for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  return s;
}

}  // namespace

std::string records_to_csv(const std::vector<json>& records, const std::set<std::string>& best) {
  std::set<std::string> params, metrics;
  for (const auto& r : records) {
    // Named copies: iterating items() of a temporary would dangle.
    const json p = r.value("params", json::object()), m = r.value("metrics", json::object());
    for (const auto& [k, v] : p.items()) params.insert(k);
    for (const auto& [k, v] : m.items()) metrics.insert(k);
  }
  std::ostringstream out;
  out << "config,task,dataset,stand_in,method,label";
  for (const auto& p : params) out << ",param_" << p;
  out << ",epsilon,rep,seed";
  for (const auto& m : metrics) out << "," << m;
  out << ",build_seconds,query_seconds_per_query,threads,git_commit,best_over_grid\n";
  for (const auto& r : records) {
    out << csv_field(r.value("config", json())) << "," << csv_field(r.value("task", json())) << ","
        << csv_field(r.value("dataset", json())) << "," << csv_field(r.value("stand_in", json())) << ","
        << csv_field(r.value("method", json())) << "," << csv_field(r.value("label", json()));
    const json p = r.value("params", json::object());
    for (const auto& k : params) out << "," << (p.contains(k) ? csv_field(p.at(k)) : "");
    out << "," << csv_field(r.value("epsilon", json())) << "," << csv_field(r.value("rep", json())) << ","
        << csv_field(r.value("seed", json()));
    const json m = r.value("metrics", json::object());
    for (const auto& k : metrics) out << "," << (m.contains(k) ? csv_field(m.at(k)) : "");
    out << "," << csv_field(r.value("build_seconds", json())) << "," << csv_field(r.value("query_seconds_per_query", json()))
        << "," << csv_field(r.value("threads", json())) << "," << csv_field(r.value("git_commit", json())) << ","
        << (best.count(r.value("key", "")) ? "true" : "false") << "\n";
  }
  return out.str();
}

}  // namespace privrace::experiments
