// Every launch proves its outputs (docs/launch.md): against the reference — the
// plan's graph run unsharded on the CPU executor, on the same inputs — and, on
// request, against the double-precision oracle, output by output, with the
// tolerances `tapestry verify` uses.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "launch/backend.h"
#include "graph/tensor_data.h"
#include "plan/plan.h"
#include "verify/verify.h"

namespace tapestry::launch {

struct CheckOptions {
    bool oracle = false;  // also against the oracle (slow on big graphs)
    double atol = 1e-4;   // in units of each output's scale, as verify's scale_atol
    double rtol = 1e-3;
    int threads = 2;      // the reference run's
};

struct LaunchCheck {
    std::vector<verify::OutputComparison> comparisons;  // per output: against "unsharded", then "oracle"
    bool pass() const;
    std::string summary() const;  // "PASS y vs unsharded: max |error| 2.4e-07 (tolerance 1.0e-04)" — one clause each
};

// Before a launch's inputs are made (they, the launch and its check all allocate):
// the plan against the backend (check_fits: its devices, each one's predicted
// peak against the capacity) and what the inputs and the reference run (with the
// oracle where `oracle`) need against this machine's memory. A plan of a graph
// too large is refused here, by name, with nothing allocated.
Expected<std::monostate, std::string> check_launchable(const plan::Plan &plan, const Backend &backend, bool oracle);

// `outputs`: the launch's, every graph output of the plan; `inputs`: what the
// launch was given (parameters without one use their own values).
Expected<LaunchCheck, std::string> check_outputs(const plan::Plan &plan, const std::map<TensorId, TensorData> &inputs,
                                                 const std::map<TensorId, TensorData> &outputs,
                                                 const CheckOptions &options = {});

}  // namespace tapestry::launch
