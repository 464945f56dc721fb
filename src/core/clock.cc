#include "core/clock.h"

#include <ctime>
#include <cstdio>
#include <cmath>

namespace gpuscale {

Seconds SystemClock::Now() const {
  return std::chrono::duration_cast<Seconds>(
      std::chrono::system_clock::now().time_since_epoch());
}

SystemClock& SystemClock::Instance() {
  static SystemClock clock;
  return clock;
}

std::string FormatRfc3339(Seconds unix_time) {
  double whole = std::floor(unix_time.count());
  auto millis = static_cast<int>((unix_time.count() - whole) * 1000.0);
  std::time_t t = static_cast<std::time_t>(whole);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

}  // namespace gpuscale
