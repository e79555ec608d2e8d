#include "common/config/config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
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

// Walks a YAML map; every leaf must be a schema key, every inner map a schema section.
void apply_tree(const YAML::Node& node, const std::string& prefix,
                std::map<std::string, Config::Value>& values, std::set<std::string>& given) {
  if (!node.IsMap()) throw Error("expected a map of settings", "", prefix.empty() ? "(top)" : prefix);
  for (const auto& kv : node) {
    std::string path = (prefix.empty() ? "" : prefix + ".") + kv.first.Scalar();
    if (const ConfigKey* key = find_key(path)) {
      values[path] = convert(kv.second, *key);
      given.insert(path);
    } else if (is_section(path)) {
      apply_tree(kv.second, path, values, given);
    } else {
      throw Error("unknown config key (see --help-config for the valid keys)", "", path);
    }
  }
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

Config Config::from_text(const std::string& yaml, const std::string& source) {
  Config cfg;
  for (const auto& key : config_schema())
    cfg.values_[key.path] = convert(parse_yaml(key.default_yaml, "schema"), key);
  cfg.source_ = source;
  try {
    YAML::Node root = parse_yaml(yaml, source);
    if (!root.IsNull()) apply_tree(root, "", cfg.values_, cfg.given_);
  } catch (Error& e) {
    throw e.with_file(source);
  }
  return cfg;
}

Config Config::load(const std::string& path, const std::vector<std::string>& overrides) {
  Config cfg = path.empty() ? from_text("", "") : from_text(read_text_file(path), path);
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

void Config::set(const std::string& key, const std::string& yaml_value) {
  const ConfigKey* k = find_key(key);
  if (!k) {
    throw Error(std::string(is_section(key) ? "is a section, not a key" : "unknown config key") +
                    " (see --help-config for the valid keys)",
                "--set", key);
  }
  try {
    values_[key] = convert(parse_yaml(yaml_value, "--set " + key), *k);
    given_.insert(key);
    overridden_.insert(key);
  } catch (Error& e) {
    throw e.with_file("--set");
  }
}

std::string Config::origin(const std::string& key) const {
  if (overridden_.count(key)) return "--set";
  return given(key) ? source_ : "";
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

std::string Config::dump(const std::vector<std::string>& prefixes) const {
  std::ostringstream out;
  std::vector<std::string> open;  // sections currently open, outermost first
  for (const auto& key : config_schema()) {
    bool wanted = prefixes.empty();
    for (const auto& p : prefixes) wanted |= key.path.compare(0, p.size(), p) == 0;
    if (!wanted) continue;
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
  return out.str();
}

std::string Config::value_text(const std::string& key) const { return value_yaml(value(key)); }

std::string Config::digest(const std::vector<std::string>& prefixes) const {
  return hash_hex(dump(prefixes));
}

void Config::save(const std::string& path) const { write_file_atomic(path, dump()); }

void Config::log() const {
  spdlog::info("effective config{}:", source_.empty() ? "" : " (from " + source_ + ")");
  for (const auto& key : config_schema())
    spdlog::info("  {} = {}", key.path, value_yaml(values_.at(key.path)));
}

std::string expand_user(const std::string& path) {
  if (path == "~" || path.compare(0, 2, "~/") == 0) {
    const char* home = std::getenv("HOME");
    if (home) return std::string(home) + path.substr(1);
  }
  return path;
}

}  // namespace tpuperf
