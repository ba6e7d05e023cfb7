#include "analyzer/transformers/config_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/errors.hpp"

namespace rooflens {

using nlohmann::json;

ConfigReader::ConfigReader(const json& object, std::string where)
    : j_(object), where_(std::move(where)) {}

void ConfigReader::fail(const std::string& key, const std::string& problem) const {
  throw InputError(fmt::format("{}: key '{}' {}", where_, key, problem));
}

bool ConfigReader::has(const std::string& key) {
  read_.insert(key);
  return j_.contains(key) && !j_.at(key).is_null();
}

bool ConfigReader::is_string(const std::string& key) {
  return has(key) && j_.at(key).is_string();
}

std::optional<std::string> ConfigReader::first_of(std::initializer_list<const char*> keys) {
  std::optional<std::string> found;
  for (const char* k : keys)
    if (has(k) && !found) found = k;
  return found;
}

int64_t ConfigReader::checked_integer(const std::string& key, int64_t limit) const {
  const json& v = j_.at(key);
  auto not_integer = [&] {
    return InputError(fmt::format("{}: key '{}' must be an integer, got {}", where_, key,
                                  v.dump().substr(0, 40)));
  };
  double as_double;
  if (v.is_number_unsigned())
    as_double = static_cast<double>(v.get<uint64_t>());
  else if (v.is_number_integer())
    as_double = static_cast<double>(v.get<int64_t>());
  else if (v.is_number_float())
    as_double = v.get<double>();
  else
    throw not_integer();
  // Range first: converting a double beyond int64 is undefined (found by fuzz_config).
  if (!std::isfinite(as_double) || as_double != std::floor(as_double)) throw not_integer();
  if (as_double < 0) fail(key, fmt::format("is {}; it must not be negative", v.dump()));
  if (as_double > static_cast<double>(limit))
    fail(key, fmt::format("is {}, beyond the limit {}", v.dump().substr(0, 40), limit));
  return v.is_number_float() ? static_cast<int64_t>(as_double) : v.get<int64_t>();
}

int64_t ConfigReader::integer(const std::string& key, int64_t limit) {
  if (!has(key)) throw InputError(fmt::format("{}: missing required key '{}'", where_, key));
  return checked_integer(key, limit);
}

std::optional<int64_t> ConfigReader::optional_integer(const std::string& key, int64_t limit) {
  if (!has(key)) return std::nullopt;
  return checked_integer(key, limit);
}

int64_t ConfigReader::integer_or(const std::string& key, int64_t fallback, int64_t limit) {
  return optional_integer(key, limit).value_or(fallback);
}

double ConfigReader::number_or(const std::string& key, double fallback) {
  if (!has(key)) return fallback;
  const json& v = j_.at(key);
  if (!v.is_number()) fail(key, fmt::format("must be a number, got {}", v.dump().substr(0, 40)));
  double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "must be finite");
  return d;
}

bool ConfigReader::boolean_or(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_boolean()) fail(key, "must be true or false");
  return j_.at(key).get<bool>();
}

std::string ConfigReader::string_or(const std::string& key, const std::string& fallback) {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_string()) fail(key, "must be a string");
  return j_.at(key).get<std::string>();
}

std::vector<std::string> ConfigReader::strings(const std::string& key) {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const json& v = j_.at(key);
  if (!v.is_array()) fail(key, "must be a list of strings");
  for (const json& e : v) {
    if (!e.is_string()) fail(key, "must be a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<int64_t> ConfigReader::integers(const std::string& key, int64_t limit) {
  std::vector<int64_t> out;
  if (!has(key)) return out;
  const json& v = j_.at(key);
  if (!v.is_array()) fail(key, "must be a list of integers");
  for (const json& e : v) {
    bool ok = (e.is_number_integer() || e.is_number_unsigned()) && e.get<int64_t>() >= 0 &&
              e.get<int64_t>() <= limit;
    if (e.is_boolean()) ok = true;  // no_rope_layers may be written as booleans
    if (!ok)
      fail(key, fmt::format("must be a list of integers in [0, {}], has {}", limit,
                            e.dump().substr(0, 20)));
    out.push_back(e.is_boolean() ? (e.get<bool>() ? 1 : 0) : e.get<int64_t>());
  }
  return out;
}

const json* ConfigReader::object(const std::string& key) {
  if (!has(key)) return nullptr;
  const json& v = j_.at(key);
  if (!v.is_object()) fail(key, "must be an object");
  return &v;
}

void ConfigReader::ignore(const std::set<std::string>& keys) {
  read_.insert(keys.begin(), keys.end());
}

std::vector<std::string> ConfigReader::unread() const {
  std::vector<std::string> out;
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (!read_.count(it.key())) out.push_back(it.key());
  return out;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string closest_key(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& k : known) {
    size_t d = edit_distance(key, k);
    if (d < best_d) best_d = d, best = k;
  }
  // A slip of the keyboard: a few edits, never most of the word.
  size_t allowed = std::min<size_t>(3, std::max<size_t>(1, key.size() / 5));
  return best_d > 0 && best_d <= allowed ? best : "";
}

}  // namespace rooflens
