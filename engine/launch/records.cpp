// Launch records and calibration points (launch/records.h).
#include "launch/records.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "io/project_file.h"
#include "launch/accuracy.h"
#include "plan/plan_file.h"
#include "plan/simulate.h"

namespace tapestry::launch {

std::string target_not_measured(const plan::Plan &plan, const std::string &backend, const std::string &hardware) {
    const std::string nothing = "the " + backend + " backend does not measure target " + plan.target;
    // The host target is the CPU this process runs on (docs/targets.md); every
    // other built-in target is a GPU, measured by the cuda backend on that GPU: the
    // target's model ("h200" → H200, "h100-sxm" → H100) in the GPU's name.
    if (backend == "cpu") return plan.target == "host" ? std::string() : nothing;
    if (backend != "cuda" || plan.target.empty() || plan.target == "host") return nothing;
    std::string model = plan.target.substr(0, plan.target.find('-'));
    for (char &c : model) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (hardware.find(model) == std::string::npos) return nothing + " on " + hardware;
    // The GPUs the description counts: the number before each " × ".
    long long gpus = 0;
    for (size_t at = hardware.find(" × "); at != std::string::npos; at = hardware.find(" × ", at + 1)) {
        size_t digits = at;
        while (digits > 0 && std::isdigit(static_cast<unsigned char>(hardware[digits - 1]))) --digits;
        if (digits < at) gpus += std::stoll(hardware.substr(digits, std::min<size_t>(at - digits, 6)));
    }
    const auto devices = static_cast<long long>(plan.devices.size());
    if (gpus == 0 || devices <= gpus) return {};
    return "its " + std::to_string(devices) + " devices ran as virtual devices sharing " + std::to_string(gpus) +
           (gpus == 1 ? " GPU" : " GPUs") + ", contending for it, which target " + plan.target + " does not predict";
}

bool measures_plan_target(const plan::Plan &plan, const std::string &backend, const std::string &hardware) {
    return target_not_measured(plan, backend, hardware).empty();
}

std::optional<cost::KernelWork> step_work(const plan::Plan &plan, const plan::Step &s) {
    if (s.kind == plan::StepKind::kernel)
        return cost::KernelWork{cost::parse_kernel_class(s.kernel_class).value_or(cost::KernelClass::elementwise), s.dtype,
                                s.flops, s.bytes, s.op_kind, plan::step_shape(s)};
    const bool shared_copy = s.kind == plan::StepKind::send_recv && plan.cluster.shared_cores > 0 &&
                             plan.cluster.node_of(s.device) == plan.cluster.node_of(s.peer);
    // A copy, and a transfer between devices sharing the cores (a copy there), by its
    // shape, as the compiler predicts them (Model::copy_seconds, transfer_seconds).
    if (s.kind == plan::StepKind::copy || shared_copy)
        return cost::KernelWork{cost::KernelClass::copy, DType::f32, 0, 2 * s.bytes, "copy", plan::step_shape(s)};
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
                                calibration.factor(w->kernel_class, model.curve_size(*w), w->kernel, model.kernel_threads(),
                                                   w->dtype, w->shape)
                        : s.predicted);
    }
    return out;
}

plan::Prediction calibrated_prediction(const plan::Plan &plan, const cost::Model &model,
                                       const cost::Calibration &calibration) {
    const std::vector<double> durations = calibrated_durations(plan, model, calibration);
    if (plan.cluster.shared_cores <= 0 || calibration.wake_launches() == 0) return plan::simulate(plan, durations);
    plan::Plan woken = plan;
    woken.cluster.wake = calibration.wake();
    return plan::simulate(woken, durations);
}

WakeFit fit_wake(const std::vector<LaunchOfPlan> &launches) {
    struct Replay {
        plan::Plan plan;  // a copy whose wake is varied
        std::vector<double> durations;
        double wall = 0;
    };
    std::vector<Replay> replays;
    for (const LaunchOfPlan &l : launches) {
        if (!l.plan || !l.result || l.plan->cluster.shared_cores <= 0 || l.result->wall_seconds <= 0) continue;
        if (l.result->steps.size() != l.plan->steps.size()) continue;  // a launch that did not finish
        Replay r{*l.plan, std::vector<double>(l.plan->steps.size(), 0), l.result->wall_seconds};
        for (const MeasuredStep &m : l.result->steps)
            if (m.step >= 0 && static_cast<size_t>(m.step) < r.durations.size())
                r.durations[static_cast<size_t>(m.step)] = std::max(0.0, m.end - m.start);
        replays.push_back(std::move(r));
    }
    WakeFit fit;
    fit.launches = static_cast<int>(replays.size());
    if (replays.empty()) return fit;
    // The mean |log(replay / wall)| over the launches for one wake: smooth where
    // the median is flat, and an over- and an under-estimate by one factor weigh alike.
    auto cost_of = [&](double wake, double *median_error) {
        std::vector<double> sim, wall;
        double sum = 0;
        for (Replay &r : replays) {
            r.plan.cluster.wake = wake;
            const double m = plan::simulate(r.plan, r.durations).makespan;
            sim.push_back(m);
            wall.push_back(r.wall);
            sum += m > 0 ? std::abs(std::log(m / r.wall)) : 1;
        }
        if (median_error) *median_error = median_relative_error(sim, wall);
        return sum / static_cast<double>(replays.size());
    };
    double best = cost_of(0, &fit.error_before), best_wake = 0;
    fit.error_after = fit.error_before;
    // 1 µs to 10 ms, 40 steps a decade.
    for (double wake = 1e-6; wake <= 1e-2; wake *= std::pow(10.0, 1.0 / 40)) {
        double error = 0;
        const double c = cost_of(wake, &error);
        if (c < best) {
            best = c;
            best_wake = wake;
            fit.error_after = error;
        }
    }
    fit.seconds = best_wake;
    return fit;
}

Expected<WakeFit, std::string> session_wake(const store::Session &session, const std::string &target, int limit) {
    auto records = session.calibrating_launches(target, limit);
    if (!records) return unexpected("reading the launches of " + target + ": " + records.error().message);
    std::vector<plan::Plan> plans;
    std::vector<LaunchResult> results;
    plans.reserve(records->size());
    results.reserve(records->size());
    // plan id → index in plans, or kNoWake for a plan of devices with cores of their
    // own (no wake to learn), so each plan is read and parsed once.
    constexpr size_t kNoWake = static_cast<size_t>(-1);
    std::map<store::PlanId, size_t> parsed;
    std::vector<std::pair<size_t, size_t>> pairs;
    for (const store::LaunchRecord &r : *records) {
        auto at = parsed.find(r.plan_id);
        if (at == parsed.end()) {
            auto text = session.load_plan_json(r.plan_id);
            if (!text) return unexpected("reading plan " + std::to_string(r.plan_id) + ": " + text.error().message);
            auto p = plan::parse_plan(*text, "plan " + std::to_string(r.plan_id));
            if (!p) return unexpected(p.error());
            const bool shared = p->cluster.shared_cores > 0;
            at = parsed.emplace(r.plan_id, shared ? plans.size() : kNoWake).first;
            if (shared) plans.push_back(std::move(p).value());
        }
        if (at->second == kNoWake) continue;
        auto steps = session.step_measurements(r.id);
        if (!steps) return unexpected("reading launch " + std::to_string(r.id) + ": " + steps.error().message);
        LaunchResult l;
        for (const store::StepMeasurement &m : *steps) l.steps.push_back(MeasuredStep{m.step, m.start_seconds, m.end_seconds});
        const auto j = nlohmann::json::parse(r.measurements_json, nullptr, false);
        if (j.is_object() && j.contains("wall_seconds") && j["wall_seconds"].is_number())
            l.wall_seconds = j["wall_seconds"].get<double>();
        results.push_back(std::move(l));
        pairs.emplace_back(at->second, results.size() - 1);
    }
    std::vector<LaunchOfPlan> launches;
    for (const auto &[p, l] : pairs) launches.push_back({&plans[p], &results[l]});
    return fit_wake(launches);
}

Expected<cost::Calibration, std::string> session_calibration(const store::Session &session, const cost::Target &target) {
    auto rows = session.calibration(target.name);
    if (!rows) return unexpected("reading the calibration of " + target.name + ": " + rows.error().message);
    WakeFit wake;
    if (target.kind == "cpu") {
        auto fitted = session_wake(session, target.name);
        if (!fitted) return unexpected(fitted.error());
        wake = *fitted;
    }
    return cost::Calibration::of(calibration_samples(*rows), wake.seconds, wake.launches);
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
                                              model.kernel_threads(),
                                              w->kernel.empty() ? std::nullopt : std::optional<DType>(w->dtype), w->shape});
    }
    return out;
}

std::vector<cost::CalibrationSample> calibration_samples(const std::vector<store::CalibrationRow> &rows) {
    std::vector<cost::CalibrationSample> out;
    out.reserve(rows.size());
    for (const store::CalibrationRow &r : rows)
        if (const auto c = cost::parse_kernel_class(r.kernel_class))
            out.push_back(cost::CalibrationSample{*c, r.size, r.predicted_seconds, r.measured_seconds, r.kernel, r.threads,
                                                  parse_dtype(r.dtype), r.shape});
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

namespace {

// The one-line summary a plan record keeps: its pass and options ("place shard").
std::string summary_line(const plan::Plan &plan) {
    return plan.source.options.empty() ? plan.source.pass : plan.source.pass + " " + plan.source.options;
}

}  // namespace

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
        rec.summary = summary_line(plan);
        rec.makespan_seconds = p.makespan;
        rec.peak_bytes = p.peak;
        auto saved = session.save_plan(rec, plan::plan_json(plan, &p));
        if (!saved) return unexpected("keeping the plan: " + saved.error().message);
        out.plan_id = saved->id;
    }
    store::LaunchRecord rec = launch_record(result, check, result.started_at, result.finished_at);
    rec.plan_id = out.plan_id;
    auto recorded = session.record_launch(rec, step_measurements(plan, result));
    if (!recorded) return unexpected("keeping the launch: " + recorded.error().message);
    out.launch_id = recorded->id;
    if (model && measures_plan_target(plan, result.backend, result.hardware)) {
        std::vector<store::CalibrationRow> rows;
        for (const cost::CalibrationSample &s : calibration_samples(plan, *model, result))
            rows.push_back(store::CalibrationRow{cost::kernel_class_name(s.kernel_class), s.size, s.predicted,
                                                 s.measured, out.launch_id, {}, s.kernel, s.threads,
                                                 s.dtype ? std::string(dtype_name(*s.dtype)) : std::string(), s.shape});
        if (!rows.empty()) {
            auto added = session.add_calibration(plan.target, rows);
            if (!added) return unexpected("keeping the calibration points: " + added.error().message);
        }
        out.calibration_points = static_cast<int>(rows.size());
    }
    return out;
}

namespace {

// A plan file's JSON less its provenance (find_saved_plan).
nlohmann::json without_provenance(const std::string &text) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object() && j.contains("source") && j["source"].is_object()) j["source"].erase("project");
    return j;
}

}  // namespace

Expected<store::PlanId, std::string> find_saved_plan(const store::Session &session, store::ProjectId project,
                                                     const plan::Plan &plan) {
    auto records = session.plans(project);
    if (!records) return unexpected(records.error().message);
    // The record's fields as record_launch fills them; the JSON (large) only for those that agree.
    const plan::Prediction predicted = plan::simulate(plan);
    const std::string summary = summary_line(plan);
    std::string text;  // the saved form of `plan`, made when a candidate needs it
    std::optional<nlohmann::json> parsed;
    for (auto r = records->rbegin(); r != records->rend(); ++r) {
        if (r->target != plan.target || r->devices != static_cast<int>(plan.devices.size()) ||
            r->summary != summary || r->peak_bytes != predicted.peak)
            continue;
        auto saved = session.load_plan_json(r->id);
        if (!saved) return unexpected(saved.error().message);
        if (text.empty()) text = plan::plan_json(plan, &predicted);
        if (*saved == text) return r->id;
        if (!parsed) parsed = without_provenance(text);
        if (without_provenance(*saved) == *parsed) return r->id;
    }
    return store::PlanId{0};
}

std::string launched_plans_project(const plan::Plan &plan) {
    return plan.graph.name + " (launched plans)";
}

Expected<store::ProjectId, std::string> find_launched_plans_project(const store::Session &session,
                                                                    const plan::Plan &plan) {
    auto found = store::find_project(session, launched_plans_project(plan));
    if (!found) return unexpected(found.error().message);
    return *found;
}

Expected<RecordedLaunch, std::string> record_plan_file_launch(store::Session &session, const plan::Plan &plan,
                                                              const LaunchResult &result, const LaunchCheck *check,
                                                              const cost::Model *model) {
    auto found = find_launched_plans_project(session, plan);
    if (!found) return unexpected(found.error());
    store::ProjectId project = *found;
    if (project != 0) {
        // Launched before: the launch joins that plan's history.
        auto same = find_saved_plan(session, project, plan);
        if (!same) return unexpected(same.error());
        if (*same != 0) return record_launch(session, 0, std::nullopt, *same, plan, result, check, model);
    } else {
        auto made = session.create_project(launched_plans_project(plan));
        if (!made) return unexpected(made.error().message);
        project = *made;
    }
    // A new plan: on the project's latest version when that is the plan's graph, else on a new one.
    auto version = store::version_of_graph(session, project, plan.graph, "import");
    if (!version) return unexpected(version.error().message);
    return record_launch(session, *version, std::nullopt, std::nullopt, plan, result, check, model);
}

}  // namespace tapestry::launch
