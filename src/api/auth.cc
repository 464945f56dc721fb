#include "api/auth.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace gpuscale::api {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Walk the longer input in full so that a length mismatch costs the same as a mismatch in
  // the last character; volatile keeps the compiler from ending the loop early.
  const size_t length = std::max(a.size(), b.size());
  volatile unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference = difference | (x ^ y);
  }
  return difference == 0;
}

bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  }
  std::string_view presented = authorization.substr(kScheme.size());
  while (!presented.empty() && presented.front() == ' ') presented.remove_prefix(1);
  while (!presented.empty() && (presented.back() == ' ' || presented.back() == '\t')) {
    presented.remove_suffix(1);
  }
  return ConstantTimeEquals(presented, token);
}

}  // namespace gpuscale::api
