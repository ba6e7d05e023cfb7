#pragma once
// A Trace as JSON: how runs on the GPU machine are kept in tests/data/ for the CPU tests.
#include <iosfwd>
#include <string>

#include "profiler/records.hpp"

namespace rooflens::profiler {

void write_trace(std::ostream& out, const Trace& trace);
// InputError on a file that is not a trace.
Trace read_trace(const std::string& path);

}  // namespace rooflens::profiler
