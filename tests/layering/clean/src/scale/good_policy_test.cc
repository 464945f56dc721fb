// Fixture (not compiled): tests may use anything.
#include <thread>

void Sleep() { std::this_thread::sleep_for(std::chrono::steady_clock::duration{1}); }
