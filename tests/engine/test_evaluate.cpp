// The oracle made fast keeps its values (ops/evaluate.h, RefContext::fast): every
// kernel fast path against its naive loop on random sub-ranges, parallel
// evaluation of the example projects against one thread bit for bit (sharded
// too), and the progress and cancel hooks the CLI and the studio will use.
#include <QtTest>
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "io/project_file.h"
#include "io/tensor_values.h"
#include "op_cases.h"
#include "ops/evaluate.h"
#include "substitute_support.h"

using namespace tapestry;
using namespace tapestry::testing;

namespace {

// A row per shape family each fast path distinguishes: batching and broadcast,
// depths past one packed panel (256) and tiles cut at the edges, conv padding,
// stride, dilation and groups, attention masks and causality; then the op table.
std::vector<OpCase> fast_path_cases() {
    std::vector<OpCase> c;
    c.push_back({"matmul/2d", "matmul", {}, {port("a", {5, 4}), port("b", {4, 6})}});
    c.push_back({"matmul/deep-ragged", "matmul", {}, {port("a", {37, 300}), port("b", {300, 29})}});
    c.push_back({"matmul/batched", "matmul", {}, {port("a", {2, 9, 17}), port("b", {2, 17, 10})}});
    c.push_back({"matmul/broadcast-batch", "matmul", {}, {port("a", {3, 1, 5, 7}), port("b", {2, 7, 6})}});
    c.push_back({"matmul/batch-one-side", "matmul", {}, {port("a", {4, 3}), port("b", {2, 3, 5})}});
    c.push_back({"linear/bias", "linear", {}, {port("x", {2, 3, 5}), port("w", {5, 4}), port("bias", {4})}});
    c.push_back({"linear/vector", "linear", {}, {port("x", {5}), port("w", {5, 3}), port("bias", {3})}});
    c.push_back({"linear/no-bias", "linear", {}, {port("x", {6, 5}), port("w", {5, 4})}});
    c.push_back({"linear/deep", "linear", {}, {port("x", {10, 270}), port("w", {270, 13}), port("bias", {13})}});
    c.push_back({"partial_matmul/clipped",
                 "partial_matmul",
                 Params{{"parts", std::int64_t{4}}},
                 {port("a", {2, 3, 10}), port("b", {10, 4})}});
    c.push_back({"partial_matmul/broadcast",
                 "partial_matmul",
                 Params{{"parts", std::int64_t{3}}},
                 {port("a", {2, 1, 3, 9}), port("b", {2, 9, 5})}});
    c.push_back({"partial_matmul/deep",
                 "partial_matmul",
                 Params{{"parts", std::int64_t{2}}},
                 {port("a", {6, 600}), port("b", {600, 9})}});
    c.push_back({"conv2d/plain", "conv2d", {}, {port("x", {2, 3, 7, 7}), port("w", {4, 3, 3, 3})}});
    c.push_back({"conv2d/pad-stride-bias",
                 "conv2d",
                 Params{{"stride", Ints{2, 1}}, {"padding", Ints{1, 0, 2, 1}}},
                 {port("x", {2, 3, 9, 8}), port("w", {5, 3, 3, 2}), port("bias", {5})}});
    c.push_back({"conv2d/dilation-pad",
                 "conv2d",
                 Params{{"dilation", Ints{2, 2}}, {"padding", Ints{2, 2, 2, 2}}},
                 {port("x", {1, 2, 9, 9}), port("w", {3, 2, 3, 3})}});
    c.push_back({"conv2d/groups-bias",
                 "conv2d",
                 Params{{"groups", std::int64_t{2}}, {"padding", Ints{1, 1, 1, 1}}},
                 {port("x", {2, 6, 6, 6}), port("w", {4, 3, 3, 3}), port("bias", {4})}});
    c.push_back({"conv2d/1x1-stride2",
                 "conv2d",
                 Params{{"stride", Ints{2, 2}}},
                 {port("x", {1, 4, 7, 7}), port("w", {6, 4, 1, 1})}});
    c.push_back({"conv2d/depthwise",
                 "conv2d",
                 Params{{"groups", std::int64_t{4}}, {"padding", Ints{1, 1, 1, 1}}},
                 {port("x", {1, 4, 5, 5}), port("w", {4, 1, 3, 3})}});
    c.push_back({"attention/heads",
                 "attention",
                 Params{{"heads", std::int64_t{2}}},
                 {port("q", {2, 5, 8}), port("k", {2, 7, 8}), port("v", {2, 7, 12})}});
    c.push_back({"attention/mask",
                 "attention",
                 Params{{"heads", std::int64_t{2}}},
                 {port("q", {2, 5, 8}), port("k", {2, 7, 8}), port("v", {2, 7, 12}), port("mask", {5, 7})}});
    c.push_back({"attention/causal",
                 "attention",
                 Params{{"heads", std::int64_t{2}}, {"causal", true}},
                 {port("q", {2, 6, 8}), port("k", {2, 6, 8}), port("v", {2, 6, 8})}});
    c.push_back({"attention/causal-mask-scale",
                 "attention",
                 Params{{"heads", std::int64_t{1}}, {"causal", true}, {"scale", 0.3}},
                 {port("q", {1, 9, 4}), port("k", {1, 4, 4}), port("v", {1, 4, 6}), port("mask", {9, 4})}});
    c.push_back(
        {"layernorm/last-axis", "layernorm", {}, {port("x", {3, 4, 10}), port("gamma", {10}), port("beta", {10})}});
    c.push_back({"layernorm/two-axes",
                 "layernorm",
                 Params{{"axis", std::int64_t{-2}}},
                 {port("x", {2, 3, 4, 5}), port("gamma", {4, 5}), port("beta", {4, 5})}});
    c.push_back({"layernorm/no-affine", "layernorm", {}, {port("x", {4, 6})}});
    c.push_back({"rmsnorm/gamma", "rmsnorm", {}, {port("x", {3, 7}), port("gamma", {7})}});
    c.push_back({"rmsnorm/axis0", "rmsnorm", Params{{"axis", std::int64_t{0}}}, {port("x", {2, 3})}});
    c.push_back({"add/broadcast", "add", {}, {port("a", {4, 1, 3}), port("b", {2, 1})}});
    c.push_back({"mul/scalar", "mul", {}, {port("a", {}), port("b", {2, 3})}});
    c.push_back({"gelu/tanh", "gelu", Params{{"approximate", std::string("tanh")}}, {port("x", {5, 6})}});
    c.push_back({"relu/3d", "relu", {}, {port("x", {2, 3, 4})}});
    c.push_back({"cast/to-bf16", "cast", Params{{"to", std::string("bf16")}}, {port("x", {3, 5})}});
    c.push_back({"slice/steps",
                 "slice",
                 Params{{"starts", Ints{4, 1}}, {"ends", Ints{0, 7}}, {"axes", Ints{0, 2}}, {"steps", Ints{-2, 3}}},
                 {port("x", {5, 6, 7})}});
    c.push_back({"transpose/perm", "transpose", Params{{"perm", Ints{2, 0, 1}}}, {port("x", {2, 3, 4})}});
    c.push_back({"reshape/merge", "reshape", Params{{"shape", Ints{6, 4}}}, {port("x", {2, 3, 4})}});
    c.push_back({"move/copy", "move", Params{{"collective", std::string("copy")}}, {port("x", {3, 4})}});
    // And every row of the op table (fused chains run their members' fast paths).
    std::set<std::string> names;
    for (const OpCase &row : c) names.insert(row.name);
    for (const OpCase &row : all_op_cases())
        if (names.insert(row.name).second) c.push_back(row);
    return c;
}

// "" when the fast outputs equal the naive ones: NaN (unwritten) in the same
// places, values within what reordering double additions could change.
std::string compare_outputs(const std::vector<std::vector<RefArray>> &naive,
                            const std::vector<std::vector<RefArray>> &fast) {
    for (size_t p = 0; p < naive.size(); ++p)
        for (size_t o = 0; o < naive[p].size(); ++o)
            for (size_t k = 0; k < naive[p][o].data.size(); ++k) {
                const double n = naive[p][o].data[k], f = fast[p][o].data[k];
                const bool same = std::isnan(n) ? std::isnan(f) : std::abs(f - n) <= 1e-9 + 1e-12 * std::abs(n);
                if (!same) {
                    std::ostringstream s;
                    s << "output " << p << "/" << o << " element " << k << ": naive " << n << ", fast " << f;
                    return s.str();
                }
            }
    return {};
}

Graph load_example(const std::string &file) {
    const char *root = std::getenv("TAPESTRY_SOURCE_DIR");
    const std::filesystem::path path = std::filesystem::path(root ? root : ".") / "projects" / file;
    LoadResult loaded = load_project(path);
    TAPESTRY_CHECK(loaded.ok(), "test_evaluate: an example project does not load");
    TAPESTRY_CHECK(load_tensor_values(loaded.graph, path.parent_path()).empty(), "test_evaluate: values do not load");
    return std::move(loaded.graph);
}

// The example projects, scaled where they are big (test::scaled keeps the ops,
// params and shards): every row has operations cut into several chunks.
Graph example_row(const std::string &name) {
    if (name == "gpt2_block")
        return test::scaled(load_example("gpt2_block.tapestry.json"),
                            {{8, 2}, {256, 32}, {768, 96}, {1536, 192}, {2304, 288}, {3072, 384}});
    if (name == "mlp")
        return test::scaled(load_example("mlp.tapestry.json"),
                            {{512, 64}, {1024, 48}, {4096, 80}, {128, 16}, {256, 32}, {384, 48}});
    if (name == "attention") return test::scaled(load_example("attention.tapestry.json"), {{128, 32}, {512, 64}});
    return load_example(name + ".tapestry.json");
}

struct ProgressLog {
    std::vector<std::pair<std::int64_t, std::int64_t>> calls;
    std::string problem() const {  // "" when monotonic and complete
        if (calls.empty()) return "progress was never called";
        for (size_t i = 0; i < calls.size(); ++i) {
            if (calls[i].second != calls.front().second) return "the total changed";
            if (i > 0 && calls[i].first <= calls[i - 1].first) return "done did not grow";
        }
        if (calls.back().first != calls.back().second) return "the last call is not done == total";
        return {};
    }
};

Expected<std::map<TensorId, RefArray>, std::string> evaluate(const Graph &g, int threads, bool fast, bool shards,
                                                             ProgressLog *log = nullptr) {
    EvaluationOptions o;
    o.threads = threads;
    o.fast_kernels = fast;
    o.run_shards = shards;
    if (log) o.progress = [log](std::int64_t done, std::int64_t total) { log->calls.emplace_back(done, total); };
    return evaluate_reference(g, test::oracle_inputs(g, g, 7), OpLibrary::standard(), o);
}

bool bitwise_equal_values(const std::map<TensorId, RefArray> &a, const std::map<TensorId, RefArray> &b) {
    if (a.size() != b.size()) return false;
    for (const auto &[id, array] : a)
        if (!b.count(id) || !bitwise_equal({{array}}, {{b.at(id)}})) return false;
    return true;
}

// One linear layer y = x·w + bias, x [rows, depth], w [depth, cols].
Graph linear_graph(Coord rows, Coord depth, Coord cols) {
    test::GraphBuilder b;
    const TensorId x = b.input("x", {rows, depth});
    const TensorId w = b.input("w", {depth, cols}, TensorRole::parameter);
    const TensorId bias = b.input("bias", {cols}, TensorRole::parameter);
    b.op("y", "linear", {}, {{"x", x}, {"w", w}, {"bias", bias}}, true);
    return std::move(b.g);
}

}  // namespace

class TestEvaluate : public QObject {
    Q_OBJECT
private slots:
    // ---- fast paths ------------------------------------------------------------------------
    void fast_path_equals_naive_loop_data() {
        QTest::addColumn<int>("row");
        const auto cases = fast_path_cases();
        for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].name.c_str()) << static_cast<int>(i);
    }
    // On the whole space, empty and single-point ranges, uneven splits and random
    // boxes: the same elements written, the same values.
    void fast_path_equals_naive_loop() {
        QFETCH(int, row);
        const OpCase c = fast_path_cases()[static_cast<size_t>(row)];
        auto prepared = prepare(c, 11);
        QVERIFY2(prepared.has_value(), prepared ? "" : prepared.error().c_str());
        std::mt19937_64 rng(static_cast<std::uint64_t>(row) + 3);
        for (const ZRange &r : random_subranges(prepared->derivation.signature.index_space, rng, 12)) {
            std::vector<std::vector<RefArray>> naive = prepared->outputs, fast = prepared->outputs;
            run_reference(*prepared, r, naive, nullptr, false);
            run_reference(*prepared, r, fast, nullptr, true);
            const std::string e = compare_outputs(naive, fast);
            QVERIFY2(e.empty(), ("sub-range " + r.to_string() + ": " + e).c_str());
        }
    }

    // ---- parallel evaluation -------------------------------------------------------------------
    void parallel_equals_one_thread_data() {
        QTest::addColumn<QString>("example");
        for (const char *e : {"gpt2_block", "mlp", "convnet", "attention", "mlp_bf16"}) QTest::newRow(e) << e;
    }
    // Bit for bit, with and without shards (mlp's fc1 is sharded), and the fast
    // paths within tolerance of the naive loops on the whole graph.
    void parallel_equals_one_thread() {
        QFETCH(QString, example);
        const Graph g = example_row(example.toStdString());
        for (bool shards : {true, false}) {
            auto one = evaluate(g, 1, true, shards);
            ProgressLog log;
            auto three = evaluate(g, 3, true, shards, &log);
            QVERIFY2(one && three, one ? (three ? "" : three.error().c_str()) : one.error().c_str());
            // The claim needs chunks: more progress calls than operations.
            QVERIFY2(log.calls.size() > g.operations().size(), std::to_string(log.calls.size()).c_str());
            QVERIFY(bitwise_equal_values(*one, *three));
            for (const auto &[id, array] : *three)  // every chunk ran: nothing is left unwritten
                QVERIFY2(std::none_of(array.data.begin(), array.data.end(), [](double v) { return std::isnan(v); }),
                         id.value.c_str());
        }
        auto naive = evaluate(g, 2, false, false);
        auto fast = evaluate(g, 2, true, false);
        QVERIFY(naive && fast);
        for (const auto &[id, array] : *naive) {
            const std::string e = compare_outputs({{array}}, {{fast->at(id)}});
            QVERIFY2(e.empty(), (id.value + ": " + e).c_str());
        }
    }

    // Run shard by shard (each shard's chunks in parallel), the sharded MLP gives the
    // unsharded values bit for bit: a fast kernel's element does not depend on its
    // piece. With a shard dropped, its outputs stay unwritten.
    void sharded_evaluation_keeps_its_semantics() {
        Graph g = example_row("mlp");
        QCOMPARE(g.find_op(OpId("fc1"))->shards.size(), size_t{4});
        auto sharded = evaluate(g, 3, true, true);
        auto whole = evaluate(g, 3, true, false);
        QVERIFY(sharded && whole);
        QVERIFY(bitwise_equal_values(*sharded, *whole));
        Operation fc1 = *g.find_op(OpId("fc1"));
        const ZRange dropped = fc1.shards.back().index;
        fc1.shards.pop_back();
        g.put_op(std::move(fc1));
        auto gap = evaluate(g, 3, true, true);
        QVERIFY(gap.has_value());
        const RefArray &h1 = gap->at(TensorId("h1"));
        QVERIFY(std::isnan(h1.at(dropped.start())));
        QVERIFY(!std::isnan(h1.at(ZPoint::zeros(2))));
    }

    // ---- progress and cancel --------------------------------------------------------------------
    // FLOPs per index point times points (2·depth + 1 for a linear with bias),
    // monotonic, ending at the total; one (0, 0) call without work.
    void progress_counts_flops_and_reaches_total() {
        ProgressLog log;
        auto r = evaluate(linear_graph(64, 96, 80), 2, true, true, &log);
        QVERIFY(r.has_value());
        QVERIFY2(log.problem().empty(), log.problem().c_str());
        QCOMPARE(log.calls.back().second, std::int64_t{64 * 80 * (2 * 96 + 1)});
        QVERIFY(log.calls.size() > 4);

        test::GraphBuilder empty;
        empty.input("x", {3});
        ProgressLog none;
        QVERIFY(evaluate(empty.g, 2, true, true, &none).has_value());
        QCOMPARE(none.calls.size(), size_t{1});
        QCOMPARE(none.calls.front(), (std::pair<std::int64_t, std::int64_t>{0, 0}));
    }

    void cancelled_before_start_does_no_work() {
        EvaluationOptions o;
        int calls = 0;
        o.progress = [&](std::int64_t, std::int64_t) { ++calls; };
        o.cancelled = [] { return true; };
        const Graph g = linear_graph(64, 96, 80);
        auto r = evaluate_reference(g, test::oracle_inputs(g, g, 1), OpLibrary::standard(), o);
        QVERIFY(!r.has_value());
        QCOMPARE(r.error(), std::string("cancelled"));
        QCOMPARE(calls, 0);
    }

    // The full-size GPT-2 block: cancelled a tenth of the way, the evaluation
    // returns "cancelled" about a chunk later (~100 ms budget; 500 ms asserted
    // for a loaded machine), and no chunk starts after.
    void cancel_stops_the_gpt2_example_quickly() {
        const Graph g = load_example("gpt2_block.tapestry.json");
        const auto inputs = test::oracle_inputs(g, g, 3);
        std::atomic<bool> cancel{false};
        std::chrono::steady_clock::time_point asked;
        std::int64_t done_when_asked = 0, last_done = 0;
        EvaluationOptions o;
        o.threads = 2;
        o.cancelled = [&] { return cancel.load(); };
        o.progress = [&](std::int64_t done, std::int64_t total) {
            last_done = done;
            if (!cancel && done * 10 >= total) {
                asked = std::chrono::steady_clock::now();
                done_when_asked = done;
                cancel = true;
            }
        };
        auto r = evaluate_reference(g, inputs, OpLibrary::standard(), o);
        const double latency = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
        QVERIFY(cancel);
        QVERIFY(!r.has_value());
        QCOMPARE(r.error(), std::string("cancelled"));
        qInfo("cancel took effect after %.1f ms", latency * 1e3);
        QVERIFY2(latency < 0.5, std::to_string(latency).c_str());
        // At most the chunk the other thread had started finished afterwards (a
        // chunk holds at most 2^28 units).
        QVERIFY(last_done - done_when_asked <= (std::int64_t{1} << 28));
    }
};

QTEST_GUILESS_MAIN(TestEvaluate)
#include "test_evaluate.moc"
