// GatewayConfig: the daemon config's `gateway:` section (serve_config/daemon_config.h parses it;
// docs/gateway.md documents every field). A plain value.
#pragma once

#include <map>
#include <string>

#include "core/clock.h"
#include "route/admission_config.h"
#include "route/picker.h"

namespace gpuscale::gateway {

// `gateway.admission` (route/admission_config.h: the simulator reads the same block).
using AdmissionConfig = route::AdmissionConfig;

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
  // The simulator's defaults (route::PickerSpec): least outstanding without slow start, so
  // that a policy judged in `gpuscale simulate` meets the same routing live; a config turns
  // slow start on in the `router:` block both read (docs/gateway.md, "Routing").
  route::PickerSpec picker;
  // Prefix affinity hashes the first this many characters of the prompt (or of the
  // messages' contents).
  int prefix_chars = 512;
  PrefixCacheConfig prefix_cache;
  AdmissionConfig admission;

  friend bool operator==(const GatewayConfig&, const GatewayConfig&) = default;
};

}  // namespace gpuscale::gateway
