// The readiness/health probe of local replicas: HTTP GET http://127.0.0.1:<port><path> and
// expect status 200 (vLLM answers /health with 200 once the engine has loaded).
//
// Thread-safety: stateless; each call opens its own connection.
#pragma once

#include <string>

#include "core/clock.h"

namespace gpuscale::orch {

// What a probe learned. Readiness and liveness are separate questions: a replica that does
// not answer in time may only be busy (its server waits behind a long engine step), while
// one that refuses the connection or answers an error is not serving.
enum class ProbeResult {
  kOk,        // 200
  kFailed,    // connection refused or reset, or an answer other than 200
  kNoAnswer,  // connected, but no answer within the timeout
};

// GET http://127.0.0.1:<port><path> with `timeout` for connect and read each.
ProbeResult HttpProbe(int port, const std::string& path, Seconds timeout);

// True when the GET answered 200 within `timeout`.
inline bool HttpGetOk(int port, const std::string& path, Seconds timeout) {
  return HttpProbe(port, path, timeout) == ProbeResult::kOk;
}

}  // namespace gpuscale::orch
