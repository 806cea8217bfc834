// Plans of test graphs (the launch suites): a graph placed on n devices of a
// built-in target by a hand baseline or, with baseline −1, round-robin.
#pragma once

#include <string>

#include "plan/planner.h"
#include "test_projects.h"

namespace tapestry::test {

inline Expected<plan::PlanResult, std::string> plan_on(const Graph &g, int devices, int baseline,
                                                        const std::string &target = "h100-sxm") {
    plan::PlanRequest req;
    req.target = builtin_target_or_stop(target);
    req.devices = devices;
    if (baseline >= 0) req.baseline = static_cast<plan::Baseline>(baseline);
    else req.placement = "round-robin";
    return plan::make_plan(g, req);
}

}  // namespace tapestry::test
