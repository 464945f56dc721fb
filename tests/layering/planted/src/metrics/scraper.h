// Fixture (not compiled): an adapter header outside the pure modules. The checker infers it
// is I/O from its .cc, which includes cpp-httplib.
#pragma once

#include <string>

std::string Scrape(const std::string& url);
