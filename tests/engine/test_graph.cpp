// The graph model: stable ids, node sharing between versions (a rewrite that
// changes one operation allocates one operation), producers and consumers.
#include <QtTest/QtTest>

#include "graph/graph.h"
#include "graph/order.h"

using namespace tapestry;

namespace {
Tensor make_tensor(const std::string &id, std::initializer_list<Coord> shape) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(shape);
    return t;
}
Operation make_relu(const std::string &id, const std::string &in, const std::string &out) {
    Operation o;
    o.id = OpId(id);
    o.kind = "relu";
    o.inputs = {{"x", {{TensorId(in), ZRange::of_shape({4})}}}};
    o.outputs = {{"y", {{TensorId(out), ZRange::of_shape({4})}}}};
    return o;
}
Graph chain() {
    Graph g;
    for (const char *t : {"a", "b", "c"}) g.put_tensor(make_tensor(t, {4}));
    g.put_op(make_relu("f", "a", "b"));
    g.put_op(make_relu("g", "b", "c"));
    return g;
}
}  // namespace

class TestGraph : public QObject {
    Q_OBJECT
private slots:
    void copiesShareEveryNode() {
        Graph g = chain();
        Graph h = g;
        QVERIFY(h.shares_all_nodes(g));
        QCOMPARE(h.op_ptr(OpId("f")).get(), g.op_ptr(OpId("f")).get());
    }

    void replacingOneOpCopiesOnlyThatOp() {
        Graph g = chain();
        Graph h = g;
        Operation changed = *h.find_op(OpId("g"));
        changed.name = "renamed";
        h.put_op(changed);
        QVERIFY(!h.shares_all_nodes(g));
        QCOMPARE(h.op_ptr(OpId("f")).get(), g.op_ptr(OpId("f")).get());  // untouched op shared
        for (const char *t : {"a", "b", "c"})
            QCOMPARE(h.tensor_ptr(TensorId(t)).get(), g.tensor_ptr(TensorId(t)).get());
        QVERIFY(h.op_ptr(OpId("g")).get() != g.op_ptr(OpId("g")).get());
        QCOMPARE(QString::fromStdString(g.find_op(OpId("g"))->name), QString());  // the old version is unchanged
        QCOMPARE(h.op_index(OpId("g")), 1);  // position kept
    }

    void lookupsAndIndices() {
        Graph g = chain();
        QCOMPARE(g.node_count(), size_t(5));
        QCOMPARE(g.tensor_index(TensorId("c")), 2);
        QCOMPARE(g.op_index(OpId("nope")), -1);
        QVERIFY(g.find_tensor(TensorId("f")) == nullptr);  // ids are typed
        QVERIFY(g.has_id("f"));
        QVERIFY(g.has_id("a"));
        QVERIFY(!g.has_id("z"));
    }

    void producersAndConsumers() {
        Graph g = chain();
        QCOMPARE(g.producers(TensorId("b")), std::vector<OpId>{OpId("f")});
        QCOMPARE(g.consumers(TensorId("b")), std::vector<OpId>{OpId("g")});
        QVERIFY(g.producers(TensorId("a")).empty());
        QVERIFY(g.consumers(TensorId("c")).empty());
    }

    void removalKeepsIndexConsistent() {
        Graph g = chain();
        QVERIFY(g.remove_op(OpId("f")));
        QVERIFY(!g.remove_op(OpId("f")));
        QCOMPARE(g.op_index(OpId("g")), 0);
        QVERIFY(g.remove_tensor(TensorId("a")));
        QCOMPARE(g.tensor_index(TensorId("c")), 1);
        QVERIFY(g.find_op(OpId("g")) != nullptr);
    }

    void dependencyOrderPutsProducersFirstAndKeepsFileOrder() {
        Graph g;
        for (const char *t : {"a", "b", "c", "d"}) g.put_tensor(make_tensor(t, {4}));
        g.put_op(make_relu("late", "b", "c"));   // reads b, written below
        g.put_op(make_relu("early", "a", "b"));
        g.put_op(make_relu("free", "a", "d"));   // ready at once, but after "late" in file order
        DependencyOrder d = dependency_order(g);
        QVERIFY(d.cyclic.empty());
        QStringList ids;
        for (const Operation *op : d.order) ids << QString::fromStdString(op->id.value);
        // "late" becomes ready after "early" and precedes "free" in the file.
        QCOMPARE(ids, (QStringList{"early", "late", "free"}));
    }

    void dependencyOrderReportsCycles() {
        Graph g;
        for (const char *t : {"a", "b", "c"}) g.put_tensor(make_tensor(t, {4}));
        g.put_op(make_relu("f", "a", "b"));
        g.put_op(make_relu("g", "b", "a"));
        g.put_op(make_relu("h", "c", "c"));  // reads what it writes: a self-dependency is not a cycle here
        DependencyOrder d = dependency_order(g);
        QCOMPARE(d.order.size(), size_t(1));
        QCOMPARE(QString::fromStdString(d.order[0]->id.value), QString("h"));
        QCOMPARE(d.cyclic.size(), size_t(2));
    }

    void operationPortAccess() {
        Operation o = make_relu("f", "a", "b");
        QVERIFY(o.input("x") != nullptr);
        QVERIFY(o.input("y") == nullptr);
        QCOMPARE(o.input_tensors(), std::vector<TensorId>{TensorId("a")});
        QCOMPARE(o.output_tensors(), std::vector<TensorId>{TensorId("b")});
    }
};

QTEST_GUILESS_MAIN(TestGraph)
#include "test_graph.moc"
