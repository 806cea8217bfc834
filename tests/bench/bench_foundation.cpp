// Foundation benchmark: how long validation, Graphviz layout and SVG export take
// on synthetic graphs, each against a named baseline measured in the same run
// (DESIGN.md §11). A program, not a test: it prints a table and exits 0.
//
//   bench_foundation [--runs N] [--ops N]
//
// Validation runs on a chain of `linear` + `relu` layers over [64, 256]
// activations, each linear carrying a 2×2 grid of shards so that the shard checks
// have work to do. Layout runs on a ladder: the same layers with a residual `add`
// around each, whose skip edges give dot crossings to minimise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ctime>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/validate.h"
#include "io/graphviz.h"
#include "ops/library.h"

using namespace tapestry;

namespace {

Tensor make_tensor(const std::string &id, std::initializer_list<Coord> shape, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    return t;
}

PortBinding port(const std::string &name, const Tensor &t) { return PortBinding{name, {TensorSelection{t.id, t.range}}}; }

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
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--ops") && i + 1 < argc) validation_ops = std::max(2, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: bench_foundation [--runs N] [--ops N]\n");
            return 2;
        }
    }
    const OpLibrary &lib = OpLibrary::standard();
    char buf[128];

    std::printf("Tapestry foundation benchmark (medians of %d runs; wall and process CPU time)\n\n", runs);
    std::printf("  %-38s %-24s %12s %12s   %s\n", "what", "graph", "wall", "cpu", "vs baseline (cpu)");

    // ---- validation ----------------------------------------------------------
    {
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
    for (int nodes : {500, 2000}) {
        const Graph g = chain(nodes / 7, false, true);
        size_t laid = 0, edges = 0;
        const int layout_runs = nodes > 1000 ? std::max(1, runs / 2) : runs;
        const double t = median_seconds(layout_runs, [&] {
            auto l = layout_graph(g);
            if (!l) fail("layout failed: " + l.error());
            laid = l->nodes.size();
            edges = l->edges.size();
        });
        std::snprintf(buf, sizeof buf, "%zu nodes, %zu edges", g.node_count(), edges);
        if (laid != g.node_count()) fail("layout lost nodes");
        char note[64];
        std::snprintf(note, sizeof note, "%.3f ms/node", last_cpu_median * 1e3 / static_cast<double>(g.node_count()));
        row("layout_graph (dot), residual ladder", buf, t, last_cpu_median, note);
    }

    // ---- export --------------------------------------------------------------
    {
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
