// Keeping launches in a session (see launch_support.h).
#include "launch_support.h"

#include <chrono>
#include <optional>

#include "cli_support.h"
#include "io/project_file.h"
#include "launch/records.h"
#include "store/session.h"
#include "target_support.h"

namespace tapestry::cli {

Expected<std::string, std::string> keep_launch(const std::string &path, const plan::Plan &p,
                                               const launch::LaunchResult &result, const launch::LaunchCheck *check) {
    // The uncalibrated model of the plan's target, for calibration points: only a
    // launch on the hardware the plan predicts measures it.
    std::optional<cost::Model> model;
    if (launch::measures_plan_target(p, result.backend, result.hardware)) {
        auto target = resolve_target(p.target, 2, path, false);
        if (!target) return unexpected("target '" + p.target + "': " + target.error());
        model.emplace(*target, p.cluster);
    }
    auto s = store::Session::open(path, store::OpenMode::read_write, std::chrono::seconds(10));
    if (!s) return unexpected(s.error().message);
    auto kept = launch::record_plan_file_launch(**s, p, result, check, model ? &*model : nullptr);
    if (!kept) return unexpected(kept.error());
    const std::string name = launch::launched_plans_project(p);
    std::string line = "kept in " + path + " as launch " + std::to_string(kept->launch_id) + " of plan " +
                       std::to_string(kept->plan_id) + " (project '" + name + "')";
    const std::string unmeasured = launch::target_not_measured(p, result.backend, result.hardware);
    line += kept->calibration_points > 0
                ? ", with " + plural(kept->calibration_points, "calibration point") + " for target " + p.target
                : "; no calibration points: " + (unmeasured.empty() ? "no step it measured is a kernel or copy" : unmeasured);
    return line;
}

}  // namespace tapestry::cli
