// Planted violation for the include-root check (tests/CMakeLists.txt): the pure scale module
// does not link gpuscale_net, so the build must not find this header.
#include "net/http_get.h"
#include "scale/policy.h"
