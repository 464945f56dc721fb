// route::AdmissionConfig: how a service's door admits requests (issue 46; docs/gateway.md,
// "Priority and fair share"): the gateway's `gateway.admission` block and the simulator's
// `admission` block are this one value, read by one parser (config/admission_config.h), so
// that a simulated door and the live one run the same route::AdmissionQueue the same way.
// The defaults keep a door as it was without it: no concurrency limit (requests wait only
// while a service has no ready replica), every request standard, no token limit, no slot
// reserved for critical requests. A plain value; SlotLimit is the one rule both doors apply
// to a replica's slots.
#pragma once

#include <map>
#include <string>

#include "core/clock.h"
#include "route/admission_queue.h"

namespace gpuscale::route {

// The output tokens a door assumes a request will generate before it runs (it knows only
// the prompt): a request's expected tokens are its prompt's plus this.
inline constexpr double kAssumedOutputTokens = 256;

struct AdmissionConfig {
  // Requests in flight per replica through the door; past it on every replica a request
  // waits in the service's admission queue (priority, then tenants' fair share). 0 = none.
  int max_in_flight_per_replica = 0;
  // Of those slots, how many only a critical request may take: a standard or sheddable one
  // waits once a replica holds max_in_flight_per_replica - critical_reserved_per_replica, so
  // a critical request arriving at a saturated service finds a slot at once instead of
  // waiting for the next one to free (docs/gateway.md, "Priority and fair share"). 0 (the
  // default) = none; when set, 0 < it < max_in_flight_per_replica.
  int critical_reserved_per_replica = 0;
  // The request header naming its priority (critical, standard, sheddable); another value
  // is a 400 naming the header. Gateway only (the simulator reads a trace's column).
  std::string priority_header = "x-gpuscale-priority";
  // The header naming the tenant; "" or absent: the tenant is a hash of the bearer API key
  // (never the key itself), "anonymous" without one. Gateway only.
  std::string tenant_header;
  // The priority of a request that names none (a header, a trace row without the column).
  Priority default_priority = Priority::kStandard;
  std::map<std::string, Priority> model_priority;  // by model name; over the default
  // A sheddable request expected (or found) to wait longer than this for a replica is
  // answered 429 at once (or when its wait reaches it).
  Seconds sheddable_max_wait{2};
  // Per tenant, prompt and output tokens together (estimated at the door); 0 = no limit.
  // Gateway only.
  double tenant_tokens_per_minute = 0;

  friend bool operator==(const AdmissionConfig&, const AdmissionConfig&) = default;
};

// The requests a replica may hold in flight and still take one of `priority` through the
// door: max_in_flight_per_replica for a critical request, that less
// critical_reserved_per_replica for the others; 0 = no limit. The gateway's Acquire and the
// simulator's PickReady both ask it, so a simulated door fills slots as the live one does.
int SlotLimit(const AdmissionConfig& config, Priority priority);

}  // namespace gpuscale::route
