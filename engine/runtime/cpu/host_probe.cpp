#include "runtime/cpu/host_probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/cpu/dnnl_util.h"

namespace tapestry::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Best FLOP/s of `reps` n×n×n matmuls in `dt`.
double gemm_flops(dnnl::memory::data_type dt, int n, int reps) {
    const dnnl::engine &eng = cpu_engine();
    dnnl::stream &s = thread_stream();
    const dnnl::memory::dims dims = {n, n};
    const dnnl::memory::desc md(dims, dt, dnnl::memory::format_tag::ab);
    const dnnl::memory::desc cd(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, cd), eng);
    dnnl::matmul mm(pd);
    dnnl::memory a(md, eng), b(md, eng), c(cd, eng);
    std::memset(a.get_data_handle(), 0, md.get_size());
    std::memset(b.get_data_handle(), 0, md.get_size());
    double best = 1e30;
    for (int r = 0; r < reps + 1; ++r) {  // the first warms up
        const auto t = Clock::now();
        mm.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        s.wait();
        if (r > 0) best = std::min(best, seconds_since(t));
    }
    return 2.0 * n * n * static_cast<double>(n) / best;
}

// Bytes/s (read + write) of copying `bytes` with `threads` threads, best of `reps`.
double copy_bandwidth(std::size_t bytes, int threads, int reps) {
    std::unique_ptr<char[]> src(new char[bytes]), dst(new char[bytes]);
    std::memset(src.get(), 1, bytes);
    std::memset(dst.get(), 0, bytes);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t = Clock::now();
        std::vector<std::thread> pool;
        const std::size_t chunk = bytes / static_cast<std::size_t>(threads);
        for (int k = 0; k < threads; ++k)
            pool.emplace_back([&, k] {
                const std::size_t lo = chunk * static_cast<std::size_t>(k);
                const std::size_t hi = k + 1 == threads ? bytes : lo + chunk;
                std::memcpy(dst.get() + lo, src.get() + lo, hi - lo);
            });
        for (std::thread &th : pool) th.join();
        best = std::min(best, seconds_since(t));
    }
    volatile char sink = dst[bytes / 2];
    (void)sink;
    return 2.0 * static_cast<double>(bytes) / best;
}

double primitive_overhead() {
    const dnnl::engine &eng = cpu_engine();
    dnnl::stream &s = thread_stream();
    const dnnl::memory::desc md({1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu, md, 0.f, 0.f),
        eng);
    dnnl::eltwise_forward prim(pd);
    dnnl::memory x(md, eng), y(md, eng);
    *static_cast<float *>(x.get_data_handle()) = 1.f;
    std::vector<double> times;
    for (int r = 0; r < 201; ++r) {
        const auto t = Clock::now();
        prim.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}});
        s.wait();
        times.push_back(seconds_since(t));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

Expected<HostMeasurement, std::string> measure_host(int threads, const ProbeProgress &progress) {
    HostMeasurement m;
    m.threads = std::max(1, threads);
    m.isa = cpu_isa().name;
    auto step = [&](double f, const std::string &what) { return !progress || progress(f, what); };
    try {
        set_omp_threads(m.threads);
        if (!step(0.0, "f32 GEMM 1024³")) return unexpected(std::string("cancelled"));
        m.gemm_f32_flops = gemm_flops(dnnl::memory::data_type::f32, 1024, 3);
        if (cpu_isa().native_bf16) {
            if (!step(0.35, "bf16 GEMM 1024³")) return unexpected(std::string("cancelled"));
            m.gemm_bf16_flops = gemm_flops(dnnl::memory::data_type::bf16, 1024, 3);
        }
        if (!step(0.6, "memory bandwidth (256 MiB copy)")) return unexpected(std::string("cancelled"));
        m.memory_bandwidth = copy_bandwidth(std::size_t{256} << 20, m.threads, 3);
        if (!step(0.9, "primitive overhead")) return unexpected(std::string("cancelled"));
        m.launch_overhead = primitive_overhead();
    } catch (const dnnl::error &e) {
        return unexpected(std::string("oneDNN: ") + e.what());
    } catch (const std::bad_alloc &) {
        return unexpected(std::string("not enough memory for the bandwidth probe (512 MiB)"));
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    m.memory_bytes = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
    step(1.0, "done");
    return m;
}

}  // namespace tapestry::cpu
