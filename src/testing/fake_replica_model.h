// Test alias: the affine replica model (testing/affine_model.h) with its default costs.
#pragma once

#include "testing/affine_model.h"

namespace gpuscale::testing {
using sim::AffineCosts;
using sim::AffineReplicaModel;
}  // namespace gpuscale::testing
