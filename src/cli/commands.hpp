#pragma once
// The `privrace` command's subcommands (one file each group) and their shared option parsing.
// Exit codes: 0 success, 2 bad usage (UsageError), 1 any other error (bad input, I/O, resources).
#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

#include "privrace/core/error.hpp"

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
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

int cmd_sketch(int argc, char** argv);  // sketch_command.cpp
int cmd_merge(int argc, char** argv);   // sketch_command.cpp
int cmd_m2m(int argc, char** argv);     // m2m_command.cpp

}  // namespace privrace::cli
