// Control for the include-root check: what gpuscale_scale links (core) and itself compile.
#include "core/result.h"
#include "scale/policy.h"
