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
    // Per input view: its buffer (−1: none) and byte offset in it — an input or
    // parameter is placed after the kernels are made, so its views are re-aimed.
    std::vector<std::pair<int, std::int64_t>> input_at;
};

void HostBackend::FreeDeleter::operator()(std::byte *p) const { std::free(p); }

// ---- arenas kept between launches ---------------------------------------------------
//
// A fresh arena costs its first page faults (tens of ms for 100 MiB on a VM); the
// arenas of a finished launch are kept for the next one in this process, as a GPU
// runtime's caching allocator keeps device memory: at most 1 GiB and at most an
// eighth of the memory available, the oldest given back first.

namespace {
std::mutex &kept_mutex() {
    static std::mutex m;
    return m;
}
}  // namespace

std::vector<HostBackend::Arena> &HostBackend::kept_arenas() {
    static std::vector<Arena> kept;
    return kept;
}

HostBackend::Arena HostBackend::take_arena(std::size_t size) {
    {
        std::lock_guard lock(kept_mutex());
        std::vector<Arena> &kept = kept_arenas();
        size_t best = kept.size();
        for (size_t i = 0; i < kept.size(); ++i)
            if (kept[i].size >= size && kept[i].size <= 2 * size && (best == kept.size() || kept[i].size < kept[best].size))
                best = i;
        if (best < kept.size()) {
            Arena a = std::move(kept[best]);
            kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(best));
            return a;
        }
    }
    Arena a;
    a.memory.reset(static_cast<std::byte *>(std::aligned_alloc(schedule::kArenaAlign, size)));
    a.size = a.memory ? size : 0;
    return a;
}

void HostBackend::keep_arena(Arena arena) {
    if (!arena.memory) return;
    const std::int64_t available = cpu::available_memory();
    const std::size_t cap =
        std::min<std::size_t>(std::size_t{1} << 30, available > 0 ? static_cast<std::size_t>(available / 8) : 0);
    std::lock_guard lock(kept_mutex());
    std::vector<Arena> &kept = kept_arenas();
    kept.push_back(std::move(arena));
    std::size_t total = 0;
    for (const Arena &a : kept) total += a.size;
    while (!kept.empty() && total > cap) {
        total -= kept.front().size;
        kept.erase(kept.begin());
    }
}

void HostBackend::return_arenas() {
    for (Arena &a : arenas_) keep_arena(std::move(a));
    arenas_.clear();
}

namespace {

std::string buffer_name(const plan::Plan &plan, int b) {
    const plan::Buffer &buf = plan.buffers[static_cast<size_t>(b)];
    return "buffer " + std::to_string(b) + " (" + (buf.tensor.value.empty() ? "workspace" : buf.tensor.value) +
           " on " + plan.devices[static_cast<size_t>(buf.device)].name + ")";
}

}  // namespace

int HostBackend::machine_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

HostBackend::HostBackend(const CpuBackendOptions &options) : options_(options) {}
HostBackend::~HostBackend() { return_arenas(); }

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

std::byte *HostBackend::host_memory(int buffer) {
    const size_t b = static_cast<size_t>(buffer);
    if (b < loading_.size() && loading_[b]) {
        const std::int64_t bytes = plan_->buffers[b].bytes;
        loaded_[b].reset(new std::byte[static_cast<size_t>(std::max<std::int64_t>(1, bytes))]);
        data_[b] = loaded_[b].get();
        loading_[b] = 0;
    }
    return data_[b];
}

bool HostBackend::read_in_place(int buffer, std::span<const std::byte> bytes) {
    const size_t b = static_cast<size_t>(buffer);
    if (b >= loading_.size() || !loading_[b] || static_cast<std::int64_t>(bytes.size()) != plan_->buffers[b].bytes)
        return false;
    if (!readable_in_place_[b]) return false;
    data_[b] = const_cast<std::byte *>(bytes.data());  // read only: no step writes it
    loading_[b] = 0;
    return true;
}

Expected<std::monostate, std::string> HostBackend::upload(int buffer, std::span<const std::byte> bytes) {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    host_memory(buffer);
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
    for (size_t i = 0; i < k->input_at.size(); ++i)
        if (const auto [b, off] = k->input_at[i]; b >= 0 && data_[static_cast<size_t>(b)])
            k->inputs[i].data = data_[static_cast<size_t>(b)] + off;
    // The kernel's thread count on this thread, and the thread's own back after it
    // (a stream may run on the launching thread, whose count is its caller's).
    const int caller = cpu::omp_threads();
    if (caller != threads_) cpu::set_omp_threads(threads_);
    std::string failed;
    try {
        k->kernel->run(k->inputs, k->outputs);
    } catch (const std::exception &e) {
        failed = std::string("kernel failed: ") + e.what();
    }
    if (caller != threads_) cpu::set_omp_threads(caller);
    if (!failed.empty()) return unexpected(failed);
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
    return_arenas();
    for (int d = 0; d < static_cast<int>(plan.devices.size()); ++d) {
        const plan::Device &dev = plan.devices[static_cast<size_t>(d)];
        if (!local(d) || dev.arena_bytes <= 0) {
            arenas_.emplace_back();
            continue;
        }
        Arena a = take_arena(schedule::align_up(static_cast<std::size_t>(dev.arena_bytes)));
        if (!a.memory)
            return unexpected("device " + dev.name + ": its arena of " + byte_text(dev.arena_bytes) + " could not be allocated");
        arenas_.push_back(std::move(a));
    }
    data_.assign(plan.buffers.size(), nullptr);
    resident_.assign(plan.buffers.size(), {});
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> used(plan.devices.size());  // arena byte ranges
    loaded_.clear();
    loaded_.resize(plan.buffers.size());
    loading_.assign(plan.buffers.size(), 0);
    std::map<TensorId, int> boxes;  // buffers per tensor
    for (const plan::Buffer &buf : plan.buffers) ++boxes[buf.tensor];
    readable_in_place_.assign(plan.buffers.size(), 0);
    for (size_t b = 0; b < plan.buffers.size(); ++b) readable_in_place_[b] = boxes[plan.buffers[b].tensor] == 1;
    for (const plan::Step &s : plan.steps)
        for (const plan::Region &r : s.writes)
            if (r.buffer >= 0 && static_cast<size_t>(r.buffer) < plan.buffers.size())
                readable_in_place_[static_cast<size_t>(r.buffer)] = 0;
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
            if (local(buf.device) && buf.kind != plan::BufferKind::workspace && buf.bytes > 0)
                used[static_cast<size_t>(buf.device)].emplace_back(buf.offset, buf.offset + buf.bytes);
        } else if (local(buf.device)) {
            if (buf.kind == plan::BufferKind::input || buf.kind == plan::BufferKind::parameter) {
                loading_[b] = 1;  // placed when loaded
                continue;
            }
            resident_[b].resize(static_cast<size_t>(buf.bytes));
            data_[b] = resident_[b].data();
        }
    }
    // The arena pages the plan's buffers use are touched now (a byte each), so
    // that no step pays for their first page faults — a device's memory is there
    // before the plan runs, as a GPU's is; a workspace the CPU kernels never use is
    // left alone.
    constexpr std::int64_t kPage = 4096;
    for (size_t d = 0; d < used.size(); ++d) {
        auto &ranges = used[d];
        std::sort(ranges.begin(), ranges.end());
        std::int64_t next = 0;  // the first byte not yet touched
        for (const auto &[lo, hi] : ranges)
            for (std::int64_t at = std::max(lo, next); at < hi; at = (at / kPage + 1) * kPage) {
                *static_cast<volatile std::byte *>(arenas_[d].get() + at) = std::byte{0};
                next = (at / kPage + 1) * kPage;
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
        k.input_at.emplace_back(o.buffer, o.buffer >= 0 ? box_offset(plan.buffers[static_cast<size_t>(o.buffer)].region, o.range) *
                                                              dtype_bytes(o.dtype)
                                                        : 0);
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
