// The `privrace` command: sketch, query, merge, info, m2m.
// Exit codes: 0 success, 2 bad usage, 1 any other error (bad input, I/O, resources).
// sketch and merge: sketch_command.cpp (through the release API); m2m: m2m_command.cpp.
#include <omp.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "inputs.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/version.hpp"
#include "privrace/io/table_reader.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/sketch_io.hpp"

using namespace privrace;
using namespace privrace::cli;

namespace {

constexpr const char* kTopUsage =
    "usage: privrace <command> [options]\n"
    "\n"
    "commands:\n"
    "  sketch   build a differentially private RACE sketch of a table or a collection of sets\n"
    "  query    estimate densities (kernel sum / N-hat) from a sketch\n"
    "  merge    add sketches built with identical parameters and seeds\n"
    "  info     print a sketch's header as JSON (with --counts: its counts as CSV; the header then on stderr)\n"
    "  m2m      estimate moments, CDFs, covariance or counting queries from a feature sketch (M2M)\n"
    "\n"
    "Run 'privrace <command> --help' for the options of one command, 'privrace --version' for the version.\n";

int cmd_query(int argc, char** argv) {
  po::options_description desc("options");
  std::string sketch_path, queries, estimator, format;
  desc.add_options()("help,h", "show this help")
      ("sketch", po::value(&sketch_path)->required(), "sketch file (positional)")
      ("queries,Q", po::value(&queries)->required(), "query file: same layout as the sketched data (sets for jaccard); - = stdin")
      ("estimator", po::value(&estimator)->default_value("mean"), "mean | mom (median of means)")
      ("mom-groups", po::value<std::string>()->default_value("5"), "groups for the median of means")
      ("debias", "remove the 1/W collisions of the column hash: (E W - N) / (W - 1)")
      ("kernel-sum", "print the kernel-sum estimate instead of dividing by N-hat")
      ("format", po::value(&format)->default_value("auto"), "query file format: auto | csv | whitespace | libsvm | sets")
      ("threads,t", po::value<std::string>()->default_value("0"),
       ("OpenMP threads answering batches of queries (0 = all, at most " + std::to_string(kMaxThreads) +
        "); the output is the same for any count").c_str());
  add_column_options(desc);  // --columns, --drop, --label-column: as the sketch's data was read
  po::positional_options_description pos;
  pos.add("sketch", 1);
  const auto vm = parse("usage: privrace query SKETCH.rsk --queries FILE [--columns SPEC] [--drop SPEC] [--estimator mean|mom] [--debias]", desc, argc, argv, &pos);
  QueryOptions opts;
  opts.estimator = parse_suggesting([](const std::string& s) { return parse_estimator(s); }, estimator, kEstimatorNames);
  opts.mom_groups = count_option<std::size_t>(vm, "mom-groups", 1, kMaxSize);
  opts.debias = vm.count("debias") > 0;
  const int threads = threads_option(vm);
  opts.threads = threads;
  if (threads > 0) omp_set_num_threads(threads);  // the file's decoder too
  const ColumnSelection columns = column_options(vm);  // the SPECs checked before any file is read
  const RaceSketch sketch = load_sketch(sketch_path);
  warn_if_not_for_release(sketch.privacy(), sketch_path);
  std::vector<double> sums;
  if (sketch.family().input_kind() == InputKind::Sets) {
    if (!columns.keep.empty() || !columns.drop.empty())
      throw UsageError("--columns and --drop select the columns of a table; this sketch answers sets");
    const SetCollection sets = read_sets(queries);
    sums = sketch.query_sets(SetBatch{&sets, 0, sets.size()}, opts);
  } else {
    TableOptions topts;
    topts.format = parse_suggesting([](const std::string& s) { return parse_table_format(s); }, format, kTableFormatNames);
    topts.dim = sketch.family().dim();
    topts.columns = columns;
    TableReader reader(queries, topts);
    if (reader.dim() != sketch.family().dim())
      throw InputError(queries + ": queries have " + std::to_string(reader.dim()) + " columns, the sketch was built on " +
                       std::to_string(sketch.family().dim()) + "-dimensional data (select the same columns as the "
                       "sketch's data: --columns, --drop, --label-column)");
    DenseMatrix chunk;
    while (const std::size_t n = reader.next_chunk(chunk, 65536)) {
      const auto part = sketch.query_dense(chunk.topRows(static_cast<Eigen::Index>(n)), opts);
      sums.insert(sums.end(), part.begin(), part.end());
    }
  }
  const double n_hat = sketch.n_hat();
  const bool raw = vm.count("kernel-sum") > 0;
  if (!raw && !(n_hat > 0.0))
    std::fprintf(stderr, "privrace: warning: N-hat = %g is not positive (noise dominates); densities are meaningless\n", n_hat);
  std::string out;
  char buf[64];
  for (const double s : sums) {
    std::snprintf(buf, sizeof buf, "%.9g\n", raw ? s : s / n_hat);
    out += buf;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int cmd_info(int argc, char** argv) {
  po::options_description desc("options");
  std::string sketch_path;
  desc.add_options()("help,h", "show this help")("sketch", po::value(&sketch_path)->required(), "sketch file (positional)")
      ("counts", "print the R x W counts as CSV (one row per line) on standard output, and the header on standard error, "
                 "so that `privrace info X.rsk --counts > counts.csv` holds the counts alone");
  po::positional_options_description pos;
  pos.add("sketch", 1);
  const auto vm = parse("usage: privrace info SKETCH.rsk [--counts]", desc, argc, argv, &pos);
  nlohmann::json header;
  const RaceSketch sketch = load_sketch(sketch_path, &header);
  warn_if_not_for_release(sketch.privacy(), sketch_path);
  if (!sketch.family().accumulates_values()) header["n_hat"] = sketch.n_hat();
  const bool counts = vm.count("counts") > 0;
  // One stream, one format: the JSON header, or with --counts the CSV counts (the header on stderr).
  (counts ? std::cerr : std::cout) << header.dump(2) << "\n";
  if (counts) {
    std::string line;
    for (std::size_t r = 0; r < sketch.rows(); ++r) {
      line.clear();
      for (std::size_t c = 0; c < sketch.width(); ++c) {
        if (c) line += ',';
        line += std::to_string(sketch.row(r)[c]);
      }
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kTopUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kTopUsage, stdout);
    return 0;
  }
  if (command == "--version" || command == "version") {
    std::printf("privrace %s (%s)\n", version(), git_commit());
    return 0;
  }
  // A write past the file-size limit (ulimit -f) then fails with EFBIG and is reported like
  // any write error (the temporary removed) instead of the signal ending the process.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    int rc = 2;
    if (command == "sketch") rc = cmd_sketch(argc - 1, argv + 1);
    else if (command == "query") rc = cmd_query(argc - 1, argv + 1);
    else if (command == "merge") rc = cmd_merge(argc - 1, argv + 1);
    else if (command == "info") rc = cmd_info(argc - 1, argv + 1);
    else if (command == "m2m") rc = cmd_m2m(argc - 1, argv + 1);
    else {
      std::fprintf(stderr, "privrace: unknown command '%s'\n\n%s", command.c_str(), kTopUsage);
      return 2;
    }
    // Answers printed on standard output must not be lost silently (a full disk, a closed pipe).
    std::cout.flush();
    errno = 0;
    if (rc == 0 && (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout))) {
      std::fprintf(stderr, "privrace %s: error: cannot write to standard output: %s\n", command.c_str(),
                   errno ? std::strerror(errno) : "a write failed");
      return 1;
    }
    return rc;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "privrace %s: %s\n", command.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "privrace %s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
}
