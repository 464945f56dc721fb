#include "scale/policy_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <limits>

namespace gpuscale::scale {

bool IsUsableSample(double value) { return std::isfinite(value) && value >= 0; }

namespace {

// One pass over the samples, no copies: this runs for every rule of every service each tick.
// A little over 40 lines because each missing-data case gets its own sentence here.
MetricReading ReadPerReplica(const ScalingInput& input, const MetricValue& metric,
                             Aggregation aggregation) {
  MetricReading reading;
  size_t usable = 0;
  double sum = 0;
  double lo = 0;
  double hi = 0;
  for (double v : metric.per_replica) {
    if (!IsUsableSample(v)) continue;
    lo = usable == 0 ? v : std::min(lo, v);
    hi = usable == 0 ? v : std::max(hi, v);
    sum += v;
    ++usable;
  }
  const size_t dropped = metric.per_replica.size() - usable;
  if (usable == 0) {
    if (input.ready_replicas <= 0) {
      reading.problem = "no ready replica reports it";
    } else if (dropped > 0) {
      reading.problem = fmt::format("all {} samples are NaN or negative", dropped);
    } else {
      reading.problem = "no replica reported it";
    }
    return reading;
  }
  switch (aggregation) {
    case Aggregation::kAverage:
      reading.value = sum / static_cast<double>(usable);
      break;
    case Aggregation::kMax:
      reading.value = hi;
      break;
    case Aggregation::kMin:
      reading.value = lo;
      break;
    case Aggregation::kSum:
      reading.value = sum;
      break;
  }
  const size_t expected = static_cast<size_t>(std::max(input.ready_replicas, 0));
  if (dropped > 0) {
    reading.problem =
        fmt::format("{} of {} samples are NaN or negative", dropped, metric.per_replica.size());
  } else if (usable < expected) {
    reading.problem = fmt::format("only {} of {} ready replicas reported it", usable, expected);
  } else {
    reading.complete = true;
  }
  return reading;
}

}  // namespace

MetricReading ReadMetric(const ScalingInput& input, const std::string& name,
                         Aggregation aggregation) {
  MetricReading reading;
  auto it = input.metrics.find(name);
  if (it == input.metrics.end()) {
    reading.problem = input.metrics_error ? "metrics could not be read this tick" : "metric absent";
    return reading;
  }
  const MetricValue& metric = it->second;
  if (metric.service_value) {
    if (IsUsableSample(*metric.service_value)) {
      reading.value = *metric.service_value;
      reading.complete = true;
    } else {
      reading.problem = "service value is NaN or negative";
    }
  } else {
    reading = ReadPerReplica(input, metric, aggregation);
  }
  if (input.metrics_error && reading.complete) {
    reading.complete = false;
    reading.problem = "metrics error this tick";
  }
  return reading;
}

long long CountTasks(const TaskDemand& demand) {
  return static_cast<long long>(std::max(demand.queued, 0)) + std::max(demand.running, 0);
}

TaskTotal CountTasks(const std::vector<TaskDemand>& demands) {
  TaskTotal total;
  for (const TaskDemand& d : demands) {
    if (d.queued < 0 || d.running < 0) total.valid = false;
    total.tasks += CountTasks(d);
  }
  return total;
}

int ClampReplicas(int desired, int min_replicas, int max_replicas) {
  const int lo = std::max(min_replicas, 0);
  const int hi = std::max(max_replicas, lo);
  return std::clamp(desired, lo, hi);
}

namespace {

constexpr double kPow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7};
constexpr double kDecadeStart[] = {1e3, 1e2, 1e1, 1, 1e-1, 1e-2, 1e-3};

// Digits after the decimal point that "{:.4g}" prints (before trailing zeros are dropped)
// for a magnitude in [1e-4, 1e4): 4 significant digits in fixed notation.
int FixedDecimals(double magnitude) {
  int decimals = 0;
  while (decimals < 7 && magnitude < kDecadeStart[decimals]) ++decimals;
  return decimals;
}

// "{:.4g}" for the values reasons carry (|value| in [1e-4, 1e4), or +0) without fmt's
// general floating-point path, which dominated reason building. Returns false, appending
// nothing, outside that range and when the scaled value lies within 1e-6 of a rounding tie:
// the scaling multiply is off by at most ~1e-12 here, so away from ties it rounds exactly
// as fmt's exact decimal conversion does, and near ties fmt decides.
bool AppendFourSignificantDigits(std::string& out, double value) {
  if (value == 0 && !std::signbit(value)) {
    out.push_back('0');
    return true;
  }
  const double magnitude = std::fabs(value);
  if (!(magnitude >= 1e-4 && magnitude < 1e4)) return false;
  const int decimals = FixedDecimals(magnitude);
  const double scaled = magnitude * kPow10[decimals];  // in [1000, 10000] up to rounding
  const int whole = static_cast<int>(scaled);          // floor: scaled is positive
  const double fraction = scaled - whole;
  if (std::fabs(fraction - 0.5) < 1e-6) return false;
  const int digits = whole + (fraction > 0.5 ? 1 : 0);
  // Outside [1000, 9999]: rounded up to the next power of ten (9999.7 -> "1e+04").
  if (digits < 1000 || digits > 9999) return false;
  char text[16];  // "-0.000dddd" at most
  char* p = text;
  if (value < 0) *p++ = '-';
  const char d[4] = {
      static_cast<char>('0' + digits / 1000), static_cast<char>('0' + digits / 100 % 10),
      static_cast<char>('0' + digits / 10 % 10), static_cast<char>('0' + digits % 10)};
  const int int_digits = std::max(4 - decimals, 0);
  if (int_digits == 0) *p++ = '0';
  for (int i = 0; i < int_digits; ++i) *p++ = d[i];
  char* point = p;
  *p++ = '.';
  for (int i = 4; i < decimals; ++i) *p++ = '0';
  for (int i = int_digits; i < 4; ++i) *p++ = d[i];
  while (p > point + 1 && p[-1] == '0') --p;  // "%g" drops trailing zeros ...
  if (p == point + 1) p = point;              // ... and a bare point
  out.append(text, p);
  return true;
}

}  // namespace

namespace internal {
void AppendPart(std::string& out, long long value) {
  char text[24];
  const auto end = std::to_chars(text, text + sizeof(text), value).ptr;
  out.append(text, end);
}
}  // namespace internal

void AppendNumber(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "inf" : "-inf";
  } else if (!AppendFourSignificantDigits(out, value)) {
    fmt::format_to(std::back_inserter(out), "{:.4g}", value);
  }
}

void AppendCapabilities(std::string& out, const CapabilitySet& capabilities) {
  out.push_back('{');
  const char* separator = "";
  for (const std::string& c : capabilities) {
    StrAppend(out, separator, c);
    separator = ", ";
  }
  out.push_back('}');
}

void AppendCountOf(std::string& out, long long count, std::string_view noun) {
  StrAppend(out, count, ' ', noun, count == 1 ? "" : "s");
}

void AppendGroupChange(std::string& out, int current, int desired, bool has_actions) {
  if (has_actions && current == desired) {
    StrAppend(out, "rebalance at ", current);
  } else if (desired > current) {
    StrAppend(out, "scale out ", current, " -> ", desired);
  } else if (desired < current) {
    StrAppend(out, "scale in ", current, " -> ", desired);
  } else {
    StrAppend(out, "hold at ", current);
  }
}

std::string FormatCapabilities(const CapabilitySet& capabilities) {
  std::string out;
  AppendCapabilities(out, capabilities);
  return out;
}

std::string FormatNumber(double value) {
  std::string out;
  AppendNumber(out, value);
  return out;
}

std::string FormatChange(int current, int desired) {
  std::string out;
  AppendGroupChange(out, current, desired, false);
  return out;
}

std::string CountOf(long long count, std::string_view noun) {
  std::string out;
  AppendCountOf(out, count, noun);
  return out;
}

std::string FormatGroupChange(int current, int desired, bool has_actions) {
  std::string out;
  AppendGroupChange(out, current, desired, has_actions);
  return out;
}

double TaskRatio(long long tasks, long long workers) {
  if (workers <= 0) return tasks > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return static_cast<double>(tasks) / static_cast<double>(workers);
}

bool IsSubset(const CapabilitySet& need, const CapabilitySet& have) {
  return std::includes(have.begin(), have.end(), need.begin(), need.end());
}

GroupPlan::GroupPlan(const std::vector<WorkerGroup>& groups, std::vector<Adapter> adapters)
    : adapters_(std::move(adapters)) {
  groups_.reserve(groups.size() + 2);
  for (const WorkerGroup& g : groups) {
    groups_.push_back({g.id, g.adapter, &g.capabilities, std::max(g.workers, 0), false});
  }
}

long long GroupPlan::Workers() const {
  long long workers = 0;
  for (const Group& g : groups_) workers += g.workers;
  return workers;
}

long long GroupPlan::CapableWorkers(const CapabilitySet& need,
                                    std::optional<size_t> excluded) const {
  long long workers = 0;
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (excluded && *excluded == i) continue;
    if (IsSubset(need, *groups_[i].capabilities)) workers += groups_[i].workers;
  }
  return workers;
}

int GroupPlan::GroupsOn(std::string_view adapter) const {
  int count = 0;
  for (const Group& g : groups_) count += g.adapter == adapter ? 1 : 0;
  return count;
}

bool GroupPlan::HasRoom(const Adapter& adapter) const {
  return GroupsOn(adapter.capacity->name) < adapter.capacity->max_worker_groups;
}

const GroupPlan::Adapter* GroupPlan::AdapterFor(const CapabilitySet& need) const {
  for (const Adapter& a : adapters_) {
    if ((a.any_capability || IsSubset(need, a.capacity->capabilities)) && HasRoom(a)) return &a;
  }
  return nullptr;
}

void GroupPlan::Start(const Adapter& adapter, const CapabilitySet& need) {
  const CapabilitySet& own = adapter.capacity->capabilities;
  const CapabilitySet* provided = &need;
  if (!IsSubset(own, need)) {
    CapabilitySet& merged = started_capabilities_.emplace_back(need);
    merged.insert(own.begin(), own.end());
    provided = &merged;
  }
  groups_.push_back({"", adapter.capacity->name, provided,
                     std::max(adapter.capacity->workers_per_group, 1), true});
  actions_.push_back({GroupAction::Kind::kStart, adapter.capacity->name, need, ""});
}

void GroupPlan::Shutdown(size_t index) {
  const Group& g = groups_[index];
  actions_.push_back({GroupAction::Kind::kShutdown, std::string(g.adapter), {}, std::string(g.id)});
  groups_.erase(groups_.begin() + static_cast<std::ptrdiff_t>(index));
}

}  // namespace gpuscale::scale
