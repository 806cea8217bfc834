// What the pass suites give the passes from the layers above them: certify
// options with the numeric check (the CPU executor and the oracle,
// verify/numeric_check.h), and fuse options asking the CPU backend
// (runtime/cpu/fusion_backend.h).
#pragma once

#include "passes/certificate.h"
#include "passes/fuse.h"
#include "runtime/cpu/fusion_backend.h"
#include "verify/numeric_check.h"

namespace tapestry::test {

inline CertifyOptions numeric_certify(verify::NumericCheckOptions options = {}) {
    CertifyOptions c;
    c.numeric = verify::numeric_check(options);
    return c;
}

inline FuseOptions cpu_fuse(FuseOptions options = {}) {
    options.backends = {&cpu::fusion_backend()};
    return options;
}

}  // namespace tapestry::test
