// Benchmark of the CPU executor against the machine's practical peak: a plain
// oneDNN 4096³ fp32 matmul at 2 threads (the baseline, measured in the same run),
// then our executor on an MLP (batch 512, 1024→4096→4096→4096→4096, bias +
// gelu/relu fused), printed as GFLOP/s and the ratio (target ≥ 0.75).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/library.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/executor.h"

using namespace tapestry;

namespace {

constexpr int kThreads = 2;
constexpr int kRepeats = 3;

void fill(float *p, std::size_t n, std::uint64_t seed) {
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (std::size_t i = 0; i < n; ++i) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 23) - 1.0);
    }
}

template <typename F> double best_seconds(F &&f) {
    f();  // warm-up
    double best = 1e30;
    for (int r = 0; r < kRepeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

double plain_onednn_gflops() {
    const dnnl::memory::dim n = 4096;
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc md({n, n}, dt::f32, tag::ab);
    std::vector<float> a(static_cast<size_t>(n * n)), b(a.size()), c(a.size());
    fill(a.data(), a.size(), 1);
    fill(b.data(), b.size(), 2);
    const dnnl::engine &eng = cpu::cpu_engine();
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), eng);
    dnnl::matmul mm(pd);
    dnnl::memory ma(md, eng, a.data()), mb(md, eng, b.data()), mc(md, eng, c.data());
    dnnl::stream s(eng);
    cpu::set_omp_threads(kThreads);
    const double sec = best_seconds([&] {
        mm.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
        s.wait();
    });
    return 2.0 * static_cast<double>(n) * n * n / sec / 1e9;
}

void tensor(Graph &g, const std::string &id, ZPoint shape, TensorRole role) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    g.put_tensor(std::move(t));
}

void op(Graph &g, const std::string &id, const std::string &kind,
        const std::vector<std::pair<std::string, std::string>> &ins, const std::string &out) {
    Operation o;
    o.id = OpId(id);
    o.name = id;
    o.kind = kind;
    for (const auto &[port, t] : ins) o.inputs.push_back({port, {{TensorId(t), g.find_tensor(TensorId(t))->range}}});
    o.outputs.push_back({"y", {{TensorId(out), g.find_tensor(TensorId(out))->range}}});
    g.put_op(std::move(o));
}

std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
}

}  // namespace

int main() {
    std::printf("load average before: %s\n", load_average().c_str());
    const double peak = plain_onednn_gflops();
    std::printf("plain oneDNN 4096^3 fp32 matmul, %d threads: %.1f GFLOP/s\n", kThreads, peak);

    const Coord batch = 512;
    const std::vector<Coord> widths{1024, 4096, 4096, 4096, 4096};
    const char *acts[] = {"gelu", "relu", "gelu", "relu"};
    Graph g;
    tensor(g, "x", {batch, widths[0]}, TensorRole::input);
    std::string prev = "x";
    double flops = 0;
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
        const std::string n = std::to_string(l + 1);
        const bool last = l + 2 == widths.size();
        tensor(g, "w" + n, {widths[l], widths[l + 1]}, TensorRole::parameter);
        tensor(g, "b" + n, {widths[l + 1]}, TensorRole::parameter);
        tensor(g, "h" + n, {batch, widths[l + 1]}, TensorRole::intermediate);
        tensor(g, "a" + n, {batch, widths[l + 1]}, last ? TensorRole::output : TensorRole::intermediate);
        op(g, "fc" + n, "linear", {{"x", prev}, {"w", "w" + n}, {"bias", "b" + n}}, "h" + n);
        op(g, std::string(acts[l]) + n, acts[l], {{"x", "h" + n}}, "a" + n);
        prev = "a" + n;
        flops += 2.0 * static_cast<double>(batch) * static_cast<double>(widths[l]) * static_cast<double>(widths[l + 1]);
    }
    std::map<TensorId, TensorData> inputs;
    std::uint64_t seed = 3;
    for (const TensorPtr &t : g.tensors()) {
        if (t->role != TensorRole::input && t->role != TensorRole::parameter) continue;
        TensorData d(DType::f32, t->shape());
        auto v = d.as<float>();
        fill(v.data(), v.size(), seed++);
        for (float &x : v) x *= 0.05f;  // keep activations in a sane range
        inputs[t->id] = std::move(d);
    }
    cpu::CpuOptions options;
    options.threads = kThreads;
    auto program = cpu::Program::compile(g, OpLibrary::standard(), options);
    if (!program) {
        std::fprintf(stderr, "compile failed: %s\n", program.error().c_str());
        return 1;
    }
    std::string failure;
    const double sec = best_seconds([&] {
        auto r = (*program)->run(inputs);
        if (!r) failure = r.error();
    });
    if (!failure.empty()) {
        std::fprintf(stderr, "run failed: %s\n", failure.c_str());
        return 1;
    }
    const double rate = flops / sec / 1e9;
    std::printf("executor MLP (batch 512, 1024-4096x4, bias+gelu/relu fused), %d threads: %.1f GFLOP/s (%.1f ms)\n",
                kThreads, rate, sec * 1e3);
    std::printf("ratio MLP / plain matmul: %.2f (target >= 0.75)\n", rate / peak);
    std::printf("load average after: %s\n", load_average().c_str());
    return 0;
}
