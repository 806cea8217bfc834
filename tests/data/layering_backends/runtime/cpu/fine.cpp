// Allowed: a backend includes its own headers and the op library.
#include "ops/library.h"
#include "runtime/cpu/kernel.h"
