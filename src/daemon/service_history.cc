#include "daemon/service_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuscale::daemon {
namespace {

constexpr float kNone = std::numeric_limits<float>::quiet_NaN();

float Opt(const std::optional<double>& v) { return v ? static_cast<float>(*v) : kNone; }

std::array<float, kHistoryGatewayFields.size()> GatewayOf(const std::optional<GatewayFigures>& g) {
  std::array<float, kHistoryGatewayFields.size()> out;
  out.fill(kNone);
  if (!g) return out;
  out = {Opt(g->request_rate),
         Opt(g->error_ratio),
         Opt(g->ttft_p50),
         Opt(g->ttft_p90),
         Opt(g->tpot_p50),
         Opt(g->e2e_p90),
         static_cast<float>(g->in_flight)};
  return out;
}

// Mean of the values added to one cell, ignoring absent ones.
struct Mean {
  double sum = 0;
  int n = 0;
  void Add(float v) {
    if (std::isnan(v)) return;
    sum += v;
    ++n;
  }
  std::optional<double> Get() const {
    if (n == 0) return std::nullopt;
    return sum / n;
  }
};

float At(const std::vector<float>& v, size_t i) { return i < v.size() ? v[i] : kNone; }

}  // namespace

ServiceHistory::Point ServiceHistory::ToPoint(const HistorySample& sample) {
  Point p;
  p.t = sample.at.count();
  p.desired = static_cast<float>(sample.desired);
  p.ready = static_cast<float>(sample.ready);
  p.current = static_cast<float>(sample.current);
  for (const scale::DecisionInput& in : sample.inputs) {
    size_t i = std::find(names_.begin(), names_.end(), in.metric) - names_.begin();
    if (i == names_.size()) names_.push_back(in.metric);
    p.inputs.resize(2 * names_.size(), kNone);
    p.inputs[2 * i] = Opt(in.value);
    p.inputs[2 * i + 1] = Opt(in.target);
  }
  p.gateway = GatewayOf(sample.gateway);
  return p;
}

void ServiceHistory::Record(const HistorySample& sample) {
  Point p = ToPoint(sample);
  Accumulate(p);
  fine_.push_back(std::move(p));
  const double cutoff = fine_.back().t - options_.fine_span.count();
  while (!fine_.empty() && fine_.front().t < cutoff) fine_.pop_front();
}

void ServiceHistory::Accumulate(const Point& p) {
  const double step = options_.coarse_step.count();
  const double start = std::floor(p.t / step) * step;
  if (acc_ && acc_->start != start) FlushCoarse();
  if (!acc_) {
    acc_.emplace();
    acc_->start = start;
  }
  Accumulator& a = *acc_;
  ++a.ticks;
  a.last = p;
  const size_t m = names_.size();
  a.value_sum.resize(m, 0);
  a.target_sum.resize(m, 0);
  a.value_n.resize(m, 0);
  a.target_n.resize(m, 0);
  for (size_t i = 0; i < m; ++i) {
    if (float v = At(p.inputs, 2 * i); !std::isnan(v)) a.value_sum[i] += v, ++a.value_n[i];
    if (float v = At(p.inputs, 2 * i + 1); !std::isnan(v)) a.target_sum[i] += v, ++a.target_n[i];
  }
  for (size_t g = 0; g < kGateway; ++g) {
    if (!std::isnan(p.gateway[g])) a.gateway_sum[g] += p.gateway[g], ++a.gateway_n[g];
  }
}

void ServiceHistory::FlushCoarse() {
  const Accumulator& a = *acc_;
  Point p = a.last;  // replica counts: the step's last tick
  p.t = a.start;
  auto mean = [](double sum, int n) { return n == 0 ? kNone : static_cast<float>(sum / n); };
  p.inputs.assign(2 * a.value_sum.size(), kNone);
  for (size_t i = 0; i < a.value_sum.size(); ++i) {
    p.inputs[2 * i] = mean(a.value_sum[i], a.value_n[i]);
    p.inputs[2 * i + 1] = mean(a.target_sum[i], a.target_n[i]);
  }
  for (size_t g = 0; g < kGateway; ++g) p.gateway[g] = mean(a.gateway_sum[g], a.gateway_n[g]);
  coarse_.push_back(std::move(p));
  const double cutoff = a.start - options_.coarse_span.count();
  while (!coarse_.empty() && coarse_.front().t < cutoff) coarse_.pop_front();
  acc_.reset();
}

Result<HistorySeries> ServiceHistory::Query(Seconds from, Seconds to, Seconds step) const {
  if (!(to > from)) {
    return InvalidArgument(
        fmt::format("must be before `to` ({:.3f}), got {:.3f}", to.count(), from.count()), "from");
  }
  if (!(step.count() >= 0)) return InvalidArgument("must be >= 0 seconds", "step");
  const double fine_start =
      fine_.empty() ? std::numeric_limits<double>::infinity() : fine_.front().t;
  if (step.count() == 0) {
    // Tick resolution when the range starts within the fine tier's span of the newest tick
    // (one coarse step of slack), even if the daemon has not run that long yet.
    double native = options_.coarse_step.count();
    const bool recent =
        !fine_.empty() &&
        from.count() >= fine_.back().t - options_.fine_span.count() - options_.coarse_step.count();
    if (recent && fine_.size() >= 2) {
      native = (fine_.back().t - fine_.front().t) / static_cast<double>(fine_.size() - 1);
    }
    step = Seconds{std::ceil(std::max({native, (to - from).count() / 600, 1.0}))};
  }
  const double span = (to - from).count();
  const size_t n = static_cast<size_t>(std::ceil(span / step.count()));
  if (n > options_.max_points) {
    return InvalidArgument(fmt::format("{:g} s gives {} points over the range; at most {}: use "
                                       "a larger step",
                                       step.count(), n, options_.max_points),
                           "step");
  }
  const size_t m = names_.size();
  HistorySeries out;
  out.from = from;
  out.to = to;
  out.step = step;
  std::vector<Mean> values(n * m), targets(n * m), gateway(n * kGateway);
  std::vector<const Point*> last(n, nullptr);
  auto add = [&](const Point& p) {
    if (p.t < from.count() || p.t >= to.count()) return;
    const size_t k = std::min(n - 1, static_cast<size_t>((p.t - from.count()) / step.count()));
    last[k] = &p;
    for (size_t i = 0; i < m; ++i) {
      values[k * m + i].Add(At(p.inputs, 2 * i));
      targets[k * m + i].Add(At(p.inputs, 2 * i + 1));
    }
    for (size_t g = 0; g < kGateway; ++g) gateway[k * kGateway + g].Add(p.gateway[g]);
  };
  // Coarse points only where no tick is kept; they precede every fine point.
  for (const Point& p : coarse_) {
    if (p.t < fine_start) add(p);
  }
  for (const Point& p : fine_) add(p);
  out.metrics.resize(m);
  for (size_t i = 0; i < m; ++i) out.metrics[i].name = names_[i];
  for (size_t k = 0; k < n; ++k) {
    out.t.push_back(from.count() + static_cast<double>(k) * step.count());
    const Point* p = last[k];
    out.desired.push_back(p ? std::optional<double>(p->desired) : std::nullopt);
    out.ready.push_back(p ? std::optional<double>(p->ready) : std::nullopt);
    out.current.push_back(p ? std::optional<double>(p->current) : std::nullopt);
    for (size_t i = 0; i < m; ++i) {
      out.metrics[i].value.push_back(values[k * m + i].Get());
      out.metrics[i].target.push_back(targets[k * m + i].Get());
    }
    for (size_t g = 0; g < kGateway; ++g) out.gateway[g].push_back(gateway[k * kGateway + g].Get());
  }
  return out;
}

void HistoryBook::Record(const std::string& service, const HistorySample& sample) {
  MutexLock lock(mu_);
  services_.try_emplace(service, options_).first->second.Record(sample);
}

Result<HistorySeries> HistoryBook::Query(const std::string& service, Seconds from, Seconds to,
                                         Seconds step) const {
  MutexLock lock(mu_);
  auto it = services_.find(service);
  if (it == services_.end()) return ServiceHistory(options_).Query(from, to, step);
  return it->second.Query(from, to, step);
}

void HistoryBook::Forget(const std::string& service) {
  MutexLock lock(mu_);
  services_.erase(service);
}

}  // namespace gpuscale::daemon
