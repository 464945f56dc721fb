// Fixture (not compiled): a pure source that reads the wall clock and opens a file.
#include <cstdio>
#include <fstream>  // expect-violation

double WallNow() {
  FILE* f = fopen("/tmp/x", "r");  // expect-violation
  if (f != nullptr) std::fclose(f);
  return std::chrono::duration<double>(
      std::chrono::system_clock::now().time_since_epoch()).count();  // expect-violation
}
