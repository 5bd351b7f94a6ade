// The C++ programs' one JSON string writer (the checker's result stream, the
// benchmarks, the tuning studies) and their one --name=value reader: no
// program concatenates an unescaped string into its JSON or parses its
// arguments by hand.
#pragma once

#include <cstring>
#include <string>

namespace lab {

// A JSON string literal for s: quotes, escapes, control characters as \uXXXX.
std::string json_string(const std::string& s);

// The value of `arg` when it is `--name=value` for this name (given as
// "--name="), else nullptr.
inline const char* flag_value(const char* arg, const char* name_with_equals) {
  const std::size_t k = std::strlen(name_with_equals);
  return std::strncmp(arg, name_with_equals, k) == 0 ? arg + k : nullptr;
}

}  // namespace lab
