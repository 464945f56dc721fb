// Fixture (not compiled): makes metrics/scraper.h an I/O header.
#include "metrics/scraper.h"

#include <httplib.h>

std::string Scrape(const std::string& url) { return url; }
