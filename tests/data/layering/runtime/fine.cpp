// Allowed: a runtime includes the op library.
#include "ops/library.h"
