#include "cli/entry.hpp"

int main(int argc, char** argv) {
  return rooflens::cli::run(argc, argv);
}
