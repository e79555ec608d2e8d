// The one command-line parser. Options are "--name value", "--name=value" or flags;
// --help prints the usage (generated from the declared options) and exits 0; an unknown
// option or a missing value is an Error that names it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tpuperf {

class Cli {
 public:
  Cli(std::string program, std::string summary);

  // value_name empty: a flag. repeatable: may be given several times (--set).
  Cli& option(const std::string& name, const std::string& value_name, const std::string& help,
              bool repeatable = false);
  Cli& flag(const std::string& name, const std::string& help);
  // Positional arguments, described in the usage line; at least min_count are required.
  Cli& positionals(const std::string& name, const std::string& help, size_t min_count);
  // --config FILE, --set KEY=VALUE (repeatable), --log-level LEVEL, --help-config.
  Cli& config_options();
  // Free text appended to --help (examples, exit codes).
  Cli& epilog(const std::string& text);

  // Exits the process on --help / --help-config; throws Error on bad usage.
  void parse(int argc, char** argv);

  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> get_all(const std::string& name) const;
  const std::vector<std::string>& args() const { return positional_values_; }
  const std::string& program() const { return program_; }

  std::string help() const;

 private:
  struct Option {
    std::string name, value_name, help;
    bool repeatable = false;
  };
  const Option* find(const std::string& name) const;

  std::string program_, summary_, epilog_;
  std::vector<Option> options_;
  std::string positional_name_, positional_help_;
  size_t positional_min_ = 0;
  bool has_config_options_ = false;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_values_;
};

// Text listing every config key with type, default and help (for --help-config).
std::string config_help();

}  // namespace tpuperf
