// The e-graph (engine/passes/egraph.h): hash-consing, union-find with congruence
// closure on rebuild, the type analysis, the runner's limits (each stops it and says
// so), greedy extraction by cost, and a property: random small graphs through every
// rule, extraction and decoding give a valid, acyclic graph equal on the oracle.
#include <QtTest/QtTest>

#include <cmath>
#include <functional>
#include <random>

#include "graph/order.h"
#include "graph/validate.h"
#include "passes/rules.h"
#include "substitute_support.h"

#ifdef TAPESTRY_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#endif

using namespace tapestry;
using tapestry::test::GraphBuilder;

namespace {

const OperandType f32(ZPoint shape) { return OperandType{DType::f32, std::move(shape)}; }

ClassId op(EGraph &g, const std::string &kind, const Params &p, std::vector<std::pair<std::string, ClassId>> in) {
    auto r = g.add_op(kind, p, in);
    TAPESTRY_CHECK(r.has_value(), "test op refused");
    return *r;
}

// y = ((a + b) + c) + d over [4, 4]: associativity and commutativity keep growing it.
Graph add_chain(int terms) {
    GraphBuilder b;
    TensorId acc = b.input("t0", {4, 4});
    for (int i = 1; i < terms; ++i) {
        auto t = b.input("t" + std::to_string(i), {4, 4});
        acc = b.op(i + 1 == terms ? "y" : "s" + std::to_string(i), "add", {}, {{"a", acc}, {"b", t}}, i + 1 == terms);
    }
    return b.g;
}

using Pick = std::function<Coord(Coord, Coord)>;

// A random small graph of the kinds the rules rewrite; "y" is its output.
Graph random_graph(const Pick &pick) {
    GraphBuilder b;
    const Coord m = pick(1, 3), n = pick(1, 3);
    std::vector<TensorId> pool{b.input("x0", {m, n}), b.input("x1", {m, n})};
    const int ops = static_cast<int>(pick(2, 6));
    for (int i = 0; i < ops; ++i) {
        const bool last = i + 1 == ops;
        const std::string out = last ? "y" : "v" + std::to_string(i);
        const TensorId a = pool[static_cast<size_t>(pick(0, static_cast<Coord>(pool.size()) - 1))];
        const TensorId c = pool[static_cast<size_t>(pick(0, static_cast<Coord>(pool.size()) - 1))];
        TensorId t;
        switch (pick(0, 6)) {
        case 0: t = b.op(out, "add", {}, {{"a", a}, {"b", c}}, last); break;
        case 1: t = b.op(out, "mul", {}, {{"a", a}, {"b", c}}, last); break;
        case 2: {
            auto tt = b.op(out + "t", "transpose", {}, {{"x", a}});
            t = b.op(out, "transpose", {}, {{"x", tt}}, last);
            break;
        }
        case 3: {
            auto r = b.op(out + "r", "reshape", {{"shape", std::vector<std::int64_t>{m * n}}}, {{"x", a}});
            t = b.op(out, "reshape", {{"shape", std::vector<std::int64_t>{m, n}}}, {{"x", r}}, last);
            break;
        }
        case 4: {
            auto w = b.input("w" + std::to_string(i), {n, n}, TensorRole::parameter);
            auto bias = b.input("b" + std::to_string(i), {n}, TensorRole::parameter);
            t = b.op(out, "linear", {}, {{"x", a}, {"w", w}, {"bias", bias}}, last);
            break;
        }
        case 5: {
            auto gamma = b.input("g" + std::to_string(i), {n}, TensorRole::parameter);
            t = b.op(out, "layernorm", {}, {{"x", a}, {"gamma", gamma}}, last);
            break;
        }
        default: t = b.op(out, "rmsnorm", {}, {{"x", a}}, last); break;
        }
        pool.push_back(t);
    }
    return b.g;
}

// Every rule, a random goal: the decoded graph validates, has no cycle and equals the input.
std::optional<std::string> check_extraction(const Pick &pick) {
    const Graph g = random_graph(pick);
    auto rules = rewrites_by_name({"linear-split", "linear-fuse", "layernorm-expand", "layernorm-fuse", "rmsnorm-expand",
                                   "rmsnorm-fuse", "transpose-transpose", "reshape-reshape", "add-assoc", "mul-assoc",
                                   "add-comm", "mul-comm"});
    GraphEncoding enc = encode_graph(g);
    RunnerLimits limits;
    limits.iterations = static_cast<int>(pick(1, 4));
    limits.nodes = 3000;
    run_rewrites(enc.egraph, *rules, limits);
    CostModel model;
    model.bytes_weight = static_cast<double>(pick(0, 16));
    if (pick(0, 1))
        for (const char *k : {"linear", "layernorm", "rmsnorm"}) model.penalized.insert(k);
    const Extraction ex = extract_greedy(enc.egraph, model);
    Graph out = g;
    RecordingRewriter rw(out);
    decode_graph(enc, ex, rw);
    for (const Issue &i : validate(out, OpLibrary::standard()))
        if (i.severity == Severity::error) return "invalid result: " + i.message;
    if (!dependency_order(out).cyclic.empty()) return std::string("the extracted graph has a cycle");
    auto a = evaluate_reference(g, test::oracle_inputs(g, g, 5), OpLibrary::standard());
    auto b = evaluate_reference(out, test::oracle_inputs(g, out, 5), OpLibrary::standard());
    if (!a || !b) return "oracle: " + (a ? b.error() : a.error());
    const auto &ya = a->at(TensorId("y")).data, &yb = b->at(TensorId("y")).data;
    for (size_t i = 0; i < ya.size(); ++i)
        if (std::abs(ya[i] - yb[i]) > 1e-9 * std::max(1.0, std::abs(ya[i])))
            return "output differs at " + std::to_string(i) + ": " + std::to_string(ya[i]) + " vs " + std::to_string(yb[i]);
    return std::nullopt;
}

}  // namespace

class TestEGraph : public QObject {
    Q_OBJECT
private slots:
    void hash_consing_shares_equal_nodes();
    void type_analysis_and_refusals();
    void congruence_closure_on_rebuild();
    void scalar_constants_are_shared();
    void runner_limits_data();
    void runner_limits();
    void extraction_prefers_cheaper_forms();
    void extraction_is_acyclic_and_equal();
};

void TestEGraph::hash_consing_shares_equal_nodes() {
    EGraph g;
    const ClassId x = g.add_tensor(TensorId("x"), f32({2, 3}));
    QCOMPARE(g.add_tensor(TensorId("x"), f32({2, 3})), x);
    const ClassId r1 = op(g, "relu", {}, {{"x", x}});
    const ClassId r2 = op(g, "relu", {}, {{"x", x}});
    QCOMPARE(r1, r2);
    QCOMPARE(g.class_count(), size_t(2));
    QCOMPARE(g.node_count(), size_t(2));
    // Defaults are filled in, so an explicit default is the same node.
    const ClassId s1 = op(g, "softmax", {}, {{"x", x}});
    const ClassId s2 = op(g, "softmax", {{"axis", std::int64_t{-1}}}, {{"x", x}});
    QCOMPARE(s1, s2);
    QVERIFY(op(g, "softmax", {{"axis", std::int64_t{0}}}, {{"x", x}}) != s1);
}

void TestEGraph::type_analysis_and_refusals() {
    EGraph g;
    const ClassId a = g.add_tensor(TensorId("a"), f32({2, 3}));
    const ClassId b = g.add_tensor(TensorId("b"), f32({3, 5}));
    QCOMPARE(g.type(op(g, "matmul", {}, {{"a", a}, {"b", b}})), f32({2, 5}));
    auto bad = g.add_op("matmul", {}, {{"a", b}, {"b", b}});
    QVERIFY(!bad.has_value());
    QVERIFY2(bad.error().starts_with("matmul: "), bad.error().c_str());
    QVERIFY(!g.add_op("frobnicate", {}, {{"x", a}}).has_value());
    QCOMPARE(g.class_count(), size_t(3));  // a refused op adds nothing
}

void TestEGraph::congruence_closure_on_rebuild() {
    EGraph g;
    const ClassId a = g.add_tensor(TensorId("a"), f32({4}));
    const ClassId b = g.add_tensor(TensorId("b"), f32({4}));
    const ClassId fa = op(g, "relu", {}, {{"x", a}}), fb = op(g, "relu", {}, {{"x", b}});
    const ClassId gfa = op(g, "exp", {}, {{"x", fa}}), gfb = op(g, "exp", {}, {{"x", fb}});
    QVERIFY(g.find(fa) != g.find(fb));
    QVERIFY(g.merge(a, b));
    QVERIFY(!g.merge(a, b));
    QVERIFY(!g.clean());
    g.rebuild();  // deferred: congruence appears only now, two levels up
    QVERIFY(g.clean());
    QCOMPARE(g.find(fa), g.find(fb));
    QCOMPARE(g.find(gfa), g.find(gfb));
    QCOMPARE(g.class_count(), size_t(3));
    QCOMPARE(g.node_count(), size_t(4));  // two leaves in one class, one relu, one exp
    QCOMPARE(g.lookup(ENode{"relu", {}, {"x"}, {b}, 0, 0}), std::optional<ClassId>(g.find(fa)));
}

void TestEGraph::scalar_constants_are_shared() {
    EGraph g;
    auto make = [](double v) {
        auto d = std::make_shared<TensorData>(DType::f32, ZPoint{1});
        d->set(0, v);
        return d;
    };
    const ClassId e1 = g.add_constant(make(1e-5), 1e-5), e2 = g.add_constant(make(1e-5), 1e-5);
    QCOMPARE(e1, e2);
    QCOMPARE(g.scalar_constant(e1), std::optional<double>(1e-5));  // exact, not the f32 rounding
    QVERIFY(g.add_constant(make(2.0), 2.0) != e1);
}

void TestEGraph::runner_limits_data() {
    QTest::addColumn<int>("iterations");
    QTest::addColumn<int>("nodes");
    QTest::addColumn<double>("seconds");
    QTest::addColumn<QString>("rules");
    QTest::addColumn<QString>("stop");
    QTest::newRow("saturated") << 30 << 20000 << 10.0 << "transpose-transpose,reshape-reshape,linear-split,linear-fuse"
                               << "saturated";
    QTest::newRow("iteration limit") << 2 << 100000 << 60.0 << "add-assoc,add-comm" << "iteration limit";
    QTest::newRow("node limit") << 100 << 60 << 60.0 << "add-assoc,add-comm" << "node limit";
    QTest::newRow("time limit") << 100 << 1000000 << 0.0 << "add-assoc,add-comm" << "time limit";
}

void TestEGraph::runner_limits() {
    QFETCH(int, iterations);
    QFETCH(int, nodes);
    QFETCH(double, seconds);
    QFETCH(QString, rules);
    QFETCH(QString, stop);
    std::vector<std::string> names;
    for (const QString &n : rules.split(',')) names.push_back(n.toStdString());
    GraphBuilder b;
    auto x = b.input("x", {2, 3, 4});
    auto t = b.op("t", "transpose", {{"perm", std::vector<std::int64_t>{1, 2, 0}}}, {{"x", x}});
    auto u = b.op("u", "transpose", {{"perm", std::vector<std::int64_t>{2, 0, 1}}}, {{"x", t}});
    auto w = b.input("w", {4, 5}, TensorRole::parameter);
    b.op("l", "linear", {}, {{"x", u}, {"w", w}}, true);
    Graph g = stop == "saturated" ? b.g : add_chain(8);
    GraphEncoding enc = encode_graph(g);
    const RunReport r = run_rewrites(enc.egraph, *rewrites_by_name(names), {iterations, size_t(nodes), seconds});
    QCOMPARE(QString::fromStdString(stop_reason_name(r.stop)), stop);
    if (stop == "iteration limit") QCOMPARE(r.iterations, iterations);
    if (stop == "node limit") QVERIFY(r.nodes > size_t(nodes));
    if (stop == "saturated") {
        QVERIFY(r.iterations < iterations);
        QCOMPARE(r.fired.at("transpose-transpose"), 1);
        QCOMPARE(r.fired.at("linear-split"), 1);
        QCOMPARE(r.fired.at("linear-fuse"), 0);  // its result is already the linear's class
    }
    QCOMPARE(r.nodes, enc.egraph.node_count());
}

void TestEGraph::extraction_prefers_cheaper_forms() {
    GraphBuilder b;
    auto x = b.input("x", {2, 3});
    auto t = b.op("t", "transpose", {}, {{"x", x}});
    auto u = b.op("u", "transpose", {}, {{"x", t}});
    b.op("y", "relu", {}, {{"x", u}}, true);
    GraphEncoding enc = encode_graph(b.g);
    run_rewrites(enc.egraph, *rewrites_by_name({"transpose-transpose"}), {});
    Graph out = b.g;
    RecordingRewriter rw(out);
    decode_graph(enc, extract_greedy(enc.egraph, CostModel{}), rw);
    // Both transposes are gone; relu reads x (a new op, since its input changed) and writes y.
    QCOMPARE(out.operations().size(), size_t(1));
    const Operation &relu = *out.operations()[0];
    QCOMPARE(relu.input_tensors(), std::vector<TensorId>{TensorId("x")});
    QCOMPARE(relu.output_tensors(), std::vector<TensorId>{TensorId("y")});
    QVERIFY(!out.find_tensor(TensorId("t")) && !out.find_tensor(TensorId("u")));
    QVERIFY(graph_cost(out, OpLibrary::standard(), {}) < graph_cost(b.g, OpLibrary::standard(), {}));
}

void TestEGraph::extraction_is_acyclic_and_equal() {
    const int cases = qEnvironmentVariableIsSet("TAPESTRY_EGRAPH_CASES")
                          ? qEnvironmentVariableIntValue("TAPESTRY_EGRAPH_CASES")
                          : 40;
#ifdef TAPESTRY_HAVE_RAPIDCHECK
    if (qEnvironmentVariableIsEmpty("RC_PARAMS"))
        qputenv("RC_PARAMS", "seed=20261121 max_success=" + QByteArray::number(cases) + " verbose_progress=0");
    const bool ok = rc::check("extraction is acyclic and equal", [] {
        const Pick pick = [](Coord lo, Coord hi) { return *rc::gen::inRange<Coord>(lo, hi + 1); };
        if (const auto failure = check_extraction(pick)) RC_FAIL(*failure);
    });
    QVERIFY2(ok, "a random graph extracts wrongly (the shrunk case is printed above)");
#else
    std::mt19937 rng(20261121u);
    const Pick pick = [&rng](Coord lo, Coord hi) { return std::uniform_int_distribution<Coord>(lo, hi)(rng); };
    for (int k = 0; k < cases; ++k) {
        const auto failure = check_extraction(pick);
        QVERIFY2(!failure, ("case " + std::to_string(k) + ": " + failure.value_or("")).c_str());
    }
#endif
}

QTEST_GUILESS_MAIN(TestEGraph)
#include "test_egraph.moc"
