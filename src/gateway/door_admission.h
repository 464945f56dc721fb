// What the gateway reads from a request to admit it (issue 46; docs/gateway.md, "Priority
// and fair share"): its priority (a header, else the model's default in
// `gateway.admission`), its tenant (a configured header, else a hash of its bearer API key)
// and its expected tokens; and the x-ratelimit-* headers OpenAI's API answers with. Pure:
// header values come in as strings, so that the HTTP layer stays in gateway_server.cc.
//
// Thread-safety: free functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "gateway/gateway_config.h"
#include "route/admission_queue.h"
#include "route/token_bucket.h"

namespace gpuscale::gateway {

struct DoorAdmission {
  route::Priority priority = route::Priority::kStandard;
  std::string tenant;
  double tokens = 0;  // expected, prompt and output together
};

// The header values that admit a request (nullopt: the header is absent).
struct DoorHeaders {
  std::optional<std::string_view> priority = std::nullopt;
  std::optional<std::string_view> tenant = std::nullopt;  // admission.tenant_header's value
  std::string_view authorization = {};
};

// Errors: kInvalidArgument, field = the priority header's name, when its value is not
// critical, standard or sheddable (any case, spaces around ignored).
Result<DoorAdmission> ReadDoorAdmission(const AdmissionConfig& config, std::string_view model,
                                        const DoorHeaders& headers, size_t body_bytes);

// "key-" and 16 hex digits of a hash of the bearer token in `authorization`, "anonymous"
// without one: requests with the same API key share a tenant, and the key itself is never
// kept or logged.
std::string TenantOfApiKey(std::string_view authorization);

// Tokens a request is expected to cost before it runs: its body's bytes / 4 (about four bytes
// a token in English text, OpenAI's rule of thumb) for the prompt, plus kAssumedOutputTokens
// (route/admission_config.h: the simulated door assumes the same).
using route::kAssumedOutputTokens;
double ExpectedTokens(size_t body_bytes);

// x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, x-ratelimit-reset-tokens, as
// OpenAI's API sends them (whole tokens; the reset as "6m0s").
std::vector<std::pair<std::string, std::string>> RateLimitHeaders(
    const route::TokenLimitDecision& decision);

}  // namespace gpuscale::gateway
