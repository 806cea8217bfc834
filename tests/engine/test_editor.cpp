// The editing API (edit/editor.h) and its record (graph/delta.h): building the
// MLP example from nothing, undo/redo through deltas, shape inference after
// every edit, and each refused edit with the sentence the studio shows.
#include <QtTest/QtTest>

#include "edit/editor.h"
#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "test_projects.h"

using namespace tapestry;
using namespace tapestry::edit;

namespace {

using test::source_dir;

Graph example(const char *name) {
    LoadResult r = load_project(source_dir() / "projects" / name);
    if (!r.ok()) qFatal("cannot load example %s", name);
    return r.graph;
}

template <typename T>
T ok(Expected<T, EditError> r) {
    if (!r) qFatal("edit refused: %s", r.error().message.c_str());
    return std::move(r).value();
}

std::string text(const Graph &g) {
    return serialize_project(g);
}

// The MLP of projects/mlp.tapestry.json, built the way a user does it: tensors
// from the palette, operations dropped, ports connected, names typed.
Graph build_mlp(std::vector<GraphDelta> *steps = nullptr) {
    Graph g;
    g.name = "mlp";
    auto step = [&](Editor &e) {
        if (steps) steps->push_back(e.take());
    };
    Editor e(g);
    const TensorId x = ok(e.add_tensor({"x", "activations", DType::f32, ZPoint{512, 1024}, TensorRole::input}));
    step(e);
    TensorId prev = x;
    const std::vector<Coord> widths{1024, 4096, 4096, 4096, 1024};
    const std::vector<std::string> activation{"gelu", "relu", "gelu", ""};
    for (int i = 0; i < 4; ++i) {
        const std::string n = std::to_string(i + 1);
        const TensorId w = ok(e.add_tensor({"w" + n, "fc" + n + ".weight", DType::f32,
                                            ZPoint{widths[static_cast<size_t>(i)], widths[static_cast<size_t>(i) + 1]},
                                            TensorRole::parameter}));
        const TensorId b = ok(e.add_tensor({"b" + n, "fc" + n + ".bias", DType::f32,
                                            ZPoint{widths[static_cast<size_t>(i) + 1]}, TensorRole::parameter}));
        const OpId fc = ok(e.add_operation("linear", "fc" + n));
        step(e);
        if (!e.connect(prev, fc, "x")) qFatal("connect x");
        if (!e.connect(w, fc, "w")) qFatal("connect w");
        if (!e.connect(b, fc, "bias")) qFatal("connect bias");
        step(e);
        const TensorId h = e.graph().find_op(fc)->output_tensors().at(0);
        if (i == 3) {
            if (!e.rename(h.str(), "logits")) qFatal("rename");
            break;
        }
        if (!e.rename(h.str(), "fc" + n + ".out")) qFatal("rename");
        const std::string act = activation[static_cast<size_t>(i)];
        const OpId a = ok(e.add_operation(act, act + n));
        if (!e.connect_output(fc, "y", a, "x")) qFatal("connect_output");
        step(e);
        prev = e.graph().find_op(a)->output_tensors().at(0);
        if (!e.rename(prev.str(), act + n + ".out")) qFatal("rename");
    }
    step(e);
    return g;
}

}  // namespace

class TestEditor : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (qgetenv("TAPESTRY_SOURCE_DIR").isEmpty()) QSKIP("TAPESTRY_SOURCE_DIR is not set (CTest sets it)");
    }

    void buildsTheMlpExampleFromNothing() {
        const Graph built = build_mlp();
        const auto diff = content_difference(built, example("mlp.tapestry.json"));
        QVERIFY2(!diff, diff ? diff->c_str() : "");
        QVERIFY(validate(built, OpLibrary::standard()).empty());
        // Inferred outputs carry the derived shapes and roles.
        const Tensor *logits = built.find_tensor(built.find_op(OpId("fc4"))->output_tensors().at(0));
        QCOMPARE(logits->shape(), (ZPoint{512, 1024}));
        QCOMPARE(logits->role, TensorRole::output);
    }

    void undoEverythingThenRedoEverything() {
        std::vector<GraphDelta> steps;
        Graph g = build_mlp(&steps);
        const std::string full = text(g);
        QVERIFY(steps.size() > 8);
        for (auto it = steps.rbegin(); it != steps.rend(); ++it) it->revert(g);
        QCOMPARE(g.tensors().size(), size_t{0});
        QCOMPARE(g.operations().size(), size_t{0});
        for (const GraphDelta &d : steps) d.apply(g);
        QCOMPARE(text(g), full);
    }

    void deltaSummaryNamesAddedRemovedChanged() {
        Graph g = example("mlp.tapestry.json");
        Editor e(g);
        QVERIFY(e.rename("relu2", "act2"));
        QVERIFY(e.remove({"gelu3"}));
        const GraphDelta d = e.take();
        const auto s = d.summary();
        QCOMPARE(s.removed, (std::vector<std::string>{"gelu3", "a3"}));
        // relu2 renamed, fc4 lost its input, h3 became an output.
        QVERIFY(std::find(s.changed.begin(), s.changed.end(), "relu2") != s.changed.end());
        QVERIFY(std::find(s.changed.begin(), s.changed.end(), "fc4") != s.changed.end());
        QVERIFY(std::find(s.changed.begin(), s.changed.end(), "h3") != s.changed.end());
        QCOMPARE(g.find_tensor(TensorId("h3"))->role, TensorRole::output);
        QVERIFY(s.added.empty());
    }

    void shapesFollowAnInputEdit() {
        Graph g = example("mlp.tapestry.json");
        Editor e(g);
        QVERIFY(e.set_tensor_type(TensorId("x"), DType::f32, ZPoint{64, 1024}));
        for (const char *id : {"h1", "a1", "h2", "a2", "h3", "a3"})
            QCOMPARE(g.find_tensor(TensorId(id))->shape(), (ZPoint{64, 4096}));
        QCOMPARE(g.find_tensor(TensorId("y"))->shape(), (ZPoint{64, 1024}));
        // fc1's shards split the old batch of 512: they go, and the user is told.
        QVERIFY(g.find_op(OpId("fc1"))->shards.empty());
        QCOMPARE(e.notes().size(), size_t{1});
        QVERIFY2(e.notes()[0].find("fc1: shards removed") == 0, e.notes()[0].c_str());
        QVERIFY(validate(g, OpLibrary::standard()).empty());
        // One undo puts every inferred shape back.
        Graph before = example("mlp.tapestry.json");
        e.take().revert(g);
        QCOMPARE(text(g), text(before));
    }

    void anIncompatibleInputEditShowsErrorsDownstream() {
        Graph g = example("mlp.tapestry.json");
        Editor e(g);
        QVERIFY(e.set_tensor_type(TensorId("w2"), DType::f32, ZPoint{100, 4096}));
        const auto issues = validate(g, OpLibrary::standard());
        QVERIFY(!issues.empty());
        bool on_fc2 = false;
        for (const Issue &i : issues) on_fc2 |= i.node == "fc2" && i.severity == Severity::error;
        QVERIFY2(on_fc2, "the error is pinned on fc2");
    }

    void refusedEdits_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("incompatible weight") << "connect w3 fc1.w"
                                             << "incompatible"
                                             << "cannot connect fc3.weight (f32 [4096, 4096]) to fc1.w: fc1 (linear): ";
        QTest::newRow("cycle") << "connect a2 fc1.x"
                               << "cycle"
                               << "connecting relu2.out to fc1.x would make a cycle: relu2.out is computed from fc1";
        QTest::newRow("no such port") << "connect x fc1.input"
                                      << "bad-port"
                                      << "fc1 (linear) has no input port 'input'; its inputs are x, w, bias";
        QTest::newRow("unknown kind") << "add conv3d"
                                      << "unknown-kind"
                                      << "unknown operation kind 'conv3d'";
        QTest::newRow("retype an output")
            << "retype h1"
            << "inferred"
            << "fc1.out is computed by fc1: its type follows from that operation's inputs";
        QTest::newRow("delete an output alone") << "remove h2"
                                                << "inferred"
                                                << "fc2.out is the output of fc2: delete fc2 to remove it";
        QTest::newRow("empty name") << "rename x"
                                    << "bad-name"
                                    << "a name cannot be empty";
        QTest::newRow("unknown parameter") << "params gelu1"
                                           << "bad-param"
                                           << "gelu1: gelu has no parameter 'alpha'";
        QTest::newRow("bad parameter value") << "params-axis"
                                             << "bad-param"
                                             << "";
        QTest::newRow("output before inputs")
            << "connect_output"
            << "no-output"
            << "matmul has no output on 'y' yet: connect its inputs first, so that its output shape is known";
    }
    void refusedEdits() {
        QFETCH(QString, what);
        QFETCH(QString, code);
        QFETCH(QString, message);
        Graph g = example("mlp.tapestry.json");
        const std::string before = text(g);
        Editor e(g);
        EditError err;
        auto take = [&](auto r) {
            QVERIFY2(!r, "the edit must be refused");
            err = r.error();
        };
        if (what == "connect w3 fc1.w")
            take(e.connect(TensorId("w3"), OpId("fc1"), "w"));
        else if (what == "connect a2 fc1.x")
            take(e.connect(TensorId("a2"), OpId("fc1"), "x"));
        else if (what == "connect x fc1.input")
            take(e.connect(TensorId("x"), OpId("fc1"), "input"));
        else if (what == "add conv3d")
            take(e.add_operation("conv3d"));
        else if (what == "retype h1")
            take(e.set_tensor_type(TensorId("h1"), DType::f32, ZPoint{2, 2}));
        else if (what == "remove h2")
            take(e.remove({"h2"}));
        else if (what == "rename x")
            take(e.rename("x", "  "));
        else if (what == "params gelu1")
            take(e.set_params(OpId("gelu1"), Params{{"alpha", 1.0}}));
        else if (what == "params-axis") {
            auto sm = e.add_operation("softmax");
            QVERIFY(sm);
            QVERIFY(e.connect(TensorId("y"), *sm, "x"));
            const std::string mid = text(g);
            take(e.set_params(*sm, Params{{"axis", std::int64_t{7}}}));
            QCOMPARE(text(g), mid);
            QVERIFY2(err.message.find("softmax (softmax): axis 7 is out of range") == 0, err.message.c_str());
            QCOMPARE(QString::fromStdString(err.code), code);
            return;
        } else if (what == "connect_output") {
            auto mm = e.add_operation("matmul");
            QVERIFY(mm);
            const std::string mid = text(g);
            take(e.connect_output(*mm, "y", OpId("fc1"), "x"));
            QCOMPARE(text(g), mid);
        }
        QCOMPARE(QString::fromStdString(err.code), code);
        QVERIFY2(QString::fromStdString(err.message).startsWith(message), err.message.c_str());
        if (what != "connect_output") {
            // A refused edit leaves nothing behind.
            QCOMPARE(text(g), before);
            QVERIFY(e.take().empty());
        }
    }

    void deletingAnOperationTakesItsOutputs() {
        Graph g = example("mlp.tapestry.json");
        Editor e(g);
        QVERIFY(e.remove({"fc2"}));
        QVERIFY(!g.find_tensor(TensorId("h2")));
        QVERIFY(!g.find_op(OpId("relu2"))->input("x"));
        QCOMPARE(g.find_tensor(TensorId("a1"))->role, TensorRole::output);
        // relu2 now has an unconnected input: validation pins that on relu2.
        bool on_relu2 = false;
        for (const Issue &i : validate(g, OpLibrary::standard())) on_relu2 |= i.node == "relu2";
        QVERIFY(on_relu2);
    }

    void multiDeleteIsOneDelta() {
        Graph g = example("mlp.tapestry.json");
        const std::string before = text(g);
        Editor e(g);
        QVERIFY(e.remove({"fc3", "gelu3", "w3", "b3", "fc4"}));
        const GraphDelta d = e.take();
        QVERIFY(!g.find_op(OpId("fc4")) && !g.find_tensor(TensorId("y")));
        d.revert(g);
        QCOMPARE(text(g), before);
    }

    void pasteGivesFreshIdsAndKeepsInnerConnections() {
        Graph g = example("mlp.tapestry.json");
        const Graph fragment = extract(g, {"w2", "b2", "fc2", "relu2"});
        QCOMPARE(fragment.operations().size(), size_t{2});
        QCOMPARE(fragment.tensors().size(), size_t{4});  // w2, b2, h2, a2
        Editor e(g);
        auto ids = e.paste(fragment);
        QVERIFY(ids);
        QCOMPARE(ids->at("fc2"), std::string("fc2_2"));
        QCOMPARE(ids->at("w2"), std::string("w2_2"));
        const Operation *fc = g.find_op(OpId("fc2_2"));
        QVERIFY(fc);
        QVERIFY(!fc->input("x"));  // a1 was not copied
        QCOMPARE(fc->input("w")->selections.at(0).tensor, TensorId("w2_2"));
        const Operation *relu = g.find_op(OpId("relu2_2"));
        QCOMPARE(relu->input("x")->selections.at(0).tensor, TensorId(ids->at("h2")));
        // Connecting the pasted copy to a1 makes it a working second branch.
        QVERIFY(e.connect(TensorId("a1"), OpId("fc2_2"), "x"));
        QVERIFY(validate(g, OpLibrary::standard()).empty());
        QCOMPARE(g.find_tensor(TensorId(ids->at("a2")))->role, TensorRole::output);
    }

    void variadicPortsAppend() {
        Graph g;
        Editor e(g);
        auto a = e.add_tensor({"", "a", DType::f32, ZPoint{2, 3}, TensorRole::input});
        auto b = e.add_tensor({"", "b", DType::f32, ZPoint{2, 5}, TensorRole::input});
        auto c = e.add_operation("concat", "cat", Params{{"axis", std::int64_t{1}}});
        QVERIFY(a && b && c);
        QVERIFY(e.connect(*a, *c, "inputs"));
        QVERIFY(e.connect(*b, *c, "inputs"));
        const Operation *op = g.find_op(*c);
        QCOMPARE(op->input("inputs")->selections.size(), size_t{2});
        QCOMPARE(g.find_tensor(op->output_tensors().at(0))->shape(), (ZPoint{2, 8}));
        QVERIFY(e.disconnect(*c, "inputs", 0));
        QCOMPARE(g.find_tensor(g.find_op(*c)->output_tensors().at(0))->shape(), (ZPoint{2, 5}));
    }

    void freshIdsAreCleanAndUnique() {
        Graph g = example("mlp.tapestry.json");
        QCOMPARE(fresh_id(g, "fc1"), std::string("fc1_2"));
        QCOMPARE(fresh_id(g, "my tensor!"), std::string("my_tensor_"));
        QCOMPARE(fresh_id(g, ""), std::string("node"));
    }
};

QTEST_GUILESS_MAIN(TestEditor)
#include "test_editor.moc"
