// SPDX-License-Identifier: Apache-2.0
// A small JSON reader for the tests that inspect keel's dumps (to_json):
// enough of RFC 8259 for what keel writes (objects, arrays, strings with
// \" \\ \n \uXXXX escapes, numbers, true, false, null). A malformed text
// throws std::runtime_error naming the offset, so a test fails loudly.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace keel_test::json {

struct value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool flag = false;
  double number = 0.0;
  std::string text;
  std::vector<value> items;             // an array's items
  std::vector<std::string> keys;        // an object's member names, in order
  std::vector<value> members;           // and their values (keys[i]'s is members[i])

  bool has(const std::string& key) const {
    for (const std::string& k : keys)
      if (k == key) return true;
    return false;
  }
  // The member @p key of an object (throws when absent: the test fails with its name).
  const value& operator[](const std::string& key) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return members[i];
    throw std::runtime_error("json: no member \"" + key + "\"");
  }
  const value& operator[](std::size_t i) const {
    if (type != kind::array || i >= items.size()) throw std::runtime_error("json: no item " + std::to_string(i));
    return items[i];
  }
  std::size_t size() const { return type == kind::array ? items.size() : members.size(); }
};

namespace detail {
class reader {
 public:
  explicit reader(const std::string& s) : s_(s) {}
  value document() {
    value v = parse();
    skip();
    if (at_ != s_.size()) fail("trailing text");
    return v;
  }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string("json: ") + what + " at offset " + std::to_string(at_));
  }
  void skip() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\r' || s_[at_] == '\t')) ++at_;
  }
  bool take(char c) {
    skip();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail("unexpected character");
  }
  bool word(const char* w) {
    const std::string t(w);
    if (s_.compare(at_, t.size(), t) != 0) return false;
    at_ += t.size();
    return true;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) fail("unterminated escape");
      c = s_[at_++];
      switch (c) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'u': {
          if (at_ + 4 > s_.size()) fail("short \\u escape");
          out += static_cast<char>(std::strtol(s_.substr(at_, 4).c_str(), nullptr, 16));
          at_ += 4;
          break;
        }
        default: out += c; break;
      }
    }
    if (at_ >= s_.size()) fail("unterminated string");
    ++at_;
    return out;
  }
  value parse() {
    skip();
    if (at_ >= s_.size()) fail("unexpected end");
    value v;
    const char c = s_[at_];
    if (c == '{') {
      ++at_;
      v.type = value::kind::object;
      if (take('}')) return v;
      do {
        v.keys.push_back(string());
        expect(':');
        v.members.push_back(parse());
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++at_;
      v.type = value::kind::array;
      if (take(']')) return v;
      do v.items.push_back(parse());
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.type = value::kind::string;
      v.text = string();
    } else if (word("true")) {
      v.type = value::kind::boolean;
      v.flag = true;
    } else if (word("false")) {
      v.type = value::kind::boolean;
    } else if (word("null")) {
      v.type = value::kind::null;
    } else {
      const char* begin = s_.c_str() + at_;
      char* end = nullptr;
      v.number = std::strtod(begin, &end);
      if (end == begin) fail("not a value");
      v.type = value::kind::number;
      at_ += static_cast<std::size_t>(end - begin);
    }
    return v;
  }
  const std::string& s_;
  std::size_t at_ = 0;
};
}  // namespace detail

// Parses @p text. @throws std::runtime_error on malformed JSON.
inline value parse(const std::string& text) { return detail::reader(text).document(); }

}  // namespace keel_test::json
