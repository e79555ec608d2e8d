#include "common/cli/numbers.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <system_error>
#include <type_traits>

#include "common/cli/cli.h"

namespace tpuperf {

namespace {

// Parses the whole of text as T with std::from_chars, which takes no leading space or '+'
// (unlike strtol and stoi) and reports overflow instead of saturating.
template <typename T>
bool whole_number(const std::string& text, T& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end;
}

// "an integer", "an integer >= 1", "an integer in [1, 64]": the range as a reader needs it,
// leaving out the limits of the type. An unsigned option always states its minimum, so
// whoever typed -1 learns why it failed.
template <typename T>
std::string integer_range(T min, T max) {
  const bool has_min = std::is_unsigned_v<T> || min != std::numeric_limits<T>::min();
  const bool has_max = max != std::numeric_limits<T>::max();
  if (has_min && has_max)
    return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (has_min) return "an integer >= " + std::to_string(min);
  if (has_max) return "an integer <= " + std::to_string(max);
  return "an integer";
}

[[noreturn]] void reject(const std::string& option, const std::string& wanted,
                         const std::string& text) {
  throw UsageError("--" + option + " expects " + wanted + ", got '" + text + "'");
}

}  // namespace

template <typename T>
T parse_int(const std::string& option, const std::string& text, T min, T max) {
  T v{};
  if (!whole_number(text, v) || v < min || v > max) reject(option, integer_range(min, max), text);
  return v;
}

template int parse_int<int>(const std::string&, const std::string&, int, int);
template int64_t parse_int<int64_t>(const std::string&, const std::string&, int64_t, int64_t);
template uint64_t parse_int<uint64_t>(const std::string&, const std::string&, uint64_t, uint64_t);

double parse_double(const std::string& option, const std::string& text, double min, double max,
                    Open open) {
  double v = 0;
  const bool parsed = whole_number(text, v) && std::isfinite(v);
  const bool above_min = open == Open::Min ? v > min : v >= min;
  if (!parsed || !above_min || v > max) {
    std::ostringstream wanted;
    wanted << "a number in " << (open == Open::Min ? "(" : "[") << min << ", " << max << "]";
    reject(option, wanted.str(), text);
  }
  return v;
}

}  // namespace tpuperf
