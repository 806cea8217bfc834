// What `tapestry launch` and `tapestry calibrate` share: keeping a launch in a
// session (the plan, the launch, its measured steps and, for a plan of the host
// target, calibration points).
#pragma once

#include <string>

#include "common/expected.h"
#include "launch/check.h"
#include "launch/launch.h"
#include "plan/plan.h"

namespace tapestry::cli {

// Keeps the launch in a session (launch::record_plan_file_launch): the plan's graph
// as a version of the project "<graph name> (launched plans)" (made on first use;
// a new version only when the graph changed), the plan (saved once: a plan launched
// again adds to its history), the launch with its steps and — for a plan of the
// host target — its calibration points. Returns a line for the report, or the error.
Expected<std::string, std::string> keep_launch(const std::string &path, const plan::Plan &p,
                                               const launch::LaunchResult &result, const launch::LaunchCheck *check);

}  // namespace tapestry::cli
