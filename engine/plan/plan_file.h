// Plan files (docs/plans.md, schema docs/tapestry-plan.schema.json): versioned
// JSON, "format": "tapestry-plan". Reading never throws: a malformed plan is
// refused with the file and the JSON path of the first problem.
#pragma once

#include <string>

#include "common/expected.h"
#include "plan/plan.h"
#include "plan/simulate.h"

namespace tapestry::plan {

// The plan as JSON (stable key order, 2-space indent). With a prediction, its
// figures are written under "prediction" (labelled as one; readers ignore it).
std::string plan_json(const Plan &plan, const Prediction *prediction = nullptr);
// Parses plan JSON; `where` names the file in messages ("plan.json: steps[3].reads[0].buffer: …").
Expected<Plan, std::string> parse_plan(const std::string &text, const std::string &where);
// Reads a file (regular files only, at most 1 GiB).
Expected<Plan, std::string> load_plan(const std::string &path);
// Writes atomically. Returns an error message or "".
std::string save_plan(const Plan &plan, const std::string &path, const Prediction *prediction = nullptr);

}  // namespace tapestry::plan
