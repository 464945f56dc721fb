// Fixture (not compiled): a test-only helper header may use anything.
#pragma once

#include <mutex>
