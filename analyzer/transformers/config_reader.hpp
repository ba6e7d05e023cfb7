#pragma once
// Typed access to one JSON object of a config (the top level or a nested one such as
// rope_parameters), remembering every key it was asked about: what is never asked about is
// either on the known-and-ignored list or reported, so no key is misread in silence.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rooflens {

class ConfigReader {
 public:
  // `where` names the object in messages: "config.json" or "config.json: rope_parameters".
  ConfigReader(const nlohmann::json& object, std::string where);

  // Present and not null; the key counts as read either way.
  bool has(const std::string& key);
  bool is_string(const std::string& key);  // present and a string
  // The first present key of several spellings transformers has used for one quantity.
  std::optional<std::string> first_of(std::initializer_list<const char*> keys);

  int64_t integer(const std::string& key, int64_t limit);  // required
  std::optional<int64_t> optional_integer(const std::string& key, int64_t limit);
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t limit);
  double number_or(const std::string& key, double fallback);
  bool boolean_or(const std::string& key, bool fallback);
  std::string string_or(const std::string& key, const std::string& fallback);
  std::vector<std::string> strings(const std::string& key);  // a list of strings, [] when absent
  std::vector<int64_t> integers(const std::string& key, int64_t limit);
  // A nested object, or nullptr when absent or null; a non-object is an error naming the key.
  const nlohmann::json* object(const std::string& key);

  // Marks keys as deliberately not read (they are on the documented ignore list).
  void ignore(const std::set<std::string>& keys);
  // Keys present in the object that were never asked about nor ignored, in file order.
  std::vector<std::string> unread() const;

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  const std::string& where() const { return where_; }

 private:
  int64_t checked_integer(const std::string& key, int64_t limit) const;

  const nlohmann::json& j_;
  std::string where_;
  std::set<std::string> read_;
};

// The closest of `known` to `key` when it is near enough to be a misspelling, else "".
std::string closest_key(const std::string& key, const std::vector<std::string>& known);

}  // namespace rooflens
