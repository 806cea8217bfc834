// Plans of test graphs (the launch suites): a graph placed on n devices of a
// built-in target by a hand baseline or, with baseline −1, round-robin.
#pragma once

#include <string>

#include "plan/planner.h"
#include "test_projects.h"

namespace tapestry::test {

inline Expected<plan::PlanResult, std::string> plan_on(const Graph &g, int devices, int baseline,
                                                        const cost::Target &target) {
    plan::PlanRequest req;
    req.target = target;
    req.devices = devices;
    if (baseline >= 0) req.baseline = static_cast<plan::Baseline>(baseline);
    else req.placement = "round-robin";
    return plan::make_plan(g, req);
}

inline Expected<plan::PlanResult, std::string> plan_on(const Graph &g, int devices, int baseline,
                                                        const std::string &target = "h100-sxm") {
    return plan_on(g, devices, baseline, builtin_target_or_stop(target));
}

// The host target with fixed figures, as measured with 2 threads (a fixture, not
// a measurement of this machine): its devices share 2 cores.
inline cost::Target host_fixture() {
    return cost::measured_target(builtin_target_or_stop("host"),
                                 cost::HostFigures{2e11, 0, 2e10, 16e9, 5e-6, "fixture", 2});
}

}  // namespace tapestry::test
