// `tapestry launch PLAN`: runs a compiled plan's own program on a backend (the
// cpu backend: a virtual device per plan device, each with its own memory),
// checks its outputs against the reference run of the plan's graph, and prints
// what it measured beside what the plan predicted. `tapestry devices`: what this
// machine offers to launch on. docs/launch.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_support.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "launch/check.h"
#include "common/checked_size.h"
#include "launch/cpu_backend.h"
#include "launch/cuda_backend.h"
#include "launch/launch.h"
#include "launch/mpi_backend.h"
#include "launch/records.h"
#include "launch/rank_world.h"
#include "plan/plan_file.h"
#include "run_support.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/memory_budget.h"
#include "launch_support.h"
#include "target_support.h"

namespace tapestry::cli {
namespace {

using nlohmann::ordered_json;

struct LaunchCommandOptions {
    std::string plan;
    std::string backend = "cpu";
    bool tf32 = false;
    std::string transport;  // "" when not given: auto
    std::string inputs_dir;
    std::string outputs_dir;
    std::uint64_t seed = 0;
    bool oracle = false;
    double timeout = 120;
    int max_devices = launch::CpuBackendOptions{}.max_devices;
    std::string device_memory;
    int threads = 0;
    std::string session;
    bool steps = false;
    bool json = false;
    int fail_step = -1;  // hidden: tests inject a fault
    int fail_prepare_rank = -1;  // hidden: that rank fails its preparation (tests)
    std::string kill_rank;  // hidden: "R:K" — rank R kills itself after its K-th step (tests of a dying rank)
};


std::string seconds(double s) { return plan::seconds_text(s); }

ordered_json device_json(const launch::DeviceMeasurement &d, int steps) {
    return {{"device", d.name},
            {"steps", steps},
            {"busy_seconds", d.busy_seconds},
            {"sent_bytes", d.moved_bytes},
            {"peak_bytes", d.peak_bytes},
            {"predicted_peak_bytes", d.predicted_peak_bytes},
            {"arena_bytes", d.arena_bytes},
            {"resident_bytes", d.resident_bytes}};
}

ordered_json comparison_json(const verify::OutputComparison &c) {
    return {{"tensor", c.tensor},   {"against", c.against},         {"pass", c.pass},
            {"atol", c.atol},       {"rtol", c.rtol},               {"max_abs_error", c.max_abs_error},
            {"max_rel_error", c.max_rel_error}};
}

// Steps each device takes part in (as the plan lists them).
std::vector<int> steps_per_device(const plan::Plan &p) {
    std::vector<int> out;
    for (const plan::Device &d : p.devices) out.push_back(static_cast<int>(d.steps.size()));
    return out;
}

void print_report(const LaunchCommandOptions &o, const plan::Plan &p, const launch::Backend &backend,
                  const std::string &input_source, const launch::LaunchResult &r,
                  const std::optional<launch::LaunchCheck> &check) {
    std::cout << o.plan << " on the " << backend.name() << " backend (" << backend.describe() << "): "
              << plural(static_cast<long long>(p.devices.size()), "device") << ", "
              << plural(static_cast<long long>(p.steps.size()), "step") << "\n"
              << "  inputs: " << input_source << "\n"
              << "  measured: wall " << seconds(r.wall_seconds) << ", " << r.steps.size() << " of " << p.steps.size()
              << " steps ran, " << human_bytes(r.moved_bytes) << " moved between devices\n"
              << "  predicted: makespan " << seconds(r.predicted_makespan) << " (prediction for target " << p.target
              // A plan for the host (or, on the cuda backend, for this GPU) is predicted for
              // the machine it runs on; any other was predicted for hardware not here.
              << (launch::measures_plan_target(p, backend.name(), backend.describe()) ? ")\n" : ", not this machine)\n");
    std::vector<std::vector<std::string>> rows{
        {"device", "steps", "busy", "sent", "peak measured", "peak predicted", "arena"}};
    const std::vector<int> counts = steps_per_device(p);
    for (size_t d = 0; d < r.devices.size(); ++d) {
        const launch::DeviceMeasurement &m = r.devices[d];
        rows.push_back({m.name, std::to_string(counts[d]), seconds(m.busy_seconds), human_bytes(m.moved_bytes),
                        human_bytes(static_cast<double>(m.peak_bytes)),
                        human_bytes(static_cast<double>(m.predicted_peak_bytes)),
                        human_bytes(static_cast<double>(m.arena_bytes))});
    }
    print_table(rows, "  ");
    if (o.steps) {
        std::vector<std::vector<std::string>> srows{{"step", "kind", "op", "device", "start", "measured", "predicted"}};
        for (const launch::MeasuredStep &m : r.steps) {
            const plan::Step &s = p.steps[static_cast<size_t>(m.step)];
            srows.push_back({std::to_string(m.step), s.collective.empty() ? plan::step_kind_name(s.kind) : s.collective,
                             s.shard.empty() ? s.op : s.shard, p.devices[static_cast<size_t>(s.device)].name,
                             seconds(m.start), seconds(m.end - m.start), seconds(m.predicted)});
        }
        print_table(srows, "  ");
    }
    if (check) std::cout << "  outputs: " << check->summary() << "\n";
    if (r.ok()) std::cout << "  launch: " << (check && check->pass() ? "ok, outputs equal the reference" : "ran, outputs DIFFER from the reference") << "\n";
    else std::cout << "  launch: " << r.status << ": " << r.fault.message << "\n";
}

int report_launch(const LaunchCommandOptions &o, const plan::Plan &p, const launch::Backend &backend,
                  const std::map<TensorId, TensorData> &inputs, const std::string &input_source,
                  const launch::LaunchResult &result);

int launch_command(const LaunchCommandOptions &o) {
    launch::CpuBackendOptions bo;
    bo.max_devices = o.max_devices;
    bo.kernel_threads = o.threads;
    std::string backend_error;
    if (!o.device_memory.empty()) {
        auto bytes = cpu::parse_byte_size(o.device_memory);
        if (bytes) bo.device_memory = *bytes;
        else backend_error = "--device-memory: " + bytes.error();
    }
    std::unique_ptr<launch::Backend> backend;
    std::shared_ptr<launch::RankWorld> world;  // --backend cuda under mpirun
    if (o.backend == "mpi") {
        auto made = launch::make_mpi_backend(bo);
        if (made) backend = std::move(made).value();
        else backend_error = "--backend mpi: " + made.error();
    } else if (o.backend == "cuda") {
        launch::CudaBackendOptions co;
        co.max_devices = o.max_devices;
        co.device_memory = bo.device_memory;
        co.tf32 = o.tf32;
        co.transport = launch::transport_from_name(o.transport).value_or(launch::CudaTransport::automatic);
        // Under mpirun each rank owns a block of the plan's devices on its GPUs.
        if (launch::launched_by_mpi()) {
            auto made = launch::make_mpi_world();
            if (made) co.world = world = std::move(made).value();
            else backend_error = "--backend cuda under mpirun: " + made.error();
        }
        if (backend_error.empty()) {
            auto made = launch::make_cuda_backend(co);
            if (made) backend = std::move(made).value();
            else backend_error = "--backend cuda: " + made.error();
        }
    } else {
        backend = launch::make_cpu_backend(bo);
    }
    // The cuda backend's settings would change nothing elsewhere: said, not ignored.
    if (backend_error.empty() && o.backend != "cuda" && (o.tf32 || !o.transport.empty()))
        backend_error = std::string(o.tf32 ? "--tf32" : "--transport") + " applies to --backend cuda, not --backend " + o.backend;
    // Under mpirun every rank runs this command; rank 0 reports. A refusal before the
    // run comes alike on every rank (the same plan and inputs): each ends MPI
    // cleanly, so that mpirun does not stop rank 0 before it has said why.
    const bool root = backend ? backend->rank() == 0 : !world || world->rank() == 0;
    auto refuse = [&](const std::string &message) {
        if (root && o.json) print_json(ordered_json{{"plan", o.plan}, {"ok", false}, {"status", "refused"}, {"error", message}});
        // A message about the plan file itself names it already.
        else if (root && message.rfind(o.plan + ":", 0) == 0) std::cerr << "tapestry: " << message << "\n";
        else if (root) std::cerr << "tapestry: " << o.plan << ": " << message << "\n";
        std::cout.flush();
        std::cerr.flush();
        launch::finish_mpi(true);
        return kExitInvalid;
    };
    if (!backend_error.empty()) return refuse(backend_error);
    int kill_rank = -1, kill_after = 0;
    if (!o.kill_rank.empty() && std::sscanf(o.kill_rank.c_str(), "%d:%d", &kill_rank, &kill_after) != 2)
        return refuse("--kill-rank: expected RANK:STEPS");

    auto loaded = plan::load_plan(o.plan);
    if (!loaded) return refuse(loaded.error());
    // Asked of the session now, not after the run: every rank gets the same answer
    // (it only reads), and a launch does not end by failing to keep what it measured.
    if (!o.session.empty())
        if (const std::string why = session_refusal(o.session); !why.empty()) return refuse("--session: " + why);
    const plan::Plan &p = *loaded;
    if (o.fail_step != -1 && (o.fail_step < 0 || static_cast<size_t>(o.fail_step) >= p.steps.size()))
        return refuse("--fail-step: the plan has " + plural(static_cast<long long>(p.steps.size()), "step") + " (0 … " +
                      std::to_string(p.steps.size() - 1) + ")");

    // Before any input is made: the plan against the backend and this machine's
    // memory (a plan of a graph too large is refused by name, nothing allocated).
    if (auto fits = launch::check_launchable(p, *backend, o.oracle); !fits) return refuse("not launched: " + fits.error());
    std::map<TensorId, TensorData> inputs;
    std::string input_source;
    if (!o.inputs_dir.empty()) {
        auto read = read_inputs_dir(p.graph, o.inputs_dir);
        if (!read) return refuse(read.error());
        inputs = std::move(read).value();
        input_source = "directory '" + o.inputs_dir + "'";
    }
    // Random values for every input (and parameter without one) not read from the directory.
    for (auto &[id, value] : make_random_inputs(p.graph, o.seed))
        if (!inputs.count(id)) inputs.emplace(id, std::move(value));
    if (input_source.empty()) input_source = "random (seed " + std::to_string(o.seed) + ")";

    ProgressBar bar(!o.json && root);
    launch::LaunchOptions lo;
    lo.wait_timeout_seconds = o.timeout;
    lo.fail_step = o.fail_step;
    lo.fail_prepare_rank = o.fail_prepare_rank;
    const int rank = backend->rank();
    lo.progress = [&bar, rank, kill_rank, kill_after](int done, int total) {
        if (rank == kill_rank && done >= kill_after) std::raise(SIGKILL);  // a rank dying mid-run (tests)
        bar.update("launch", done, total);
    };
    InterruptGuard interrupt;
    lo.cancelled = [] { return InterruptGuard::interrupted(); };
    auto result = launch::launch_plan(p, *backend, inputs, lo);
    interrupt.release();
    bar.clear();
    if (!result) return refuse("not launched: " + result.error());
    if (!root) {  // rank 0 reports, checks and keeps the launch
        const bool ran = result->ok();
        launch::finish_mpi(ran);
        return ran ? kExitOk : kExitInvalid;
    }
    const int code = report_launch(o, p, *backend, inputs, input_source, *result);
    launch::finish_mpi(result->ok());
    return code;
}

// Rank 0's part after the run: the check, outputs, the session and the report.
int report_launch(const LaunchCommandOptions &o, const plan::Plan &p, const launch::Backend &backend,
                  const std::map<TensorId, TensorData> &inputs, const std::string &input_source,
                  const launch::LaunchResult &result) {
    auto refuse = [&](const std::string &message) {
        if (o.json) print_json(ordered_json{{"plan", o.plan}, {"ok", false}, {"status", "refused"}, {"error", message}});
        else std::cerr << "tapestry: " << o.plan << ": " << message << "\n";
        return kExitInvalid;
    };

    std::optional<launch::LaunchCheck> check;
    std::string check_error;
    if (result.ok()) {
        launch::CheckOptions co;
        co.oracle = o.oracle;
        auto c = launch::check_outputs(p, inputs, result.outputs, co);
        if (c) check = std::move(c).value();
        else check_error = c.error();
    }
    std::string written;
    if (result.ok() && !o.outputs_dir.empty()) {
        const std::string error = write_outputs_dir(p.graph, result.outputs, o.outputs_dir);
        if (!error.empty()) return refuse(error);
        written = o.outputs_dir;
    }
    const bool ok = result.ok() && check && check->pass();
    std::string kept, keep_error;
    if (!o.session.empty()) {
        auto k = keep_launch(o.session, p, result, check ? &*check : nullptr);
        if (k) kept = *k;
        else keep_error = "keeping the launch in " + o.session + ": " + k.error();
    }

    if (o.json) {
        ordered_json j;
        j["plan"] = o.plan;
        j["ok"] = ok;
        j["status"] = result.status;
        j["backend"] = backend.name();
        j["backend_description"] = backend.describe();
        j["inputs"] = input_source;
        if (!result.ok())
            j["fault"] = {{"step", result.fault.step},
                          {"device", result.fault.device >= 0 ? ordered_json(p.devices[static_cast<size_t>(result.fault.device)].name) : ordered_json(nullptr)},
                          {"rank", result.fault.rank},
                          {"message", result.fault.message}};
        j["measured"] = {{"label", "measured on this machine"},
                         {"wall_seconds", result.wall_seconds},
                         {"steps_run", result.steps.size()},
                         {"moved_bytes", result.moved_bytes}};
        j["predicted"] = {{"label", "prediction of the cost model for target " + p.target + " (not a measurement)"},
                          {"makespan_seconds", result.predicted_makespan}};
        j["devices"] = ordered_json::array();
        const std::vector<int> counts = steps_per_device(p);
        for (size_t d = 0; d < result.devices.size(); ++d) j["devices"].push_back(device_json(result.devices[d], counts[d]));
        j["steps"] = ordered_json::array();
        for (const launch::MeasuredStep &m : result.steps)
            j["steps"].push_back({{"step", m.step},
                                  {"start_seconds", m.start},
                                  {"end_seconds", m.end},
                                  {"predicted_seconds", m.predicted},
                                  {"moved_bytes", m.moved_bytes}});
        if (check) {
            j["equivalence"] = {{"pass", check->pass()}, {"summary", check->summary()}, {"outputs", ordered_json::array()}};
            for (const verify::OutputComparison &c : check->comparisons) j["equivalence"]["outputs"].push_back(comparison_json(c));
        }
        if (!check_error.empty()) j["equivalence_error"] = check_error;
        if (!written.empty()) j["outputs_dir"] = written;
        if (!kept.empty()) j["session"] = kept;
        if (!keep_error.empty()) j["session_error"] = keep_error;
        print_json(j);
        return ok && keep_error.empty() ? kExitOk : kExitInvalid;
    }
    print_report(o, p, backend, input_source, result, check);
    if (!check_error.empty()) std::cerr << "tapestry: " << o.plan << ": checking the outputs: " << check_error << "\n";
    if (!result.ok()) std::cerr << "tapestry: " << o.plan << ": launch " << result.status << ": " << result.fault.message << "\n";
    if (!written.empty()) std::cout << "wrote " << plural(static_cast<long long>(result.outputs.size()), "output") << " to " << written << "\n";
    if (!kept.empty()) std::cout << kept << "\n";
    if (!keep_error.empty()) std::cerr << "tapestry: " << o.plan << ": " << keep_error << "\n";
    return ok && keep_error.empty() ? kExitOk : kExitInvalid;
}

int devices_command(bool json) {
    std::unique_ptr<launch::Backend> cpu_backend = launch::make_cpu_backend();
    const std::int64_t available = cpu::available_memory();
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const bool mpi = launch::mpi_backend_built();
    const bool cuda = launch::cuda_backend_built();
    std::vector<std::string> not_built;
    if (!mpi) not_built.push_back("mpi");
    if (!cuda) not_built.push_back("cuda");
    // The GPUs the cuda backend finds, or why it finds none (no driver: cudaGetDeviceCount's error).
    auto gpus = launch::cuda_gpus();
    if (json) {
        ordered_json backends = ordered_json::array();
        backends.push_back({{"name", "cpu"},
                            {"cores", cores},
                            {"isa", cpu::cpu_isa().name},
                            {"available_memory_bytes", available},
                            {"max_devices", cpu_backend->max_devices()}});
        if (mpi) backends.push_back({{"name", "mpi"}, {"max_devices_per_rank", cpu_backend->max_devices()}});
        ordered_json list = ordered_json::array();
        if (gpus) {
            backends.push_back({{"name", "cuda"}, {"gpus", gpus->size()}, {"nccl", launch::cuda_nccl_status()}});
            for (const launch::GpuInfo &g : *gpus)
                list.push_back({{"ordinal", g.ordinal},
                                {"name", g.name},
                                {"memory_bytes", g.memory},
                                {"free_bytes", g.free},
                                {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                                {"multiprocessors", g.multiprocessors},
                                {"peers", g.peers}});
        }
        ordered_json out{{"backends", backends}, {"gpus", list}, {"not_built", not_built}};
        if (!gpus) out["gpus_unavailable"] = gpus.error();
        if (cuda) out["nccl"] = launch::cuda_nccl_status();
        print_json(out);
        return kExitOk;
    }
    std::cout << "backends of this tapestry:\n"
              << "  " << cpu_backend->describe() << "\n";
    if (mpi)
        std::cout << "  mpi: built in; under mpirun -np N each rank owns a block of the plan's devices (up to "
                  << cpu_backend->max_devices() << " a rank)\n";
    if (cuda && gpus) {
        std::cout << "  cuda: " << gpus->size() << " GPU" << (gpus->size() == 1 ? "" : "s") << "; NCCL "
                  << launch::cuda_nccl_status() << "\n";
        for (const launch::GpuInfo &g : *gpus) {
            std::cout << "    GPU " << g.ordinal << ": " << g.name << ", " << byte_text(g.memory) << " (" << byte_text(g.free)
                      << " free), compute capability " << g.cc_major << "." << g.cc_minor << ", " << g.multiprocessors
                      << " multiprocessors, peers:";
            if (g.peers.empty()) std::cout << " none";
            for (int p : g.peers) std::cout << " " << p;
            std::cout << "\n";
        }
    } else if (cuda) {
        std::cout << "  cuda: built in (NCCL " << launch::cuda_nccl_status() << "), but " << gpus.error() << "\n";
    }
    if (!not_built.empty()) {
        std::cout << "not built into this tapestry:";
        for (const std::string &n : not_built) std::cout << " " << n;
        std::cout << "\n";
    }
    return kExitOk;
}

}  // namespace

void add_launch_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<LaunchCommandOptions>();
    CLI::App *cmd = app.add_subcommand(
        "launch",
        "Launch a compiled plan (tapestry plan -o, optimize --export-plan) on a backend: each plan device with its "
        "own memory, the plan's steps, copies and collectives; checks the outputs against the reference run and "
        "prints measured times and memory beside the plan's predictions.");
    cmd->add_option("PLAN", o->plan, "Plan file (*.plan.json)")->required();
    cmd->add_option("--backend", o->backend,
                    "Where to run it: cpu (every device in this process), mpi (under mpirun: each rank owns a block "
                    "of the devices) or cuda (this machine's GPUs; more devices than GPUs run as virtual devices on "
                    "GPU 0; under mpirun each rank owns a block of the devices on its GPUs, NCCL between ranks)")
        ->check(CLI::IsMember({"cpu", "mpi", "cuda"}))
        ->capture_default_str();
    cmd->add_option("--inputs", o->inputs_dir,
                    "Directory with one <tensor name>.npy per input (default: random values from --seed)");
    checked_output_folder(
        cmd->add_option("--outputs", o->outputs_dir, "Write each output as <tensor name>.npy into this directory"));
    add_seed_option(*cmd, "--seed", o->seed, "Seed of the random inputs");
    cmd->add_flag("--oracle", o->oracle, "Also compare the outputs with the double-precision oracle (slow on big graphs)");
    cmd->add_option("--timeout", o->timeout, "Seconds any wait may take before the launch fails naming it")
        ->check(CLI::Range(0.01, 86400.0))
        ->capture_default_str();
    cmd->add_option("--max-devices", o->max_devices, "cpu and cuda backends: virtual devices they offer")
        ->check(CLI::Range(1, 65536))
        ->capture_default_str();
    cmd->add_option("--device-memory", o->device_memory,
                    "cpu and cuda backends: bytes each device may hold, e.g. 2GiB (default: the available (GPU) "
                    "memory shared among the plan's devices)");
    cmd->add_option("--threads", o->threads, "cpu backend: threads per kernel (default: the cores shared among the devices)")
        ->check(CLI::Range(1, 256));
    cmd->add_flag("--tf32", o->tf32, "cuda backend: f32 matrix products on TF32 tensor cores (faster, ~1e-3 relative error)");
    cmd->add_option("--transport", o->transport,
                    "cuda backend: how transfers and collectives move data between plan devices: auto (NCCL between "
                    "GPUs, copies on one GPU), peer (copies through peer access) or nccl (NCCL messages, also between "
                    "virtual devices of one GPU); default auto")
        ->check(CLI::IsMember({"auto", "peer", "nccl"}));
    cmd->add_option("--fail-step", o->fail_step, "Testing: fail this step as a kernel fault would")
        ->group("");
    cmd->add_option("--fail-prepare-rank", o->fail_prepare_rank, "Testing: that rank fails its preparation of the plan")->group("");
    cmd->add_option("--kill-rank", o->kill_rank, "Testing: RANK:STEPS, that rank kills itself after STEPS steps")->group("");
    cmd->add_option("--session", o->session,
                    "Keep the plan, the launch and its measured steps in this session (and, for a plan of the host "
                    "target, calibration points)");
    cmd->add_flag("--steps", o->steps, "Also print every step: measured beside predicted");
    cmd->add_flag("--json", o->json, "Print the result as JSON");
    cmd->footer("Exit codes: 0 ran and the outputs equal the reference, 1 refused, failed or outputs differ, 2 usage error.");
    cmd->callback([o, &action] { action = [o] { return launch_command(*o); }; });

    auto json = std::make_shared<bool>(false);
    CLI::App *dev = app.add_subcommand("devices", "What this machine offers to launch plans on: backends, cores, memory, GPUs.");
    dev->add_flag("--json", *json, "Print as JSON");
    dev->callback([json, &action] { action = [json] { return devices_command(*json); }; });
}

}  // namespace tapestry::cli
