// The body of GET /v1/services, written as text: byte for byte what SendJson writes for
// {"services": [ServiceJson(s), ...]}, at a fraction of the cost. At 1,000 services the JSON
// tree (about 100 nodes a service, two thirds of them the spec's) was built, printed and
// freed on every request, 20-40 ms of an API thread on a busy 2-core machine; here each spec
// is printed once per distinct spec text and spliced in, and only the status fields (what a
// tick changes) go through a tree.
//
// This is an adapter-side header (nlohmann::json stays in the .cc). Thread-safety: safe from
// any thread (the spec cache has its own lock).
#pragma once

#include <string>
#include <vector>

#include "daemon_api/daemon_api.h"

namespace gpuscale::api {

// {"services": [...]} indented by 2, with a final newline; invalid UTF-8 in any string
// replaced by U+FFFD, as SendJson does.
std::string ServicesListBody(const std::vector<daemon::ServiceView>& services);

}  // namespace gpuscale::api
