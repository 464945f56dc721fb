// Fixture (not compiled): a pure header in a mixed module; including it is fine.
#pragma once

#include <deque>
