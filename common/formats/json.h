// JSON, the one module that writes and reads it: the manifest (common/shards/manifest.h),
// tpuperf-inspect --json and tpuperf-score --json.
//
// Writing (JsonWriter) streams into a string. Everything it writes is valid JSON that
// YAML readers (PyYAML's safe_load, YAML 1.1 and 1.2) read back as the same values, because
// the manifest must stay readable by both:
//   - strings escape '"', '\', control characters, DEL, the C1 controls (YAML refuses them
//     raw) and U+2028/U+2029 (YAML 1.1 line breaks, which a YAML reader would fold); other
//     UTF-8 passes through unchanged;
//   - numbers are the shortest text that reads back bit for bit, locale-independent;
//     doubles always carry a '.' ("1.0e-300", "2.0"), which YAML 1.1 needs to read them
//     as floats rather than strings or integers. JSON has no NaN or infinity: the writer
//     emits null for them.
//
// Reading (parse_json) is a strict RFC 8259 parser for documents of a few MB. Errors name
// the source, the line, the column and the byte offset. JsonObject reads the fields of
// one object and names a missing or malformed field by its place in the document
// ("graphs[12].num_nodes").
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/base/error.h"

namespace tpuperf {

// The parser refuses documents nested deeper than this (objects and arrays inside each
// other): a broken or hostile file must not exhaust the stack. tpuperf's own documents
// nest at most 3 deep.
constexpr int kJsonMaxDepth = 64;

// Appends s as a quoted JSON string (escaped as described above).
void append_json_string(std::string& out, std::string_view s);
// Appends the shortest round-trip text of v (see above); doubles must be finite here.
void append_json_number(std::string& out, int64_t v);
void append_json_number(std::string& out, uint64_t v);
void append_json_number(std::string& out, double v);

// How the elements of one object or array are laid out.
enum class JsonLayout {
  Inline,     // {"a": 1, "b": [1, 2]}
  OnePerLine  // each element on its own line, indented by one space per open container
};

class JsonWriter {
 public:
  JsonWriter& begin_object(JsonLayout layout = JsonLayout::Inline);
  JsonWriter& end_object();
  JsonWriter& begin_array(JsonLayout layout = JsonLayout::Inline);
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view v);
  JsonWriter& value(const std::string& v) { return value(std::string_view(v)); }
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(bool v);
  JsonWriter& value(double v);  // null when not finite
  // Any integer type; uint8_t is a number here, not a character.
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  JsonWriter& value(T v) {
    element();
    if constexpr (std::is_signed_v<T>)
      append_json_number(out_, static_cast<int64_t>(v));
    else
      append_json_number(out_, static_cast<uint64_t>(v));
    return *this;
  }
  JsonWriter& null();
  // An inline array of numbers or strings.
  template <class T>
  JsonWriter& array(const std::vector<T>& v) {
    begin_array();
    for (const T& x : v) value(x);
    return end_array();
  }

  // The text so far; a complete document once every container is closed.
  const std::string& str() const { return out_; }

 private:
  struct Open {
    char close;
    JsonLayout layout;
    bool empty = true;
  };
  void element();  // the separator and line break before an element
  JsonWriter& open(char bracket, char close, JsonLayout layout);
  JsonWriter& close(char bracket);
  std::string out_;
  std::vector<Open> open_;
  bool after_key_ = false;
};

// A parsed JSON value. Numbers keep their literal text, converted on use, so that int64
// values beyond 2^53 stay exact.
struct JsonValue {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  std::string text;  // String: the decoded value; Number: its literal; Bool: true/false
  std::vector<JsonValue> items;                             // Array
  std::vector<std::pair<std::string, JsonValue>> members;  // Object, in document order

  // The member named key, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;
};

// Throws Error(source) "not valid JSON at line L, column C (byte offset O): ..." on
// malformed input, text after the document or nesting deeper than max_depth.
JsonValue parse_json(std::string_view text, const std::string& source,
                     int max_depth = kJsonMaxDepth);

// Exact conversions of a Number: false when v is not a number, not an integer, or out of
// T's range (integers), or not a finite double.
bool json_to_int64(const JsonValue& v, int64_t& out);
bool json_to_uint64(const JsonValue& v, uint64_t& out);
bool json_to_double(const JsonValue& v, double& out);

// The fields of one object and where it sits in its document, so that errors name the
// field: Error(source, key "graphs[12].num_nodes", "missing field").
class JsonObject {
 public:
  // Throws when obj is not an object ("expected an object").
  JsonObject(const JsonValue& obj, std::string where, std::string source);

  const JsonValue& node(std::string_view key) const;  // throws "missing field"
  JsonObject object(std::string_view key) const;
  std::string str(std::string_view key) const;
  template <class T>
  T num(std::string_view key) const {
    return convert<T>(node(key), name(key));
  }
  // An array of numbers or strings.
  template <class T>
  std::vector<T> seq(std::string_view key) const;
  // The elements of an array of objects, each named "key[i]".
  std::vector<JsonObject> objects(std::string_view key) const;

  const JsonValue& value() const { return *obj_; }
  const std::string& source() const { return source_; }
  // "where.key", or "key" at the top level.
  std::string name(std::string_view key) const;

 private:
  const JsonValue& array(std::string_view key) const;
  template <class T>
  T convert(const JsonValue& v, const std::string& where) const;
  [[noreturn]] void fail(const std::string& reason, const std::string& where) const;

  const JsonValue* obj_;
  std::string where_, source_;
};

template <class T>
T JsonObject::convert(const JsonValue& v, const std::string& where) const {
  if constexpr (std::is_same_v<T, std::string>) {
    if (v.type != JsonValue::Type::String) fail("expected a string", where);
    return v.text;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      int64_t x = 0;
      if (json_to_int64(v, x) && x >= std::numeric_limits<T>::min() &&
          x <= std::numeric_limits<T>::max())
        return static_cast<T>(x);
    } else {
      uint64_t x = 0;
      if (json_to_uint64(v, x) && x <= std::numeric_limits<T>::max()) return static_cast<T>(x);
    }
    fail(v.type == JsonValue::Type::Number ? "expected an integer, got " + v.text
                                           : "expected an integer",
         where);
  } else {
    static_assert(std::is_floating_point_v<T>, "JsonObject converts strings and numbers");
    double x = 0;
    if (json_to_double(v, x)) return static_cast<T>(x);
    fail(v.type == JsonValue::Type::Number ? "expected a number, got " + v.text
                                           : "expected a number",
         where);
  }
}

template <class T>
std::vector<T> JsonObject::seq(std::string_view key) const {
  const JsonValue& v = array(key);
  std::vector<T> out;
  out.reserve(v.items.size());
  for (size_t i = 0; i < v.items.size(); ++i)
    out.push_back(convert<T>(v.items[i], name(key) + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace tpuperf
