// The readiness/health probe of local replicas: HTTP GET http://127.0.0.1:<port><path> and
// expect status 200 (vLLM answers /health with 200 once the engine has loaded).
//
// Thread-safety: stateless; each call opens its own connection.
#pragma once

#include <string>

#include "core/clock.h"

namespace gpuscale::orch {

// True when the GET answered 200 within `timeout` (connect and read each).
bool HttpGetOk(int port, const std::string& path, Seconds timeout);

}  // namespace gpuscale::orch
