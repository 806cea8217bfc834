// Compiled plans (issue 15): targets, the cost model against hand-computed and
// published figures, placement, the plan compiler, its certificate and the
// mutation suite that shows each check can fail, plan files, and the baselines on
// every example.
#include <QtTest/QtTest>
#include <cmath>
#include <filesystem>
#include <random>

#include "cost/model.h"
#include "cost/target.h"
#include "io/project_file.h"
#include "passes/movement.h"
#include "passes/place.h"
#include "passes/shard.h"
#include "plan/baselines.h"
#include "plan/certify.h"
#include "plan/compile.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "plan/simulate.h"
#include "schedule/arena.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

cost::Target h100() { return test::builtin_target_or_stop("h100-sxm"); }

cost::Model model_of(const cost::Target &t, int devices, int nodes = 0) {
    auto s = cost::cluster_shape(t, devices, nodes);
    if (!s) qFatal("%s", s.error().c_str());
    return cost::Model(t, *s);
}

std::string tiny_mlp() {
    return test::mlp_project_text(4);
}

Graph load_example(const std::string &name) { return test::example_graph(name); }

plan::PlanResult planned(const Graph &g, int devices, std::optional<plan::Baseline> baseline,
                         const std::string &placement = "shard") {
    plan::PlanRequest req;
    req.target = h100();
    req.devices = devices;
    req.baseline = baseline;
    req.placement = placement;
    auto r = plan::make_plan(g, req);
    if (!r) qFatal("make_plan: %s", r.error().c_str());
    return std::move(r).value();
}

bool close(double a, double b, double rel = 1e-9) {
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

}  // namespace

class TestPlan : public QObject {
    Q_OBJECT
private slots:
    // ---- targets ----
    void builtinTargetsParseAndRoundTrip() {
        QVERIFY(cost::builtin_target_names().size() >= 6);
        for (const std::string &name : cost::builtin_target_names()) {
            auto t = cost::builtin_target(name);
            QVERIFY2(t.has_value(), t ? "" : t.error().c_str());
            auto again = cost::parse_target(cost::target_json(*t), name);
            QVERIFY2(again.has_value(), again ? "" : again.error().c_str());
            QCOMPARE(cost::target_json(*again), cost::target_json(*t));
            if (t->kind == "gpu") QVERIFY(t->missing_figures().empty());
            else QVERIFY(!t->missing_figures().empty());  // the host is measured first
            // Every GPU gives its power limit, cited; the host none.
            QCOMPARE(t->device.power.present, t->kind == "gpu");
            if (t->device.power.present) QVERIFY(t->device.power.value >= 300 && !t->device.power.source.empty());
        }
        QCOMPARE(cost::builtin_target("h100-sxm")->device.power.value, 700.0);
        QVERIFY(cost::builtin_target("h100").has_value());  // a unique prefix
        auto unknown = cost::builtin_target("tpu");
        QVERIFY(!unknown);
        QVERIFY(unknown.error().find("unknown target 'tpu'") != std::string::npos);
    }
    void malformedTargetsNameTheField() {
        const std::string good = cost::target_json(h100());
        auto broken = [&](const std::string &from, const std::string &to) {
            std::string s = good;
            const size_t p = s.find(from);
            if (p == std::string::npos) qFatal("fixture text not found: %s", from.c_str());
            s.replace(p, from.size(), to);
            auto r = cost::parse_target(s, "t.json");
            return r ? std::string("accepted") : r.error();
        };
        QVERIFY(broken("\"format\": \"tapestry-target\"", "\"format\": \"x\"").find("t.json: format") == 0);
        QVERIFY(broken("\"kind\": \"gpu\"", "\"kind\": \"tpu\"").find("t.json: kind") == 0);
        // A top-level member's path has no leading dot (it read "t.json: .name: …").
        QCOMPARE(broken("\"name\": \"h100-sxm\"", "\"name\": 7"), std::string("t.json: name: expected a string"));
        QCOMPARE(broken("\"version\": 1", "\"version\": 2"), std::string("t.json: version: this build reads version 1"));
        const std::string bad_source = broken("\"source\": \"", "\"source\": \"nowhere-");
        QVERIFY2(bad_source.find("is not in \"sources\"") != std::string::npos, bad_source.c_str());
        QCOMPARE(cost::parse_target("{", "t.json").error(), std::string("t.json: not valid JSON"));
        const std::string no_links = broken("\"links\"", "\"linkz\"");
        QVERIFY2(no_links.find("t.json: links: missing") == 0, no_links.c_str());
    }
    void measuredHostTarget() {
        auto base = cost::builtin_target("host");
        QVERIFY(base.has_value());
        QVERIFY(!base->missing_figures().empty());
        cost::HostFigures f{1e11, 0, 2e10, 8e9, 3e-6, "test figures"};
        const cost::Target t = cost::measured_target(*base, f);
        QVERIFY2(t.missing_figures().empty(), t.missing_figures().c_str());
        QCOMPARE(t.peak_flops(DType::f32), 1e11);
        QCOMPARE(t.peak_flops(DType::bf16), 1e11);  // no bf16 figure: computed at the f32 rate
        QVERIFY(cost::parse_target(cost::target_json(t), "host").has_value());
        // The host's devices are workers sharing its cores and memory: each of 4 has a
        // quarter of the measured rates; a GPU's devices have their own.
        const cost::Model one = model_of(t, 1), four = model_of(t, 4);
        QCOMPARE(four.device_share(), 0.25);
        const cost::KernelWork gemm{cost::KernelClass::gemm, DType::f32, 1e9, 1e3};
        QVERIFY(close(one.roofline_seconds(gemm), 1e9 / 1e11));
        QVERIFY(close(four.roofline_seconds(gemm), 4 * 1e9 / 1e11));
        const cost::KernelWork copy{cost::KernelClass::copy, DType::f32, 0, 1e9};
        QVERIFY(close(four.roofline_seconds(copy), 4 * 1e9 / 2e10));
        QCOMPARE(model_of(h100(), 8).device_share(), 1.0);
    }
    // Measured with 2 threads, the host's devices share 2 cores: a kernel runs on
    // max(1, 2 / devices) of them, and at most 2 / that many steps run at once.
    void hostDevicesShareTheMeasuredCores() {
        auto base = cost::builtin_target("host");
        QVERIFY(base.has_value());
        cost::HostFigures f{1e11, 0, 2e10, 8e9, 3e-6, "test figures", 2};
        const cost::Target t = cost::measured_target(*base, f);
        QCOMPARE(t.device.cores.value, 2.0);
        auto back = cost::parse_target(cost::target_json(t), "host");
        QVERIFY(back.has_value());
        QCOMPARE(back->device.cores.value, 2.0);
        const cost::Model one = model_of(t, 1), two = model_of(t, 2), four = model_of(t, 4);
        QCOMPARE(one.shape().shared_cores, 2);
        QCOMPARE(one.shape().threads_per_device(), 2);
        QCOMPARE(one.shape().concurrent_steps(), 1);
        QCOMPARE(four.shape().threads_per_device(), 1);
        QCOMPARE(four.shape().concurrent_steps(), 2);
        QCOMPARE(one.device_share(), 1.0);
        QCOMPARE(two.device_share(), 0.5);
        QCOMPARE(four.device_share(), 0.5);  // one core of two, not a quarter of the machine
        // A transfer between them is a copy in the machine's memory.
        QVERIFY(close(four.transfer_seconds(1e6, 0, 3), four.copy_seconds(1e6)));
        // So is a collective: the bytes its ring moves, copied (an all-reduce of
        // S on 4 devices moves 2·3·S; an all-gather 3·S), on the ring, calibrated
        // as its own kernel of class copy.
        const double S = 6e6;
        QCOMPARE(cost::collective_moved_bytes(cost::Collective::all_reduce, S, 4), 6 * S);
        QCOMPARE(cost::collective_moved_bytes(cost::Collective::all_gather, S, 4), 3 * S);
        QCOMPARE(cost::collective_moved_bytes(cost::Collective::broadcast, S, 1), 0.0);
        const cost::CollectiveTime ar = four.collective_seconds(cost::Collective::all_reduce, S, {0, 1, 2, 3});
        QCOMPARE(ar.algorithm, cost::Algorithm::ring);
        QVERIFY(!ar.crosses_nodes);
        QVERIFY(close(ar.seconds, four.copy_seconds(6 * S)));
        const auto w = cost::shared_collective_work(four.shape(), cost::Collective::all_reduce, S, {0, 1, 2, 3});
        QVERIFY(w.has_value());
        QCOMPARE(w->kernel_class, cost::KernelClass::copy);
        QCOMPARE(w->kernel, std::string("all_reduce"));
        QCOMPARE(w->bytes, 12 * S);
        QVERIFY(close(four.collective_seconds(cost::Collective::all_gather, S, {1, 3}).seconds, four.copy_seconds(S)));
        // On GPUs a collective stays the links' α–β time.
        QVERIFY(!cost::shared_collective_work(model_of(h100(), 8).shape(), cost::Collective::all_reduce, S, {0, 1}));
        QCOMPARE(cost::parse_collective("reduce_scatter"), std::optional{cost::Collective::reduce_scatter});
        QVERIFY(!cost::parse_collective("all_to_all"));
        // A GPU target's devices share nothing.
        QCOMPARE(model_of(h100(), 8).shape().shared_cores, 0);
        QCOMPARE(model_of(h100(), 8).shape().concurrent_steps(), 0);
        // A core count that is not one is refused by name.
        std::string text = cost::target_json(t);
        const std::string key = "\"cores\": {";
        const size_t at = text.find(key);
        QVERIFY(at != std::string::npos);
        const size_t value = text.find("\"value\": 2", at), end = text.find_first_of(",\n}", value);
        QVERIFY(value != std::string::npos && end != std::string::npos);
        text.replace(value, end - value, "\"value\": 0");
        auto bad = cost::parse_target(text, "host.json");
        QVERIFY(!bad);
        QVERIFY2(bad.error().find("device.cores.value") != std::string::npos, bad.error().c_str());
    }

    // ---- the cost model, by hand ----
    void rooflineByHand() {
        const cost::Target t = h100();
        const cost::Model m = model_of(t, 1);
        // A 4096³ bf16 GEMM: 2·4096³ FLOPs, 3·4096²·2 bytes: compute bound.
        const double flops = 2.0 * 4096 * 4096 * 4096, bytes = 3.0 * 4096 * 4096 * 2;
        const cost::KernelWork gemm{cost::KernelClass::gemm, DType::bf16, flops, bytes};
        const double roof = flops / t.device.peak_flops.at("bf16").value;
        QVERIFY(close(m.roofline_seconds(gemm), roof));
        const double eff = t.device.efficiency[0].at(flops);
        QVERIFY(close(m.kernel_seconds(gemm), roof / eff + t.device.launch_overhead.value));
        // An elementwise add of 2^24 f32: 3·2^26 bytes, memory bound.
        const double ebytes = 3.0 * (1 << 24) * 4;
        const cost::KernelWork add{cost::KernelClass::elementwise, DType::f32, double(1 << 24), ebytes};
        QVERIFY(close(m.roofline_seconds(add), ebytes / t.device.memory_bandwidth.value));
        const double eeff = t.device.efficiency[2].at(ebytes);
        QVERIFY(close(m.kernel_seconds(add), ebytes / t.device.memory_bandwidth.value / eeff + t.device.launch_overhead.value));
    }
    void efficiencyCurveInterpolatesInLogSize() {
        cost::EfficiencyCurve c;
        c.points = {{1e3, 0.1}, {1e5, 0.5}};
        QCOMPARE(c.at(10), 0.1);    // clamped below
        QCOMPARE(c.at(1e7), 0.5);   // clamped above
        QVERIFY(close(c.at(1e4), 0.3));  // halfway in log10
    }
    void collectivesByHand() {
        const double S = 1 << 30, a = 2e-6, b = 100e9;
        // Ring all-reduce: 2(n−1)/n · S/β + (n−1)·2α.
        QVERIFY(close(cost::ring_all_reduce_seconds(S, 8, a, b), 2.0 * 7 / 8 * S / b + 7 * 2 * a));
        QVERIFY(close(cost::ring_all_gather_seconds(S, 4, a, b), 3.0 / 4 * S / b + 3 * a));
        QVERIFY(close(cost::tree_all_reduce_seconds(S, 8, a, b), 2.0 * S / b + 2 * 3 * a));
        QCOMPARE(cost::ring_all_reduce_seconds(S, 1, a, b), 0.0);
        // The model picks the faster: ring for a big buffer, tree for a tiny one on many devices.
        const cost::Target t = h100();
        const cost::Model node = model_of(t, 8, 1);
        const std::vector<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
        QCOMPARE(std::string(cost::algorithm_name(node.collective_seconds(cost::Collective::all_reduce, S, eight).algorithm)), std::string("ring"));
        QVERIFY(!node.collective_seconds(cost::Collective::all_reduce, S, eight).crosses_nodes);
        const cost::Model m = model_of(t, 64, 8);
        std::vector<int> all(64);
        for (int i = 0; i < 64; ++i) all[static_cast<size_t>(i)] = i;
        QCOMPARE(std::string(cost::algorithm_name(m.collective_seconds(cost::Collective::all_reduce, 64, all).algorithm)), std::string("tree"));
        QVERIFY(m.collective_seconds(cost::Collective::all_reduce, S, all).crosses_nodes);
        // Broadcast: a pipelined ring, S/β + (n−1)·α — NCCL has no tree for it, even
        // for a tiny buffer on 64 devices.
        QVERIFY(close(cost::ring_broadcast_seconds(S, 8, a, b), S / b + 7 * a));
        const cost::CollectiveTime bc = m.collective_seconds(cost::Collective::broadcast, 64, all);
        QCOMPARE(std::string(cost::algorithm_name(bc.algorithm)), std::string("ring"));
        const cost::Link &nvlink = *t.link("nvlink4");
        const cost::CollectiveTime bc8 = node.collective_seconds(cost::Collective::broadcast, S, eight);
        QVERIFY(close(bc8.seconds, S / nvlink.effective_bandwidth() + 7 * nvlink.latency.value));
    }
    // Published figures (docs/cost-model.md quotes these lines).
    void publishedFigures() {
        const cost::Target t = h100();
        {
            const cost::Model m = model_of(t, 1);
            const double M = 2048, N = 2048, K = 13312;
            const cost::KernelWork w{cost::KernelClass::gemm, DType::bf16, 2 * M * N * K, 2 * (M * K + K * N + M * N)};
            const double tflops = 2 * M * N * K / m.kernel_seconds(w) / 1e12;
            qInfo("published: H100 SXM bf16 GEMM 2048x2048x13312: 794.5 TFLOP/s measured (ml-engineering MAMF); predicted %.1f TFLOP/s (%+.1f%%)",
                  tflops, 100 * (tflops / 794.5 - 1));
            QVERIFY(std::abs(tflops / 794.5 - 1) < 0.15);
        }
        auto busbw = [&](int devices, int nodes) {
            const cost::Model m = model_of(t, devices, nodes);
            std::vector<int> all(static_cast<size_t>(devices));
            for (int i = 0; i < devices; ++i) all[static_cast<size_t>(i)] = i;
            const double S = 8.0 * (1 << 30);  // 8 GiB, as nccl-tests' largest sizes
            const double s = m.collective_seconds(cost::Collective::all_reduce, S, all).seconds;
            return S / s * 2.0 * (devices - 1) / devices / 1e9;
        };
        const double one = busbw(8, 1), two = busbw(16, 2);
        qInfo("published: NCCL all_reduce busbw 8xH100 NVLink (ring): ~370 GB/s measured (nccl-tests #212); predicted %.0f GB/s (%+.1f%%)",
              one, 100 * (one / 370 - 1));
        qInfo("published: NCCL all_reduce busbw 2x8 H100 NDR IB (ring): ~396 GB/s measured (nccl-tests #319); predicted %.0f GB/s (%+.1f%%)",
              two, 100 * (two / 396 - 1));
        QVERIFY(std::abs(one / 370 - 1) < 0.15);
        QVERIFY(std::abs(two / 396 - 1) < 0.15);
        // The same on A100 80 GB (docs/targets.md, "Published figures", notes).
        auto a100 = cost::builtin_target("a100-80gb");
        QVERIFY(a100.has_value());
        {
            const cost::Model m = model_of(*a100, 1);
            const double M = 1024, N = 10240, K = 5120;
            const cost::KernelWork w{cost::KernelClass::gemm, DType::bf16, 2 * M * N * K, 2 * (M * K + K * N + M * N)};
            const double tflops = 2 * M * N * K / m.kernel_seconds(w) / 1e12;
            qInfo("published: A100 bf16 GEMM 1024x10240x5120: 271.2 TFLOP/s measured; predicted %.1f TFLOP/s (%+.1f%%)", tflops,
                  100 * (tflops / 271.2 - 1));
            QVERIFY(std::abs(tflops / 271.2 - 1) < 0.25);
        }
        auto a100_busbw = [&](int devices, int nodes) {
            const cost::Model m = model_of(*a100, devices, nodes);
            std::vector<int> all(static_cast<size_t>(devices));
            for (int i = 0; i < devices; ++i) all[static_cast<size_t>(i)] = i;
            const double S = 16.0 * (1 << 30);
            return S / m.collective_seconds(cost::Collective::all_reduce, S, all).seconds * 2.0 * (devices - 1) / devices / 1e9;
        };
        const double a1 = a100_busbw(8, 1), a2 = a100_busbw(16, 2);
        qInfo("published: NCCL all_reduce busbw 8xA100: 234.89 GB/s measured; predicted %.0f GB/s (%+.1f%%)", a1, 100 * (a1 / 234.89 - 1));
        qInfo("published: NCCL all_reduce busbw 2x8 A100 HDR (ring): 192 GB/s measured; predicted %.0f GB/s (%+.1f%%)", a2, 100 * (a2 / 192 - 1));
        QVERIFY(std::abs(a1 / 234.89 - 1) < 0.25);
        QVERIFY(std::abs(a2 / 192 - 1) < 0.25);
    }
    void calibrationScalesAndReportsItsError() {
        cost::Calibration c;
        QCOMPARE(c.factor(cost::KernelClass::gemm, 1e9), 1.0);
        c.add({cost::KernelClass::gemm, 2e9, 1.0, 2.0});
        c.add({cost::KernelClass::gemm, 3e9, 1.0, 2.2});
        c.add({cost::KernelClass::gemm, 5e9, 1.0, 1.8});
        QVERIFY(close(c.factor(cost::KernelClass::gemm, 4e9), 2.0));  // the band's median
        QCOMPARE(c.factor(cost::KernelClass::gemm, 4e12), 1.0);       // another band
        const cost::CalibrationError e = c.error();
        QCOMPARE(e.samples, 3);
        QVERIFY(e.median_before > 0.4 && e.median_after < 0.11);
    }
    void calibrationIsFinerByKernelAndThreads() {
        // Two kernels of one class and band run at different fractions of the
        // prediction: each gets its own factor, an unknown kernel the band's.
        cost::Calibration c;
        for (double m : {0.5, 0.6, 0.55}) c.add({cost::KernelClass::elementwise, 2e6, 1.0, m, "layernorm", 1});
        for (double m : {1.8, 2.0, 1.9}) c.add({cost::KernelClass::elementwise, 3e6, 1.0, m, "add", 1});
        c.add({cost::KernelClass::elementwise, 4e6, 1.0, 0.2});  // a point without a kernel (threads 0)
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "layernorm", 1), 0.55));
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "add", 1), 1.9));
        // That kernel on threads it has no point on: the kernel's points on any.
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "add", 2), 1.9));
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "add"), 1.9));
        // A kernel without points, on 1 thread: the median of the band's six points on 1 thread.
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "gelu", 1), 1.2));
        // On threads the band has no point on: the whole band's seven points.
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "gelu", 4), 0.6));
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6), 0.6));
        QCOMPARE(c.factor(cost::KernelClass::elementwise, 5e7, "add", 1), 1.0);  // another band: none
        QCOMPARE(c.factor(cost::KernelClass::reduction, 5e6, "add", 1), 1.0);    // another class: none
        // One point of a kernel on 2 threads is not yet its own group (one launch's
        // noise): the kernel's points on any threads, median of 0.5 0.55 0.6 0.8.
        c.add({cost::KernelClass::elementwise, 2e6, 1.0, 0.8, "layernorm", 2});
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "layernorm", 2), 0.575));
        // From three it is, calibrated apart from the kernel on 1 thread.
        for (double m : {0.85, 0.9}) c.add({cost::KernelClass::elementwise, 2e6, 1.0, m, "layernorm", 2});
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "layernorm", 2), 0.85));
        QVERIFY(close(c.factor(cost::KernelClass::elementwise, 5e6, "layernorm", 1), 0.55));
        // The table: the band's row (every thread count, every kernel) first.
        const std::vector<cost::CalibrationEntry> t = c.table();
        QVERIFY(!t.empty());
        QCOMPARE(t[0].threads, -1);
        QCOMPARE(t[0].kernel, std::string());
        QCOMPARE(t[0].samples, 10);
        const auto row = [&](int threads, const std::string &kernel) {
            for (const cost::CalibrationEntry &e : t)
                if (e.threads == threads && e.kernel == kernel) return e;
            return cost::CalibrationEntry{};
        };
        QCOMPARE(row(1, "layernorm").samples, 3);
        QVERIFY(close(row(1, "layernorm").factor, 0.55));
        QCOMPARE(row(-1, "layernorm").samples, 6);
        QCOMPARE(row(1, "").samples, 6);
        QCOMPARE(row(0, "").samples, 1);
        QCOMPARE(row(2, "add").samples, 0);  // no such row
        // After calibration most points are within 10% (the kernel-less one is not).
        QVERIFY(c.error().median_after < 0.1);
        // The model applies the factor of the work's kernel (a GPU: threads 0).
        cost::Model m = model_of(h100(), 1);
        QCOMPARE(m.kernel_threads(), 0);
        const cost::KernelWork ln{cost::KernelClass::elementwise, DType::f32, 2e6, 2e6, "layernorm"};  // band 6 either way
        const double raw = m.kernel_seconds(ln);
        QVERIFY(raw > 0);
        for (int k = 0; k < 3; ++k) m.calibration().add({cost::KernelClass::elementwise, 2e6, 1.0, 0.5, "layernorm", 0});
        m.calibration().add({cost::KernelClass::elementwise, 2e6, 1.0, 2.0, "add", 0});
        QVERIFY(close(m.kernel_seconds(ln) / raw, 0.5));
    }

    void calibrationIsFinerByDtype() {
        // One kernel in two dtypes at one size band (an H200's layer norm of 1e7
        // bytes: 1.93× its prediction in f32, 1.09× in bf16): each dtype its own
        // factor; a dtype without points, and points of no known dtype, the
        // kernel's every-dtype group.
        using cost::KernelClass;
        cost::Calibration c;
        for (double m : {1.9, 1.93, 2.0}) c.add({KernelClass::reduction, 2e7, 1.0, m, "layernorm", 0, DType::f32});
        for (double m : {1.05, 1.09, 1.1}) c.add({KernelClass::reduction, 3e7, 1.0, m, "layernorm", 0, DType::bf16});
        QVERIFY(close(c.factor(KernelClass::reduction, 4e7, "layernorm", 0, DType::f32), 1.93));
        QVERIFY(close(c.factor(KernelClass::reduction, 4e7, "layernorm", 0, DType::bf16), 1.09));
        QVERIFY(close(c.factor(KernelClass::reduction, 4e7, "layernorm", 0, DType::f16), (1.1 + 1.9) / 2));
        QVERIFY(close(c.factor(KernelClass::reduction, 4e7, "layernorm", 0), (1.1 + 1.9) / 2));
        // Two points of a dtype are not yet its group: the kernel's eight points.
        for (double m : {0.5, 0.6}) c.add({KernelClass::reduction, 2e7, 1.0, m, "layernorm", 0, DType::f16});
        QVERIFY(close(c.factor(KernelClass::reduction, 4e7, "layernorm", 0, DType::f16), (1.09 + 1.1) / 2));
        // A dtype without a kernel is no group: the band's (the same eight points).
        QVERIFY(close(c.factor(KernelClass::reduction, 4e7, {}, 0, DType::f32), (1.09 + 1.1) / 2));
        // The table has a row per kernel and dtype, beside the kernel's every-dtype row.
        int typed = 0;
        for (const cost::CalibrationEntry &e : c.table())
            if (e.kernel == "layernorm" && e.threads == 0 && e.dtype) {
                ++typed;
                QCOMPARE(e.samples, *e.dtype == DType::f16 ? 2 : 3);
            }
        QCOMPARE(typed, 3);
        QVERIFY(c.error().median_after < c.error().median_before);
        // The model scales a kernel by its work's dtype.
        cost::Model m = model_of(h100(), 1);
        const cost::KernelWork f32{KernelClass::reduction, DType::f32, 0, 2e7, "layernorm"};
        const cost::KernelWork bf16{KernelClass::reduction, DType::bf16, 0, 2e7, "layernorm"};
        const double raw32 = m.kernel_seconds(f32), raw16 = m.kernel_seconds(bf16);
        for (const cost::CalibrationSample &sample : c.samples()) m.calibration().add(sample);
        QVERIFY(close(m.kernel_seconds(f32) / raw32, 1.93));
        QVERIFY(close(m.kernel_seconds(bf16) / raw16, 1.09));
    }

    void calibrationIsFinestByShape() {
        // Two GEMMs of equal FLOPs and size band (the MLP's c_fc and mlp_proj on this
        // CPU: 1.3× and 1.05× their prediction): each exact shape its own factor from
        // three points; a shape with fewer, or none, the kernel's group.
        using cost::KernelClass;
        const std::string fc = "2048x768 768x3072 3072 > 2048x3072", proj = "2048x3072 3072x768 768 > 2048x768";
        cost::Calibration c;
        for (double m : {1.25, 1.3, 1.35}) c.add({KernelClass::gemm, 9.6e9, 1.0, m, "linear", 2, DType::f32, fc});
        for (double m : {1.0, 1.05, 1.1}) c.add({KernelClass::gemm, 9.6e9, 1.0, m, "linear", 2, DType::f32, proj});
        QVERIFY(!cost::Calibration().has_shapes());
        QVERIFY(c.has_shapes());
        QCOMPARE(c.calibrated_shapes(), 2);
        QVERIFY(close(c.factor(KernelClass::gemm, 9.6e9, "linear", 2, DType::f32, fc), 1.3));
        QVERIFY(close(c.factor(KernelClass::gemm, 9.6e9, "linear", 2, DType::f32, proj), 1.05));
        QVERIFY(close(c.factor(KernelClass::gemm, 9.6e9, "linear", 1, DType::f32, proj), 1.05));  // on any threads
        const double kernel = (1.1 + 1.25) / 2;  // the kernel's six points
        QVERIFY(close(c.factor(KernelClass::gemm, 9.6e9, "linear", 2, DType::f32), kernel));
        QVERIFY(close(c.factor(KernelClass::gemm, 9.6e9, "linear", 2, DType::f32, "1x1 > 1"), kernel));
        QVERIFY(close(c.factor(KernelClass::gemm, 9.6e9, "linear", 2, DType::bf16, fc), kernel));  // another dtype
        // Two points of a shape are not yet its group.
        const std::string other = "1024x768 768x3072 3072 > 1024x3072";
        for (double m : {3.0, 3.0}) c.add({KernelClass::gemm, 4.8e9, 1.0, m, "linear", 2, DType::f32, other});
        QVERIFY(!close(c.factor(KernelClass::gemm, 4.8e9, "linear", 2, DType::f32, other), 3.0));
        QVERIFY(c.error().median_after < c.error().median_before);
        // The model and the plan compiler scale a kernel step by its shape.
        cost::Model m = model_of(h100(), 1);
        cost::KernelWork w{KernelClass::gemm, DType::f32, 9.6e9, 4e7, "linear", fc};
        const double raw = m.kernel_seconds(w);
        for (const cost::CalibrationSample &sample : c.samples()) m.calibration().add({sample.kernel_class, sample.size,
              sample.predicted, sample.measured, sample.kernel, 0, sample.dtype, sample.shape});
        QVERIFY(close(m.kernel_seconds(w) / raw, 1.3));
        w.shape = proj;
        QVERIFY(close(m.kernel_seconds(w) / raw, 1.05));
        // plan::step_shape writes a kernel step's read and written extents.
        plan::Step st;
        st.kind = plan::StepKind::kernel;
        st.reads = {plan::Region{0, ZRange::of_shape(ZPoint({2048, 768})), {}, {}},
                    plan::Region{1, ZRange::of_shape(ZPoint({768, 3072})), {}, {}},
                    plan::Region{2, ZRange::of_shape(ZPoint({3072})), {}, {}}};
        st.writes = {plan::Region{3, ZRange(ZPoint({0, 0}), ZPoint({2048, 3072})), {}, {}}};
        QCOMPARE(plan::step_shape(st), fc);
        st.kind = plan::StepKind::collective;
        QCOMPARE(plan::step_shape(st), std::string());
    }

    // ---- simulation ----
    // The dependency scan indexes long access lists (a buffer filled tile by tile by
    // 64 transfers); it must find exactly the pairs the plain scan of every earlier
    // access finds — tiles, random boxes, rank-0 boxes, slots and aliases mixed.
    void conflictDependenciesMatchTheFullScan() {
        std::mt19937 rng(7);
        for (int round = 0; round < 6; ++round) {
            const int resources = 5, steps = 400;
            std::vector<ZRange> boxes;
            boxes.reserve(static_cast<size_t>(steps) * 3);
            std::vector<std::vector<schedule::Access>> accesses(static_cast<size_t>(steps));
            std::uniform_int_distribution<int> pick(0, 99);
            for (int j = 0; j < steps; ++j) {
                const int n = 1 + pick(rng) % 3;
                for (int k = 0; k < n; ++k) {
                    const int r = pick(rng) % resources;
                    schedule::Access a;
                    a.resource = r;
                    a.write = pick(rng) < 45;
                    if (r == 4) {  // rank 0: every access meets every other
                        boxes.push_back(ZRange::of_shape({}));
                    } else if (r == 3 && round % 2 == 1) {  // a ring of slots
                        a.slot = pick(rng) % 4;
                        boxes.push_back(ZRange::of_shape({1, 1}));
                    } else if (pick(rng) < 70) {  // a tile of an 8 × 8 grid of 16 × 16 tiles
                        const Coord y = pick(rng) % 8 * 16, x = pick(rng) % 8 * 16;
                        boxes.push_back(ZRange(ZPoint{y, x}, ZPoint{y + 16, x + 16}));
                    } else {  // any box, from a point to the whole
                        const Coord y = pick(rng) % 128, x = pick(rng) % 128;
                        boxes.push_back(ZRange(ZPoint{y, x}, ZPoint{y + 1 + pick(rng) % (128 - y), x + 1 + pick(rng) % (128 - x)}));
                    }
                    accesses[static_cast<size_t>(j)].push_back(a);
                }
            }
            size_t b = 0;  // boxes are stable now: point the accesses at them
            for (auto &step : accesses)
                for (schedule::Access &a : step) a.box = &boxes[b++];
            std::vector<std::vector<int>> aliases(resources);
            aliases[1] = {0};
            aliases[2] = {0, 1};
            const auto deps = schedule::conflict_dependencies(accesses, aliases);
            QCOMPARE(deps.size(), accesses.size());
            size_t edges = 0;
            for (size_t j = 0; j < accesses.size(); ++j) {
                std::vector<int> want;
                for (size_t i = 0; i < j; ++i) {
                    bool dep = false;
                    for (const schedule::Access &bj : accesses[j])
                        for (const schedule::Access &ai : accesses[i]) {
                            if (ai.resource == bj.resource && (ai.write || bj.write))
                                dep = dep || (ai.slot >= 0 && bj.slot >= 0 ? ai.slot == bj.slot
                                                                          : schedule::boxes_meet(*ai.box, *bj.box));
                            const auto &al = aliases[static_cast<size_t>(bj.resource)];
                            if (bj.write && std::find(al.begin(), al.end(), ai.resource) != al.end()) dep = true;
                        }
                    if (dep) want.push_back(static_cast<int>(i));
                }
                if (deps[j] != want) QFAIL(qPrintable(QString("step %1: %2 dependencies, the full scan finds %3")
                                                          .arg(j).arg(deps[j].size()).arg(want.size())));
                edges += want.size();
            }
            QVERIFY(edges > static_cast<size_t>(steps));  // the lists grew long enough to be indexed
        }
    }

    void twoDeviceScheduleByHand() {
        plan::Plan p;
        p.graph = test::parse(tiny_mlp());
        p.cluster = cost::ClusterShape{"h100-sxm", 1, 2, "nvlink4", ""};
        p.devices = {plan::Device{"0:0", 0, {}, 0, 0}, plan::Device{"0:1", 0, {}, 0, 0}};
        auto step = [](plan::StepKind k, int dev, int peer, std::vector<int> deps) {
            plan::Step s;
            s.kind = k;
            s.stream = k == plan::StepKind::send_recv ? plan::Stream::communication : plan::Stream::compute;
            s.device = dev;
            s.peer = peer;
            s.deps = std::move(deps);
            return s;
        };
        p.steps = {step(plan::StepKind::kernel, 0, -1, {}), step(plan::StepKind::kernel, 1, -1, {}),
                   step(plan::StepKind::send_recv, 0, 1, {0}), step(plan::StepKind::kernel, 1, -1, {1, 2}),
                   step(plan::StepKind::kernel, 0, -1, {0})};
        // k0 1 ms on 0:0; k1 2 ms on 0:1; 0:0 → 0:1 0.5 ms after k0; k2 1 ms after both; k3 on 0:0.
        const plan::Prediction pr = plan::simulate(p, {1e-3, 2e-3, 0.5e-3, 1e-3, 4e-3});
        QVERIFY(close(pr.steps[2].start, 1e-3));
        QVERIFY(close(pr.steps[3].start, 2e-3));  // max(1 + 0.5, 2)
        QVERIFY(close(pr.steps[4].start, 1e-3));  // the compute stream overlaps the transfer
        QVERIFY(close(pr.makespan, 5e-3));         // k3 ends at 1 + 4
        QVERIFY(close(pr.devices[0].compute, 5e-3));
        QVERIFY(close(pr.devices[1].communication, 0.5e-3));
    }
    // Devices sharing 2 cores: at most 2 steps at once, admitted in plan order.
    void sharedCoresScheduleByHand() {
        plan::Plan p;
        p.graph = test::parse(tiny_mlp());
        p.cluster = cost::ClusterShape{"host", 1, 4, "shm", ""};
        for (int d = 0; d < 4; ++d) p.devices.push_back(plan::Device{"0:" + std::to_string(d), 0, {}, 0, 0});
        auto kernel = [](int dev, std::vector<int> deps) {
            plan::Step s;
            s.kind = plan::StepKind::kernel;
            s.device = dev;
            s.deps = std::move(deps);
            return s;
        };
        // k0 on 0:0 3 ms; k1 on 0:1 1 ms; k2 on 0:2 1 ms; k3 on 0:3 1 ms, after k1; k4 on 0:1 1 ms.
        p.steps = {kernel(0, {}), kernel(1, {}), kernel(2, {}), kernel(3, {1}), kernel(1, {})};
        const std::vector<double> d{3e-3, 1e-3, 1e-3, 1e-3, 1e-3};
        const plan::Prediction apart = plan::simulate(p, d);  // shared_cores 0: every device its own
        QVERIFY(close(apart.steps[2].start, 0));
        QVERIFY(close(apart.makespan, 3e-3));
        p.cluster.shared_cores = 2;  // one thread per device, two steps at once
        const plan::Prediction shared = plan::simulate(p, d);
        QVERIFY(close(shared.steps[0].start, 0));
        QVERIFY(close(shared.steps[1].start, 0));
        QVERIFY(close(shared.steps[2].start, 1e-3));  // waits for k1's slot
        QVERIFY(close(shared.steps[3].start, 2e-3));  // k2's slot; k1 is done
        QVERIFY(close(shared.steps[4].start, 3e-3));  // admitted after k3, when k0 and k3 free their slots
        QVERIFY(close(shared.makespan, 4e-3));
        // A step that waits for a core starts the wake after its release; one whose
        // core is free does not wait.
        p.cluster.wake = 0.25e-3;
        const plan::Prediction woken = plan::simulate(p, d);
        QVERIFY(close(woken.steps[1].start, 0));        // a core free
        QVERIFY(close(woken.steps[2].start, 1.25e-3));  // k1's core, 1 + 0.25
        QVERIFY(close(woken.steps[3].start, 2.5e-3));   // k2's core (it ends at 2.25), + 0.25
        QVERIFY(close(woken.steps[4].start, 3.25e-3));  // k0's core (3), + 0.25
        QVERIFY(close(woken.makespan, 4.25e-3));
        p.cluster.wake = 0;
        // The plan file keeps the shared cores and the wake.
        p.cluster.shared_cores = 0;
        const plan::PlanResult r = planned(test::parse(tiny_mlp()), 2, plan::Baseline::dp);
        plan::Plan q = r.plan;
        q.cluster.shared_cores = 2;
        q.cluster.wake = 0.25e-3;
        auto back = plan::parse_plan(plan::plan_json(q), "q.json");
        QVERIFY2(back.has_value(), back ? "" : back.error().c_str());
        QCOMPARE(back->cluster.shared_cores, 2);
        QCOMPARE(back->cluster.wake, 0.25e-3);
        QCOMPARE(plan::plan_json(*back), plan::plan_json(q));
    }
    void peakMemoryOfASmallPlanByHand() {
        const Graph g = test::parse(tiny_mlp());
        const plan::PlanResult r = planned(g, 1, std::nullopt);
        QVERIFY2(r.certificate.pass(), r.certificate.text().c_str());
        QCOMPARE(r.plan.steps.size(), size_t{7});
        // Resident: x 96 + w1 288 + b1 48 + w2 576 + b2 48 + w3 576 + b3 48 + w4 288 + b4 24 + y 96.
        QCOMPARE(r.plan.devices[0].resident_bytes, std::int64_t{2088});
        // Six 192-byte activations (a multiple of the 64-byte alignment), each alive
        // from its producer to its consumer: two at a time, in two slots; and the
        // H100's 32 MiB cuBLASLt workspace, alive throughout.
        const std::int64_t workspace = 32 << 20;
        QCOMPARE(r.plan.devices[0].arena_bytes, workspace + 384);
        QCOMPARE(r.prediction.devices[0].peak, 2088 + workspace + 2 * 192);
        QCOMPARE(r.prediction.peak, 2088 + workspace + 2 * 192);
        // The memory curve's highest point is the peak.
        std::int64_t top = 0;
        for (const auto &[t, b] : r.prediction.devices[0].memory) top = std::max(top, b);
        QCOMPARE(top, r.prediction.peak);
    }

    // Kernel workspace comes from the target: one buffer per device whose kernels
    // take it, the largest figure among them, alive from the device's first step to
    // its last, counted in its peak; none where the target gives none.
    void workspaceFollowsTheTarget() {
        const Graph g = test::parse(tiny_mlp());
        auto workspace_of = [&](const cost::Target &t, int devices) {
            plan::PlanRequest req;
            req.target = t;
            req.devices = devices;
            req.baseline = plan::Baseline::dp;
            auto r = plan::make_plan(g, req);
            if (!r) qFatal("make_plan: %s", r.error().c_str());
            std::vector<const plan::Buffer *> ws;
            for (const plan::Buffer &b : r->plan.buffers)
                if (b.kind == plan::BufferKind::workspace) ws.push_back(&b);
            return std::make_pair(std::move(r).value(), ws);
        };
        const auto [on_h100, ws] = workspace_of(h100(), 2);
        QVERIFY2(on_h100.certificate.pass(), on_h100.certificate.text().c_str());
        QCOMPARE(ws.size(), size_t{2});
        for (const plan::Buffer *b : ws) {
            QCOMPARE(b->bytes, std::int64_t{32 << 20});
            QCOMPARE(b->tensor.value, std::string());
            const plan::Device &d = on_h100.plan.devices[static_cast<size_t>(b->device)];
            QCOMPARE(b->first, d.steps.front());
            QCOMPARE(b->last, d.steps.back());
        }
        auto a100 = cost::builtin_target("a100-80gb");
        QVERIFY(a100.has_value());
        QCOMPARE(workspace_of(*a100, 2).second.front()->bytes, std::int64_t{4 << 20});
        cost::Target none = h100();
        for (cost::Figure &f : none.device.workspace) f = cost::Figure{};
        const auto [without, no_ws] = workspace_of(none, 2);
        QVERIFY(no_ws.empty());
        for (size_t d = 0; d < 2; ++d)
            QCOMPARE(on_h100.prediction.devices[d].peak - without.prediction.devices[d].peak, std::int64_t{32 << 20});
        // The file keeps it; a workspace buffer naming a tensor is refused.
        const std::string text = plan::plan_json(on_h100.plan);
        auto back = plan::parse_plan(text, "p.json");
        QVERIFY2(back.has_value(), back ? "" : back.error().c_str());
        QCOMPARE(plan::plan_json(*back), text);
        std::string bad = text;
        const size_t at = bad.find("\"tensor\": \"\"");
        QVERIFY(at != std::string::npos);
        bad.replace(at, 12, "\"tensor\": \"x\"");
        auto refused = plan::parse_plan(bad, "p.json");
        QVERIFY(!refused);
        QVERIFY2(refused.error().find(".tensor: a workspace buffer holds no tensor") != std::string::npos,
                 refused.error().c_str());
        // A target's workspace names kernel classes.
        std::string target = cost::target_json(h100());
        const size_t gemm = target.find("\"gemm\": {\n        \"source\"");
        QVERIFY(gemm != std::string::npos);
        target.replace(gemm, 6, "\"gemmm\"");
        auto t = cost::parse_target(target, "t.json");
        QVERIFY(!t);
        QVERIFY2(t.error().find("t.json: device.workspace.gemmm: unknown kernel class") == 0, t.error().c_str());
    }

    // ---- placement ----
    void placementWritesDevicesAndMovementFollows() {
        const Graph g = test::parse(tiny_mlp());
        ShardOptions so;
        auto spec = parse_shard_spec("fc1:0=2");
        so.specs.push_back(*spec);
        so.propagate = false;
        auto sharded = shard(g, so);
        QVERIFY(sharded.has_value());
        const std::vector<std::string> devs = {"0:0", "0:1"};
        // Default k → k: fc1's two shards on two devices, gelu1 (unsharded) on 0:0: one transfer.
        auto placed = place(sharded->graph, *parse_placement("shard", {}, devs));
        QVERIFY2(placed.has_value(), placed ? "" : placed.error().c_str());
        QVERIFY(every_piece_placed(placed->graph));
        QCOMPARE(placed->graph.find_op(OpId("fc1"))->shards[1].device, std::string("0:1"));
        QCOMPARE(placed->graph.find_op(OpId("gelu1"))->shards.size(), size_t{1});
        const auto moves = data_movement(placed->graph);
        QCOMPARE(moves.size(), size_t{1});
        QVERIFY2(moves[0].from_shard.value == "fc1/1", moves[0].from_shard.value.c_str());
        // Both shards on one device: nothing crosses devices.
        auto together = place(sharded->graph, *parse_placement("shard", {"fc1=0:0"}, devs));
        QVERIFY(together.has_value());
        QVERIFY(data_movement(together->graph).empty());
        // Refusals name what is wrong.
        auto bad = place(sharded->graph, *parse_placement("shard", {"fc1=9:9"}, devs));
        QVERIFY(!bad);
        QVERIFY2(bad.error().find("device '9:9'") != std::string::npos, bad.error().c_str());
        auto bad_rule = parse_placement("pipline", {}, devs);
        QVERIFY(!bad_rule);
        QVERIFY(bad_rule.error().find("unknown rule 'pipline'") != std::string::npos);
        auto pipe = place(g, *parse_placement("pipeline:2", {}, devs));
        QVERIFY(pipe.has_value());
        QCOMPARE(pipe->graph.find_op(OpId("fc1"))->shards[0].device, std::string("0:0"));
        QCOMPARE(pipe->graph.find_op(OpId("fc4"))->shards[0].device, std::string("0:1"));
        QVERIFY(pipe->certificate.certified() == false);  // certify only when asked
        // Spread: fc1's 2 pieces on 4 devices take 0:0 and 0:2 (each pair's first);
        // an op split 4 ways takes all four; certified.
        const std::vector<std::string> four = {"0:0", "0:1", "0:2", "0:3"};
        ShardOptions so4;
        so4.specs = {*parse_shard_spec("fc1:0=2"), *parse_shard_spec("fc2:0=4")};
        so4.propagate = false;
        auto sharded4 = shard(g, so4);
        QVERIFY(sharded4.has_value());
        PlacementOptions spread = *parse_placement("spread", {}, four);
        spread.certify = CertifyOptions{};
        auto spread_out = place(sharded4->graph, spread);
        QVERIFY2(spread_out.has_value(), spread_out ? "" : spread_out.error().c_str());
        QVERIFY2(spread_out->certificate.pass(), spread_out->certificate.text().c_str());
        QCOMPARE(spread_out->graph.find_op(OpId("fc1"))->shards[0].device, std::string("0:0"));
        QCOMPARE(spread_out->graph.find_op(OpId("fc1"))->shards[1].device, std::string("0:2"));
        QCOMPARE(spread_out->graph.find_op(OpId("fc2"))->shards[3].device, std::string("0:3"));
        QVERIFY(spread_out->summary.find("spread") != std::string::npos);
    }

    // Explicit pipeline cuts: stage 2 begins at the first op named, stage 3 at the
    // next; the rest of the pipeline rule is unchanged (a stage's devices a
    // contiguous group). Cuts that cannot hold are refused, naming why.
    void pipelineCutsAreWhereTheyAreNamed() {
        const Graph g = test::parse(tiny_mlp());
        const std::vector<std::string> devs = {"0:0", "0:1", "0:2", "0:3"};
        auto two = parse_placement("pipeline:2@fc4", {}, devs);
        QVERIFY2(two.has_value(), two ? "" : two.error().c_str());
        QCOMPARE(two->stages, 2);
        QCOMPARE(two->cuts, std::vector<OpId>{OpId("fc4")});
        two->certify = CertifyOptions{};
        auto cut = place(g, *two);
        QVERIFY2(cut.has_value(), cut ? "" : cut.error().c_str());
        QVERIFY2(cut->certificate.pass(), cut->certificate.text().c_str());
        auto device = [](const Stage &st, const char *op) { return st.graph.find_op(OpId(op))->shards[0].device; };
        // The FLOP-balanced cut of "pipeline:2" falls elsewhere; this one keeps fc1 … gelu3 on stage 1.
        QCOMPARE(device(*cut, "gelu3"), std::string("0:0"));
        QCOMPARE(device(*cut, "fc4"), std::string("0:2"));
        QVERIFY2(cut->summary.find("pipeline cut at fc4") != std::string::npos, cut->summary.c_str());
        // Without a stage count: one stage more than the cuts (groups [0,1), [1,2), [2,4)).
        auto three = place(g, *parse_placement("pipeline@fc2,fc3", {}, devs));
        QVERIFY2(three.has_value(), three ? "" : three.error().c_str());
        QCOMPARE(device(*three, "gelu1"), std::string("0:0"));
        QCOMPARE(device(*three, "relu2"), std::string("0:1"));
        QCOMPARE(device(*three, "fc4"), std::string("0:2"));
        // Refusals.
        auto refused = [&](const std::string &rule, const char *words) {
            auto o = parse_placement(rule, {}, devs);
            if (!o) return o.error().find(words) != std::string::npos ? std::string() : o.error();
            auto r = place(g, *o);
            if (r) return std::string("placed");
            return r.error().find(words) != std::string::npos ? std::string() : r.error();
        };
        QCOMPARE(refused("pipeline:2@", "an empty cut"), std::string());
        QCOMPARE(refused("pipeline:3@fc2", "1 cuts make 2 stages"), std::string());
        QCOMPARE(refused("pipeline@fc3,fc2", "cut 'fc2' does not come after the cut before it"), std::string());
        QCOMPARE(refused("pipeline@fc1", "cut 'fc1' is the first operation"), std::string());
        QCOMPARE(refused("pipeline@nope", "cut 'nope' is not an operation placement places"), std::string());
        QCOMPARE(refused("pipeline:5@fc2,fc3,relu2,fc4", "more stages than the 4 devices"), std::string());
        PlacementOptions shard_with_cuts = *parse_placement("shard", {}, devs);
        shard_with_cuts.cuts = {OpId("fc2")};
        auto wrong_rule = place(g, shard_with_cuts);
        QVERIFY(!wrong_rule);
        QVERIFY2(wrong_rule.error().find("cuts are for the pipeline rule") != std::string::npos, wrong_rule.error().c_str());
    }

    // ---- plans of every example ----
    void everyExampleAndBaselineCertifies() {
        int certified = 0, refused = 0;
        for (const char *name : {"mlp", "mlp_bf16", "gpt2_block", "attention", "convnet"}) {
            const Graph g = load_example(name);
            for (int n : {1, 2, 4, 8})
                for (int b = -1; b < 4; ++b) {
                    plan::PlanRequest req;
                    req.target = h100();
                    req.devices = n;
                    if (b >= 0) req.baseline = static_cast<plan::Baseline>(b);
                    else req.placement = "round-robin";
                    auto r = plan::make_plan(g, req);
                    const std::string what = std::string(name) + " on " + std::to_string(n) + " " +
                                             (b >= 0 ? plan::baseline_name(static_cast<plan::Baseline>(b)) : "round-robin");
                    if (!r) {
                        // Only a baseline that does not fit the graph may refuse.
                        const bool fits_not = r.error().find("cannot be split") != std::string::npos ||
                                              r.error().find("has no linear") != std::string::npos ||
                                              r.error().find("cannot split") != std::string::npos ||
                                              r.error().find("does not divide") != std::string::npos;
                        QVERIFY2(fits_not, (what + ": " + r.error()).c_str());
                        ++refused;
                        continue;
                    }
                    QVERIFY2(r->certificate.pass(), (what + "\n" + r->certificate.text()).c_str());
                    QVERIFY2(r->prediction.makespan > 0, what.c_str());
                    ++certified;
                }
        }
        qInfo("%d plans certified, %d baselines refused as not fitting the graph", certified, refused);
        QVERIFY(certified >= 60);
    }
    // A pipeline's steps by readiness (plan::StepOrder::ready, the default for
    // pipelines): each stage passes a micro-batch on before it starts the next, so
    // the stages overlap; the same steps as op by op, certified, and faster.
    void pipelineStepsByReadiness() {
        auto plan_with = [](const Graph &g, int devices, int micro, std::optional<plan::StepOrder> order) {
            plan::PlanRequest req;
            req.target = h100();
            req.devices = devices;
            req.baseline = plan::Baseline::pp;
            req.micro_batches = micro;
            req.order = order;
            auto r = plan::make_plan(g, req);
            if (!r) qFatal("make_plan: %s", r.error().c_str());
            return std::move(r).value();
        };
        auto listing = [](const plan::Plan &p) {
            std::string out;
            for (const plan::Step &s : p.steps)
                out += std::to_string(s.device) + (s.kind == plan::StepKind::send_recv ? ">" + std::to_string(s.peer) : "") +
                       " " + (s.shard.empty() ? s.op : s.shard) + "\n";
            return out;
        };
        // Each device's kernels in plan order, and when its transfers go ("0>1").
        auto per_device = [](const plan::Plan &p) {
            std::string out;
            for (int d = 0; d < static_cast<int>(p.devices.size()); ++d) {
                out += (d ? "; " : "") + std::to_string(d) + ":";
                for (const plan::Step &s : p.steps)
                    if (s.device == d)
                        out += " " + (s.kind == plan::StepKind::send_recv ? ">" + std::to_string(s.peer) : s.shard);
            }
            return out;
        };
        // Golden orders, by hand: the tiny MLP in 2 micro-batches on 2 stages. Op by
        // op, stage 0 finishes both micro-batches before its first transfer; by
        // readiness micro-batch 0 leaves after fc2/0, and stage 1 works on it while
        // stage 0 computes micro-batch 1.
        const Graph tiny = test::parse(tiny_mlp());
        const plan::PlanResult dep = plan_with(tiny, 2, 2, plan::StepOrder::dependency);
        const plan::PlanResult ready = plan_with(tiny, 2, 2, std::nullopt);
        QCOMPARE(dep.plan.source.order, plan::StepOrder::dependency);
        QCOMPARE(ready.plan.source.order, plan::StepOrder::ready);
        QCOMPARE(per_device(dep.plan), std::string("0: fc1/0 fc1/1 gelu1/0 gelu1/1 fc2/0 fc2/1 >1 >1; "
                                                   "1: relu2/0 relu2/1 fc3/0 fc3/1 gelu3/0 gelu3/1 fc4/0 fc4/1"));
        QCOMPARE(per_device(ready.plan), std::string("0: fc1/0 gelu1/0 fc2/0 fc1/1 >1 gelu1/1 fc2/1 >1; "
                                                     "1: relu2/0 fc3/0 gelu3/0 fc4/0 relu2/1 fc3/1 gelu3/1 fc4/1"));
        QVERIFY2(ready.certificate.pass(), ready.certificate.text().c_str());
        // The GPT-2 block in 8 micro-batches through 8 stages (predictions).
        const Graph block = load_example("gpt2_block");
        const plan::PlanResult slow = plan_with(block, 8, 0, plan::StepOrder::dependency);
        const plan::PlanResult fast = plan_with(block, 8, 0, std::nullopt);
        QVERIFY2(fast.certificate.pass(), fast.certificate.text().c_str());
        QVERIFY2(slow.certificate.pass(), slow.certificate.text().c_str());
        qInfo("GPT-2 block, pp on 8 H100 (predictions): op by op %s, peak %s; by readiness %s, peak %s",
              plan::seconds_text(slow.prediction.makespan).c_str(), byte_text(slow.prediction.peak).c_str(),
              plan::seconds_text(fast.prediction.makespan).c_str(), byte_text(fast.prediction.peak).c_str());
        QVERIFY(fast.prediction.makespan < 0.6 * slow.prediction.makespan);
        // The same steps, in another order: only their order, lifetimes, offsets
        // and dependencies differ.
        auto steps = [](const plan::Plan &p) {
            std::vector<std::string> out;
            for (const plan::Step &s : p.steps)
                out.push_back(std::string(plan::step_kind_name(s.kind)) + " " + s.op + " " + s.shard + " " +
                              std::to_string(s.device) + ">" + std::to_string(s.peer) + " " + plan::step_shape(s));
            std::sort(out.begin(), out.end());
            return out;
        };
        QCOMPARE(steps(fast.plan), steps(slow.plan));
        QVERIFY(listing(fast.plan) != listing(slow.plan));
        // The order goes into the plan file and comes back.
        const std::string text = plan::plan_json(fast.plan);
        QVERIFY(text.find("\"order\": \"ready\"") != std::string::npos);
        auto back = plan::parse_plan(text, "p.json");
        QVERIFY2(back.has_value(), back ? "" : back.error().c_str());
        QCOMPARE(back->source.order, plan::StepOrder::ready);
        QCOMPARE(plan::plan_json(*back), text);
    }
    void tensorParallelLowersToAllReduce() {
        const plan::PlanResult r = planned(load_example("gpt2_block"), 4, plan::Baseline::tp);
        QVERIFY2(r.certificate.pass(), r.certificate.text().c_str());
        int all_reduce = 0;
        for (const plan::Step &s : r.plan.steps)
            if (s.kind == plan::StepKind::collective && s.collective == "all_reduce") {
                ++all_reduce;
                QCOMPARE(s.participants.size(), size_t{4});
                QVERIFY(!s.algorithm.empty());
            }
        QCOMPARE(all_reduce, 2);  // one per column/row pair: attention projection and MLP
    }
    // A box one device sends to several others is one broadcast from it: the root
    // reads the box once, every other participant receives a box of its shape.
    void oneBoxToSeveralDevicesIsABroadcast() {
        const plan::PlanResult r = planned(load_example("gpt2_block"), 4, plan::Baseline::tp);
        QVERIFY2(r.certificate.pass(), r.certificate.text().c_str());
        int broadcasts = 0;
        for (const plan::Step &s : r.plan.steps) {
            if (s.collective != "broadcast") continue;
            ++broadcasts;
            QCOMPARE(s.kind, plan::StepKind::collective);
            QCOMPARE(s.reads.size(), size_t{1});
            QCOMPARE(r.plan.buffers[static_cast<size_t>(s.reads[0].buffer)].device, s.device);
            QCOMPARE(s.writes.size(), s.participants.size() - 1);
            QVERIFY(s.participants.size() >= 3);
            for (const plan::Region &w : s.writes) {
                QVERIFY(r.plan.buffers[static_cast<size_t>(w.buffer)].device != s.device);
                QCOMPARE(w.box.size(), s.reads[0].box.size());
            }
            QVERIFY(s.predicted > 0);
        }
        QVERIFY(broadcasts > 0);
        // The same transfers as point-to-point sends would count the box once per receiver.
        const plan::Step *b = nullptr;
        for (const plan::Step &s : r.plan.steps)
            if (s.collective == "broadcast" && !b) b = &s;
        const double bytes = static_cast<double>(b->reads[0].box.size()) * dtype_bytes(b->dtype);
        QCOMPARE(b->bytes, bytes);
    }
    void dataParallelNeedsNoCommunication() {
        const plan::PlanResult r = planned(load_example("mlp"), 4, plan::Baseline::dp);
        QVERIFY(r.certificate.pass());
        for (const plan::Step &s : r.plan.steps) QVERIFY(s.kind == plan::StepKind::kernel || s.kind == plan::StepKind::copy);
        QCOMPARE(r.prediction.comm_bytes, 0.0);
        // Every device holds every weight (replicated) and a quarter of the batch.
        for (const plan::Device &d : r.plan.devices) QCOMPARE(d.resident_bytes, r.plan.devices[0].resident_bytes);
    }

    // ---- the mutation suite: every planted fault is caught ----
    void mutationsAreCaught() {
        const plan::PlanResult base = planned(load_example("gpt2_block"), 4, plan::Baseline::tp);
        QVERIFY(base.certificate.pass());
        const plan::Plan &good = base.plan;
        auto failed = [](const plan::Plan &p, const char *check) {
            const Certificate c = plan::certify_plan(p);
            const CertificateCheck *k = c.find(check);
            return k && !k->pass;
        };
        // 1. A dropped dependency: a kernel no longer waits for what wrote its input.
        {
            plan::Plan p = good;
            bool done = false;
            for (plan::Step &s : p.steps)
                if (s.kind == plan::StepKind::kernel && !s.deps.empty() && !done) {
                    const int d = s.deps.back();
                    bool feeds = false;
                    for (const plan::Region &w : p.steps[static_cast<size_t>(d)].writes)
                        for (const plan::Region &r : s.reads) feeds = feeds || (w.buffer == r.buffer && w.box.intersects(r.box));
                    if (!feeds) continue;
                    s.deps.clear();  // also no transitive path left
                    done = true;
                }
            QVERIFY(done);
            QVERIFY(failed(p, "dataflow"));
        }
        // 2. A wrong region: a kernel writes half of what it should.
        {
            plan::Plan p = good;
            for (plan::Step &s : p.steps)
                if (s.kind == plan::StepKind::kernel && !s.writes.empty() && s.writes[0].box.rank() > 0 &&
                    s.writes[0].box.extent(0) > 1) {
                    ZPoint e = s.writes[0].box.end();
                    e[0] = s.writes[0].box.start()[0] + s.writes[0].box.extent(0) / 2;
                    s.writes[0].box = ZRange(s.writes[0].box.start(), e);
                    break;
                }
            QVERIFY(failed(p, "dataflow") || failed(p, "outputs"));
        }
        // 2b. A broadcast losing a receiver's delivery.
        {
            plan::Plan p = good;
            bool done = false;
            for (plan::Step &s : p.steps)
                if (s.collective == "broadcast" && !done) {
                    s.writes.pop_back();
                    done = true;
                }
            QVERIFY(done);
            QVERIFY(failed(p, "collectives"));
        }
        // 3. Overlapping arena offsets: two buffers of one device alive together share bytes.
        {
            plan::Plan p = good;
            bool done = false;
            for (size_t a = 0; a < p.buffers.size() && !done; ++a)
                for (size_t b = a + 1; b < p.buffers.size() && !done; ++b) {
                    const plan::Buffer &x = p.buffers[a];
                    plan::Buffer &y = p.buffers[b];
                    if (!x.in_arena() || !y.in_arena() || x.device != y.device) continue;
                    if (x.first <= y.last && y.first <= x.last && x.first != y.first) {
                        y.offset = x.offset;
                        done = true;
                    }
                }
            QVERIFY(done);
            QVERIFY(failed(p, "arena"));
        }
        // 4. A collective missing a participant (and its contribution).
        {
            plan::Plan p = good;
            bool done = false;
            for (plan::Step &s : p.steps)
                if (s.kind == plan::StepKind::collective && s.collective == "all_reduce" && !done) {
                    const int gone = s.participants.back();
                    s.participants.pop_back();
                    std::erase_if(s.reads, [&](const plan::Region &r) { return p.buffers[static_cast<size_t>(r.buffer)].device == gone; });
                    std::erase_if(s.writes, [&](const plan::Region &r) { return p.buffers[static_cast<size_t>(r.buffer)].device == gone; });
                    done = true;
                }
            QVERIFY(done);
            QVERIFY(failed(p, "collectives"));
        }
        // 4b. … or listed without its regions being on a participant.
        {
            plan::Plan p = good;
            for (plan::Step &s : p.steps)
                if (s.kind == plan::StepKind::collective) {
                    s.participants.pop_back();
                    break;
                }
            QVERIFY(failed(p, "schedule"));
        }
        // 5. A race: two unordered writes of one box.
        {
            plan::Plan p = good;
            for (size_t i = 0; i < p.steps.size(); ++i)
                if (p.steps[i].kind == plan::StepKind::kernel && !p.steps[i].writes.empty()) {
                    plan::Step twin = p.steps[i];
                    twin.deps.clear();
                    p.steps.push_back(twin);
                    break;
                }
            QVERIFY(failed(p, "races"));
        }
    }

    // ---- plan files ----
    void planFilesRoundTrip() {
        const plan::PlanResult r = planned(load_example("gpt2_block"), 4, plan::Baseline::dp_tp);
        const std::string text = plan::plan_json(r.plan, &r.prediction);
        auto back = plan::parse_plan(text, "p.json");
        QVERIFY2(back.has_value(), back ? "" : back.error().c_str());
        QCOMPARE(plan::plan_json(*back), plan::plan_json(r.plan));
        QVERIFY(plan::certify_plan(*back).pass());
        QVERIFY(text.find("prediction of the cost model (not a measurement)") != std::string::npos);
    }
    void malformedPlansNameTheField() {
        const plan::PlanResult r = planned(test::parse(tiny_mlp()), 2, plan::Baseline::dp);
        const std::string good = plan::plan_json(r.plan);
        auto refuse = [&](const std::string &from, const std::string &to) {
            std::string s = good;
            const size_t p = from.find("version") != std::string::npos ? s.rfind(from) : s.find(from);
            if (p == std::string::npos) qFatal("fixture text not found: %s", from.c_str());
            s.replace(p, from.size(), to);
            auto pl = plan::parse_plan(s, "p.json");
            return pl ? std::string("accepted") : pl.error();
        };
        QVERIFY(refuse("\"tapestry-plan\"", "\"tapestry-project\"").find("p.json: format") == 0);
        QVERIFY(refuse("\"version\": 1", "\"version\": 7").find("p.json: version: this build reads version 1") == 0);
        const std::string buf = refuse("\"buffer\": 0", "\"buffer\": 999");
        QVERIFY2(buf.find(".buffer: expected an integer in [0, ") != std::string::npos, buf.c_str());
        const std::string kind = refuse("\"kind\": \"kernel\"", "\"kind\": \"kernal\"");
        QVERIFY2(kind.find("steps[0].kind: unknown value 'kernal'") != std::string::npos, kind.c_str());
        const std::string tensor = refuse("\"tensor\": \"x\"", "\"tensor\": \"nope\"");
        QVERIFY2(tensor.find("is not a tensor of the plan's graph") != std::string::npos, tensor.c_str());
        const std::string order = refuse("\"order\": \"dependency\"", "\"order\": \"sideways\"");
        QVERIFY2(order.find("p.json: source.order: 'sideways' is not a step order (dependency, ready)") == 0, order.c_str());
        // A buffer's steps are steps of the plan, in order (fuzz_plan_file found the
        // simulation reading past the steps of a file that said otherwise).
        const std::string past = refuse("\"last\": ", "\"last\": 9999");
        QVERIFY2(past.find(".last: expected an integer in [-1, ") != std::string::npos, past.c_str());
        const std::string half = refuse("\"first\": 0", "\"first\": -1");
        QVERIFY2(half.find(".last: first and last are both -1 (no step uses the buffer) or both steps") !=
                     std::string::npos,
                 half.c_str());
        const std::string backwards = refuse("\"first\": 0", "\"first\": 3");
        QVERIFY2(backwards.find(" comes before the first, step 3") != std::string::npos, backwards.c_str());
        QCOMPARE(plan::parse_plan("[]", "p.json").error(), std::string("p.json: expected a JSON object"));
        QVERIFY(!plan::load_plan("/nonexistent/plan.json"));
    }
    void unplacedGraphOnTooFewDevicesIsRefused() {
        const Graph g = test::parse(tiny_mlp());
        ShardOptions so;
        so.specs.push_back(*parse_shard_spec("fc1:0=4"));
        auto sharded = shard(g, so);
        QVERIFY(sharded.has_value());
        auto p = plan::compile_plan(sharded->graph, model_of(h100(), 2));
        QVERIFY(!p);
        QVERIFY2(p.error().find("place the stage first") != std::string::npos, p.error().c_str());
    }
    // Attention split along a head's features (index dim 3) writes every head's
    // half: a strided part of its output, which no box of a plan holds. The stage is
    // exact (ISL), the plan refuses it by name — it never claims the box around it.
    void stridedWritesAreRefused() {
        const Graph g = plan::without_shards(load_example("gpt2_block"));
        ShardOptions so;
        so.specs.push_back(*parse_shard_spec("attention:3=2"));
        so.propagate = false;
        auto sharded = shard(g, so);
        QVERIFY2(sharded.has_value(), sharded ? "" : sharded.error().c_str());
        PlacementOptions po;
        po.devices = plan::device_names(model_of(h100(), 2).shape());
        auto placed = place(sharded->graph, po);
        QVERIFY2(placed.has_value(), placed ? "" : placed.error().c_str());
        auto p = plan::compile_plan(*placed, model_of(h100(), 2), {});
        QVERIFY(!p);
        QVERIFY2(p.error().find("operation 'attention' shard") != std::string::npos &&
                     p.error().find("strided elements of 'attn'") != std::string::npos &&
                     p.error().find("a plan's regions are boxes") != std::string::npos,
                 p.error().c_str());
    }
};

QTEST_APPLESS_MAIN(TestPlan)
#include "test_plan.moc"
