// route::TenantTokenLimits: per-tenant limits in tokens per minute, as OpenAI's API applies
// them and reports them in its `x-ratelimit-limit-tokens`, `x-ratelimit-remaining-tokens` and
// `x-ratelimit-reset-tokens` response headers. Each tenant has a token bucket holding at most
// a minute's tokens and refilling continuously at limit / 60 per second (a full bucket after
// a minute of silence). Pure: the time is a parameter.
//
// Thread-safety: none; the caller serializes (the gateway holds its state's mutex).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace gpuscale::route {

// One tenant's bucket.
class TokenBucket {
 public:
  // REQUIRES: tokens_per_minute > 0. Starts full at `now`.
  TokenBucket(double tokens_per_minute, double now);

  // Takes `tokens` when the bucket holds them all (then true), else takes nothing.
  bool TryTake(double tokens, double now);
  // Tokens the bucket holds at `now`.
  double Remaining(double now);
  // Seconds until the bucket is full again (0 when it is).
  double SecondsUntilFull(double now);
  double limit() const { return capacity_; }

 private:
  void Refill(double now);

  double capacity_;
  double per_second_;
  double tokens_;
  double updated_;
};

// What a limit decided for one request; the numbers are the x-ratelimit-*-tokens headers'.
struct TokenLimitDecision {
  bool allowed = true;
  double limit_tokens = 0;         // tokens per minute
  double remaining_tokens = 0;     // after this request when allowed
  double reset_seconds = 0;        // until the bucket is full again
  double retry_after_seconds = 0;  // refused: until the bucket holds the request's tokens
};

class TenantTokenLimits {
 public:
  // `tokens_per_minute` for every tenant; 0 = no limit. `max_tenants`: buckets kept; past it,
  // full buckets (tenants idle for a minute, who lose nothing by being forgotten) are dropped.
  explicit TenantTokenLimits(double tokens_per_minute = 0, size_t max_tenants = 100000);

  bool enabled() const { return per_minute_ > 0; }
  // Charges `tokens` to `tenant` at `now`. Always allowed when not enabled. A request larger
  // than the whole limit is refused (it could never pass), with retry_after_seconds 0.
  TokenLimitDecision Take(std::string_view tenant, double tokens, double now);
  size_t tenants() const { return buckets_.size(); }

 private:
  void DropFull(double now);

  double per_minute_;
  size_t max_tenants_;
  std::map<std::string, TokenBucket, std::less<>> buckets_;
};

// A duration as OpenAI writes x-ratelimit-reset-tokens: "0s", "20ms", "1s", "6m0s", "1h2m3s"
// (Go's time.Duration format, whole milliseconds below a second, whole seconds above).
std::string OpenAiDuration(double seconds);

}  // namespace gpuscale::route
