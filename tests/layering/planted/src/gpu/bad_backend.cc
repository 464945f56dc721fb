// Fixture (not compiled): the pure gpu module reaching for its adapter half (gpumon, an I/O
// module as a whole) and for the driver loader.
#include <dlfcn.h>  // expect-violation

#include "gpu/gpu_info.h"
#include "gpumon/nvml_backend.h"  // expect-violation
