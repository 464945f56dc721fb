// Fixture (not compiled): an adapter header in a mixed module (neither pure nor in
// IO_MODULES). The checker infers it is I/O from its .cc, which includes cpp-httplib.
#pragma once

#include <string>

std::string Complete(const std::string& url);
