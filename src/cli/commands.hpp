#pragma once
// The `privrace` command's subcommands (one file each group) and their shared option parsing.
// Exit codes: 0 success, 2 bad usage (UsageError), 1 any other error (bad input, I/O, resources).
#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "inputs.hpp"
#include "progress_line.hpp"
#include "privrace/core/error.hpp"
#include "privrace/io/edge_list.hpp"
#include "privrace/io/table_reader.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace::cli {

namespace po = boost::program_options;

// Parses argv after the command name; --help prints `usage` and `desc` and exits 0.
inline po::variables_map parse(const std::string& usage, const po::options_description& desc, int argc, char** argv,
                               const po::positional_options_description* positional = nullptr) {
  po::variables_map vm;
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(desc);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      std::cout << usage << "\n" << desc;
      std::exit(0);
    }
    // A missing positional argument is named as the usage line names it, not as an option
    // ("option '--sketch' is required"), and before any missing option.
    if (positional)
      for (unsigned i = 0; i < std::min(positional->max_total_count(), 8u); ++i) {
        const std::string& name = positional->name_for_position(i);
        const po::option_description* opt = desc.find_nothrow(name, false);
        if (opt && opt->semantic()->is_required() && !vm.count(name)) {
          std::string line = usage.substr(0, usage.find('\n'));
          if (line.rfind("usage: ", 0) == 0) line.erase(0, 7);
          throw UsageError("a " + (name == "sketch" ? std::string("sketch file") : name) + " is required (usage: " + line + ")");
        }
      }
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    // "unrecognised option '--kernal' (did you mean '--kernel'?)": the command's long names.
    const std::string given = e.get_option_name();
    std::vector<std::string> names;
    for (const auto& opt : desc.options())
      if (!opt->long_name().empty()) names.push_back("--" + opt->long_name());
    throw UsageError(given.rfind("--", 0) == 0 ? with_suggestion(e.what(), given, names) : std::string(e.what()));
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

// `privrace sketch`, parsed (sketch_command.cpp). Under mpirun every rank parses the same
// options into the same job; the distributed path (distributed.cpp) adds only which records
// are this rank's and the sum of the exact counts.
struct SketchJob {
  po::variables_map vm;
  // `inputs`: the files --input names, expanded (inputs.hpp); `input`: the one file, or for
  // several the name the header records ("FIRST .. LAST (N files)"), not a path.
  std::vector<std::string> inputs;
  std::string input, output, kernel, format;
  ReleaseParams params;      // validated
  TableOptions table;        // dense kernels: how to read the table
  int label_column = 0;
  std::size_t dim = 0, chunk_rows = 65536;
  bool set_kernel = false, graph_input = false, no_privacy = false, quiet = false, timings = false;
  ProgressLine* progress = nullptr;  // the terminal's progress line (single process); none when null
};
// Options -> a validated job (UsageError on bad usage); sets the OpenMP thread count.
SketchJob parse_sketch(int argc, char** argv);
// --format edgelist|jlg with --undirected, --drop-self-loops and --nodes, as the reader's options.
EdgeListOptions edge_list_options(const SketchJob& job);
// The "graph" record of a graph read with `eopts`: the summary line's statistics (exact), and the
// whole record in a file without noise.
nlohmann::json graph_record(const EdgeListReport& g, const EdgeListOptions& eopts, bool from_cache);
// An edge list's records are its nodes that have an out-neighbour: a node without one is not a
// record (were it one, an edge to a new, larger id would add every id below it as a record, and
// one edge would change the counts without bound). The sets of `sets` that are not empty.
SetCollection without_empty_sets(SetCollection sets);
// Its public part (the options), which is all a private file holds.
nlohmann::json public_graph_record(const nlohmann::json& graph);
// Warns on stderr (whatever -q says) when a sketch is not fit for release: seeded noise, or
// exact counts. Every command that queries, merges or reads a sketch calls it.
void warn_if_not_for_release(const PrivacyRecord& privacy, const std::string& path);
// The exact sketch of the whole input in this process (sets, graphs or a table).
ExactSketch build_local(const SketchJob& job, const MasterSeed& seed, nlohmann::json& graph_info, double& read_seconds);
// The exact sketch of streamed table chunks; a record the family refuses is reported as
// "INPUT: record N ..." with N counted from `first_record` (a rank's first record in the file).
ExactSketch build_table(const SketchJob& job, const MasterSeed& seed, std::size_t dim, const DenseChunkReader& next,
                        std::uint64_t first_record = 0);
// The same, with `locate(n)` naming where the n-th record delivered (1-based) came from:
// "PATH: record M" (several inputs, or a rank's pieces of them).
ExactSketch build_table(const SketchJob& job, const MasterSeed& seed, std::size_t dim, const DenseChunkReader& next,
                        const std::function<std::string(std::uint64_t)>& locate);
// Noise once, write the file, print the summary and (--timings) the stage timings; `distributed`
// adds fields to the timings line ("ranks", "reduce", ...).
void write_sketch(const SketchJob& job, ExactSketch&& exact, const MasterSeed& seed, std::chrono::steady_clock::time_point t0,
                  double read_seconds, const nlohmann::json& graph_info,
                  const nlohmann::json& distributed = nlohmann::json::object());
// The same from a release made elsewhere (under mpirun, noised in shares), with the seconds its
// build (and the sum) and its noise took.
void write_release(const SketchJob& job, const Release& release, const MasterSeed& seed, std::chrono::steady_clock::time_point t0,
                   double read_seconds, double build_seconds, double noise_seconds, const nlohmann::json& graph_info,
                   const nlohmann::json& distributed);

int cmd_sketch(int argc, char** argv);  // sketch_command.cpp
int cmd_merge(int argc, char** argv);   // sketch_command.cpp
int cmd_m2m(int argc, char** argv);     // m2m_command.cpp

}  // namespace privrace::cli
