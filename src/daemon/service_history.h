// Service history: what each control tick of a service decided and saw, kept in the daemon's
// memory for GET /v1/services/NAME/history and the dashboard's charts (metric against target,
// replicas and traffic on one time axis, from before the page was opened).
//
// Two tiers per service: every tick for the last `fine_span` (10 min), and one point per
// `coarse_step` (1 min) for `coarse_span` (24 h). A coarse point averages its minute's ticks
// (replica counts: the minute's last tick). A point holds floats: about 110 bytes with one
// metric, so a service's ~600 + 1,440 points cost about 220 KB once a day has passed (220 MB
// for 1,000 services). Lost on restart (the store keeps decision rows; this is for charts).
//
// Thread-safety: ServiceHistory is thread-compatible; HistoryBook (one per daemon) is
// thread-safe and owns its lock (the loop records, API threads query).
#pragma once

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "daemon_api/gateway_figures.h"
#include "daemon_api/history_series.h"
#include "scale/policy.h"

namespace gpuscale::daemon {

// One tick of one service.
struct HistorySample {
  Seconds at{0};
  int desired = 0, ready = 0, current = 0;
  std::vector<scale::DecisionInput> inputs;  // what the policy read, against what
  std::optional<GatewayFigures> gateway;     // nullopt: no traffic through the gateway
};

struct HistoryOptions {
  Seconds fine_span{600};
  Seconds coarse_step{60};
  Seconds coarse_span{86400};
  size_t max_points = 5000;  // per query
};

namespace history_internal {
// ServiceHistory's stored point and its per-minute accumulator (at namespace scope: clang
// cannot default-construct a nested class with member initializers inside its own class).
inline constexpr size_t kGateway = kHistoryGatewayFields.size();
struct Point {
  double t = 0;
  float desired = 0, ready = 0, current = 0;
  std::vector<float> inputs;  // metric i's value at 2i, its target at 2i + 1; NaN = none
  std::array<float, kGateway> gateway{};
};
// Sums of one coarse step's ticks, per field (NaN-free), and how many each had.
struct Accumulator {
  double start = 0;
  int ticks = 0;
  Point last;
  std::vector<double> value_sum, target_sum;
  std::vector<int> value_n, target_n;
  std::array<double, kGateway> gateway_sum{};
  std::array<int, kGateway> gateway_n{};
};
}  // namespace history_internal

class ServiceHistory {
 public:
  explicit ServiceHistory(HistoryOptions options = {}) : options_(options) {}

  // REQUIRES: sample.at does not go backwards between calls.
  void Record(const HistorySample& sample);
  // [from, to) at `step`; step 0 picks the finest step that the range's tiers hold with at
  // most ~600 points. Errors: kInvalidArgument naming "from"/"step" (to <= from, step < 0, or
  // more than max_points steps).
  Result<HistorySeries> Query(Seconds from, Seconds to, Seconds step) const;

 private:
  static constexpr size_t kGateway = kHistoryGatewayFields.size();
  using Point = history_internal::Point;
  using Accumulator = history_internal::Accumulator;

  Point ToPoint(const HistorySample& sample);
  void Accumulate(const Point& p);
  void FlushCoarse();

  HistoryOptions options_;
  std::vector<std::string> names_;  // metric index -> name
  std::deque<Point> fine_;
  std::deque<Point> coarse_;
  std::optional<Accumulator> acc_;
};

// Every service's history (the daemon's).
class HistoryBook {
 public:
  explicit HistoryBook(HistoryOptions options = {}) : options_(options) {}

  void Record(const std::string& service, const HistorySample& sample) GS_EXCLUDES(mu_);
  // A service with nothing recorded (no tick yet, or forgotten) gets every step empty, as
  // ServiceHistory with no sample. Errors: ServiceHistory::Query's (bad ranges).
  Result<HistorySeries> Query(const std::string& service, Seconds from, Seconds to,
                              Seconds step) const GS_EXCLUDES(mu_);
  void Forget(const std::string& service) GS_EXCLUDES(mu_);

 private:
  const HistoryOptions options_;
  mutable Mutex mu_;
  std::map<std::string, ServiceHistory> services_ GS_GUARDED_BY(mu_);
};

}  // namespace gpuscale::daemon
