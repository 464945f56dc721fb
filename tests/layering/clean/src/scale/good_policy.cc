// Fixture for `scripts/check-pure-includes --self-test` (not compiled): a pure module's
// source that must pass. It mentions std::thread, std::this_thread and
// std::chrono::steady_clock::now() only in comments and strings, and takes time as a
// parameter.
#include <chrono>
#include <string>
/* #include <thread> */
// #include "scrape/scraper.h"

#include "core/clock.h"
#include "metrics/metric_window.h"
#include "route/picker.h"

namespace gpuscale::scale {

// `now` comes from the caller (the daemon's SystemClock, the simulator's virtual time).
double Age(Seconds now, Seconds since) { return (now - since).count(); }

std::string Help() {
  return "never calls std::this_thread::sleep_for or steady_clock::now(); fopen(x) is text";
}

const char* kRaw = R"(std::thread t; fopen("x", "r");)";
const char kQuote = '"';

}  // namespace gpuscale::scale
