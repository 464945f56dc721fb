// Fixture for `scripts/check-pure-includes --self-test` (not compiled): a pure module's
// source with planted violations. Each line the checker must report carries the marker
// comment that the self-test reads (see planted() in the script); no other line may be
// reported.
#include <chrono>
#include <string>
#include <thread>  // expect-violation

#include "core/clock.h"
#include "loadgen/completion_client.h"  // expect-violation
#include "loadgen/sse_parser.h"
#include "metrics/metric_window.h"
#include "scrape/scraper.h"  // expect-violation

// A commented-out include is not an include:
// #include <mutex>
/* #include <future> */

namespace gpuscale::scale {

double BadNow() {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));  // expect-violation
  const auto t = std::chrono::steady_clock::now();            // expect-violation
  return t.time_since_epoch().count();
}

std::string Describe() { return "std::thread in a string is not a thread"; }

}  // namespace gpuscale::scale
