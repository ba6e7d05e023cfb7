#pragma once
// Checks a JSON document against the subset of JSON Schema (2020-12) that docs/result.schema.json
// uses: type, required, properties, items, enum, minimum, pattern and local $ref. Test-only; it
// returns every violation with its JSON pointer so a failing test says where.
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

namespace rooflens::test {

class SchemaCheck {
 public:
  explicit SchemaCheck(nlohmann::json schema) : root_(std::move(schema)) {}
  std::vector<std::string> check(const nlohmann::json& doc) {
    errors_.clear();
    visit(root_, doc, "");
    return errors_;
  }

 private:
  nlohmann::json root_;
  std::vector<std::string> errors_;

  static bool is_type(const nlohmann::json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return false;
  }

  void visit(const nlohmann::json& s, const nlohmann::json& v, const std::string& at) {
    if (s.contains("$ref")) {
      std::string ref = s["$ref"];  // "#/$defs/name"
      visit(root_.at(nlohmann::json::json_pointer(ref.substr(1))), v, at);
      return;
    }
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array())
        for (const auto& t : s["type"]) ok = ok || is_type(v, t);
      else
        ok = is_type(v, s["type"]);
      if (!ok) {
        errors_.push_back(at + ": expected " + s["type"].dump() + ", got " + v.type_name());
        return;
      }
    }
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
      errors_.push_back(at + ": " + v.dump() + " not in " + s["enum"].dump());
    if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
      errors_.push_back(at + ": below minimum");
    if (s.contains("pattern") && v.is_string() &&
        !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
      errors_.push_back(at + ": does not match " + s["pattern"].get<std::string>());
    if (v.is_object()) {
      if (s.contains("required"))
        for (const auto& k : s["required"])
          if (!v.contains(k.get<std::string>()))
            errors_.push_back(at + ": missing '" + k.get<std::string>() + "'");
      if (s.contains("properties"))
        for (auto& [k, sub] : s["properties"].items())
          if (v.contains(k)) visit(sub, v[k], at + "/" + k);
    }
    if (v.is_array() && s.contains("items"))
      for (size_t i = 0; i < v.size(); ++i) visit(s["items"], v[i], at + "/" + std::to_string(i));
  }
};

}  // namespace rooflens::test
