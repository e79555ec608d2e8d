// The one config loader. A config is YAML checked against the schema in
// config_schema.cpp: every key has a type, a default, a range or a set of choices and a
// help line. Unknown keys are errors naming the key path; every key can be overridden
// from the command line as --set a.b.c=value (the value is parsed as YAML, so lists
// are written [a, b]).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace tpuperf {

class Cli;

enum class ConfigType { Bool, Int, Float, String, Path, StringList };

struct ConfigKey {
  std::string path;          // "preprocess.prune_hops"
  ConfigType type;
  std::string default_yaml;  // default value, written as YAML ("1", "[a, b]", "\"\"")
  std::string help;
  double min = -1e300, max = 1e300;   // numeric range, inclusive
  std::vector<std::string> choices;   // allowed values of a String (or list items)
};

// All keys tpuperf knows, in the order they are documented and dumped.
const std::vector<ConfigKey>& config_schema();
// The schema's entry for a key path; Error naming the path when there is none.
const ConfigKey& config_key(const std::string& path);
// Text as an Int key takes it: a whole decimal number within [key.min, key.max] (strtoll's
// syntax: an optional sign, leading whitespace skipped). Throws Error naming key.path. For
// numbers a key holds inside a list entry (e.g. the steps of "layout:nlp:random=40"), so
// they are checked as the Int key's own values are.
int64_t parse_config_int(const std::string& text, const ConfigKey& key);
// The same for a Float key: a finite number (strtod's syntax) within [key.min, key.max].
double parse_config_float(const std::string& text, const ConfigKey& key);
// Sets the allowed values of a String key whose choices come from a registry of another
// part (the trainer's models and losses: the schema lists them, common/ cannot). Until
// the owner registers them the key takes any string; the owner's tools register before
// they parse a config. Throws Error on an unknown key.
void set_schema_choices(const std::string& key, std::vector<std::string> choices);

class Config {
 public:
  using Value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

  // Schema defaults, then the file (if path is non-empty), then the overrides
  // ("a.b=value" strings) in order. Throws Error naming the file and key path.
  static Config load(const std::string& path, const std::vector<std::string>& overrides);
  // Schema defaults, then YAML text (e.g. the settings recorded in a manifest); `source`
  // names it in errors.
  static Config from_text(const std::string& yaml, const std::string& source);
  // --config FILE, --set k=v... and --log-level from a parsed command line.
  static Config from_cli(const Cli& cli);

  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  // A Path value with "~" expanded to $HOME.
  std::string get_path(const std::string& key) const;
  std::vector<std::string> get_list(const std::string& key) const;
  // Whether the file or an override gave the key (else it holds the schema's default). A
  // saved config (save()) gives every key its schema had when it was written.
  bool given(const std::string& key) const { return given_.count(key) > 0; }
  // Where key's value came from, for errors about it: "--set" for an override, else the
  // file that gave it, else "" (the schema's default).
  std::string origin(const std::string& key) const;

  void set(const std::string& key, const std::string& yaml_value);
  // One key's value as YAML text, e.g. "0.003" or "[tile:xla]".
  std::string value_text(const std::string& key) const;

  // The effective config as YAML, keys nested and in schema order. Only keys whose
  // path starts with one of the prefixes when prefixes is non-empty.
  std::string dump(const std::vector<std::string>& prefixes = {}) const;
  // Stable hex digest of dump(prefixes): identifies the settings that shaped an output.
  std::string digest(const std::vector<std::string>& prefixes) const;
  // Writes dump() to path atomically (temporary file + rename).
  void save(const std::string& path) const;
  // Logs the effective config, one line per key.
  void log() const;

  const std::string& source() const { return source_; }

 private:
  const Value& value(const std::string& key) const;
  std::map<std::string, Value> values_;
  std::set<std::string> given_;  // keys the file or an override set
  std::set<std::string> overridden_;  // keys an override (set()) set
  std::string source_;  // the file it came from, for messages
};

// "~/x" -> "$HOME/x"; other paths unchanged.
std::string expand_user(const std::string& path);

}  // namespace tpuperf
