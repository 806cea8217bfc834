// Plans launched on this machine's GPUs (issue 18, label gpu): every example ×
// 1, 2, 4, 8 devices × baseline on the cuda backend equals the reference (the
// unsharded CPU run, at the outputs' dtype tolerance) — on one GPU the devices are
// virtual, a stream set each; the same plans with every transfer an NCCL message
// (--transport nccl: on one GPU a one-rank communicator sending to itself), also
// behind the timing gate; the fused form of every example too; a plan over a
// device's memory is refused before launch naming the device; a failing step is
// reported with its step and device; the timing gate holds and lets go, and a gated
// run times every step in order. Without a GPU (CI: no driver gives
// cudaGetDeviceCount error 35) every test is skipped saying why, and CTest shows
// the suite as skipped (SKIP_REGULAR_EXPRESSION), never as passed.
#include <QtTest/QtTest>

#include "io/random_inputs.h"
#include "launch/check.h"
#include "launch/cuda_backend.h"
#include "launch/launch.h"
#include "numeric_certify.h"
#include "passes/fuse.h"
#include "plan_support.h"
#include "runtime/cuda/gate.h"

using namespace tapestry;

namespace {

Expected<plan::PlanResult, std::string> plan_of(const Graph &g, int n, int baseline) {
    return test::plan_on(g, n, baseline);
}

// Launches `p` on the GPUs; the check against the reference, or why it did not run.
QString launch_and_check(const plan::Plan &p, const launch::CudaBackendOptions &bo = {}) {
    const auto inputs = make_random_inputs(p.graph, 7);
    auto backend = launch::make_cuda_backend(bo);
    if (!backend) return QString::fromStdString("backend: " + backend.error());
    auto r = launch::launch_plan(p, **backend, inputs);
    if (!r) return QString::fromStdString("refused: " + r.error());
    if (!r->ok()) return QString::fromStdString(r->status + ": " + r->fault.message);
    auto c = launch::check_outputs(p, inputs, r->outputs);
    if (!c) return QString::fromStdString("check: " + c.error());
    if (!c->pass()) return QString::fromStdString(c->summary());
    return {};
}

}  // namespace

class TestGpuLaunch : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        auto gpus = launch::cuda_gpus();
        if (!gpus) QSKIP(qPrintable("no GPU to launch on: " + QString::fromStdString(gpus.error())));
        for (const launch::GpuInfo &g : *gpus) qInfo("GPU %d: %s", g.ordinal, g.name.c_str());
    }

    void everyExamplePlanEqualsTheReference_data() {
        QTest::addColumn<QString>("example");
        for (const char *e : {"mlp", "mlp_bf16", "attention", "gpt2_block", "convnet"}) QTest::newRow(e) << e;
    }
    void everyExamplePlanEqualsTheReference() {
        QFETCH(QString, example);
        const Graph g = test::example_graph(example.toStdString());
        int launched = 0;
        for (int n : {1, 2, 4, 8})
            for (int b = -1; b < 4; ++b) {
                auto r = plan_of(g, n, b);
                if (!r) continue;  // a baseline that does not apply
                const QString wrong = launch_and_check(r->plan);
                QVERIFY2(wrong.isEmpty(), qPrintable(QString("%1 on %2 devices (%3): %4").arg(example).arg(n).arg(b).arg(wrong)));
                ++launched;
            }
        QVERIFY(launched >= 4);
    }

    // Every hop of every transfer and collective through NCCL: packed where its box is
    // not dense, received in place or staged and unpacked (added, for reductions).
    void multiDevicePlansOverNcclEqualTheReference_data() { everyExamplePlanEqualsTheReference_data(); }
    void multiDevicePlansOverNcclEqualTheReference() {
        QFETCH(QString, example);
        const Graph g = test::example_graph(example.toStdString());
        launch::CudaBackendOptions bo;
        bo.transport = launch::CudaTransport::nccl;
        int launched = 0;
        for (int n : {2, 4, 8})
            for (int b = -1; b < 4; ++b) {
                auto r = plan_of(g, n, b);
                if (!r) continue;
                const QString wrong = launch_and_check(r->plan, bo);
                QVERIFY2(wrong.isEmpty(), qPrintable(QString("%1 on %2 devices (%3) over NCCL: %4").arg(example).arg(n).arg(b).arg(wrong)));
                ++launched;
            }
        QVERIFY(launched >= 3);
    }

    void ncclTransportRunsBehindTheGate() {
        auto r = plan_of(test::example_graph("mlp"), 2, static_cast<int>(plan::Baseline::tp));
        QVERIFY(r);
        launch::CudaBackendOptions bo;
        bo.transport = launch::CudaTransport::nccl;
        auto backend = launch::make_cuda_backend(bo);
        QVERIFY(backend);
        QVERIFY2((*backend)->describe().find("every transfer by NCCL") != std::string::npos, (*backend)->describe().c_str());
        auto launched = launch::launch_plan(r->plan, **backend, make_random_inputs(r->plan.graph, 7));
        QVERIFY2(launched && launched->ok(), launched ? launched->fault.message.c_str() : launched.error().c_str());
        auto gated = launch::run_enqueued(**backend, 1, 3, launch::Submission::gated);
        QVERIFY2(gated, gated ? "" : gated.error().c_str());
        QCOMPARE(gated->steps.size(), r->plan.steps.size());
    }

    void fusedExamplesEqualTheReference_data() { everyExamplePlanEqualsTheReference_data(); }
    void fusedExamplesEqualTheReference() {
        QFETCH(QString, example);
        const Graph g = test::example_graph(example.toStdString());
        // The chains the CPU fuses (the fusion pass's backend here); the cuda backend runs them all.
        auto fused = fuse(g, test::cpu_fuse());
        QVERIFY2(fused, fused ? "" : fused.error().c_str());
        for (int n : {1, 2}) {
            auto r = plan_of(fused->graph, n, -1);
            QVERIFY2(r, r ? "" : r.error().c_str());
            const QString wrong = launch_and_check(r->plan);
            QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
        }
    }

    void gateHoldsAndLetsGo() {
        auto ok = cuda::gate_self_check();
        QVERIFY2(ok, ok ? "" : ok.error().c_str());
    }

    // Behind the gate the steps of a one-device plan run back to back on its compute
    // stream: each within the run, in plan order, none overlapping the next.
    void gatedRunHasEveryStepInOrder() {
        auto r = plan_of(test::example_graph("gpt2_block"), 1, -1);
        QVERIFY(r);
        const plan::Plan &p = r->plan;
        auto backend = launch::make_cuda_backend();
        QVERIFY(backend);
        auto launched = launch::launch_plan(p, **backend, make_random_inputs(p.graph, 7));
        QVERIFY(launched && launched->ok());
        auto gated = launch::run_enqueued(**backend, 1, 3, launch::Submission::gated);
        QVERIFY2(gated, gated ? "" : gated.error().c_str());
        QCOMPARE(gated->runs.size(), size_t{3});
        QCOMPARE(gated->steps.size(), p.steps.size());
        double previous_end = 0;
        for (const auto &[start, end] : gated->steps) {
            QVERIFY(start >= previous_end - 1e-6 && end >= start && end <= gated->seconds + 1e-6);
            previous_end = end;
        }
    }

    void planOverDeviceMemoryIsRefused() {
        auto r = plan_of(test::example_graph("mlp"), 2, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r);
        launch::CudaBackendOptions bo;
        bo.device_memory = 1024;
        const QString why = launch_and_check(r->plan, bo);
        QVERIFY2(why.startsWith("refused:") && why.contains("device 0:0 needs"), qPrintable(why));
    }

    void failingStepIsReported() {
        auto r = plan_of(test::example_graph("mlp"), 2, static_cast<int>(plan::Baseline::tp));
        QVERIFY(r);
        auto backend = launch::make_cuda_backend();
        QVERIFY(backend);
        launch::LaunchOptions lo;
        lo.fail_step = 3;
        auto res = launch::launch_plan(r->plan, **backend, make_random_inputs(r->plan.graph, 7), lo);
        QVERIFY(res);
        QCOMPARE(QString::fromStdString(res->status), QString("failed"));
        QCOMPARE(res->fault.step, 3);
        QVERIFY(res->fault.message.find("step 3") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestGpuLaunch)
#include "test_gpu_launch.moc"
