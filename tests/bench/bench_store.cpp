// Session store benchmark (issue 4: autosave latency of a 2,000-node graph). A
// program, not a test: it prints figures and ratios against named baselines
// measured in the same run (DESIGN.md §11).
//
//   bench_store [--saves N] [--nodes N] [--dir DIR]
//
// The graph: a chain of linear + relu layers over [32, 64] activations (6 nodes a
// layer), every bias and every tenth weight carrying an embedded value. Each
// autosave follows a small edit (one operation renamed), as in the studio.
// Baselines: serialize_project of the same graph alone (values embedded, as a
// project file holds them), the same JSON written atomically to a file
// (io/atomic_file) — what a file-based autosave costs — and serialize_project of
// the graph without its values, the floor of any JSON-based save (the store
// writes exactly that JSON plus references to values it already holds).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "io/atomic_file.h"
#include "io/project_file.h"
#include "store/content_hash.h"
#include "store/session.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Stats {
    double median = 0, p95 = 0, min = 0;
};

Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    Stats s;
    s.min = v.front();
    s.median = v[v.size() / 2];
    s.p95 = v[std::min(v.size() - 1, static_cast<size_t>(static_cast<double>(v.size()) * 0.95))];
    return s;
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

std::shared_ptr<const TensorData> value_of(const Tensor &t, int salt) {
    auto d = std::make_shared<TensorData>(t.dtype, t.shape());
    for (std::int64_t i = 0; i < d->element_count(); ++i) d->set(i, static_cast<double>((i * 31 + salt) % 97) / 97.0);
    return d;
}

Graph make_graph(int nodes, int &values) {
    Graph g;
    g.name = "autosave bench";
    constexpr Coord batch = 32, width = 64;
    Tensor x = make_tensor("x0", {batch, width}, TensorRole::input);
    g.put_tensor(x);
    values = 0;
    for (int layer = 0; static_cast<int>(g.node_count()) + 6 <= nodes; ++layer) {
        const std::string n = std::to_string(layer);
        Tensor w = make_tensor("w" + n, {width, width}, TensorRole::parameter);
        Tensor b = make_tensor("b" + n, {width}, TensorRole::parameter);
        b.value = value_of(b, layer);
        ++values;
        if (layer % 10 == 0) {
            w.value = value_of(w, layer);
            ++values;
        }
        Tensor h = make_tensor("h" + n, {batch, width}, TensorRole::intermediate);
        Tensor y = make_tensor("x" + std::to_string(layer + 1), {batch, width}, TensorRole::intermediate);
        Operation fc;
        fc.id = OpId("fc" + n);
        fc.name = fc.id.value;
        fc.kind = "linear";
        fc.inputs = {port("x", x), port("w", w), port("bias", b)};
        fc.outputs = {port("y", h)};
        Operation act;
        act.id = OpId("relu" + n);
        act.name = act.id.value;
        act.kind = "relu";
        act.inputs = {port("x", h)};
        act.outputs = {port("y", y)};
        for (Tensor *t : {&w, &b, &h, &y}) g.put_tensor(*t);
        g.put_op(std::move(fc));
        g.put_op(std::move(act));
        x = y;
    }
    return g;
}

// The studio's edit between two autosaves: one operation renamed.
void edit(Graph &g, int step) {
    const OpPtr &op = g.operations()[static_cast<size_t>(step) % g.operations().size()];
    Operation changed = *op;
    changed.name = op->id.value + " (edit " + std::to_string(step) + ")";
    g.put_op(std::move(changed));
}

std::vector<double> repeat(int n, const std::function<void(int)> &f) {
    std::vector<double> times;
    for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        f(i);
        times.push_back(ms_since(t0));
    }
    return times;
}

void row(const char *what, const Stats &s) {
    std::printf("  %-52s median %8.2f ms   p95 %8.2f ms   min %8.2f ms\n", what, s.median, s.p95, s.min);
}

}  // namespace

int main(int argc, char **argv) {
    int saves = 50, nodes = 2000;
    fs::path dir = fs::temp_directory_path() / ("bench_store_" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--saves"))
            saves = std::max(5, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--nodes"))
            nodes = std::max(12, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
    }
    fs::remove_all(dir);
    fs::create_directories(dir);

    int values = 0;
    Graph g = make_graph(nodes, values);
    const std::string json = serialize_project(g);
    std::printf("bench_store: %zu-node graph (%zu tensors, %zu operations, %d embedded values), %d saves\n",
                g.node_count(), g.tensors().size(), g.operations().size(), values, saves);
    std::printf("  project JSON of the graph: %.1f KiB\n\n", static_cast<double>(json.size()) / 1024.0);

    // Baselines.
    Graph b1 = g;
    const Stats serialize = stats(repeat(saves, [&](int i) {
        edit(b1, i);
        volatile size_t n = serialize_project(b1).size();
        (void)n;
    }));
    Graph bare = g;
    for (const TensorPtr &t : g.tensors()) {
        if (!t->value) continue;
        Tensor copy = *t;
        copy.value = nullptr;
        bare.put_tensor(std::move(copy));
    }
    const Stats serialize_bare = stats(repeat(saves, [&](int i) {
        edit(bare, i);
        volatile size_t n = serialize_project(bare).size();
        (void)n;
    }));
    Graph b2 = g;
    const fs::path file = dir / "autosave.tapestry.json";
    const Stats atomic = stats(repeat(saves, [&](int i) {
        edit(b2, i);
        if (!write_file_atomically(file, serialize_project(b2)).empty()) std::abort();
    }));

    // The store.
    const fs::path session_path = dir / "bench.tapestry-session";
    auto session = store::Session::open(session_path);
    if (!session) {
        std::fprintf(stderr, "bench_store: %s\n", session.error().message.c_str());
        return 1;
    }
    store::Session &s = **session;
    const store::ProjectId project = s.create_project("bench").value();
    auto t0 = Clock::now();
    if (!s.save_version(project, g, "save")) return 1;
    const double first_save = ms_since(t0);
    Graph edited = g;
    std::vector<store::VersionId> ids;
    const Stats autosave = stats(repeat(saves, [&](int i) {
        edit(edited, i);
        auto v = s.save_version(project, edited, "autosave");
        if (!v) std::abort();
        ids.push_back(v->id);
    }));
    const Stats load = stats(repeat(std::min(saves, 20), [&](int i) {
        if (!s.load_version(ids[static_cast<size_t>(i)])) std::abort();
    }));
    const Stats parse = stats(repeat(std::min(saves, 20), [&](int) {
        if (!parse_project(json).ok()) std::abort();
    }));

    std::printf("autosave latency (%d saves, one small edit each)\n", saves);
    row("baseline: serialize_project alone", serialize);
    row("baseline: JSON written atomically (io/atomic_file)", atomic);
    row("baseline: serialize_project without values", serialize_bare);
    row("Session::save_version (autosave)", autosave);
    std::printf("  first save of the graph (values inserted): %.2f ms\n", first_save);
    std::printf("  ratio save_version / serialize_project:   median %.2fx  p95 %.2fx\n",
                autosave.median / serialize.median, autosave.p95 / serialize.p95);
    std::printf("  ratio save_version / atomic JSON write:   median %.2fx  p95 %.2fx\n",
                autosave.median / atomic.median, autosave.p95 / atomic.p95);
    std::printf("  ratio save_version / JSON without values: median %.2fx  p95 %.2fx\n\n",
                autosave.median / serialize_bare.median, autosave.p95 / serialize_bare.p95);
    std::printf("load latency\n");
    row("baseline: parse_project of the JSON", parse);
    row("Session::load_version", load);
    std::printf("  ratio load_version / parse_project:       median %.2fx\n\n", load.median / parse.median);

    // A 100 MB parameter: stored once, then free to re-save (cached by pointer).
    {
        Graph big = make_graph(12, values);
        Tensor w = make_tensor("big", {5000, 5000}, TensorRole::parameter);  // 25 M f32 = 100 MB
        auto data = std::make_shared<TensorData>(w.dtype, w.shape());
        for (std::int64_t i = 0; i < data->element_count(); ++i)
            data->as<float>()[static_cast<size_t>(i)] = static_cast<float>(i % 1000);
        w.value = data;
        big.put_tensor(std::move(w));
        t0 = Clock::now();
        const store::ContentHash h = store::content_hash(*data);
        const double hash_ms = ms_since(t0);
        const store::ProjectId p2 = s.create_project("big").value();
        t0 = Clock::now();
        if (!s.save_version(p2, big, "save")) return 1;
        const double first = ms_since(t0);
        edit(big, 1);
        t0 = Clock::now();
        if (!s.save_version(p2, big, "autosave")) return 1;
        const double again = ms_since(t0);
        std::printf("100 MB parameter (hash %s)\n", h.hex().substr(0, 8).c_str());
        std::printf("  content hash (MurmurHash3 x64-128):  %8.2f ms  (%.1f GB/s)\n", hash_ms,
                    0.1 / (hash_ms / 1000.0));
        std::printf("  first save (hash + blob written):    %8.2f ms\n", first);
        std::printf("  re-save after an edit (cached):      %8.2f ms\n", again);
    }
    session->reset();
    std::error_code ec;
    std::printf("\nsession file: %.1f MiB after %d versions\n",
                static_cast<double>(fs::file_size(session_path, ec)) / (1024.0 * 1024.0), saves + 3);
    fs::remove_all(dir, ec);
    return 0;
}
