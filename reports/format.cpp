#include "reports/format.hpp"

#include <fmt/format.h>

#include <cmath>

namespace rooflens::reports {
namespace {

std::string scaled(double v, double base, const char* const* units, int count, const char* sep) {
  int i = 0;
  double a = std::fabs(v);
  while (a >= base && i < count - 1) {
    a /= base;
    v /= base;
    ++i;
  }
  if (i == 0 && v == std::floor(v)) return fmt::format("{:.0f}{}{}", v, sep, units[0]);
  int decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return fmt::format("{:.{}f}{}{}", v, decimals, sep, units[i]);
}

}  // namespace

std::string human_bytes(double b) {
  static const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return scaled(b, 1024, u, 6, " ");
}

std::string human_count(double c) {
  static const char* u[] = {"", "K", "M", "G", "T", "P", "E"};
  return scaled(c, 1000, u, 7, "");
}

std::string human_time(double s) {
  if (s <= 0) return "0";
  if (s < 1e-6) return fmt::format("{:.0f} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.{}f} us", s * 1e6, s < 1e-5 ? 2 : s < 1e-4 ? 1 : 0);
  if (s < 1) return fmt::format("{:.{}f} ms", s * 1e3, s < 1e-2 ? 2 : s < 1e-1 ? 1 : 0);
  return fmt::format("{:.2f} s", s);
}

std::string human_rate(double r, const char* unit) { return human_count(r) + unit + "/s"; }

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  if (width <= 3) return s.substr(s.size() - width);
  return "..." + s.substr(s.size() - (width - 3));
}

}  // namespace rooflens::reports
