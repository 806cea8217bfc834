// Foundation benchmark: how long validation, Graphviz layout and SVG export take
// on synthetic graphs, each against a named baseline measured in the same run
// (DESIGN.md §11). A program, not a test: it prints a table and exits 0.
//
//   bench_foundation [--runs N] [--ops N] [--only validate|layout|export] [--max-nodes N]
//                    [--project PATH] [--svg DIR]
//
// Validation runs on a chain of `linear` + `relu` layers over [64, 256]
// activations, each linear carrying a 2×2 grid of shards so that the shard checks
// have work to do. Layout runs on three kinds of graph:
//   * a ladder: the same layers with a residual `add` around each, whose skip
//     edges give dot crossings to minimise (one connected component);
//   * independent residual MLP chains, as tests/bench/bench_canvas.cpp builds
//     them (25 layers each, 8 nodes per layer: 2,010 / 5,025 / 8,040 nodes in
//     10 / 25 / 40 components);
//   * a GPT-2 stack: projects/gpt2_block.tapestry.json replicated as a chain (each
//     block's output is the next block's input), one component of ~2,000 / ~5,000
//     nodes, the shape of a real imported model.
// --max-nodes skips the layout rows of bigger graphs (before the layout work a
// single 5,000-node component took many seconds). Each layout row also reports
// its quality: edge crossings, the mean horizontal run of an edge and the
// drawing's size; --svg writes each layout there as SVG, to look at.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "block_stack.h"
#include "graph/validate.h"
#include "io/graphviz.h"
#include "io/project_file.h"
#include "ops/library.h"

using namespace tapestry;
using namespace tapestry::testing;

namespace {

// `layers` linear+relu pairs: 2·layers operations and 3·layers + 1 tensors; with
// `residual`, y = relu(linear(x)) + x: 3·layers operations, 4·layers + 1 tensors.
Graph chain(int layers, bool shards, bool residual = false) {
    constexpr Coord rows = 64, width = 256;
    Graph g;
    g.name = "chain of " + std::to_string(layers) + " layers";
    Tensor x = make_tensor("x0", {rows, width}, TensorRole::input);
    g.put_tensor(x);
    for (int l = 0; l < layers; ++l) {
        const std::string n = std::to_string(l);
        const Tensor w = make_tensor("w" + n, {width, width}, TensorRole::parameter);
        const Tensor h = make_tensor("h" + n, {rows, width}, TensorRole::intermediate);
        const Tensor y = make_tensor("x" + std::to_string(l + 1), {rows, width},
                                     l + 1 == layers ? TensorRole::output : TensorRole::intermediate);
        g.put_tensor(w);
        g.put_tensor(h);
        g.put_tensor(y);
        Operation fc;
        fc.id = OpId("fc" + n);
        fc.name = fc.id.value;
        fc.kind = "linear";
        fc.inputs = {port("x", x), port("w", w)};
        fc.outputs = {port("y", h)};
        if (shards) {
            int s = 0;
            for (const ZRange &r : ZRange::of_shape({rows, width}).grid({2, 2}))
                fc.shards.push_back(Shard{ShardId(fc.id.value + ".s" + std::to_string(s++)), r, "", {}, {}});
        }
        g.put_op(fc);
        Operation act;
        act.id = OpId("relu" + n);
        act.name = act.id.value;
        act.kind = "relu";
        act.inputs = {port("x", h)};
        if (!residual) {
            act.outputs = {port("y", y)};
            g.put_op(act);
            x = y;
            continue;
        }
        const Tensor r = make_tensor("r" + n, {rows, width}, TensorRole::intermediate);
        g.put_tensor(r);
        act.outputs = {port("y", r)};
        g.put_op(act);
        Operation add;
        add.id = OpId("add" + n);
        add.name = add.id.value;
        add.kind = "add";
        add.inputs = {port("a", r), port("b", x)};
        add.outputs = {port("y", y)};
        g.put_op(add);
        x = y;
    }
    return g;
}

// `chains` independent residual MLP chains of `layers` layers (per layer:
// linear(x, w, b) → gelu → add(·, x)): chains·(8·layers + 1) nodes. The same
// graphs as bench_canvas's.
Graph residual_chains(int chains, int layers, bool joined = false) {
    constexpr Coord rows = 64, width = 256;
    Graph g;
    g.name = std::to_string(chains) + " residual chains of " + std::to_string(layers) + " layers";
    std::vector<Tensor> outputs;
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
        outputs.push_back(x);
    }
    if (joined) {  // one operation reading every chain's output: one component that cannot be cut
        const Tensor y = make_tensor("joined", {rows, width * chains}, TensorRole::output);
        g.put_tensor(y);
        Operation join;
        join.id = OpId("join");
        join.name = "join";
        join.kind = "concat";
        PortBinding in{"x", {}};
        for (const Tensor &t : outputs) in.selections.push_back(TensorSelection{t.id, t.range});
        join.inputs = {in};
        join.outputs = {port("y", y)};
        g.put_op(join);
        g.name += ", joined";
    }
    return g;
}

// ---- layout quality ---------------------------------------------------------

// Edge crossings of a layout: pairs of edges (not sharing a node) whose splines,
// sampled as polylines, intersect; each pair counted once. A uniform grid keeps
// it near-linear for drawings of thousands of edges.
size_t count_crossings(const Layout &layout) {
    struct Segment {
        double x0, y0, x1, y1;
        size_t edge;
    };
    std::vector<Segment> segments;
    for (size_t e = 0; e < layout.edges.size(); ++e) {
        const auto &p = layout.edges[e].points;
        for (size_t i = 0; i + 3 < p.size(); i += 3) {
            double px = p[i].first, py = p[i].second;
            for (int k = 1; k <= 8; ++k) {
                const double t = k / 8.0, u = 1 - t;
                const double x = u * u * u * p[i].first + 3 * u * u * t * p[i + 1].first +
                                 3 * u * t * t * p[i + 2].first + t * t * t * p[i + 3].first;
                const double y = u * u * u * p[i].second + 3 * u * u * t * p[i + 1].second +
                                 3 * u * t * t * p[i + 2].second + t * t * t * p[i + 3].second;
                segments.push_back({px, py, x, y, e});
                px = x;
                py = y;
            }
        }
    }
    constexpr double cell = 64.0;
    std::unordered_map<long long, std::vector<size_t>> grid;
    auto key = [](long long cx, long long cy) { return cx * 1000003LL + cy; };
    for (size_t s = 0; s < segments.size(); ++s) {
        const Segment &g = segments[s];
        const auto cx0 = static_cast<long long>(std::floor(std::min(g.x0, g.x1) / cell));
        const auto cx1 = static_cast<long long>(std::floor(std::max(g.x0, g.x1) / cell));
        const auto cy0 = static_cast<long long>(std::floor(std::min(g.y0, g.y1) / cell));
        const auto cy1 = static_cast<long long>(std::floor(std::max(g.y0, g.y1) / cell));
        for (long long cx = cx0; cx <= cx1; ++cx)
            for (long long cy = cy0; cy <= cy1; ++cy) grid[key(cx, cy)].push_back(s);
    }
    auto orient = [](double ax, double ay, double bx, double by, double cx, double cy) {
        const double v = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
        return (v > 1e-9) - (v < -1e-9);
    };
    auto share_node = [&](size_t a, size_t b) {
        const EdgePath &p = layout.edges[a], &q = layout.edges[b];
        return p.from == q.from || p.from == q.to || p.to == q.from || p.to == q.to;
    };
    std::set<std::pair<size_t, size_t>> crossing;
    for (const auto &[k, list] : grid)
        for (size_t i = 0; i < list.size(); ++i)
            for (size_t j = i + 1; j < list.size(); ++j) {
                const Segment &a = segments[list[i]], &b = segments[list[j]];
                if (a.edge == b.edge) continue;
                const auto pair = std::minmax(a.edge, b.edge);
                if (crossing.count(pair) || share_node(a.edge, b.edge)) continue;
                if (orient(a.x0, a.y0, a.x1, a.y1, b.x0, b.y0) * orient(a.x0, a.y0, a.x1, a.y1, b.x1, b.y1) < 0 &&
                    orient(b.x0, b.y0, b.x1, b.y1, a.x0, a.y0) * orient(b.x0, b.y0, b.x1, b.y1, a.x1, a.y1) < 0)
                    crossing.insert(pair);
            }
    return crossing.size();
}

// Mean horizontal run of an edge (|x of head − x of tail|), in points: dot's
// coordinate phase minimises it, so it shows what capping that phase costs.
double mean_edge_run(const Layout &layout) {
    std::unordered_map<std::string, double> x;
    for (const NodeBox &n : layout.nodes) x[n.id] = n.x;
    double sum = 0;
    for (const EdgePath &e : layout.edges) sum += std::abs(x[e.to] - x[e.from]);
    return layout.edges.empty() ? 0.0 : sum / static_cast<double>(layout.edges.size());
}

// The layout as SVG (boxes and splines), to look at.
void write_svg(const Layout &layout, const std::filesystem::path &path) {
    std::ofstream out(path);
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << layout.width << "\" height=\"" << layout.height
        << "\" viewBox=\"0 0 " << layout.width << " " << layout.height << "\">\n";
    out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    for (const EdgePath &e : layout.edges) {
        if (e.points.size() < 4) continue;
        out << "<path fill=\"none\" stroke=\"#336\" stroke-width=\"1.5\" d=\"M" << e.points[0].first << ","
            << e.points[0].second;
        for (size_t i = 1; i + 2 < e.points.size(); i += 3)
            out << " C" << e.points[i].first << "," << e.points[i].second << " " << e.points[i + 1].first << ","
                << e.points[i + 1].second << " " << e.points[i + 2].first << "," << e.points[i + 2].second;
        out << "\"/>\n";
    }
    for (const NodeBox &n : layout.nodes) {
        std::string id;  // XML-safe
        for (char c : n.id) id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ? c : '-';
        out << "<rect id=\"" << id << "\" x=\"" << n.x - n.width / 2 << "\" y=\"" << n.y - n.height / 2 << "\" width=\"" << n.width
            << "\" height=\"" << n.height << "\" fill=\"#e8eef8\" stroke=\"#446\"/>\n";
    }
    out << "</svg>\n";
}

// CPU time of this process, in seconds: on a shared machine wall time includes
// waiting for a core, so both are printed.
double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double last_cpu_median = 0;  // CPU-time median of the last median_seconds() call

// Median wall time of `runs` calls, in seconds (CPU-time median in last_cpu_median).
double median_seconds(int runs, const std::function<void()> &f) {
    std::vector<double> times, cpu;
    for (int i = 0; i < runs; ++i) {
        const double cpu_start = cpu_seconds();
        const auto start = std::chrono::steady_clock::now();
        f();
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        cpu.push_back(cpu_seconds() - cpu_start);
    }
    std::sort(times.begin(), times.end());
    std::sort(cpu.begin(), cpu.end());
    last_cpu_median = cpu[cpu.size() / 2];
    return times[times.size() / 2];
}

void fail(const std::string &what) {
    std::fprintf(stderr, "bench_foundation: %s\n", what.c_str());
    std::exit(1);
}

void row(const std::string &what, const std::string &size, double seconds, double cpu, const std::string &note) {
    std::printf("  %-38s %-24s %9.1f ms %9.1f ms   %s\n", what.c_str(), size.c_str(), seconds * 1e3, cpu * 1e3,
                note.c_str());
}

}  // namespace

int main(int argc, char **argv) {
    int runs = 5;
    int validation_ops = 10000;
    std::string only, project, svg_dir;
    size_t max_nodes = 100000;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--ops") && i + 1 < argc) validation_ops = std::max(2, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!std::strcmp(argv[i], "--max-nodes") && i + 1 < argc)
            max_nodes = static_cast<size_t>(std::max(0, std::atoi(argv[++i])));
        else if (!std::strcmp(argv[i], "--project") && i + 1 < argc) project = argv[++i];
        else if (!std::strcmp(argv[i], "--svg") && i + 1 < argc) svg_dir = argv[++i];
        else {
            std::fprintf(stderr,
                         "usage: bench_foundation [--runs N] [--ops N] [--only validate|layout|export] "
                         "[--max-nodes N] [--project PATH] [--svg DIR]\n");
            return 2;
        }
    }
    if (!only.empty() && only != "validate" && only != "layout" && only != "export") {
        std::fprintf(stderr, "bench_foundation: --only takes validate, layout or export\n");
        return 2;
    }
    auto section = [&](const char *name) { return only.empty() || only == name; };
    const OpLibrary &lib = OpLibrary::standard();
    char buf[128];

    std::printf("Tapestry foundation benchmark (medians of %d runs; wall and process CPU time)\n\n", runs);
    std::printf("  %-38s %-24s %12s %12s   %s\n", "what", "graph", "wall", "cpu", "vs baseline (cpu)");

    // ---- validation ----------------------------------------------------------
    if (section("validate")) {
        const Graph g = chain(validation_ops / 2, true);
        std::snprintf(buf, sizeof buf, "%zu ops, %zu shards", g.operations().size(),
                      static_cast<size_t>(validation_ops / 2) * 4);
        ValidationOptions structural;
        structural.check_shards = false;
        structural.check_injectivity = false;
        size_t issues = 0;
        // Baseline: the structural pass (references, shapes, library agreement, cycles).
        const double base = median_seconds(runs, [&] { issues += validate(g, lib, structural).size(); });
        const double base_cpu = last_cpu_median;
        const double full = median_seconds(runs, [&] { issues += validate(g, lib).size(); });
        const double full_cpu = last_cpu_median;
        if (issues != 0) fail("the synthetic graph should be valid, got " + std::to_string(issues) + " issues");
        char note[64];
        std::snprintf(note, sizeof note, "%.1f us/op", base_cpu / static_cast<double>(g.operations().size()) * 1e6);
        row("validate, structural only [baseline]", buf, base, base_cpu, note);
        std::snprintf(note, sizeof note, "%.2fx baseline, %.1f us/op", full_cpu / base_cpu,
                      full_cpu / static_cast<double>(g.operations().size()) * 1e6);
        row("validate, full (shards, injectivity)", buf, full, full_cpu, note);
    }

    // ---- layout --------------------------------------------------------------
    if (section("layout")) {
        auto layout_row = [&](const std::string &what, const Graph &g) {
            if (g.node_count() > max_nodes) {
                std::printf("  %-38s %-24s   skipped (--max-nodes %zu)\n", what.c_str(),
                            (std::to_string(g.node_count()) + " nodes").c_str(), max_nodes);
                return;
            }
            Layout last;
            const int layout_runs = g.node_count() > 1000 ? std::max(1, runs / 2) : runs;
            const double t = median_seconds(layout_runs, [&] {
                auto l = layout_graph(g);
                if (!l) fail("layout failed: " + l.error());
                last = std::move(*l);
            });
            std::snprintf(buf, sizeof buf, "%zu nodes, %zu edges", g.node_count(), last.edges.size());
            if (last.nodes.size() != g.node_count()) fail("layout lost nodes");
            char note[160];
            std::snprintf(note, sizeof note, "%.3f ms/node; %zu crossings, edge run %.0f pt, %.0fx%.0f pt",
                          last_cpu_median * 1e3 / static_cast<double>(g.node_count()), count_crossings(last),
                          mean_edge_run(last), last.width, last.height);
            row(what, buf, t, last_cpu_median, note);
            if (!svg_dir.empty()) {
                std::string file;
                for (char c : what + " " + std::to_string(g.node_count()))
                    file += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                write_svg(last, std::filesystem::path(svg_dir) / (file + ".svg"));
            }
        };
        for (int nodes : {500, 2000}) layout_row("layout_graph (dot), residual ladder", chain(nodes / 7, false, true));
        for (int chains : {10, 25, 40})
            layout_row("layout_graph, " + std::to_string(chains) + " residual chains", residual_chains(chains, 25));
        for (int chains : {10, 25})
            layout_row("layout_graph, " + std::to_string(chains) + " chains, joined", residual_chains(chains, 25, true));
        const std::filesystem::path path = find_block_project(project);
        LoadResult block = load_project(path);
        if (!block.ok()) fail("cannot load " + path.string() + " (--project PATH)");
        for (int blocks : {52, 132})
            layout_row("layout_graph, GPT-2 stack of " + std::to_string(blocks),
                       stack_blocks(block.graph, "x", "y", blocks));
        for (int blocks : {52, 132})
            layout_row("layout_graph, GPT-2 x" + std::to_string(blocks) + ", shared mask",
                       stack_blocks(block.graph, "x", "y", blocks, "attention"));
    }

    // ---- export --------------------------------------------------------------
    if (section("export")) {
        const Graph g = chain(100, false);
        std::snprintf(buf, sizeof buf, "%zu nodes", g.node_count());
        std::string dot;
        const double text = median_seconds(runs, [&] { dot = to_dot(g, lib); });
        const double text_cpu = last_cpu_median;
        size_t bytes = 0;
        const double svg = median_seconds(std::max(1, runs / 2), [&] {
            auto r = render_dot(to_dot(g, lib), "svg");
            if (!r) fail("render failed: " + r.error());
            bytes = r->size();
        });
        const double svg_cpu = last_cpu_median;
        row("to_dot [baseline]", buf, text, text_cpu, std::to_string(dot.size() / 1024) + " KiB of DOT");
        char note[96];
        std::snprintf(note, sizeof note, "%.0fx baseline, %zu KiB of SVG", svg_cpu / text_cpu, bytes / 1024);
        row("to_dot + render svg", buf, svg, svg_cpu, note);
    }
    return 0;
}
