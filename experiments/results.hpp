#pragma once
// results/NAME.jsonl: one complete JSON record per line, appended with one write() and
// fsync, so a killed run leaves at most one partial last line, which the next open cuts off.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace privrace::experiments {

class ResultsFile {
 public:
  // Creates the file if needed, takes an exclusive lock (a second run of the same config
  // fails instead of interleaving), cuts a partial last line, and reads the finished keys.
  // Records of another fingerprint are an error (the config's data or task changed).
  // Throws privrace::Error with the path when the file cannot be created or written.
  ResultsFile(const std::string& path, const std::string& fingerprint);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  bool done(const std::string& key) const { return keys_.count(key) > 0; }
  const std::vector<nlohmann::json>& records() const { return records_; }
  void append(const nlohmann::json& record);
  std::size_t repaired_bytes() const { return repaired_; }
  std::size_t ignored_lines() const { return ignored_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;  // the file did not exist before: removed again if nothing was appended
  std::size_t appended_ = 0;
  std::set<std::string> keys_;
  std::vector<nlohmann::json> records_;
  std::size_t repaired_ = 0, ignored_ = 0;
};

// Every complete JSON record of a results file, read without locking or repairing it (for
// planning and cost estimates while another run may be appending); {} if the file is absent.
std::vector<nlohmann::json> read_finished_records(const std::string& path);

// The CSV beside the jsonl, regenerated (atomically) from the records: one row per record,
// one column per parameter and metric. `best` holds the keys of the selected cells.
std::string records_to_csv(const std::vector<nlohmann::json>& records, const std::set<std::string>& best);

}  // namespace privrace::experiments
