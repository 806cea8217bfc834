// Planning by request (docs/plans.md): the one place that turns "this graph, on
// this target, on N devices, placed so (or by this baseline)" into stages, a
// certified plan and its prediction — shared by `tapestry plan` and the studio's
// Plan dock so both accept the same settings and report the same errors.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "cost/model.h"
#include "passes/stage.h"
#include "plan/baselines.h"
#include "plan/plan.h"
#include "plan/simulate.h"

namespace tapestry::plan {

struct PlanRequest {
    cost::Target target;
    int devices = 1;
    int nodes = 0;                       // 0: as the target's clusters suggest
    std::string placement = "shard";     // place pass rule: shard, round-robin, pipeline[:S]
    std::vector<std::string> maps;       // explicit "op=0:0,0:1"
    std::optional<Baseline> baseline;    // instead of the placement: a hand baseline
    int tp = 0;                          // dp×tp degree (0: one node's devices)
    int micro_batches = 0;               // pp
    // How the steps are ordered (StepOrder); none: by readiness for a pipeline (the
    // pp baseline, placement pipeline[:S][@cuts]: its micro-batches overlap only
    // so), in dependency order otherwise.
    std::optional<StepOrder> order;
    PlanSource source;                   // project, stage number, pass, options, certificate
    // Measurements of this target's kernels (launches kept in a session fill it):
    // predictions are scaled by it, and its error is reported with the plan.
    std::vector<cost::CalibrationSample> calibration;
    // The shared-core hand-off fitted on launches (launch::fit_wake): a host plan
    // is simulated with it (cost::ClusterShape::wake). wake_launches 0: none.
    double wake = 0;
    int wake_launches = 0;
    std::function<bool()> cancelled;     // polled between stages; true stops with "cancelled"
};

struct PlanResult {
    std::vector<Stage> stages;  // what planning added (shard, place), each certified
    Plan plan;
    Prediction prediction;
    Certificate certificate;  // the plan certificate
    cost::ClusterShape cluster;
    cost::CalibrationError calibration;  // of the request's samples (0 samples: uncalibrated)
    // Read from a plan file (read_plan_result): the file keeps the steps' predicted
    // durations but not how they were calibrated, so `calibration` says nothing.
    bool from_file = false;
};

// Places (or applies the baseline to) `g`, compiles the plan, simulates it and
// certifies it. Errors name the setting at fault.
Expected<PlanResult, std::string> make_plan(const Graph &g, const PlanRequest &request);

// The device names of a cluster shape ("0:0" …).
std::vector<std::string> device_names(const cost::ClusterShape &shape);

// A plan file (tapestry plan -o, optimize --export-plan, the Plan dock's Export
// Plan…) as a result to show: the plan, its prediction simulated again from the
// steps' own predicted durations (so the figures the file was written with), and
// the plan certificate made afresh; no stages (the file keeps the placed graph,
// not the passes that made it). Errors name the file and the field.
Expected<PlanResult, std::string> read_plan_result(const std::string &path);

// The summary a user reads (CLI table rows; the studio shows the same):
// "makespan 1.2 ms (prediction) · 4 devices · comm 0.3 ms, 12 MiB · peak 1.1 GiB of 80 GiB on 0:2".
std::string plan_summary(const PlanResult &r, double capacity_bytes);
// The cost model's calibration, never hidden: "calibration: none — no launch on
// h100-sxm measured yet, predictions uncalibrated" or "calibration: 12
// measurements on host, median error 41% uncalibrated → 9% calibrated".
std::string calibration_summary(const PlanResult &r);
// The same line for a calibration of `target` on `cluster` (the wake it fitted
// counts where the cluster's devices share cores).
std::string calibration_summary(const cost::Calibration &calibration, const std::string &target,
                                const cost::ClusterShape &cluster);
// How a host plan's devices share the machine (docs/cost-model.md): "cores: the
// 4 devices share 2 cores: 1 thread a kernel, at most 2 steps at once, in plan
// order"; empty for a plan whose devices share nothing (a GPU target's).
std::string cores_summary(const Plan &p);

}  // namespace tapestry::plan
