// What a launch leaves behind (docs/launch.md, "Records and calibration"): the
// plan, the launch and its measured steps in the session (store/session.h,
// schema v3), and — when the launch ran on the hardware the plan was predicted
// for — calibration points of the plan's target, so that later plans of that
// target are predicted from what ran.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "cost/model.h"
#include "launch/check.h"
#include "launch/launch.h"
#include "plan/plan.h"
#include "store/session.h"

namespace tapestry::launch {

// Whether a launch on `backend` measures the hardware `plan` was predicted for:
// the cpu backend measures the host target (plans for `--target host`); the cuda
// backend a GPU target whose model its `hardware` (Backend::describe) names (an
// h200 plan on an NVIDIA H200); a plan for an H100 launched on the CPU measures
// nothing about an H100, nor does a plan of more devices than the GPUs `hardware`
// counts ("cuda: 1 × NVIDIA H200 (…)"): its virtual devices share a GPU and their
// steps contend for it, which the target's model of whole GPUs does not predict.
bool measures_plan_target(const plan::Plan &plan, const std::string &backend, const std::string &hardware = {});
// Why not, said for a user ("the cpu backend does not measure target h100-sxm");
// empty when it does.
std::string target_not_measured(const plan::Plan &plan, const std::string &backend, const std::string &hardware = {});

// The work of a kernel or copy step as the cost model takes it (a copy as
// Model::copy_seconds counts it), and of a transfer or a collective between
// devices that share one machine's memory (the plan's cluster has shared_cores:
// then they are copies, cost::shared_collective_work); none for other transfers
// and collectives, which the α–β model times and no calibration scales.
std::optional<cost::KernelWork> step_work(const plan::Plan &plan, const plan::Step &step);

// Each step's duration with its kernel or copy work predicted by `model` and
// scaled by `calibration` (transfers and collectives as the plan predicts them):
// plan::simulate(plan, calibrated_durations(…)) is the calibrated prediction.
std::vector<double> calibrated_durations(const plan::Plan &plan, const cost::Model &model,
                                         const cost::Calibration &calibration);
// The plan simulated with calibrated_durations and, on shared cores, the
// calibration's wake (as a plan compiled with the calibration predicts itself).
plan::Prediction calibrated_prediction(const plan::Plan &plan, const cost::Model &model,
                                       const cost::Calibration &calibration);

// The shared-core hand-off (cost::ClusterShape::wake) that makes the simulation
// of launched plans, with their measured step durations, come closest to their
// measured walls: the step times are the launches' own, so what is left between
// the replay and the wall is the time steps waited past a core's release. Only
// launches that ran every step of a plan whose devices share the cores count.
struct WakeFit {
    double seconds = 0;  // the fitted wake
    int launches = 0;    // launches it was fitted on (0: none could be; seconds 0)
    double error_before = 0, error_after = 0;  // median |replay − wall| / wall, wake 0 and fitted
};
struct LaunchOfPlan {
    const plan::Plan *plan = nullptr;
    const LaunchResult *result = nullptr;
};
WakeFit fit_wake(const std::vector<LaunchOfPlan> &launches);
// fit_wake on the launches a session keeps that calibrated `target` (the newest
// `limit`, their plans read back from the session): what `tapestry plan
// --session` and the Plan dock plan with. Errors name what could not be read.
Expected<WakeFit, std::string> session_wake(const store::Session &session, const std::string &target, int limit = 20);
// What a session measured of `target`: its calibration points, and — for a cpu
// target, whose devices share the machine's cores — the wake fitted on its
// launches (other targets have no wake to learn, so no plan is read back): the
// calibration `tapestry plan --session`, `tapestry optimize --session` and the
// studio's docks predict with.
Expected<cost::Calibration, std::string> session_calibration(const store::Session &session, const cost::Target &target);

// Per kernel and copy step that ran: its kernel class, its size as the class's
// efficiency curve counts it, the uncalibrated prediction of `model` (a model of
// the plan's target and cluster, without calibration) and the measured seconds.
std::vector<cost::CalibrationSample> calibration_samples(const plan::Plan &plan, const cost::Model &model,
                                                         const LaunchResult &result);
// The calibration points a session keeps, as samples (a point of a kernel class
// this build does not know is left out).
std::vector<cost::CalibrationSample> calibration_samples(const std::vector<store::CalibrationRow> &rows);

// The measured steps as the session keeps them.
std::vector<store::StepMeasurement> step_measurements(const plan::Plan &plan, const LaunchResult &result);

// The launch record: status, fault, the equivalence summary, and the devices'
// measurements as JSON. Times are ISO 8601 UTC (empty: the time of recording).
store::LaunchRecord launch_record(const LaunchResult &result, const LaunchCheck *check, std::string started_at = {},
                                  std::string finished_at = {});

struct RecordedLaunch {
    store::PlanId plan_id = 0;
    store::LaunchId launch_id = 0;
    int calibration_points = 0;  // 0 when the launch does not measure the plan's target
};

// Keeps a launch in `session`: the plan (saved under `version`, and `stage` when
// the plan is of a stage; `plan_id` reuses a plan saved before), the launch and
// its steps in one transaction, then — with a model (uncalibrated, of the plan's
// target) and when measures_plan_target — its calibration points. Errors are the
// store's messages.
Expected<RecordedLaunch, std::string> record_launch(store::Session &session, store::VersionId version,
                                                    std::optional<store::StageId> stage,
                                                    std::optional<store::PlanId> plan_id, const plan::Plan &plan,
                                                    const LaunchResult &result, const LaunchCheck *check,
                                                    const cost::Model *model);

// The plan saved under `project` (any of its versions) that is `plan`: the same
// plan file, its provenance aside (source.project is the project's path, or its
// name when it was opened from a session — the same plan either way). 0 if none;
// the newest when several are.
Expected<store::PlanId, std::string> find_saved_plan(const store::Session &session, store::ProjectId project,
                                                     const plan::Plan &plan);

// Where the launches of a plan file are kept when no editor document holds its
// graph (`tapestry launch --session`, `tapestry calibrate`, a plan the studio
// opened from a file): the project "<graph name> (launched plans)".
std::string launched_plans_project(const plan::Plan &plan);
// That project's id in `session`, 0 while it has none.
Expected<store::ProjectId, std::string> find_launched_plans_project(const store::Session &session,
                                                                    const plan::Plan &plan);
// record_launch for a plan file: its graph a version of launched_plans_project
// (made on first use; a new version only when the graph changed), the plan saved
// once (find_saved_plan: a plan launched again adds to its history), then the
// launch.
Expected<RecordedLaunch, std::string> record_plan_file_launch(store::Session &session, const plan::Plan &plan,
                                                              const LaunchResult &result, const LaunchCheck *check,
                                                              const cost::Model *model);

}  // namespace tapestry::launch
