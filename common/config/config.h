// The one config loader. A config is YAML checked against the schema in
// config_schema.cpp: every key has a type, a default, a range or a set of choices and a
// help line. Unknown keys are errors naming the key path; every key can be overridden
// from the command line as --set a.b.c=value (the value is parsed as YAML, so lists
// are written [a, b]).
//
// One collection can take its own value of a train.*, model.* or preprocess.prune_* key
// in the top-level `collections:` section, keyed by collection id, each holding dotted
// keys (or nested maps) validated like top-level ones:
//   collections:
//     layout:xla:random: {model.layout.dropout: 0.3}
//     tile:xla: {train.ema_decay: 0}
// or --set collections.layout:xla:random.model.layout.dropout=0.3. The file's and --set's
// entries merge over the schema's default section (collection_defaults()); an entry set to
// null removes the collection's own value (it follows the top-level key again), and a
// collection set to null clears its whole section. for_collection() gives the config a
// collection's readers read: the top-level keys with its section applied.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/base/error.h"
#include "common/graph/collection.h"

namespace YAML {
class Node;
}

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
  std::map<std::string, std::string> retired;  // former choices -> why they are gone
};

// All keys tpuperf knows, in the order they are documented and dumped.
const std::vector<ConfigKey>& config_schema();
// One entry of the schema's default `collections:` section: the collection's own value of
// a key, written as YAML.
struct CollectionDefault {
  std::string collection, key, value_yaml;
};
const std::vector<CollectionDefault>& collection_defaults();
// Why `key` cannot be set in the section of a collection of `kind` ("" when it can): only
// keys its readers read per collection, and only its own kind's model and options.
std::string collection_key_problem(const ConfigKey& key, Kind kind);
// The `collections:` section for --help-config: its syntax and its defaults.
std::string collections_help();
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
// retired: former choices with the reason each was retired, which the error for such a
// value gives (a config of an older version names a model that is gone).
void set_schema_choices(const std::string& key, std::vector<std::string> choices,
                        std::map<std::string, std::string> retired = {});

class Config {
 public:
  using Value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

  // Schema defaults, then the file (if path is non-empty), then the overrides
  // ("a.b=value" strings) in order. Throws Error naming the file and key path. A key that
  // the collections: section replaced (e.g. train.ema_decay_by_collection) is an Error
  // that says how to write it now.
  static Config load(const std::string& path, const std::vector<std::string>& overrides);
  // Schema defaults, then settings tpuperf recorded (a manifest's, a run's
  // train_config.yaml or preprocess_settings.yaml); `source` names them in errors. Keys
  // the collections: section replaced are translated into it, with a log line, so that
  // runs and processed trees of older versions still load.
  static Config from_text(const std::string& yaml, const std::string& source);
  // from_text of a recorded settings file.
  static Config load_saved(const std::string& path);
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

  // key is a schema key or a section entry "collections.<id>.<key>" (value null: remove
  // the entry), as --set writes them.
  void set(const std::string& key, const std::string& yaml_value);
  // One key's value as YAML text, e.g. "0.003" or "[tile:xla]"; of a section entry
  // "collections.<id>.<key>" too ("null" when the collection has none).
  std::string value_text(const std::string& key) const;

  // The config a collection's readers read: this one with the collection's section
  // applied (ids parse as Collection::parse's; Error on an unknown one).
  Config for_collection(const std::string& collection) const;
  // The entries of every collection's section, as "collections.<id>.<key>" paths.
  std::vector<std::string> section_entries() const;
  // Where key's value in this config is set: "collections.<id>.<key>" when a for_collection()
  // config took it from the collection's section, else key.
  std::string key_path(const std::string& key) const;
  // e with its key written as key_path() and the file that gave the value (origin()), for
  // errors about a value this config holds.
  Error located(const Error& e) const;

  // The effective config as YAML, keys nested and in schema order, then the collections:
  // section (entries in dotted form; null where an entry of the default section was
  // removed, so that loading the dump gives this config back). Only keys, and section
  // entries, whose path starts with one of the prefixes when prefixes is non-empty.
  std::string dump(const std::vector<std::string>& prefixes = {}) const;
  // Stable hex digest of dump(prefixes): identifies the settings that shaped an output.
  std::string digest(const std::vector<std::string>& prefixes) const;
  // Writes dump() to path atomically (temporary file + rename).
  void save(const std::string& path) const;
  // Logs the effective config, one line per key and section entry.
  void log() const;

  const std::string& source() const { return source_; }
  // for_collection()'s collection; "" for the top level.
  const std::string& collection() const { return collection_; }

 private:
  using Section = std::map<std::string, Value>;  // key -> the collection's own value
  struct Legacy;  // a replaced key met in a file, translated after the file's other keys

  static Config parse(const std::string& yaml, const std::string& source, bool translate_replaced);
  const Value& value(const std::string& key) const;
  void apply_tree(const YAML::Node& node, const std::string& prefix, std::vector<Legacy>& legacy);
  void apply_sections(const YAML::Node& node, bool from_set);
  void apply_section(const std::string& id, const YAML::Node& node, const std::string& prefix, bool from_set);
  void set_entry(const std::string& id, const std::string& key, const YAML::Node& node, bool from_set);
  void set_path(const std::string& key, const YAML::Node& node, bool from_set);
  void apply_legacy(const std::vector<Legacy>& legacy, bool translate);
  // A collection's section as dump() writes it: (key, YAML value) in schema order.
  std::vector<std::pair<std::string, std::string>> section_lines(const std::string& id,
                                                                 const std::vector<std::string>& prefixes) const;

  std::map<std::string, Value> values_;
  std::map<std::string, Section> sections_;  // collection id -> its section
  std::set<std::string> given_;  // keys (and section entry paths) the file or an override set
  std::set<std::string> overridden_;  // keys (and section entry paths) an override (set()) set
  std::string source_;  // the file it came from, for messages
  std::string collection_;  // for_collection()'s collection, "" for the top level
  std::set<std::string> from_section_;  // keys for_collection() took from the section
};

// "~/x" -> "$HOME/x"; other paths unchanged.
std::string expand_user(const std::string& path);

}  // namespace tpuperf
