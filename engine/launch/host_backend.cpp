// The host backends' common part (launch/host_backend.h). Kernels are made once
// per kernel step at prepare time, so a launch's timings are runs, not
// compilations; collectives are hops in a fixed order that every process
// walks alike, so the ranks of an MPI launch meet hop by hop.
#include "launch/host_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "common/checked_size.h"
#include "ops/library.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/cpu/kernel.h"
#include "schedule/arena.h"

namespace tapestry::launch {

struct HostBackend::PreparedKernel {
    std::unique_ptr<cpu::Kernel> kernel;
    std::vector<cpu::View> inputs, outputs;
};

void HostBackend::FreeDeleter::operator()(std::byte *p) const { std::free(p); }

namespace {

std::string buffer_name(const plan::Plan &plan, int b) {
    const plan::Buffer &buf = plan.buffers[static_cast<size_t>(b)];
    return "buffer " + std::to_string(b) + " (" + (buf.tensor.value.empty() ? "workspace" : buf.tensor.value) +
           " on " + plan.devices[static_cast<size_t>(buf.device)].name + ")";
}

}  // namespace

int HostBackend::machine_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

HostBackend::HostBackend(const CpuBackendOptions &options) : options_(options) {}
HostBackend::~HostBackend() = default;

std::int64_t HostBackend::device_capacity(int devices) const {
    if (options_.device_memory > 0) return options_.device_memory;
    const std::int64_t available = cpu::available_memory();
    return available > 0 ? available / std::max(1, devices) : 0;
}

int HostBackend::threads_for(int local_devices) const {
    return options_.kernel_threads > 0 ? options_.kernel_threads : std::max(1, machine_cores() / std::max(1, local_devices));
}

Expected<std::monostate, std::string> HostBackend::prepare(const plan::Plan &plan) {
    plan_ = &plan;
    int here = 0;
    for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d) here += local(d) ? 1 : 0;
    threads_ = threads_for(here);
    if (auto m = allocate(plan); !m) return m;
    return make_kernels(plan);
}

Expected<std::monostate, std::string> HostBackend::upload(int buffer, std::span<const std::byte> bytes) {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    if (!data_[static_cast<size_t>(buffer)] && b.bytes > 0)
        return unexpected(buffer_name(*plan_, buffer) + " is not held by this process");
    if (static_cast<std::int64_t>(bytes.size()) != b.bytes)
        return unexpected(buffer_name(*plan_, buffer) + ": " + std::to_string(bytes.size()) + " bytes given for its " +
                          std::to_string(b.bytes));
    if (!bytes.empty()) std::memcpy(data_[static_cast<size_t>(buffer)], bytes.data(), bytes.size());
    return std::monostate{};
}

Expected<std::monostate, std::string> HostBackend::download(int buffer, std::span<std::byte> bytes) const {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    if (!data_[static_cast<size_t>(buffer)] && b.bytes > 0)
        return unexpected(buffer_name(*plan_, buffer) + " is not held by this process");
    if (static_cast<std::int64_t>(bytes.size()) != b.bytes)
        return unexpected(buffer_name(*plan_, buffer) + ": " + std::to_string(bytes.size()) + " bytes asked of its " +
                          std::to_string(b.bytes));
    if (!bytes.empty()) std::memcpy(bytes.data(), data_[static_cast<size_t>(buffer)], bytes.size());
    return std::monostate{};
}

Expected<StepOutcome, std::string> HostBackend::run_kernel(int step) {
    PreparedKernel *k = kernels_[static_cast<size_t>(step)].get();
    if (!k || !k->kernel) return unexpected(std::string("no kernel was prepared for it"));
    thread_local int omp = -1;
    if (omp != threads_) {
        cpu::set_omp_threads(threads_);
        omp = threads_;
    }
    try {
        k->kernel->run(k->inputs, k->outputs);
    } catch (const std::exception &e) {
        return unexpected(std::string("kernel failed: ") + e.what());
    }
    return StepOutcome{};
}

Expected<StepOutcome, std::string> HostBackend::run_collective(int step) {
    auto out = launch::run_collective(*plan_, step, *this);
    if (out)
        if (auto f = finish_hops(step); !f) out = unexpected(f.error());
    std::lock_guard lock(staging_mutex_);  // the messages in flight are done with
    staged_.erase(step);
    return out;
}

Expected<double, std::string> HostBackend::hop(int step, int from, const HostBox &src, int to, const HostBox &dst,
                                               std::int64_t lo, std::int64_t hi, bool add) {
    move_here(step, src, dst, lo, hi, add);
    return from == to ? 0.0 : static_cast<double>(hi - lo) * dtype_bytes(src.dtype);
}

void HostBackend::move_here(int step, const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi,
                            bool add) {
    (void)step;
    // A message passed on in place (reduce_scatter's staging buffer) is not copied onto itself.
    if (add) add_elements(src, dst, lo, hi);
    else if (src.data != dst.data) copy_elements(src, dst, lo, hi);
}

Expected<HostBox, std::string> HostBackend::staging(int step, DType dtype, std::int64_t elements) {
    std::lock_guard lock(staging_mutex_);
    std::vector<std::byte> &message = staged_[step].emplace_back(
        static_cast<size_t>(size_mul(elements, dtype_bytes(dtype))));
    const ZRange flat = ZRange::of_shape({elements});
    return host_box(message.data(), flat, flat, dtype);
}

// ---- memory ---------------------------------------------------------------------------

Expected<std::monostate, std::string> HostBackend::allocate(const plan::Plan &plan) {
    // Everything this process will hold, checked against the machine before any of it is allocated.
    std::int64_t total = 0;
    for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d)
        if (local(d))
            total = size_add(total, size_add(plan.devices[static_cast<size_t>(d)].arena_bytes,
                                             plan.devices[static_cast<size_t>(d)].resident_bytes));
    const std::int64_t available = cpu::available_memory();
    if (available > 0 && total > available)
        return unexpected("the plan's devices need " + byte_text(total) + " together here, but only " +
                          byte_text(available) + " is available");
    arenas_.clear();
    for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d) {
        const plan::Device &dev = plan.devices[static_cast<size_t>(d)];
        if (!local(d) || dev.arena_bytes <= 0) {
            arenas_.emplace_back();
            continue;
        }
        const std::size_t size = schedule::align_up(static_cast<std::size_t>(dev.arena_bytes));
        auto *p = static_cast<std::byte *>(std::aligned_alloc(schedule::kArenaAlign, size));
        if (!p) return unexpected("device " + dev.name + ": its arena of " + byte_text(dev.arena_bytes) + " could not be allocated");
        // Touched now, so that no step pays for the arena's first page faults: a
        // device's memory is there before the plan runs, as a GPU's is.
        std::memset(p, 0, size);
        arenas_.emplace_back(p);
    }
    data_.assign(plan.buffers.size(), nullptr);
    resident_.assign(plan.buffers.size(), {});
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const plan::Buffer &buf = plan.buffers[b];
        if (buf.device < 0 || buf.device >= static_cast<int>(plan.devices.size()))
            return unexpected(buffer_name(plan, static_cast<int>(b)) + " is on no device of the plan");
        if (buf.in_arena()) {
            const std::int64_t arena = plan.devices[static_cast<size_t>(buf.device)].arena_bytes;
            if (buf.offset < 0 || size_add(buf.offset, buf.bytes) > arena)
                return unexpected(buffer_name(plan, static_cast<int>(b)) + " at offset " + std::to_string(buf.offset) +
                                  " (" + std::to_string(buf.bytes) + " bytes) lies outside its device's arena of " +
                                  std::to_string(arena) + " bytes");
            if (local(buf.device)) data_[b] = arenas_[static_cast<size_t>(buf.device)].get() + buf.offset;
        } else if (local(buf.device)) {
            resident_[b].resize(static_cast<size_t>(buf.bytes));
            data_[b] = resident_[b].data();
        }
    }
    return std::monostate{};
}

HostBox HostBackend::box_in(int buffer, const ZRange &box) const {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    return host_box(data_[static_cast<size_t>(buffer)], b.region, box, b.dtype);
}

// ---- kernels ----------------------------------------------------------------------------

Expected<std::monostate, std::string> HostBackend::make_kernels(const plan::Plan &plan) {
    auto ops = resolve_plan_ops(plan.graph, OpLibrary::standard());
    if (!ops) return unexpected(ops.error());
    ops_ = std::move(ops).value();
    kernels_.clear();
    kernels_.resize(plan.steps.size());
    const int restore = cpu::omp_threads();
    cpu::set_omp_threads(threads_);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const plan::Step &s = plan.steps[i];
        if (s.kind != plan::StepKind::kernel || !local(s.device)) continue;
        auto made = make_kernel(plan, s);
        if (!made) {
            cpu::set_omp_threads(restore);
            return unexpected("step " + std::to_string(i) + " (kernel " + s.op + (s.shard.empty() ? "" : " " + s.shard) +
                              " on " + plan.devices[static_cast<size_t>(s.device)].name + "): " + made.error());
        }
        kernels_[i] = std::make_unique<PreparedKernel>(std::move(made).value());
    }
    cpu::set_omp_threads(restore);
    return std::monostate{};
}

Expected<HostBackend::PreparedKernel, std::string> HostBackend::make_kernel(const plan::Plan &plan,
                                                                            const plan::Step &s) const {
    auto bound = bind_kernel_step(plan, s, ops_);
    if (!bound) return unexpected(bound.error());
    const ResolvedPlanOp &op = *bound->op;
    const cpu::KernelFactory *factory = cpu::find_kernel(op.op->kind);
    if (!factory) return unexpected("no CPU kernel for kind '" + op.op->kind + "'");
    // A view of an operand on the step's region of its buffer.
    auto view_of = [&](const StepOperand &o) {
        cpu::View v;
        v.dtype = o.dtype;
        v.shape = o.range.shape();
        if (o.buffer < 0) {  // an empty selection: touches nothing
            v.strides.assign(static_cast<size_t>(o.range.rank()), 1);
            return v;
        }
        const HostBox hb = box_in(o.buffer, o.range);
        v.data = hb.data;
        v.strides = o.range.rank() == 0 ? std::vector<std::int64_t>{} : hb.strides;
        return v;
    };
    PreparedKernel k;
    cpu::KernelSpec spec;
    spec.def = op.def;
    spec.params = op.params;
    spec.derivation = op.relative;
    spec.operands = op.operands;
    spec.index_range = bound->index;
    spec.threads = threads_;
    for (const StepOperand &o : bound->inputs) {
        k.inputs.push_back(view_of(o));
        spec.input_shapes.push_back(k.inputs.back().shape);
        spec.input_strides.push_back(k.inputs.back().strides);
    }
    for (const StepOperand &o : bound->outputs) {
        k.outputs.push_back(view_of(o));
        spec.output_shapes.push_back(k.outputs.back().shape);
        spec.output_strides.push_back(k.outputs.back().strides);
    }
    auto made = cpu::make_kernel(*factory, spec);
    if (!made) return unexpected(made.error());
    k.kernel = std::move(made->kernel);
    return k;
}

// ---- transfers --------------------------------------------------------------------------

// copy and send_recv: the one read box into the one write box.
Expected<StepOutcome, std::string> HostBackend::transfer(int step) {
    auto out = run_transfer(*plan_, step, *this);
    if (!out) return out;
    if (auto f = finish_hops(step); !f) return unexpected(f.error());
    return out;
}

}  // namespace tapestry::launch
