#include "common/cli/cli.h"

#include <sstream>

#include "common/config/config.h"
#include "common/base/error.h"

namespace tpuperf {

Cli::Cli(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {
  options_.push_back({"help", "", "print this help and exit", false});
}

Cli& Cli::option(const std::string& name, const std::string& value_name, const std::string& help,
                 bool repeatable) {
  options_.push_back({name, value_name, help, repeatable});
  return *this;
}

Cli& Cli::flag(const std::string& name, const std::string& help) { return option(name, "", help); }

Cli& Cli::positionals(const std::string& name, const std::string& help, size_t min_count) {
  positional_name_ = name;
  positional_help_ = help;
  positional_min_ = min_count;
  return *this;
}

Cli& Cli::config_options() {
  has_config_options_ = true;
  option("config", "FILE", "YAML config (see configs/); keys not set there take schema defaults");
  option("set", "KEY=VALUE", "override one config key, e.g. --set preprocess.folds=3 (repeatable)",
         true);
  option("log-level", "LEVEL", "trace, debug, info, warn, error (overrides log.level)");
  flag("help-config", "list every config key with its type, default and meaning, then exit");
  return *this;
}

Cli& Cli::epilog(const std::string& text) {
  epilog_ = text;
  return *this;
}

const Cli::Option* Cli::find(const std::string& name) const {
  for (const auto& o : options_)
    if (o.name == name) return &o;
  return nullptr;
}

void Cli::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      positional_values_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const Option* opt = find(name);
    if (!opt) throw UsageError("unknown option --" + name + " (see " + program_ + " --help)");
    if (opt->value_name.empty()) {
      if (inline_value) throw UsageError("option --" + name + " takes no value");
      value = "1";
    } else if (!inline_value) {
      if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value " + opt->value_name);
      value = argv[++i];
    }
    auto& slot = values_[name];
    if (!slot.empty() && !opt->repeatable) throw UsageError("option --" + name + " given twice");
    slot.push_back(value);
  }
  // Before the check of the positionals: "tool --help" needs no input files.
  if (has("help")) throw HelpRequested{help()};
  if (has("help-config")) throw HelpRequested{config_help()};
  if (positional_values_.size() < positional_min_)
    throw UsageError("missing " + positional_name_ + " (see " + program_ + " --help)");
  if (positional_name_.empty() && !positional_values_.empty())
    throw UsageError("unexpected argument '" + positional_values_[0] + "' (see " + program_ + " --help)");
}

void as_usage_check(const std::function<void()>& check) {
  try {
    check();
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.reason(), e.file(), e.key());
  }
}

bool Cli::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Cli::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

double Cli::get_double(const std::string& name, double fallback, double min, double max,
                       Open open) const {
  return has(name) ? parse_double(name, get(name), min, max, open) : fallback;
}

std::vector<std::string> Cli::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Cli::help() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [options]";
  if (!positional_name_.empty()) out << " " << positional_name_;
  out << "\n\n" << summary_ << "\n\noptions:\n";
  if (!positional_name_.empty())
    out << "  " << positional_name_ << "\n      " << positional_help_ << "\n";
  for (const auto& o : options_) {
    out << "  --" << o.name;
    if (!o.value_name.empty()) out << " " << o.value_name;
    out << "\n      " << o.help << "\n";
  }
  if (!epilog_.empty()) out << "\n" << epilog_ << "\n";
  return out.str();
}

static const char* type_name(ConfigType t) {
  switch (t) {
    case ConfigType::Bool: return "bool";
    case ConfigType::Int: return "int";
    case ConfigType::Float: return "float";
    case ConfigType::String: return "string";
    case ConfigType::Path: return "path";
    case ConfigType::StringList: return "list";
  }
  return "?";
}

std::string config_help() {
  std::ostringstream out;
  out << "config keys (set in the YAML file or with --set KEY=VALUE):\n";
  for (const auto& k : config_schema()) {
    out << "  " << k.path << " (" << type_name(k.type) << ", default " << k.default_yaml << ")\n      "
        << k.help;
    if (!k.choices.empty()) {
      out << "; one of:";
      for (const auto& c : k.choices) out << " " << c;
    }
    if (k.type == ConfigType::Int || k.type == ConfigType::Float) {
      if (k.min > -1e299) out << "; min " << k.min;
      if (k.max < 1e299) out << "; max " << k.max;
    }
    out << "\n";
  }
  out << collections_help();
  return out.str();
}

}  // namespace tpuperf
