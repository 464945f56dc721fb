// Test alias: the affine replica model (sim/affine_model.h) with its default costs.
#pragma once

#include "sim/affine_model.h"

namespace gpuscale::testing {
using sim::AffineCosts;
using sim::AffineReplicaModel;
}  // namespace gpuscale::testing
