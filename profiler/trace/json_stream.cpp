#include "profiler/trace/json_stream.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace rooflens::profiler {

using nlohmann::json;

int64_t microseconds_text_to_ns(const std::string& text) {
  size_t i = 0;
  bool negative = i < text.size() && text[i] == '-';
  if (negative || (i < text.size() && text[i] == '+')) ++i;
  int64_t whole = 0;
  size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits)
    if (digits < 17)
      whole = whole * 10 + (text[i] - '0');  // beyond, the double path below takes it
  int64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (frac_digits < 3) {
        frac = frac * 10 + (text[i] - '0');
        ++frac_digits;
      } else if (frac_digits == 3) {
        round_up = text[i] >= '5';
        ++frac_digits;
      }
    }
  }
  // An exponent, or more than an int64 of nanoseconds holds: go through a double.
  if (i != text.size() || digits > 16 || whole > 9'000'000'000'000'000) {
    double ns = std::stod(text) * 1e3;  // std::out_of_range past a double
    if (!(std::fabs(ns) < 9.2e18))
      throw std::out_of_range("a time of " + text + " us is out of range");
    return std::llround(ns);
  }
  for (int k = std::min(frac_digits, 3); k < 3; ++k) frac *= 10;
  int64_t ns = whole * 1000 + frac + (round_up ? 1 : 0);
  return negative ? -ns : ns;
}

namespace {

// nlohmann's SAX interface. `level` counts the containers open outside an element being built:
// 1 inside the root, 2 inside a streamed array.
class StreamSax {
 public:
  explicit StreamSax(const JsonStream& h) : h_(h) {}

  bool null() { return scalar(json(nullptr)); }
  bool boolean(bool v) { return scalar(json(v)); }
  bool number_integer(json::number_integer_t v) { return number(json(v), nullptr); }
  bool number_unsigned(json::number_unsigned_t v) { return number(json(v), nullptr); }
  bool number_float(json::number_float_t v, const std::string& text) {
    return number(json(v), &text);
  }
  bool string(std::string& s) { return scalar(json(std::move(s))); }
  bool binary(json::binary_t&) { return scalar(json(nullptr)); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    if (!stack_.empty())
      pending_key_ = std::move(k);
    else
      top_key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  // A container opens: the root, a streamed array, or part of a value being built.
  bool open(json empty) {
    if (stack_.empty()) {
      if (level_ == 0) {
        level_ = 1;
        root_is_array_ = empty.is_array();
        if (root_is_array_) {
          level_ = 2;
          top_key_.clear();
        }
        return true;
      }
      if (level_ == 1 && empty.is_array() && !root_is_array_ && h_.streamed.count(top_key_)) {
        level_ = 2;
        return true;
      }
      built_ = std::move(empty);
      stack_.push_back(&built_);
      return true;
    }
    json* parent = stack_.back();
    json* child;
    if (parent->is_object()) {
      child = &((*parent)[pending_key_] = std::move(empty));
    } else {
      parent->push_back(std::move(empty));
      child = &parent->back();
    }
    stack_.push_back(child);
    return true;
  }

  bool close() {
    if (stack_.empty()) {
      --level_;  // a streamed array or the root ends
      if (level_ == 1 && root_is_array_) level_ = 0;
      return true;
    }
    stack_.pop_back();
    if (stack_.empty()) deliver(std::move(built_));
    return true;
  }

  bool number(json v, const std::string* text) {
    // Direct fields of a streamed element: stack_ holds only the element itself.
    if (level_ == 2 && stack_.size() == 1 && stack_.back()->is_object() &&
        h_.microsecond_fields.count(pending_key_)) {
      int64_t ns;
      if (text) {
        ns = microseconds_text_to_ns(*text);
      } else {
        double us = v.is_number_unsigned() ? static_cast<double>(v.get<uint64_t>())
                                           : static_cast<double>(v.get<int64_t>());
        if (!(std::fabs(us) < 9.2e15))
          throw std::out_of_range("a time of " + v.dump() + " us is out of range");
        ns = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) * 1000
                                    : v.get<int64_t>() * 1000;
      }
      return scalar(json(ns));
    }
    return scalar(std::move(v));
  }

  bool scalar(json v) {
    if (stack_.empty()) {
      deliver(std::move(v));
      return true;
    }
    json* parent = stack_.back();
    if (parent->is_object())
      (*parent)[pending_key_] = std::move(v);
    else
      parent->push_back(std::move(v));
    return true;
  }

  void deliver(json&& v) {
    if (level_ == 2) {
      if (h_.element) h_.element(top_key_, std::move(v));
    } else if (h_.top_level) {
      h_.top_level(top_key_, std::move(v));
    }
  }

  const JsonStream& h_;
  int level_ = 0;
  bool root_is_array_ = false;
  std::string top_key_, pending_key_, error_;
  json built_;
  std::vector<json*> stack_;
};

}  // namespace

void stream_json(std::string_view text, const JsonStream& handlers) {
  StreamSax sax(handlers);
  bool ok = json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, true);
  if (!ok) throw std::runtime_error(sax.error().empty() ? "not valid JSON" : sax.error());
}

}  // namespace rooflens::profiler
