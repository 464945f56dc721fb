// GatewayConfig: the daemon config's `gateway:` section (daemon/daemon_config.h parses it;
// docs/gateway.md documents every field). A plain value.
#pragma once

#include <string>

#include "core/clock.h"
#include "route/picker.h"

namespace gpuscale::gateway {

struct GatewayConfig {
  bool enabled = true;             // `gateway: {enabled: false}` turns the listener off
  std::string host = "127.0.0.1";  // `listen: host:port`; loopback unless asked otherwise
  int port = 8000;                 // 0 = the kernel picks one (tests); printed at start-up
  std::string token;               // bearer token clients must send; empty = none. Separate
                                   // from the API's token: clients are not operators.
  int threads = 2;                 // I/O threads
  int max_connections = 20000;     // open client connections; past it new ones are closed
  int64_t max_body_bytes = 32 << 20;
  Seconds header_timeout{15};      // to read a request's header and body (slowloris bound)
  Seconds idle_timeout{120};       // a keep-alive connection with no request
  Seconds connect_timeout{3};      // to a replica
  Seconds upstream_timeout{600};   // to the replica's first byte, and between its chunks
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

  friend bool operator==(const GatewayConfig&, const GatewayConfig&) = default;
};

}  // namespace gpuscale::gateway
