// GatewayConfig: the daemon config's `gateway:` section (serve_config/daemon_config.h parses it;
// docs/gateway.md documents every field). A plain value.
#pragma once

#include <map>
#include <string>

#include "core/clock.h"
#include "route/admission_queue.h"
#include "route/picker.h"

namespace gpuscale::gateway {

// `gateway.admission`: priorities, fair share and per-tenant limits at the door (issue 46;
// docs/gateway.md, "Priority and fair share"). The defaults keep the gateway as it was
// without it: no concurrency limit (requests wait only while a service has no ready
// replica), every request standard, no token limit.
struct AdmissionConfig {
  // Requests in flight per replica through the gateway; past it on every replica a request
  // waits in the service's admission queue (priority, then tenants' fair share). 0 = none.
  int max_in_flight_per_replica = 0;
  // The request header naming its priority (critical, standard, sheddable); another value
  // is a 400 naming the header.
  std::string priority_header = "x-gpuscale-priority";
  // The header naming the tenant; "" or absent: the tenant is a hash of the bearer API key
  // (never the key itself), "anonymous" without one.
  std::string tenant_header;
  route::Priority default_priority = route::Priority::kStandard;
  std::map<std::string, route::Priority> model_priority;  // by model name; over the default
  // A sheddable request expected (or found) to wait longer than this for a replica is
  // answered 429 at once (or when its wait reaches it).
  Seconds sheddable_max_wait{2};
  // Per tenant, prompt and output tokens together (estimated at the door); 0 = no limit.
  double tenant_tokens_per_minute = 0;

  friend bool operator==(const AdmissionConfig&, const AdmissionConfig&) = default;
};

// `gateway.prefix_cache`: the indexes of router kind prefix_cache (docs/gateway.md, "Prefix
// cache"); unused by the other kinds.
struct PrefixCacheConfig {
  // Tokens per KV block: must equal the replicas' --block-size (vLLM's default 16), or the
  // gateway's block keys never match the ones they publish.
  int block_tokens = 16;
  // Per replica: the approximate index's bound, and how many new blocks a replica's KV events
  // must announce after a gap before they are trusted again (about its cache's size in blocks).
  int64_t capacity_blocks = 100'000;
  Seconds ttl{300};             // the approximate index's entries
  std::string kv_events_topic;  // the topic subscribed to ("" = all, vLLM's default topic)

  friend bool operator==(const PrefixCacheConfig&, const PrefixCacheConfig&) = default;
};

struct GatewayConfig {
  bool enabled = true;             // `gateway: {enabled: false}` turns the listener off
  std::string host = "127.0.0.1";  // `listen: host:port`; loopback unless asked otherwise
  int port = 8000;                 // 0 = the kernel picks one (tests); printed at start-up
  std::string token;               // bearer token clients must send; empty = none. Separate
                                   // from the API's token: clients are not operators.
  int threads = 2;                 // I/O threads
  int max_connections = 20000;     // open client connections (net/connection_table.h says
                                   // who a newcomer displaces past it); `gpuscale serve`
                                   // lowers it to what the descriptor limit allows
  int64_t max_body_bytes = 32 << 20;
  Seconds header_timeout{15};      // to read a request's header and body (slowloris bound)
  Seconds idle_timeout{120};       // a keep-alive connection with no request
  Seconds connect_timeout{3};      // to a replica
  Seconds upstream_timeout{600};   // to the replica's first byte, and between its chunks
  // Between a response's chunks once its body flows: a stream silent this long is cut with
  // an error event (0 = upstream_timeout alone).
  Seconds stream_idle_timeout{30};
  // Active health checks (health_checker.h): every replica's `health_check_path` is asked
  // every `health_check_interval` (0 = never); `health_check_failures` answers in a row that
  // do not come within `health_check_timeout`, or come as 5xx, take the replica out of
  // rotation and cut the relays waiting on it; one passing answer brings it back.
  Seconds health_check_interval{2};
  Seconds health_check_timeout{1};
  int health_check_failures = 2;
  std::string health_check_path = "/health";
  // Idle kept-alive replica connections, all replicas and threads together (each holds a
  // descriptor; `gpuscale serve` sizes it with max_connections from the descriptor limit).
  int max_idle_upstream = 4096;
  // Activator: requests for a service with no ready replica wait here for one.
  int queue_size = 1000;           // per service; a full queue answers 503
  Seconds queue_timeout{300};      // a request waiting longer gets 503 with Retry-After
  // Passive health: this many consecutive transport failures take a replica out of rotation
  // for `ejection` (doubling on each relapse, up to 8x); a success clears it.
  int eject_after_failures = 3;
  Seconds ejection{10};
  route::PickerSpec picker{.slow_start_seconds = 30};
  // Prefix affinity hashes the first this many characters of the prompt (or of the
  // messages' contents).
  int prefix_chars = 512;
  PrefixCacheConfig prefix_cache;
  AdmissionConfig admission;

  friend bool operator==(const GatewayConfig&, const GatewayConfig&) = default;
};

}  // namespace gpuscale::gateway
