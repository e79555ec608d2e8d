#include "common/config/config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "common/cli/cli.h"
#include "common/base/error.h"
#include "common/base/files.h"
#include "common/base/hash.h"
#include "common/base/log.h"

namespace tpuperf {

namespace {

const ConfigKey* find_key(const std::string& path) {
  for (const auto& k : config_schema())
    if (k.path == path) return &k;
  return nullptr;
}

bool is_section(const std::string& path) {
  for (const auto& k : config_schema())
    if (k.path.compare(0, path.size() + 1, path + ".") == 0) return true;
  return false;
}

void check_choice(const ConfigKey& key, const std::string& v) {
  if (key.choices.empty()) return;
  for (const auto& c : key.choices)
    if (c == v) return;
  if (const auto r = key.retired.find(v); r != key.retired.end())
    throw Error("'" + v + "' was retired: " + r->second, "", key.path);
  std::string all;
  for (const auto& c : key.choices) all += (all.empty() ? "" : ", ") + c;
  throw Error("'" + v + "' is not one of: " + all, "", key.path);
}

std::string scalar_of(const YAML::Node& node, const ConfigKey& key) {
  if (!node.IsScalar()) throw Error("expected a single value, not a list or map", "", key.path);
  return node.Scalar();
}

// Converts one YAML node to the key's type, checking range and choices.
Config::Value convert(const YAML::Node& node, const ConfigKey& key) {
  switch (key.type) {
    case ConfigType::Bool: {
      std::string s = scalar_of(node, key);
      if (s == "true" || s == "True" || s == "yes" || s == "1") return true;
      if (s == "false" || s == "False" || s == "no" || s == "0") return false;
      throw Error("expected true or false, got '" + s + "'", "", key.path);
    }
    case ConfigType::Int:
      return parse_config_int(scalar_of(node, key), key);
    case ConfigType::Float:
      return parse_config_float(scalar_of(node, key), key);
    case ConfigType::String:
    case ConfigType::Path: {
      std::string s = node.IsNull() ? "" : scalar_of(node, key);
      check_choice(key, s);
      return s;
    }
    case ConfigType::StringList: {
      std::vector<std::string> out;
      if (node.IsNull()) return out;
      if (!node.IsSequence()) throw Error("expected a list like [a, b]", "", key.path);
      for (const auto& item : node) {
        if (!item.IsScalar()) throw Error("list items must be single values", "", key.path);
        check_choice(key, item.Scalar());
        out.push_back(item.Scalar());
      }
      return out;
    }
  }
  throw Error("unhandled config type", "", key.path);
}

YAML::Node parse_yaml(const std::string& text, const std::string& what) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error("invalid YAML: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")", what);
  }
}

constexpr const char* kSections = "collections";

std::string section_path(const std::string& id, const std::string& key) {
  return std::string(kSections) + "." + id + "." + key;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// A collection id of the section as Collection::parse reads it; Error naming the entry.
std::string section_id(const std::string& written) {
  try {
    return Collection::parse(written).id();
  } catch (const Error& e) {
    throw Error(e.reason(), "", std::string(kSections) + "." + written);
  }
}

// A key of the schema's past that a collection's section (or a merged key) replaced, and
// how its value is written now. Old files of tpuperf itself are translated; a user's
// config is refused with the translation as the fix.
struct ReplacedKey {
  const char* old_key;
  const char* new_key;
  // List: entries "collection=value" for the collections named (old_default: those whose
  // entry the old default list had: the list replaced them all). Tile / Layout: the value
  // of the tile (every layout) collection. Top: the top-level key, renamed.
  enum Form { List, Tile, Layout, Top } form;
  std::vector<std::string> old_default;
  bool zero_is_unset = false;  // 0 meant "the top-level key's value"
};

// In the order they translate: the kind's floor before the list that replaced it per collection.
const std::vector<ReplacedKey>& replaced_keys() {
  static const std::vector<ReplacedKey> keys = {
      {"train.tile_steps_per_epoch", "train.steps_per_epoch", ReplacedKey::Tile, {}, true},
      {"train.layout_steps_per_epoch", "train.steps_per_epoch", ReplacedKey::Layout, {}, true},
      {"train.layout_min_steps_per_epoch", "train.min_steps_per_epoch", ReplacedKey::Top, {}},
      {"train.tile_min_steps_per_epoch", "train.min_steps_per_epoch", ReplacedKey::Tile, {}},
      {"train.min_steps_per_epoch_by_collection", "train.min_steps_per_epoch", ReplacedKey::List,
       {"layout:nlp:random", "layout:nlp:default", "layout:xla:default"}},
      {"train.ema_decay_by_collection", "train.ema_decay", ReplacedKey::List, {"tile:xla"}},
      {"model.layout.dropout_by_collection", "model.layout.dropout", ReplacedKey::List, {"layout:xla:random"}},
      {"model.layout.attention_heads_by_collection", "model.layout.attention_heads", ReplacedKey::List,
       {"layout:xla:default", "layout:nlp:random"}},
      {"preprocess.prune_hops_by_collection", "preprocess.prune_hops", ReplacedKey::List, {}},
  };
  return keys;
}

const ReplacedKey* find_replaced(const std::string& path) {
  for (const auto& r : replaced_keys())
    if (path == r.old_key) return &r;
  return nullptr;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t"), last = s.find_last_not_of(" \t");
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

std::vector<std::string> layout_ids() {
  std::vector<std::string> ids;
  for (const Collection& c : Collection::all())
    if (c.kind == Kind::Layout) ids.push_back(c.id());
  return ids;
}

// What a replaced key's value sets now: (path, YAML value) pairs, a path being a key or a
// section entry "collections.<id>.<key>" (value null: the collection follows the key).
std::vector<std::pair<std::string, std::string>> translation(const ReplacedKey& r, const YAML::Node& node) {
  std::vector<std::pair<std::string, std::string>> out;
  if (r.form != ReplacedKey::List) {
    if (!node.IsScalar()) throw Error("expected a single value", "", r.old_key);
    const std::string v = node.Scalar();
    if (r.zero_is_unset && v == "0") return out;  // the default: no collection's own value
    if (r.form == ReplacedKey::Top) out.emplace_back(r.new_key, v);
    if (r.form == ReplacedKey::Tile) out.emplace_back(section_path("tile:xla", r.new_key), v);
    if (r.form == ReplacedKey::Layout)
      for (const auto& id : layout_ids()) out.emplace_back(section_path(id, r.new_key), v);
    return out;
  }
  if (!node.IsNull() && !node.IsSequence()) throw Error("expected a list like [collection=value]", "", r.old_key);
  std::map<std::string, std::string> named;
  if (node.IsSequence())
    for (const auto& item : node) {
      const std::string entry = item.IsScalar() ? item.Scalar() : "";
      const auto eq = entry.find('=');
      if (eq == std::string::npos) throw Error("expected collection=value, got '" + entry + "'", "", r.old_key);
      try {
        named[Collection::parse(trimmed(entry.substr(0, eq))).id()] = trimmed(entry.substr(eq + 1));
      } catch (const Error& e) {
        throw Error("in '" + entry + "': " + e.reason(), "", r.old_key);
      }
    }
  for (const auto& id : r.old_default)
    if (!named.count(id)) out.emplace_back(section_path(id, r.new_key), "null");
  for (const auto& [id, v] : named) out.emplace_back(section_path(id, r.new_key), v);
  return out;
}

// The translation as a config file writes it, e.g. "collections: {tile:xla: {train.ema_decay:
// 0}}", for the error that refuses a replaced key.
std::string translation_yaml(const std::vector<std::pair<std::string, std::string>>& t) {
  std::string top, sections;
  std::map<std::string, std::string> by_id;
  std::vector<std::string> ids;
  for (const auto& [path, v] : t) {
    if (!starts_with(path, std::string(kSections) + ".")) {
      top += (top.empty() ? "" : ", ") + path + ": " + v;
      continue;
    }
    const std::string rest = path.substr(std::string(kSections).size() + 1);
    const auto dot = rest.find('.');
    const std::string id = rest.substr(0, dot);
    if (!by_id.count(id)) ids.push_back(id);
    by_id[id] += (by_id[id].empty() ? "" : ", ") + rest.substr(dot + 1) + ": " + v;
  }
  for (const auto& id : ids) sections += (sections.empty() ? "" : ", ") + id + ": {" + by_id[id] + "}";
  std::string out = top;
  if (!sections.empty()) out += (out.empty() ? "" : " and ") + std::string(kSections) + ": {" + sections + "}";
  return out;
}

Error replaced_error(const ReplacedKey& r, const YAML::Node& node) {
  const auto t = translation(r, node);
  if (t.empty())
    return Error("was replaced by the collections: section (see --help-config); this value is the default: remove it",
                 "", r.old_key);
  const std::string how = r.form == ReplacedKey::Top ? "was renamed" : "was replaced by the collections: section (see --help-config)";
  return Error(how + "; write " + translation_yaml(t), "", r.old_key);
}

std::string value_yaml(const Config::Value& v) {
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::vector<std::string>>) {
          out << YAML::BeginSeq;
          for (const auto& s : x) out << s;
          out << YAML::EndSeq;
        } else if constexpr (std::is_same_v<X, double>) {
          std::ostringstream s;
          s.precision(17);
          s << x;
          out << s.str();
        } else if constexpr (std::is_same_v<X, std::string>) {
          out << YAML::DoubleQuoted << x;
        } else {
          out << x;
        }
      },
      v);
  return out.c_str();
}

}  // namespace

const ConfigKey& config_key(const std::string& path) {
  if (const ConfigKey* k = find_key(path)) return *k;
  throw Error("unknown config key", "", path);
}

int64_t parse_config_int(const std::string& text, const ConfigKey& key) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw Error("expected an integer, got '" + text + "'", "", key.path);
  if (v < key.min || v > key.max)
    throw Error("value " + text + " is out of range [" + std::to_string(int64_t(key.min)) + ", " +
                    std::to_string(int64_t(key.max)) + "]",
                "", key.path);
  return static_cast<int64_t>(v);
}

double parse_config_float(const std::string& text, const ConfigKey& key) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    throw Error("expected a number, got '" + text + "'", "", key.path);
  if (v < key.min || v > key.max) {
    std::ostringstream msg;
    msg << "value " << text << " is out of range [" << key.min << ", " << key.max << "]";
    throw Error(msg.str(), "", key.path);
  }
  return v;
}

struct Config::Legacy {
  const ReplacedKey* key;
  YAML::Node value;
};

// A parsed text: the schema's defaults (the default section too), then the text, then
// the replaced keys it holds, translated or refused.
Config Config::parse(const std::string& yaml, const std::string& source, bool translate_replaced) {
  Config cfg;
  for (const auto& key : config_schema())
    cfg.values_[key.path] = convert(parse_yaml(key.default_yaml, "schema"), key);
  for (const auto& d : collection_defaults())
    cfg.sections_[d.collection][d.key] = convert(parse_yaml(d.value_yaml, "schema"), config_key(d.key));
  cfg.source_ = source;
  try {
    YAML::Node root = parse_yaml(yaml, source);
    std::vector<Legacy> legacy;
    if (!root.IsNull()) cfg.apply_tree(root, "", legacy);
    cfg.apply_legacy(legacy, translate_replaced);
  } catch (Error& e) {
    throw e.with_file(source);
  }
  return cfg;
}

Config Config::from_text(const std::string& yaml, const std::string& source) { return parse(yaml, source, true); }

Config Config::load_saved(const std::string& path) { return from_text(read_text_file(path), path); }

Config Config::load(const std::string& path, const std::vector<std::string>& overrides) {
  Config cfg = parse(path.empty() ? "" : read_text_file(path), path, false);
  for (const auto& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--set expects KEY=VALUE, got '" + o + "'");
    cfg.set(o.substr(0, eq), o.substr(eq + 1));
  }
  return cfg;
}

Config Config::from_cli(const Cli& cli) {
  auto overrides = cli.get_all("set");
  if (cli.has("log-level")) overrides.push_back("log.level=" + cli.get("log-level"));
  Config cfg = load(cli.get("config"), overrides);
  set_log_level(cfg.get_string("log.level"));
  return cfg;
}

// Walks a YAML map; every leaf must be a schema key, every inner map a schema section;
// the top-level collections: holds the collections' sections.
void Config::apply_tree(const YAML::Node& node, const std::string& prefix, std::vector<Legacy>& legacy) {
  if (!node.IsMap()) throw Error("expected a map of settings", "", prefix.empty() ? "(top)" : prefix);
  for (const auto& kv : node) {
    std::string path = (prefix.empty() ? "" : prefix + ".") + kv.first.Scalar();
    if (const ConfigKey* key = find_key(path)) {
      values_[path] = convert(kv.second, *key);
      given_.insert(path);
    } else if (path == kSections) {
      apply_sections(kv.second, false);
    } else if (const ReplacedKey* r = find_replaced(path)) {
      legacy.push_back({r, kv.second});
    } else if (is_section(path)) {
      apply_tree(kv.second, path, legacy);
    } else {
      throw Error("unknown config key (see --help-config for the valid keys)", "", path);
    }
  }
}

void Config::apply_sections(const YAML::Node& node, bool from_set) {
  if (node.IsNull()) {  // collections: ~ clears every section, the default one's too
    sections_.clear();
    return;
  }
  if (!node.IsMap()) throw Error("expected a map of collection ids to their keys", "", kSections);
  for (const auto& kv : node) apply_section(section_id(kv.first.Scalar()), kv.second, "", from_set);
}

void Config::apply_section(const std::string& id, const YAML::Node& node, const std::string& prefix, bool from_set) {
  if (node.IsNull() && prefix.empty()) {  // <id>: ~ clears the collection's section
    sections_.erase(id);
    return;
  }
  if (!node.IsMap())
    throw Error("expected a map of keys to values", "", std::string(kSections) + "." + id + (prefix.empty() ? "" : "." + prefix));
  for (const auto& kv : node) {
    const std::string path = (prefix.empty() ? "" : prefix + ".") + kv.first.Scalar();
    if (find_key(path))
      set_entry(id, path, kv.second, from_set);
    else if (is_section(path))
      apply_section(id, kv.second, path, from_set);
    else
      throw Error("unknown config key (see --help-config for the valid keys)", "", section_path(id, path));
  }
}

void Config::set_entry(const std::string& id, const std::string& key, const YAML::Node& node, bool from_set) {
  const std::string path = section_path(id, key);
  const ConfigKey& k = config_key(key);
  const std::string problem = collection_key_problem(k, Collection::parse(id).kind);
  if (!problem.empty()) throw Error(problem, "", path);
  if (node.IsNull()) {
    sections_[id].erase(key);
  } else {
    try {
      sections_[id][key] = convert(node, k);
    } catch (const Error& e) {
      throw Error(e.reason(), "", path);
    }
  }
  given_.insert(path);
  if (from_set) overridden_.insert(path);
}

// Saved settings: each replaced key becomes what it means now (logged once per file: a
// run directory is opened once per collection it ranks). A user's config: an Error that
// says how to write it.
void Config::apply_legacy(const std::vector<Legacy>& legacy, bool translate) {
  std::string read_as;
  for (const ReplacedKey& r : replaced_keys()) {  // in translation order, not the file's
    for (const Legacy& l : legacy) {
      if (l.key != &r) continue;
      if (!translate) throw replaced_error(r, l.value);
      const auto t = translation(r, l.value);
      for (const auto& [path, value] : t) set_path(path, parse_yaml(value, r.old_key), false);
      if (!t.empty()) read_as += std::string(read_as.empty() ? "" : "; ") + r.old_key + " as " + translation_yaml(t);
    }
  }
  static std::mutex mutex;
  static std::set<std::string> logged;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!read_as.empty() && logged.insert(source_).second)
    spdlog::info("{}: keys of an older tpuperf read as the collections: section: {}", source_, read_as);
}

// A key or a section path ("collections", "collections.<id>", "collections.<id>.<key or
// section>") set to a parsed value.
void Config::set_path(const std::string& key, const YAML::Node& node, bool from_set) {
  if (key == kSections) return apply_sections(node, from_set);
  if (starts_with(key, std::string(kSections) + ".")) {
    const std::string rest = key.substr(std::string(kSections).size() + 1);
    const auto dot = rest.find('.');
    const std::string id = section_id(rest.substr(0, dot));
    const std::string entry = dot == std::string::npos ? "" : rest.substr(dot + 1);
    if (entry.empty() || is_section(entry)) return apply_section(id, node, entry, from_set);
    if (!find_key(entry))
      throw Error("unknown config key (see --help-config for the valid keys)", "", section_path(id, entry));
    return set_entry(id, entry, node, from_set);
  }
  const ConfigKey* k = find_key(key);
  if (const ReplacedKey* r = find_replaced(key)) throw replaced_error(*r, node);
  if (!k) {
    throw Error(std::string(is_section(key) ? "is a section, not a key" : "unknown config key") +
                    " (see --help-config for the valid keys)",
                "", key);
  }
  values_[key] = convert(node, *k);
  given_.insert(key);
  if (from_set) overridden_.insert(key);
}

void Config::set(const std::string& key, const std::string& yaml_value) {
  try {
    set_path(key, parse_yaml(yaml_value, "--set " + key), true);
  } catch (Error& e) {
    throw e.with_file("--set");
  }
}

std::string Config::origin(const std::string& key) const {
  if (overridden_.count(key)) return "--set";
  return given(key) ? source_ : "";
}

Config Config::for_collection(const std::string& collection) const {
  const std::string id = Collection::parse(collection).id();
  if (!collection_.empty() && collection_ != id)
    throw Error("program asked for " + id + "'s config from " + collection_ + "'s", "", kSections);
  Config out = *this;
  out.collection_ = id;
  const auto section = sections_.find(id);
  if (section == sections_.end()) return out;
  for (const auto& [key, value] : section->second) {
    const std::string path = section_path(id, key);
    out.values_[key] = value;
    out.from_section_.insert(key);
    // The value's origin is the section entry's, not the top-level key's.
    out.given_.erase(key);
    out.overridden_.erase(key);
    if (given_.count(path)) out.given_.insert(key);
    if (overridden_.count(path)) out.overridden_.insert(key);
  }
  return out;
}

std::vector<std::string> Config::section_entries() const {
  std::vector<std::string> out;
  for (const auto& [id, section] : sections_)
    for (const auto& entry : section) out.push_back(section_path(id, entry.first));
  return out;
}

std::string Config::key_path(const std::string& key) const {
  return from_section_.count(key) ? section_path(collection_, key) : key;
}

Error Config::located(const Error& e) const {
  if (e.key().empty()) return e;
  Error out(e.reason(), e.file().empty() ? origin(e.key()) : e.file(), key_path(e.key()));
  if (e.rank() >= 0) out.with_rank(e.rank());
  return out;
}

const Config::Value& Config::value(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw Error("program asked for a key missing from the schema", "", key);
  return it->second;
}

template <typename T>
static const T& typed(const Config::Value& v, const std::string& key) {
  if (auto* p = std::get_if<T>(&v)) return *p;
  throw Error("program asked for the key with the wrong type", "", key);
}

bool Config::get_bool(const std::string& key) const { return typed<bool>(value(key), key); }
int64_t Config::get_int(const std::string& key) const { return typed<int64_t>(value(key), key); }
double Config::get_float(const std::string& key) const { return typed<double>(value(key), key); }
std::string Config::get_string(const std::string& key) const {
  return typed<std::string>(value(key), key);
}
std::string Config::get_path(const std::string& key) const { return expand_user(get_string(key)); }
std::vector<std::string> Config::get_list(const std::string& key) const {
  return typed<std::vector<std::string>>(value(key), key);
}

namespace {

bool wanted(const std::string& path, const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) return true;
  for (const auto& p : prefixes)
    if (starts_with(path, p)) return true;
  return false;
}

bool has_default_entry(const std::string& id, const std::string& key) {
  for (const auto& d : collection_defaults())
    if (d.collection == id && d.key == key) return true;
  return false;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Config::section_lines(const std::string& id,
                                                                       const std::vector<std::string>& prefixes) const {
  std::vector<std::pair<std::string, std::string>> lines;
  const auto section = sections_.find(id);
  for (const auto& key : config_schema()) {
    if (!wanted(key.path, prefixes) && !wanted(section_path(id, key.path), prefixes)) continue;
    if (section != sections_.end() && section->second.count(key.path))
      lines.emplace_back(key.path, value_yaml(section->second.at(key.path)));
    else if (has_default_entry(id, key.path))
      lines.emplace_back(key.path, "null");  // the default section's entry, removed
  }
  return lines;
}

std::string Config::dump(const std::vector<std::string>& prefixes) const {
  std::ostringstream out;
  std::vector<std::string> open;  // sections currently open, outermost first
  for (const auto& key : config_schema()) {
    if (!wanted(key.path, prefixes)) continue;
    std::vector<std::string> parts;
    std::stringstream ss(key.path);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common])
      ++common;
    open.resize(common);
    for (size_t i = common; i + 1 < parts.size(); ++i) {
      out << std::string(2 * i, ' ') << parts[i] << ":\n";
      open.push_back(parts[i]);
    }
    out << std::string(2 * (parts.size() - 1), ' ') << parts.back() << ": "
        << value_yaml(values_.at(key.path)) << "\n";
  }
  std::ostringstream sections;
  for (const Collection& c : Collection::all()) {
    const auto lines = section_lines(c.id(), prefixes);
    if (lines.empty()) continue;
    sections << "  " << c.id() << ":\n";
    for (const auto& [key, value] : lines) sections << "    " << key << ": " << value << "\n";
  }
  if (!sections.str().empty()) out << kSections << ":\n" << sections.str();
  return out.str();
}

std::string Config::value_text(const std::string& key) const {
  if (!starts_with(key, std::string(kSections) + ".")) return value_yaml(value(key));
  for (const auto& [id, section] : sections_)
    for (const auto& [k, v] : section)
      if (section_path(id, k) == key) return value_yaml(v);
  return "null";
}

std::string Config::digest(const std::vector<std::string>& prefixes) const {
  return hash_hex(dump(prefixes));
}

void Config::save(const std::string& path) const { write_file_atomic(path, dump()); }

void Config::log() const {
  spdlog::info("effective config{}:", source_.empty() ? "" : " (from " + source_ + ")");
  for (const auto& key : config_schema())
    spdlog::info("  {} = {}", key.path, value_yaml(values_.at(key.path)));
  for (const Collection& c : Collection::all())
    for (const auto& [key, value] : section_lines(c.id(), {}))
      spdlog::info("  {} = {}", section_path(c.id(), key), value);
}

std::string expand_user(const std::string& path) {
  if (path == "~" || path.compare(0, 2, "~/") == 0) {
    const char* home = std::getenv("HOME");
    if (home) return std::string(home) + path.substr(1);
  }
  return path;
}

}  // namespace tpuperf
