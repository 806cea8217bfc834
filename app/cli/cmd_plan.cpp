// `tapestry plan PROJECT --target T --devices N …`: places a project (or the last
// stage of a pipeline of passes) on a target's devices — by a placement rule or a
// hand baseline — compiles, simulates and certifies the plan, prints the summary
// table and writes the plan file. `tapestry targets [list|show|measure]`: the
// hardware targets (docs/targets.md). Every time and memory figure printed is a
// prediction of the cost model, and says so.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "cli_support.h"
#include "target_support.h"
#include "common/checked_size.h"
#include "cost/target.h"
#include "io/project_file.h"
#include "passes/pipeline_builder.h"
#include "plan/certify.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "run_support.h"
#include "runtime/cpu/fusion_backend.h"
#include "runtime/cpu/host_probe.h"
#include "store/session.h"

namespace tapestry::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

std::string percent(double part, double whole) {
    if (whole <= 0) return "-";
    const double p = 100.0 * part / whole;
    return formatted(p, p < 10 ? "%.1f" : "%.0f") + "%";
}

struct PlanOptions {
    std::string project;
    std::string pipeline;
    std::vector<std::string> shard_specs;
    int stage = -1;
    std::string target = "h100-sxm";
    int devices = 1;
    int nodes = 0;
    std::string placement = "shard";
    std::vector<std::string> maps;
    std::string baseline;
    int tp = 0;
    int micro_batches = 0;
    std::string order;  // "": as the planner chooses
    std::string out;
    bool json = false;
    int threads = 2;
    std::string session;
    bool remeasure = false;
};

int plan_command(const PlanOptions &o) {
    plan::PlanRequest request;
    if (!o.baseline.empty()) {
        auto b = plan::parse_baseline(o.baseline);
        if (!b) {
            std::cerr << "tapestry: --baseline: " << b.error() << "\n";
            return kExitUsage;
        }
        request.baseline = *b;
    }
    if (o.stage > 0 && o.pipeline.empty()) {
        std::cerr << "tapestry: --stage " << o.stage << " needs --pipeline (stage 0 is the project itself)\n";
        return kExitUsage;
    }
    std::optional<Pipeline> pipeline;
    if (!o.pipeline.empty()) {
        PipelineSettings settings;
        settings.shard_specs = o.shard_specs;
        settings.fusion_backends = {&cpu::fusion_backend()};
        auto p = build_pipeline(pipeline_names(o.pipeline), settings);
        if (!p) {
            std::cerr << "tapestry: --pipeline: " << p.error() << "\n";
            return kExitUsage;
        }
        pipeline = std::move(p).value();
    }
    if (!o.session.empty())
        if (const std::string why = session_refusal(o.session); !why.empty()) {
            std::cerr << "tapestry: --session: " << why << "\n";
            return kExitInvalid;
        }
    auto target = resolve_target(o.target, o.threads, o.session, o.remeasure);
    if (!target) {
        std::cerr << "tapestry: --target: " << target.error() << "\n";
        return kExitUsage;
    }
    auto calibration = session_calibration(o.session, *target);
    if (!calibration) {
        std::cerr << "tapestry: --session: " << o.session << ": " << calibration.error() << "\n";
        return kExitInvalid;
    }
    request.calibration = calibration->samples();
    request.wake = calibration->wake();
    request.wake_launches = calibration->wake_launches();
    Loaded loaded = load_valid(o.project);
    for (const Issue &i : loaded.issues) report_issue(o.project, i);
    if (!loaded.graph) return kExitInvalid;
    Graph g = *loaded.graph;
    request.source.project = o.project;
    if (pipeline) {
        auto stages = pipeline->run(g, CertifyOptions{});
        if (!stages) {
            report_error(o.project, stages->empty() ? std::string("pipeline failed") : stages.error());
            return kExitInvalid;
        }
        const int chosen = o.stage >= 0 ? o.stage : static_cast<int>(stages->size()) - 1;
        if (chosen >= static_cast<int>(stages->size())) {
            std::cerr << "tapestry: --stage " << o.stage << ": the pipeline has stages 0 to " << stages->size() - 1
                      << "\n";
            return kExitUsage;
        }
        const Stage &last = (*stages)[static_cast<size_t>(chosen)];
        if (last.certificate.certified() && !last.certificate.pass()) {
            report_error(o.project, "stage " + std::to_string(chosen) + " (" + last.pass +
                                        ") failed its certificate: " + last.certificate.badge());
            return kExitInvalid;
        }
        g = last.graph;
        request.source.stage = chosen;
        request.source.pass = last.pass;
        request.source.options = last.options;
        request.source.certificate = last.certificate.badge();
    }
    request.target = *target;
    request.devices = o.devices;
    request.nodes = o.nodes;
    request.placement = o.placement;
    request.maps = o.maps;
    request.tp = o.tp;
    request.micro_batches = o.micro_batches;
    if (!o.order.empty()) request.order = plan::parse_step_order(o.order);  // CLI checked the name
    auto result = plan::make_plan(g, request);
    if (!result) {
        report_error(o.project, result.error());
        return kExitInvalid;
    }
    const plan::Plan &p = result->plan;
    const plan::Prediction &pred = result->prediction;
    const double capacity = target->device.memory_bytes.value;
    if (!o.out.empty())
        if (std::string e = plan::save_plan(p, o.out, &pred); !e.empty()) {
            report_error(o.project, e);
            return kExitInvalid;
        }
    const bool certified = result->certificate.pass();
    bool over = false;
    for (const plan::DeviceLoad &l : pred.devices) over = over || static_cast<double>(l.peak) > capacity;
    if (o.json) {
        ordered_json j;
        j["project"] = o.project;
        j["target"] = p.target;
        j["devices"] = static_cast<int>(p.devices.size());
        j["nodes"] = p.cluster.nodes;
        j["steps"] = static_cast<int>(p.steps.size());
        j["order"] = plan::step_order_name(p.source.order);
        j["prediction"] = {{"label", "prediction of the cost model (not a measurement)"},
                           {"makespan_seconds", pred.makespan},
                           {"communication_seconds", pred.comm_seconds},
                           {"communication_bytes", pred.comm_bytes},
                           {"peak_bytes", pred.peak}};
        j["calibration"] = {{"samples", result->calibration.samples},
                            {"median_error_uncalibrated", result->calibration.median_before},
                            {"median_error_calibrated", result->calibration.median_after},
                            {"text", plan::calibration_summary(*result)}};
        ordered_json devs = ordered_json::array();
        for (size_t d = 0; d < p.devices.size(); ++d) {
            const plan::DeviceLoad &l = pred.devices[d];
            devs.push_back({{"device", p.devices[d].name},
                            {"steps", p.devices[d].steps.size()},
                            {"busy_fraction", pred.makespan > 0 ? l.compute / pred.makespan : 0},
                            {"communication_seconds", l.communication},
                            {"communication_bytes", l.comm_bytes},
                            {"peak_bytes", l.peak},
                            {"capacity_bytes", capacity}});
        }
        j["per_device"] = devs;
        j["stage_certificate"] = result->stages.back().certificate.badge();
        j["plan_certificate"] = result->certificate.badge();
        if (p.cluster.shared_cores > 0)
            j["shared_cores"] = ordered_json{{"cores", p.cluster.shared_cores},
                                     {"threads_per_kernel", p.cluster.threads_per_device()},
                                     {"steps_at_once", p.cluster.concurrent_steps()}};
        if (!o.out.empty()) j["plan_file"] = o.out;
        print_json(j);
    } else {
        std::cout << o.project << " on " << p.devices.size() << " × " << target->title << " (" << p.cluster.nodes
                  << (p.cluster.nodes == 1 ? " node" : " nodes") << "), "
                  << (request.baseline ? std::string("baseline ") + plan::baseline_name(*request.baseline)
                                       : "placement " + o.placement)
                  << ": " << p.steps.size() << " steps"
                  << (p.source.order == plan::StepOrder::ready ? ", ordered by readiness" : "") << "\n";
        for (const Stage &s : result->stages) std::cout << "  " << s.pass << ": " << s.summary << "\n";
        if (const std::string cores = plan::cores_summary(p); !cores.empty()) std::cout << "  " << cores << "\n";
        std::cout << "  predicted: " << plan::plan_summary(*result, capacity) << "\n";
        std::cout << "  " << plan::calibration_summary(*result) << "\n";
        std::vector<std::vector<std::string>> rows{
            {"device", "steps", "busy", "communication", "sent", "peak memory", "capacity"}};
        for (size_t d = 0; d < p.devices.size(); ++d) {
            const plan::DeviceLoad &l = pred.devices[d];
            rows.push_back({p.devices[d].name, std::to_string(p.devices[d].steps.size()), percent(l.compute, pred.makespan),
                            plan::seconds_text(l.communication), human_bytes(l.comm_bytes),
                            human_bytes(static_cast<double>(l.peak)) +
                                (static_cast<double>(l.peak) > capacity ? " OVER" : ""),
                            percent(static_cast<double>(l.peak), capacity)});
        }
        print_table(rows, "  ");
        std::cout << "  stage certificate: " << result->stages.back().certificate.badge() << "\n";
        std::cout << "  plan certificate: " << result->certificate.badge() << "\n";
        if (!certified) std::cout << result->certificate.text();
        if (over) std::cout << "  a device's predicted peak memory exceeds its capacity\n";
        if (!o.out.empty()) std::cout << "  plan written to " << o.out << "\n";
    }
    return certified ? kExitOk : kExitInvalid;
}

struct TargetsOptions {
    std::string name;
    bool json = false;
    int threads = 2;
    std::string out;
    std::string session;
};

int targets_list(const TargetsOptions &o) {
    std::vector<std::vector<std::string>> rows{{"name", "title", "kind", "bf16 peak", "memory", "bandwidth", "clusters"}};
    ordered_json all = ordered_json::array();
    for (const std::string &name : cost::builtin_target_names()) {
        auto t = cost::builtin_target(name);
        if (!t) {
            report_error(name, t.error());
            return kExitInvalid;
        }
        std::string clusters;
        for (const cost::Cluster &c : t->clusters)
            clusters += (clusters.empty() ? "" : ", ") + std::to_string(c.nodes) + "×" + std::to_string(c.devices_per_node);
        const bool measured = !t->measured.empty();
        rows.push_back({t->name, t->title, t->kind,
                        measured ? "measured on use" : human_flops(t->peak_flops(DType::bf16)) + "/s",
                        measured ? "measured" : human_bytes(t->device.memory_bytes.value),
                        measured ? "measured" : human_bytes(t->device.memory_bandwidth.value) + "/s", clusters});
        all.push_back({{"name", t->name}, {"title", t->title}, {"kind", t->kind}, {"origin", "built-in"}, {"clusters", clusters}});
    }
    auto kept = session_targets(o.session);
    if (!kept) {
        std::cerr << "tapestry: " << kept.error() << "\n";
        return kExitInvalid;
    }
    for (const store::TargetRecord &r : *kept) {
        auto t = cost::parse_target(r.target_json, o.session);
        const std::string title = t ? t->title : "unreadable: " + t.error();
        rows.push_back({r.name + " (" + r.origin + ")", title, t ? t->kind : "-",
                        t ? human_flops(t->peak_flops(DType::bf16)) + "/s" : "-",
                        t ? human_bytes(t->device.memory_bytes.value) : "-",
                        t ? human_bytes(t->device.memory_bandwidth.value) + "/s" : "-", "session, " + r.updated_at});
        all.push_back({{"name", r.name}, {"title", title}, {"origin", r.origin}, {"updated_at", r.updated_at}});
    }
    if (o.json) print_json(all);
    else print_table(rows, "");
    return kExitOk;
}

int targets_show(const TargetsOptions &o) {
    auto t = resolve_target(o.name, o.threads, o.session, false);
    if (!t) {
        std::cerr << "tapestry: " << t.error() << "\n";
        return kExitInvalid;
    }
    return write_output(o.out, cost::target_json(*t), o.name) ? kExitOk : kExitInvalid;
}

int targets_measure(const TargetsOptions &o) {
    auto t = measure_host_target(o.threads, !o.json);
    if (!t) {
        std::cerr << "tapestry: " << t.error() << "\n";
        return kExitInvalid;
    }
    if (!o.session.empty())
        if (std::string e = keep_in_session(o.session, *t, "measured"); !e.empty()) {
            std::cerr << "tapestry: " << o.session << ": " << e << "\n";
            return kExitInvalid;
        }
    if (!o.out.empty() && !write_output(o.out, cost::target_json(*t), "host")) return kExitInvalid;
    const cost::Device &d = t->device;
    if (o.json) {
        print_json({{"label", "measured on this machine"},
                    {"f32_flops", d.peak_flops.at("f32").value},
                    {"bf16_flops", d.peak_flops.count("bf16") ? d.peak_flops.at("bf16").value : 0.0},
                    {"memory_bandwidth", d.memory_bandwidth.value},
                    {"memory_bytes", d.memory_bytes.value},
                    {"launch_overhead_seconds", d.launch_overhead.value},
                    {"how", t->sources.at("measured").note}});
        return kExitOk;
    }
    std::cout << "host, measured (" << t->sources.at("measured").note << "):\n";
    std::vector<std::vector<std::string>> rows{
        {"f32 GEMM", human_flops(d.peak_flops.at("f32").value) + "/s"},
        {"bf16 GEMM", d.peak_flops.count("bf16") ? human_flops(d.peak_flops.at("bf16").value) + "/s" : "no native bf16"},
        {"memory bandwidth", human_bytes(d.memory_bandwidth.value) + "/s"},
        {"memory", human_bytes(d.memory_bytes.value)},
        {"primitive overhead", plan::seconds_text(d.launch_overhead.value)}};
    print_table(rows, "  ");
    if (!o.out.empty()) std::cout << "  target written to " << o.out << "\n";
    if (!o.session.empty()) std::cout << "  kept in " << o.session << " (tapestry plan --target host --session uses it)\n";
    return kExitOk;
}

}  // namespace

void add_plan_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App *cmd = app.add_subcommand(
        "plan", "Place a project on a target's devices, compile, simulate and certify the plan; print its predicted cost.");
    cmd->add_option("PROJECT", o->project, "Project file (*.tapestry.json)")->required();
    cmd->add_option("--pipeline", o->pipeline, "Passes to run first, comma-separated (substitute, shard, fuse); the plan is made from the last stage");
    cmd->add_option("--shard", o->shard_specs, "Shard spec for --pipeline's shard pass ('op:dim=parts'); repeatable");
    cmd->add_option("--stage", o->stage, "Plan this stage of --pipeline (0: the project itself; default: the last)")
        ->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--target", o->target, "Built-in target (tapestry targets) or a target file; 'host' is measured first")
        ->capture_default_str();
    cmd->add_option("--devices", o->devices, "Devices of the cluster")->capture_default_str()->check(CLI::Range(1, 65536));
    cmd->add_option("--nodes", o->nodes, "Nodes they are spread over (0: as the target's clusters suggest)")
        ->check(CLI::Range(0, 65536));
    cmd->add_option("--placement", o->placement, "Placement rule: shard (shard k → device k), round-robin, pipeline[:stages]")
        ->capture_default_str();
    cmd->add_option("--map", o->maps, "Explicit placement 'op=0:0,0:1' (one device, or one per shard); repeatable");
    cmd->add_option("--baseline", o->baseline, "A hand baseline instead of the placement: dp, tp, pp, dp×tp (or dpxtp)");
    cmd->add_option("--tp", o->tp, "dp×tp: the tensor-parallel degree (default: one node's devices, at most 8)");
    cmd->add_option("--micro-batches", o->micro_batches, "pp: micro-batches (default: one per stage)");
    cmd->add_option("--order", o->order,
                    "Step order: dependency (op by op) or ready (by when each step can start: a pipeline's "
                    "micro-batches overlap); default ready for a pipeline (--baseline pp, --placement pipeline), dependency otherwise (docs/plans.md)")
        ->check(CLI::IsMember({"dependency", "ready"}));
    checked_output_file(cmd->add_option("-o,--out", o->out, "Write the plan file (tapestry-plan JSON)"));
    cmd->add_flag("--json", o->json, "Machine-readable summary on stdout");
    cmd->add_option("--threads", o->threads, "Threads for measuring the host target")->capture_default_str();
    cmd->add_option("--session", o->session, "Session whose targets (user copies, the measured host) come first; a new host measurement is kept there");
    cmd->add_flag("--remeasure", o->remeasure, "Measure the host again even if the session has a measurement");
    cmd->footer("Every time and memory figure is a prediction of the cost model (docs/cost-model.md).\n"
                "Exit codes: 0 plan certified, 1 bad project, planning refused or certificate failed, 2 usage.");
    cmd->callback([o, &action] { action = [o] { return plan_command(*o); }; });
}

void add_targets_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<TargetsOptions>();
    CLI::App *cmd = app.add_subcommand("targets", "List, show or measure hardware targets (docs/targets.md).");
    cmd->add_flag("--json", o->json, "Machine-readable output");
    CLI::App *list = cmd->add_subcommand("list", "The built-in targets (the default)");
    CLI::App *show = cmd->add_subcommand("show", "A target's JSON (built-in name or file; 'host' is measured first)");
    show->add_option("NAME", o->name, "Target name or file")->required();
    checked_output_file(show->add_option("-o,--out", o->out, "Write it to a file (a copy to edit)"));
    for (CLI::App *sub : {list, show})
        sub->add_option("--session", o->session, "Also the targets this session keeps (user copies, the measured host)");
    CLI::App *measure = cmd->add_subcommand("measure", "Measure the host CPU: a oneDNN GEMM, a memory copy, a primitive's overhead");
    measure->add_option("--threads", o->threads, "Threads")->capture_default_str();
    checked_output_file(measure->add_option("-o,--out", o->out, "Write the measured target to a file"));
    measure->add_flag("--json", o->json, "Machine-readable output");
    measure->add_option("--session", o->session, "Keep the measurement in this session");
    cmd->require_subcommand(0, 1);
    cmd->callback([o, &action, show, measure] {
        if (show->parsed()) action = [o] { return targets_show(*o); };
        else if (measure->parsed()) action = [o] { return targets_measure(*o); };
        else action = [o] { return targets_list(*o); };
    });
    (void)list;
}

}  // namespace tapestry::cli
