// The one checked reading of the numbers given on the command line, used by every tool
// for every numeric option. The whole text must be the number: no spaces, no '+', no
// trailing characters ("5x"), no hex; it must lie in the option's range. Anything else
// is a UsageError (common/cli/cli.h) naming the option and the text, e.g.
//   --seed expects an integer >= 0, got '-1'
// Option names are given without the leading "--", as Cli declares them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace tpuperf {

// An integer of type T within [min, max]; T's own limits are the defaults, so a value T
// cannot hold is rejected too, and an unsigned T rejects a leading '-'.
// T is int, int64_t or uint64_t (instantiated in numbers.cpp).
template <typename T = int64_t>
T parse_int(const std::string& option, const std::string& text,
            T min = std::numeric_limits<T>::min(), T max = std::numeric_limits<T>::max());

extern template int parse_int<int>(const std::string&, const std::string&, int, int);
extern template int64_t parse_int<int64_t>(const std::string&, const std::string&, int64_t,
                                           int64_t);
extern template uint64_t parse_int<uint64_t>(const std::string&, const std::string&, uint64_t,
                                             uint64_t);

// Which end of a parse_double range is excluded: (0, 1] is {0, 1, Open::Min}.
enum class Open { None, Min };

// A finite decimal number (2, 0.5, 1e-3; not inf or nan) within [min, max] or (min, max].
double parse_double(const std::string& option, const std::string& text, double min, double max,
                    Open open = Open::None);

}  // namespace tpuperf
