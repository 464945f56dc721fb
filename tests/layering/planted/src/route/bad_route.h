// Fixture (not compiled): a pure header that includes an I/O module's header.
#pragma once

#include "gateway/gateway_state.h"  // expect-violation
#include "route/picker.h"
