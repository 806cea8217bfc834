// A planted violation for the layering check: one backend reaching into another.
#include "runtime/cpu/kernel.h"
