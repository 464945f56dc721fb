// Fixture (not compiled): a pure header outside the pure modules; including it is fine.
#pragma once

#include <deque>
