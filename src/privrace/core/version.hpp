#pragma once
// Build identity recorded in sketch headers and experiment records. Defined in a source file
// generated at configure time, so a new commit recompiles one file, not the whole tree.
namespace privrace {
const char* version();
const char* git_commit();
}  // namespace privrace
