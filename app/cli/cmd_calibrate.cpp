// `tapestry calibrate PROJECT…`: launches plans of the projects on the cpu
// backend for the host target — every device count asked × round-robin and the
// four baselines — checks each against its reference, and fits the cost model's
// calibration table from the measured kernel and copy steps: per kernel class
// and size band, the median of measured / predicted. Prints the table and the
// error before and after; with --session keeps every launch and its points, so
// `tapestry plan --target host --session S` predicts from them. docs/launch.md.
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_support.h"
#include "io/random_inputs.h"
#include "launch/accuracy.h"
#include "launch/check.h"
#include "launch/cpu_backend.h"
#include "launch/launch.h"
#include "launch/records.h"
#include "launch_support.h"
#include "plan/planner.h"
#include "run_support.h"
#include "target_support.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

struct CalibrateOptions {
    std::vector<std::string> projects;
    std::string target = "host";
    std::vector<int> devices{1, 2, 4};
    std::string session;
    std::uint64_t seed = 0;
    int threads = 2;  // measuring the host
    bool remeasure = false;
    bool json = false;
};

// A plan's makespan simulated with its kernel and copy steps scaled by `cal`
// (transfers and collectives as predicted).
double calibrated_makespan(const plan::Plan &p, const cost::Model &model, const cost::Calibration &cal) {
    return plan::simulate(p, launch::calibrated_durations(p, model, cal)).makespan;
}

std::string percent(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", v * 100);
    return buf;
}

std::string band_text(int band, bool by_flops) {
    return "1e" + std::to_string(band) + "–1e" + std::to_string(band + 1) + (by_flops ? " FLOP" : " B");
}

int calibrate_command(const CalibrateOptions &o) {
    auto target = resolve_target(o.target, o.threads, o.session, o.remeasure);
    if (!target) {
        std::cerr << "tapestry: --target " << o.target << ": " << target.error() << "\n";
        return kExitUsage;
    }
    if (target->name != "host") {
        std::cerr << "tapestry: --target " << o.target << ": the cpu backend measures the host only; target '"
                  << target->name << "' needs a launch on its own hardware\n";
        return kExitUsage;
    }
    struct Launched {
        std::string what;
        double predicted = 0, calibrated = 0, measured = 0;
        plan::Plan plan;
    };
    std::vector<Launched> launched;
    std::vector<cost::CalibrationSample> samples;
    std::vector<std::string> refused, failed;
    ProgressBar bar(!o.json);
    int done = 0;
    const int total = static_cast<int>(o.projects.size() * o.devices.size() * 5);
    for (const std::string &file : o.projects) {
        PreparedRun prepared = prepare_run(file, "", o.seed);
        if (!report_preparation(file, prepared, o.json)) return kExitInvalid;
        for (int n : o.devices)
            for (int b = -1; b < 4; ++b) {
                bar.update("calibrate", done++, total);
                plan::PlanRequest req;
                req.target = *target;
                req.devices = n;
                if (b >= 0) req.baseline = static_cast<plan::Baseline>(b);
                else req.placement = "round-robin";
                const std::string what = file + " on " + std::to_string(n) + " " +
                                         (b >= 0 ? plan::baseline_name(static_cast<plan::Baseline>(b)) : std::string("round-robin"));
                auto r = plan::make_plan(*prepared.graph, req);
                if (!r) {
                    refused.push_back(what + ": " + r.error());
                    continue;
                }
                auto backend = launch::make_cpu_backend();
                const auto inputs = make_random_inputs(r->plan.graph, o.seed);
                auto result = launch::launch_plan(r->plan, *backend, inputs);
                if (!result || !result->ok()) {
                    failed.push_back(what + ": " + (result ? result->fault.message : result.error()));
                    continue;
                }
                auto check = launch::check_outputs(r->plan, inputs, result->outputs);
                if (!check || !check->pass()) {
                    failed.push_back(what + ": outputs: " + (check ? check->summary() : check.error()));
                    continue;
                }
                const cost::Model model(*target, r->plan.cluster);
                for (const cost::CalibrationSample &s : launch::calibration_samples(r->plan, model, *result)) samples.push_back(s);
                if (!o.session.empty()) {
                    auto kept = keep_launch(o.session, r->plan, *result, &*check);
                    if (!kept) failed.push_back(what + ": " + kept.error());
                }
                launched.push_back(Launched{what, r->prediction.makespan, 0, result->wall_seconds, std::move(r->plan)});
            }
    }
    bar.clear();
    cost::Calibration cal;
    for (const cost::CalibrationSample &s : samples) cal.add(s);
    const cost::CalibrationError err = cal.error();
    std::vector<double> predicted, calibrated, measured;
    for (Launched &l : launched) {
        l.calibrated = calibrated_makespan(l.plan, cost::Model(*target, l.plan.cluster), cal);
        predicted.push_back(l.predicted);
        calibrated.push_back(l.calibrated);
        measured.push_back(l.measured);
    }
    const double tau_before = launch::kendall_tau(predicted, measured), tau_after = launch::kendall_tau(calibrated, measured);
    const double plan_before = launch::median_relative_error(predicted, measured);
    const double plan_after = launch::median_relative_error(calibrated, measured);

    const auto table = cal.table();
    if (o.json) {
        ordered_json j;
        j["target"] = target->name;
        j["plans_launched"] = launched.size();
        j["refused"] = refused;
        j["failed"] = failed;
        j["steps"] = {{"measurements", err.samples}, {"median_error_uncalibrated", err.median_before},
                      {"median_error_calibrated", err.median_after}, {"in_sample", true}};
        j["plans"] = {{"kendall_tau_uncalibrated", tau_before}, {"kendall_tau_calibrated", tau_after},
                      {"median_error_uncalibrated", plan_before}, {"median_error_calibrated", plan_after}};
        j["table"] = ordered_json::array();
        for (const auto &[key, value] : table)
            j["table"].push_back({{"kernel_class", cost::kernel_class_name(static_cast<cost::KernelClass>(key.first))},
                                  {"band", key.second}, {"factor", value.first}, {"samples", value.second}});
        if (!o.session.empty()) j["session"] = o.session;
        print_json(j);
        return failed.empty() && !launched.empty() ? kExitOk : kExitInvalid;
    }
    std::cout << "calibrate: target " << target->name << ", " << plural(static_cast<long long>(o.projects.size()), "project")
              << " × devices";
    for (size_t i = 0; i < o.devices.size(); ++i) std::cout << (i ? "," : " ") << o.devices[i];
    std::cout << " × round-robin and 4 baselines: " << plural(static_cast<long long>(launched.size()), "plan")
              << " launched, outputs equal to the reference; " << refused.size() << " refused as not fitting, "
              << failed.size() << " failed\n";
    for (const std::string &f : failed) std::cout << "  FAILED " << f << "\n";
    std::cout << "  per step (kernels and copies): " << err.samples << " measurements, median |predicted − measured| / "
              << "measured " << percent(err.median_before) << " uncalibrated → " << percent(err.median_after)
              << " calibrated (the points it was fitted on)\n"
              << "  per plan (step time): median error " << percent(plan_before) << " → " << percent(plan_after)
              << ", Kendall τ between predicted and measured " << formatted(tau_before, "%.2f") << " → "
              << formatted(tau_after, "%.2f") << "\n";
    std::vector<std::vector<std::string>> rows{{"class", "size", "samples", "measured / predicted"}};
    for (const auto &[key, value] : table) {
        const auto c = static_cast<cost::KernelClass>(key.first);
        rows.push_back({cost::kernel_class_name(c),
                        band_text(key.second, target->device.efficiency[static_cast<size_t>(c)].by_flops),
                        std::to_string(value.second), formatted(value.first, "%.2f")});
    }
    print_table(rows, "  ");
    if (!o.session.empty()) std::cout << "  kept in " << o.session << ": every launch, its steps and its points\n";
    return failed.empty() && !launched.empty() ? kExitOk : kExitInvalid;
}

}  // namespace

void add_calibrate_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<CalibrateOptions>();
    CLI::App *cmd = app.add_subcommand(
        "calibrate",
        "Launch plans of the projects on the cpu backend for the host target (each device count × round-robin and "
        "the four baselines), check them, and fit the cost model's calibration from the measured steps; prints the "
        "table and the error before and after.");
    cmd->add_option("PROJECT", o->projects, "Project files (*.tapestry.json)")->required();
    cmd->add_option("--target", o->target, "The target to calibrate (the cpu backend measures the host)")->capture_default_str();
    cmd->add_option("--devices", o->devices, "Device counts of the plans")->delimiter(',')->check(CLI::Range(1, 64))->capture_default_str();
    cmd->add_option("--session", o->session, "Keep every launch and its calibration points in this session (and the host's measurement)");
    cmd->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
    cmd->add_option("--threads", o->threads, "Threads for measuring the host")->check(CLI::Range(1, 256))->capture_default_str();
    cmd->add_flag("--remeasure", o->remeasure, "Measure the host again even if the session has a measurement");
    cmd->add_flag("--json", o->json, "Print the result as JSON");
    cmd->footer("Exit codes: 0 every plan launched and checked, 1 a project is bad or a launch failed, 2 usage error.");
    cmd->callback([o, &action] { action = [o] { return calibrate_command(*o); }; });
}

}  // namespace tapestry::cli
