// Graphviz export (engine/io/graphviz.h): DOT text, SVG/PNG rendering, layout for
// the studio canvas, cancellation and thread safety.
#include <QtTest/QtTest>

#include <QElapsedTimer>
#include <QXmlStreamReader>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "graph/graph.h"
#include "io/graphviz.h"
#include "ops/library.h"

using namespace tapestry;

namespace {

Tensor make_tensor(const std::string &id, std::initializer_list<Coord> shape, TensorRole role,
                   const std::string &name = "") {
    Tensor t;
    t.id = TensorId(id);
    t.name = name.empty() ? id : name;
    t.dtype = DType::f32;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    return t;
}

PortBinding port(const std::string &name, const Tensor &t) { return PortBinding{name, {TensorSelection{t.id, t.range}}}; }

// x[4, 8] · w[8, 3] + bias[3] = h[4, 3]; relu(h) = y.
Graph mlp_graph(const std::string &x_name = "x") {
    Graph g;
    g.name = "tiny mlp";
    const Tensor x = make_tensor("x", {4, 8}, TensorRole::input, x_name);
    const Tensor w = make_tensor("w", {8, 3}, TensorRole::parameter);
    const Tensor b = make_tensor("bias", {3}, TensorRole::parameter);
    const Tensor h = make_tensor("h", {4, 3}, TensorRole::intermediate);
    const Tensor y = make_tensor("y", {4, 3}, TensorRole::output);
    for (const Tensor &t : {x, w, b, h, y}) g.put_tensor(t);
    Operation fc;
    fc.id = OpId("fc1");
    fc.name = "fc1";
    fc.kind = "linear";
    fc.inputs = {port("x", x), port("w", w), port("bias", b)};
    fc.outputs = {port("y", h)};
    g.put_op(fc);
    Operation act;
    act.id = OpId("act");
    act.name = "act";
    act.kind = "relu";
    act.inputs = {port("x", h)};
    act.outputs = {port("y", y)};
    g.put_op(act);
    return g;
}

// A chain of `layers` (linear + relu) pairs over [rows, width] activations:
// 5·layers + 1 nodes, 5·layers edges. Ids start with `prefix`; appended to `g`.
Graph chain_graph(int layers, Coord rows = 8, Coord width = 16, const std::string &prefix = "", Graph g = {}) {
    Tensor x = make_tensor(prefix + "x0", {rows, width}, TensorRole::input);
    g.put_tensor(x);
    for (int l = 0; l < layers; ++l) {
        const std::string n = std::to_string(l);
        const Tensor w = make_tensor(prefix + "w" + n, {width, width}, TensorRole::parameter);
        const Tensor h = make_tensor(prefix + "h" + n, {rows, width}, TensorRole::intermediate);
        const Tensor y = make_tensor(prefix + "x" + std::to_string(l + 1), {rows, width},
                                     l + 1 == layers ? TensorRole::output : TensorRole::intermediate);
        g.put_tensor(w);
        g.put_tensor(h);
        g.put_tensor(y);
        Operation fc;
        fc.id = OpId(prefix + "fc" + n);
        fc.kind = "linear";
        fc.inputs = {port("x", x), port("w", w)};
        fc.outputs = {port("y", h)};
        g.put_op(fc);
        Operation act;
        act.id = OpId(prefix + "relu" + n);
        act.kind = "relu";
        act.inputs = {port("x", h)};
        act.outputs = {port("y", y)};
        g.put_op(act);
        x = y;
    }
    return g;
}

// Three chains of 3, 1 and 2 layers ("a_", "b_", "c_") and a tensor nothing
// uses: four components, 31 nodes, 30 edges.
Graph three_chains_and_a_loner() {
    Graph g = chain_graph(3, 8, 16, "a_");
    g = chain_graph(1, 8, 16, "b_", std::move(g));
    g = chain_graph(2, 8, 16, "c_", std::move(g));
    g.put_tensor(make_tensor("loner", {2}, TensorRole::input, "a tensor nothing reads"));
    return g;
}

const NodeBox *box_of(const Layout &layout, const std::string &id) {
    for (const NodeBox &n : layout.nodes)
        if (n.id == id) return &n;
    return nullptr;
}

// What every layout must satisfy: one box per node of `g` (ids unique), inside
// the drawing, no two overlapping; `edges` edges, each a spline of 3n+1 points
// between existing nodes, starting at its tail's box and ending at its head's.
// Returns what is wrong, or "".
std::string layout_problem(const Graph &g, const Layout &layout, size_t edges) {
    if (layout.nodes.size() != g.node_count())
        return std::to_string(layout.nodes.size()) + " boxes for " + std::to_string(g.node_count()) + " nodes";
    std::set<std::string> ids;
    for (const NodeBox &n : layout.nodes) ids.insert(n.id);
    if (ids.size() != g.node_count()) return "duplicate box ids";
    for (const TensorPtr &t : g.tensors())
        if (!ids.count(t->id.value)) return "no box for tensor " + t->id.value;
    for (const OpPtr &op : g.operations())
        if (!ids.count(op->id.value)) return "no box for operation " + op->id.value;
    // Sorted by left edge, so that the overlap test only looks at neighbours.
    std::vector<const NodeBox *> boxes;
    for (const NodeBox &n : layout.nodes) {
        if (!(n.width > 0 && n.height > 0)) return n.id + " has no size";
        if (n.x - n.width / 2 < -0.5 || n.x + n.width / 2 > layout.width + 0.5 || n.y - n.height / 2 < -0.5 ||
            n.y + n.height / 2 > layout.height + 0.5)
            return n.id + " lies outside the drawing";
        boxes.push_back(&n);
    }
    std::sort(boxes.begin(), boxes.end(),
              [](const NodeBox *a, const NodeBox *b) { return a->x - a->width / 2 < b->x - b->width / 2; });
    for (size_t i = 0; i < boxes.size(); ++i)
        for (size_t j = i + 1; j < boxes.size(); ++j) {
            const NodeBox &a = *boxes[i], &b = *boxes[j];
            if (b.x - b.width / 2 >= a.x + a.width / 2) break;
            if (std::abs(a.y - b.y) < (a.height + b.height) / 2) return a.id + " overlaps " + b.id;
        }
    if (layout.edges.size() != edges)
        return std::to_string(layout.edges.size()) + " edges, expected " + std::to_string(edges);
    auto near = [](const NodeBox &n, std::pair<double, double> p) {
        return std::abs(p.first - n.x) <= n.width / 2 + 1 && std::abs(p.second - n.y) <= n.height / 2 + 1;
    };
    for (const EdgePath &e : layout.edges) {
        const NodeBox *from = box_of(layout, e.from), *to = box_of(layout, e.to);
        if (!from || !to) return "edge " + e.from + " -> " + e.to + " between unknown nodes";
        if (e.points.size() < 4 || e.points.size() % 3 != 1)
            return "edge " + e.from + " -> " + e.to + " has " + std::to_string(e.points.size()) + " points";
        if (!near(*from, e.points.front()) || !near(*to, e.points.back()))
            return "edge " + e.from + " -> " + e.to + " does not run between its nodes";
    }
    return "";
}

int count_of(const std::string &haystack, const std::string &needle) {
    int n = 0;
    for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
    return n;
}

// Parses SVG as XML; returns the number of <g class="node"> elements, or -1 when
// the XML is malformed.
int svg_node_groups(const std::string &svg, QString *error = nullptr) {
    QXmlStreamReader xml(QByteArray::fromStdString(svg));
    int nodes = 0;
    bool saw_svg = false;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement()) {
            if (xml.name() == QLatin1String("svg")) saw_svg = true;
            if (xml.name() == QLatin1String("g") && xml.attributes().value("class") == QLatin1String("node")) ++nodes;
        }
    }
    if (xml.hasError() || !saw_svg) {
        if (error) *error = xml.errorString();
        return -1;
    }
    return nodes;
}

}  // namespace

class TestExport : public QObject {
    Q_OBJECT

private slots:
    void dotHasTensorsOperationsAndRibbons() {
        const std::string dot = to_dot(mlp_graph(), OpLibrary::standard());
        QVERIFY(dot.rfind("digraph tapestry {", 0) == 0);
        QVERIFY(dot.find("newrank=true") != std::string::npos);
        QVERIFY(dot.find("bgcolor=\"#E2E2E2\"") != std::string::npos);
        QVERIFY(dot.find("fontname=\"Helvetica\"") != std::string::npos);
        // Every tensor a box3d, every operation a tab.
        QCOMPARE(count_of(dot, "shape=box3d"), 5);
        QCOMPARE(count_of(dot, "shape=tab"), 2);
        QVERIFY(dot.find("\"tensor_x\" [shape=box3d") != std::string::npos);
        QVERIFY(dot.find("\"op_fc1\" [shape=tab") != std::string::npos);
        // Tensor rows: dtype, range, shape, role.
        QVERIFY(dot.find("[0:4, 0:8]") != std::string::npos);
        QVERIFY(dot.find("\xE2\x80\x96" "4, 8" "\xE2\x80\x96") != std::string::npos);
        QVERIFY(dot.find(">parameter<") != std::string::npos);
        // The op's index space comes from the library: linear over [batch, out].
        QVERIFY(dot.find(">[0:4, 0:3]<") != std::string::npos);
        // One edge per selection, labelled by port, in the tensor's colour.
        QCOMPARE(count_of(dot, " -> "), 6);
        QVERIFY(dot.find("\"tensor_w\" -> \"op_fc1\"") != std::string::npos);
        QVERIFY(dot.find("\"op_fc1\" -> \"tensor_h\"") != std::string::npos);
        QVERIFY(dot.find("label=<bias>") != std::string::npos);
        // No operation is drawn as failing to resolve.
        QVERIFY(dot.find("#d00000") == std::string::npos);
    }

    void neighboursGetDifferentColours() {
        const std::string dot = to_dot(mlp_graph(), OpLibrary::standard());
        auto colour_of = [&](const std::string &node) {
            const size_t at = dot.find(node + " [");
            const size_t c = dot.find("color=\"", at);
            return dot.substr(c + 7, 7);
        };
        const std::string fc = colour_of("\"op_fc1\""), act = colour_of("\"op_act\"");
        for (const char *t : {"\"tensor_x\"", "\"tensor_w\"", "\"tensor_bias\"", "\"tensor_h\""})
            QVERIFY2(colour_of(t) != fc, t);
        QVERIFY(colour_of("\"tensor_h\"") != act);
        QVERIFY(colour_of("\"tensor_y\"") != act);
    }

    void hostileNamesAreEscaped_data() {
        QTest::addColumn<QByteArray>("name");
        QTest::addColumn<QByteArray>("escaped");
        QTest::newRow("script") << QByteArray("<script>alert(1)</script>")
                                << QByteArray("&lt;script&gt;alert(1)&lt;/script&gt;");
        QTest::newRow("quotes") << QByteArray("say \"hi\" it's") << QByteArray("say &quot;hi&quot; it&#39;s");
        QTest::newRow("ampersand") << QByteArray("a & b") << QByteArray("a &amp; b");
        QTest::newRow("html-close") << QByteArray("x>> ]; digraph {") << QByteArray("x&gt;&gt; ]; digraph {");
        QTest::newRow("backslash") << QByteArray("C:\\temp\\") << QByteArray("C:\\temp\\");
        // Control characters become spaces, invalid UTF-8 becomes U+FFFD.
        QTest::newRow("bytes") << QByteArray("ctl\x01x\xff!") << QByteArray("ctl x\xEF\xBF\xBD!");
    }
    void hostileNamesAreEscaped() {
        QFETCH(QByteArray, name);
        QFETCH(QByteArray, escaped);
        const std::string hostile = name.toStdString();
        Graph g = mlp_graph(hostile);
        // Also as an id: ids end up in DOT node names.
        Tensor odd = make_tensor(hostile, {2}, TensorRole::input);
        g.put_tensor(odd);
        const std::string dot = to_dot(g, OpLibrary::standard());
        QVERIFY2(dot.find(escaped.toStdString()) != std::string::npos, dot.c_str());
        QVERIFY(dot.find(hostile) == std::string::npos || hostile.find_first_of("<>&\"'\x01\xff") == std::string::npos);
        // Graphviz parses it, and every node survives as its own node.
        const auto svg = render_dot(dot, "svg");
        QVERIFY2(svg.has_value(), svg ? "" : svg.error().c_str());
        QCOMPARE(svg_node_groups(*svg), 8);
        // Every label parsed as an HTML table (Graphviz falls back to the bare node
        // name when one does not): six tensor titles, two operation titles.
        QCOMPARE(count_of(*svg, ">Tensor</text>"), 6);
        QCOMPARE(count_of(*svg, ">Operation</text>"), 2);
    }

    void projectionsAreAugmentedMatrices() {
        DrawOptions options;
        options.show_projections = true;
        const std::string dot = to_dot(mlp_graph(), OpLibrary::standard(), options);
        QCOMPARE(count_of(dot, "shape=component"), 2);
        QVERIFY(dot.find("[A | b | window]") != std::string::npos);
        // linear: P_x = [1 0 | 0 | 1; 0 0 | 0 | 8], P_w = [0 0 | 0 | 8; 0 1 | 0 | 1],
        // P_bias = [0 1 | 0 | 1], P_y = identity (DESIGN.md §3).
        const size_t table = dot.find("\"projections_fc1\" [shape=component");
        QVERIFY(table != std::string::npos);
        const std::string fc = dot.substr(table, dot.find('\n', table) - table);
        const std::string br = "<BR ALIGN=\"LEFT\"/>";
        QVERIFY2(fc.find(">in x</B>") != std::string::npos, fc.c_str());
        QVERIFY2(fc.find("[1 0 | 0 | 1]" + br + "[0 0 | 0 | 8]") != std::string::npos, fc.c_str());
        QVERIFY(fc.find("[0 0 | 0 | 8]" + br + "[0 1 | 0 | 1]") != std::string::npos);
        QVERIFY(fc.find(">in bias</B>") != std::string::npos);
        QVERIFY(fc.find("[0 1 | 0 | 1]" + br + "</FONT>") != std::string::npos);
        QVERIFY(fc.find("[1 0 | 0 | 1]" + br + "[0 1 | 0 | 1]") != std::string::npos);
        // Joined to its operation by a double rule, on the same rank.
        QVERIFY(dot.find("\"op_fc1\" -> \"projections_fc1\" [dir=none, penwidth=1.5, color=\"black:white:black\"]") !=
                std::string::npos);
        QVERIFY(dot.find("{ rank=same; \"op_fc1\"; \"projections_fc1\"; }") != std::string::npos);
        const auto svg = render_dot(dot, "svg");
        QVERIFY2(svg.has_value(), svg ? "" : svg.error().c_str());
        QCOMPARE(svg_node_groups(*svg), 9);
    }

    void unresolvableOperationIsRed() {
        Graph g = mlp_graph();
        Operation bad = *g.find_op(OpId("act"));
        bad.kind = "frobnicate";
        g.put_op(bad);
        DrawOptions options;
        options.show_projections = true;
        const std::string dot = to_dot(g, OpLibrary::standard(), options);
        const size_t at = dot.find("\"op_act\" [shape=tab");
        QVERIFY(at != std::string::npos);
        const std::string node = dot.substr(at, dot.find('\n', at) - at);
        QVERIFY(node.find("color=\"#d00000\", penwidth=4") != std::string::npos);
        QVERIFY2(node.find("unknown operation kind &#39;frobnicate&#39;") != std::string::npos, node.c_str());
        // It has no projection table; the resolvable one still does.
        QCOMPARE(count_of(dot, "shape=component"), 1);
        QVERIFY(render_dot(dot, "svg").has_value());
    }

    void shardsAreNotesInACluster() {
        Graph g = mlp_graph();
        Operation fc = *g.find_op(OpId("fc1"));
        fc.shards = {Shard{ShardId("s0"), ZRange({0, 0}, {2, 3}), "gpu0", {}, {}},
                     Shard{ShardId("s1"), ZRange({2, 0}, {4, 3}), "", {}, {}}};
        g.put_op(fc);
        const std::string dot = to_dot(g, OpLibrary::standard());
        QCOMPARE(count_of(dot, "shape=note"), 2);
        const size_t cluster = dot.find("subgraph \"cluster_op_fc1\" {");
        QVERIFY(cluster != std::string::npos);
        QVERIFY(dot.find("dashed,bold,rounded", cluster) != std::string::npos);
        QVERIFY(dot.find("\"op_fc1\" [shape=tab", cluster) != std::string::npos);
        QVERIFY(dot.find(">[0:2, 0:3]<") != std::string::npos);
        QVERIFY(dot.find(">gpu0<") != std::string::npos);
        QVERIFY(dot.find("<I>unplaced</I>") != std::string::npos);
        // Derived selections: shard s1 reads rows 2..4 of x and writes rows 2..4 of h.
        QVERIFY2(dot.find(">x [2:4, 0:8]<") != std::string::npos, dot.c_str());
        QVERIFY(dot.find(">h [2:4, 0:3]<") != std::string::npos);
        const auto svg = render_dot(dot, "svg");
        QVERIFY(svg.has_value());
        QCOMPARE(svg_node_groups(*svg), 9);

        DrawOptions hidden;
        hidden.show_shards = false;
        const std::string plain = to_dot(g, OpLibrary::standard(), hidden);
        QCOMPARE(count_of(plain, "shape=note"), 0);
        QVERIFY(plain.find("cluster_") == std::string::npos);
    }

    void svgIsXmlWithOneGroupPerNode_data() {
        QTest::addColumn<int>("layers");
        QTest::newRow("1 layer") << 1;
        QTest::newRow("5 layers") << 5;
    }
    void svgIsXmlWithOneGroupPerNode() {
        QFETCH(int, layers);
        const Graph g = chain_graph(layers);
        const auto svg = render_dot(to_dot(g, OpLibrary::standard()), "svg");
        QVERIFY2(svg.has_value(), svg ? "" : svg.error().c_str());
        QVERIFY(svg->find("<svg") != std::string::npos);
        QString error;
        QCOMPARE(svg_node_groups(*svg, &error), static_cast<int>(g.node_count()));
        QCOMPARE(count_of(*svg, "class=\"edge\""), 5 * layers);
    }

    void pngHasSignature() {
        const auto png = render_dot(to_dot(mlp_graph(), OpLibrary::standard()), "png");
        QVERIFY2(png.has_value(), png ? "" : png.error().c_str());
        QVERIFY(png->size() > 1000);
        QCOMPARE(png->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    }

    void laidOutDotHasPositions() {
        const auto laid = render_dot("digraph { a -> b }", "dot");
        QVERIFY(laid.has_value());
        QVERIFY(laid->find("pos=") != std::string::npos);
        QVERIFY(laid->find("bb=") != std::string::npos);
    }

    void badDotIsAnError_data() {
        QTest::addColumn<QString>("dot");
        QTest::newRow("unterminated") << "digraph { a -> ";
        QTest::newRow("garbage") << "this is not dot";
        QTest::newRow("empty") << "";
        QTest::newRow("bad html") << "digraph { a [label=<<TABLE><TR>>]; }";
    }
    void badDotIsAnError() {
        QFETCH(QString, dot);
        const auto result = render_dot(dot.toStdString(), "svg");
        if (dot.contains("TABLE")) {
            // Graphviz falls back to a plain label for broken HTML: still a drawing.
            QVERIFY(result.has_value() || !result.error().empty());
        } else {
            QVERIFY(!result.has_value());
            QVERIFY2(result.error().find("Graphviz could not read the DOT text") == 0, result.error().c_str());
        }
        // Graphviz's parser recovers: the next good graph renders.
        const auto good = render_dot("digraph { a -> b }", "svg");
        QVERIFY2(good.has_value(), good ? "" : good.error().c_str());
        QCOMPARE(svg_node_groups(*good), 2);
    }

    void syntaxErrorNamesTheLine() {
        const auto result = render_dot("digraph {\n a -> b\n c -> -> d\n}", "svg");
        QVERIFY(!result.has_value());
        QVERIFY2(result.error().find("line 3") != std::string::npos, result.error().c_str());
    }

    void unknownFormatIsAnError() {
        const auto result = render_dot("digraph { a -> b }", "no-such-format");
        QVERIFY(!result.has_value());
        QVERIFY2(result.error().find("cannot render format 'no-such-format'") != std::string::npos,
                 result.error().c_str());
        QVERIFY(render_dot("digraph { a -> b }", "svg").has_value());
    }

    void layoutHasOneBoxPerNode() {
        const Graph g = chain_graph(3);
        const auto layout = layout_graph(g);
        QVERIFY2(layout.has_value(), layout ? "" : layout.error().c_str());
        QCOMPARE(layout->nodes.size(), g.node_count());
        QCOMPARE(layout->edges.size(), size_t{15});
        std::set<std::string> ids;
        for (const NodeBox &n : layout->nodes) ids.insert(n.id);
        QCOMPARE(ids.size(), g.node_count());
        QVERIFY(ids.count("x0") && ids.count("fc2") && ids.count("relu2") && ids.count("x3"));
        for (size_t i = 0; i < layout->nodes.size(); ++i) {
            const NodeBox &a = layout->nodes[i];
            QVERIFY(a.width > 0 && a.height > 0);
            QVERIFY(a.x - a.width / 2 >= -0.5 && a.x + a.width / 2 <= layout->width + 0.5);
            QVERIFY(a.y - a.height / 2 >= -0.5 && a.y + a.height / 2 <= layout->height + 0.5);
            for (size_t j = i + 1; j < layout->nodes.size(); ++j) {
                const NodeBox &b = layout->nodes[j];
                const bool apart = std::abs(a.x - b.x) >= (a.width + b.width) / 2 ||
                                   std::abs(a.y - b.y) >= (a.height + b.height) / 2;
                QVERIFY2(apart, (a.id + " overlaps " + b.id).c_str());
            }
        }
        // y grows downward: data flows from the top.
        auto box = [&](const std::string &id) {
            for (const NodeBox &n : layout->nodes)
                if (n.id == id) return n;
            return NodeBox{};
        };
        QVERIFY(box("x0").y < box("fc0").y);
        QVERIFY(box("fc0").y < box("h0").y);
        QVERIFY(box("relu2").y < box("x3").y);
        // Edges run between the right nodes, as splines of 3n+1 control points
        // starting near the tail and ending near the head.
        for (const EdgePath &e : layout->edges) {
            QVERIFY(e.points.size() >= 4);
            QCOMPARE(e.points.size() % 3, size_t{1});
            const NodeBox from = box(e.from), to = box(e.to);
            QVERIFY(std::abs(e.points.front().second - from.y) <= from.height / 2 + 1);
            QVERIFY(std::abs(e.points.back().second - to.y) <= to.height / 2 + 1);
        }
    }

    void layoutSizesFollowLabels() {
        Graph g;
        g.put_tensor(make_tensor("a", {2}, TensorRole::input));
        g.put_tensor(make_tensor("b", {2}, TensorRole::input, "a rather long tensor name for a wide box"));
        const auto layout = layout_graph(g);
        QVERIFY(layout.has_value());
        QCOMPARE(layout->nodes.size(), size_t{2});
        QVERIFY(layout->nodes[1].width > 2 * layout->nodes[0].width);
    }

    void layoutOfEmptyGraph() {
        const auto layout = layout_graph(Graph{});
        QVERIFY(layout.has_value());
        QVERIFY(layout->nodes.empty());
    }

    void layoutCancelled_data() {
        QTest::addColumn<int>("allowed_polls");
        QTest::newRow("before building") << 0;
        QTest::newRow("after building") << 1;
        QTest::newRow("after layout") << 2;
    }
    void layoutCancelled() {
        QFETCH(int, allowed_polls);
        int polls = 0;
        const auto layout = layout_graph(chain_graph(4), [&] { return polls++ >= allowed_polls; });
        QVERIFY(!layout.has_value());
        QCOMPARE(layout.error(), std::string("cancelled"));
        QCOMPARE(polls, allowed_polls + 1);
        // Nothing is left locked or half-built.
        QVERIFY(layout_graph(chain_graph(1)).has_value());
    }

    void layoutOfSeveralComponents() {
        const Graph g = three_chains_and_a_loner();
        const auto layout = layout_graph(g);
        QVERIFY2(layout.has_value(), layout ? "" : layout.error().c_str());
        const std::string problem = layout_problem(g, *layout, 30);
        QVERIFY2(problem.empty(), problem.c_str());
        // Each component's bounding box is apart from the others'.
        struct Extent {
            double left = 1e18, top = 1e18, right = -1e18, bottom = -1e18;
        };
        std::map<std::string, Extent> extents;
        for (const NodeBox &n : layout->nodes) {
            Extent &e = extents[n.id == "loner" ? n.id : n.id.substr(0, 2)];
            e.left = std::min(e.left, n.x - n.width / 2);
            e.right = std::max(e.right, n.x + n.width / 2);
            e.top = std::min(e.top, n.y - n.height / 2);
            e.bottom = std::max(e.bottom, n.y + n.height / 2);
        }
        QCOMPARE(extents.size(), size_t{4});
        for (auto a = extents.begin(); a != extents.end(); ++a)
            for (auto b = std::next(a); b != extents.end(); ++b) {
                const bool apart = a->second.right <= b->second.left || b->second.right <= a->second.left ||
                                   a->second.bottom <= b->second.top || b->second.bottom <= a->second.top;
                QVERIFY2(apart, (a->first + " and " + b->first + " overlap").c_str());
            }
        // Within a component data still flows downward, edges included.
        QVERIFY(box_of(*layout, "c_x0")->y < box_of(*layout, "c_fc0")->y);
        QVERIFY(box_of(*layout, "c_relu1")->y < box_of(*layout, "c_x2")->y);
    }

    void layoutCancelledBetweenComponents_data() {
        QTest::addColumn<int>("allowed_polls");
        // Polls: before anything, then after building and after laying out each
        // component.
        QTest::newRow("after the first component") << 3;
        QTest::newRow("after building the second") << 4;
        QTest::newRow("after the second component") << 5;
    }
    void layoutCancelledBetweenComponents() {
        QFETCH(int, allowed_polls);
        int polls = 0;
        const auto layout = layout_graph(three_chains_and_a_loner(), [&] { return polls++ >= allowed_polls; });
        QVERIFY(!layout.has_value());
        QCOMPARE(layout.error(), std::string("cancelled"));
        QCOMPARE(polls, allowed_polls + 1);
        // Never cancelled: every component is polled around.
        polls = 0;
        QVERIFY(layout_graph(three_chains_and_a_loner(), [&] { return ++polls < 0; }).has_value());
        QCOMPARE(polls, 1 + 2 * 4);
    }

    void bigComponentLaidOutInSegments_data() {
        QTest::addColumn<bool>("shared");
        QTest::newRow("chain") << false;
        // One tensor read by every relu: no tensor separates the chain, so the
        // segments are cut with that tensor's edges jumping over the cuts.
        QTest::newRow("chain with a shared tensor") << true;
    }
    void bigComponentLaidOutInSegments() {
        QFETCH(bool, shared);
        constexpr int layers = 300;  // 1,501 nodes: above the size at which components are cut
        Graph g = chain_graph(layers);
        size_t edges = 5 * layers;
        if (shared) {
            const Tensor mask = make_tensor("mask", {8, 16}, TensorRole::input);
            g.put_tensor(mask);
            for (int l = 0; l < layers; ++l) {
                Operation act = *g.find_op(OpId("relu" + std::to_string(l)));
                act.inputs.push_back(port("mask", mask));
                g.put_op(act);
                ++edges;
            }
        }
        QElapsedTimer timer;
        timer.start();
        const auto layout = layout_graph(g);
        QVERIFY2(layout.has_value(), layout ? "" : layout.error().c_str());
        const std::string problem = layout_problem(g, *layout, edges);
        QVERIFY2(problem.empty(), problem.c_str());
        // Data flows downward along the whole chain, across the segments' seams.
        for (int l = 0; l < layers; ++l) {
            const std::string n = std::to_string(l);
            const double x = box_of(*layout, "x" + n)->y, fc = box_of(*layout, "fc" + n)->y,
                         h = box_of(*layout, "h" + n)->y, relu = box_of(*layout, "relu" + n)->y,
                         next = box_of(*layout, "x" + std::to_string(l + 1))->y;
            QVERIFY2(x < fc && fc < h && h < relu && relu < next, ("layer " + n).c_str());
        }
        // Each edge's spline runs downward from tail to head (not through other
        // segments backwards).
        for (const EdgePath &e : layout->edges)
            if (e.from != "mask") QVERIFY(e.points.front().second < e.points.back().second);
        qInfo("%zu nodes laid out in %lld ms", g.node_count(), static_cast<long long>(timer.elapsed()));
    }

    void concurrentLayoutIsSafe() {
        const Graph g = chain_graph(10);
        const auto reference = layout_graph(g);
        QVERIFY(reference.has_value());
        std::atomic<int> failures{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int round = 0; round < 3; ++round) {
                    const auto layout = layout_graph(g);
                    if (!layout || layout->nodes.size() != reference->nodes.size()) {
                        ++failures;
                        continue;
                    }
                    for (size_t i = 0; i < layout->nodes.size(); ++i)
                        if (layout->nodes[i].x != reference->nodes[i].x || layout->nodes[i].y != reference->nodes[i].y)
                            ++failures;
                    // Mix in rendering, which shares the Graphviz context.
                    const auto svg = render_dot(t % 2 ? "digraph { a -> b }" : "digraph { a -> ", "svg");
                    if (svg.has_value() != (t % 2 == 1)) ++failures;
                }
            });
        for (std::thread &th : threads) th.join();
        QCOMPARE(failures.load(), 0);
    }
};

QTEST_GUILESS_MAIN(TestExport)
#include "test_export.moc"
