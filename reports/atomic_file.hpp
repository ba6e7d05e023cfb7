#pragma once
// Outputs are written whole or not at all: write a temp file beside the target, then rename.
#include <functional>
#include <ostream>
#include <string>

namespace rooflens::reports {

// Calls `write` with a stream to a temp file in the target's directory and renames it over
// `path` once complete; on any failure the temp file is removed and InputError thrown.
void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace rooflens::reports
