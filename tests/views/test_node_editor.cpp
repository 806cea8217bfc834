// GUI tests of the inspector's editing form (label gui, offscreen), driven with
// QTest keys and clicks on the real widgets: renames, a tensor's shape, dtype and
// role, a computed tensor shown read-only, parameter rows of every kind with the
// right widgets, set/clear/bad text, refreshes that emit nothing, the error label,
// and the whole loop through GraphDocument::edit as the window wires it.
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QVBoxLayout>
#include <QtTest/QtTest>

#include "edit/editor.h"
#include "graph/dtype.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "views/graph_document.h"
#include "views/node_editor.h"

using namespace tapestry;
using namespace tapestry::views;

namespace {

Graph loadExample(const QString &name) {
    const QString path = QDir(qEnvironmentVariable("TAPESTRY_SOURCE_DIR"))
                             .filePath(QStringLiteral("projects/%1.tapestry.json").arg(name));
    LoadResult r = load_project(path.toStdString());
    if (!r.ok()) qFatal("cannot load %s", qPrintable(path));
    return r.graph;
}

// Every paramsRequested emission, typed.
struct ParamsLog {
    QStringList ids;
    std::vector<Params> params;
    explicit ParamsLog(NodeEditor &editor) {
        QObject::connect(&editor, &NodeEditor::paramsRequested, [this](const QString &id, const Params &p) {
            ids << id;
            params.push_back(p);
        });
    }
    int count() const { return static_cast<int>(params.size()); }
};

// All four request signals, to check that something emits nothing at all.
struct AllRequests {
    QSignalSpy rename, type, role, params;
    explicit AllRequests(NodeEditor *e)
        : rename(e, &NodeEditor::renameRequested),
          type(e, &NodeEditor::tensorTypeRequested),
          role(e, &NodeEditor::roleRequested),
          params(e, &NodeEditor::paramsRequested) {}
    int total() const { return static_cast<int>(rename.count() + type.count() + role.count() + params.count()); }
};

template <typename W>
W *field(NodeEditor &e, const QString &name) {
    W *w = e.findChild<W *>(name);
    if (!w) qFatal("no field %s", qPrintable(name));
    return w;
}

// Replaces a line edit's text as a user would (select all, type) and presses Enter.
void typeAndEnter(QLineEdit *line, const QString &text) {
    line->setFocus();
    line->selectAll();
    if (text.isEmpty())
        QTest::keyClick(line, Qt::Key_Delete);
    else
        QTest::keyClicks(line, text);
    QTest::keyClick(line, Qt::Key_Return);
}

// An op kind with one parameter of every form, so that each row type is tested
// even where the standard library has no such parameter (an optional choice).
class AllParamsOp : public OpDef {
public:
    std::string_view kind() const override { return "all_params"; }
    std::string_view category() const override { return "test"; }
    std::string_view summary() const override { return "one parameter of every kind"; }
    std::vector<PortSpec> input_ports() const override { return {{"x", "input", false, false}}; }
    std::vector<PortSpec> output_ports() const override { return {{"y", "output", false, false}}; }
    std::vector<ParamSpec> params() const override {
        auto spec = [](std::string name, ParamKind kind, bool required, ParamValue dflt,
                       std::vector<std::string> choices = {}) {
            ParamSpec s;
            s.name = std::move(name);
            s.kind = kind;
            s.required = required;
            s.default_value = std::move(dflt);
            s.doc = "doc of " + s.name;
            s.choices = std::move(choices);
            return s;
        };
        return {spec("flag", ParamKind::boolean, false, true),
                spec("count", ParamKind::integer, true, std::int64_t{0}),
                spec("ratio", ParamKind::number, false, 1e-5),
                spec("mode", ParamKind::string, false, std::string("fast"), {"fast", "exact"}),
                spec("to", ParamKind::string, true, std::string(), {"f32", "f16"}),
                spec("label", ParamKind::string, false, std::string("none")),
                spec("dims", ParamKind::int_list, false, std::vector<std::int64_t>{})};
    }
    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &) const override {
        return unexpected(DerivationError{"unknown-op", "kind", "a test kind derives nothing"});
    }
    double flops_per_point(const Params &, const Derivation &) const override { return 0; }
    void reference(const RefContext &) const override {}
};

const OpLibrary &testLibrary() {
    static const OpLibrary *lib = [] {
        auto *l = new OpLibrary;
        l->add(std::make_unique<AllParamsOp>());
        return l;
    }();
    return *lib;
}

// A graph with one all_params op (set: count and mode) on a tensor.
Graph allParamsGraph() {
    Graph g;
    g.put_tensor(Tensor{TensorId("t"), "t", DType::f32, ZRange::of_shape(ZPoint{4}), TensorRole::input, {}, {}});
    Operation op;
    op.id = OpId("op");
    op.name = "probe";
    op.kind = "all_params";
    op.params = Params{{"count", std::int64_t{3}}, {"mode", std::string("exact")}};
    op.inputs = {PortBinding{"x", {TensorSelection{TensorId("t"), ZRange::of_shape(ZPoint{4})}}}};
    g.put_op(op);
    return g;
}

}  // namespace

class TestNodeEditor : public QObject {
    Q_OBJECT

private slots:
    void nothingShownHidesTheFields();
    void renameWithEnterEmitsOnce_data();
    void renameWithEnterEmitsOnce();
    void unchangedOrEmptyNameEmitsNothing();
    void shapeEditEmitsTensorType_data();
    void shapeEditEmitsTensorType();
    void badShapeShowsErrorAndEmitsNothing_data();
    void badShapeShowsErrorAndEmitsNothing();
    void dtypeAndRoleCombosEmitOnUserChange();
    void producedTensorIsReadOnly();
    void operationRowsHaveTheRightWidgets();
    void editingAParamKeepsTheOthers_data();
    void editingAParamKeepsTheOthers();
    void badParamTextEmitsNothing_data();
    void badParamTextEmitsNothing();
    void everyParamKindReadsAndWrites();
    void setGraphRefreshesWithoutEmitting();
    void nodeRemovedBySetGraphHidesTheForm();
    void errorLabelShownAndCleared();
    void editsRoundTripThroughGraphDocument();
};

void TestNodeEditor::nothingShownHidesTheFields() {
    NodeEditor editor;
    editor.setGraph(loadExample("mlp"));
    AllRequests spies(&editor);
    auto *name = field<QLineEdit>(editor, "nodeName");
    auto *hint = field<QLabel>(editor, "nodeEditorHint");

    editor.showNode("");
    QVERIFY(!name->isVisibleTo(&editor));
    QVERIFY(hint->isVisibleTo(&editor));
    QCOMPARE(editor.shownNode(), QString());

    editor.showNode("x");
    QVERIFY(name->isVisibleTo(&editor));
    QVERIFY(!hint->isVisibleTo(&editor));
    QCOMPARE(editor.shownNode(), QString("x"));
    QCOMPARE(name->text(), QString("activations"));

    editor.showNode("no_such_node");
    QVERIFY(!name->isVisibleTo(&editor));
    QVERIFY(hint->text().contains("no_such_node"));
    QCOMPARE(editor.shownNode(), QString());
    QCOMPARE(spies.total(), 0);
}

void TestNodeEditor::renameWithEnterEmitsOnce_data() {
    QTest::addColumn<QString>("project");
    QTest::addColumn<QString>("id");
    QTest::addColumn<QString>("typed");
    QTest::addColumn<QString>("emitted");
    QTest::newRow("tensor") << "mlp"
                            << "x"
                            << "tokens"
                            << "tokens";
    QTest::newRow("operation") << "mlp"
                               << "fc1"
                               << "first layer"
                               << "first layer";
    QTest::newRow("blanks trimmed") << "convnet"
                                    << "softmax"
                                    << "  probs  "
                                    << "probs";
}

void TestNodeEditor::renameWithEnterEmitsOnce() {
    QFETCH(QString, project);
    QFETCH(QString, id);
    QFETCH(QString, typed);
    QFETCH(QString, emitted);
    QWidget window;
    auto *editor = new NodeEditor(&window);
    auto *other = new QLineEdit(&window);
    auto *layout = new QVBoxLayout(&window);
    layout->addWidget(editor);
    layout->addWidget(other);
    window.show();
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    editor->setGraph(loadExample(project));
    editor->showNode(id);
    QSignalSpy spy(editor, &NodeEditor::renameRequested);
    AllRequests spies(editor);

    auto *name = field<QLineEdit>(*editor, "nodeName");
    typeAndEnter(name, typed);
    // Enter again before the window refreshed the form, then focus moving on: one request.
    QTest::keyClick(name, Qt::Key_Return);
    other->setFocus();
    QApplication::processEvents();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), id);
    QCOMPARE(spy.at(0).at(1).toString(), emitted);
    QCOMPARE(spies.total(), 1);
}

void TestNodeEditor::unchangedOrEmptyNameEmitsNothing() {
    NodeEditor editor;
    editor.setGraph(loadExample("mlp"));
    editor.showNode("fc1");
    AllRequests spies(&editor);
    auto *name = field<QLineEdit>(editor, "nodeName");
    typeAndEnter(name, "fc1");  // the op's name defaults to its id
    QCOMPARE(spies.total(), 0);
    QCOMPARE(editor.errorText(), QString());

    typeAndEnter(name, "");
    QCOMPARE(spies.total(), 0);
    QVERIFY(editor.errorText().contains("cannot be empty"));
}

void TestNodeEditor::shapeEditEmitsTensorType_data() {
    QTest::addColumn<QString>("typed");
    QTest::addColumn<QString>("emitted");  // "-" = nothing emitted
    QTest::newRow("comma list") << "64, 1024"
                                << "64, 1024";
    QTest::newRow("brackets") << "[64, 1024]"
                              << "64, 1024";
    QTest::newRow("times") << "64x1024"
                           << "64, 1024";
    QTest::newRow("blanks") << "64 1024"
                            << "64, 1024";
    QTest::newRow("rank 3") << "2,32,1024"
                            << "2, 32, 1024";
    QTest::newRow("scalar") << ""
                            << "";
    QTest::newRow("empty brackets = scalar") << "[]"
                                             << "";
    QTest::newRow("same shape") << "512, 1024"
                                << "-";
    QTest::newRow("same shape other spelling") << "[512,1024]"
                                               << "-";
}

void TestNodeEditor::shapeEditEmitsTensorType() {
    QFETCH(QString, typed);
    QFETCH(QString, emitted);
    NodeEditor editor;
    editor.setGraph(loadExample("mlp"));
    editor.showNode("x");
    QSignalSpy spy(&editor, &NodeEditor::tensorTypeRequested);
    AllRequests spies(&editor);
    auto *shape = field<QLineEdit>(editor, "tensorShape");
    QCOMPARE(shape->text(), QString("512, 1024"));
    typeAndEnter(shape, typed);
    QCOMPARE(editor.errorText(), QString());
    if (emitted == "-") {
        QCOMPARE(spies.total(), 0);
        return;
    }
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QString("x"));
    QCOMPARE(spy.at(0).at(1).toString(), QString("f32"));
    QCOMPARE(spy.at(0).at(2).toString(), emitted);
    QCOMPARE(spies.total(), 1);
    // What is emitted parses back to the shape typed.
    QCOMPARE(NodeEditor::parseShape(emitted), NodeEditor::parseShape(typed));
}

void TestNodeEditor::badShapeShowsErrorAndEmitsNothing_data() {
    QTest::addColumn<QString>("typed");
    QTest::addColumn<QString>("why");
    QTest::newRow("word") << "abc"
                          << "'abc' is not a whole number";
    QTest::newRow("negative") << "64, -1"
                              << "-1 is negative";
    QTest::newRow("empty entry") << "64,,1024"
                                 << "has an empty entry";
    QTest::newRow("fraction") << "64, 10.5"
                              << "'10.5' is not a whole number";
    QTest::newRow("huge") << "99999999999999"
                          << "too large";
}

void TestNodeEditor::badShapeShowsErrorAndEmitsNothing() {
    QFETCH(QString, typed);
    QFETCH(QString, why);
    NodeEditor editor;
    editor.setGraph(loadExample("mlp"));
    editor.showNode("x");
    AllRequests spies(&editor);
    auto *error = field<QLabel>(editor, "nodeEditorError");
    QVERIFY(!error->isVisibleTo(&editor));
    typeAndEnter(field<QLineEdit>(editor, "tensorShape"), typed);
    QCOMPARE(spies.total(), 0);
    QVERIFY(error->isVisibleTo(&editor));
    QVERIFY2(editor.errorText().startsWith("activations: shape: "), qPrintable(editor.errorText()));
    QVERIFY2(editor.errorText().contains(why), qPrintable(editor.errorText()));

    // Putting the old shape back is no request, and takes the complaint away.
    typeAndEnter(field<QLineEdit>(editor, "tensorShape"), "512, 1024");
    QCOMPARE(spies.total(), 0);
    QVERIFY(!error->isVisibleTo(&editor));
}

void TestNodeEditor::dtypeAndRoleCombosEmitOnUserChange() {
    NodeEditor editor;
    editor.setGraph(loadExample("mlp"));
    editor.showNode("x");
    QSignalSpy types(&editor, &NodeEditor::tensorTypeRequested);
    QSignalSpy roles(&editor, &NodeEditor::roleRequested);
    auto *dtype = field<QComboBox>(editor, "tensorDtype");
    auto *role = field<QComboBox>(editor, "tensorRole");

    QStringList items;
    for (int i = 0; i < dtype->count(); ++i) items << dtype->itemText(i);
    QCOMPARE(items, QStringList({"f32", "f16", "bf16", "i32", "i64", "bool"}));
    QCOMPARE(dtype->currentText(), QString("f32"));
    QCOMPARE(role->count(), 2);
    QCOMPARE(role->currentText(), QString("input"));

    // A programmatic change (as a refresh makes) asks for nothing.
    dtype->setCurrentIndex(3);
    role->setCurrentIndex(1);
    QCOMPARE(types.count() + roles.count(), 0);
    editor.setGraph(loadExample("mlp"));  // restores f32 / input
    QCOMPARE(dtype->currentText(), QString("f32"));

    QTest::keyClick(dtype, Qt::Key_Down);  // the user picks f16
    QCOMPARE(types.count(), 1);
    QCOMPARE(types.at(0).at(0).toString(), QString("x"));
    QCOMPARE(types.at(0).at(1).toString(), QString("f16"));
    QCOMPARE(types.at(0).at(2).toString(), QString("512, 1024"));

    QTest::keyClick(role, Qt::Key_Down);  // input → parameter
    QCOMPARE(roles.count(), 1);
    QCOMPARE(roles.at(0).at(0).toString(), QString("x"));
    QCOMPARE(roles.at(0).at(1).toString(), QString("parameter"));

    // A parameter tensor shows its role.
    editor.showNode("w1");
    QCOMPARE(role->currentText(), QString("parameter"));
    QCOMPARE(field<QLineEdit>(editor, "tensorShape")->text(), QString("1024, 4096"));
}

void TestNodeEditor::producedTensorIsReadOnly() {
    NodeEditor editor;
    editor.setGraph(loadExample("mlp"));
    editor.showNode("h1");
    auto *name = field<QLineEdit>(editor, "nodeName");
    auto *dtype = field<QComboBox>(editor, "tensorDtype");
    auto *shape = field<QLineEdit>(editor, "tensorShape");
    auto *role = field<QComboBox>(editor, "tensorRole");
    QVERIFY(name->isEnabled());
    QVERIFY(!dtype->isEnabled());
    QVERIFY(!shape->isEnabled());
    QVERIFY(!role->isEnabled());
    QCOMPARE(shape->text(), QString("512, 4096"));
    QCOMPARE(role->currentText(), QString("intermediate"));
    QCOMPARE(shape->toolTip(), QString("Inferred from fc1: change that operation's inputs"));
    QCOMPARE(dtype->toolTip(), shape->toolTip());
    QCOMPARE(role->toolTip(), shape->toolTip());

    editor.showNode("y");  // an output, computed by fc4
    QVERIFY(!shape->isEnabled());
    QCOMPARE(role->currentText(), QString("output"));

    // Back on an input: editable again, and the computed roles are gone.
    editor.showNode("x");
    QVERIFY(dtype->isEnabled() && shape->isEnabled() && role->isEnabled());
    QCOMPARE(role->count(), 2);
}

void TestNodeEditor::operationRowsHaveTheRightWidgets() {
    NodeEditor editor;
    editor.setGraph(loadExample("convnet"));
    editor.showNode("conv1");
    QVERIFY(!field<QLineEdit>(editor, "tensorShape")->isVisibleTo(&editor));
    auto *kind = field<QLabel>(editor, "opKind");
    QVERIFY(kind->isVisibleTo(&editor));
    const OpDef *conv = OpLibrary::standard().find("conv2d");
    QCOMPARE(kind->text(), QString("conv2d — ") + QString::fromUtf8(conv->summary().data()));

    // One row per ParamSpec, in the library's order, with its doc as tooltip.
    for (const ParamSpec &spec : conv->params()) {
        auto *line = field<QLineEdit>(editor, QString("param_") + QString::fromStdString(spec.name));
        QVERIFY(line->isVisibleTo(&editor));
        QVERIFY(line->toolTip().startsWith(QString::fromStdString(spec.doc)));
    }
    QCOMPARE(field<QLineEdit>(editor, "param_padding")->text(), QString("1, 1, 1, 1"));
    QCOMPARE(field<QLineEdit>(editor, "param_stride")->text(), QString());
    QCOMPARE(field<QLineEdit>(editor, "param_stride")->placeholderText(), QString("default: 1, 1"));
    QCOMPARE(field<QLineEdit>(editor, "param_groups")->placeholderText(), QString("default: 1"));

    // A required int list, a boolean.
    editor.showNode("pool2");
    QVERIFY(!editor.findChild<QLineEdit *>("param_groups"));  // conv2d's rows are gone
    QCOMPARE(field<QLineEdit>(editor, "param_kernel")->placeholderText(), QString("required"));
    QCOMPARE(field<QLineEdit>(editor, "param_kernel")->text(), QString("2, 2"));
    auto *pad = field<QCheckBox>(editor, "param_count_include_pad");
    QVERIFY(!pad->isChecked());
    QVERIFY(pad->toolTip().contains("Default: false"));

    // An int with a default.
    editor.showNode("softmax");
    QCOMPARE(field<QLineEdit>(editor, "param_axis")->text(), QString("-1"));
    QCOMPARE(field<QLineEdit>(editor, "param_axis")->placeholderText(), QString("default: -1"));

    // No parameters: the kind only.
    editor.showNode("relu1");
    QCOMPARE(kind->text().left(7), QString("relu — "));
    QVERIFY(editor.findChildren<QWidget *>(QRegularExpression("^param_")).isEmpty());
}

void TestNodeEditor::editingAParamKeepsTheOthers_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("param");
    QTest::addColumn<QString>("typed");
    QTest::addColumn<Params>("expected");  // the full set emitted
    const std::vector<std::int64_t> pad{1, 1, 1, 1};
    QTest::newRow("conv2d stride set") << "conv1"
                                       << "stride"
                                       << "2, 2"
                                       << Params{{"padding", pad}, {"stride", std::vector<std::int64_t>{2, 2}}};
    QTest::newRow("conv2d groups set") << "conv2"
                                       << "groups"
                                       << "2" << Params{{"padding", pad}, {"groups", std::int64_t{2}}};
    QTest::newRow("conv2d padding changed")
        << "conv1"
        << "padding"
        << "[0, 0, 0, 0]" << Params{{"padding", std::vector<std::int64_t>{0, 0, 0, 0}}};
    QTest::newRow("conv2d padding cleared") << "conv1"
                                            << "padding"
                                            << "" << Params{};
    QTest::newRow("softmax axis changed") << "softmax"
                                          << "axis"
                                          << "0" << Params{{"axis", std::int64_t{0}}};
    QTest::newRow("softmax axis cleared") << "softmax"
                                          << "axis"
                                          << "" << Params{};
    QTest::newRow("pool kernel changed") << "pool1"
                                         << "kernel"
                                         << "3 3" << Params{{"kernel", std::vector<std::int64_t>{3, 3}}};
    QTest::newRow("pool stride set empty")
        << "pool1"
        << "stride"
        << "[]" << Params{{"kernel", std::vector<std::int64_t>{2, 2}}, {"stride", std::vector<std::int64_t>{}}};
}

void TestNodeEditor::editingAParamKeepsTheOthers() {
    QFETCH(QString, op);
    QFETCH(QString, param);
    QFETCH(QString, typed);
    QFETCH(Params, expected);
    NodeEditor editor;
    editor.setGraph(loadExample("convnet"));
    editor.showNode(op);
    ParamsLog log(editor);
    AllRequests spies(&editor);
    typeAndEnter(field<QLineEdit>(editor, "param_" + param), typed);
    QCOMPARE(log.count(), 1);
    QCOMPARE(log.ids.front(), op);
    QVERIFY(log.params.front() == expected);
    QCOMPARE(spies.total(), 1);
    QCOMPARE(editor.errorText(), QString());
}

void TestNodeEditor::badParamTextEmitsNothing_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("param");
    QTest::addColumn<QString>("typed");
    QTest::addColumn<QString>("message");
    QTest::newRow("word in an int") << "conv1"
                                    << "groups"
                                    << "abc"
                                    << "conv1: groups: 'abc' is not a whole number";
    QTest::newRow("fraction in an int") << "softmax"
                                        << "axis"
                                        << "1.5"
                                        << "softmax: axis: '1.5' is not a whole number";
    QTest::newRow("word in an int list") << "conv1"
                                         << "stride"
                                         << "1, x"
                                         << "conv1: stride: 'x' is not a whole number";
    QTest::newRow("hole in an int list") << "pool1"
                                         << "kernel"
                                         << "2,,2"
                                         << "pool1: kernel: '2,,2' has an empty entry";
}

void TestNodeEditor::badParamTextEmitsNothing() {
    QFETCH(QString, op);
    QFETCH(QString, param);
    QFETCH(QString, typed);
    QFETCH(QString, message);
    NodeEditor editor;
    editor.setGraph(loadExample("convnet"));
    editor.showNode(op);
    AllRequests spies(&editor);
    auto *line = field<QLineEdit>(editor, "param_" + param);
    typeAndEnter(line, typed);
    QCOMPARE(spies.total(), 0);
    QCOMPARE(editor.errorText(), message);
    QVERIFY(field<QLabel>(editor, "nodeEditorError")->isVisibleTo(&editor));
    QCOMPARE(line->text(), typed);  // left for the user to fix
}

void TestNodeEditor::everyParamKindReadsAndWrites() {
    NodeEditor editor(testLibrary());
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    editor.setGraph(allParamsGraph());
    editor.showNode("op");
    ParamsLog log(editor);
    const Params base{{"count", std::int64_t{3}}, {"mode", std::string("exact")}};

    auto *flag = field<QCheckBox>(editor, "param_flag");
    auto *count = field<QLineEdit>(editor, "param_count");
    auto *ratio = field<QLineEdit>(editor, "param_ratio");
    auto *mode = field<QComboBox>(editor, "param_mode");
    auto *to = field<QComboBox>(editor, "param_to");
    auto *label = field<QLineEdit>(editor, "param_label");
    auto *dims = field<QLineEdit>(editor, "param_dims");

    // Shown values and defaults.
    QVERIFY(flag->isChecked());  // default true
    QCOMPARE(flag->toolTip(), QString("doc of flag\nDefault: true"));
    QCOMPARE(count->text(), QString("3"));
    QCOMPARE(count->placeholderText(), QString("required"));
    QCOMPARE(ratio->placeholderText(), QString("default: 1e-05"));
    QCOMPARE(mode->count(), 3);
    QCOMPARE(mode->itemText(0), QString("(default: fast)"));
    QCOMPARE(mode->currentText(), QString("exact"));
    QCOMPARE(to->count(), 2);  // required: no default entry
    QCOMPARE(to->currentIndex(), -1);
    QCOMPARE(label->placeholderText(), QString("default: none"));
    QCOMPARE(dims->placeholderText(), QString("default: []"));

    auto expect = [&](const char *what, const Params &p) {
        QVERIFY2(log.count() == 1, what);
        QVERIFY2(log.params.back() == p, what);
        log.params.clear();
        log.ids.clear();
        editor.setGraph(allParamsGraph());  // the edit was not applied: back to the graph
    };
    auto with = [&](const std::string &key, ParamValue v) {
        Params p = base;
        p.set(key, std::move(v));
        return p;
    };

    QTest::mouseClick(flag, Qt::LeftButton);
    expect("flag", with("flag", false));
    typeAndEnter(ratio, "0.001");
    expect("ratio", with("ratio", 0.001));
    typeAndEnter(ratio, "2");
    expect("ratio as int text", with("ratio", 2.0));
    QTest::keyClick(mode, Qt::Key_Up);  // exact → fast
    expect("mode", with("mode", std::string("fast")));
    QTest::keyClick(mode, Qt::Key_Home);  // → (default: fast): unset
    Params no_mode = base;
    no_mode.erase("mode");
    expect("mode to default", no_mode);
    QTest::keyClick(to, Qt::Key_Down);
    expect("to", with("to", std::string("f32")));
    typeAndEnter(label, "hello");
    expect("label", with("label", std::string("hello")));
    typeAndEnter(dims, "[-1, 2]");
    expect("dims", with("dims", std::vector<std::int64_t>{-1, 2}));

    typeAndEnter(ratio, "fast");
    QCOMPARE(log.count(), 0);
    QCOMPARE(editor.errorText(), QString("probe: ratio: 'fast' is not a number"));
    typeAndEnter(count, "3");  // unchanged: nothing, and the bad-text complaint goes
    QCOMPARE(log.count(), 0);
    QCOMPARE(editor.errorText(), QString());
}

void TestNodeEditor::setGraphRefreshesWithoutEmitting() {
    QWidget window;
    auto *editor = new NodeEditor(&window);
    (new QVBoxLayout(&window))->addWidget(editor);
    window.show();
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));  // focus changes need an active window
    const Graph before = loadExample("convnet");
    Graph g = before;
    editor->setGraph(g);
    editor->showNode("x");
    AllRequests spies(editor);

    // Another edit (elsewhere, or an undo) changes the shown tensor.
    edit::Editor ed(g);
    QVERIFY(ed.set_params(OpId("conv1"), Params{{"stride", std::vector<std::int64_t>{2, 2}}}));
    QVERIFY(ed.rename("x", "pictures"));
    QVERIFY(ed.set_tensor_type(TensorId("x"), DType::f16, ZPoint{4, 3, 32, 32}));
    QVERIFY(ed.set_role(TensorId("x"), TensorRole::parameter));
    // Focus sits in a field while the refresh happens: that is no edit either.
    field<QLineEdit>(*editor, "tensorShape")->setFocus();
    editor->setGraph(ed.graph());
    QCOMPARE(field<QLineEdit>(*editor, "nodeName")->text(), QString("pictures"));
    QCOMPARE(field<QComboBox>(*editor, "tensorDtype")->currentText(), QString("f16"));
    QCOMPARE(field<QLineEdit>(*editor, "tensorShape")->text(), QString("4, 3, 32, 32"));
    QCOMPARE(field<QComboBox>(*editor, "tensorRole")->currentText(), QString("parameter"));

    // Text typed but not confirmed when the form switches node asks for nothing.
    QTest::keyClicks(field<QLineEdit>(*editor, "tensorShape"), "9");
    QVERIFY(field<QLineEdit>(*editor, "tensorShape")->hasFocus());
    editor->showNode("conv1");  // the focused shape field hides and loses focus
    QCOMPARE(field<QLineEdit>(*editor, "param_stride")->text(), QString("2, 2"));
    QCOMPARE(field<QLineEdit>(*editor, "param_padding")->text(), QString());
    editor->setGraph(before);  // undo
    QCOMPARE(field<QLineEdit>(*editor, "param_stride")->text(), QString());
    QCOMPARE(field<QLineEdit>(*editor, "param_padding")->text(), QString("1, 1, 1, 1"));

    // Likewise an unconfirmed parameter when the rows are rebuilt for another kind:
    // conv1's stride must not land on softmax.
    auto *stride = field<QLineEdit>(*editor, "param_stride");
    QTRY_VERIFY(stride->isVisible());  // rows added to a shown form appear with the next events
    stride->setFocus();
    QTest::keyClicks(stride, "3, 3");
    QVERIFY(stride->hasFocus());
    editor->showNode("softmax");
    QCOMPARE(field<QLineEdit>(*editor, "param_axis")->text(), QString("-1"));
    QCOMPARE(spies.total(), 0);
}

void TestNodeEditor::nodeRemovedBySetGraphHidesTheForm() {
    NodeEditor editor;
    Graph g = loadExample("convnet");
    editor.setGraph(g);
    editor.showNode("softmax");
    edit::Editor ed(g);
    QVERIFY(ed.remove({"softmax"}));
    editor.setGraph(ed.graph());
    QCOMPARE(editor.shownNode(), QString());
    QVERIFY(!field<QLineEdit>(editor, "nodeName")->isVisibleTo(&editor));
    QVERIFY(field<QLabel>(editor, "nodeEditorHint")->isVisibleTo(&editor));
}

void TestNodeEditor::errorLabelShownAndCleared() {
    NodeEditor editor;
    editor.setGraph(loadExample("mlp"));
    editor.showNode("x");
    auto *error = field<QLabel>(editor, "nodeEditorError");
    QVERIFY(error->wordWrap());
    editor.showError("shape [64, 7] cannot feed fc1");
    QVERIFY(error->isVisibleTo(&editor));
    QCOMPARE(error->text(), QString("shape [64, 7] cannot feed fc1"));
    // A refresh (the window restoring the fields) keeps it.
    editor.setGraph(loadExample("mlp"));
    QCOMPARE(editor.errorText(), QString("shape [64, 7] cannot feed fc1"));
    // Showing the same node again keeps it; another node clears it.
    editor.showNode("x");
    QVERIFY(error->isVisibleTo(&editor));
    editor.showNode("w1");
    QVERIFY(!error->isVisibleTo(&editor));
    QCOMPARE(editor.errorText(), QString());

    // The next request clears it (a refusal would set it again).
    editor.showError("refused");
    typeAndEnter(field<QLineEdit>(editor, "nodeName"), "weights");
    QCOMPARE(editor.errorText(), QString());
}

// The loop as the window wires it: requests through GraphDocument::edit, a refusal
// into showError, and setGraph after each.
void TestNodeEditor::editsRoundTripThroughGraphDocument() {
    GraphDocument doc;
    doc.replace({}, loadExample("convnet"), {}, {});
    NodeEditor editor;
    auto apply = [&](const QString &text, const GraphDocument::EditFn &fn) {
        const QString refusal = doc.edit(text, fn);
        if (!refusal.isEmpty()) editor.showError(refusal);
        editor.setGraph(doc.graph());
    };
    connect(&editor, &NodeEditor::renameRequested, [&](const QString &id, const QString &name) {
        apply("Rename", [&](edit::Editor &e) { return e.rename(id.toStdString(), name.toStdString()); });
    });
    connect(&editor, &NodeEditor::tensorTypeRequested,
            [&](const QString &id, const QString &dtype, const QString &shape) {
                apply("Change type", [&](edit::Editor &e) {
                    return e.set_tensor_type(TensorId(id.toStdString()), *parse_dtype(dtype.toStdString()),
                                             *NodeEditor::parseShape(shape));
                });
            });
    connect(&editor, &NodeEditor::paramsRequested, [&](const QString &id, const Params &p) {
        apply("Set parameters", [&](edit::Editor &e) { return e.set_params(OpId(id.toStdString()), p); });
    });
    editor.setGraph(doc.graph());
    editor.showNode("x");

    auto *shape = field<QLineEdit>(editor, "tensorShape");
    typeAndEnter(shape, "4x3x32x32");
    QCOMPARE(doc.graph().find_tensor(TensorId("x"))->shape(), (ZPoint{4, 3, 32, 32}));
    QCOMPARE(doc.graph().find_tensor(TensorId("conv1_out"))->shape(), (ZPoint{4, 16, 32, 32}));  // inferred
    QCOMPARE(shape->text(), QString("4, 3, 32, 32"));
    QCOMPARE(editor.errorText(), QString());

    // Refused by the engine: its reason shows, the field goes back to the graph's value.
    editor.showNode("conv1");
    auto *stride = field<QLineEdit>(editor, "param_stride");
    typeAndEnter(stride, "0, 0");
    QVERIFY2(editor.errorText().contains("stride"), qPrintable(editor.errorText()));
    QCOMPARE(stride->text(), QString());
    QVERIFY(!doc.graph().find_op(OpId("conv1"))->params.has("stride"));

    // The next successful edit clears it; downstream shapes follow.
    typeAndEnter(stride, "2, 2");
    QCOMPARE(editor.errorText(), QString());
    QCOMPARE(doc.graph().find_tensor(TensorId("conv1_out"))->shape(), (ZPoint{4, 16, 16, 16}));
    QCOMPARE(stride->text(), QString("2, 2"));
    typeAndEnter(field<QLineEdit>(editor, "nodeName"), "stem");
    QCOMPARE(QString::fromStdString(doc.graph().find_op(OpId("conv1"))->name), QString("stem"));

    // Undo restores the name and then the stride, and the form follows.
    QCOMPARE(doc.undoStack()->count(), 3);
    doc.undoStack()->undo();
    editor.setGraph(doc.graph());
    QCOMPARE(field<QLineEdit>(editor, "nodeName")->text(), QString("conv1"));
    doc.undoStack()->undo();
    editor.setGraph(doc.graph());
    QCOMPARE(stride->text(), QString());
}

QTEST_MAIN(TestNodeEditor)
#include "test_node_editor.moc"
