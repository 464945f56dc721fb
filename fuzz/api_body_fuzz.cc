// Fuzzes the REST API's request-body and request-target parsers (the text a remote client
// controls): any input must yield a value or an error value, never a crash, exception or
// sanitizer report. The first byte picks the parser so that one corpus reaches all of them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/request_parsing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  gpuscale::daemon::ServiceConfig service;
  service.name = "fuzz";
  service.min_replicas = 1;
  service.max_replicas = 4;
  switch (data[0] % 5) {
    case 0: {
      auto parsed = gpuscale::api::ParseServiceBody(body, "");
      // The parser validates names; an accepted service always has one.
      if (parsed && parsed->name.empty()) std::abort();
      break;
    }
    case 1:
      (void)gpuscale::api::ParseServiceBody(body, "fuzz");
      break;
    case 2: {
      auto rule = gpuscale::api::ParseRuleBody(body, service);
      if (rule && (rule->step_size == 0 || rule->max_replicas < rule->min_replicas)) {
        std::abort();  // ParseScalingRule's invariants must hold for every accepted rule
      }
      break;
    }
    case 3: {
      auto target = gpuscale::api::ParseTarget(body);
      // An accepted target is a path (routing and static files rely on it) without NUL.
      if (target && (target->path.empty() || target->path[0] != '/' ||
                     target->path.find('\0') != std::string::npos)) {
        std::abort();
      }
      break;
    }
    default: {
      auto replicas = gpuscale::api::ParseReplicasBody(body);
      if (replicas && *replicas && **replicas < 0) std::abort();
      break;
    }
  }
  return 0;
}
