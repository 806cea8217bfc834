// The cuda backend (launch/cuda_backend.h). Every step is enqueued the same way —
// its waits on other streams' events, a start event, the work, an end event, the
// streams it holds told to wait for that end — whether the launcher runs it (and
// waits for its end event before the next) or run_enqueued enqueues the whole
// plan at once.
#include "launch/cuda_backend.h"

namespace tapestry::launch {

std::string_view transport_name(CudaTransport t) {
    switch (t) {
        case CudaTransport::automatic: return "auto";
        case CudaTransport::peer: return "peer";
        case CudaTransport::nccl: return "nccl";
    }
    return "auto";
}

std::optional<CudaTransport> transport_from_name(std::string_view name) {
    for (CudaTransport t : {CudaTransport::automatic, CudaTransport::peer, CudaTransport::nccl})
        if (transport_name(t) == name) return t;
    return std::nullopt;
}

}  // namespace tapestry::launch

#if TAPESTRY_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "common/checked_size.h"
#include "launch/collectives.h"
#include "launch/cuda_descriptors.h"
#include "launch/host_boxes.h"
#include "launch/launch.h"
#include "launch/rank_world.h"
#include "launch/step_operands.h"
#include "plan/simulate.h"
#include "runtime/cuda/box_move.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/gate.h"
#include "runtime/cuda/kernel.h"
#include "runtime/cuda/nccl.h"

namespace tapestry::launch {
namespace {

std::string err(const std::string &what, cudaError_t e) { return cuda::cuda_error(what.c_str(), e); }

using Clock = std::chrono::steady_clock;

// Whether a box's elements lie dense in row-major order (extents of 1 aside): then
// its flat elements [lo, hi) are one run of memory.
bool dense(const HostBox &b) {
    std::int64_t expect = 1;
    for (size_t d = b.shape.size(); d-- > 0;) {
        if (b.shape[d] != 1 && b.strides[d] != expect) return false;
        expect *= b.shape[d];
    }
    return true;
}

// A flat view of `elements` elements whose element `lo` is at `at`: what a box move
// reads or writes element by element where a message is staged (elements below lo
// are never touched; the base is computed as an integer, not a pointer).
cuda::View flat_window(std::byte *at, DType dtype, std::int64_t elements, std::int64_t lo) {
    cuda::View v;
    v.data = reinterpret_cast<std::byte *>(reinterpret_cast<std::uintptr_t>(at) -
                                           static_cast<std::uintptr_t>(lo * dtype_bytes(dtype)));
    v.dtype = dtype;
    v.shape = ZPoint(std::vector<std::int64_t>{elements});
    v.strides = {1};
    return v;
}

cuda::View view_of(const HostBox &b) {
    cuda::View v;
    v.data = b.data;
    v.dtype = b.dtype;
    v.shape = ZPoint(b.shape);
    v.strides = b.strides;
    return v;
}

class CudaBackend final : public Backend, private BoxMemory {
public:
    CudaBackend(const CudaBackendOptions &options, std::vector<GpuInfo> gpus, int found_gpus, bool shared_gpus)
        : options_(options), gpus_(std::move(gpus)), world_(options.world), shared_gpus_(shared_gpus),
          found_gpus_(found_gpus) {}
    ~CudaBackend() override {
        release();
        contexts_.clear();
    }

    std::string name() const override { return "cuda"; }
    int max_devices() const override { return gpus_.empty() ? 0 : options_.max_devices * ranks(); }
    int rank() const override { return world_ ? world_->rank() : 0; }
    int ranks() const override { return world_ ? world_->ranks() : 1; }
    bool owns(int device) const override { return !world_ || rank_of_device(device, devices_, ranks()) == rank(); }

    std::int64_t device_capacity(int devices) const override {
        if (options_.device_memory > 0) return options_.device_memory;
        if (gpus_.empty()) return 0;
        // Several plan devices on one GPU share its free memory (under mpirun: a rank's devices).
        const int n = static_cast<int>(gpus_.size());
        const int mine = (devices + ranks() - 1) / ranks();
        const int per_gpu = mine > n ? mine : 1;
        std::int64_t least = gpus_.front().free;
        for (const GpuInfo &g : gpus_) least = std::min(least, g.free);
        return least / std::max(1, per_gpu);
    }

    std::string describe() const override {
        std::map<std::string, int> names;
        for (const GpuInfo &g : gpus_)
            names[g.name + " (sm_" + std::to_string(g.cc_major) + std::to_string(g.cc_minor) + ", " + byte_text(g.memory) + ")"]++;
        std::string out = "cuda:";
        if (world_) out += " rank " + std::to_string(rank()) + " of " + std::to_string(ranks()) + ",";
        for (const auto &[n, count] : names) out += " " + std::to_string(count) + " × " + n;
        if (gpus_.size() == 1) out += "; plans of several devices run as virtual devices on it";
        switch (options_.transport) {
            case CudaTransport::automatic:
                if (gpus_.size() > 1)
                    out += cuda::nccl_built() ? "; transfers between GPUs by NCCL " + cuda::nccl_version()
                                              : "; transfers between GPUs by peer copies (no NCCL in this build)";
                break;
            case CudaTransport::peer: out += "; transfers by peer copies"; break;
            case CudaTransport::nccl: out += "; every transfer by NCCL " + cuda::nccl_version(); break;
        }
        return out;
    }

    Expected<std::monostate, std::string> prepare(const plan::Plan &plan) override {
        release();
        plan_ = &plan;
        devices_ = static_cast<int>(plan.devices.size());
        auto local = [&]() -> Expected<std::monostate, std::string> {
            auto d = describe_cuda_launch(plan, static_cast<int>(gpus_.size()), CudaRanks{rank(), ranks()});
            if (!d) return unexpected(d.error());
            desc_ = std::move(d).value();
            if (auto c = make_contexts(); !c) return c;
            if (auto m = allocate(); !m) return m;
            return make_streams();
        }();
        // NCCL's set-up waits for every rank: first every rank hears whether the others
        // have their GPUs ready (a rank out of memory fails them all at once, named).
        if (world_) local = agree_ranks(*world_, std::move(local), "preparing its GPUs");
        if (!local) return local;
        if (auto n = make_nccl(); !n) return n;
        if (auto k = make_kernels(); !k) return k;
        return warm_up();
    }

    Expected<std::monostate, std::string> upload(int buffer, std::span<const std::byte> bytes) override {
        const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
        if (static_cast<std::int64_t>(bytes.size()) != b.bytes)
            return unexpected(buffer_name(buffer) + ": " + std::to_string(bytes.size()) + " bytes given for its " +
                              std::to_string(b.bytes));
        if (bytes.empty()) return std::monostate{};
        cudaSetDevice(gpus_[static_cast<size_t>(gpu_of_buffer(buffer))].ordinal);
        if (cudaError_t e = cudaMemcpy(data_[static_cast<size_t>(buffer)], bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
            e != cudaSuccess)
            return unexpected(err("copying " + buffer_name(buffer) + " to the GPU", e));
        return std::monostate{};
    }

    Expected<std::monostate, std::string> download(int buffer, std::span<std::byte> bytes) const override {
        const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
        if (static_cast<std::int64_t>(bytes.size()) != b.bytes)
            return unexpected(buffer_name(buffer) + ": " + std::to_string(bytes.size()) + " bytes asked of its " +
                              std::to_string(b.bytes));
        if (bytes.empty()) return std::monostate{};
        if (!owns(b.device)) {  // another rank's output, gathered to rank 0
            auto it = remote_outputs_.find(buffer);
            if (it == remote_outputs_.end() || it->second.size() != bytes.size())
                return unexpected(buffer_name(buffer) + ": rank " + std::to_string(rank_of_device(b.device, devices_, ranks())) +
                                  " holds it and did not send it");
            std::copy(it->second.begin(), it->second.end(), bytes.begin());
            return std::monostate{};
        }
        cudaSetDevice(gpus_[static_cast<size_t>(gpu_of_buffer(buffer))].ordinal);
        if (cudaError_t e = cudaMemcpy(bytes.data(), data_[static_cast<size_t>(buffer)], bytes.size(), cudaMemcpyDeviceToHost);
            e != cudaSuccess)
            return unexpected(err("copying " + buffer_name(buffer) + " from the GPU", e));
        return std::monostate{};
    }

    Expected<StepOutcome, std::string> run_kernel(int step) override { return run_step(step); }
    Expected<StepOutcome, std::string> run_copy(int step) override { return run_step(step); }
    Expected<StepOutcome, std::string> run_send_recv(int step) override { return run_step(step); }
    Expected<StepOutcome, std::string> run_collective(int step) override { return run_step(step); }

    // The launch's time origin: an event on every GPU, recorded before any step.
    // Under mpirun every rank reaches a barrier first.
    Expected<std::monostate, std::string> synchronize() override {
        next_ticket_ = 0;
        if (world_)
            if (auto b = world_->barrier("the other ranks to start"); !b) return b;
        return record_origin();
    }
    void set_wait_limits(double timeout_seconds, std::function<bool()> stop) override {
        wait_limit_ = std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.001, timeout_seconds) * 1000));
        if (world_) world_->set_wait_limits(timeout_seconds, stop);
        stop_ = std::move(stop);
    }
    Expected<std::monostate, std::string> agree(Expected<std::monostate, std::string> mine, const std::string &what) override {
        return world_ ? agree_ranks(*world_, std::move(mine), what) : mine;
    }
    void announce_fault(const std::string &message) override {
        if (world_) world_->announce_fault(message);
    }
    std::optional<std::string> remote_fault() override { return world_ ? world_->remote_fault() : std::nullopt; }
    Expected<std::monostate, std::string> gather(std::vector<MeasuredStep> &steps) override {
        if (!world_ || ranks() == 1) return std::monostate{};
        remote_outputs_.clear();
        return world_->gather_at_root(
            *plan_, steps,
            [this](int b) { return rank_of_device(plan_->buffers[static_cast<size_t>(b)].device, devices_, ranks()); },
            [this](int b) -> Expected<std::vector<std::byte>, std::string> {
                std::vector<std::byte> bytes(static_cast<size_t>(plan_->buffers[static_cast<size_t>(b)].bytes));
                if (auto d = download(b, bytes); !d) return unexpected(d.error());
                return bytes;
            },
            [this](int b, std::vector<std::byte> bytes) { remote_outputs_[b] = std::move(bytes); });
    }

    std::optional<std::pair<double, double>> device_time(int step) const override {
        const size_t i = static_cast<size_t>(step);
        if (i >= start_.size() || !start_[i] || !desc_.steps[i].here) return std::nullopt;
        const int gpu = desc_.streams[static_cast<size_t>(desc_.steps[i].stream)].gpu;
        float a = 0, b = 0;
        if (cudaEventElapsedTime(&a, origin_[static_cast<size_t>(gpu)], start_[i]) != cudaSuccess ||
            cudaEventElapsedTime(&b, origin_[static_cast<size_t>(gpu)], end_[i]) != cudaSuccess)
            return std::nullopt;
        return std::make_pair(a / 1e3, b / 1e3);
    }

    Expected<EnqueuedRun, std::string> enqueued(int warmups, int repeats, Submission submission) {
        if (!plan_) return unexpected(std::string("the cuda backend has no plan prepared"));
        if (ranks() > 1) return unexpected(std::string("run_enqueued times a plan in one process, not one rank of several"));
        const bool gated = submission == Submission::gated;
        if (gated && !gate_) {
            auto g = cuda::Gate::make();
            if (!g) return unexpected(g.error());
            gate_ = std::move(g).value();
        }
        EnqueuedRun out;
        std::vector<std::vector<std::pair<double, double>>> per_run;
        for (int r = 0; r < warmups + repeats; ++r) {
            next_ticket_ = 0;
            if (auto o = gated ? hold_at_gate() : record_origin(); !o) return unexpected(o.error());
            {
                // The gate opens when the last step is enqueued — or when enqueueing fails.
                struct Opener {
                    cuda::Gate *gate;
                    ~Opener() {
                        if (gate) gate->open();
                    }
                } opener{gated ? gate_.get() : nullptr};
                for (size_t k = 0; k < streams_.size(); ++k)
                    if (streams_[k]) {
                        cudaSetDevice(gpus_[static_cast<size_t>(desc_.streams[k].gpu)].ordinal);
                        cudaStreamWaitEvent(streams_[k], origin_[static_cast<size_t>(desc_.streams[k].gpu)], 0);
                    }
                for (size_t s = 0; s < plan_->steps.size(); ++s) {
                    auto e = enqueue_step(static_cast<int>(s));
                    if (!e) return unexpected(step_text(static_cast<int>(s)) + ": " + e.error());
                }
            }
            for (size_t k = 0; k < streams_.size(); ++k)
                if (streams_[k]) {
                    cudaSetDevice(gpus_[static_cast<size_t>(desc_.streams[k].gpu)].ordinal);
                    if (cudaError_t e = cudaStreamSynchronize(streams_[k]); e != cudaSuccess)
                        return unexpected(err("running the plan (" + stream_text(static_cast<int>(k)) + ")", e));
                }
            for (cudaStream_t g : gate_streams_)
                if (g) cudaStreamSynchronize(g);
            if (gated && gate_->timed_out())
                return unexpected("the gate holding the plan's " + std::to_string(plan_->steps.size()) +
                                  " steps gave up after " + std::to_string(kGateLimit.count()) +
                                  " ms, before the host had enqueued them all: gated times would hold the host's "
                                  "submission");
            if (r < warmups) continue;
            std::vector<std::pair<double, double>> times;
            double last = 0;
            for (size_t s = 0; s < plan_->steps.size(); ++s) {
                auto t = device_time(static_cast<int>(s));
                if (!t) return unexpected(step_text(static_cast<int>(s)) + ": its events could not be read");
                times.push_back(*t);
                last = std::max(last, t->second);
            }
            out.runs.push_back(last);
            per_run.push_back(std::move(times));
        }
        if (out.runs.empty()) return out;
        std::vector<size_t> order(out.runs.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out.runs[a] < out.runs[b]; });
        const size_t median = order[order.size() / 2];
        out.seconds = out.runs[median];
        out.steps = per_run[median];
        out.run_steps = std::move(per_run);
        return out;
    }

private:
    struct PreparedKernel {
        std::unique_ptr<cuda::Kernel> kernel;
        std::vector<cuda::View> inputs, outputs;
        void *workspace = nullptr;
    };

    // ---- names ------------------------------------------------------------------------
    std::string device_name(int d) const { return plan_->devices[static_cast<size_t>(d)].name; }
    std::string buffer_name(int b) const {
        const plan::Buffer &buf = plan_->buffers[static_cast<size_t>(b)];
        return "buffer " + std::to_string(b) + " (" + (buf.tensor.value.empty() ? "workspace" : buf.tensor.value) +
               " on " + device_name(buf.device) + ")";
    }
    std::string step_text(int s) const {
        const plan::Step &st = plan_->steps[static_cast<size_t>(s)];
        return "step " + std::to_string(s) + " (" + plan::step_kind_name(st.kind) + " " + st.op +
               (st.shard.empty() ? "" : " " + st.shard) + " on " + device_name(st.device) + ")";
    }
    std::string stream_text(int k) const {
        return "device " + device_name(k / 2) + "'s " + (k % 2 ? "communication" : "compute") + " stream";
    }
    int gpu_of_buffer(int b) const { return desc_.buffers[static_cast<size_t>(b)].gpu; }
    int gpu_of_step(int s) const { return desc_.streams[static_cast<size_t>(desc_.steps[static_cast<size_t>(s)].stream)].gpu; }

    // ---- preparation --------------------------------------------------------------------
    // The GPUs' contexts (handles, caches) outlive a plan: a backend launching plan after plan
    // creates them once.
    Expected<std::monostate, std::string> make_contexts() {
        for (int g = static_cast<int>(contexts_.size()); g < desc_.gpus; ++g) {
            auto c = cuda::Context::create(gpus_[static_cast<size_t>(g)].ordinal);
            if (!c) return unexpected(c.error());
            contexts_.push_back(std::move(c).value());
        }
        // Several GPUs in one process moving by peer copies: transfers between them read
        // the peer's memory. (NCCL finds its own way.)
        if (uses_nccl()) return std::monostate{};
        for (int a = 0; a < desc_.gpus; ++a)
            for (int b = 0; b < desc_.gpus; ++b) {
                if (a == b) continue;
                int can = 0;
                cudaDeviceCanAccessPeer(&can, gpus_[static_cast<size_t>(a)].ordinal, gpus_[static_cast<size_t>(b)].ordinal);
                if (!can)
                    return unexpected("GPU " + std::to_string(a) + " cannot access GPU " + std::to_string(b) +
                                      "'s memory (no peer access): the plan's transfers between them need it");
                cudaSetDevice(gpus_[static_cast<size_t>(a)].ordinal);
                const cudaError_t e = cudaDeviceEnablePeerAccess(gpus_[static_cast<size_t>(b)].ordinal, 0);
                if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
                    return unexpected(err("enabling peer access from GPU " + std::to_string(a) + " to " + std::to_string(b), e));
                cudaGetLastError();
            }
        return std::monostate{};
    }

    void *device_alloc(int gpu, std::int64_t bytes, const std::string &what, std::string &error) {
        if (bytes <= 0) return nullptr;
        cudaSetDevice(gpus_[static_cast<size_t>(gpu)].ordinal);
        void *p = nullptr;
        if (cudaError_t e = cudaMalloc(&p, static_cast<size_t>(bytes)); e != cudaSuccess) {
            cudaGetLastError();
            error = err(what + " of " + byte_text(bytes) + " could not be allocated on GPU " + std::to_string(gpu), e);
            return nullptr;
        }
        allocations_.emplace_back(gpu, p);
        // Zeroed: the warm-up run (warm_up) reads it before the inputs are uploaded.
        if (cudaError_t e = cudaMemset(p, 0, static_cast<size_t>(bytes)); e != cudaSuccess) {
            cudaGetLastError();
            error = err(what + " of " + byte_text(bytes) + " could not be cleared on GPU " + std::to_string(gpu), e);
            return nullptr;
        }
        return p;
    }

    // The first launch of each kernel in a process loads its code (CUDA loads modules
    // lazily) and sets up cuBLASLt's and cuDNN's state: milliseconds a step (3.6 ms for
    // the bf16 GPT-2 block's first layer norm on an H200, against 15 µs warm) that are
    // not its own, and that calibration would learn. So preparing a plan runs it once on
    // its zeroed memory, and a launch measures the steps warm.
    Expected<std::monostate, std::string> warm_up() {
        for (int g = 0; g < desc_.gpus; ++g) {
            cudaSetDevice(gpus_[static_cast<size_t>(g)].ordinal);
            if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
                return unexpected(err("clearing the plan's memory on GPU " + std::to_string(g), e));
        }
        next_ticket_ = 0;
        for (size_t s = 0; s < plan_->steps.size(); ++s)
            if (auto e = enqueue_step(static_cast<int>(s)); !e)
                return unexpected("warming up " + step_text(static_cast<int>(s)) + ": " + e.error());
        for (size_t k = 0; k < streams_.size(); ++k)
            if (streams_[k]) {
                cudaSetDevice(gpus_[static_cast<size_t>(desc_.streams[k].gpu)].ordinal);
                if (cudaError_t e = cudaStreamSynchronize(streams_[k]); e != cudaSuccess)
                    return unexpected(err("warming up the plan (" + stream_text(static_cast<int>(k)) + ")", e));
            }
        return std::monostate{};
    }

    Expected<std::monostate, std::string> allocate() {
        const size_t n = plan_->devices.size();
        std::vector<std::byte *> arena(n, nullptr), resident(n, nullptr);
        std::string error;
        for (size_t d = 0; d < n; ++d) {
            const int gpu = desc_.device_gpu[d];
            if (gpu < 0) continue;  // another rank's
            arena[d] = static_cast<std::byte *>(device_alloc(gpu, desc_.arena_bytes[d], "device " + device_name(static_cast<int>(d)) + ": its arena", error));
            if (!error.empty()) return unexpected(error);
            resident[d] = static_cast<std::byte *>(device_alloc(gpu, desc_.resident_bytes[d], "device " + device_name(static_cast<int>(d)) + ": its resident buffers", error));
            if (!error.empty()) return unexpected(error);
        }
        data_.assign(plan_->buffers.size(), nullptr);
        for (size_t b = 0; b < plan_->buffers.size(); ++b) {
            const CudaBufferPlace &p = desc_.buffers[b];
            const size_t d = static_cast<size_t>(plan_->buffers[b].device);
            std::byte *base = p.in_arena ? arena[d] : resident[d];
            if (base && p.bytes > 0) data_[b] = base + p.offset;
        }
        // Staging buffers of the collectives that need one (reduce_scatter's messages), made now so
        // that a run allocates nothing.
        staging_.clear();
        for (size_t s = 0; s < plan_->steps.size(); ++s) {
            const plan::Step &st = plan_->steps[s];
            if (st.kind != plan::StepKind::collective || st.collective != "reduce_scatter") continue;
            std::int64_t bytes = 0;
            for (const plan::Region &w : st.writes)
                bytes = size_add(bytes, static_cast<std::int64_t>(schedule_align(size_mul(w.box.size(), dtype_bytes(plan_->buffers[static_cast<size_t>(w.buffer)].dtype)))));
            auto *p = static_cast<std::byte *>(device_alloc(gpu_of_step(static_cast<int>(s)), bytes, step_text(static_cast<int>(s)) + ": its staging buffer", error));
            if (!error.empty()) return unexpected(error);
            staging_[static_cast<int>(s)] = Staging{p, bytes, 0};
        }
        return std::monostate{};
    }

    static std::int64_t schedule_align(std::int64_t n) { return (n + 255) / 256 * 256; }

    Expected<std::monostate, std::string> make_streams() {
        streams_.assign(desc_.streams.size(), nullptr);
        std::vector<char> used(desc_.streams.size(), 0);
        for (const CudaStepLaunch &l : desc_.steps) {
            if (!l.here) continue;
            used[static_cast<size_t>(l.stream)] = 1;
            for (int h : l.holds) used[static_cast<size_t>(h)] = 1;
        }
        for (size_t k = 0; k < streams_.size(); ++k) {
            if (!used[k]) continue;
            cudaSetDevice(gpus_[static_cast<size_t>(desc_.streams[k].gpu)].ordinal);
            if (cudaError_t e = cudaStreamCreateWithFlags(&streams_[k], cudaStreamNonBlocking); e != cudaSuccess)
                return unexpected(err("creating " + stream_text(static_cast<int>(k)), e));
        }
        start_.assign(plan_->steps.size(), nullptr);
        end_.assign(plan_->steps.size(), nullptr);
        for (size_t s = 0; s < plan_->steps.size(); ++s) {
            if (!desc_.steps[s].here) continue;
            cudaSetDevice(gpus_[static_cast<size_t>(gpu_of_step(static_cast<int>(s)))].ordinal);
            if (cudaError_t e = cudaEventCreate(&start_[s]); e != cudaSuccess) return unexpected(err("creating events", e));
            if (cudaError_t e = cudaEventCreate(&end_[s]); e != cudaSuccess) return unexpected(err("creating events", e));
        }
        origin_.assign(static_cast<size_t>(desc_.gpus), nullptr);
        for (int g = 0; g < desc_.gpus; ++g) {
            cudaSetDevice(gpus_[static_cast<size_t>(g)].ordinal);
            if (cudaError_t e = cudaEventCreate(&origin_[static_cast<size_t>(g)]); e != cudaSuccess)
                return unexpected(err("creating events", e));
        }
        return std::monostate{};
    }

    Expected<std::monostate, std::string> make_kernels() {
        auto ops = resolve_plan_ops(plan_->graph, OpLibrary::standard());
        if (!ops) return unexpected(ops.error());
        ops_ = std::move(ops).value();
        // Each device's workspace: the plan's workspace buffer where it has one.
        std::vector<std::pair<void *, std::int64_t>> workspace(plan_->devices.size(), {nullptr, 0});
        for (size_t b = 0; b < plan_->buffers.size(); ++b)
            if (plan_->buffers[b].kind == plan::BufferKind::workspace)
                workspace[static_cast<size_t>(plan_->buffers[b].device)] = {data_[b], plan_->buffers[b].bytes};
        kernels_.clear();
        kernels_.resize(plan_->steps.size());
        std::string error;
        for (size_t i = 0; i < plan_->steps.size(); ++i) {
            const plan::Step &s = plan_->steps[i];
            if (s.kind != plan::StepKind::kernel || !desc_.steps[i].here) continue;
            auto k = make_kernel(s);
            if (!k) return unexpected(step_text(static_cast<int>(i)) + ": " + k.error());
            const std::int64_t need = static_cast<std::int64_t>(k->kernel->workspace_bytes());
            auto &[ws, have] = workspace[static_cast<size_t>(s.device)];
            if (need > have) {
                // The kernel needs more scratch than the plan reserved: a larger one, beyond the plan's memory.
                ws = device_alloc(desc_.device_gpu[static_cast<size_t>(s.device)], need,
                                  "device " + device_name(s.device) + ": kernel workspace beyond the plan's", error);
                if (!error.empty()) return unexpected(error);
                have = need;
                extra_bytes_ += need;
            }
            k->workspace = need > 0 ? ws : nullptr;
            kernels_[i] = std::make_unique<PreparedKernel>(std::move(k).value());
        }
        return std::monostate{};
    }

    Expected<PreparedKernel, std::string> make_kernel(const plan::Step &s) {
        auto bound = bind_kernel_step(*plan_, s, ops_);
        if (!bound) return unexpected(bound.error());
        const ResolvedPlanOp &op = *bound->op;
        const cuda::KernelFactory *factory = cuda::find_kernel(op.op->kind);
        if (!factory) return unexpected("no CUDA kernel for kind '" + op.op->kind + "'");
        PreparedKernel k;
        cuda::KernelSpec spec;
        spec.def = op.def;
        spec.params = op.params;
        spec.derivation = op.relative;
        spec.operands = op.operands;
        spec.index_range = bound->index;
        spec.tf32 = options_.tf32;
        auto view = [&](const StepOperand &o) {
            cuda::View v;
            v.dtype = o.dtype;
            v.shape = o.range.shape();
            if (o.buffer < 0) {
                v.strides.assign(static_cast<size_t>(o.range.rank()), 1);
                return v;
            }
            const plan::Buffer &b = plan_->buffers[static_cast<size_t>(o.buffer)];
            const HostBox hb = host_box(data_[static_cast<size_t>(o.buffer)], b.region, o.range, b.dtype);
            v.data = hb.data;
            v.strides = o.range.rank() == 0 ? std::vector<std::int64_t>{} : hb.strides;
            return v;
        };
        for (const StepOperand &o : bound->inputs) {
            k.inputs.push_back(view(o));
            spec.input_shapes.push_back(k.inputs.back().shape);
            spec.input_strides.push_back(k.inputs.back().strides);
        }
        for (const StepOperand &o : bound->outputs) {
            k.outputs.push_back(view(o));
            spec.output_shapes.push_back(k.outputs.back().shape);
            spec.output_strides.push_back(k.outputs.back().strides);
        }
        cuda::Context &context = *contexts_[static_cast<size_t>(desc_.device_gpu[static_cast<size_t>(s.device)])];
        cudaSetDevice(context.ordinal());
        auto made = factory->make(spec, context);
        if (!made) return unexpected(made.error());
        k.kernel = std::move(made).value();
        return k;
    }

    // ---- running ------------------------------------------------------------------------
    // Every plan stream of GPU g idle (made current): a run's origin comes before anything
    // a step does.
    Expected<std::monostate, std::string> idle_streams_of(int g) {
        cudaSetDevice(gpus_[static_cast<size_t>(g)].ordinal);
        for (size_t k = 0; k < streams_.size(); ++k)
            if (streams_[k] && desc_.streams[k].gpu == g)
                if (cudaError_t e = cudaStreamSynchronize(streams_[k]); e != cudaSuccess)
                    return unexpected(err("waiting for " + stream_text(static_cast<int>(k)), e));
        return std::monostate{};
    }

    Expected<std::monostate, std::string> record_origin() {
        for (int g = 0; g < desc_.gpus; ++g) {
            if (auto idle = idle_streams_of(g); !idle) return idle;
            if (cudaError_t e = cudaEventRecord(origin_[static_cast<size_t>(g)], nullptr); e != cudaSuccess)
                return unexpected(err("recording the launch's start on GPU " + std::to_string(g), e));
            if (cudaError_t e = cudaEventSynchronize(origin_[static_cast<size_t>(g)]); e != cudaSuccess)
                return unexpected(err("recording the launch's start on GPU " + std::to_string(g), e));
        }
        return std::monostate{};
    }

    // The gated run's origin: every stream of each GPU idle, then on a stream of its own the
    // gate's kernel and the origin event after it — recorded when the gate opens.
    Expected<std::monostate, std::string> hold_at_gate() {
        gate_->close();
        gate_streams_.resize(static_cast<size_t>(desc_.gpus), nullptr);
        for (int g = 0; g < desc_.gpus; ++g) {
            if (auto idle = idle_streams_of(g); !idle) return idle;
            cudaStream_t &stream = gate_streams_[static_cast<size_t>(g)];
            if (!stream)
                if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
                    return unexpected(err("creating the gate's stream on GPU " + std::to_string(g), e));
            if (auto h = gate_->hold(stream, kGateLimit); !h) {
                gate_->open();
                return unexpected(h.error());
            }
            if (cudaError_t e = cudaEventRecord(origin_[static_cast<size_t>(g)], stream); e != cudaSuccess) {
                gate_->open();
                return unexpected(err("recording the gated run's start on GPU " + std::to_string(g), e));
            }
        }
        return std::monostate{};
    }

    // Enqueues step s: its waits, start event, work, end event, and the held streams' waits.
    Expected<StepOutcome, std::string> enqueue_step(int s) {
        const size_t i = static_cast<size_t>(s);
        const CudaStepLaunch &l = desc_.steps[i];
        if (!l.here) return StepOutcome{};  // another rank's
        if (auto turn = await_turn(s); !turn) return unexpected(turn.error());
        struct EndTurn {
            CudaBackend *self;
            int step;
            ~EndTurn() { self->end_turn(step); }
        } end_turn_on_exit{this, s};
        cudaStream_t stream = streams_[static_cast<size_t>(l.stream)];
        cudaSetDevice(gpus_[static_cast<size_t>(gpu_of_step(s))].ordinal);
        for (int w : l.waits)
            if (cudaError_t e = cudaStreamWaitEvent(stream, end_[static_cast<size_t>(w)], 0); e != cudaSuccess)
                return unexpected(err("waiting for step " + std::to_string(w), e));
        if (cudaError_t e = cudaEventRecord(start_[i], stream); e != cudaSuccess) return unexpected(err("recording its start", e));
        Expected<StepOutcome, std::string> out = StepOutcome{};
        const plan::Step &st = plan_->steps[i];
        switch (st.kind) {
            case plan::StepKind::kernel: {
                PreparedKernel *k = kernels_[i].get();
                if (!k) return unexpected(std::string("no kernel was prepared for it"));
                if (auto r = k->kernel->enqueue(k->inputs, k->outputs, k->workspace, stream); !r)
                    return unexpected(r.error());
                break;
            }
            case plan::StepKind::copy:
            case plan::StepKind::send_recv: out = run_transfer(*plan_, s, *this); break;
            case plan::StepKind::collective:
                if (auto st_it = staging_.find(s); st_it != staging_.end()) st_it->second.used = 0;
                out = launch::run_collective(*plan_, s, *this);
                break;
        }
        if (!out) return out;
        if (!move_error_.empty()) {
            std::string e;
            std::swap(e, move_error_);
            return unexpected(e);
        }
        if (cudaError_t e = cudaEventRecord(end_[i], stream); e != cudaSuccess) return unexpected(err("recording its end", e));
        for (int h : l.holds)
            if (cudaError_t e = cudaStreamWaitEvent(streams_[static_cast<size_t>(h)], end_[i], 0); e != cudaSuccess)
                return unexpected(err("holding " + stream_text(h), e));
        return out;
    }

    // Under mpirun the steps whose messages cross ranks are enqueued in plan order on
    // every rank (a ticket each): NCCL matches two ranks' sends and receives in the
    // order they were posted, and the launcher's stream workers would post them in
    // whatever order their steps became ready.
    Expected<std::monostate, std::string> await_turn(int s) {
        const int t = ticket_.empty() ? -1 : ticket_[static_cast<size_t>(s)];
        if (t < 0) return std::monostate{};
        std::unique_lock lock(ticket_mutex_);
        const auto deadline = Clock::now() + wait_limit_;
        while (next_ticket_ != t) {
            if (stop_ && stop_()) return unexpected(std::string("stopped: the launch failed elsewhere"));
            if (Clock::now() >= deadline)
                return unexpected("waited over " + plan::seconds_text(wait_limit_.count() / 1000.0) +
                                  " for the steps before it whose messages cross ranks to be enqueued");
            ticket_cv_.wait_for(lock, std::chrono::milliseconds(10));
        }
        return std::monostate{};
    }
    void end_turn(int s) {
        if (ticket_.empty() || ticket_[static_cast<size_t>(s)] < 0) return;
        {
            std::lock_guard lock(ticket_mutex_);
            ++next_ticket_;
        }
        ticket_cv_.notify_all();
    }

    // The launcher's way: enqueue, then wait for the step's end.
    Expected<StepOutcome, std::string> run_step(int s) {
        auto out = enqueue_step(s);
        if (!out) return out;
        if (auto w = wait_for_end(s); !w) return unexpected(w.error());
        return out;
    }

    // Polls step s's end event, bounded: by the launch's wait limit (a kernel that never
    // ends, an NCCL message whose peer never comes), by an error NCCL reports, and by
    // the launcher's stop flag. NCCL's communicators are aborted on a timeout or an NCCL
    // error, which ends their operations in flight; a kernel that never ends leaves its
    // GPU wedged, and this backend then no longer waits for its streams.
    Expected<std::monostate, std::string> wait_for_end(int s) {
        const auto start = Clock::now(), deadline = start + wait_limit_;
        cudaEvent_t end = end_[static_cast<size_t>(s)];
        for (int polls = 0;; ++polls) {
            const cudaError_t e = cudaEventQuery(end);
            if (e == cudaSuccess) return std::monostate{};
            if (e != cudaErrorNotReady) return unexpected(err("it failed on the GPU", e));
            // NCCL's calls on a communicator are not to overlap: another stream worker in
            // nccl_hop holds the lock, and this poll waits for the next round.
            if (std::unique_lock lock(nccl_mutex_, std::try_to_lock); lock && nccl_)
                if (auto a = nccl_->async_error()) {
                    nccl_->abort();
                    return unexpected(*a);
                }
            if (stop_ && stop_()) return unexpected(std::string("stopped: the launch failed elsewhere"));
            // Another rank's fault (its NCCL messages will not come): checked between sleeps.
            if (world_ && polls >= 2000 && polls % 20 == 0)
                if (auto f = world_->remote_fault()) {
                    std::lock_guard lock(nccl_mutex_);
                    if (nccl_) nccl_->abort();
                    return unexpected(*f);
                }
            if (Clock::now() >= deadline) {
                std::lock_guard lock(nccl_mutex_);
                const bool nccl = nccl_ && !nccl_->aborted();
                if (nccl) nccl_->abort();
                else wedged_ = true;
                return unexpected("it did not finish on GPU " + std::to_string(gpu_of_step(s)) + " within " +
                                  plan::seconds_text(wait_limit_.count() / 1000.0) +
                                  (nccl ? " (NCCL's communicators aborted)"
                                        : " (a kernel that does not end: the GPU stays busy until this process exits)"));
            }
            // Short steps end within microseconds: spin a little before sleeping.
            if (polls < 2000) std::this_thread::yield();
            else std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

    // ---- BoxMemory: boxes of GPU memory, moved on the running step's stream -------------------
    HostBox box_in(int buffer, const ZRange &box) const override {
        const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
        return host_box(data_[static_cast<size_t>(buffer)], b.region, box, b.dtype);
    }
    bool local(int device) const override { return owns(device); }
    Expected<double, std::string> hop(int step, int from, const HostBox &src, int to, const HostBox &dst, std::int64_t lo,
                                      std::int64_t hi, bool add) override {
        const bool here = owns(from), there = owns(to);
        if (!here && !there) return 0.0;  // two other ranks' hop
        if (nccl_ && from != to) return nccl_hop(step, from, src, to, dst, lo, hi, add);
        if (!here || !there)
            return unexpected("a message between ranks (" + device_name(from) + " → " + device_name(to) + ") without NCCL");
        move_here(step, src, dst, lo, hi, add);
        if (!move_error_.empty()) return unexpected(move_error_);
        return from == to ? 0.0 : static_cast<double>(hi - lo) * dtype_bytes(src.dtype);
    }
    void move_here(int step, const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi, bool add) override {
        if (hi <= lo || (!add && src.data == dst.data)) return;  // a message passed on in place
        cudaStream_t stream = streams_[static_cast<size_t>(desc_.steps[static_cast<size_t>(step)].stream)];
        if (auto r = cuda::enqueue_box_move(view_of(src), view_of(dst), lo, hi, add, stream); !r && move_error_.empty())
            move_error_ = r.error();
    }
    Expected<HostBox, std::string> staging(int step, DType dtype, std::int64_t elements) override {
        auto it = staging_.find(step);
        const std::int64_t bytes = schedule_align(size_mul(elements, dtype_bytes(dtype)));
        if (it == staging_.end() || it->second.used + bytes > it->second.bytes)
            return unexpected(std::string("its staging buffer was not prepared"));
        std::byte *p = it->second.data + it->second.used;
        it->second.used += bytes;
        const ZRange flat = ZRange::of_shape({elements});
        return host_box(p, flat, flat, dtype);
    }

    // ---- NCCL --------------------------------------------------------------------------
    // The devices a step touches: those whose streams it holds (launch.h step_streams).
    static std::vector<int> step_devices(const plan::Step &st) {
        std::vector<int> devices;
        for (int k : step_streams(st)) devices.push_back(k / 2);
        return devices;
    }
    // Whether step s moves data between this rank's devices and another rank's.
    bool crosses_ranks(int s) const {
        const plan::Step &st = plan_->steps[static_cast<size_t>(s)];
        if (ranks() == 1 || st.kind == plan::StepKind::kernel) return false;
        bool mine = false, theirs = false;
        for (int d : step_devices(st)) (owns(d) ? mine : theirs) = true;
        return mine && theirs;
    }
    // Whether any step of the plan moves data between two ranks (the same answer on every rank).
    bool plan_crosses_ranks() const {
        if (ranks() == 1) return false;
        for (const plan::Step &st : plan_->steps) {
            if (st.kind == plan::StepKind::kernel) continue;
            std::vector<int> owners;
            for (int d : step_devices(st)) owners.push_back(rank_of_device(d, devices_, ranks()));
            if (std::adjacent_find(owners.begin(), owners.end(), std::not_equal_to<>()) != owners.end()) return true;
        }
        return false;
    }

    bool uses_nccl() const {
        if (plan_crosses_ranks()) return true;
        if (plan_->devices.size() < 2) return false;
        switch (options_.transport) {
            case CudaTransport::automatic: return desc_.gpus > 1 && cuda::nccl_built();
            case CudaTransport::peer: return false;
            case CudaTransport::nccl: return true;
        }
        return false;
    }

    // A transfer's or collective's bytes at most in one hop: its largest box (or its
    // writes together: reduce_scatter's staged messages) at its widest dtype.
    std::int64_t hop_bound(const plan::Step &st) const {
        std::int64_t largest = 0, writes = 0, widest = 1;
        for (const auto *regions : {&st.reads, &st.writes})
            for (const plan::Region &r : *regions) {
                largest = std::max(largest, r.box.size());
                widest = std::max<std::int64_t>(widest, dtype_bytes(plan_->buffers[static_cast<size_t>(r.buffer)].dtype));
            }
        for (const plan::Region &w : st.writes) writes = size_add(writes, w.box.size());
        return size_mul(std::max(largest, writes), widest);
    }

    // The communicators (one per GPU of the plan, kept from plan to plan on the same
    // GPUs), a stream per GPU for a hop's far side, the events that fork it from and
    // join it to the step's stream, and per stream a staging pair (send, receive) for
    // hops whose boxes are not dense, sized by the largest hop of its steps.
    Expected<std::monostate, std::string> make_nccl() {
        ticket_.assign(plan_->steps.size(), -1);
        for (int s = 0, t = 0; s < static_cast<int>(plan_->steps.size()); ++s)
            if (desc_.steps[static_cast<size_t>(s)].here && crosses_ranks(s)) ticket_[static_cast<size_t>(s)] = t++;
        if (!uses_nccl()) {
            nccl_.reset();
            return std::monostate{};
        }
        std::vector<int> ordinals;
        for (int g = 0; g < desc_.gpus; ++g) ordinals.push_back(gpus_[static_cast<size_t>(g)].ordinal);
        if (plan_crosses_ranks()) {
            // One NCCL rank per GPU of every process, made anew for each plan (every rank
            // prepares it): the ranks' GPU counts gathered, the unique id rank 0's.
            if (!cuda::nccl_built())
                return unexpected("the plan moves data between ranks, which needs NCCL: " + cuda::nccl_version());
            if (shared_gpus_)
                return unexpected("the plan moves data between ranks, but the " + std::to_string(world_->node_ranks()) +
                                  " ranks on this machine share its " + std::to_string(found_gpus_) +
                                  " GPU(s), and NCCL refuses two ranks on one GPU: run at most " +
                                  std::to_string(found_gpus_) + " rank(s) a machine");
            nccl_.reset();
            auto counts = world_->allgather(desc_.gpus, "every rank's GPU count");
            if (!counts) return unexpected(counts.error());
            cuda::NcclBootstrap boot;
            for (int r = 0; r < ranks(); ++r) {
                if (r == rank()) boot.first = boot.ranks;
                boot.ranks += static_cast<int>((*counts)[static_cast<size_t>(r)]);
            }
            boot.id.assign(128, '\0');
            if (rank() == 0) {
                auto id = cuda::nccl_unique_id();
                if (!id) return unexpected(id.error());
                boot.id = *id;
            }
            if (auto b = world_->broadcast(boot.id.data(), static_cast<std::int64_t>(boot.id.size()), 0, "NCCL's unique id from rank 0"); !b)
                return unexpected(b.error());
            auto made = cuda::NcclComms::make(ordinals, wait_limit_, &boot);
            if (!made) return unexpected(made.error());
            nccl_ = std::move(made).value();
            // Device d's NCCL rank: its rank's first, plus its GPU there.
            std::vector<int> first_device(static_cast<size_t>(ranks()), -1), device_count(static_cast<size_t>(ranks()), 0);
            for (int d = 0; d < devices_; ++d) {
                const int r = rank_of_device(d, devices_, ranks());
                if (first_device[static_cast<size_t>(r)] < 0) first_device[static_cast<size_t>(r)] = d;
                ++device_count[static_cast<size_t>(r)];
            }
            std::vector<int> first_rank(static_cast<size_t>(ranks()), 0);
            for (int r = 1; r < ranks(); ++r)
                first_rank[static_cast<size_t>(r)] = first_rank[static_cast<size_t>(r - 1)] + static_cast<int>((*counts)[static_cast<size_t>(r - 1)]);
            nccl_rank_.assign(static_cast<size_t>(devices_), 0);
            for (int d = 0; d < devices_; ++d) {
                const size_t r = static_cast<size_t>(rank_of_device(d, devices_, ranks()));
                const bool one_each = (*counts)[r] >= device_count[r];
                nccl_rank_[static_cast<size_t>(d)] = first_rank[r] + (one_each ? d - first_device[r] : 0);
            }
        } else {
            if (!nccl_ || nccl_->ranks() != desc_.gpus || nccl_->aborted()) {
                nccl_.reset();
                auto made = cuda::NcclComms::make(ordinals, wait_limit_);
                if (!made) return unexpected(made.error());
                nccl_ = std::move(made).value();
            }
            nccl_rank_ = desc_.device_gpu;
        }
        far_.assign(static_cast<size_t>(desc_.gpus), nullptr);
        fork_.assign(static_cast<size_t>(desc_.gpus), nullptr);
        join_.assign(static_cast<size_t>(desc_.gpus), nullptr);
        for (int g = 0; g < desc_.gpus; ++g) {
            cudaSetDevice(gpus_[static_cast<size_t>(g)].ordinal);
            if (cudaError_t e = cudaStreamCreateWithFlags(&far_[static_cast<size_t>(g)], cudaStreamNonBlocking); e != cudaSuccess)
                return unexpected(err("creating the NCCL stream of GPU " + std::to_string(g), e));
            for (auto *events : {&fork_, &join_})
                if (cudaError_t e = cudaEventCreateWithFlags(&(*events)[static_cast<size_t>(g)], cudaEventDisableTiming); e != cudaSuccess)
                    return unexpected(err("creating events", e));
        }
        std::map<cudaStream_t, std::pair<int, std::int64_t>> need;  // stream → (gpu, bytes)
        for (size_t s = 0; s < plan_->steps.size(); ++s) {
            const plan::Step &st = plan_->steps[s];
            if (st.kind == plan::StepKind::kernel || !desc_.steps[s].here) continue;
            const std::int64_t bound = hop_bound(st);
            const int gs = gpu_of_step(static_cast<int>(s));
            auto grow = [&](cudaStream_t k, int g) {
                auto &[gpu, bytes] = need[k];
                gpu = g;
                bytes = std::max(bytes, bound);
            };
            grow(streams_[static_cast<size_t>(desc_.steps[s].stream)], gs);
            for (int d : step_devices(st))
                if (const int g = desc_.device_gpu[static_cast<size_t>(d)]; g >= 0 && g != gs) grow(far_[static_cast<size_t>(g)], g);
        }
        nccl_staging_.clear();
        std::string error;
        for (const auto &[stream, want] : need) {
            const std::int64_t half = schedule_align(want.second);
            auto *p = static_cast<std::byte *>(device_alloc(want.first, size_mul(half, 2), "the NCCL staging of GPU " + std::to_string(want.first), error));
            if (!error.empty()) return unexpected(error);
            extra_bytes_ += size_mul(half, 2);
            nccl_staging_[stream] = {p, p ? p + half : nullptr};
        }
        return std::monostate{};
    }

    // One hop as an NCCL message: packed into the sender's staging unless its elements
    // are one run of memory, received into the receiver's staging unless they can land
    // in place (a dense box of the same dtype, not added), unpacked from there. The side
    // on the step's GPU runs on the step's stream, the other on its GPU's NCCL stream,
    // forked from the step's stream and joined back to it. Serialised: the launcher's
    // stream workers share the communicators.
    Expected<double, std::string> nccl_hop(int step, int from, const HostBox &src, int to, const HostBox &dst,
                                           std::int64_t lo, std::int64_t hi, bool add) {
        if (hi <= lo) return 0.0;
        std::lock_guard lock(nccl_mutex_);
        // A side on another rank has no GPU here (-1) and no stream: that rank posts it.
        const int ga = desc_.device_gpu[static_cast<size_t>(from)], gb = desc_.device_gpu[static_cast<size_t>(to)];
        const int gs = gpu_of_step(step);
        cudaStream_t here = streams_[static_cast<size_t>(desc_.steps[static_cast<size_t>(step)].stream)];
        auto side = [&](int g) -> cudaStream_t { return g < 0 ? nullptr : g == gs ? here : far_[static_cast<size_t>(g)]; };
        cudaStream_t sa = side(ga), sb = side(gb);
        std::vector<std::pair<cudaStream_t, int>> forked;
        for (auto [k, g] : {std::pair{sa, ga}, std::pair{sb, gb}})
            if (k && k != here && std::find(forked.begin(), forked.end(), std::pair{k, g}) == forked.end()) {
                cudaSetDevice(gpus_[static_cast<size_t>(gs)].ordinal);
                if (cudaError_t e = cudaEventRecord(fork_[static_cast<size_t>(gs)], here); e != cudaSuccess)
                    return unexpected(err("forking an NCCL message's far side", e));
                if (cudaError_t e = cudaStreamWaitEvent(k, fork_[static_cast<size_t>(gs)], 0); e != cudaSuccess)
                    return unexpected(err("forking an NCCL message's far side", e));
                forked.emplace_back(k, g);
            }
        const std::int64_t esize = dtype_bytes(src.dtype), bytes = size_mul(hi - lo, esize);
        const std::int64_t elements = src.elements();
        auto staged = [&](cudaStream_t k, bool receive) -> std::byte * {
            auto it = nccl_staging_.find(k);
            return it == nccl_staging_.end() ? nullptr : (receive ? it->second.second : it->second.first);
        };
        const std::byte *send = src.data ? src.data + lo * esize : nullptr;
        if (sa && !dense(src)) {
            std::byte *pack = staged(sa, false);
            if (!pack) return unexpected(std::string("no NCCL staging was prepared for its sender"));
            cudaSetDevice(gpus_[static_cast<size_t>(ga)].ordinal);
            if (auto r = cuda::enqueue_box_move(view_of(src), flat_window(pack, src.dtype, elements, lo), lo, hi, false, sa); !r)
                return unexpected("packing an NCCL message: " + r.error());
            send = pack;
        }
        const bool unpack = sb && (add || !dense(dst) || dst.dtype != src.dtype);
        std::byte *receive = !sb ? nullptr : unpack ? staged(sb, true) : dst.data + lo * esize;
        if (sb && !receive) return unexpected(std::string("no NCCL staging was prepared for its receiver"));
        const int ra = nccl_rank_[static_cast<size_t>(from)], rb = nccl_rank_[static_cast<size_t>(to)];
        if (auto x = nccl_->exchange(ra, send, sa, rb, receive, sb, bytes, wait_limit_); !x)
            return unexpected(device_name(from) + " → " + device_name(to) + ": " + x.error());
        if (unpack) {
            cudaSetDevice(gpus_[static_cast<size_t>(gb)].ordinal);
            if (auto r = cuda::enqueue_box_move(flat_window(receive, src.dtype, elements, lo), view_of(dst), lo, hi, add, sb); !r)
                return unexpected("unpacking an NCCL message: " + r.error());
        }
        for (auto [k, g] : forked) {
            cudaSetDevice(gpus_[static_cast<size_t>(g)].ordinal);
            if (cudaError_t e = cudaEventRecord(join_[static_cast<size_t>(g)], k); e != cudaSuccess)
                return unexpected(err("joining an NCCL message's far side", e));
            if (cudaError_t e = cudaStreamWaitEvent(here, join_[static_cast<size_t>(g)], 0); e != cudaSuccess)
                return unexpected(err("joining an NCCL message's far side", e));
        }
        cudaSetDevice(gpus_[static_cast<size_t>(gs)].ordinal);
        // The bytes this rank sent (the receiver's rank counts none, as the mpi backend's).
        return from == to || !sa ? 0.0 : static_cast<double>(bytes);
    }

    void release() {
        if (!plan_) return;
        if (wedged_) {
            // A kernel that never ended holds its stream: waiting for it, or freeing what
            // it uses, would hang. The process's end releases it all.
            plan_ = nullptr;
            return;
        }
        for (size_t k = 0; k < streams_.size(); ++k)
            if (streams_[k]) {
                cudaSetDevice(gpus_[static_cast<size_t>(desc_.streams[k].gpu)].ordinal);
                cudaStreamSynchronize(streams_[k]);
            }
        kernels_.clear();
        for (cudaEvent_t e : start_)
            if (e) cudaEventDestroy(e);
        for (cudaEvent_t e : end_)
            if (e) cudaEventDestroy(e);
        for (cudaEvent_t e : origin_)
            if (e) cudaEventDestroy(e);
        start_.clear();
        end_.clear();
        origin_.clear();
        for (size_t k = 0; k < streams_.size(); ++k)
            if (streams_[k]) cudaStreamDestroy(streams_[k]);
        streams_.clear();
        for (size_t g = 0; g < gate_streams_.size(); ++g)
            if (gate_streams_[g]) {
                cudaSetDevice(gpus_[g].ordinal);
                cudaStreamSynchronize(gate_streams_[g]);
                cudaStreamDestroy(gate_streams_[g]);
            }
        gate_streams_.clear();
        for (size_t g = 0; g < far_.size(); ++g) {
            cudaSetDevice(gpus_[g].ordinal);
            if (far_[g]) {
                cudaStreamSynchronize(far_[g]);
                cudaStreamDestroy(far_[g]);
            }
            for (cudaEvent_t e : {fork_[g], join_[g]})
                if (e) cudaEventDestroy(e);
        }
        far_.clear();
        fork_.clear();
        join_.clear();
        nccl_staging_.clear();
        ticket_.clear();
        for (auto &[gpu, p] : allocations_) {
            cudaSetDevice(gpus_[static_cast<size_t>(gpu)].ordinal);
            cudaFree(p);
        }
        allocations_.clear();
        staging_.clear();
        cudaGetLastError();
        plan_ = nullptr;
    }

    struct Staging {
        std::byte *data = nullptr;
        std::int64_t bytes = 0, used = 0;
    };

    CudaBackendOptions options_;
    std::vector<GpuInfo> gpus_;
    const plan::Plan *plan_ = nullptr;
    CudaLaunchDescriptors desc_;
    std::vector<std::unique_ptr<cuda::Context>> contexts_;  // per GPU used
    std::vector<std::pair<int, void *>> allocations_;       // (gpu, pointer)
    std::vector<std::byte *> data_;                         // per buffer
    std::map<int, Staging> staging_;                        // per collective step that needs one
    std::vector<cudaStream_t> streams_;                     // per descriptor stream (null: unused)
    std::vector<cudaEvent_t> start_, end_, origin_;
    std::unique_ptr<cuda::Gate> gate_;          // made by the first gated run
    std::vector<cudaStream_t> gate_streams_;    // per GPU: the gate's kernel
    static constexpr std::chrono::milliseconds kGateLimit{1000};
    std::map<OpId, ResolvedPlanOp> ops_;
    std::vector<std::unique_ptr<PreparedKernel>> kernels_;  // per step (kernel steps)
    std::int64_t extra_bytes_ = 0;
    // NCCL (make_nccl): the communicators, per GPU a stream and fork/join events for a
    // hop's far side, per stream its staging (send half, receive half).
    std::unique_ptr<cuda::NcclComms> nccl_;
    std::vector<int> nccl_rank_;  // per plan device
    std::vector<cudaStream_t> far_;
    std::vector<cudaEvent_t> fork_, join_;
    std::map<cudaStream_t, std::pair<std::byte *, std::byte *>> nccl_staging_;
    std::mutex nccl_mutex_;
    // The launcher's bounds on a wait (set_wait_limits) and whether a kernel outlived one.
    std::chrono::milliseconds wait_limit_{120000};
    std::function<bool()> stop_;
    bool wedged_ = false;
    // Under mpirun (options.world): the ranks, this rank's devices, the outputs other
    // ranks sent to rank 0, and the order of the steps whose messages cross ranks.
    std::shared_ptr<RankWorld> world_;
    int devices_ = 0;
    bool shared_gpus_ = false;  // more ranks on this machine than GPUs
    int found_gpus_ = 0;        // the GPUs this machine has
    std::map<int, std::vector<std::byte>> remote_outputs_;
    std::vector<int> ticket_;  // per step: its place among the steps crossing ranks, or -1
    int next_ticket_ = 0;
    std::mutex ticket_mutex_;
    std::condition_variable ticket_cv_;
    // The first failed box move of the step being enqueued (BoxMemory::move_here has no error channel).
    static thread_local std::string move_error_;
};

thread_local std::string CudaBackend::move_error_;

}  // namespace

bool cuda_backend_built() { return true; }
std::string cuda_nccl_status() { return cuda::nccl_version(); }

Expected<std::vector<GpuInfo>, std::string> cuda_gpus() {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
        cudaGetLastError();
        // The two answers a machine without a usable GPU gives, said plainly first.
        if (e == cudaErrorInsufficientDriver)
            return unexpected(std::string("no GPU: no CUDA driver on this machine, or one older than this build's CUDA "
                                          "runtime (cudaGetDeviceCount: cudaErrorInsufficientDriver)"));
        if (e == cudaErrorNoDevice)
            return unexpected(std::string("no GPU: the CUDA driver finds no device (cudaGetDeviceCount: cudaErrorNoDevice)"));
        return unexpected(err("no GPU: cudaGetDeviceCount failed", e));
    }
    if (count == 0) return unexpected(std::string("no GPU: the CUDA runtime finds no device"));
    std::vector<GpuInfo> out;
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p{};
        if (cudaError_t e = cudaGetDeviceProperties(&p, i); e != cudaSuccess)
            return unexpected(err("GPU " + std::to_string(i) + ": cudaGetDeviceProperties", e));
        GpuInfo g;
        g.ordinal = i;
        g.name = p.name;
        g.memory = static_cast<std::int64_t>(p.totalGlobalMem);
        g.cc_major = p.major;
        g.cc_minor = p.minor;
        g.multiprocessors = p.multiProcessorCount;
        size_t free = 0, total = 0;
        cudaSetDevice(i);
        if (cudaMemGetInfo(&free, &total) == cudaSuccess) g.free = static_cast<std::int64_t>(free);
        for (int j = 0; j < count; ++j) {
            int can = 0;
            if (j != i && cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess && can) g.peers.push_back(j);
        }
        out.push_back(std::move(g));
    }
    cudaGetLastError();
    return out;
}

Expected<std::monostate, std::string> cuda_devices_usable() {
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) return unexpected(err("cudaGetDeviceCount", e));
    for (int i = 0; i < count; ++i) {
        cudaSetDevice(i);
        if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
            return unexpected(err("GPU " + std::to_string(i) + " is unusable after a fault in this process", e));
    }
    return std::monostate{};
}

Expected<std::unique_ptr<Backend>, std::string> make_cuda_backend(const CudaBackendOptions &options) {
    auto gpus = cuda_gpus();
    if (!gpus) return unexpected(gpus.error());
    std::vector<GpuInfo> use = std::move(gpus).value();
    const int found = static_cast<int>(use.size());
    bool shared = false;
    if (options.world && options.world->node_ranks() > 1) {
        // The ranks of one machine split its GPUs: rank i of L takes [i·G/L, (i+1)·G/L);
        // more ranks than GPUs share them (rank i on GPU i mod G), which NCCL refuses.
        const int L = options.world->node_ranks(), i = options.world->node_rank();
        if (L <= found) {
            use = std::vector<GpuInfo>(use.begin() + i * found / L, use.begin() + (i + 1) * found / L);
        } else {
            use = {use[static_cast<size_t>(i % found)]};
            shared = true;
        }
    }
    if (options.gpus > 0 && static_cast<int>(use.size()) > options.gpus) use.resize(static_cast<size_t>(options.gpus));
    return std::unique_ptr<Backend>(new CudaBackend(options, std::move(use), found, shared));
}

Expected<EnqueuedRun, std::string> run_enqueued(Backend &backend, int warmups, int repeats, Submission submission) {
    auto *cuda = dynamic_cast<CudaBackend *>(&backend);
    if (!cuda) return unexpected("run_enqueued needs the cuda backend, not " + backend.name());
    return cuda->enqueued(warmups, repeats, submission);
}

}  // namespace tapestry::launch

#else  // no CUDA toolkit in this build

namespace tapestry::launch {

namespace {
const char *kNoCuda = "this build has no CUDA backend (CMake found no CUDA toolkit: install it and rebuild)";
}

bool cuda_backend_built() { return false; }
std::string cuda_nccl_status() { return kNoCuda; }
Expected<std::vector<GpuInfo>, std::string> cuda_gpus() { return unexpected(std::string(kNoCuda)); }
Expected<std::unique_ptr<Backend>, std::string> make_cuda_backend(const CudaBackendOptions &) {
    return unexpected(std::string(kNoCuda));
}
Expected<EnqueuedRun, std::string> run_enqueued(Backend &, int, int, Submission) {
    return unexpected(std::string(kNoCuda));
}
Expected<std::monostate, std::string> cuda_devices_usable() { return unexpected(std::string(kNoCuda)); }

}  // namespace tapestry::launch

#endif
