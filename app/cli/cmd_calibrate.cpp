// `tapestry calibrate PROJECT…`: launches plans of the projects on the cpu
// backend for the host target — every device count asked × round-robin and the
// four baselines — checks each against its reference, and fits the cost model's
// calibration table from the measured kernel and copy steps: per kernel class
// and size band, the median of measured / predicted. Prints the table and the
// error before and after; with --session keeps every launch and its points, so
// `tapestry plan --target host --session S` predicts from them. docs/launch.md.
//
// `tapestry calibrate --gpu-results RESULTS.jsonl --pack PACK`: the same fit for
// a GPU target from what tapestry-gpu-check measured on a lent machine — each
// passing case's plan from the pack, its steps' measured durations from the
// results — with the error in-sample and held out (docs/launch.md,
// "Calibrating a GPU target from a device run").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "cli_support.h"
#include "io/random_inputs.h"
#include "launch/accuracy.h"
#include "launch/check.h"
#include "launch/cpu_backend.h"
#include "launch/launch.h"
#include "launch/records.h"
#include "launch_support.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "plan/simulate.h"
#include "run_support.h"
#include "target_support.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

struct CalibrateOptions {
    std::vector<std::string> projects;
    std::vector<std::string> gpu_results;  // tapestry-gpu-check's results.jsonl (and bench/results.jsonl)
    bool target_given = false;  // --target on the command line (with --gpu-results: re-predict the plans for it)
    std::string pack;         // the tapestry-gpu-pack it ran
    std::string target = "host";
    std::vector<int> devices{1, 2, 4};
    std::string session;
    std::uint64_t seed = 0;
    int threads = 2;  // measuring the host
    bool remeasure = false;
    bool json = false;
    int worst = 0;  // --gpu-results: the held-out steps the fit misses most, listed
};

std::string percent(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", v * 100);
    return buf;
}

std::string band_text(int band, bool by_flops) {
    return "1e" + std::to_string(band) + "–1e" + std::to_string(band + 1) + (by_flops ? " FLOP" : " B");
}

// The calibration table as printed: per class and size band its own row (every
// kernel, every thread count), then the finest rows (a kernel in a dtype on a
// thread count; "—" threads: a GPU's, or not known), by kernel; a kernel's
// every-dtype row only where it adds to its dtype rows (several dtypes, or points
// kept before dtypes were); a row of fewer points than a group needs to count
// says so. The JSON has the groups in between too.
std::vector<std::vector<std::string>> table_rows(const cost::Calibration &cal, const cost::Target &target) {
    std::vector<std::vector<std::string>> rows{
        {"class", "size", "kernel", "dtype", "threads", "samples", "measured / predicted"}};
    std::vector<cost::CalibrationEntry> entries = cal.table();
    std::stable_sort(entries.begin(), entries.end(), [](const cost::CalibrationEntry &a, const cost::CalibrationEntry &b) {
        return std::tie(a.kernel_class, a.band, a.kernel, a.threads, a.dtype) <
               std::tie(b.kernel_class, b.band, b.kernel, b.threads, b.dtype);
    });
    auto same_group = [](const cost::CalibrationEntry &a, const cost::CalibrationEntry &b) {
        return a.kernel_class == b.kernel_class && a.band == b.band && a.kernel == b.kernel && a.threads == b.threads;
    };
    for (size_t i = 0; i < entries.size(); ++i) {
        const cost::CalibrationEntry &e = entries[i];
        const bool band_row = e.threads < 0 && e.kernel.empty();
        if (!band_row && (e.threads < 0 || e.kernel.empty())) continue;
        if (!band_row && !e.dtype) {  // sorted first of its group: its dtype rows follow
            size_t typed = 0;
            int typed_samples = 0;
            for (size_t j = i + 1; j < entries.size() && same_group(entries[j], e); ++j) {
                ++typed;
                typed_samples += entries[j].samples;
            }
            if (typed == 1 && typed_samples == e.samples) continue;
        }
        const bool counts = band_row || e.samples >= static_cast<int>(cost::Calibration::kMinGroupSamples);
        rows.push_back({cost::kernel_class_name(e.kernel_class),
                        band_text(e.band, target.device.efficiency[static_cast<size_t>(e.kernel_class)].by_flops),
                        band_row ? "every" : e.kernel, e.dtype ? std::string(dtype_name(*e.dtype)) : "every",
                        band_row ? "every" : e.threads > 0 ? std::to_string(e.threads) : "—",
                        std::to_string(e.samples) + (counts ? "" : " (too few to count)"), formatted(e.factor, "%.2f")});
    }
    return rows;
}

ordered_json table_json(const cost::Calibration &cal) {
    ordered_json out = ordered_json::array();
    for (const cost::CalibrationEntry &e : cal.table())
        out.push_back({{"kernel_class", cost::kernel_class_name(e.kernel_class)}, {"band", e.band},
                       {"kernel", e.kernel}, {"dtype", e.dtype ? ordered_json(dtype_name(*e.dtype)) : ordered_json(nullptr)},
                       {"threads", e.threads}, {"factor", e.factor}, {"samples", e.samples},
                       {"counts", (e.threads < 0 && e.kernel.empty()) ||
                                      e.samples >= static_cast<int>(cost::Calibration::kMinGroupSamples)}});
    return out;
}

int calibrate_on_host(const CalibrateOptions &o) {
    // Ctrl-C ends the launch under way and fits what ran before it (from the
    // start: one while the host is measured stops before the first launch).
    InterruptGuard interrupt;
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
        launch::LaunchResult result;
    };
    std::vector<Launched> launched;
    std::vector<cost::CalibrationSample> samples;
    std::vector<std::string> refused, failed;
    ProgressBar bar(!o.json);
    int done = 0;
    const int total = static_cast<int>(o.projects.size() * o.devices.size() * 5);
    // The process's first launch also warms it (the allocator's pages, the
    // kernels' first runs take 2–4× their later time): it runs once more, uncounted.
    bool warmed = false;
    launch::LaunchOptions lo;
    lo.cancelled = [] { return InterruptGuard::interrupted(); };
    for (const std::string &file : o.projects) {
        if (InterruptGuard::interrupted()) break;
        PreparedRun prepared = prepare_run(file, "", o.seed);
        if (!report_preparation(file, prepared, o.json)) return kExitInvalid;
        for (int n : o.devices)
            for (int b = -1; b < 4 && !InterruptGuard::interrupted(); ++b) {
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
                if (!warmed) {
                    (void)launch::launch_plan(r->plan, *backend, inputs, lo);  // a fault shows in the counted launch
                    warmed = true;
                }
                auto result = launch::launch_plan(r->plan, *backend, inputs, lo);
                if (InterruptGuard::interrupted()) break;  // not a failure: the user stopped it
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
                launched.push_back(
                    Launched{what, r->prediction.makespan, 0, result->wall_seconds, std::move(r->plan), std::move(*result)});
            }
    }
    bar.clear();
    const bool interrupted = InterruptGuard::interrupted();
    interrupt.release();
    cost::Calibration cal;
    for (const cost::CalibrationSample &s : samples) cal.add(s);
    const cost::CalibrationError err = cal.error();
    std::vector<launch::LaunchOfPlan> of_plans;
    for (const Launched &l : launched) of_plans.push_back({&l.plan, &l.result});
    const launch::WakeFit wake = launch::fit_wake(of_plans);
    cal.set_wake(wake.seconds, wake.launches);
    std::vector<double> predicted, calibrated, measured;
    for (Launched &l : launched) {
        l.calibrated = launch::calibrated_prediction(l.plan, cost::Model(*target, l.plan.cluster), cal).makespan;
        predicted.push_back(l.predicted);
        calibrated.push_back(l.calibrated);
        measured.push_back(l.measured);
    }
    const double tau_before = launch::kendall_tau(predicted, measured), tau_after = launch::kendall_tau(calibrated, measured);
    const double plan_before = launch::median_relative_error(predicted, measured);
    const double plan_after = launch::median_relative_error(calibrated, measured);

    if (o.json) {
        ordered_json j;
        j["target"] = target->name;
        j["plans_launched"] = launched.size();
        j["interrupted"] = interrupted;
        j["refused"] = refused;
        j["failed"] = failed;
        j["steps"] = {{"measurements", err.samples}, {"median_error_uncalibrated", err.median_before},
                      {"median_error_calibrated", err.median_after}, {"in_sample", true}};
        j["plans"] = {{"kendall_tau_uncalibrated", tau_before}, {"kendall_tau_calibrated", tau_after},
                      {"median_error_uncalibrated", plan_before}, {"median_error_calibrated", plan_after}};
        j["wake"] = {{"seconds", wake.seconds}, {"launches", wake.launches},
                     {"median_error_replayed_without", wake.error_before}, {"median_error_replayed_with", wake.error_after}};
        j["table"] = table_json(cal);
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
    if (interrupted)
        std::cout << "  interrupted (Ctrl-C) after " << plural(static_cast<long long>(launched.size()), "plan") << " of "
                  << total << ": the figures below are of those\n";
    for (const std::string &f : failed) std::cout << "  FAILED " << f << "\n";
    std::cout << "  per step (kernels and copies): " << err.samples << " measurements, median |predicted − measured| / "
              << "measured " << percent(err.median_before) << " uncalibrated → " << percent(err.median_after)
              << " calibrated (the points it was fitted on)\n"
              << "  per plan (step time): median error " << percent(plan_before) << " → " << percent(plan_after)
              << ", Kendall τ between predicted and measured " << formatted(tau_before, "%.2f") << " → "
              << formatted(tau_after, "%.2f") << "\n";
    if (wake.launches > 0)
        std::cout << "  wake (a step waiting for a core starts this long after its release): "
                  << plan::seconds_text(wake.seconds) << ", fitted on " << wake.launches
                  << (wake.launches == 1 ? " launch" : " launches") << " of devices sharing the cores (their own steps replayed against their walls: median error "
                  << percent(wake.error_before) << " → " << percent(wake.error_after) << ")\n";
    print_table(table_rows(cal, *target), "  ");
    if (cal.calibrated_shapes() > 0)
        std::cout << "  and " << plural(cal.calibrated_shapes(), "exact kernel shape")
                  << " with 3 or more points, each predicted at its own measured rate (docs/cost-model.md)\n";
    if (!o.session.empty()) std::cout << "  kept in " << o.session << ": every launch, its steps and its points\n";
    return failed.empty() && !launched.empty() ? kExitOk : kExitInvalid;
}

// ---- From a device run: tapestry-gpu-check's results and the pack it ran ----------

namespace fs = std::filesystem;

// A case of the pack as its manifest names it.
struct PackCase {
    std::string plan;   // the plan file, relative to the pack
    // "kernel", "example", "size" (one op of a benchmark at its own size: timed,
    // not checked, fitted), "benchmark" (judged, never fitted)
    std::string group;
    int example = -1;   // its number among the pack's example cases (manifest order), from 0
};

// A passing case as the device ran it: its plan, and a launch rebuilt from the
// measured step durations.
struct DeviceCase {
    std::string name, group;
    int example = -1;
    plan::Plan plan;
    launch::LaunchResult result;
    // A size case's every timed run ("steps_runs"), each a measurement of its one
    // op at its shape; empty where the results keep only the median run's steps.
    std::vector<launch::LaunchResult> runs;
    double enqueued = -1;  // seconds of the whole plan enqueued without host synchronisation; -1: not measured
};

struct DeviceRun {
    std::string gpu;       // "NVIDIA H200"
    std::string hardware;  // as the cuda backend describes it
    std::string target;    // the plans' target
    std::vector<DeviceCase> cases;
    std::vector<std::string> failed;  // cases that failed on the device: not used
    int without_result = 0;           // cases of the pack the results do not hold
    int gpus = 0;                     // GPUs the environment record names
    // Plans of more devices than GPUs: run as virtual devices sharing one GPU, their
    // steps contending for it — a measurement of no target's device: not used.
    std::vector<std::string> shared;
};

std::string text_field(const ordered_json &j, const char *key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Expected<std::map<std::string, PackCase>, std::string> read_manifest(const std::string &pack) {
    const std::string file = (fs::path(pack) / "manifest.json").string();
    std::ifstream in(file);
    if (!in) return unexpected(file + ": cannot be read (is " + pack + " a pack made by tapestry-gpu-pack?)");
    const ordered_json m = ordered_json::parse(in, nullptr, false);
    if (m.is_discarded() || !m.is_object()) return unexpected(file + ": not JSON");
    if (text_field(m, "format") != "tapestry-gpu-pack") return unexpected(file + ": not a tapestry-gpu-pack manifest");
    const auto cases = m.find("cases");
    if (cases == m.end() || !cases->is_array()) return unexpected(file + ": cases: not an array");
    std::map<std::string, PackCase> out;
    int examples = 0;
    for (size_t i = 0; i < cases->size(); ++i) {
        const ordered_json &c = (*cases)[i];
        PackCase pc;
        const std::string name = c.is_object() ? text_field(c, "name") : std::string();
        pc.plan = c.is_object() ? text_field(c, "plan") : std::string();
        if (name.empty() || pc.plan.empty())
            return unexpected(file + ": cases[" + std::to_string(i) + "]: a case needs a name and a plan");
        pc.group = text_field(c, "group");
        if (pc.group == "example") pc.example = examples++;
        out[name] = std::move(pc);
    }
    // Timed plans without references: the benchmarks, and the single ops of their
    // sizes ("sizes", tapestry-gpu-pack).
    for (const auto &[list, group] : {std::pair<const char *, const char *>{"benchmarks", "benchmark"}, {"sizes", "size"}}) {
        const auto timed = m.find(list);
        if (timed == m.end() || !timed->is_array()) continue;
        for (size_t i = 0; i < timed->size(); ++i) {
            const ordered_json &b = (*timed)[i];
            const std::string name = b.is_object() ? text_field(b, "name") : std::string();
            const std::string plan = b.is_object() ? text_field(b, "plan") : std::string();
            if (name.empty() || plan.empty())
                return unexpected(file + ": " + list + "[" + std::to_string(i) + "]: an entry needs a name and a plan");
            out[name] = PackCase{plan, group, -1};
        }
    }
    return out;
}

// The GPU's description as the cuda backend gives it (Backend::describe), from an
// "environment" record; "" when it names no GPU.
std::string environment_hardware(const ordered_json &env, std::string &gpu) {
    const auto gpus = env.find("gpus");
    if (gpus == env.end() || !gpus->is_array() || gpus->empty()) return {};
    std::map<std::string, int> names;
    for (const ordered_json &g : *gpus) {
        if (!g.is_object() || text_field(g, "name").empty()) return {};
        std::string cc = text_field(g, "cc");
        cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
        const auto memory = g.find("memory_bytes");
        names[text_field(g, "name") + " (sm_" + cc + ", " +
              human_bytes(memory != g.end() && memory->is_number() ? memory->get<double>() : 0) + ")"]++;
    }
    gpu = text_field((*gpus)[0], "name");
    std::string out = "cuda:";
    for (const auto &[n, k] : names) out += " " + std::to_string(k) + " × " + n;
    return out;
}

// A steps array's measured durations, checked against its plan's steps: the same
// number, each of the same kind and operation.
Expected<std::vector<double>, std::string> step_durations(const ordered_json &steps, const plan::Plan &p,
                                                          const std::string &plan_file) {
    if (!steps.is_array()) return unexpected(std::string("a steps entry that is not an array"));
    if (steps.size() != p.steps.size())
        return unexpected("has " + plural(static_cast<long long>(steps.size()), "step") + ", its plan " + plan_file + " " +
                          std::to_string(p.steps.size()) + ": the results of another pack?");
    std::vector<double> out;
    for (size_t i = 0; i < steps.size(); ++i) {
        const ordered_json &s = steps[i];
        const std::string where = "steps[" + std::to_string(i) + "]";
        const auto measured = s.is_object() ? s.find("measured_s") : s.end();
        if (measured == s.end() || !measured->is_number() || measured->get<double>() < 0)
            return unexpected(where + ": no measured_s (seconds, ≥ 0)");
        const plan::Step &ps = p.steps[i];
        if (text_field(s, "kind") != plan::step_kind_name(ps.kind) || text_field(s, "op") != ps.op)
            return unexpected(where + " is " + text_field(s, "kind") + " '" + text_field(s, "op") + "', step " +
                              std::to_string(i) + " of its plan " + plan_file + " " + plan::step_kind_name(ps.kind) +
                              " '" + ps.op + "': the results of another pack?");
        out.push_back(measured->get<double>());
    }
    return out;
}

// A case's measured step durations: the warm ones where the record has them
// ("steps_warm": the plan enqueued again after its launch, whose steps each waited
// for the host — and, in results of a backend before the warm-up in prepare,
// loaded kernels; behind the gate where the results say "warm_submission":
// "gated", so each is the GPU's time alone), else the launch's.
Expected<std::vector<double>, std::string> measured_durations(const ordered_json &rec, const plan::Plan &p,
                                                              const std::string &plan_file) {
    auto steps = rec.find("steps_warm");
    if (steps == rec.end() || !steps->is_array()) steps = rec.find("steps");
    if (steps == rec.end() || !steps->is_array()) return unexpected(std::string("no steps array"));
    return step_durations(*steps, p, plan_file);
}

// A launch as the cuda backend would have reported it: the steps with their
// measured durations, placed as the plan's schedule places them (the results keep
// durations only; calibration reads nothing else).
launch::LaunchResult rebuilt_launch(const plan::Plan &p, const std::vector<double> &durations, const std::string &hardware,
                                    const ordered_json &rec) {
    launch::LaunchResult r;
    r.backend = "cuda";
    r.hardware = hardware;
    r.status = "ok";
    const plan::Prediction placed = plan::simulate(p, durations);
    for (size_t i = 0; i < p.steps.size(); ++i)
        r.steps.push_back(launch::MeasuredStep{static_cast<int>(i), placed.steps[i].start,
                                               placed.steps[i].start + durations[i], p.steps[i].predicted, 0, 0});
    const auto wall = rec.find("launch_wall_s");
    r.wall_seconds = wall != rec.end() && wall->is_number() ? wall->get<double>() : placed.makespan;
    r.predicted_makespan = plan::simulate(p).makespan;
    return r;
}

// A pack's plan taken as a plan for another GPU target (a pack is made for one
// target before it is known which GPU a device session gets): the same steps,
// devices and buffers, each kernel and copy step predicted again by `target`'s
// model, the cluster's links kept (on one GPU a plan's transfers are device-to-device
// copies whatever the cluster says).
void retargeted(plan::Plan &p, const cost::Target &target) {
    p.target = target.name;
    const std::vector<double> predicted = launch::calibrated_durations(p, cost::Model(target, p.cluster), {});
    for (size_t i = 0; i < p.steps.size(); ++i) p.steps[i].predicted = predicted[i];
}

// One line of the results: the case it holds (none for a case that failed on
// the device or a record of another kind), or why it is refused.
Expected<std::optional<DeviceCase>, std::string> read_case(const ordered_json &rec, const std::string &pack,
                                                           const std::map<std::string, PackCase> &manifest,
                                                           const cost::Target *retarget, DeviceRun &run) {
    const std::string name = text_field(rec, "name");
    if (name.empty()) return unexpected(std::string("a case record without a name"));
    const auto in_pack = manifest.find(name);
    if (in_pack == manifest.end())
        return unexpected("case '" + name + "' is not in " + (fs::path(pack) / "manifest.json").string() +
                          ": the results of another pack?");
    // Timed without a reference: no "ok", an "error" when it did not run.
    const bool benchmark = in_pack->second.group == "benchmark" || in_pack->second.group == "size";
    const auto ok = rec.find("ok");
    if (!benchmark && (ok == rec.end() || !ok->is_boolean())) return unexpected("case '" + name + "': no \"ok\"");
    if (benchmark ? rec.contains("error") : !ok->get<bool>()) {
        run.failed.push_back(name);
        return std::optional<DeviceCase>();
    }
    if (run.hardware.empty())
        return unexpected("case '" + name + "' comes before any environment record naming the GPU that ran it");
    const std::string plan_file = (fs::path(pack) / in_pack->second.plan).string();
    auto loaded = plan::load_plan(plan_file);
    if (!loaded) return unexpected("case '" + name + "': its plan: " + loaded.error());
    if (run.gpus > 0 && static_cast<int>(loaded->devices.size()) > run.gpus) {
        run.shared.push_back(name);
        return std::optional<DeviceCase>();
    }
    if (retarget != nullptr) retargeted(*loaded, *retarget);
    auto durations = measured_durations(rec, *loaded, plan_file);
    if (!durations) return unexpected("case '" + name + "' " + durations.error());
    if (run.target.empty()) run.target = loaded->target;
    if (loaded->target != run.target)
        return unexpected("case '" + name + "' is a plan for target '" + loaded->target + "', the cases before it for '" +
                          run.target + "': calibrate one target at a time");
    if (!launch::measures_plan_target(*loaded, "cuda", run.hardware))
        return unexpected("case '" + name + "' is a plan for target '" + loaded->target + "', but " + run.gpu +
                          " ran it: that measures nothing about the target" +
                          (retarget != nullptr ? std::string() : " (--target names the GPU's own target)"));
    DeviceCase c{name, in_pack->second.group, in_pack->second.example, std::move(loaded).value(), {}, {}, -1};
    c.result = rebuilt_launch(c.plan, *durations, run.hardware, rec);
    // A size case's every gated run: repeated measurements of its op at its shape.
    if (const auto runs = rec.find("steps_runs"); in_pack->second.group == "size" && runs != rec.end()) {
        if (!runs->is_array()) return unexpected("case '" + name + "': steps_runs is not an array");
        for (size_t i = 0; i < runs->size(); ++i) {
            auto d = step_durations((*runs)[i], c.plan, plan_file);
            if (!d) return unexpected("case '" + name + "' steps_runs[" + std::to_string(i) + "] " + d.error());
            c.runs.push_back(rebuilt_launch(c.plan, *d, run.hardware, rec));
        }
    }
    // A benchmark's plan time as its steps were timed: behind the gate where it was.
    const auto enqueued = rec.find(!benchmark ? "enqueued_s" : rec.contains("gated_median_s") ? "gated_median_s" : "median_s");
    if (enqueued != rec.end() && enqueued->is_number()) c.enqueued = enqueued->get<double>();
    return std::optional<DeviceCase>(std::move(c));
}

// Reads the results line by line; a refusal names the file and line. With a
// `retarget`, each plan is taken as a plan for it (retargeted).
Expected<DeviceRun, std::string> read_device_run(const std::vector<std::string> &files, const std::string &pack,
                                                 const cost::Target *retarget) {
    auto manifest = read_manifest(pack);
    if (!manifest) return unexpected(manifest.error());
    DeviceRun run;
    std::map<std::string, std::string> seen;  // case or benchmark → file:line
    for (const std::string &results : files) {
        std::ifstream in(results);
        if (!in || fs::is_directory(results)) return unexpected(results + ": cannot be read");
        run.hardware.clear();  // each file names its GPU before its cases
        int number = 0;
        for (std::string line; std::getline(in, line);) {
            const std::string where = results + ":" + std::to_string(++number) + ": ";
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            const ordered_json rec = ordered_json::parse(line, nullptr, false);
            if (rec.is_discarded() || !rec.is_object()) return unexpected(where + "not a JSON object");
            const std::string kind = text_field(rec, "record");
            if (kind == "environment") {
                run.hardware = environment_hardware(rec, run.gpu);
                if (const auto g = rec.find("gpus"); g != rec.end() && g->is_array()) run.gpus = static_cast<int>(g->size());
                if (run.hardware.empty()) return unexpected(where + "an environment record naming no GPU");
                continue;
            }
            if (kind != "case" && kind != "benchmark" && kind != "size") continue;  // summaries
            if (auto [at, fresh] = seen.emplace(text_field(rec, "name"), where.substr(0, where.size() - 2)); !fresh)
                return unexpected(where + kind + " '" + at->first + "' again (" + at->second + ")");
            auto c = read_case(rec, pack, *manifest, retarget, run);
            if (!c) return unexpected(where + c.error());
            if (*c) run.cases.push_back(std::move(**c));
        }
        if (in.bad()) return unexpected(results + ": cannot be read");
    }
    for (const auto &[name, pc] : *manifest)
        run.without_result += seen.count(name) || pc.group == "benchmark" || pc.group == "size" ? 0 : 1;
    if (std::none_of(run.cases.begin(), run.cases.end(), [](const DeviceCase &c) { return c.group != "benchmark"; }))
        return unexpected(files.front() + ": no passing case to calibrate from" +
                          (run.shared.empty()
                               ? std::string()
                               : ": " + plural(static_cast<long long>(run.shared.size()), "case") +
                                     " of more devices than the " + plural(run.gpus, "GPU") +
                                     " ran as virtual devices sharing it (their steps contend for it: no measurement "
                                     "of the target's devices)"));
    return run;
}

// Predicted against measured under a calibration: per step (its kernel and copy
// steps' samples) or per plan (the plan's makespan against the plan enqueued).
struct Accuracy {
    int count = 0;
    double error_before = 0, error_after = 0;  // median |predicted − measured| / measured
    double tau_before = 0, tau_after = 0;      // Kendall τ-b between predicted and measured
};

Accuracy step_accuracy(const std::vector<cost::CalibrationSample> &samples, const cost::Calibration &cal) {
    std::vector<double> before, after, measured;
    for (const cost::CalibrationSample &s : samples) {
        before.push_back(s.predicted);
        after.push_back(s.predicted * cal.factor(s.kernel_class, s.size, s.kernel, s.threads, s.dtype, s.shape));
        measured.push_back(s.measured);
    }
    return Accuracy{static_cast<int>(samples.size()), launch::median_relative_error(before, measured),
                    launch::median_relative_error(after, measured), launch::kendall_tau(before, measured),
                    launch::kendall_tau(after, measured)};
}

Accuracy plan_accuracy(const std::vector<const DeviceCase *> &cases, const cost::Target &target,
                       const cost::Calibration &cal) {
    std::vector<double> before, after, measured;
    for (const DeviceCase *c : cases) {
        if (c->enqueued <= 0) continue;
        before.push_back(plan::simulate(c->plan).makespan);
        after.push_back(launch::calibrated_prediction(c->plan, cost::Model(target, c->plan.cluster), cal).makespan);
        measured.push_back(c->enqueued);
    }
    return Accuracy{static_cast<int>(measured.size()), launch::median_relative_error(before, measured),
                    launch::median_relative_error(after, measured), launch::kendall_tau(before, measured),
                    launch::kendall_tau(after, measured)};
}

// The fit on every case, and the fit on the kernel cases and the even-numbered
// example cases judged on the odd-numbered ones.
struct DeviceFit {
    cost::Calibration all, train;
    int train_cases = 0, test_cases = 0, benchmark_cases = 0;
    int size_cases = 0;  // of the train cases: single ops at the benchmarks' sizes
    Accuracy steps_in_sample, steps_held_out, plans_in_sample, plans_held_out;
    // The benchmark plans (realistic sizes, bench/results.jsonl), judged by the fit
    // on every case.
    Accuracy steps_benchmarks, plans_benchmarks;
    std::vector<std::pair<std::string, cost::CalibrationSample>> held_out_points;  // (case, point)
};

// A held-out point judged by the fit that did not see it.
struct Miss {
    std::string case_name;
    cost::CalibrationSample point;
    double calibrated = 0;
    double error() const { return std::fabs(calibrated - point.measured) / point.measured; }
};

// The `n` held-out points whose calibrated prediction is furthest from the measurement.
std::vector<Miss> worst_misses(const DeviceFit &f, int n) {
    std::vector<Miss> out;
    for (const auto &[name, p] : f.held_out_points)
        if (p.measured > 0)
            out.push_back({name, p, p.predicted * f.train.factor(p.kernel_class, p.size, p.kernel, p.threads, p.dtype, p.shape)});
    std::stable_sort(out.begin(), out.end(), [](const Miss &a, const Miss &b) { return a.error() > b.error(); });
    if (static_cast<int>(out.size()) > n) out.resize(static_cast<size_t>(std::max(0, n)));
    return out;
}

DeviceFit fit_device_run(const DeviceRun &run, const cost::Target &target) {
    DeviceFit f;
    std::vector<cost::CalibrationSample> test;
    std::vector<cost::CalibrationSample> benchmark_steps;
    std::vector<const DeviceCase *> examples, held_out, benchmarks;
    for (const DeviceCase &c : run.cases) {
        const cost::Model model(target, c.plan.cluster);
        auto samples = launch::calibration_samples(c.plan, model, c.result);
        if (!c.runs.empty()) {  // a size case's every run instead of its median one
            samples.clear();
            for (const launch::LaunchResult &r : c.runs) {
                const auto more = launch::calibration_samples(c.plan, model, r);
                samples.insert(samples.end(), more.begin(), more.end());
            }
        }
        if (c.group == "benchmark") {  // judged by the fit on every case, never fitted
            benchmark_steps.insert(benchmark_steps.end(), samples.begin(), samples.end());
            benchmarks.push_back(&c);
            continue;
        }
        const bool tested = c.group == "example" && c.example % 2 == 1;
        for (const cost::CalibrationSample &s : samples) {
            f.all.add(s);
            if (tested) {
                test.push_back(s);
                f.held_out_points.emplace_back(c.name, s);
            } else {
                f.train.add(s);
            }
        }
        (tested ? f.test_cases : f.train_cases)++;
        if (c.group == "size") ++f.size_cases;
        if (c.group == "example") examples.push_back(&c);
        if (tested) held_out.push_back(&c);
    }
    f.steps_in_sample = step_accuracy(f.all.samples(), f.all);
    f.steps_held_out = step_accuracy(test, f.train);
    f.plans_in_sample = plan_accuracy(examples, target, f.all);
    f.plans_held_out = plan_accuracy(held_out, target, f.train);
    f.benchmark_cases = static_cast<int>(benchmarks.size());
    f.steps_benchmarks = step_accuracy(benchmark_steps, f.all);
    f.plans_benchmarks = plan_accuracy(benchmarks, target, f.all);
    return f;
}

ordered_json accuracy_json(const Accuracy &a) {
    return {{"count", a.count},
            {"median_error_uncalibrated", a.error_before},
            {"median_error_calibrated", a.error_after},
            {"kendall_tau_uncalibrated", a.tau_before},
            {"kendall_tau_calibrated", a.tau_after}};
}

std::string accuracy_text(const Accuracy &a) {
    return percent(a.error_before) + " uncalibrated → " + percent(a.error_after) + " calibrated, Kendall τ " +
           formatted(a.tau_before, "%.2f") + " → " + formatted(a.tau_after, "%.2f");
}

void print_device_fit_json(const CalibrateOptions &o, const DeviceRun &run, const DeviceFit &f,
                           const std::vector<std::string> &unkept) {
    ordered_json j;
    j["target"] = run.target;
    j["gpu"] = run.gpu;
    j["results"] = o.gpu_results;
    j["pack"] = o.pack;
    j["cases_used"] = f.train_cases + f.test_cases;
    j["size_cases"] = f.size_cases;  // of them: single ops at the benchmarks' sizes (fitted)
    j["failed_on_device"] = run.failed;
    j["on_shared_gpus"] = run.shared;  // plans of more devices than GPUs: not used
    j["pack_cases_without_result"] = run.without_result;
    j["steps"] = {{"in_sample", accuracy_json(f.steps_in_sample)}, {"held_out", accuracy_json(f.steps_held_out)}};
    j["steps"]["in_sample"]["fitted_on"] = {{"cases", f.train_cases + f.test_cases}, {"measurements", f.all.samples().size()}};
    j["steps"]["held_out"]["fitted_on"] = {{"cases", f.train_cases}, {"measurements", f.train.samples().size()}};
    j["steps"]["held_out"]["cases"] = f.test_cases;
    j["plans"] = {{"in_sample", accuracy_json(f.plans_in_sample)}, {"held_out", accuracy_json(f.plans_held_out)}};
    if (f.benchmark_cases > 0) {
        j["steps"]["benchmarks"] = accuracy_json(f.steps_benchmarks);
        j["plans"]["benchmarks"] = accuracy_json(f.plans_benchmarks);
    }
    j["table"] = table_json(f.all);
    if (o.worst > 0) {
        j["worst_held_out"] = ordered_json::array();
        for (const Miss &m : worst_misses(f, o.worst))
            j["worst_held_out"].push_back({{"case", m.case_name},
                                           {"kernel", m.point.kernel},
                                           {"dtype", m.point.dtype ? std::string(dtype_name(*m.point.dtype)) : ""},
                                           {"shape", m.point.shape},
                                           {"measured_s", m.point.measured},
                                           {"predicted_s", m.point.predicted},
                                           {"calibrated_s", m.calibrated}});
    }
    if (!o.session.empty()) {
        j["session"] = o.session;
        j["not_kept"] = unkept;
    }
    print_json(j);
}

void print_device_fit(const CalibrateOptions &o, const DeviceRun &run, const DeviceFit &f, const cost::Target &target,
                      const std::vector<std::string> &unkept) {
    std::string files;
    for (const std::string &r : o.gpu_results) files += (files.empty() ? "" : " and ") + r;
    std::cout << "calibrate: target " << run.target << " from " << files << " (" << run.gpu << ") on the pack "
              << o.pack << ": " << plural(f.train_cases + f.test_cases, "passing case")
              << " used, "
              << run.failed.size() << " failed on the device and not used";
    if (!run.shared.empty())
        std::cout << ", " << run.shared.size() << " of more devices than the " << plural(run.gpus, "GPU")
                  << " not used (virtual devices sharing a GPU contend for it: no measurement of the target's devices)";
    if (run.without_result > 0) std::cout << ", " << run.without_result << " of the pack without a result";
    std::cout << "\n  per step (kernels and copies), median |predicted − measured| / measured:\n"
              << "    in-sample: fitted on all " << plural(f.steps_in_sample.count, "measurement")
              << ", judged on the same: " << accuracy_text(f.steps_in_sample) << "\n"
              << "    held-out:  fitted on the kernel cases" << (f.size_cases > 0 ? ", the size cases" : "")
              << " and the even-numbered example cases (" << plural(f.train_cases, "case") << ", " << plural(static_cast<long long>(f.train.samples().size()), "measurement")
              << "), judged on the odd-numbered example cases (" << plural(f.test_cases, "case") << ", "
              << plural(f.steps_held_out.count, "measurement") << "): " << accuracy_text(f.steps_held_out) << "\n";
    if (f.benchmark_cases > 0)
        std::cout << "    benchmarks: fitted on every case, judged on the benchmark plans' steps ("
                  << plural(f.benchmark_cases, "plan") << ", " << plural(f.steps_benchmarks.count, "measurement")
                  << "; never fitted"
                  << (f.size_cases > 0 ? "; their ops' sizes fitted from " + plural(f.size_cases, "single-op case") +
                                             " launched apart"
                                       : std::string())
                  << "): " << accuracy_text(f.steps_benchmarks) << "\n";
    std::cout << "  per plan (example cases: simulated makespan against the whole plan enqueued):\n"
              << "    in-sample: " << plural(f.plans_in_sample.count, "plan") << ", " << accuracy_text(f.plans_in_sample) << "\n"
              << "    held-out:  " << plural(f.plans_held_out.count, "plan") << ", " << accuracy_text(f.plans_held_out) << "\n";
    if (f.benchmark_cases > 0)
        std::cout << "    benchmarks: " << plural(f.plans_benchmarks.count, "plan") << " (median of the enqueued runs), "
                  << accuracy_text(f.plans_benchmarks) << "\n";
    if (o.worst > 0) {
        const std::vector<Miss> worst = worst_misses(f, o.worst);
        std::cout << "  the " << plural(static_cast<long long>(worst.size()), "held-out step")
                  << " the fit misses most (predicted by the fit that did not see them):\n";
        for (const Miss &m : worst)
            std::cout << "    " << m.case_name << "  " << (m.point.kernel.empty() ? "?" : m.point.kernel) << " "
                      << (m.point.dtype ? std::string(dtype_name(*m.point.dtype)) : std::string("?"))
                      << (m.point.shape.empty() ? "" : " " + m.point.shape) << ": measured "
                      << plan::seconds_text(m.point.measured) << ", predicted " << plan::seconds_text(m.point.predicted)
                      << ", calibrated " << plan::seconds_text(m.calibrated) << " ("
                      << (m.calibrated >= m.point.measured ? "+" : "−") << percent(m.error()) << ")\n";
    }
    std::cout << "  the table (fitted on every case):\n";
    print_table(table_rows(f.all, target), "  ");
    if (!o.session.empty()) {
        std::cout << "  kept in " << o.session << ": "
                  << plural(static_cast<long long>(run.cases.size() - unkept.size()) - f.benchmark_cases, "case")
                  << " as cuda launches with their calibration points for target " << run.target << "\n";
        for (const std::string &u : unkept) std::cout << "  NOT KEPT " << u << "\n";
    }
}

int calibrate_from_device_run(const CalibrateOptions &o) {
    std::optional<cost::Target> retarget;
    if (o.target_given) {
        auto t = cost::builtin_target(o.target);
        if (!t || t->kind != "gpu") {
            std::cerr << "tapestry: --target " << o.target << ": "
                      << (t ? std::string("not a GPU target: a device run calibrates a GPU target") : t.error()) << "\n";
            return kExitUsage;
        }
        retarget = std::move(t).value();
    }
    auto run = read_device_run(o.gpu_results, o.pack, retarget ? &*retarget : nullptr);
    if (!run) {
        std::cerr << "tapestry: " << run.error() << "\n";
        return kExitInvalid;
    }
    // The uncalibrated model of the plans' target, as keep_launch takes it.
    auto target = resolve_target(run->target, 2, o.session, false);
    if (!target) {
        std::cerr << "tapestry: target '" << run->target << "' of the pack's plans: " << target.error() << "\n";
        return kExitInvalid;
    }
    const DeviceFit fit = fit_device_run(*run, *target);
    std::vector<std::string> unkept;
    if (!o.session.empty()) {
        ProgressBar bar(!o.json);
        int done = 0;
        for (const DeviceCase &c : run->cases) {
            bar.update("keeping", done++, static_cast<int>(run->cases.size()));
            if (c.group == "benchmark") continue;  // timed, not checked against a reference: not a launch to keep
            if (auto kept = keep_launch(o.session, c.plan, c.result, nullptr); !kept) unkept.push_back(c.name + ": " + kept.error());
        }
        bar.clear();
    }
    if (o.json) print_device_fit_json(o, *run, fit, unkept);
    else print_device_fit(o, *run, fit, *target, unkept);
    return unkept.empty() ? kExitOk : kExitInvalid;
}

int calibrate_command(const CalibrateOptions &o) {
    // Before a minute of launches, not after.
    if (!o.session.empty())
        if (const std::string why = session_refusal(o.session); !why.empty()) {
            std::cerr << "tapestry: --session: " << why << "\n";
            return kExitInvalid;
        }
    if (!o.gpu_results.empty()) return calibrate_from_device_run(o);
    if (o.projects.empty()) {
        std::cerr << "tapestry: calibrate: give PROJECT… (launch on this machine) or --gpu-results with --pack (a device run)\n";
        return kExitUsage;
    }
    return calibrate_on_host(o);
}

}  // namespace

void add_calibrate_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<CalibrateOptions>();
    CLI::App *cmd = app.add_subcommand(
        "calibrate",
        "Launch plans of the projects on the cpu backend for the host target (each device count × round-robin and "
        "the four baselines), check them, and fit the cost model's calibration from the measured steps; or fit a GPU "
        "target from a device run (--gpu-results, --pack). Prints the table and the error before and after.");
    CLI::Option *projects = cmd->add_option("PROJECT", o->projects, "Project files (*.tapestry.json)");
    CLI::Option *results = cmd->add_option("--gpu-results", o->gpu_results,
                                           "Fit the pack's target from tapestry-gpu-check's results.jsonl instead of "
                                           "launching; given again with its bench/results.jsonl, the benchmark plans' "
                                           "steps are judged by the fit (never fitted)")
                               ->excludes(projects);
    CLI::Option *pack = cmd->add_option("--pack", o->pack, "The tapestry-gpu-pack directory the results are of");
    results->needs(pack);
    pack->needs(results);
    cmd->add_option("--target", o->target,
                    "The target to calibrate (the cpu backend measures the host); with --gpu-results, the GPU target "
                    "of the GPU that ran the pack when it is not the pack's own: its plans are predicted again for it")
        ->capture_default_str()
        ->each([o](const std::string &) { o->target_given = true; });
    cmd->add_option("--devices", o->devices, "Device counts of the plans")->delimiter(',')->check(CLI::Range(1, 64))->capture_default_str();
    cmd->add_option("--session", o->session, "Keep every launch and its calibration points in this session (and the host's measurement; with "
                    "--gpu-results, each passing case as a cuda launch)");
    add_seed_option(*cmd, "--seed", o->seed, "Seed of the random inputs");
    cmd->add_option("--threads", o->threads, "Threads for measuring the host")->check(CLI::Range(1, 256))->capture_default_str();
    cmd->add_flag("--remeasure", o->remeasure, "Measure the host again even if the session has a measurement");
    cmd->add_flag("--json", o->json, "Print the result as JSON");
    cmd->add_option("--worst", o->worst,
                    "With --gpu-results: also list the N held-out steps the fit misses most (case, kernel, dtype, "
                    "shape, measured, predicted, calibrated)")
        ->check(CLI::Range(1, 1000))
        ->needs(results);
    cmd->footer("Exit codes: 0 every plan launched and checked (--gpu-results: the results read and fitted, and kept), "
                "1 a project is bad or a launch failed (--gpu-results: a bad line, a missing plan, results of another "
                "pack), 2 usage error.");
    cmd->callback([o, &action] { action = [o] { return calibrate_command(*o); }; });
}

}  // namespace tapestry::cli
