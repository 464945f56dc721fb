// Fixture (not compiled): tests may use threads and clocks; nothing here may be reported.
#include <thread>

#include "loadgen/completion_client.h"
#include "scrape/scraper.h"

void Sleep() { std::this_thread::sleep_for(std::chrono::steady_clock::duration{1}); }
