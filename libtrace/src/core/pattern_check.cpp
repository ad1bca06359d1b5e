#include <cctype>
#include <regex>

#include "stepwatch/core/config.h"

namespace stepwatch {

std::string check_pattern(const std::string& pattern) {
  if (pattern.size() > 1024) return "longer than 1024 characters";
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    const auto next = static_cast<unsigned char>(pattern[i + 1]);
    if (pattern[i] == '\\') {
      // Names never need back-references, and libstdc++ overflows on long reference numbers.
      if (std::isdigit(next) && pattern[i + 1] != '0') return "back-references (\\1 ...) are not supported";
      ++i;  // skip the escaped character
      continue;
    }
    if (pattern[i] == '{') {
      size_t digits = 0;
      for (size_t j = i + 1; j < pattern.size() && (std::isdigit(static_cast<unsigned char>(pattern[j])) ||
                                                    pattern[j] == ',');
           ++j) {
        digits = pattern[j] == ',' ? 0 : digits + 1;
        if (digits > 4) return "repetition counts above 9999 are not supported";
      }
    }
  }
  try {
    std::regex re(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return std::string("not a valid regular expression (") + e.what() + ")";
  }
  return {};
}

}  // namespace stepwatch
