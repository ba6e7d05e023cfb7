#pragma once
// The whole `rooflens` command line as a function: the executable's main() and the Python
// package's console script (python/rooflens/__main__.py through the extension) run the same code,
// with the same messages and exit codes.
namespace rooflens::cli {

int run(int argc, char** argv);

}  // namespace rooflens::cli
