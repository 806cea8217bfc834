// Canvas benchmark (issue 4, DESIGN.md §11): frame times of the studio canvas
// while panning and zooming 2,000- and 8,000-node graphs, the time to open a
// 5,000-node project the way the studio does, and the minimap's render time.
// A program, not a test: it prints a table with ratios against baselines
// measured in the same run and exits 0.
//
//   bench_canvas [--frames N] [--skip-8000] [--skip-open]
//
// Graphs: side-by-side residual MLP chains (per layer: linear(x, w, b) → gelu →
// add(·, x)), 8 nodes per layer, so Graphviz has long ranks and skip edges.
// A frame is a synchronous full-viewport paint of a 1600×1000 GraphView
// (viewport()->repaint() into the offscreen raster backing store): what a zoom
// step costs, and an upper bound for a pan step (Qt blits the scrolled pixels
// and paints only the exposed strip when it can). Baselines: the same frame loop
// over an empty scene of the same scene rectangle, and the 60 Hz budget.
#include <QApplication>
#include <QElapsedTimer>
#include <QGraphicsScene>
#include <QImage>
#include <QPainter>
#include <QScrollBar>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/validate.h"
#include "io/graphviz.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "views/graph_scene.h"
#include "views/graph_view.h"
#include "views/minimap.h"

using namespace tapestry;
using namespace tapestry::views;

namespace {

constexpr double kBudgetMs = 1000.0 / 60.0;
constexpr int kViewWidth = 1600, kViewHeight = 1000;

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// CPU time of the calling (GUI) thread in ms: on a shared machine wall time also
// counts waiting for a core, so frames report both.
double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

[[noreturn]] void fail(const std::string &what) {
    std::fprintf(stderr, "bench_canvas: %s\n", what.c_str());
    std::exit(1);
}

Tensor make_tensor(const std::string &id, std::initializer_list<Coord> shape, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    return t;
}

PortBinding port(const std::string &name, const Tensor &t) {
    return PortBinding{name, {TensorSelection{t.id, t.range}}};
}

// `chains` independent residual MLP chains of `layers` layers: chains·(8·layers + 1) nodes.
Graph residual_chains(int chains, int layers) {
    constexpr Coord rows = 64, width = 256;
    Graph g;
    g.name = std::to_string(chains) + " residual chains of " + std::to_string(layers) + " layers";
    for (int c = 0; c < chains; ++c) {
        const std::string p = "c" + std::to_string(c) + "_";
        Tensor x = make_tensor(p + "x0", {rows, width}, TensorRole::input);
        g.put_tensor(x);
        for (int l = 0; l < layers; ++l) {
            const std::string n = p + std::to_string(l);
            const Tensor w = make_tensor(n + "_w", {width, width}, TensorRole::parameter);
            const Tensor b = make_tensor(n + "_b", {width}, TensorRole::parameter);
            const Tensor h = make_tensor(n + "_h", {rows, width}, TensorRole::intermediate);
            const Tensor a = make_tensor(n + "_a", {rows, width}, TensorRole::intermediate);
            const Tensor r =
                make_tensor(n + "_r", {rows, width}, l + 1 == layers ? TensorRole::output : TensorRole::intermediate);
            for (const Tensor *t : {&w, &b, &h, &a, &r}) g.put_tensor(*t);
            Operation fc;
            fc.id = OpId(n + "_fc");
            fc.kind = "linear";
            fc.inputs = {port("x", x), port("w", w), port("bias", b)};
            fc.outputs = {port("y", h)};
            Operation act;
            act.id = OpId(n + "_gelu");
            act.kind = "gelu";
            act.inputs = {port("x", h)};
            act.outputs = {port("y", a)};
            Operation add;
            add.id = OpId(n + "_add");
            add.kind = "add";
            add.inputs = {port("a", a), port("b", x)};
            add.outputs = {port("y", r)};
            for (Operation *op : {&fc, &act, &add}) {
                op->name = op->id.value;
                g.put_op(*op);
            }
            x = r;
        }
    }
    return g;
}

struct Stats {
    double median = 0, p95 = 0, max = 0;
    double cpu_median = 0;  // thread CPU time
    int frames = 0;
};

struct Frames {
    std::vector<double> wall, cpu;
};

Stats stats_of(std::vector<double> v) {
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.frames = static_cast<int>(v.size());
    s.median = v[v.size() / 2];
    s.p95 = v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(0.95 * static_cast<double>(v.size()))) - 1)];
    s.max = v.back();
    return s;
}

Stats stats_of(Frames f) {
    Stats s = stats_of(std::move(f.wall));
    std::sort(f.cpu.begin(), f.cpu.end());
    if (!f.cpu.empty()) s.cpu_median = f.cpu[f.cpu.size() / 2];
    return s;
}

double fit_scale(const QRectF &graph) {
    return std::min(kViewWidth / graph.width(), kViewHeight / graph.height()) * 0.95;
}

void set_zoom(GraphView &view, double scale, const QPointF &centre) {
    view.setTransform(QTransform::fromScale(scale, scale));
    view.centerOn(centre);
}

void paint_frame(GraphView &view, Frames *frames = nullptr) {
    const double cpu = thread_cpu_ms();
    const auto start = Clock::now();
    view.viewport()->repaint();
    if (!frames) return;
    frames->wall.push_back(ms_since(start));
    frames->cpu.push_back(thread_cpu_ms() - cpu);
}

// Pans around `centre` at `scale`: a triangle wave of steps of (40, 25) pixels.
Stats pan_loop(GraphView &view, double scale, const QPointF &centre, int frames) {
    set_zoom(view, scale, centre);
    QCoreApplication::processEvents();
    paint_frame(view);  // warm caches (fonts, gradients)
    Frames times;
    int k = 0, dir = 1;
    for (int f = 0; f < frames; ++f) {
        view.horizontalScrollBar()->setValue(view.horizontalScrollBar()->value() + dir * 40);
        view.verticalScrollBar()->setValue(view.verticalScrollBar()->value() + dir * 25);
        k += dir;
        if (k == 10 || k == -10) dir = -dir;
        paint_frame(view, &times);
    }
    QCoreApplication::processEvents();
    return stats_of(times);
}

// Zooms from `from` to `to` and back in steps of GraphView::kZoomStep.
Stats zoom_loop(GraphView &view, double from, double to, const QPointF &centre) {
    std::vector<double> scales;
    for (double s = from; s < to; s *= GraphView::kZoomStep) scales.push_back(s);
    scales.push_back(to);
    for (size_t i = scales.size() - 1; i-- > 0;) scales.push_back(scales[i]);
    set_zoom(view, from, centre);
    paint_frame(view);
    Frames times;
    for (double s : scales) {
        set_zoom(view, s, centre);
        paint_frame(view, &times);
    }
    QCoreApplication::processEvents();
    return stats_of(times);
}

void print_header() {
    std::printf("  %-30s %6s %9s %9s %9s %9s %9s %9s\n", "frames of", "count", "median", "p95", "max", "cpu med",
                "vs empty", "p95/16.7");
}

void print_row(const std::string &what, const Stats &s, const Stats &base) {
    std::printf("  %-30s %6d %6.2f ms %6.2f ms %6.1f ms %6.2f ms %8.1fx %8.2fx\n", what.c_str(), s.frames, s.median,
                s.p95, s.max, s.cpu_median, base.median > 0 ? s.median / base.median : 0.0, s.p95 / kBudgetMs);
}

struct Built {
    Graph graph;
    Layout layout;
    double layout_ms = 0;
};

Built build(int chains, int layers) {
    Built b;
    b.graph = residual_chains(chains, layers);
    const auto start = Clock::now();
    auto layout = layout_graph(b.graph);
    b.layout_ms = ms_since(start);
    if (!layout) fail("layout failed: " + layout.error());
    if (layout->nodes.size() != b.graph.node_count()) fail("layout lost nodes");
    b.layout = std::move(*layout);
    return b;
}

void frame_benchmarks(const Built &b, int frames) {
    GraphScene scene;
    const auto build_start = Clock::now();
    scene.setGraph(b.graph, {});
    scene.setLayout(b.layout);
    const double scene_ms = ms_since(build_start);
    const QRectF graph = scene.graphBounds();

    QGraphicsScene empty;  // the baseline: nothing but the canvas background
    empty.setSceneRect(scene.sceneRect());

    GraphView view;
    view.resize(kViewWidth, kViewHeight);
    view.show();
    QCoreApplication::processEvents();
    if (view.viewport()->size() != QSize(kViewWidth, kViewHeight)) fail("the view did not get its size");

    const double fit = fit_scale(graph);
    std::printf(
        "\n%zu nodes, %zu edges (%s): layout_graph %.0f ms, scene build %.0f ms; graph %.0f×%.0f scene "
        "units, fit-all = %.1f %%\n",
        b.graph.node_count(), static_cast<size_t>(scene.edgeItems().size()), b.graph.name.c_str(), b.layout_ms,
        scene_ms, graph.width(), graph.height(), fit * 100);
    print_header();

    struct Level {
        const char *name;
        double scale;
    };
    const std::vector<Level> levels = {{"fit-all", fit}, {"25 %", 0.25}, {"100 %", 1.0}};
    // Pans start at the middle of the graph (fit-all) or near its top-left
    // quarter, where a zoomed-in user would be reading.
    const QPointF centre = graph.center();
    const QPointF reading = graph.topLeft() + QPointF(graph.width() / 4, graph.height() / 4);
    for (const Level &level : levels) {
        const QPointF at = level.scale == fit ? centre : reading;
        view.setScene(&empty);
        const Stats base = pan_loop(view, level.scale, at, frames);
        view.setScene(&scene);
        const Stats s = pan_loop(view, level.scale, at, frames);
        print_row(std::string("pan at ") + level.name + " [empty]", base, base);
        print_row(std::string("pan at ") + level.name, s, base);
    }
    view.setScene(&empty);
    const Stats zbase = zoom_loop(view, fit, 1.0, reading);
    view.setScene(&scene);
    const Stats z = zoom_loop(view, fit, 1.0, reading);
    print_row("zoom fit-all..100 % [empty]", zbase, zbase);
    print_row("zoom fit-all..100 %", z, zbase);
    view.setScene(nullptr);

    // The minimap: its cached overview (renderOverview) against letting the
    // scene paint itself at the same size (what a plain QGraphicsView minimap
    // would do on every frame).
    if (b.graph.node_count() >= 5000) {
        const QSize size(240, 160);
        QRectF source = graph;
        std::vector<double> overview, naive;
        for (int i = 0; i < 7; ++i) {
            auto start = Clock::now();
            const QImage img = Minimap::renderOverview(scene, source, size);
            overview.push_back(ms_since(start));
            if (img.isNull()) fail("empty overview");
            QImage plain(size, QImage::Format_ARGB32_Premultiplied);
            plain.fill(Qt::white);
            start = Clock::now();
            {
                QPainter p(&plain);
                p.setRenderHint(QPainter::Antialiasing);
                scene.render(&p, QRectF(QPointF(0, 0), QSizeF(size)), source);
            }
            naive.push_back(ms_since(start));
        }
        GraphView main;
        main.resize(kViewWidth, kViewHeight);
        main.setScene(&scene);
        main.show();
        Minimap minimap(&main);
        minimap.resize(size);
        minimap.show();
        QCoreApplication::processEvents();
        std::vector<double> frames_cached;
        for (int i = 0; i < 30; ++i) {
            main.horizontalScrollBar()->setValue(main.horizontalScrollBar()->value() + 40);
            const auto start = Clock::now();
            minimap.viewport()->repaint();
            frames_cached.push_back(ms_since(start));
        }
        // What-if for a low level of detail on the canvas itself: the same
        // overview drawing (one fill per node, one line per edge) at the full view
        // size, against the fit-all frames above.
        std::vector<double> view_sized;
        for (int i = 0; i < 7; ++i) {
            const auto start = Clock::now();
            const QImage img = Minimap::renderOverview(scene, graph, QSize(kViewWidth, kViewHeight));
            view_sized.push_back(ms_since(start));
        }
        const Stats o = stats_of(overview), n = stats_of(naive), f = stats_of(frames_cached);
        std::printf("  low-LOD what-if: renderOverview of the whole graph at %d×%d: %.2f ms median\n", kViewWidth,
                    kViewHeight, stats_of(view_sized).median);
        std::printf(
            "  minimap 240×160, %zu nodes: scene.render() [baseline] %.1f ms; renderOverview %.2f ms "
            "(%.1fx faster); a frame while panning (cached image + frame) %.2f ms median, %.2f ms p95; "
            "%d overview renders during %d pan frames\n",
            b.graph.node_count(), n.median, o.median, n.median / o.median, f.median, f.p95, minimap.renderCount(), 30);
    }
}

void open_benchmark(int chains, int layers) {
    const Graph g = residual_chains(chains, layers);
    const std::string text = serialize_project(g);
    const OpLibrary &lib = OpLibrary::standard();

    auto start = Clock::now();
    LoadResult loaded = parse_project(text, "synthetic.tapestry.json");
    const double parse_ms = ms_since(start);
    if (!loaded.ok()) fail("the synthetic project does not parse");

    start = Clock::now();
    const std::vector<Issue> issues = validate(loaded.graph, lib);
    const double validate_ms = ms_since(start);
    if (has_errors(issues)) fail("the synthetic project has validation errors");

    start = Clock::now();
    auto layout = layout_graph(loaded.graph);
    const double layout_ms = ms_since(start);
    if (!layout) fail("layout failed: " + layout.error());

    GraphScene scene;
    GraphView view;
    view.resize(kViewWidth, kViewHeight);
    view.setScene(&scene);
    view.show();
    QCoreApplication::processEvents();
    start = Clock::now();
    scene.setGraph(loaded.graph, issues);
    scene.setLayout(*layout);
    const double scene_ms = ms_since(start);
    start = Clock::now();
    view.showGraph();
    view.viewport()->repaint();
    const double first_frame_ms = ms_since(start);

    std::printf("\nOpening a %zu-node project (%zu KiB of JSON) as the studio does\n", g.node_count(),
                text.size() / 1024);
    std::printf("  %-44s %9.0f ms   worker thread (ProjectLoader)\n", "parse_project", parse_ms);
    std::printf("  %-44s %9.0f ms   worker thread (ProjectLoader)\n", "validate", validate_ms);
    std::printf("  %-44s %9.0f ms   worker thread (LayoutWorker)\n", "layout_graph", layout_ms);
    std::printf("  %-44s %9.0f ms   GUI thread\n", "scene build (setGraph + setLayout)", scene_ms);
    std::printf("  %-44s %9.0f ms   GUI thread\n", "first frame (showGraph + paint)", first_frame_ms);
    const double total = parse_ms + validate_ms + layout_ms + scene_ms + first_frame_ms;
    const double blocked = scene_ms + first_frame_ms;
    std::printf(
        "  total %.0f ms; GUI thread blocked %.0f ms in one stretch (%.1fx the 16.7 ms frame budget, "
        "%.0f %% of the total)\n",
        total, blocked, blocked / kBudgetMs, 100.0 * blocked / total);
}

}  // namespace

int main(int argc, char **argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    int frames = 60;
    bool skip_8000 = false, skip_open = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = std::max(5, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--skip-8000"))
            skip_8000 = true;
        else if (!std::strcmp(argv[i], "--skip-open"))
            skip_open = true;
        else {
            std::fprintf(stderr, "usage: bench_canvas [--frames N] [--skip-8000] [--skip-open]\n");
            return 2;
        }
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured
    QApplication app(argc, argv);
    std::printf("Tapestry canvas benchmark (%s platform, view %d×%d)\n", qPrintable(QApplication::platformName()),
                kViewWidth, kViewHeight);
    std::printf(
        "A frame = viewport()->repaint(), a synchronous full-viewport raster paint (wall time; 'cpu med'\n"
        "is the GUI thread's CPU time). Baselines: the same loop over an empty scene of the same size\n"
        "('vs empty' = median / empty median) and the 60 Hz budget of %.1f ms ('p95/16.7').\n",
        kBudgetMs);

    frame_benchmarks(build(10, 25), frames);                  // 2,010 nodes
    if (!skip_8000) frame_benchmarks(build(40, 25), frames);  // 8,040 nodes
    if (!skip_open) open_benchmark(25, 25);                   // 5,025 nodes
    return 0;
}
