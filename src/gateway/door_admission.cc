#include "gateway/door_admission.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "route/picker.h"

namespace gpuscale::gateway {
namespace {

std::string Normalized(std::string_view value) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!value.empty() && space(value.front())) value.remove_prefix(1);
  while (!value.empty() && space(value.back())) value.remove_suffix(1);
  std::string out(value);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Result<DoorAdmission> ReadDoorAdmission(const AdmissionConfig& config, std::string_view model,
                                        const DoorHeaders& headers, size_t body_bytes) {
  DoorAdmission a;
  a.priority = config.default_priority;
  if (auto it = config.model_priority.find(std::string(model)); it != config.model_priority.end()) {
    a.priority = it->second;
  }
  if (headers.priority) {
    const std::string name = Normalized(*headers.priority);
    const std::optional<route::Priority> p = route::ParsePriority(name);
    if (!p) {
      return InvalidArgument(
          fmt::format("header {}: expected critical, standard or sheddable, got '{}'",
                      config.priority_header, *headers.priority),
          config.priority_header);
    }
    a.priority = *p;
  }
  a.tenant = headers.tenant && !headers.tenant->empty() ? fmt::format("header-{}", *headers.tenant)
                                                        : TenantOfApiKey(headers.authorization);
  a.tokens = ExpectedTokens(body_bytes);
  return a;
}

std::string TenantOfApiKey(std::string_view authorization) {
  constexpr std::string_view kBearer = "bearer ";
  if (authorization.size() <= kBearer.size() ||
      Normalized(authorization.substr(0, kBearer.size())) != kBearer.substr(0, 6)) {
    return "anonymous";
  }
  // MixHash over two FNV-1a halves: 64 bits that name the key without revealing it.
  const std::string_view key = authorization.substr(kBearer.size());
  const uint64_t h = route::MixHash(route::HashText(key), key.size());
  return fmt::format("key-{:016x}", h);
}

double ExpectedTokens(size_t body_bytes) {
  return std::ceil(static_cast<double>(body_bytes) / 4) + kAssumedOutputTokens;
}

std::vector<std::pair<std::string, std::string>> RateLimitHeaders(
    const route::TokenLimitDecision& d) {
  return {
      {"x-ratelimit-limit-tokens", fmt::format("{}", std::llround(d.limit_tokens))},
      {"x-ratelimit-remaining-tokens",
       fmt::format("{}", std::llround(std::floor(d.remaining_tokens)))},
      {"x-ratelimit-reset-tokens", route::OpenAiDuration(d.reset_seconds)},
  };
}

}  // namespace gpuscale::gateway
