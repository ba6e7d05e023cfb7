#include "reports/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <vector>

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

std::string human_rate(double r, const char* unit) {
  return human_count(r) + unit + "/s";
}

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

namespace {

// A layer number, or '*' where repeated layers were folded: what tells the part's row apart.
bool has_digit(const std::string& s) {
  return std::any_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isdigit(c) || c == '*'; });
}

// "a/b.c/d" -> "a/", "b.c/", "d" when the name has '/', else split at '.'.
std::vector<std::string> name_parts(const std::string& name) {
  char sep = name.find('/') != std::string::npos ? '/' : '.';
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < name.size()) {
    size_t j = name.find(sep, i);
    j = j == std::string::npos ? name.size() : j + 1;
    parts.push_back(name.substr(i, j - i));
    i = j;
  }
  return parts;
}

// The parts marked `keep`, a "..." where a run of others was left out.
std::string join_kept(const std::vector<std::string>& parts, const std::vector<bool>& keep) {
  std::string out;
  bool gap = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!keep[i]) {
      gap = true;
      continue;
    }
    if (gap) out += "...";
    gap = false;
    out += parts[i];
  }
  return gap ? out + "..." : out;
}

}  // namespace

std::string fit_name(const std::string& name, size_t width, const std::string& op) {
  if (name.size() <= width) return name;
  std::vector<std::string> parts = name_parts(name);
  if (parts.size() > 1 && !op.empty() && parts.back() == op) {
    parts.pop_back();
    if (parts.back().size() > 1) parts.back().pop_back();  // the separator before the op
  }
  std::vector<bool> keep(parts.size(), true);
  std::string s = join_kept(parts, keep);
  // Leave out the parts without a number, the leftmost first; the last part always stays.
  for (size_t i = 0; i + 1 < parts.size() && s.size() > width; ++i) {
    if (has_digit(parts[i])) continue;
    keep[i] = false;
    s = join_kept(parts, keep);
  }
  // Then numbered parts too, the leftmost first, keeping the last numbered one.
  size_t last_numbered = parts.size();
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (has_digit(parts[i])) last_numbered = i;
  for (size_t i = 0; i + 1 < parts.size() && s.size() > width; ++i) {
    if (!keep[i] || i == last_numbered) continue;
    keep[i] = false;
    s = join_kept(parts, keep);
  }
  return s.size() <= width ? s : fit(s, width);
}

std::string fit_op(const std::string& op, size_t width) {
  if (op.size() <= width) return op;
  size_t dot = op.rfind('.');
  std::string type = dot == std::string::npos ? op : op.substr(dot + 1);
  // Abbreviations a reader of ONNX Runtime's contrib ops knows, longest words first.
  static const std::pair<const char*, const char*> kShort[] = {
      {"GroupQueryAttention", "GQAttention"},
      {"MultiHeadAttention", "MHAttention"},
      {"SimplifiedLayerNormalization", "SimplifiedLN"},
      {"LayerNormalization", "LayerNorm"},
      {"Normalization", "Norm"},
      {"Embedding", "Emb"},
      {"Simplified", "Simp"}};
  for (const auto& [word, abbreviation] : kShort) {
    if (type.size() <= width) break;
    if (size_t at = type.find(word); at != std::string::npos)
      type.replace(at, std::strlen(word), abbreviation);
  }
  if (type.size() <= width) return type;
  return width <= 2 ? type.substr(0, width) : type.substr(0, width - 2) + "..";
}

std::string wrap(const std::string& label, const std::string& text, size_t width) {
  std::string out, line = label;
  size_t i = 0;
  while (i < text.size()) {
    size_t space = text.find(' ', i);
    std::string word = text.substr(i, space == std::string::npos ? std::string::npos : space - i);
    i = space == std::string::npos ? text.size() : space + 1;
    if (width > label.size() + 8 && word.size() > width - label.size())
      word = fit(word, width - label.size());  // no overflow
    bool first = line.size() == label.size();
    if (!first && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(label.size(), ' ');
      first = true;
    }
    line += (first ? "" : " ") + word;
  }
  return out + line + "\n";
}

std::string wrap_list(const std::string& label, const std::vector<std::string>& items,
                      size_t width) {
  std::string out, line = label;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (line.size() > label.size() && line.size() + 1 + item.size() > width) {
      out += line + "\n";
      line = std::string(label.size(), ' ');
    }
    line += (line.size() > label.size() ? " " : "") + item;
  }
  return out + line + "\n";
}

}  // namespace rooflens::reports
