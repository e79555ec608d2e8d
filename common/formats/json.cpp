#include "common/formats/json.h"

#include <charconv>
#include <cmath>

namespace tpuperf {

// ------------------------------------------------------------------ strings and numbers

namespace {

void append_u00(std::string& out, unsigned code) {
  static const char* kHex = "0123456789abcdef";
  out += "\\u00";
  out += kHex[(code >> 4) & 15];
  out += kHex[code & 15];
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      append_u00(out, c);
    } else if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {  // a C1 control, U+0080..U+009F
      append_u00(out, next);
      ++i;
    } else if (c == 0xE2 && next == 0x80 && i + 2 < s.size() &&
               (s[i + 2] == '\xA8' || s[i + 2] == '\xA9')) {
      out += s[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

namespace {

template <class T>
std::string_view shortest(char (&buf)[40], T v) {
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string_view(buf, static_cast<size_t>(r.ptr - buf));
}

}  // namespace

void append_json_number(std::string& out, int64_t v) {
  char buf[40];
  out.append(shortest(buf, v));
}

void append_json_number(std::string& out, uint64_t v) {
  char buf[40];
  out.append(shortest(buf, v));
}

void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) throw Error("a non-finite number cannot be written as JSON");
  char buf[40];
  const std::string_view text = shortest(buf, v);
  if (text.find('.') != std::string_view::npos) {
    out.append(text);
    return;
  }
  // YAML 1.1 reads "1e-300" as a string and "2" as an integer: "1.0e-300", "2.0".
  const size_t e = text.find('e');
  out.append(text.substr(0, e));
  out += ".0";
  if (e != std::string_view::npos) out.append(text.substr(e));
}

// ------------------------------------------------------------------ JsonWriter

void JsonWriter::element() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (open_.empty()) return;
  Open& o = open_.back();
  if (!o.empty) out_ += ',';
  if (o.layout == JsonLayout::OnePerLine) {
    out_ += '\n';
    out_.append(open_.size(), ' ');
  } else if (!o.empty) {
    out_ += ' ';
  }
  o.empty = false;
}

JsonWriter& JsonWriter::open(char bracket, char close, JsonLayout layout) {
  element();
  out_ += bracket;
  open_.push_back({close, layout});
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  if (open_.empty() || open_.back().close != bracket || after_key_)
    throw Error(std::string("JsonWriter: '") + bracket + "' does not close the open container");
  if (open_.back().layout == JsonLayout::OnePerLine && !open_.back().empty) {
    out_ += '\n';
    out_.append(open_.size() - 1, ' ');
  }
  out_ += bracket;
  open_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_object(JsonLayout layout) { return open('{', '}', layout); }
JsonWriter& JsonWriter::end_object() { return close('}'); }
JsonWriter& JsonWriter::begin_array(JsonLayout layout) { return open('[', ']', layout); }
JsonWriter& JsonWriter::end_array() { return close(']'); }

JsonWriter& JsonWriter::key(std::string_view k) {
  if (open_.empty() || open_.back().close != '}' || after_key_)
    throw Error("JsonWriter: key '" + std::string(k) + "' outside an object or after a key");
  element();
  append_json_string(out_, k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view v) {
  element();
  append_json_string(out_, v);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  element();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  if (!std::isfinite(v)) return null();
  element();
  append_json_number(out_, v);
  return *this;
}

JsonWriter& JsonWriter::null() {
  element();
  out_ += "null";
  return *this;
}

// ------------------------------------------------------------------ parsing

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

namespace {

void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Recursive descent over the text; the recursion depth is bounded by max_depth.
class Parser {
 public:
  Parser(std::string_view s, const std::string& source, int max_depth)
      : s_(s), source_(source), max_depth_(max_depth) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error("not valid JSON at line " + std::to_string(line) + ", column " +
                    std::to_string(col) + " (byte offset " + std::to_string(pos_) + "): " + what,
                source_);
  }

  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }

  char next() {
    skip_ws();
    if (pos_ >= s_.size()) fail("unexpected end of the document");
    return s_[pos_];
  }

  void expect(char c) {
    if (next() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  JsonValue value(int depth) {
    const char c = next();
    if ((c == '{' || c == '[') && depth >= max_depth_)
      fail("nested deeper than " + std::to_string(max_depth_) + " levels");
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    JsonValue v;
    if (c == '"') {
      v.type = JsonValue::Type::String;
      v.text = string();
    } else if (c == '-' || is_digit(c)) {
      v.type = JsonValue::Type::Number;
      v.text = number();
    } else if (literal("true") || literal("false")) {
      v.type = JsonValue::Type::Bool;
      v.text = c == 't' ? "true" : "false";
    } else if (!literal("null")) {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  JsonValue object(int depth) {
    JsonValue v;
    v.type = JsonValue::Type::Object;
    ++pos_;
    if (next() == '}') {
      ++pos_;
      return v;
    }
    do {
      if (next() != '"') fail("expected a string key");
      std::string key = string();
      expect(':');
      v.members.emplace_back(std::move(key), value(depth + 1));
    } while (more('}'));
    return v;
  }

  JsonValue array(int depth) {
    JsonValue v;
    v.type = JsonValue::Type::Array;
    ++pos_;
    if (next() == ']') {
      ++pos_;
      return v;
    }
    do v.items.push_back(value(depth + 1));
    while (more(']'));
    return v;
  }

  // After an element: true at ',', false at the closing bracket.
  bool more(char close) {
    const char c = next();
    if (c != ',' && c != close) fail(std::string("expected ',' or '") + close + "'");
    ++pos_;
    return c == ',';
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  // RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  std::string number() {
    const size_t start = pos_;
    auto digits = [&](const char* what) {
      if (pos_ >= s_.size() || !is_digit(s_[pos_])) fail(std::string("expected a digit ") + what);
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0')
      ++pos_;
    else
      digits("in the number");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits("after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits("in the exponent");
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= h - '0';
      else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
      else fail("bad \\u escape");
    }
    return v;
  }

  // After "\u": one code point, a surrogate pair taken whole.
  unsigned code_point() {
    const unsigned cp = hex4();
    if (cp >= 0xDC00 && cp < 0xE000) fail("a low surrogate without a high one");
    if (cp < 0xD800 || cp >= 0xDC00) return cp;
    if (s_.substr(pos_, 2) != "\\u") fail("a high surrogate without a low one");
    pos_ += 2;
    const unsigned lo = hex4();
    if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
    return 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      ++pos_;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      switch (s_[pos_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': append_utf8(out, code_point()); break;
        default: --pos_; fail("bad escape");
      }
    }
  }

  std::string_view s_;
  const std::string& source_;
  int max_depth_;
  size_t pos_ = 0;
};

template <class T>
bool from_literal(const JsonValue& v, T& out) {
  if (v.type != JsonValue::Type::Number) return false;
  const char* b = v.text.data();
  const char* e = b + v.text.size();
  const auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

}  // namespace

JsonValue parse_json(std::string_view text, const std::string& source, int max_depth) {
  return Parser(text, source, max_depth).document();
}

bool json_to_int64(const JsonValue& v, int64_t& out) { return from_literal(v, out); }
bool json_to_uint64(const JsonValue& v, uint64_t& out) { return from_literal(v, out); }
bool json_to_double(const JsonValue& v, double& out) {
  return from_literal(v, out) && std::isfinite(out);
}

// ------------------------------------------------------------------ JsonObject

JsonObject::JsonObject(const JsonValue& obj, std::string where, std::string source)
    : obj_(&obj), where_(std::move(where)), source_(std::move(source)) {
  if (obj.type != JsonValue::Type::Object)
    fail("expected an object", where_.empty() ? "(top level)" : where_);
}

void JsonObject::fail(const std::string& reason, const std::string& where) const {
  throw Error(reason, source_, where);
}

std::string JsonObject::name(std::string_view key) const {
  return where_.empty() ? std::string(key) : where_ + "." + std::string(key);
}

const JsonValue& JsonObject::node(std::string_view key) const {
  const JsonValue* v = obj_->find(key);
  if (!v) fail("missing field", name(key));
  return *v;
}

JsonObject JsonObject::object(std::string_view key) const {
  return JsonObject(node(key), name(key), source_);
}

std::string JsonObject::str(std::string_view key) const { return convert<std::string>(node(key), name(key)); }

const JsonValue& JsonObject::array(std::string_view key) const {
  const JsonValue& v = node(key);
  if (v.type != JsonValue::Type::Array) fail("expected an array", name(key));
  return v;
}

std::vector<JsonObject> JsonObject::objects(std::string_view key) const {
  const JsonValue& v = array(key);
  std::vector<JsonObject> out;
  out.reserve(v.items.size());
  for (size_t i = 0; i < v.items.size(); ++i)
    out.emplace_back(v.items[i], name(key) + "[" + std::to_string(i) + "]", source_);
  return out;
}

}  // namespace tpuperf
