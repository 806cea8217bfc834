// Plans as CUDA launch descriptors (issue 18, launch/cuda_descriptors.h), checked
// without a GPU: the golden text of a small plan; for every example × 1, 2, 4, 8
// devices × baseline, that the stream and event graph orders every dependency of
// the plan (each step's dependencies happen before it whatever the GPU overlaps),
// that a held stream waits for the step that holds it, that buffers lie where the
// plan put them, and that more devices than GPUs become virtual devices on GPU 0.
// The cuda backend itself, where this build has no GPU to run on, reports why.
#include <QtTest/QtTest>

#include <map>
#include <set>

#include "launch/cuda_backend.h"
#include "launch/cuda_descriptors.h"
#include "launch/launch.h"
#include "launch/rank_world.h"
#include "plan_support.h"

using namespace tapestry;

namespace {

Expected<plan::PlanResult, std::string> plan_of(const Graph &g, int n, int baseline) {
    return test::plan_on(g, n, baseline);
}

// Whether every dependency of the plan happens before its step under the
// descriptors: a stream runs its steps (those it runs and those it holds) in
// plan order, and a step starts after the ends it waits for.
QString unordered_dependency(const plan::Plan &p, const launch::CudaLaunchDescriptors &d) {
    const size_t n = p.steps.size();
    // Happens-before edges. A stream runs in order the steps enqueued on it, and a
    // stream a step holds waits for that step's end before its next step (both
    // make "the last step on the stream" come first); the rest is the step's waits.
    std::vector<std::vector<int>> before(n);
    std::map<int, int> last;  // stream → the last step on it so far (run there or held)
    for (size_t i = 0; i < n; ++i) {
        const launch::CudaStepLaunch &l = d.steps[i];
        if (!l.here) continue;  // another rank's (a rank orders only its own steps)
        if (auto it = last.find(l.stream); it != last.end()) before[i].push_back(it->second);
        for (int w : l.waits) before[i].push_back(w);
        last[l.stream] = static_cast<int>(i);
        for (int k : l.holds) last[k] = static_cast<int>(i);
    }
    // Reachability, in plan order (every edge goes backwards).
    std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
    for (size_t i = 0; i < n; ++i)
        for (int b : before[i]) {
            reach[i][static_cast<size_t>(b)] = 1;
            for (size_t j = 0; j < n; ++j)
                if (reach[static_cast<size_t>(b)][j]) reach[i][j] = 1;
        }
    for (size_t i = 0; i < n; ++i)
        for (int dep : p.steps[i].deps)
            if (d.steps[i].here && d.steps[static_cast<size_t>(dep)].here && !reach[i][static_cast<size_t>(dep)])
                return QString("step %1 may start before its dependency, step %2").arg(i).arg(dep);
    return {};
}

}  // namespace

class TestCudaLaunch : public QObject {
    Q_OBJECT
private slots:
    // The MLP split over 2 devices by tensor parallelism: the descriptors as text.
    void goldenTextOfTwoDeviceMlp() {
        auto r = plan_of(test::example_graph("mlp"), 2, static_cast<int>(plan::Baseline::tp));
        QVERIFY2(r, r ? "" : r.error().c_str());
        auto d = launch::describe_cuda_launch(r->plan, 2);
        QVERIFY2(d, d ? "" : d.error().c_str());
        const std::string text = launch::descriptors_text(r->plan, *d);
        // Two GPUs: each device its own; steps on the compute streams (even) and transfers
        // or collectives on the communication streams (odd) holding every participant.
        QVERIFY(text.find("device 0:0 gpu 0") != std::string::npos);
        QVERIFY(text.find("device 0:1 gpu 1") != std::string::npos);
        QVERIFY2(text.find("stream 1 (0:0 comm)") != std::string::npos && text.find("holds 3") != std::string::npos,
                 text.c_str());
        QVERIFY(text.find("waits") != std::string::npos);
        // Every line of the text names a device, buffer or step of the plan.
        int lines = 0;
        for (char c : text) lines += c == '\n';
        QCOMPARE(lines, static_cast<int>(r->plan.devices.size() + r->plan.buffers.size() + r->plan.steps.size()));
        // On one GPU, the same plan runs as two virtual devices.
        auto one = launch::describe_cuda_launch(r->plan, 1);
        QVERIFY(one);
        QVERIFY(one->virtual_devices);
        QCOMPARE(one->device_gpu, (std::vector<int>{0, 0}));
    }

    void everyExamplePlanIsOrdered_data() {
        QTest::addColumn<QString>("example");
        for (const char *e : {"mlp", "mlp_bf16", "attention", "gpt2_block", "convnet"}) QTest::newRow(e) << e;
    }
    void everyExamplePlanIsOrdered() {
        QFETCH(QString, example);
        const Graph g = test::example_graph(example.toStdString());
        int checked = 0;
        for (int n : {1, 2, 4, 8})
            for (int b = -1; b < 4; ++b) {
                auto r = plan_of(g, n, b);
                if (!r) continue;  // a baseline that does not apply to this graph
                const plan::Plan &p = r->plan;
                for (int gpus : {1, n}) {
                    auto d = launch::describe_cuda_launch(p, gpus);
                    QVERIFY2(d, d ? "" : d.error().c_str());
                    QCOMPARE(d->steps.size(), p.steps.size());
                    QCOMPARE(d->virtual_devices, static_cast<int>(p.devices.size()) > gpus);
                    for (size_t dev = 0; dev < p.devices.size(); ++dev)
                        QCOMPARE(d->device_gpu[dev], d->virtual_devices ? 0 : static_cast<int>(dev));
                    const QString wrong = unordered_dependency(p, *d);
                    QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
                    // Waits are on other streams, on earlier steps, one per stream at most, and recorded.
                    for (size_t i = 0; i < d->steps.size(); ++i) {
                        std::set<int> streams;
                        for (int w : d->steps[i].waits) {
                            QVERIFY(w < static_cast<int>(i));
                            QVERIFY(d->steps[static_cast<size_t>(w)].stream != d->steps[i].stream);
                            QVERIFY(streams.insert(d->steps[static_cast<size_t>(w)].stream).second);
                            QVERIFY(d->steps[static_cast<size_t>(w)].records);
                        }
                        QCOMPARE(d->steps[i].stream, launch::step_streams(p.steps[i]).front());
                    }
                    // Arena buffers at the plan's offsets; resident ones packed without overlap.
                    std::map<int, std::vector<std::pair<std::int64_t, std::int64_t>>> resident;
                    for (size_t b2 = 0; b2 < p.buffers.size(); ++b2) {
                        const launch::CudaBufferPlace &pl = d->buffers[b2];
                        QCOMPARE(pl.in_arena, p.buffers[b2].in_arena());
                        QCOMPARE(pl.bytes, p.buffers[b2].bytes);
                        if (pl.in_arena) QCOMPARE(pl.offset, p.buffers[b2].offset);
                        else resident[p.buffers[b2].device].emplace_back(pl.offset, pl.offset + pl.bytes);
                    }
                    for (auto &[dev, spans] : resident) {
                        std::sort(spans.begin(), spans.end());
                        for (size_t k = 1; k < spans.size(); ++k) QVERIFY(spans[k - 1].second <= spans[k].first);
                        if (!spans.empty()) QVERIFY(spans.back().second <= d->resident_bytes[static_cast<size_t>(dev)]);
                    }
                }
                ++checked;
            }
        QVERIFY(checked >= 4);
        qInfo("%s: %d plans checked", qPrintable(example), checked);
    }

    // Under mpirun each rank describes its own part: its devices on its GPUs, the others'
    // at GPU -1; every step runs on a rank holding one of its streams, on a stream of
    // that rank, waiting only for that rank's steps, and its dependencies there ordered.
    void ranksDescribeTheirOwnDevices() {
        auto tp = plan_of(test::example_graph("mlp"), 2, static_cast<int>(plan::Baseline::tp));
        QVERIFY(tp);
        auto r1 = launch::describe_cuda_launch(tp->plan, 1, launch::CudaRanks{1, 2});
        QVERIFY2(r1, r1 ? "" : r1.error().c_str());
        QCOMPARE(r1->device_gpu, (std::vector<int>{-1, 0}));
        QVERIFY(!r1->virtual_devices);
        const std::string text = launch::descriptors_text(tp->plan, *r1);
        QVERIFY2(text.find("device 0:0 gpu -") != std::string::npos && text.find("elsewhere") != std::string::npos, text.c_str());
        auto three = launch::describe_cuda_launch(tp->plan, 1, launch::CudaRanks{0, 3});
        QVERIFY(!three && three.error().find("a rank needs at least one device") != std::string::npos);
        for (const char *e : {"mlp", "attention", "gpt2_block"}) {
            const Graph g = test::example_graph(e);
            for (int b = -1; b < 4; ++b) {
                auto r = plan_of(g, 4, b);
                if (!r) continue;
                const plan::Plan &p = r->plan;
                for (int ranks : {2, 4}) {
                    std::vector<int> ran(p.steps.size(), 0);
                    for (int rank = 0; rank < ranks; ++rank) {
                        auto d = launch::describe_cuda_launch(p, 2, launch::CudaRanks{rank, ranks});
                        QVERIFY2(d, d ? "" : d.error().c_str());
                        for (size_t dev = 0; dev < p.devices.size(); ++dev)
                            QCOMPARE(d->device_gpu[dev] >= 0, launch::rank_of_device(static_cast<int>(dev), 4, ranks) == rank);
                        for (size_t i = 0; i < p.steps.size(); ++i) {
                            const launch::CudaStepLaunch &l = d->steps[i];
                            if (!l.here) continue;
                            ++ran[i];
                            QVERIFY(d->streams[static_cast<size_t>(l.stream)].gpu >= 0);
                            for (int h : l.holds) QVERIFY(d->streams[static_cast<size_t>(h)].gpu >= 0);
                            for (int w : l.waits) QVERIFY(d->steps[static_cast<size_t>(w)].here);
                        }
                        const QString wrong = unordered_dependency(p, *d);
                        QVERIFY2(wrong.isEmpty(), qPrintable(QString("%1 rank %2 of %3: %4").arg(e).arg(rank).arg(ranks).arg(wrong)));
                    }
                    for (size_t i = 0; i < p.steps.size(); ++i) QVERIFY(ran[i] >= 1);
                }
            }
        }
    }

    // A plan whose buffer lies outside its arena is refused, naming the buffer.
    void bufferOutsideItsArenaIsRefused() {
        auto r = plan_of(test::example_graph("mlp"), 2, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r);
        plan::Plan p = r->plan;
        for (plan::Buffer &b : p.buffers)
            if (b.in_arena()) {
                b.offset = p.devices[static_cast<size_t>(b.device)].arena_bytes;
                break;
            }
        auto d = launch::describe_cuda_launch(p, 1);
        QVERIFY(!d);
        QVERIFY2(d.error().find("lies outside its device's arena") != std::string::npos, d.error().c_str());
        QVERIFY(!launch::describe_cuda_launch(r->plan, 0));
    }

    // Without a GPU (this machine, CI) the backend says why instead of launching.
    void backendWithoutGpuSaysWhy() {
        auto gpus = launch::cuda_gpus();
        if (gpus) QSKIP("this machine has a GPU: the gpu suite (tests/gpu) covers it");
        auto b = launch::make_cuda_backend();
        QVERIFY(!b);
        QCOMPARE(QString::fromStdString(b.error()), QString::fromStdString(gpus.error()));
        QVERIFY2(b.error().find("no GPU") != std::string::npos || b.error().find("no CUDA backend") != std::string::npos,
                 b.error().c_str());
    }
};

QTEST_GUILESS_MAIN(TestCudaLaunch)
#include "test_cuda_launch.moc"
