#pragma once
// Trace files as text, gzip or not. rooflens links no compression library: gzip data goes through
// the system's `gzip` program in a child process (present on every Linux this runs on).
#include <string>

namespace rooflens::profiler {

// The file's bytes, decompressed when they start with gzip's magic number. InputError when the
// file cannot be read, or is corrupt or truncated gzip.
std::string read_text_file(const std::string& path);

// `text` as gzip data. std::runtime_error when gzip cannot be run.
std::string gzip_compress(const std::string& text);

// True for names ending in ".gz".
bool gz_name(const std::string& path);

}  // namespace rooflens::profiler
