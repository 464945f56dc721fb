// Fixture (not compiled): makes loadgen/completion_client.h an I/O header.
#include "loadgen/completion_client.h"

#include <httplib.h>

std::string Complete(const std::string& url) { return url; }
