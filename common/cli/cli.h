// The one command-line parser. Options are "--name value", "--name=value" or flags;
// --help asks for the usage (generated from the declared options); an unknown option or a
// missing value is a UsageError that names it. Parsing never ends the process: the tool's
// main (run_tool, run_mpi_tool) acts on the outcome, so under mpirun the help and the
// error are printed once and every rank ends cleanly.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/cli/numbers.h"

namespace tpuperf {

// Thrown by Cli::parse for --help and --help-config: the text to print on stdout. Neither
// an Error nor a std::exception, so no handler of failures can take it for one; run_tool
// and run_mpi_tool print it once and exit 0.
struct HelpRequested {
  std::string text;
};

// A mistake on the command line. It depends on argv alone, so every process of a job
// started with the same command makes it alike: run_tool and run_mpi_tool print it once
// and exit kExitError, without MPI (no MPI_Abort banner).
class UsageError : public Error {
 public:
  using Error::Error;
};

// Runs check, a test of option values alone (e.g. a stage's check of its options, or
// Collection::parse of an option), and rethrows its Error as a UsageError.
void as_usage_check(const std::function<void()>& check);

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

  // Throws HelpRequested on --help / --help-config and UsageError on bad usage.
  void parse(int argc, char** argv);

  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  // The option's value read by the checked parsers of numbers.h, or fallback when the
  // option was not given (the fallback is not range-checked).
  template <typename T = int64_t>
  T get_int(const std::string& name, T fallback, T min = std::numeric_limits<T>::min(),
            T max = std::numeric_limits<T>::max()) const {
    return has(name) ? parse_int<T>(name, get(name), min, max) : fallback;
  }
  double get_double(const std::string& name, double fallback, double min, double max,
                    Open open = Open::None) const;
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
