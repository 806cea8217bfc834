// Launching compiled plans on the cpu backend (issue 17, docs/launch.md): every
// example × 1, 2, 4 devices × every placement and baseline launched and equal to
// the reference; random certified plans from random shard specs; both all_reduce
// algorithms; measured memory by the plan's lifetimes; and every failure — a
// device over its memory, too many devices, a failing step, a wait that never
// ends, a cancel — reported with its step and device, in bounded time; and the
// ranks' agreement on getting ready (launch::agree_ranks, ranks as threads).
#include <QtTest/QtTest>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "io/project_file.h"
#include "io/random_inputs.h"
#include "launch/check.h"
#include "launch/cpu_backend.h"
#include "launch/accuracy.h"
#include "launch/host_boxes.h"
#include "launch/launch.h"
#include "launch/rank_world.h"
#include "launch/records.h"
#include "ops/library.h"
#include "passes/shard.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "plan_support.h"
#include "random_graph.h"
#include "store_support.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

cost::Target h100() { return test::builtin_target_or_stop("h100-sxm"); }

Graph load_example(const std::string &name) { return test::example_graph(name); }

// The plan of `g` on n H100s by a baseline (0 … 3) or, with -1, round-robin.
Expected<plan::PlanResult, std::string> plan_of(const Graph &g, int n, int baseline) {
    return test::plan_on(g, n, baseline);
}
// The same on n devices of the host (test::host_fixture: 2 shared cores).
Expected<plan::PlanResult, std::string> host_plan_of(const Graph &g, int n, int baseline) {
    return test::plan_on(g, n, baseline, test::host_fixture());
}

bool refused_as_not_fitting(const std::string &error) {
    for (const char *why : {"cannot be split", "has no linear", "cannot split", "does not divide"})
        if (error.find(why) != std::string::npos) return true;
    return false;
}

struct Launched {
    launch::LaunchResult result;
    launch::LaunchCheck check;
};

// Launches `p` on a cpu backend and checks its outputs; fails the test on a refusal.
Launched launch_and_check(const plan::Plan &p, const launch::CpuBackendOptions &bo = {},
                          const launch::LaunchOptions &lo = {}) {
    const auto inputs = make_random_inputs(p.graph, 7);
    auto backend = launch::make_cpu_backend(bo);
    auto r = launch::launch_plan(p, *backend, inputs, lo);
    if (!r) qFatal("launch refused: %s", r.error().c_str());
    Launched out{std::move(r).value(), {}};
    if (out.result.ok()) {
        auto c = launch::check_outputs(p, inputs, out.result.outputs);
        if (!c) qFatal("check: %s", c.error().c_str());
        out.check = std::move(c).value();
    }
    return out;
}

std::string what(const std::string &name, int n, int b) {
    return name + " on " + std::to_string(n) + " " +
           (b >= 0 ? plan::baseline_name(static_cast<plan::Baseline>(b)) : std::string("round-robin"));
}

// A project of one slice reading f32 x of `shape` and writing y, planned on one H100.
plan::Plan one_slice_plan(const Params &params, const std::vector<std::int64_t> &shape) {
    const OpLibrary &lib = OpLibrary::standard();
    const std::vector<PortTypes> types = {PortTypes{"x", {OperandType{DType::f32, ZPoint(shape)}}}};
    auto derived = lib.derive("slice", params, types);
    if (!derived) qFatal("slice: %s", derived.error().message.c_str());
    Graph g;
    g.name = "one_slice";
    Operation op;
    op.id = OpId("op");
    op.name = op.kind = "slice";
    op.params = params;
    auto bind = [&g](const char *port, const OperandType &type, TensorRole role) {
        Tensor t;
        t.id = TensorId(port);
        t.name = port;
        t.dtype = type.dtype;
        t.range = ZRange::of_shape(type.shape);
        t.role = role;
        PortBinding b{port, {{t.id, t.range}}};
        g.put_tensor(std::move(t));
        return b;
    };
    op.inputs.push_back(bind("x", types[0].operands[0], TensorRole::input));
    op.outputs.push_back(bind("y", derived->outputs.at(0).operands.at(0), TensorRole::output));
    g.put_op(std::move(op));
    auto r = plan_of(g, 1, static_cast<int>(plan::Baseline::dp));
    if (!r) qFatal("plan: %s", r.error().c_str());
    return std::move(r).value().plan;
}

// Ranks in one process, a thread each: allgather and broadcast through shared
// memory behind a barrier — what launch::agree_ranks needs, without MPI.
struct LocalRanks {
    explicit LocalRanks(int n) : count(n), sync(n), values(static_cast<size_t>(n)) {}
    int count;
    std::barrier<> sync;
    std::vector<std::int64_t> values;
    std::vector<std::byte> bytes;
};

class LocalWorld : public launch::RankWorld {
public:
    LocalWorld(LocalRanks &shared, int rank) : s_(shared), rank_(rank) {}
    int rank() const override { return rank_; }
    int ranks() const override { return s_.count; }
    int node_ranks() const override { return s_.count; }
    int node_rank() const override { return rank_; }
    void set_wait_limits(double, std::function<bool()>) override {}
    Expected<std::monostate, std::string> barrier(const std::string &) override {
        s_.sync.arrive_and_wait();
        return std::monostate{};
    }
    Expected<std::monostate, std::string> broadcast(void *data, std::int64_t bytes, int root, const std::string &) override {
        if (rank_ == root) s_.bytes.assign(static_cast<std::byte *>(data), static_cast<std::byte *>(data) + bytes);
        s_.sync.arrive_and_wait();
        if (rank_ != root) std::memcpy(data, s_.bytes.data(), static_cast<size_t>(bytes));
        s_.sync.arrive_and_wait();
        return std::monostate{};
    }
    Expected<std::vector<std::int64_t>, std::string> allgather(std::int64_t value, const std::string &) override {
        s_.values[static_cast<size_t>(rank_)] = value;
        s_.sync.arrive_and_wait();
        std::vector<std::int64_t> out = s_.values;
        s_.sync.arrive_and_wait();
        return out;
    }
    void announce_fault(const std::string &) override {}
    std::optional<std::string> remote_fault() override { return std::nullopt; }
    Expected<std::monostate, std::string> gather_at_root(
        const plan::Plan &, std::vector<launch::MeasuredStep> &, const std::function<int(int)> &,
        const std::function<Expected<std::vector<std::byte>, std::string>(int)> &,
        const std::function<void(int, std::vector<std::byte>)> &) override {
        return std::monostate{};
    }

private:
    LocalRanks &s_;
    int rank_;
};

// What each of `n` ranks gets from agree_ranks when the ranks in `failed` fail
// ("out of memory on rank r"): "" for an outcome that is fine, else its message.
std::vector<std::string> agreed(int n, const std::set<int> &failed) {
    LocalRanks shared(n);
    std::vector<std::string> out(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            LocalWorld world(shared, r);
            Expected<std::monostate, std::string> mine = std::monostate{};
            if (failed.count(r)) mine = unexpected("out of memory on rank " + std::to_string(r));
            auto a = launch::agree_ranks(world, std::move(mine), "preparing the plan");
            out[static_cast<size_t>(r)] = a ? std::string() : a.error();
        });
    for (std::thread &t : threads) t.join();
    return out;
}

}  // namespace

class TestLaunch : public QObject {
    Q_OBJECT
private slots:
    // ---- ranks agreeing on getting ready (launch/rank_world.h) ----
    // Every rank hears every rank's outcome: a failed rank keeps its own words,
    // the others get the first failed rank's, named; all fine, all go on.
    void ranksAgreeOnGettingReady() {
        QCOMPARE(agreed(3, {}), (std::vector<std::string>{"", "", ""}));
        const std::string of1 = "rank 1 could not finish preparing the plan: out of memory on rank 1";
        QCOMPARE(agreed(3, {1}), (std::vector<std::string>{of1, "out of memory on rank 1", of1}));
        const std::string of0 = "rank 0 could not finish preparing the plan: out of memory on rank 0";
        QCOMPARE(agreed(3, {0, 2}), (std::vector<std::string>{"out of memory on rank 0", of0, "out of memory on rank 2"}));
        QCOMPARE(agreed(1, {0}), std::vector<std::string>{"out of memory on rank 0"});
        QCOMPARE(agreed(1, {}), std::vector<std::string>{""});
    }

    // ---- the element moves under the collectives ----
    void hostBoxesCopyAndAddAcrossStrides() {
        // A 3×4 box at [1:4, 2:6] of a 5×8 buffer, copied into a dense 3×4 buffer.
        std::vector<float> big(40), small(12, -1);
        for (int i = 0; i < 40; ++i) big[static_cast<size_t>(i)] = static_cast<float>(i);
        const ZRange region = ZRange::of_shape({5, 8});
        const ZRange box(ZPoint{1, 2}, ZPoint{4, 6});
        const launch::HostBox src = launch::host_box(reinterpret_cast<std::byte *>(big.data()), region, box, DType::f32);
        const launch::HostBox dst =
            launch::host_box(reinterpret_cast<std::byte *>(small.data()), box, box, DType::f32);
        launch::copy_box(src, dst);
        QCOMPARE(small[0], 10.0f);   // [1, 2]
        QCOMPARE(small[3], 13.0f);   // [1, 5]
        QCOMPARE(small[4], 18.0f);   // [2, 2]
        QCOMPARE(small[11], 29.0f);  // [3, 5]
        // A chunk of the flat order crossing rows: elements 3 … 5 added once more.
        launch::add_elements(src, dst, 3, 6);
        QCOMPARE(small[2], 12.0f);
        QCOMPARE(small[3], 26.0f);
        QCOMPARE(small[5], 38.0f);
        QCOMPARE(small[6], 20.0f);
        // bf16 sums are rounded back to bf16 (1 + 2^-8 is not a bf16: it rounds to 1).
        std::uint16_t a = 0x3f80 /* 1.0 */, b = 0x3b80 /* 2^-8 */;
        const ZRange one = ZRange::of_shape({1});
        launch::add_elements(launch::host_box(reinterpret_cast<std::byte *>(&b), one, one, DType::bf16),
                             launch::host_box(reinterpret_cast<std::byte *>(&a), one, one, DType::bf16), 0, 1);
        QCOMPARE(a, std::uint16_t{0x3f80});
    }

    // ---- every example, device count and baseline ----
    void everyExampleBaselineAndDeviceCountEqualsTheReference() {
        int launched = 0, refused = 0, peak_differs = 0;
        std::map<std::string, int> collectives;
        for (const char *name : {"mlp", "mlp_bf16", "gpt2_block", "attention", "convnet"}) {
            const Graph g = load_example(name);
            for (int n : {1, 2, 4})
                for (int b = -1; b < 4; ++b) {
                    auto r = host_plan_of(g, n, b);
                    if (!r) {
                        QVERIFY2(refused_as_not_fitting(r.error()), (what(name, n, b) + ": " + r.error()).c_str());
                        ++refused;
                        continue;
                    }
                    const plan::Plan &p = r->plan;
                    const Launched l = launch_and_check(p);
                    QVERIFY2(l.result.ok(), (what(name, n, b) + ": " + l.result.fault.message).c_str());
                    QVERIFY2(l.check.pass(), (what(name, n, b) + ": " + l.check.summary()).c_str());
                    QCOMPARE(l.result.steps.size(), p.steps.size());
                    for (const launch::MeasuredStep &m : l.result.steps) {
                        QVERIFY(m.end >= m.start && m.start >= 0);
                        // Its dependencies finished before it started.
                        for (int d : p.steps[static_cast<size_t>(m.step)].deps)
                            QVERIFY(l.result.steps[static_cast<size_t>(d)].end <= m.start);
                    }
                    // Predicted peak memory per device equals the measured one: the
                    // same buffers, the same lifetimes in the same order (the
                    // backend uses memory in plan order, as the host target's
                    // simulation predicts), measured times.
                    for (const launch::DeviceMeasurement &m : l.result.devices)
                        if (m.peak_bytes != m.predicted_peak_bytes) {
                            ++peak_differs;
                            qInfo("%s, device %s: peak measured %lld, predicted %lld", what(name, n, b).c_str(),
                                  m.name.c_str(), static_cast<long long>(m.peak_bytes),
                                  static_cast<long long>(m.predicted_peak_bytes));
                        }
                    for (const plan::Step &s : p.steps)
                        if (s.kind == plan::StepKind::collective) ++collectives[s.collective];
                    ++launched;
                }
        }
        QString seen;
        for (const auto &[kind, count] : collectives) seen += QString(" %1×%2").arg(count).arg(kind.c_str());
        qInfo("%d plans launched equal to the reference, %d baselines refused as not fitting; collectives:%s; "
              "%d devices whose measured peak differs from the predicted one",
              launched, refused, qPrintable(seen), peak_differs);
        QVERIFY(launched >= 45);
        QCOMPARE(peak_differs, 0);
        QVERIFY(collectives["all_reduce"] > 0);
        QVERIFY(collectives["broadcast"] > 0);
    }

    // ---- slices as views (GPU targets) ----
    // On an H100 the GPT-2 block's q/k/v slices are views of c_attn's output: no
    // slice step, the attention reads three boxes of one buffer, each standing for
    // its slice's selection; the plan certifies, round-trips through its file and,
    // launched on the cpu backend, equals the reference. On the host target the
    // slices stay copies. The examples with slices, on 1, 2 and 4 H100s, launch
    // equal to the reference with their slices forwarded.
    void slicesAreViewsOnAGpuTarget() {
        const Graph g = load_example("gpt2_block");
        auto gpu = plan_of(g, 1, static_cast<int>(plan::Baseline::dp));
        QVERIFY2(gpu.has_value(), gpu ? "" : gpu.error().c_str());
        const plan::Plan &p = gpu->plan;
        int slices = 0, views = 0;
        for (const plan::Step &s : p.steps) {
            slices += s.op_kind == "slice";
            if (s.op != "attention") continue;
            std::set<int> buffers;
            for (const plan::Region &r : s.reads) {
                if (r.view_of.value.empty()) continue;
                ++views;
                buffers.insert(r.buffer);
                QCOMPARE(p.buffers[static_cast<size_t>(r.buffer)].tensor.value, std::string("qkv"));
                QCOMPARE(r.view_box.shape(), r.box.shape());
                // q at columns 0…, k at 768…, v at 1536… of qkv.
                const std::string of = r.view_of.value;
                const std::int64_t column = of == "q" ? 0 : of == "k" ? 768 : 1536;
                QVERIFY2(r.box.start()[2] - r.view_box.start()[2] == column, (of + " " + r.box.to_string()).c_str());
            }
            QCOMPARE(buffers.size(), size_t{1});
        }
        QCOMPARE(slices, 0);
        QCOMPARE(views, 3);
        QVERIFY2(gpu->certificate.pass(), gpu->certificate.text().c_str());
        auto back = plan::parse_plan(plan::plan_json(p), "p.json");
        QVERIFY2(back.has_value(), back ? "" : back.error().c_str());
        QCOMPARE(plan::plan_json(*back), plan::plan_json(p));
        // A malformed view names its field: the attention's first read (q) edited.
        auto refused = [&](const std::function<void(QJsonObject &)> &edit) {
            QJsonObject doc = QJsonDocument::fromJson(QByteArray::fromStdString(plan::plan_json(p))).object();
            QJsonArray steps = doc["steps"].toArray();
            for (int i = 0; i < steps.size(); ++i) {
                QJsonObject st = steps[i].toObject();
                if (st["op"].toString() != "attention") continue;
                QJsonArray reads = st["reads"].toArray();
                QJsonObject first = reads[0].toObject();
                edit(first);
                reads[0] = first;
                st["reads"] = reads;
                steps[i] = st;
            }
            doc["steps"] = steps;
            auto pl = plan::parse_plan(QJsonDocument(doc).toJson().toStdString(), "p.json");
            return pl ? std::string("accepted") : pl.error();
        };
        const std::string tensor = refused([](QJsonObject &r) {
            QJsonObject v = r["view_of"].toObject();
            v["tensor"] = "nope";
            r["view_of"] = v;
        });
        QVERIFY2(tensor.find(".reads[0].view_of.tensor: 'nope' is not a tensor of the plan's graph") != std::string::npos,
                 tensor.c_str());
        const std::string shape = refused([](QJsonObject &r) {
            QJsonObject v = r["view_of"].toObject();
            v["box"] = QJsonArray{QJsonArray{0, 0, 0}, QJsonArray{8, 256, 700}};
            r["view_of"] = v;
        });
        QVERIFY2(shape.find(".reads[0].view_of.box: [0:8, 0:256, 0:700] is not the shape of the box read") !=
                     std::string::npos,
                 shape.c_str());
        const Launched l = launch_and_check(*back);
        QVERIFY2(l.result.ok(), l.result.fault.message.c_str());
        QVERIFY2(l.check.pass(), l.check.summary().c_str());

        auto host = host_plan_of(g, 1, static_cast<int>(plan::Baseline::dp));
        QVERIFY2(host.has_value(), host ? "" : host.error().c_str());
        QCOMPARE(std::count_if(host->plan.steps.begin(), host->plan.steps.end(),
                               [](const plan::Step &s) { return s.op_kind == "slice"; }),
                 std::ptrdiff_t{3});

        int launched = 0;
        for (const char *name : {"gpt2_block", "attention"})  // the examples with slices
            for (int n : {1, 2, 4})
                for (int b = -1; b < 4; ++b) {
                    auto r = plan_of(load_example(name), n, b);
                    if (!r) {
                        QVERIFY2(refused_as_not_fitting(r.error()), (what(name, n, b) + ": " + r.error()).c_str());
                        continue;
                    }
                    QVERIFY2(r->certificate.pass(), (what(name, n, b) + "\n" + r->certificate.text()).c_str());
                    const Launched each = launch_and_check(r->plan);
                    QVERIFY2(each.result.ok(), (what(name, n, b) + ": " + each.result.fault.message).c_str());
                    QVERIFY2(each.check.pass(), (what(name, n, b) + ": " + each.check.summary()).c_str());
                    ++launched;
                }
        QVERIFY(launched >= 18);
    }

    // ---- both all_reduce algorithms ----
    void allReduceRunsAsRingAndAsTree() {
        auto r = plan_of(load_example("mlp"), 4, static_cast<int>(plan::Baseline::tp));
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        for (const char *algorithm : {"ring", "tree"}) {
            plan::Plan p = r->plan;
            int reduces = 0;
            for (plan::Step &s : p.steps)
                if (s.collective == "all_reduce") {
                    s.algorithm = algorithm;
                    ++reduces;
                }
            QVERIFY(reduces > 0);
            const Launched l = launch_and_check(p);
            QVERIFY2(l.result.ok() && l.check.pass(), (std::string(algorithm) + ": " + l.check.summary()).c_str());
            QVERIFY(l.result.moved_bytes > 0);
        }
        // Tree is offered for all_reduce only, as NCCL does: a plan asking it of a
        // broadcast fails that step by name.
        auto gpt = plan_of(load_example("gpt2_block"), 4, static_cast<int>(plan::Baseline::tp));
        QVERIFY(gpt.has_value());
        plan::Plan p = gpt->plan;
        int broadcast = -1;
        for (size_t i = 0; i < p.steps.size() && broadcast < 0; ++i)
            if (p.steps[i].collective == "broadcast") broadcast = static_cast<int>(i);
        QVERIFY(broadcast >= 0);
        p.steps[static_cast<size_t>(broadcast)].algorithm = "tree";
        const Launched l = launch_and_check(p);
        QCOMPARE(l.result.status, std::string("failed"));
        QCOMPARE(l.result.fault.step, broadcast);
        QVERIFY2(l.result.fault.message.find("algorithm 'tree' is not one broadcast runs") != std::string::npos,
                 l.result.fault.message.c_str());
    }

    // ---- random certified plans ----
    void randomCertifiedPlansLaunch() {
        std::mt19937_64 rng(20261127);
        const testing::Pick pick = [&rng](Coord lo, Coord hi) { return std::uniform_int_distribution<Coord>(lo, hi)(rng); };
        int launched = 0, skipped = 0;
        for (int c = 0; c < 40; ++c) {
            const Graph g = testing::GraphBuilder(pick).build();
            // One random spec per op (a random dim, 2 … 3 parts), kept where the shard pass takes it.
            Graph current = g;
            std::string applied;
            for (const OpPtr &op : g.operations()) {
                if (pick(0, 2) == 0) continue;
                // Picks in sequence (an operator+ chain would leave their order to the compiler).
                const Coord dim = pick(0, 3);
                const Coord parts = pick(2, 3);
                auto spec = parse_shard_spec(op->id.value + ":" + std::to_string(dim) + "=" + std::to_string(parts));
                ShardOptions so;
                so.specs = {*spec};
                so.propagate = false;
                so.movement = true;
                auto st = shard(current, so);
                if (!st) continue;
                current = st->graph;
                applied += " " + spec->text;
            }
            plan::PlanRequest req;
            req.target = h100();
            req.devices = static_cast<int>(pick(1, 4));
            req.placement = pick(0, 1) == 0 ? "round-robin" : "shard";
            auto r = plan::make_plan(current, req);
            if (!r) {
                ++skipped;  // a strided write, or more shards than devices under `shard`
                continue;
            }
            const std::string where = "case " + std::to_string(c) + ":" + applied + " on " + std::to_string(req.devices) +
                                      " devices, " + req.placement + "\n" + serialize_project(g);
            QVERIFY2(r->certificate.pass(), (r->certificate.text() + "\n" + where).c_str());
            const Launched l = launch_and_check(r->plan);
            QVERIFY2(l.result.ok(), l.result.fault.message.c_str());
            QVERIFY2(l.check.pass(), (l.check.summary() + "\n" + where).c_str());
            ++launched;
        }
        qInfo("%d random plans launched equal to the reference, %d not plannable", launched, skipped);
        QVERIFY(launched >= 20);
    }

    // Regression (found by randomCertifiedPlansLaunch): a reduce_max split three
    // ways whose parts became ops of their own (op13.partial.0/1/2, one per part
    // because each reads its own moved slice) writes one partials tensor from
    // three producers. Data movement only knew single producers, so round-robin
    // placement left two of the partials on other devices with no move to the
    // reduce: the plan certificate failed (dataflow: 1 of 3 elements written).
    void placementMovesPartialsWrittenBySeveralOps() {
        const std::string text = R"({"format": "tapestry-project", "version": 1, "name": "random",
          "tensors": [
            {"id": "t1", "dtype": "f32", "shape": [2, 5, 4], "role": "input"},
            {"id": "t3", "dtype": "f32", "shape": [2, 4, 5], "role": "intermediate"},
            {"id": "t4", "dtype": "f32", "shape": [2, 5, 3], "role": "parameter"},
            {"id": "t6", "dtype": "f32", "shape": [2, 4, 3], "role": "intermediate"},
            {"id": "t8", "dtype": "f32", "shape": [3], "role": "intermediate"},
            {"id": "t10", "dtype": "f32", "shape": [3], "role": "intermediate"},
            {"id": "t12", "dtype": "f32", "shape": [3], "role": "intermediate"},
            {"id": "t14", "dtype": "f32", "shape": [], "role": "output"}],
          "operations": [
            {"id": "op2", "kind": "transpose", "params": {"perm": [0, 2, 1]}, "inputs": {"x": "t1"}, "outputs": {"y": "t3"}},
            {"id": "op5", "kind": "matmul", "inputs": {"a": "t3", "b": "t4"}, "outputs": {"y": "t6"}},
            {"id": "op7", "kind": "reduce_sum", "params": {"axes": [0, -2], "keepdims": false}, "inputs": {"x": "t6"}, "outputs": {"y": "t8"}},
            {"id": "op9", "kind": "relu", "inputs": {"x": "t8"}, "outputs": {"y": "t10"}},
            {"id": "op11", "kind": "sigmoid", "inputs": {"x": "t10"}, "outputs": {"y": "t12"}},
            {"id": "op13", "kind": "reduce_max", "params": {"axes": [0], "keepdims": false}, "inputs": {"x": "t12"}, "outputs": {"y": "t14"}}]})";
        LoadResult loaded = parse_project(text, "regression");
        QVERIFY(loaded.ok());
        Graph current = loaded.graph;
        for (const char *spec : {"op2:2=3", "op5:2=2", "op13:0=3"}) {
            ShardOptions so;
            so.specs = {*parse_shard_spec(spec)};
            so.propagate = false;
            so.movement = true;
            auto st = shard(current, so);
            QVERIFY2(st.has_value(), st ? "" : st.error().c_str());
            current = st->graph;
        }
        QVERIFY(current.producers(TensorId("op13.partials")).size() == 3);
        plan::PlanRequest req;
        req.target = h100();
        req.devices = 3;
        req.placement = "round-robin";
        auto r = plan::make_plan(current, req);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        QVERIFY2(r->certificate.pass(), r->certificate.text().c_str());
        const Launched l = launch_and_check(r->plan);
        QVERIFY2(l.result.ok() && l.check.pass(), l.check.summary().c_str());
    }

    // ---- memory ----
    void measuredPeakFollowsThePlansLifetimes() {
        // The measured peak is the prediction's rule on measured times: given the
        // predicted times it is the predicted peak, exactly.
        for (const char *name : {"mlp", "gpt2_block", "convnet"}) {
            auto r = plan_of(load_example(name), 4, static_cast<int>(plan::Baseline::tp));
            if (!r) r = plan_of(load_example(name), 4, -1);
            QVERIFY2(r.has_value(), name);
            const std::vector<std::int64_t> peaks = launch::device_peaks(r->plan, r->prediction.steps);
            for (size_t d = 0; d < peaks.size(); ++d) QCOMPARE(peaks[d], r->prediction.devices[d].peak);
            const Launched l = launch_and_check(r->plan);
            QVERIFY(l.result.ok());
            for (const launch::DeviceMeasurement &m : l.result.devices) {
                QVERIFY(m.peak_bytes >= m.resident_bytes);
                QVERIFY(m.peak_bytes <= m.resident_bytes + m.arena_bytes);
                qInfo("%s tp %s: peak measured %lld, predicted %lld", name, m.name.c_str(),
                      static_cast<long long>(m.peak_bytes), static_cast<long long>(m.predicted_peak_bytes));
            }
        }
    }

    // The cpu backend's devices share the machine's cores: steps are admitted in
    // plan order, at most Backend::concurrent_steps() at once — the schedule
    // plan::simulate predicts for a host target (ClusterShape::concurrent_steps).
    void sharedCoresAdmitStepsInPlanOrder() {
        auto r = plan_of(load_example("gpt2_block"), 4, static_cast<int>(plan::Baseline::dp_tp));
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        auto backend = launch::make_cpu_backend();
        const auto inputs = make_random_inputs(r->plan.graph, 3);
        auto l = launch::launch_plan(r->plan, *backend, inputs);
        QVERIFY2(l.has_value() && l->ok(), l ? l->fault.message.c_str() : l.error().c_str());
        const int limit = backend->concurrent_steps();
        QVERIFY(limit >= 1);
        QCOMPARE(l->steps.size(), r->plan.steps.size());
        std::vector<std::pair<double, int>> events;
        for (size_t i = 0; i < l->steps.size(); ++i) {
            QCOMPARE(l->steps[i].step, static_cast<int>(i));
            if (i > 0) QVERIFY(l->steps[i].start >= l->steps[i - 1].start);
            events.emplace_back(l->steps[i].start, 1);
            events.emplace_back(l->steps[i].end, -1);
        }
        std::sort(events.begin(), events.end());  // an end before a start at the same instant
        int running = 0, most = 0;
        for (const auto &[t, d] : events) most = std::max(most, running += d);
        QVERIFY2(most <= limit, (std::to_string(most) + " steps ran at once, " + std::to_string(limit) + " slots").c_str());
    }

    // A whole input or parameter held by one device is read where it lies (as
    // `tapestry run` reads it); one held by several devices is copied into each,
    // so no two devices share memory — and an arena is reused by the next launch.
    void inputsAreReadInPlaceOnlyWhereOneDeviceHoldsThem() {
        for (int n : {1, 2}) {
            auto r = plan_of(load_example("mlp"), n, static_cast<int>(plan::Baseline::dp));
            QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
            auto backend = launch::make_cpu_backend();
            QVERIFY(backend->prepare(r->plan).has_value());
            int parameters = 0;
            for (size_t b = 0; b < r->plan.buffers.size(); ++b) {
                const plan::Buffer &buf = r->plan.buffers[b];
                if (buf.kind != plan::BufferKind::parameter) continue;
                ++parameters;
                const std::vector<std::byte> values(static_cast<size_t>(buf.bytes));
                QCOMPARE(backend->read_in_place(static_cast<int>(b), values), n == 1);
                if (n == 1) QCOMPARE(backend->host_memory(static_cast<int>(b)), const_cast<std::byte *>(values.data()));
            }
            QVERIFY(parameters > 0);
        }
        // Launched twice in a row (the second on the first's arenas), both equal the reference.
        auto r = plan_of(load_example("mlp"), 2, static_cast<int>(plan::Baseline::tp));
        QVERIFY(r.has_value());
        for (int k = 0; k < 2; ++k) {
            const Launched l = launch_and_check(r->plan);
            QVERIFY2(l.result.ok() && l.check.pass(), l.check.summary().c_str());
        }
    }

    // ---- accuracy measures ----
    void medianErrorAndKendallTau() {
        const std::vector<double> up{1, 2, 3, 4}, down{4, 3, 2, 1};
        QCOMPARE(launch::kendall_tau(up, up), 1.0);
        QCOMPARE(launch::kendall_tau(up, down), -1.0);
        // τ-b with a tie: pairs (1,2) tied in b, (1,3) and (2,3) concordant: 2 / √(2·3).
        const std::vector<double> a{1, 2, 3}, b{1, 1, 2};
        QVERIFY(std::abs(launch::kendall_tau(a, b) - 2 / std::sqrt(6.0)) < 1e-12);
        QCOMPARE(launch::kendall_tau(std::vector<double>{1}, std::vector<double>{2}), 0.0);
        const std::vector<double> predicted{1, 2, 3}, measured{1, 1, 4};
        QCOMPARE(launch::median_relative_error(predicted, measured), 0.25);  // errors 0, 1, 0.25
        const std::vector<double> p4{1, 2, 3, 6}, m4{1, 1, 4, 4};             // errors 0, 1, 0.25, 0.5
        QCOMPARE(launch::median_relative_error(p4, m4), 0.375);
    }

    // The wake is fitted on launches' own step times replayed against their walls:
    // launches whose walls are a replay with a known wake give that wake back (to
    // the fit's grid of 40 steps a decade), and one that ran every step with no
    // wait gives none.
    void wakeIsFittedOnLaunches() {
        auto r = host_plan_of(load_example("gpt2_block"), 4, static_cast<int>(plan::Baseline::dp));
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        const plan::Plan &p = r->plan;
        QCOMPARE(p.cluster.shared_cores, 2);  // 4 devices on 2 cores: steps wait for a core
        std::mt19937 rng(5);
        std::uniform_real_distribution<double> ms(0.5e-3, 3e-3);
        std::vector<launch::LaunchResult> results(3);
        for (launch::LaunchResult &l : results) {
            std::vector<double> d;
            for (size_t i = 0; i < p.steps.size(); ++i) d.push_back(ms(rng));
            plan::Plan woken = p;
            woken.cluster.wake = 0.4e-3;
            const plan::Prediction truth = plan::simulate(woken, d);
            for (size_t i = 0; i < p.steps.size(); ++i)
                l.steps.push_back(launch::MeasuredStep{static_cast<int>(i), truth.steps[i].start, truth.steps[i].end});
            l.wall_seconds = truth.makespan;
            l.backend = "cpu";
            l.status = "ok";
        }
        std::vector<launch::LaunchOfPlan> launches;
        for (const launch::LaunchResult &l : results) launches.push_back({&p, &l});
        const launch::WakeFit fit = launch::fit_wake(launches);
        QCOMPARE(fit.launches, 3);
        QVERIFY2(std::abs(fit.seconds / 0.4e-3 - 1) < 0.06, std::to_string(fit.seconds).c_str());
        QVERIFY(fit.error_before > 0.01);
        QVERIFY(fit.error_after < 0.01);
        // A plan whose devices have cores of their own, or a launch cut short, is not fitted on.
        plan::Plan own = r->plan;
        own.cluster.shared_cores = 0;
        launch::LaunchResult cut = results[0];
        cut.steps.pop_back();
        const launch::WakeFit none = launch::fit_wake({{&own, &results[0]}, {&p, &cut}});
        QCOMPARE(none.launches, 0);
        QCOMPARE(none.seconds, 0.0);
        // Planned with the wake, a plan for shared cores carries it and is simulated with it.
        plan::PlanRequest req;
        req.target = test::host_fixture();
        req.devices = 4;
        req.baseline = plan::Baseline::dp;
        auto plain = plan::make_plan(load_example("gpt2_block"), req);
        QVERIFY2(plain.has_value(), plain ? "" : plain.error().c_str());
        QCOMPARE(plain->plan.cluster.wake, 0.0);
        req.wake = fit.seconds;
        req.wake_launches = fit.launches;
        auto woken = plan::make_plan(load_example("gpt2_block"), req);
        QVERIFY2(woken.has_value(), woken ? "" : woken.error().c_str());
        QCOMPARE(woken->plan.cluster.wake, fit.seconds);
        QVERIFY(woken->prediction.makespan > plain->prediction.makespan);
        QVERIFY(plan::calibration_summary(*woken).find("after its release (fitted on the launches)") != std::string::npos);
        // Kept in a session, the same launches give the same wake back (what
        // `tapestry plan --session` and the Plan dock plan with).
        test::SessionFiles files;
        auto session = test::SessionFiles::open(files.fresh());
        QVERIFY(session != nullptr);
        auto project = session->create_project("gpt2_block");
        QVERIFY(project.has_value());
        auto version = session->save_version(*project, load_example("gpt2_block"), "save");
        QVERIFY(version.has_value());
        const cost::Model model(test::host_fixture(), p.cluster);
        QCOMPARE(launch::session_wake(*session, "host")->launches, 0);
        std::optional<store::PlanId> plan_id;
        for (const launch::LaunchResult &l : results) {
            auto kept = launch::record_launch(*session, version->id, std::nullopt, plan_id, p, l, nullptr, &model);
            QVERIFY2(kept.has_value(), kept ? "" : kept.error().c_str());
            plan_id = kept->plan_id;
        }
        auto again = launch::session_wake(*session, "host");
        QVERIFY2(again.has_value(), again ? "" : again.error().c_str());
        QCOMPARE(again->launches, 3);
        QCOMPARE(again->seconds, fit.seconds);
    }

    // ---- records ----
    void launchesAreKeptInTheSessionWithCalibrationForTheHost() {
        // A host target with fixed figures (a fixture, not a measurement of this machine).
        auto base = cost::builtin_target("host");
        QVERIFY(base.has_value());
        const cost::Target host = cost::measured_target(*base, cost::HostFigures{2e11, 0, 2e10, 16e9, 5e-6, "fixture"});
        plan::PlanRequest req;
        req.target = host;
        req.devices = 2;
        req.baseline = plan::Baseline::tp;
        const Graph g = load_example("mlp");
        auto r = plan::make_plan(g, req);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        QCOMPARE(r->plan.target, std::string("host"));
        QVERIFY(launch::measures_plan_target(r->plan, "cpu"));
        const Launched l = launch_and_check(r->plan);
        QVERIFY(l.result.ok() && l.check.pass());

        test::SessionFiles files;
        auto session = test::SessionFiles::open(files.fresh());
        QVERIFY(session != nullptr);
        auto project = session->create_project("mlp");
        QVERIFY(project.has_value());
        auto version = session->save_version(*project, g, "save");
        QVERIFY(version.has_value());
        const cost::Model model(host, r->plan.cluster);
        auto kept = launch::record_launch(*session, version->id, std::nullopt, std::nullopt, r->plan, l.result, &l.check, &model);
        QVERIFY2(kept.has_value(), kept ? "" : kept.error().c_str());
        int kernels_and_copies = 0;
        for (const plan::Step &s : r->plan.steps)
            kernels_and_copies += s.kind == plan::StepKind::kernel || s.kind == plan::StepKind::copy;
        QCOMPARE(kept->calibration_points, kernels_and_copies);
        auto launches = session->launches(kept->plan_id);
        QVERIFY(launches.has_value());
        QCOMPARE(launches->size(), size_t{1});
        QCOMPARE(launches->front().status, std::string("ok"));
        QCOMPARE(launches->front().backend, std::string("cpu"));
        QVERIFY(launches->front().equivalence.rfind("pass: PASS y vs unsharded", 0) == 0);
        auto steps = session->step_measurements(kept->launch_id);
        QVERIFY(steps.has_value());
        QCOMPARE(steps->size(), r->plan.steps.size());
        QCOMPARE(steps->front().predicted_seconds, r->plan.steps.front().predicted);
        auto rows = session->calibration("host");
        QVERIFY(rows.has_value());
        QCOMPARE(static_cast<int>(rows->size()), kernels_and_copies);
        // The samples are the uncalibrated model's predictions against what ran.
        const auto samples = launch::calibration_samples(r->plan, model, l.result);
        QCOMPARE(static_cast<int>(samples.size()), kernels_and_copies);
        for (const cost::CalibrationSample &s : samples) QVERIFY(s.measured > 0 && s.predicted > 0);
        // With an empty table the calibrated durations are the plan's own predictions, exactly.
        const std::vector<double> durations = launch::calibrated_durations(r->plan, model, cost::Calibration{});
        for (size_t i = 0; i < durations.size(); ++i) QCOMPARE(durations[i], r->plan.steps[i].predicted);

        // A second launch of the same plan is another row under the same plan; a
        // plan for an H100 launched here measures no H100: no calibration points.
        auto again = launch::record_launch(*session, version->id, std::nullopt, kept->plan_id, r->plan, l.result, &l.check, &model);
        QVERIFY(again.has_value());
        QCOMPARE(session->launches(kept->plan_id)->size(), size_t{2});
        auto gpu = plan_of(g, 2, static_cast<int>(plan::Baseline::tp));
        QVERIFY(gpu.has_value());
        QVERIFY(!launch::measures_plan_target(gpu->plan, "cpu"));
        // On the cuda backend: the target's GPU, with a GPU per plan device — not a
        // two-device plan on one GPU's virtual devices, nor on another GPU.
        QVERIFY(launch::measures_plan_target(gpu->plan, "cuda", "cuda: 2 × NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB)"));
        QVERIFY(launch::measures_plan_target(gpu->plan, "cuda", "cuda: 8 × NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB)"));
        QVERIFY(!launch::measures_plan_target(
            gpu->plan, "cuda", "cuda: 1 × NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB); plans of several devices run as virtual devices on it"));
        QVERIFY(!launch::measures_plan_target(gpu->plan, "cuda", "cuda: 2 × NVIDIA H200 (sm_90, 139.8 GiB)"));
        const Launched lg = launch_and_check(gpu->plan);
        const cost::Model h100_model(h100(), gpu->plan.cluster);
        auto on_gpu = launch::record_launch(*session, version->id, std::nullopt, std::nullopt, gpu->plan, lg.result, &lg.check, &h100_model);
        QVERIFY(on_gpu.has_value());
        QCOMPARE(on_gpu->calibration_points, 0);
        QCOMPARE(session->calibration("h100-sxm")->size(), size_t{0});
    }

    // A 16-bit output's tolerance grows with the roundings on its way: mlp_bf16 is six
    // bf16 operations in a chain, the f32 mlp has none to count.
    void reducedRoundingsCountTheLongestChain() {
        const Graph bf16 = load_example("mlp_bf16");
        QCOMPARE(verify::reduced_roundings(bf16, TensorId{"y"}), 6);
        QCOMPARE(verify::reduced_roundings(bf16, TensorId{"a1"}), 2);
        QCOMPARE(verify::reduced_roundings(bf16, TensorId{"x"}), 0);  // an input: nothing rounded it here
        const Graph f32 = load_example("mlp");
        for (const TensorPtr &t : f32.tensors())
            if (t->role == TensorRole::output) QCOMPARE(verify::reduced_roundings(f32, t->id), 0);
    }

    void aFailedLaunchIsKeptWithTheStepsBeforeIt() {
        auto r = plan_of(load_example("mlp"), 2, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r.has_value());
        launch::LaunchOptions lo;
        lo.fail_step = 5;
        const Launched l = launch_and_check(r->plan, {}, lo);
        QCOMPARE(l.result.status, std::string("failed"));
        test::SessionFiles files;
        auto session = test::SessionFiles::open(files.fresh());
        QVERIFY(session != nullptr);
        auto project = session->create_project("mlp");
        auto version = session->save_version(*project, r->plan.graph, "import");
        QVERIFY(version.has_value());
        auto kept = launch::record_launch(*session, version->id, std::nullopt, std::nullopt, r->plan, l.result, nullptr, nullptr);
        QVERIFY2(kept.has_value(), kept ? "" : kept.error().c_str());
        auto launches = session->launches(kept->plan_id);
        QCOMPARE(launches->front().status, std::string("failed"));
        QVERIFY(launches->front().error.find("step 5") != std::string::npos);
        QCOMPARE(session->step_measurements(kept->launch_id)->size(), l.result.steps.size());
        QVERIFY(!l.result.steps.empty());
    }

    // ---- failures ----
    void refusesAPlanOverADevicesMemory() {
        auto r = plan_of(load_example("mlp"), 2, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r.has_value());
        launch::CpuBackendOptions bo;
        bo.device_memory = 1 << 20;
        auto backend = launch::make_cpu_backend(bo);
        auto l = launch::launch_plan(r->plan, *backend, make_random_inputs(r->plan.graph, 1));
        QVERIFY(!l.has_value());
        QVERIFY2(l.error().find("device 0:0 needs") != std::string::npos, l.error().c_str());
        QVERIFY2(l.error().find("more than the 1.0 MiB a cpu device has") != std::string::npos, l.error().c_str());
    }

    void refusesMoreDevicesThanTheBackendHas() {
        auto r = plan_of(load_example("mlp"), 4, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r.has_value());
        launch::CpuBackendOptions bo;
        bo.max_devices = 2;
        auto backend = launch::make_cpu_backend(bo);
        auto l = launch::launch_plan(r->plan, *backend, make_random_inputs(r->plan.graph, 1));
        QVERIFY(!l.has_value());
        QCOMPARE(l.error(), std::string("the plan has 4 devices, but the cpu backend offers 2"));
    }

    void aFailedStepNamesItsDeviceAndKeepsTheStepsBefore() {
        auto r = plan_of(load_example("gpt2_block"), 4, static_cast<int>(plan::Baseline::tp));
        QVERIFY(r.has_value());
        const plan::Plan &p = r->plan;
        int victim = -1;  // a kernel on device 0:1, with earlier steps
        for (size_t i = 10; i < p.steps.size() && victim < 0; ++i)
            if (p.steps[i].kind == plan::StepKind::kernel && p.steps[i].device == 1) victim = static_cast<int>(i);
        QVERIFY(victim > 0);
        launch::LaunchOptions lo;
        lo.fail_step = victim;
        const auto t0 = std::chrono::steady_clock::now();
        const Launched l = launch_and_check(p, {}, lo);
        QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
        QCOMPARE(l.result.status, std::string("failed"));
        QCOMPARE(l.result.fault.step, victim);
        QCOMPARE(l.result.fault.device, 1);
        QVERIFY2(l.result.fault.message.find("on device 0:1 (rank 0) failed: injected fault") != std::string::npos,
                 l.result.fault.message.c_str());
        QVERIFY(!l.result.steps.empty());
        for (const launch::MeasuredStep &m : l.result.steps) QVERIFY(m.step != victim);
        QVERIFY(l.result.outputs.empty());
    }

    void aWaitThatNeverEndsTimesOutNamingIt() {
        // A plan whose step 1 waits for a step that waits for it: it can never run.
        auto r = plan_of(load_example("mlp"), 2, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r.has_value());
        plan::Plan p = r->plan;
        const int last = static_cast<int>(p.steps.size()) - 1;
        int first_on_last_device = -1;
        for (size_t i = 0; i < p.steps.size() && first_on_last_device < 0; ++i)
            if (p.steps[i].device == p.steps[static_cast<size_t>(last)].device) first_on_last_device = static_cast<int>(i);
        p.steps[static_cast<size_t>(first_on_last_device)].deps.push_back(last);
        launch::LaunchOptions lo;
        lo.wait_timeout_seconds = 0.3;
        const auto t0 = std::chrono::steady_clock::now();
        const Launched l = launch_and_check(p, {}, lo);
        QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
        QCOMPARE(l.result.status, std::string("failed"));
        QCOMPARE(l.result.fault.step, first_on_last_device);
        QVERIFY2(l.result.fault.message.find("waited over 0.3 s at step " + std::to_string(first_on_last_device)) !=
                     std::string::npos,
                 l.result.fault.message.c_str());
        QVERIFY2(l.result.fault.message.find("its dependency step " + std::to_string(last)) != std::string::npos,
                 l.result.fault.message.c_str());
        // The other device's steps ran and were measured.
        QVERIFY(!l.result.steps.empty());
    }

    void cancelStopsTheLaunch() {
        auto r = plan_of(load_example("gpt2_block"), 2, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r.has_value());
        std::atomic<int> done{0};
        launch::LaunchOptions lo;
        lo.progress = [&](int d, int) { done = d; };
        lo.cancelled = [&] { return done.load() >= 3; };
        const Launched l = launch_and_check(r->plan, {}, lo);
        QCOMPARE(l.result.status, std::string("cancelled"));
        QVERIFY(l.result.steps.size() >= 3 && l.result.steps.size() < r->plan.steps.size());
    }

    void badInputsAreRefusedByName() {
        auto r = plan_of(load_example("mlp"), 2, static_cast<int>(plan::Baseline::dp));
        QVERIFY(r.has_value());
        auto inputs = make_random_inputs(r->plan.graph, 1);
        inputs.erase(inputs.begin()->first);
        const std::string missing = "'" + make_random_inputs(r->plan.graph, 1).begin()->first.value + "' has no value";
        auto backend = launch::make_cpu_backend();
        auto l = launch::launch_plan(r->plan, *backend, inputs);
        QVERIFY(!l.has_value());
        QVERIFY2(l.error().find(missing) != std::string::npos, l.error().c_str());
    }

    // ---- single-op regressions the GPU pack maker found (tests/gpu/make_pack.cpp) ----
    // A slice with ends before starts writes a 0×2 output: the plan has no piece of
    // it, and the launch returned no value for 'y' at all.
    void emptyOutputIsReturned() {
        const plan::Plan p = one_slice_plan(Params{{"starts", std::vector<std::int64_t>{3}}, {"ends", std::vector<std::int64_t>{1}}}, {5, 2});
        const auto inputs = make_random_inputs(p.graph, 7);
        auto backend = launch::make_cpu_backend();
        auto r = launch::launch_plan(p, *backend, inputs);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        QVERIFY2(r->ok(), r->fault.message.c_str());
        const auto y = r->outputs.find(TensorId("y"));
        QVERIFY2(y != r->outputs.end(), "the launch returned no value for the empty output 'y'");
        QCOMPARE(y->second.dtype, DType::f32);
        QCOMPARE(y->second.shape, (ZPoint{0, 2}));
        QCOMPARE(y->second.element_count(), std::int64_t{0});
        auto c = launch::check_outputs(p, inputs, r->outputs);
        QVERIFY2(c.has_value(), c ? "" : c.error().c_str());
    }

    // x[:, 1:6:2, :] of a 2×7×3 x: the plan loads only rows 1 … 5 of the middle axis,
    // and the kernel's copy was refused by oneDNN ("could not construct a memory
    // descriptor using strides").
    void sliceOfMiddleAxisLaunches() {
        const plan::Plan p = one_slice_plan(Params{{"starts", std::vector<std::int64_t>{1}},
                                                   {"ends", std::vector<std::int64_t>{6}},
                                                   {"axes", std::vector<std::int64_t>{-2}},
                                                   {"steps", std::vector<std::int64_t>{2}}},
                                            {2, 7, 3});
        const auto inputs = make_random_inputs(p.graph, 7);
        auto backend = launch::make_cpu_backend();
        auto r = launch::launch_plan(p, *backend, inputs);
        QVERIFY2(r.has_value(), r ? "" : r.error().c_str());
        QVERIFY2(r->ok(), r->fault.message.c_str());
        const TensorData &x = inputs.at(TensorId("x"));
        const TensorData &y = r->outputs.at(TensorId("y"));
        QCOMPARE(y.shape, (ZPoint{2, 3, 3}));
        for (std::int64_t i = 0; i < 2; ++i)
            for (std::int64_t j = 0; j < 3; ++j)
                for (std::int64_t k = 0; k < 3; ++k)
                    QCOMPARE(y.get((i * 3 + j) * 3 + k), x.get((i * 7 + 1 + 2 * j) * 3 + k));
    }
};

QTEST_GUILESS_MAIN(TestLaunch)
#include "test_launch.moc"
