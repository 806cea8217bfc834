#include "plan/planner.h"

#include <cstdio>

#include "common/checked_size.h"
#include "graph/validate.h"
#include "ops/library.h"
#include "passes/place.h"
#include "plan/certify.h"
#include "plan/compile.h"
#include "plan/plan_file.h"

namespace tapestry::plan {

std::vector<std::string> device_names(const cost::ClusterShape &shape) {
    std::vector<std::string> out;
    for (int d = 0; d < shape.devices(); ++d) out.push_back(shape.device_name(d));
    return out;
}

Expected<PlanResult, std::string> make_plan(const Graph &g, const PlanRequest &request) {
    if (const std::string missing = request.target.missing_figures(); !missing.empty())
        return unexpected("target '" + request.target.name + "' lacks " + missing +
                          (request.target.kind == "cpu" ? " (measure it first: tapestry targets measure)" : ""));
    auto shape = cost::cluster_shape(request.target, request.devices, request.nodes);
    if (!shape) return unexpected(shape.error());
    if (auto valid = require_valid(g, OpLibrary::standard()); !valid) return unexpected(valid.error());
    PlanResult result;
    result.cluster = *shape;
    const std::vector<std::string> names = device_names(*shape);
    Graph placed = g;
    bool pipeline = request.baseline == Baseline::pp;  // a pipeline's steps go by readiness (below)
    if (request.baseline) {
        BaselineOptions b;
        b.kind = *request.baseline;
        b.devices = names;
        b.tp = request.tp;
        b.devices_per_node = shape->devices_per_node;
        b.micro_batches = request.micro_batches;
        auto stages = baseline_stages(g, b);
        if (!stages) return unexpected(stages.error());
        result.stages = std::move(stages).value();
    } else {
        auto options = parse_placement(request.placement, request.maps, names);
        if (!options) return unexpected(options.error());
        options->certify = CertifyOptions{};
        pipeline = options->rule == PlacementRule::pipeline;
        auto st = place(g, *options);
        if (!st) return unexpected(st.error());
        result.stages.push_back(std::move(st).value());
    }
    for (const Stage &s : result.stages)
        if (s.certificate.certified() && !s.certificate.pass())
            return unexpected("stage '" + s.pass + "' failed its certificate: " + s.certificate.badge());
    if (request.cancelled && request.cancelled()) return unexpected(std::string("cancelled"));
    placed = result.stages.back().graph;
    cost::Model model(request.target, *shape);
    model.calibration() = cost::Calibration::of(request.calibration, request.wake, request.wake_launches);
    result.calibration = model.calibration().error();
    // The plan comes from the last planning stage: its number counts the stages of
    // the pipeline the request's source names, then planning's own.
    PlanSource source = request.source;
    source.stage += static_cast<int>(result.stages.size());
    source.pass = result.stages.back().pass;
    source.options = result.stages.back().options;
    source.certificate = result.stages.back().certificate.badge();
    source.order = request.order ? *request.order : pipeline ? StepOrder::ready : StepOrder::dependency;
    auto plan = compile_plan(result.stages.back(), model, source);
    if (!plan) return unexpected(plan.error());
    result.plan = std::move(plan).value();
    result.prediction = simulate(result.plan);
    result.certificate = certify_plan(result.plan);
    return result;
}

std::string plan_summary(const PlanResult &r, double capacity) {
    const Prediction &p = r.prediction;
    char buf[512];
    // A capacity of 0 is one not known (a plan file of a target this tool does not know).
    const std::string of = capacity > 0 ? " of " + byte_text(static_cast<std::int64_t>(capacity)) : std::string();
    std::snprintf(buf, sizeof buf, "makespan %s (prediction) · %d devices · communication %s, %s · peak %s%s on %s",
                  seconds_text(p.makespan).c_str(), static_cast<int>(r.plan.devices.size()),
                  seconds_text(p.comm_seconds).c_str(), byte_text(static_cast<std::int64_t>(p.comm_bytes)).c_str(),
                  byte_text(p.peak).c_str(), of.c_str(),
                  r.plan.devices.empty() ? "-" : r.plan.devices[static_cast<size_t>(p.peak_device)].name.c_str());
    return buf;
}

namespace {

std::string calibration_line(const cost::CalibrationError &e, const std::string &target, double wake,
                             bool shared_cores) {
    std::string out;
    if (e.samples == 0) {
        out = "calibration: none — no launch on " + target + " measured yet, predictions uncalibrated";
    } else {
        char buf[256];
        std::snprintf(buf, sizeof buf, "calibration: %d measurement%s on %s, median error %.0f%% uncalibrated → %.0f%% calibrated",
                      e.samples, e.samples == 1 ? "" : "s", target.c_str(), 100 * e.median_before,
                      100 * e.median_after);
        out = buf;
    }
    if (shared_cores && wake > 0)
        out += "; a step waiting for a core starts " + seconds_text(wake) + " after its release (fitted on the launches)";
    return out;
}

}  // namespace

Expected<PlanResult, std::string> read_plan_result(const std::string &path) {
    auto loaded = load_plan(path);
    if (!loaded) return unexpected(loaded.error());
    PlanResult r;
    r.plan = std::move(loaded).value();
    r.prediction = simulate(r.plan);
    r.certificate = certify_plan(r.plan);
    r.cluster = r.plan.cluster;
    r.from_file = true;
    return r;
}

std::string calibration_summary(const PlanResult &r) {
    if (r.from_file)
        return "calibration: as when the plan was made (the plan file keeps its predictions, not how they were "
               "calibrated)";
    return calibration_line(r.calibration, r.plan.target, r.plan.cluster.wake, r.plan.cluster.shared_cores > 0);
}

std::string calibration_summary(const cost::Calibration &calibration, const std::string &target,
                                const cost::ClusterShape &cluster) {
    return calibration_line(calibration.error(), target, calibration.wake_launches() > 0 ? calibration.wake() : 0,
                            cluster.shared_cores > 0);
}

std::string cores_summary(const Plan &p) {
    const int cores = p.cluster.shared_cores;
    if (cores <= 0) return {};
    const int threads = p.cluster.threads_per_device(), at_once = p.cluster.concurrent_steps();
    return "cores: the " + std::to_string(p.devices.size()) + " devices share " + std::to_string(cores) +
           (cores == 1 ? " core" : " cores") + ": " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
           " a kernel, at most " + std::to_string(at_once) + (at_once == 1 ? " step" : " steps") + " at once, in plan order";
}

}  // namespace tapestry::plan
