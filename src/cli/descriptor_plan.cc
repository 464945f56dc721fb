#include "cli/descriptor_plan.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <climits>
#include <filesystem>

namespace gpuscale::cli {

Result<DescriptorPlan> PlanDescriptors(const DescriptorNeeds& needs) {
  DescriptorPlan plan;
  // Probes and scrapes (one socket per replica at a time), replica starts (a log each),
  // SQLite, Prometheus queries, the KEDA scaler: a quarter of a small limit, 512 of a large.
  plan.control_reserve = std::clamp(needs.limit / 4, 64, 512);
  const int available = needs.limit - needs.in_use - plan.control_reserve;
  constexpr int kMinimum = 64;
  if (available < kMinimum) {
    return Unavailable(fmt::format(
        "the descriptor limit is {} (ulimit -n) with {} open: too few to serve; raise it to at "
        "least {} (ulimit -n, or LimitNOFILE= in a systemd unit)",
        needs.limit, needs.in_use, needs.in_use + plan.control_reserve + kMinimum + 1024));
  }
  int left = available;
  if (needs.api_max_connections > 0) {
    const int cap = needs.gateway_max_connections > 0 ? std::max(16, available / 8) : available;
    plan.api_max_connections = std::min(needs.api_max_connections, cap);
    left -= plan.api_max_connections;
    if (plan.api_max_connections < needs.api_max_connections) {
      plan.notes.push_back(fmt::format(
          "api.max_connections {} lowered to {}: the descriptor limit is {} (ulimit -n)",
          needs.api_max_connections, plan.api_max_connections, needs.limit));
    }
  }
  if (needs.gateway_max_connections > 0) {
    plan.gateway_max_idle_upstream = std::min(needs.gateway_max_idle_upstream, left / 8);
    plan.gateway_max_connections =
        std::min(needs.gateway_max_connections, (left - plan.gateway_max_idle_upstream) / 2);
    if (plan.gateway_max_connections < needs.gateway_max_connections) {
      plan.notes.push_back(fmt::format(
          "gateway.max_connections {} lowered to {}: the descriptor limit is {} (ulimit -n), "
          "each proxied request holds two, {} are kept for probes, scrapes and state{}",
          needs.gateway_max_connections, plan.gateway_max_connections, needs.limit,
          plan.control_reserve,
          needs.api_max_connections > 0
              ? fmt::format(" and {} for the API", plan.api_max_connections)
              : std::string()));
    }
  }
  return plan;
}

std::pair<int, int> DescriptorUsage() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return {0, 0};
  const int soft = limit.rlim_cur == RLIM_INFINITY
                       ? INT_MAX
                       : static_cast<int>(std::min<rlim_t>(limit.rlim_cur, INT_MAX));
  std::error_code ec;
  int open = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++open;
  }
  return {soft, open};
}

}  // namespace gpuscale::cli
