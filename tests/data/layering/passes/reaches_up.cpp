// A planted violation for the layering check: a pass reaching into a runtime.
#include "runtime/cpu/kernel.h"
