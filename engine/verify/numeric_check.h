// The numeric check of a stage certificate (passes/certificate.h): the original
// and the stage run on the CPU executor with the same random inputs, and every
// output of the stage is compared with the original's run and with the
// double-precision oracle of the original — so a bug the executor shares between
// the two runs does not pass unseen. The passes are given this check (they know
// no runtime); `tapestry passes --numeric`, the studio's Stages dock and the
// tests make it here.
#pragma once

#include <cstdint>

#include "ops/library.h"
#include "passes/certificate.h"

namespace tapestry::verify {

struct NumericCheckOptions {
    std::uint64_t seed = 1;  // of the random inputs (io/random_inputs.h)
    // An output passes when |stage − reference| ≤ atol·max(1, max|reference|) +
    // rtol·|reference| for every element (reference: the original's run, and the
    // oracle); for a bf16/f16 output atol and rtol are at least
    // dtype_tolerance_floor's (verify/verify.h).
    double atol = 1e-4;
    double rtol = 1e-3;
    int threads = 2;     // executor worker threads
    bool oracle = true;  // also compare with the oracle of the original
    const OpLibrary *library = nullptr;  // null: OpLibrary::standard()
};

// A check named "numeric": each finding names the output and what it was compared
// with ("output 'y' differs from the original's run: …", "… from the oracle: …");
// a graph that does not compile or run is a finding too, never an exception.
NumericCheck numeric_check(NumericCheckOptions options = {});

}  // namespace tapestry::verify
