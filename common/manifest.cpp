#include "common/manifest.h"

#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>
#include <type_traits>
#include <utility>

#include "common/error.h"
#include "common/files.h"

namespace tpuperf {

namespace {

// ------------------------------------------------------------------ writing

void append_escape(std::string& out, unsigned code) {
  static const char* kHex = "0123456789abcdef";
  out += "\\u00";
  out += kHex[(code >> 4) & 15];
  out += kHex[code & 15];
}

// A JSON string that YAML reads the same: control characters, DEL and the C1 controls are
// escaped (YAML refuses them raw), and so are U+2028/U+2029 (YAML 1.1 line breaks, which
// would be folded); other UTF-8 passes through.
void append_string(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      append_escape(out, c);
    } else if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {
      append_escape(out, next);
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

template <class T>
void append_number(std::string& out, T v) {
  char buf[40];
  // Shortest text that reads back to the same value; locale-independent.
  auto r = std::to_chars(buf, buf + 32, v);
  std::string_view text(buf, r.ptr - buf);
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) throw Error("a non-finite number cannot be stored in the manifest");
    // YAML 1.1 takes "1e-300" or "2" for a string or an int: write "1.0e-300", "2.0".
    if (text.find('.') == std::string_view::npos) {
      const size_t e = text.find('e');
      out.append(text.substr(0, e));
      out += ".0";
      if (e != std::string_view::npos) out.append(text.substr(e));
      return;
    }
  }
  out.append(text);
}

// One JSON object on one line: Line{out}("file", s.file)("rank", s.rank).end().
class Line {
 public:
  explicit Line(std::string& out) : out_(out) { out_ += '{'; }
  Line& operator()(const char* key, const std::string& v) {
    this->key(key);
    append_string(out_, v);
    return *this;
  }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Line& operator()(const char* key, T v) {
    this->key(key);
    if constexpr (sizeof(T) == 1)
      append_number(out_, static_cast<int>(v));  // uint8 is a number, not a character
    else
      append_number(out_, v);
    return *this;
  }
  template <class T>
  Line& operator()(const char* key, const std::vector<T>& v) {
    this->key(key);
    out_ += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ", ";
      if constexpr (std::is_same_v<T, std::string>)
        append_string(out_, v[i]);
      else if constexpr (sizeof(T) == 1)
        append_number(out_, static_cast<int>(v[i]));
      else
        append_number(out_, v[i]);
    }
    out_ += ']';
    return *this;
  }
  void end() { out_ += '}'; }

 private:
  void key(const char* k) {
    if (!first_) out_ += ", ";
    first_ = false;
    append_string(out_, k);
    out_ += ": ";
  }
  std::string& out_;
  bool first_ = true;
};

void append(std::string& out, const ManifestShard& s) {
  Line{out}("file", s.file)("collection", s.collection)("split", s.split)("rank", s.rank)(
      "index", s.index)("size", s.size_bytes)("hash", s.hash)("num_graphs", s.num_graphs)
      .end();
}

void append(std::string& out, const ManifestGraph& g) {
  Line{out}("collection", g.collection)("split", g.split)("name", g.name)("shard", g.shard)(
      "index", g.index)("fold", g.fold)("num_nodes", g.num_nodes)("num_edges", g.num_edges)(
      "num_configs", g.num_configs)("configs_before", g.configs_before)(
      "nodes_before", g.nodes_before)("edges_before", g.edges_before)
      .end();
}

void append(std::string& out, const ManifestSource& s) {
  Line{out}("file", s.file)("collection", s.collection)("split", s.split)("size", s.size_bytes)(
      "mtime_ns", s.mtime_ns)("hash", s.hash)("status", s.status)("reason", s.reason)
      .end();
}

void append(std::string& out, const ManifestRejected& r) {
  Line{out}("file", r.file)("key", r.key)("reason", r.reason).end();
}

template <class T>
void append_records(std::string& out, const char* key, const std::vector<T>& records, bool last) {
  out += ' ';
  append_string(out, key);
  out += ": [";
  for (size_t i = 0; i < records.size(); ++i) {
    out += i ? ",\n  " : "\n  ";
    append(out, records[i]);
  }
  out += records.empty() ? "]" : "\n ]";
  out += last ? "\n" : ",\n";
}

// ------------------------------------------------------------------ reading

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  std::string text;  // a String's value, or a Number's literal (converted on use)
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* find(const char* key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

// A strict JSON parser (RFC 8259) for documents of a few MB: errors give line and column.
class Parser {
 public:
  Parser(const std::string& s, const std::string& path) : s_(s), path_(path) {}

  Json document() {
    Json v = value(0);
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
                    std::to_string(col) + ": " + what,
                path_);
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

  Json value(int depth) {
    if (depth > 64) fail("nested too deeply");
    Json v;
    const char c = next();
    if (c == '{') {
      v.type = Json::Type::Object;
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
    } else if (c == '[') {
      v.type = Json::Type::Array;
      ++pos_;
      if (next() == ']') {
        ++pos_;
        return v;
      }
      do v.items.push_back(value(depth + 1));
      while (more(']'));
    } else if (c == '"') {
      v.type = Json::Type::String;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = Json::Type::Number;
      const size_t start = pos_;
      while (pos_ < s_.size() && std::string_view("+-.eE0123456789").find(s_[pos_]) != std::string_view::npos)
        ++pos_;
      v.text = s_.substr(start, pos_ - start);
    } else if (literal("true")) {
      v.type = Json::Type::Bool;
      v.text = "true";
    } else if (literal("false")) {
      v.type = Json::Type::Bool;
      v.text = "false";
    } else if (literal("null")) {
      v.type = Json::Type::Null;
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  // After an element: true at ',', false at the closing bracket.
  bool more(char close) {
    const char c = next();
    ++pos_;
    if (c == ',') return true;
    if (c == close) return false;
    --pos_;
    fail(std::string("expected ',' or '") + close + "'");
  }

  bool literal(const char* word) {
    const std::string_view w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
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

  static void utf8(std::string& out, unsigned cp) {
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

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
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
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

// One JSON object plus where it sits, so that a missing or malformed field is named
// precisely ("graphs[12].num_nodes").
class Fields {
 public:
  Fields(const Json& obj, std::string where, const std::string& path)
      : obj_(obj), where_(std::move(where)), path_(path) {
    if (obj_.type != Json::Type::Object)
      throw Error("expected an object", path_, where_.empty() ? "(top level)" : where_);
  }

  const Json& node(const char* key) const {
    const Json* v = obj_.find(key);
    if (!v) throw Error("missing field", path_, name(key));
    return *v;
  }

  std::string str(const char* key) const {
    const Json& v = node(key);
    if (v.type != Json::Type::String) throw Error("expected a string", path_, name(key));
    return v.text;
  }

  template <class T>
  T num(const char* key) const {
    return convert<T>(node(key), name(key));
  }

  template <class T>
  std::vector<T> seq(const char* key) const {
    const Json& v = node(key);
    if (v.type != Json::Type::Array) throw Error("expected an array", path_, name(key));
    std::vector<T> out;
    out.reserve(v.items.size());
    for (size_t i = 0; i < v.items.size(); ++i) {
      const std::string where = name(key) + "[" + std::to_string(i) + "]";
      if constexpr (std::is_same_v<T, std::string>) {
        if (v.items[i].type != Json::Type::String) throw Error("expected a string", path_, where);
        out.push_back(v.items[i].text);
      } else {
        out.push_back(convert<T>(v.items[i], where));
      }
    }
    return out;
  }

  std::string name(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

 private:
  // Integers must be exact and in range for T; doubles must be finite.
  template <class T>
  T convert(const Json& v, const std::string& where) const {
    const char* what = std::is_integral_v<T> ? "expected an integer" : "expected a number";
    if (v.type != Json::Type::Number) throw Error(what, path_, where);
    const char* b = v.text.data();
    const char* e = b + v.text.size();
    if constexpr (std::is_integral_v<T>) {
      int64_t x = 0;
      auto r = std::from_chars(b, e, x);
      if (r.ec != std::errc() || r.ptr != e || x < std::numeric_limits<T>::min() ||
          x > static_cast<int64_t>(std::numeric_limits<T>::max()))
        throw Error(std::string(what) + ", got " + v.text, path_, where);
      return static_cast<T>(x);
    } else {
      double x = 0;
      auto r = std::from_chars(b, e, x);
      if (r.ec != std::errc() || r.ptr != e) throw Error(std::string(what) + ", got " + v.text, path_, where);
      return x;
    }
  }

  const Json& obj_;
  std::string where_;
  const std::string& path_;
};

FeatureTransform parse_transform(const Fields& f) {
  FeatureTransform t;
  t.kept_columns = f.seq<int32_t>("kept_columns");
  t.log1p = f.seq<uint8_t>("log1p");
  t.mean = f.seq<double>("mean");
  t.stddev = f.seq<double>("stddev");
  return t;
}

ManifestShard parse_shard(const Fields& f) {
  ManifestShard s;
  s.file = f.str("file");
  s.collection = f.str("collection");
  s.split = f.str("split");
  s.rank = f.num<int>("rank");
  s.index = f.num<int>("index");
  s.size_bytes = f.num<int64_t>("size");
  s.hash = f.str("hash");
  s.num_graphs = f.num<int64_t>("num_graphs");
  return s;
}

ManifestGraph parse_graph(const Fields& f) {
  ManifestGraph g;
  g.collection = f.str("collection");
  g.split = f.str("split");
  g.name = f.str("name");
  g.shard = f.str("shard");
  g.index = f.num<int64_t>("index");
  g.fold = f.num<int>("fold");
  g.num_nodes = f.num<int64_t>("num_nodes");
  g.num_edges = f.num<int64_t>("num_edges");
  g.num_configs = f.num<int64_t>("num_configs");
  g.configs_before = f.num<int64_t>("configs_before");
  g.nodes_before = f.num<int64_t>("nodes_before");
  g.edges_before = f.num<int64_t>("edges_before");
  return g;
}

ManifestSource parse_source(const Fields& f) {
  ManifestSource s;
  s.file = f.str("file");
  s.collection = f.str("collection");
  s.split = f.str("split");
  s.size_bytes = f.num<int64_t>("size");
  s.mtime_ns = f.num<int64_t>("mtime_ns");
  s.hash = f.str("hash");
  s.status = f.str("status");
  s.reason = f.str("reason");
  if (s.status != kSourceOk && s.status != kSourceRejected)
    throw Error("status '" + s.status + "' is neither ok nor rejected", "", f.name("status"));
  return s;
}

ManifestRejected parse_rejected(const Fields& f) {
  return {f.str("file"), f.str("key"), f.str("reason")};
}

template <class T, class Parse>
std::vector<T> parse_records(const Fields& top, const char* key, const std::string& path,
                             Parse parse) {
  const Json& arr = top.node(key);
  if (arr.type != Json::Type::Array) throw Error("expected an array", path, key);
  std::vector<T> out;
  out.reserve(arr.items.size());
  for (size_t i = 0; i < arr.items.size(); ++i) {
    try {
      out.push_back(parse(Fields(arr.items[i], std::string(key) + "[" + std::to_string(i) + "]", path)));
    } catch (Error& e) {
      throw e.with_file(path);
    }
  }
  return out;
}

}  // namespace

std::string manifest_to_yaml(const Manifest& m) {
  std::string out = "{\n";
  auto top = [&](const char* key, auto&& write_value) {
    out += ' ';
    append_string(out, key);
    out += ": ";
    write_value();
    out += ",\n";
  };
  top("schema_version", [&] { append_number(out, m.schema_version); });
  top("created", [&] { append_string(out, m.created); });
  top("settings_digest", [&] { append_string(out, m.settings_digest); });
  top("settings", [&] { append_string(out, m.settings); });
  top("collections", [&] {
    out += '[';
    for (size_t i = 0; i < m.collections.size(); ++i) {
      if (i) out += ", ";
      append_string(out, m.collections[i]);
    }
    out += ']';
  });
  top("feature_transforms", [&] {
    out += '{';
    bool first = true;
    for (const auto& [id, t] : m.feature_transforms) {
      out += first ? "\n  " : ",\n  ";
      first = false;
      append_string(out, id);
      out += ": ";
      try {
        Line{out}("kept_columns", t.kept_columns)("log1p", t.log1p)("mean", t.mean)("stddev", t.stddev).end();
      } catch (Error& e) {
        throw e.with_key("feature_transforms." + id);
      }
    }
    out += first ? "}" : "\n }";
  });
  top("feature_files", [&] {
    out += '{';
    bool first = true;
    for (const auto& [id, file] : m.feature_files) {
      out += first ? "" : ", ";
      first = false;
      append_string(out, id);
      out += ": ";
      append_string(out, file);
    }
    out += '}';
  });
  append_records(out, "shards", m.shards, false);
  append_records(out, "graphs", m.graphs, false);
  append_records(out, "sources", m.sources, false);
  append_records(out, "rejected", m.rejected, true);
  out += "}\n";
  return out;
}

Manifest manifest_from_yaml(const std::string& text, const std::string& path) {
  const Json root = Parser(text, path).document();
  if (root.type != Json::Type::Object) throw Error("not a tpuperf manifest (not a JSON object)", path);
  const Fields top(root, "", path);
  Manifest m;
  m.schema_version = top.num<int>("schema_version");
  if (m.schema_version != kManifestSchemaVersion)
    throw Error("manifest schema_version " + std::to_string(m.schema_version) + " is not the " +
                    std::to_string(kManifestSchemaVersion) +
                    " this build reads: rerun tpuperf-preprocess with this build",
                path, "schema_version");
  m.created = top.str("created");
  m.settings_digest = top.str("settings_digest");
  m.settings = top.str("settings");
  m.collections = top.seq<std::string>("collections");
  const Json& transforms = top.node("feature_transforms");
  if (transforms.type != Json::Type::Object) throw Error("expected an object", path, "feature_transforms");
  for (const auto& [id, t] : transforms.members)
    m.feature_transforms[id] = parse_transform(Fields(t, "feature_transforms." + id, path));
  const Json& files = top.node("feature_files");
  if (files.type != Json::Type::Object) throw Error("expected an object", path, "feature_files");
  const Fields file_fields(files, "feature_files", path);
  for (const auto& [id, file] : files.members) m.feature_files[id] = file_fields.str(id.c_str());
  m.shards = parse_records<ManifestShard>(top, "shards", path, parse_shard);
  m.graphs = parse_records<ManifestGraph>(top, "graphs", path, parse_graph);
  m.sources = parse_records<ManifestSource>(top, "sources", path, parse_source);
  m.rejected = parse_records<ManifestRejected>(top, "rejected", path, parse_rejected);
  return m;
}

void write_manifest(const std::string& path, const Manifest& m) {
  std::string text;
  try {
    text = manifest_to_yaml(m);
  } catch (Error& e) {
    throw e.with_file(path);
  }
  write_file_atomic(path, text);
}

Manifest read_manifest(const std::string& path) {
  return manifest_from_yaml(read_text_file(path), path);
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

const ManifestGraph* Manifest::find_graph(const std::string& collection,
                                          const std::string& name) const {
  for (const auto& g : graphs)
    if (g.name == name && g.collection == collection) return &g;
  return nullptr;
}

const ManifestShard* Manifest::find_shard(const std::string& file) const {
  for (const auto& s : shards)
    if (s.file == file) return &s;
  return nullptr;
}

const ManifestSource* Manifest::find_source(const std::string& file) const {
  for (const auto& s : sources)
    if (s.file == file) return &s;
  return nullptr;
}

const FeatureTransform* Manifest::find_transform(const std::string& collection) const {
  auto it = feature_transforms.find(collection);
  return it == feature_transforms.end() ? nullptr : &it->second;
}

std::vector<const ManifestGraph*> Manifest::graphs_of(const std::string& collection,
                                                      const std::string& split) const {
  std::vector<const ManifestGraph*> out;
  for (const auto& g : graphs)
    if (g.collection == collection && (split.empty() || g.split == split)) out.push_back(&g);
  return out;
}

}  // namespace tpuperf
