#include "route/token_bucket.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpuscale::route {

TokenBucket::TokenBucket(double tokens_per_minute, double now)
    : capacity_(tokens_per_minute),
      per_second_(tokens_per_minute / 60),
      tokens_(tokens_per_minute),
      updated_(now) {}

void TokenBucket::Refill(double now) {
  if (now > updated_) tokens_ = std::min(capacity_, tokens_ + (now - updated_) * per_second_);
  updated_ = std::max(updated_, now);
}

bool TokenBucket::TryTake(double tokens, double now) {
  Refill(now);
  if (tokens > tokens_) return false;
  tokens_ -= tokens;
  return true;
}

double TokenBucket::Remaining(double now) {
  Refill(now);
  return tokens_;
}

double TokenBucket::SecondsUntilFull(double now) {
  Refill(now);
  return (capacity_ - tokens_) / per_second_;
}

TenantTokenLimits::TenantTokenLimits(double tokens_per_minute, size_t max_tenants)
    : per_minute_(tokens_per_minute), max_tenants_(max_tenants) {}

TokenLimitDecision TenantTokenLimits::Take(std::string_view tenant, double tokens, double now) {
  if (!enabled()) return {};
  auto it = buckets_.find(tenant);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_tenants_) DropFull(now);
    it = buckets_.emplace(std::string(tenant), TokenBucket(per_minute_, now)).first;
  }
  TokenBucket& bucket = it->second;
  TokenLimitDecision d;
  d.limit_tokens = per_minute_;
  d.allowed = bucket.TryTake(tokens, now);
  d.remaining_tokens = bucket.Remaining(now);
  d.reset_seconds = bucket.SecondsUntilFull(now);
  if (!d.allowed && tokens <= per_minute_) {
    d.retry_after_seconds = (tokens - d.remaining_tokens) / (per_minute_ / 60);
  }
  return d;
}

void TenantTokenLimits::DropFull(double now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    it = it->second.SecondsUntilFull(now) <= 0 ? buckets_.erase(it) : std::next(it);
  }
}

std::string OpenAiDuration(double seconds) {
  if (!(seconds > 0)) return "0s";
  if (seconds < 1) return fmt::format("{}ms", std::max<long long>(1, std::llround(seconds * 1e3)));
  long long s = std::llround(std::ceil(seconds));
  const long long h = s / 3600;
  const long long m = (s % 3600) / 60;
  s %= 60;
  if (h > 0) return fmt::format("{}h{}m{}s", h, m, s);
  if (m > 0) return fmt::format("{}m{}s", m, s);
  return fmt::format("{}s", s);
}

}  // namespace gpuscale::route
