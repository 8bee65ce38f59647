// The names of every public enumeration, defined once. The C API's *_name functions, the
// JSON reader and writer, and (through memest_enum_name / the JSON "enums" mode) every
// binding and the web page read these tables; nothing else spells the names out.
#pragma once

#include <cstdint>
#include <string>

#include "memest/memest.h"

namespace memest {

struct EnumTable {
  const char* const* names;
  uint32_t count;
};

// The table of enumeration `which` ({nullptr, 0} when out of range).
EnumTable enum_table(memest_enum which);
// The name of `value` in `which`, or nullptr when out of range.
const char* enum_name(memest_enum which, int32_t value);
// The value named `name` in `which`, or -1.
int32_t enum_value(memest_enum which, const std::string& name);
// "a, b or c": the names of `which` for messages.
std::string enum_choices(memest_enum which);

// The verdict bands (4D paper): the upper bound of FITS and TIGHT as a fraction of capacity.
constexpr double kFitsFraction = 0.80;
constexpr double kTightFraction = 1.00;

}  // namespace memest
