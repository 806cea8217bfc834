// tapestry-gpu-check (docs/gpu.md): the slim program that launches plans on a
// lent GPU machine, which has none of our Debian packages. It links the engine's
// index, graph, ops, plan and launch core with the CUDA kernels — no oneDNN, no
// SQLite, no Qt — and reads a pack made here by tapestry-gpu-pack: plans, their
// inputs and reference outputs (.npy), tolerances per output. For every case it
// launches the plan on the cuda backend, compares every output with its
// reference, and times every step (CUDA events), then the whole plan enqueued
// without host synchronisation; for every benchmark plan it times the plan on
// random inputs. Results: one JSON object per line (--out DIR/results.jsonl) and
// a summary; exit 0 when every case passed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/npy.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "launch/cuda_backend.h"
#include "launch/cuda_descriptors.h"
#include "launch/launch.h"
#include "plan/plan_file.h"

#if TAPESTRY_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/gate.h"
#endif

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using namespace tapestry;

namespace {

// The case running, for the crash report (fixed buffers: read in a signal handler),
// and the results file with the line that records the case as crashed — written by
// the handler, so that --resume goes on after it.
char g_case[256] = "(before the first case)";
char g_crash_line[600] = "";
int g_results_fd = -1;

}  // namespace

namespace {

struct Options {
    std::string pack;
    std::string out;
    std::string only;
    std::string group;
    bool describe = false;
    bool quick = false;
    bool resume = false;
    bool no_bench = false;
    int warmups = 3, repeats = 10;
    bool tf32 = false;
    std::string transport = "auto";
    int min_devices = 0;
};

struct Comparison {
    bool ok = true;
    std::string text;  // per output: "y max |err| 1.2e-06 (atol 1e-05, rtol 1e-04)"
    json detail = json::array();
};

// Every output against its reference as verify::compare_values does it:
// |out − ref| ≤ atol + rtol·|ref| element by element (NaN matches NaN, an
// infinity an equal one), with the case's tolerances (atol already absolute).
Comparison compare(const std::map<TensorId, TensorData> &outputs, const fs::path &reference, const json &wanted) {
    Comparison c;
    if (wanted.empty()) {
        c.ok = false;
        c.text = "the case names no outputs";
    }
    for (const auto &[key, spec] : wanted.items()) {
        const std::string id = key;  // a plain variable: clang before 16 lets no lambda capture a binding
        json d{{"tensor", id}};
        auto problem = [&](const std::string &why) {
            c.ok = false;
            c.text += id + ": " + why + "; ";
            d["error"] = why;
            c.detail.push_back(d);
        };
        const auto got = outputs.find(TensorId(id));
        if (got == outputs.end()) {
            problem("not produced");
            continue;
        }
        auto loaded = read_npy(reference / spec.value("file", id + ".npy"));
        if (!loaded) {
            problem("reference unreadable: " + loaded.error());
            continue;
        }
        const TensorData &r = *loaded;
        const TensorData &o = got->second;
        const double atol = spec.value("atol", 1e-5), rtol = spec.value("rtol", 1e-4);
        if (r.element_count() != o.element_count()) {
            problem(std::to_string(o.element_count()) + " elements, the reference " + std::to_string(r.element_count()));
            continue;
        }
        double worst = 0;
        std::int64_t bad = 0, first_bad = -1;
        for (std::int64_t i = 0; i < o.element_count(); ++i) {
            const double a = o.get(i), b = r.get(i);
            bool ok;
            double e = 0;
            if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
                ok = (std::isnan(a) && std::isnan(b)) || a == b;
            } else {
                e = std::abs(a - b);
                ok = e <= atol + rtol * std::abs(b);
                worst = std::max(worst, e);
            }
            if (!ok && bad++ == 0) first_bad = i;
        }
        char line[256];
        std::snprintf(line, sizeof line, "%s max |err| %.2e (atol %.1e, rtol %.1e)%s", id.c_str(), worst, atol, rtol,
                      bad ? " FAIL" : "");
        c.text += std::string(line) + "; ";
        d["max_abs_error"] = worst;
        d["atol"] = atol;
        d["rtol"] = rtol;
        d["bad_elements"] = bad;
        if (bad) {
            c.ok = false;
            d["first_bad"] = first_bad;
            d["first_bad_value"] = o.get(first_bad);
            d["first_bad_reference"] = r.get(first_bad);
        }
        c.detail.push_back(d);
    }
    return c;
}

json step_times(const plan::Plan &p, const std::vector<std::pair<double, double>> &times) {
    json steps = json::array();
    for (size_t i = 0; i < times.size() && i < p.steps.size(); ++i) {
        const plan::Step &s = p.steps[i];
        const double secs = times[i].second - times[i].first;
        json j{{"step", i},
               {"kind", plan::step_kind_name(s.kind)},
               {"op", s.op},
               {"op_kind", s.op_kind},
               {"device", s.device},
               {"measured_s", secs},
               {"predicted_s", s.predicted}};
        if (s.kind == plan::StepKind::kernel && s.flops > 0 && secs > 0) j["tflops"] = s.flops / secs / 1e12;
        steps.push_back(j);
    }
    return steps;
}

int run(const Options &o) {
    const auto t_start = std::chrono::steady_clock::now();
    // --resume: the cases already in results.jsonl are not run again (the run before
    // ended at a kernel fault, which leaves the GPU unusable to its process).
    std::set<std::string> done;
    std::ofstream results;
    if (!o.out.empty()) {
        fs::create_directories(o.out);
        const fs::path file = fs::path(o.out) / "results.jsonl";
        if (o.resume) {
            std::ifstream old(file);
            for (std::string line; std::getline(old, line);) {
                try {
                    const json j = json::parse(line);
                    if (j.value("record", "") == "case") done.insert(j.value("name", ""));
                } catch (const std::exception &) {
                }
            }
        }
        results.open(file, o.resume ? std::ios::app : std::ios::trunc);
        g_results_fd = ::open(file.c_str(), O_WRONLY | O_APPEND);
    }
    auto emit = [&](const json &j) {
        if (results) results << j.dump() << "\n";
        results.flush();
    };
    // First: what this machine has.
    json env{{"record", "environment"}};
#if TAPESTRY_HAVE_CUDA
    env["libraries"] = cuda::cuda_library_versions();
#endif
    auto gpus = launch::cuda_gpus();
    if (!gpus) {
        std::cout << "tapestry-gpu-check: " << gpus.error() << "\n";
        env["error"] = gpus.error();
        emit(env);
        return 1;
    }
    env["gpus"] = json::array();
    for (const launch::GpuInfo &g : *gpus)
        env["gpus"].push_back({{"name", g.name},
                               {"memory_bytes", g.memory},
                               {"cc", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                               {"sms", g.multiprocessors}});
    std::cout << env.dump() << "\n";
    emit(env);
#if TAPESTRY_HAVE_CUDA
    // The gate that the warm and benchmark timings enqueue behind (runtime/cuda/gate.h).
    if (auto gate = cuda::gate_self_check(); gate) {
        std::cout << "ok   gate: a shut gate gives up by itself, an opened one lets go\n";
    } else {
        std::cout << "FAIL " << gate.error() << "\n";
        emit(json{{"record", "gate"}, {"error", gate.error()}});
    }
#endif

    std::ifstream mf(fs::path(o.pack) / "manifest.json");
    if (!mf) {
        std::cerr << "tapestry-gpu-check: " << o.pack << ": no manifest.json\n";
        return 1;
    }
    json manifest;
    try {
        manifest = json::parse(mf);
    } catch (const std::exception &e) {
        std::cerr << "tapestry-gpu-check: " << o.pack << "/manifest.json: " << e.what() << "\n";
        return 1;
    }
    if (manifest.value("format", "") != "tapestry-gpu-pack") {
        std::cerr << "tapestry-gpu-check: " << o.pack << "/manifest.json: not a tapestry-gpu-pack\n";
        return 1;
    }
    launch::CudaBackendOptions bo;
    bo.tf32 = o.tf32;
    bo.transport = launch::transport_from_name(o.transport).value_or(launch::CudaTransport::automatic);
    // One backend for every case: the GPUs' handles and caches are made once.
    auto backend = launch::make_cuda_backend(bo);
    int passed = 0, failed = 0;
    std::map<std::string, std::pair<int, int>> by_group;
    std::vector<std::string> failures;
    for (const json &c : manifest.value("cases", json::array())) {
        const std::string name = c.value("name", "?");
        std::snprintf(g_case, sizeof g_case, "%s", name.c_str());
        {
            json crashed{{"record", "case"}, {"name", name}, {"group", c.value("group", "")}, {"ok", false},
                         {"error", "the process crashed running it (tapestry-gpu-check's log has the frames)"}};
            std::snprintf(g_crash_line, sizeof g_crash_line, "%s\n", crashed.dump().c_str());
        }
        if (!o.only.empty() && name.find(o.only) == std::string::npos) continue;
        if (o.quick && !c.value("quick", false)) continue;
        if (done.count(name)) continue;
        if (!o.group.empty() && c.value("group", "") != o.group) continue;
        const std::string group = c.value("group", "");
        json rec{{"record", "case"}, {"name", name}, {"group", group}};
        auto fail = [&](const std::string &why) {
            rec["ok"] = false;
            rec["error"] = why;
            ++failed;
            by_group[group].second++;
            failures.push_back(name + ": " + why);
            std::cout << "FAIL " << name << ": " << why << "\n" << std::flush;
            emit(rec);
        };
        // A fault that left the GPU unusable ends this process: exit 3, resume in a new one.
        auto lost = [&]() {
            if (auto ok = launch::cuda_devices_usable(); !ok) {
                std::cout << "the GPU is lost to this process after " << name << ": " << ok.error()
                          << " — exiting 3 (run again with --resume)\n";
                return true;
            }
            return false;
        };
        auto loaded = plan::load_plan((fs::path(o.pack) / c.value("plan", "")).string());
        if (!loaded) {
            fail(loaded.error());
            continue;
        }
        const plan::Plan &p = *loaded;
        if (static_cast<int>(p.devices.size()) < o.min_devices) continue;
        rec["devices"] = p.devices.size();
        rec["transport"] = o.transport;
        if (o.describe) {
            auto d = launch::describe_cuda_launch(p, static_cast<int>(gpus->size()));
            std::cout << (d ? launch::descriptors_text(p, *d) : d.error() + "\n");
        }
        // The packed inputs, then every input or parameter still missing from the seed
        // (as tapestry launch --inputs DIR --seed S).
        std::map<TensorId, TensorData> inputs;
        if (c.contains("inputs") && c["inputs"].is_string()) {
            auto read = read_inputs_dir(p.graph, fs::path(o.pack) / c["inputs"].get<std::string>());
            if (!read) {
                fail("inputs: " + read.error());
                continue;
            }
            inputs = std::move(read).value();
        }
        for (auto &[id, value] : make_random_inputs(p.graph, c.value("seed", std::uint64_t{1})))
            if (!inputs.count(id)) inputs.emplace(id, std::move(value));
        if (!backend) {
            fail(backend.error());
            continue;
        }
        launch::LaunchOptions lo;
        lo.wait_timeout_seconds = 60;
        auto result = launch::launch_plan(p, **backend, inputs, lo);
        if (!result) {
            fail("not launched: " + result.error());
            if (lost()) return 3;
            continue;
        }
        if (!result->ok()) {
            fail("launch " + result->status + ": " + result->fault.message);
            if (lost()) return 3;
            continue;
        }
        Comparison cmp = compare(result->outputs, fs::path(o.pack) / c.value("reference", ""),
                                 c.value("outputs", json::object()));
        // Kernel cases: the double-precision oracle too.
        if (c.contains("oracle") && c["oracle"].is_string()) {
            json wanted = json::object();
            const json outputs = c.value("outputs", json::object());
            for (const auto &[id, spec] : outputs.items())
                if (spec.contains("oracle")) wanted[id] = spec["oracle"];
            const Comparison vs = compare(result->outputs, fs::path(o.pack) / c["oracle"].get<std::string>(), wanted);
            cmp.ok = cmp.ok && vs.ok;
            cmp.text += "vs oracle: " + vs.text;
            rec["outputs_vs_oracle"] = vs.detail;
        }
        rec["outputs"] = cmp.detail;
        rec["ok"] = cmp.ok;
        std::vector<std::pair<double, double>> times(p.steps.size(), {0, 0});
        for (const launch::MeasuredStep &m : result->steps) times[static_cast<size_t>(m.step)] = {m.start, m.end};
        rec["launch_wall_s"] = result->wall_seconds;
        rec["predicted_makespan_s"] = result->predicted_makespan;
        rec["steps"] = step_times(p, times);
        // Warm: the plan enqueued again behind the gate, so that each step's time is the
        // GPU's alone (the launch's steps each waited for the host, and a backend before
        // the warm-up in prepare also loaded kernels in them); each step's time in the
        // median of 3 runs. Where the gate gave up, the live run's.
        auto timed = launch::run_enqueued(**backend, 1, 3, launch::Submission::gated);
        rec["warm_submission"] = "gated";
        if (!timed) {
            rec["gated_error"] = timed.error();
            timed = launch::run_enqueued(**backend, 1, 3, launch::Submission::live);
            rec["warm_submission"] = "live";
        }
        if (timed) {
            rec["enqueued_s"] = timed->seconds;
            rec["steps_warm"] = step_times(p, timed->steps);
        } else {
            rec["enqueued_error"] = timed.error();
        }
        if (!cmp.ok) {
            fail("outputs differ: " + cmp.text);
            continue;
        }
        ++passed;
        by_group[group].first++;
        std::cout << "ok   " << name << " (" << p.devices.size() << " dev): " << cmp.text << "\n" << std::flush;
        emit(rec);
    }
    // Timed plans without references: the benchmarks, then the single ops of their
    // sizes (records "benchmark" and "size"; tapestry calibrate fits the second).
    if (!o.no_bench)
        for (const auto &[list, kind] : {std::pair<const char *, const char *>{"benchmarks", "benchmark"}, {"sizes", "size"}}) {
            for (const json &b : manifest.value(list, json::array())) {
                const std::string name = b.value("name", "?");
                if (!o.only.empty() && name.find(o.only) == std::string::npos) continue;
                json rec{{"record", kind}, {"name", name}};
                auto loaded = plan::load_plan((fs::path(o.pack) / b.value("plan", "")).string());
                if (!loaded) {
                    rec["error"] = loaded.error();
                    std::cout << "bench " << name << ": " << loaded.error() << "\n";
                    emit(rec);
                    continue;
                }
                const plan::Plan &p = *loaded;
                auto inputs = make_random_inputs(p.graph, b.value("seed", 1));
                launch::LaunchOptions lo;
                lo.wait_timeout_seconds = 120;
                auto result = backend ? launch::launch_plan(p, **backend, inputs, lo)
                                      : Expected<launch::LaunchResult, std::string>(unexpected(backend.error()));
                if (!result || !result->ok()) {
                    rec["error"] = !result ? result.error() : result->fault.message;
                    std::cout << "bench " << name << ": " << rec["error"].get<std::string>() << "\n";
                    emit(rec);
                    continue;
                }
                auto timed = launch::run_enqueued(**backend, o.warmups, o.repeats);
                if (!timed) {
                    rec["error"] = timed.error();
                    emit(rec);
                    continue;
                }
                rec["devices"] = p.devices.size();
                rec["median_s"] = timed->seconds;
                rec["runs_s"] = timed->runs;
                rec["predicted_makespan_s"] = result->predicted_makespan;
                rec["steps_live"] = step_times(p, timed->steps);
                // Again behind the gate: the GPU's own time, and each step's ("steps", which
                // tapestry calibrate fits and judges) without the host's submission in it.
                auto gated = launch::run_enqueued(**backend, o.warmups, o.repeats, launch::Submission::gated);
                std::string gated_text;
                if (gated) {
                    rec["gated_median_s"] = gated->seconds;
                    rec["gated_runs_s"] = gated->runs;
                    rec["steps"] = step_times(p, gated->steps);
                    // A single op's every run: repeated measurements of its shape (calibrate fits each).
                    if (std::string(kind) == "size")
                        for (const auto &run_steps : gated->run_steps) rec["steps_runs"].push_back(step_times(p, run_steps));
                    char buf[64];
                    std::snprintf(buf, sizeof buf, ", %.3f ms gated", gated->seconds * 1e3);
                    gated_text = buf;
                } else {
                    rec["gated_error"] = gated.error();
                    rec["steps"] = rec["steps_live"];
                    gated_text = " (gated: " + gated.error() + ")";
                }
                std::printf("bench %s (%zu dev): median %.3f ms over %d runs%s (predicted %.3f ms)\n", name.c_str(),
                            p.devices.size(), timed->seconds * 1e3, o.repeats, gated_text.c_str(),
                            result->predicted_makespan * 1e3);
                emit(rec);
            }
        }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    json summary{{"record", "summary"}, {"passed", passed}, {"failed", failed}, {"seconds", secs}};
    for (const auto &[g, pf] : by_group) summary["groups"][g] = {{"passed", pf.first}, {"failed", pf.second}};
    emit(summary);
    std::cout << "summary: " << passed << " passed, " << failed << " failed (" << secs << " s)\n";
    for (const auto &[g, pf] : by_group) std::cout << "  " << g << ": " << pf.first << " passed, " << pf.second << " failed\n";
    for (const std::string &f : failures) std::cout << "  FAILED " << f << "\n";
    return failed == 0 ? 0 : 1;
}

}  // namespace

namespace {

// A crash says which case and where (the frames as object+offset: addr2line them
// against the unstripped build here), then dies of the same signal.
extern "C" void on_crash(int sig) {
    char head[400];
    const int n = std::snprintf(head, sizeof head, "\ntapestry-gpu-check: crashed (signal %d) in case %s; frames:\n", sig, g_case);
    if (n > 0) (void)!write(STDERR_FILENO, head, static_cast<size_t>(std::min<int>(n, sizeof head - 1)));
    void *frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
    if (g_results_fd >= 0 && g_crash_line[0]) (void)!write(g_results_fd, g_crash_line, std::strlen(g_crash_line));
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

}  // namespace

int main(int argc, char **argv) {
    std::signal(SIGSEGV, on_crash);
    std::signal(SIGABRT, on_crash);
    std::signal(SIGBUS, on_crash);
    CLI::App app{"tapestry-gpu-check: launch a pack of plans (tapestry-gpu-pack) on this machine's GPUs, compare "
                 "with the references, time every step."};
    Options o;
    app.add_option("PACK", o.pack, "Pack directory (manifest.json)")->required();
    app.add_option("--out", o.out, "Write results.jsonl here");
    app.add_option("--only", o.only, "Only cases and benchmarks whose name contains this");
    app.add_option("--group", o.group, "Only the cases of this group (kernel, example)");
    app.add_flag("--quick", o.quick, "Only the pack's quick cases (\"quick\": true)");
    app.add_flag("--resume", o.resume, "Skip the cases --out's results.jsonl already holds");
    app.add_flag("--describe", o.describe, "Print each plan's CUDA launch descriptors");
    app.add_flag("--no-bench", o.no_bench, "Skip the benchmarks");
    app.add_option("--warmups", o.warmups, "Benchmark warm-up runs")->capture_default_str();
    app.add_option("--repeats", o.repeats, "Benchmark timed runs")->capture_default_str();
    app.add_flag("--tf32", o.tf32, "f32 matrix products on TF32 tensor cores");
    app.add_option("--transport", o.transport,
                   "Transfers between plan devices: auto, peer (copies) or nccl (NCCL messages, on one GPU a "
                   "one-rank communicator sending to itself)")
        ->check(CLI::IsMember({"auto", "peer", "nccl"}))
        ->capture_default_str();
    app.add_option("--min-devices", o.min_devices, "Only the cases whose plan has at least this many devices");
    CLI11_PARSE(app, argc, argv);
    return run(o);
}
