#include "workload/tenant_workload.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "route/picker.h"

namespace gpuscale::loadgen {
namespace {

// splitmix64 (as WorkloadGenerator's): the same draws on every platform.
class Draws {
 public:
  explicit Draws(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
  size_t Below(size_t n) { return static_cast<size_t>(Uniform() * static_cast<double>(n)); }

 private:
  uint64_t state_;
};

struct Session {
  uint64_t id = 0;
  int turns = 0;  // taken so far
  route::Priority priority = route::Priority::kStandard;
};

// Block hash ids: a tenant's system prompt blocks and a session's own, in separate spaces.
constexpr uint64_t kSystemSpace = 1;
constexpr uint64_t kSessionSpace = 2;

route::Priority DrawPriority(const TenantWorkloadSpec& spec, Draws& draws) {
  const double u = draws.Uniform();
  if (u < spec.critical_ratio) return route::Priority::kCritical;
  if (u < spec.critical_ratio + spec.sheddable_ratio) return route::Priority::kSheddable;
  return route::Priority::kStandard;
}

// One turn of `session` of `tenant`: its blocks go to the trace's flat list.
void AddTurn(const TenantWorkloadSpec& spec, int tenant, const Session& session, double at,
             sim::Trace& trace) {
  sim::TraceRequest r;
  r.arrival_s = at;
  r.hash_begin = static_cast<uint32_t>(trace.hash_ids.size());
  const uint64_t system = route::MixHash(kSystemSpace, static_cast<uint64_t>(tenant));
  for (int b = 0; b < spec.system_blocks; ++b) {
    trace.hash_ids.push_back(route::MixHash(system, static_cast<uint64_t>(b)));
  }
  const uint64_t own = route::MixHash(kSessionSpace, session.id);
  for (int b = 0; b < session.turns * spec.turn_blocks; ++b) {
    trace.hash_ids.push_back(route::MixHash(own, static_cast<uint64_t>(b)));
  }
  r.hash_count = static_cast<uint32_t>(trace.hash_ids.size()) - r.hash_begin;
  r.input_tokens = static_cast<int32_t>(r.hash_count) * spec.block_tokens;
  r.output_tokens = spec.output_tokens;
  r.tenant = static_cast<uint32_t>(tenant + 1);
  r.priority = session.priority;
  trace.requests.push_back(r);
}

}  // namespace

std::string TenantName(int tenant) { return fmt::format("tenant-{}", tenant); }

Status ValidateTenantWorkload(const TenantWorkloadSpec& s) {
  for (auto [name, value] :
       {std::pair{"tenants", s.tenants}, std::pair{"block_tokens", s.block_tokens},
        std::pair{"turn_blocks", s.turn_blocks}, std::pair{"turns", s.max_turns},
        std::pair{"sessions", s.sessions_per_tenant},
        std::pair{"output_tokens", s.output_tokens}}) {
    if (value < 1) return InvalidArgument(fmt::format("expected >= 1, got {}", value), name);
  }
  if (s.system_blocks < 0) return InvalidArgument("expected >= 0", "system_blocks");
  for (auto [name, value] : {std::pair{"hot", s.hot_ratio}, std::pair{"rate", s.rate_per_second},
                             std::pair{"duration", s.duration_seconds}}) {
    if (!(value > 0) || !std::isfinite(value)) {
      return InvalidArgument(fmt::format("expected a finite number > 0, got {}", value), name);
    }
  }
  for (auto [name, value] :
       {std::pair{"critical", s.critical_ratio}, std::pair{"sheddable", s.sheddable_ratio}}) {
    if (!(value >= 0 && value <= 1)) {
      return InvalidArgument(fmt::format("expected a share in [0, 1], got {}", value), name);
    }
  }
  if (s.critical_ratio + s.sheddable_ratio > 1) {
    return InvalidArgument("critical + sheddable must be <= 1", "sheddable");
  }
  // A turn's prompt must stay an int32 of tokens.
  const double longest =
      (s.system_blocks + static_cast<double>(s.max_turns) * s.turn_blocks) * s.block_tokens;
  if (longest > 1e9) return InvalidArgument("a session's last prompt exceeds 1e9 tokens", "turns");
  return OkStatus();
}

Result<TenantWorkloadSpec> ParseTenantWorkload(std::string_view text) {
  TenantWorkloadSpec s;
  struct Key {
    std::string_view name;
    double* real;
    int* count;
  };
  int block_tokens = s.block_tokens, output_tokens = s.output_tokens;
  const Key keys[] = {{"tenants", nullptr, &s.tenants},
                      {"hot", &s.hot_ratio, nullptr},
                      {"rate", &s.rate_per_second, nullptr},
                      {"duration", &s.duration_seconds, nullptr},
                      {"block_tokens", nullptr, &block_tokens},
                      {"system_blocks", nullptr, &s.system_blocks},
                      {"turn_blocks", nullptr, &s.turn_blocks},
                      {"turns", nullptr, &s.max_turns},
                      {"sessions", nullptr, &s.sessions_per_tenant},
                      {"output_tokens", nullptr, &output_tokens},
                      {"critical", &s.critical_ratio, nullptr},
                      {"sheddable", &s.sheddable_ratio, nullptr}};
  while (!text.empty()) {
    const std::string_view pair = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), pair.size() + 1));
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const Key* key = nullptr;
    for (const Key& k : keys) key = k.name == name ? &k : key;
    if (key == nullptr || eq == std::string_view::npos) {
      return InvalidArgument(
          fmt::format("expected key=value with a key among tenants, hot, rate, duration, "
                      "block_tokens, system_blocks, turn_blocks, turns, sessions, "
                      "output_tokens, critical, sheddable; got '{}'",
                      pair),
          std::string(name));
    }
    const std::string_view value = pair.substr(eq + 1);
    double number = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || ptr != value.data() + value.size() ||
        (key->count && number != std::floor(number)) || std::abs(number) > 1e9) {
      return InvalidArgument(
          fmt::format("expected a {}, got '{}'", key->count ? "whole number" : "number", value),
          std::string(name));
    }
    if (key->real) *key->real = number;
    if (key->count) *key->count = static_cast<int>(number);
  }
  s.block_tokens = block_tokens;
  s.output_tokens = output_tokens;
  GS_RETURN_IF_ERROR(ValidateTenantWorkload(s));
  return s;
}

sim::Trace GenerateTenantTrace(const TenantWorkloadSpec& spec) {
  Draws draws(spec.seed);
  sim::Trace trace;
  trace.format = "tenants";
  trace.hash_block_tokens = spec.block_tokens;
  for (int t = 0; t < spec.tenants; ++t) trace.tenants.push_back(TenantName(t));
  uint64_t next_session = 0;
  std::vector<std::vector<Session>> open(static_cast<size_t>(spec.tenants));
  for (auto& sessions : open) {
    for (int i = 0; i < spec.sessions_per_tenant; ++i) {
      sessions.push_back({next_session++, 0, DrawPriority(spec, draws)});
    }
  }
  const double hot_share = spec.hot_ratio / (spec.hot_ratio + spec.tenants - 1);
  for (double at = -std::log(draws.Uniform()) / spec.rate_per_second; at < spec.duration_seconds;
       at += -std::log(draws.Uniform()) / spec.rate_per_second) {
    const int tenant = spec.tenants == 1 || draws.Uniform() < hot_share
                           ? 0
                           : 1 + static_cast<int>(draws.Below(spec.tenants - 1));
    Session& session = open[tenant][draws.Below(open[tenant].size())];
    if (session.turns >= spec.max_turns) session = {next_session++, 0, DrawPriority(spec, draws)};
    ++session.turns;
    AddTurn(spec, tenant, session, at, trace);
  }
  sim::SortAndRebase(&trace.requests);
  return trace;
}

std::string PromptText(std::span<const uint64_t> hash_ids, int32_t block_tokens) {
  std::string text;
  text.reserve(hash_ids.size() * static_cast<size_t>(block_tokens) * 9);
  for (const uint64_t id : hash_ids) {
    for (int32_t k = 0; k < block_tokens; ++k) {
      if (!text.empty()) text += ' ';
      text += fmt::format("w{:07x}", route::MixHash(id, static_cast<uint64_t>(k)) & 0xFFFFFFF);
    }
  }
  return text;
}

}  // namespace gpuscale::loadgen
