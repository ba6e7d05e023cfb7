#pragma once
// Human units, used only by sinks: binary bytes (KiB, MiB, GiB), SI counts (K, M, G, T),
// times in ns/us/ms/s.
#include <cstdint>
#include <string>

namespace rooflens::reports {

std::string human_bytes(double bytes);   // "12.3 MiB"
std::string human_count(double count);   // "8.18 G"
std::string human_time(double seconds);  // "154 us"
std::string human_rate(double per_second, const char* unit);  // "989 TFLOP/s"
std::string with_commas(int64_t v);      // "25,557,032"
std::string fit(const std::string& s, size_t width);  // truncate with a leading ellipsis

}  // namespace rooflens::reports
