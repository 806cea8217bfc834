// Launch records and calibration points (launch/records.h).
#include "launch/records.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "plan/plan_file.h"
#include "plan/simulate.h"

namespace tapestry::launch {

bool measures_plan_target(const plan::Plan &plan, const std::string &backend, const std::string &hardware) {
    // The host target is the CPU this process runs on (docs/targets.md); every
    // other built-in target is a GPU, measured by the cuda backend on that GPU: the
    // target's model ("h200" → H200, "h100-sxm" → H100) in the GPU's name.
    if (backend == "cpu") return plan.target == "host";
    if (backend != "cuda" || plan.target.empty() || plan.target == "host") return false;
    std::string model = plan.target.substr(0, plan.target.find('-'));
    for (char &c : model) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return hardware.find(model) != std::string::npos;
}

std::optional<cost::KernelWork> step_work(const plan::Plan &plan, const plan::Step &s) {
    if (s.kind == plan::StepKind::kernel)
        return cost::KernelWork{cost::parse_kernel_class(s.kernel_class).value_or(cost::KernelClass::elementwise), s.dtype,
                                s.flops, s.bytes, s.op_kind};
    const bool shared_copy = s.kind == plan::StepKind::send_recv && plan.cluster.shared_cores > 0 &&
                             plan.cluster.node_of(s.device) == plan.cluster.node_of(s.peer);
    if (s.kind == plan::StepKind::copy || shared_copy) return cost::KernelWork{cost::KernelClass::copy, DType::f32, 0, 2 * s.bytes};
    if (s.kind == plan::StepKind::collective)
        if (const auto c = cost::parse_collective(s.collective))
            return cost::shared_collective_work(plan.cluster, *c, s.bytes, s.participants);
    return std::nullopt;
}

std::vector<double> calibrated_durations(const plan::Plan &plan, const cost::Model &model,
                                         const cost::Calibration &calibration) {
    std::vector<double> out;
    out.reserve(plan.steps.size());
    for (const plan::Step &s : plan.steps) {
        const auto w = step_work(plan, s);
        out.push_back(w ? model.kernel_seconds(*w) *
                                calibration.factor(w->kernel_class, model.curve_size(*w), w->kernel, model.kernel_threads())
                        : s.predicted);
    }
    return out;
}

std::vector<cost::CalibrationSample> calibration_samples(const plan::Plan &plan, const cost::Model &model,
                                                         const LaunchResult &result) {
    std::vector<cost::CalibrationSample> out;
    for (const MeasuredStep &m : result.steps) {
        const auto w = step_work(plan, plan.steps[static_cast<size_t>(m.step)]);
        if (!w) continue;
        const double measured = m.end - m.start;
        const double predicted = model.kernel_seconds(*w);
        if (measured <= 0 || predicted <= 0) continue;
        out.push_back(cost::CalibrationSample{w->kernel_class, model.curve_size(*w), predicted, measured, w->kernel,
                                              model.kernel_threads()});
    }
    return out;
}

std::vector<cost::CalibrationSample> calibration_samples(const std::vector<store::CalibrationRow> &rows) {
    std::vector<cost::CalibrationSample> out;
    out.reserve(rows.size());
    for (const store::CalibrationRow &r : rows)
        if (const auto c = cost::parse_kernel_class(r.kernel_class))
            out.push_back(cost::CalibrationSample{*c, r.size, r.predicted_seconds, r.measured_seconds, r.kernel, r.threads});
    return out;
}

std::vector<store::StepMeasurement> step_measurements(const plan::Plan &plan, const LaunchResult &result) {
    std::vector<store::StepMeasurement> out;
    out.reserve(result.steps.size());
    for (const MeasuredStep &m : result.steps) {
        const plan::Step &s = plan.steps[static_cast<size_t>(m.step)];
        out.push_back(store::StepMeasurement{m.step, plan.devices[static_cast<size_t>(s.device)].name, m.start, m.end,
                                             m.predicted});
    }
    return out;
}

store::LaunchRecord launch_record(const LaunchResult &result, const LaunchCheck *check, std::string started_at,
                                  std::string finished_at) {
    store::LaunchRecord r;
    r.backend = result.backend;
    r.status = result.status;
    r.error = result.ok() ? std::string() : result.fault.message;
    r.equivalence = check ? (check->pass() ? "pass: " : "fail: ") + check->summary() : std::string();
    r.started_at = std::move(started_at);
    r.finished_at = std::move(finished_at);
    nlohmann::ordered_json j;
    j["wall_seconds"] = result.wall_seconds;
    j["predicted_makespan_seconds"] = result.predicted_makespan;
    j["moved_bytes"] = result.moved_bytes;
    if (!result.ok()) j["fault"] = {{"step", result.fault.step}, {"device", result.fault.device}, {"rank", result.fault.rank}};
    j["devices"] = nlohmann::ordered_json::array();
    for (const DeviceMeasurement &d : result.devices)
        j["devices"].push_back({{"device", d.name},
                                {"peak_bytes", d.peak_bytes},
                                {"predicted_peak_bytes", d.predicted_peak_bytes},
                                {"arena_bytes", d.arena_bytes},
                                {"resident_bytes", d.resident_bytes},
                                {"busy_seconds", d.busy_seconds},
                                {"sent_bytes", d.moved_bytes}});
    r.measurements_json = j.dump();
    return r;
}

Expected<RecordedLaunch, std::string> record_launch(store::Session &session, store::VersionId version,
                                                    std::optional<store::StageId> stage,
                                                    std::optional<store::PlanId> plan_id, const plan::Plan &plan,
                                                    const LaunchResult &result, const LaunchCheck *check,
                                                    const cost::Model *model) {
    RecordedLaunch out;
    if (plan_id) {
        out.plan_id = *plan_id;
    } else {
        const plan::Prediction p = plan::simulate(plan);
        store::PlanRecord rec;
        rec.version_id = version;
        rec.stage_id = stage;
        rec.target = plan.target;
        rec.devices = static_cast<int>(plan.devices.size());
        rec.summary = plan.source.options.empty() ? plan.source.pass : plan.source.pass + " " + plan.source.options;
        rec.makespan_seconds = p.makespan;
        rec.peak_bytes = p.peak;
        auto saved = session.save_plan(rec, plan::plan_json(plan, &p));
        if (!saved) return unexpected("keeping the plan: " + saved.error().message);
        out.plan_id = saved->id;
    }
    store::LaunchRecord rec = launch_record(result, check);
    rec.plan_id = out.plan_id;
    auto recorded = session.record_launch(rec, step_measurements(plan, result));
    if (!recorded) return unexpected("keeping the launch: " + recorded.error().message);
    out.launch_id = recorded->id;
    if (model && measures_plan_target(plan, result.backend, result.hardware)) {
        std::vector<store::CalibrationRow> rows;
        for (const cost::CalibrationSample &s : calibration_samples(plan, *model, result))
            rows.push_back(store::CalibrationRow{cost::kernel_class_name(s.kernel_class), s.size, s.predicted,
                                                 s.measured, out.launch_id, {}, s.kernel, s.threads});
        if (!rows.empty()) {
            auto added = session.add_calibration(plan.target, rows);
            if (!added) return unexpected("keeping the calibration points: " + added.error().message);
        }
        out.calibration_points = static_cast<int>(rows.size());
    }
    return out;
}

}  // namespace tapestry::launch
