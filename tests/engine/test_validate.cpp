// Validation: every issue code with its exact message, node and JSON path
// (STYLE.md: error tests are a group of their own). Uses a small fake op library
// so that each check is exercised in isolation from the real one.
#include <QtTest/QtTest>

#include "graph/validate.h"
#include "index/index_set.h"
#include "ops/library.h"

using namespace tapestry;

namespace {

// copy: y = x (any shape); rowsum: y[m] = Σ_n x[m, n]; spread: y[0] = every x[i]
// (a deliberately non-injective output); rank2: copy that insists on rank 2.
class FakeLibrary : public SignatureSource {
public:
    bool knows(const std::string &kind) const override {
        return kind == "copy" || kind == "rowsum" || kind == "spread" || kind == "rank2";
    }
    Expected<Derivation, DerivationError> derive(const std::string &kind, const Params &,
                                                 const std::vector<PortTypes> &inputs) const override {
        if (inputs.size() != 1 || inputs[0].port != "x" || inputs[0].operands.size() != 1)
            return unexpected(DerivationError{"arity", "inputs.x", kind + " needs input 'x'"});
        const OperandType &x = inputs[0].operands[0];
        Derivation d;
        const int n = x.shape.rank();
        if (kind == "copy" || kind == "rank2") {
            if (kind == "rank2" && n != 2)
                return unexpected(DerivationError{"rank-mismatch", "inputs.x[0]", "x must have rank 2, got " + std::to_string(n)});
            d.outputs = {{"y", {x}}};
            d.signature.index_space = ZRange::of_shape(x.shape);
            d.signature.inputs = {{"x", {{IndexProjection::identity(n), false}}}};
            d.signature.outputs = {{"y", {{IndexProjection::identity(n), false}}}};
        } else if (kind == "rowsum") {
            d.outputs = {{"y", {{x.dtype, ZPoint{x.shape[0]}}}}};
            d.signature.index_space = ZRange::of_shape(ZPoint{x.shape[0]});
            d.signature.inputs = {{"x", {{IndexProjection(AffineMap(ZMatrix{{1}, {0}}, ZPoint{0, 0}), ZPoint{1, x.shape[1]}), false}}}};
            d.signature.outputs = {{"y", {{IndexProjection::identity(1), false}}}};
        } else {  // spread
            d.outputs = {{"y", {{x.dtype, ZPoint{1}}}}};
            d.signature.index_space = ZRange::of_shape(x.shape);
            d.signature.inputs = {{"x", {{IndexProjection::identity(1), false}}}};
            d.signature.outputs = {{"y", {{IndexProjection(AffineMap(ZMatrix{{0}}, ZPoint{0}), ZPoint{1}), false}}}};
        }
        return d;
    }
};

Tensor tensor(const std::string &id, ZRange r, TensorRole role = TensorRole::intermediate, DType dt = DType::f32) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = std::move(r);
    t.role = role;
    t.dtype = dt;
    return t;
}

Operation op(const std::string &id, const std::string &kind, const std::string &in, ZRange in_range,
             const std::string &out, ZRange out_range) {
    Operation o;
    o.id = OpId(id);
    o.name = id;
    o.kind = kind;
    o.inputs = {{"x", {{TensorId(in), std::move(in_range)}}}};
    o.outputs = {{"y", {{TensorId(out), std::move(out_range)}}}};
    return o;
}

// x [0:4] → copy c → y [0:4], the well-formed starting point of most rows.
Graph copy_graph() {
    Graph g;
    g.put_tensor(tensor("x", ZRange::of_shape({4}), TensorRole::input));
    g.put_tensor(tensor("y", ZRange::of_shape({4}), TensorRole::output));
    g.put_op(op("c", "copy", "x", ZRange::of_shape({4}), "y", ZRange::of_shape({4})));
    return g;
}

Operation with_shards(Operation o, const std::vector<ZRange> &ranges) {
    o.shards.clear();
    for (size_t k = 0; k < ranges.size(); ++k)
        o.shards.push_back(Shard{ShardId(o.id.value + "/" + std::to_string(k)), ranges[k], "", {}, {}});
    return o;
}

ZRange r1(Coord a, Coord b) { return ZRange(ZPoint{a}, ZPoint{b}); }

const Issue *find_code(const std::vector<Issue> &issues, const std::string &code) {
    for (const Issue &i : issues)
        if (i.code == code) return &i;
    return nullptr;
}

QString dump(const std::vector<Issue> &issues) {
    QString s;
    for (const Issue &i : issues) s += QString::fromStdString(format_issue(i)) + "\n";
    return s;
}

}  // namespace

Q_DECLARE_METATYPE(Graph)

class TestValidate : public QObject {
    Q_OBJECT
private slots:
    void wellFormedGraphHasNoIssues() {
        FakeLibrary lib;
        Graph g = copy_graph();
        g.put_op(with_shards(*g.find_op(OpId("c")), {r1(0, 2), r1(2, 3), r1(3, 4)}));
        auto issues = validate(g, lib);
        QVERIFY2(issues.empty(), qPrintable(dump(issues)));
    }

    void eachIssue_data() {
        QTest::addColumn<Graph>("graph");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");
        QTest::addColumn<QString>("node");
        QTest::addColumn<QString>("path");

        {
            Graph g = copy_graph();
            g.put_op(op("c", "conv9", "x", ZRange::of_shape({4}), "y", ZRange::of_shape({4})));
            QTest::newRow("unknown-op") << g << "unknown-op" << "operation 'c' has unknown kind 'conv9'" << "c"
                                        << "$.operations[0].kind";
        }
        {
            Graph g = copy_graph();
            g.put_op(op("c", "copy", "w9", ZRange::of_shape({4}), "y", ZRange::of_shape({4})));
            QTest::newRow("dangling-reference")
                << g << "dangling-reference" << "input x[0] of 'c' refers to tensor 'w9', which does not exist" << "c"
                << "$.operations[0].inputs.x[0].tensor";
        }
        {
            Graph g = copy_graph();
            g.put_op(op("c", "copy", "x", ZRange::of_shape({4, 1}), "y", ZRange::of_shape({4})));
            QTest::newRow("rank-mismatch")
                << g << "rank-mismatch"
                << "input x[0] of 'c' selects [0:4, 0:1] (rank 2) of tensor 'x', which has rank 1" << "c"
                << "$.operations[0].inputs.x[0].range";
        }
        {
            Graph g = copy_graph();
            g.put_op(op("c", "copy", "x", r1(1, 5), "y", ZRange::of_shape({4})));
            QTest::newRow("selection-outside-tensor")
                << g << "selection-outside-tensor" << "input x[0] of 'c' selects [1:5], outside tensor 'x' [0:4]" << "c"
                << "$.operations[0].inputs.x[0].range";
        }
        {
            Graph g = copy_graph();
            g.put_op(op("c", "rank2", "x", ZRange::of_shape({4}), "y", ZRange::of_shape({4})));
            QTest::newRow("derivation error") << g << "rank-mismatch" << "rank2 'c': x must have rank 2, got 1" << "c"
                                              << "$.operations[0].inputs.x[0]";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("y", ZRange::of_shape({5}), TensorRole::output));
            g.put_op(op("c", "copy", "x", ZRange::of_shape({4}), "y", ZRange::of_shape({5})));
            QTest::newRow("shape-mismatch") << g << "shape-mismatch"
                                            << "output y[0] of 'c' has shape [5] but copy produces [4]" << "c"
                                            << "$.operations[0].outputs.y[0].range";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("y", ZRange::of_shape({4}), TensorRole::output, DType::i32));
            QTest::newRow("dtype-mismatch") << g << "dtype-mismatch"
                                            << "output y[0] of 'c' is tensor 'y' of dtype i32 but copy produces f32" << "c"
                                            << "$.operations[0].outputs.y[0].tensor";
        }
        {
            Graph g = copy_graph();
            Operation o = *g.find_op(OpId("c"));
            o.outputs[0].name = "out";
            g.put_op(o);
            QTest::newRow("missing output port") << g << "arity" << "copy 'c': output port 'y' needs 1 tensor, got 0"
                                                 << "c" << "$.operations[0].outputs.y";
        }
        {
            Graph g = copy_graph();
            Operation o = *g.find_op(OpId("c"));
            o.outputs.push_back({"z", {{TensorId("y"), ZRange::of_shape({4})}}});
            g.put_op(o);
            QTest::newRow("unknown-port") << g << "unknown-port" << "copy 'c' has no output port 'z'" << "c"
                                          << "$.operations[0].outputs.z";
        }
        {
            Graph g = copy_graph();
            Operation o = *g.find_op(OpId("c"));
            o.index_space = ZRange::of_shape({5});
            g.put_op(o);
            QTest::newRow("index-space-mismatch")
                << g << "index-space-mismatch" << "operation 'c' states index space [0:5] but copy derives [0:4]" << "c"
                << "$.operations[0].index_space";
        }
        {
            Graph g = copy_graph();
            Operation o = *g.find_op(OpId("c"));
            Signature s;
            s.index_space = ZRange::of_shape({4});
            s.inputs = {{"x", {{IndexProjection(AffineMap(ZMatrix{{1}}, ZPoint{1}), ZPoint{1}), false}}}};
            o.signature = s;
            g.put_op(o);
            QTest::newRow("projection-mismatch")
                << g << "projection-mismatch"
                << "operation 'c' states projection [1 | 1 | 1] for input x[0] but copy derives [1 | 0 | 1]" << "c"
                << "$.operations[0].signature.inputs.x[0]";
        }
        {
            Graph g;
            g.put_tensor(tensor("x", ZRange::of_shape({3}), TensorRole::input));
            g.put_tensor(tensor("y", ZRange::of_shape({1}), TensorRole::output));
            g.put_op(op("s", "spread", "x", ZRange::of_shape({3}), "y", ZRange::of_shape({1})));
            QTest::newRow("non-injective-output")
                << g << "non-injective-output"
                << "output y[0] of 's' is not injective: its projection [0 | 0 | 1] writes some elements twice (index "
                   "points [0] and [1] both write [0])"
                << "s" << "$.operations[0].outputs.y[0]";
        }
        {
            Graph g = copy_graph();
            g.put_op(with_shards(*g.find_op(OpId("c")), {r1(0, 2), r1(1, 2), r1(3, 4)}));
            // Sizes add up to 4 (2+1+1) while [2:3] is missing and [1:2] is covered twice:
            // the Java prototype's sum-of-sizes check passes this.
            QTest::newRow("shard-overlap (cancelling)")
                << g << "shard-overlap" << "shards 'c/0' and 'c/1' of 'c' overlap on [1:2]" << "c/1"
                << "$.operations[0].shards[1].index";
            QTest::newRow("shard-gap (cancelling)") << g << "shard-gap"
                                                    << "shards of 'c' leave index points [2:3] of [0:4] uncovered" << "c"
                                                    << "$.operations[0].shards";
        }
        {
            // Ten copies of the whole space: 45 overlapping pairs, summarised and capped.
            Graph g = copy_graph();
            g.put_op(with_shards(*g.find_op(OpId("c")), std::vector<ZRange>(10, r1(0, 4))));
            QTest::newRow("shard-coverage") << g << "shard-coverage"
                                            << "shards of 'c' have 45 overlaps and 0 gaps; the first 8 of each are listed"
                                            << "c" << "$.operations[0].shards";
        }
        {
            Graph g = copy_graph();
            g.put_op(with_shards(*g.find_op(OpId("c")), {r1(0, 2), r1(2, 6)}));
            QTest::newRow("shard-outside-index-space")
                << g << "shard-outside-index-space" << "shard 'c/1' index range [2:6] reaches outside the index space [0:4] of 'c'"
                << "c/1" << "$.operations[0].shards[1].index";
        }
        {
            Graph g = copy_graph();
            g.put_op(with_shards(*g.find_op(OpId("c")), {ZRange::of_shape({4, 1})}));
            QTest::newRow("shard rank-mismatch")
                << g << "rank-mismatch"
                << "shard 'c/0' has index range [0:4, 0:1] of rank 2 but the index space of 'c' [0:4] has rank 1" << "c/0"
                << "$.operations[0].shards[0].index";
        }
        {
            Graph g = copy_graph();
            g.put_op(with_shards(*g.find_op(OpId("c")), {r1(0, 4), r1(4, 4)}));
            QTest::newRow("empty-shard") << g << "empty-shard" << "shard 'c/1' covers no index points ([4:4])" << "c/1"
                                         << "$.operations[0].shards[1].index";
        }
        {
            Graph g = copy_graph();
            Operation o = with_shards(*g.find_op(OpId("c")), {r1(0, 2), r1(2, 4)});
            o.shards[1].inputs = {{"x", {{TensorId("x"), r1(1, 4)}}}};
            g.put_op(o);
            QTest::newRow("shard-selection-mismatch")
                << g << "shard-selection-mismatch"
                << "shard 'c/1' states inputs x[0] = x[1:4] but its index range [2:4] projects to x[2:4]" << "c/1"
                << "$.operations[0].shards[1].inputs.x[0]";
        }
        {
            Graph g = copy_graph();
            Operation o = with_shards(*g.find_op(OpId("c")), {r1(0, 2), r1(2, 4)});
            o.shards[1].id = ShardId("c/0");
            g.put_op(o);
            QTest::newRow("duplicate shard id") << g << "duplicate-id" << "shard id 'c/0' is used more than once" << "c/0"
                                                << "$.operations[0].shards[1].id";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("c", ZRange::of_shape({2})));
            QTest::newRow("duplicate-id") << g << "duplicate-id" << "operation id 'c' is also the id of a tensor" << "c"
                                          << "$.operations[0].id";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("y", ZRange::of_shape({4}), TensorRole::parameter));
            QTest::newRow("input-written") << g << "input-written" << "parameter tensor 'y' is written by operation 'c'"
                                           << "c" << "$.operations[0].outputs.y[0].tensor";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("", ZRange::of_shape({2})));
            QTest::newRow("missing-id") << g << "missing-id" << "tensor has an empty id" << "" << "$.tensors[2].id";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("lonely", ZRange::of_shape({2})));
            QTest::newRow("unused-tensor") << g << "unused-tensor" << "tensor 'lonely' is neither read nor written"
                                           << "lonely" << "$.tensors[2]";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("x", ZRange::of_shape({4}), TensorRole::intermediate));
            QTest::newRow("unproduced-tensor") << g << "unproduced-tensor"
                                               << "intermediate tensor 'x' is read but no operation writes it" << "x"
                                               << "$.tensors[0]";
        }
        {
            Graph g;
            g.put_tensor(tensor("x", ZRange::of_shape({4}), TensorRole::input));
            g.put_tensor(tensor("y", ZRange::of_shape({6}), TensorRole::output));
            g.put_op(op("a", "copy", "x", ZRange::of_shape({4}), "y", r1(0, 4)));
            g.put_op(op("b", "copy", "x", r1(1, 3), "y", r1(3, 5)));
            QTest::newRow("write-conflict") << g << "write-conflict" << "operations 'a' and 'b' both write y[3:4]" << "b"
                                            << "$.operations[1].outputs.y[0].range";
            QTest::newRow("unproduced-elements")
                << g << "unproduced-elements" << "elements [5:6] of tensor 'y' [0:6] are never written (1 element)" << "y"
                << "$.tensors[1]";
        }
        {
            Graph g;
            g.put_tensor(tensor("a", ZRange::of_shape({4})));
            g.put_tensor(tensor("b", ZRange::of_shape({4})));
            g.put_op(op("f", "copy", "a", ZRange::of_shape({4}), "b", ZRange::of_shape({4})));
            g.put_op(op("g", "copy", "b", ZRange::of_shape({4}), "a", ZRange::of_shape({4})));
            QTest::newRow("cycle") << g << "cycle" << "operations 'f', 'g' form a cycle" << "f" << "$.operations[0]";
        }
        {
            Graph g;
            g.put_tensor(tensor("a", ZRange::of_shape({4})));
            g.put_op(op("f", "copy", "a", ZRange::of_shape({4}), "a", ZRange::of_shape({4})));
            QTest::newRow("self cycle") << g << "cycle" << "operation 'f' reads a tensor it writes" << "f"
                                        << "$.operations[0]";
        }
        {
            Graph g = copy_graph();
            g.put_tensor(tensor("x", ZRange(ZPoint{0}, ZPoint{Coord{1} << 50}), TensorRole::input));
            QTest::newRow("bad-dimension")
                << g << "bad-dimension" << "tensor 'x' has range [0:1125899906842624] beyond the supported ±2^40" << "x"
                << "$.tensors[0].range";
        }
    }

    void eachIssue() {
        QFETCH(Graph, graph);
        QFETCH(QString, code);
        QFETCH(QString, message);
        QFETCH(QString, node);
        QFETCH(QString, path);
        FakeLibrary lib;
        auto issues = validate(graph, lib);
        const Issue *i = find_code(issues, code.toStdString());
        QVERIFY2(i, qPrintable("no " + code + " among:\n" + dump(issues)));
        QCOMPARE(QString::fromStdString(i->message), message);
        QCOMPARE(QString::fromStdString(i->node), node);
        QCOMPARE(QString::fromStdString(i->json_path), path);
    }

    void overlapReportsAreCapped() {
        FakeLibrary lib;
        Graph g = copy_graph();
        g.put_op(with_shards(*g.find_op(OpId("c")), std::vector<ZRange>(10, r1(0, 4))));
        auto issues = validate(g, lib);
        int overlaps = 0;
        for (const Issue &i : issues) overlaps += i.code == "shard-overlap";
        QCOMPARE(overlaps, 8);
    }

    // Parameter errors come from the real op library, named by the validator.
    void parameterErrors_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("param");
        QTest::addColumn<QString>("value");  // "" = leave the parameter out
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");
        QTest::addColumn<QString>("path");
        QTest::newRow("unknown-param") << "relu" << "alpha" << "0.1" << "unknown-param"
                                       << "relu 'r': relu has no parameter 'alpha'" << "$.operations[0].params.alpha";
        QTest::newRow("bad-param") << "gelu" << "approximate" << "5" << "bad-param"
                                   << "gelu 'r': parameter 'approximate' of gelu must be string, got int 5"
                                   << "$.operations[0].params.approximate";
        QTest::newRow("missing-param") << "pow" << "exponent" << "" << "missing-param"
                                       << "pow 'r': pow needs parameter 'exponent'" << "$.operations[0].params.exponent";
    }

    void parameterErrors() {
        QFETCH(QString, kind);
        QFETCH(QString, param);
        QFETCH(QString, value);
        QFETCH(QString, code);
        QFETCH(QString, message);
        QFETCH(QString, path);
        Graph g;
        g.put_tensor(tensor("x", ZRange::of_shape({4}), TensorRole::input));
        g.put_tensor(tensor("y", ZRange::of_shape({4}), TensorRole::output));
        Operation o = op("r", kind.toStdString(), "x", ZRange::of_shape({4}), "y", ZRange::of_shape({4}));
        if (!value.isEmpty()) {
            if (value.contains('.')) o.params.set(param.toStdString(), value.toDouble());
            else o.params.set(param.toStdString(), std::int64_t{value.toLongLong()});
        }
        g.put_op(o);
        auto issues = validate(g, OpLibrary::standard());
        const Issue *i = find_code(issues, code.toStdString());
        QVERIFY2(i, qPrintable("no " + code + " among:\n" + dump(issues)));
        QCOMPARE(QString::fromStdString(i->message), message);
        QCOMPARE(QString::fromStdString(i->json_path), path);
    }

    // An error is reported once: a dangling operand does not also produce a
    // derivation error or shard findings for the same operation.
    void oneFaultOneIssue() {
        FakeLibrary lib;
        Graph g = copy_graph();
        Operation o = with_shards(op("c", "copy", "nope", ZRange::of_shape({4}), "y", ZRange::of_shape({4})), {r1(0, 1)});
        g.put_op(o);
        auto issues = validate(g, lib);
        int errors = 0;
        for (const Issue &i : issues) errors += i.severity == Severity::error;
        QCOMPARE(errors, 1);
        QCOMPARE(QString::fromStdString(issues.front().code), QString("dangling-reference"));
    }

    // Shards along a contraction-free op with a window: rowsum sharded by rows
    // derives x selections with the full row window.
    void shardSelectionsFollowWindows() {
        FakeLibrary lib;
        Graph g;
        g.put_tensor(tensor("x", ZRange(ZPoint{-2, 10}, ZPoint{4, 13}), TensorRole::input));
        g.put_tensor(tensor("y", ZRange::of_shape({6}), TensorRole::output));
        Operation o = op("r", "rowsum", "x", ZRange(ZPoint{-2, 10}, ZPoint{4, 13}), "y", ZRange::of_shape({6}));
        o = with_shards(o, {r1(0, 4), r1(4, 6)});
        o.shards[1].inputs = {{"x", {{TensorId("x"), ZRange(ZPoint{2, 10}, ZPoint{4, 13})}}}};
        o.shards[1].outputs = {{"y", {{TensorId("y"), r1(4, 6)}}}};
        g.put_op(o);
        auto issues = validate(g, lib);
        QVERIFY2(issues.empty(), qPrintable(dump(issues)));
    }

    void cyclesInLongChainsAreFoundWithoutRecursion() {
        FakeLibrary lib;
        Graph g;
        const int n = 20000;
        for (int i = 0; i < n; ++i) g.put_tensor(tensor("t" + std::to_string(i), ZRange::of_shape({2})));
        for (int i = 0; i < n; ++i)
            g.put_op(op("o" + std::to_string(i), "copy", "t" + std::to_string(i), ZRange::of_shape({2}),
                        "t" + std::to_string((i + 1) % n), ZRange::of_shape({2})));
        ValidationOptions fast;
        fast.check_injectivity = false;
        auto issues = validate(g, lib, fast);
        const Issue *c = find_code(issues, "cycle");
        QVERIFY(c);
        QCOMPARE(c->related.size(), size_t(n));
    }
};

QTEST_GUILESS_MAIN(TestValidate)
#include "test_validate.moc"
