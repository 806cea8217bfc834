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
#include "graph/resolve.h"
#include "ops/library.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/cpu/program_plan.h"

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

int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

}  // namespace

HostBackend::HostBackend(const CpuBackendOptions &options) : options_(options) {}
HostBackend::~HostBackend() = default;

std::int64_t HostBackend::device_capacity(int devices) const {
    if (options_.device_memory > 0) return options_.device_memory;
    const std::int64_t available = cpu::available_memory();
    return available > 0 ? available / std::max(1, devices) : 0;
}

int HostBackend::threads_for(int local_devices) const {
    return options_.kernel_threads > 0 ? options_.kernel_threads : std::max(1, cores() / std::max(1, local_devices));
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
    const plan::Step &s = plan_->steps[static_cast<size_t>(step)];
    const bool tree = s.algorithm == "tree";
    if (tree && s.collective != "all_reduce")
        return unexpected("algorithm 'tree' is not one " + s.collective + " runs (ring only)");
    if (!tree && !s.algorithm.empty() && s.algorithm != "ring")
        return unexpected("unknown collective algorithm '" + s.algorithm + "' (known: ring, tree)");
    Expected<StepOutcome, std::string> out = unexpected("unknown collective '" + s.collective + "'");
    if (s.collective == "all_reduce") out = all_reduce(step, s, tree);
    else if (s.collective == "reduce_scatter") out = reduce_scatter(step, s);
    else if (s.collective == "all_gather") out = all_gather(step, s);
    else if (s.collective == "broadcast") out = broadcast(step, s);
    if (!out) return out;
    if (auto f = finish_hops(step); !f) return unexpected(f.error());
    return out;
}

Expected<double, std::string> HostBackend::hop(int step, int from, const HostBox &src, int to, const HostBox &dst,
                                               std::int64_t lo, std::int64_t hi, bool add) {
    (void)step;
    // A message passed on in place (reduce_scatter's staging buffer) is not copied onto itself.
    if (add) add_elements(src, dst, lo, hi);
    else if (src.data != dst.data) copy_elements(src, dst, lo, hi);
    return from == to ? 0.0 : static_cast<double>(hi - lo) * dtype_bytes(src.dtype);
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

HostBox HostBackend::box_of(const plan::Region &r) const {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(r.buffer)];
    return host_box(data_[static_cast<size_t>(r.buffer)], b.region, r.box, b.dtype);
}

std::string HostBackend::device_text(int dev) const {
    return "participant " + plan_->devices[static_cast<size_t>(dev)].name;
}

// ---- kernels ----------------------------------------------------------------------------

Expected<std::monostate, std::string> HostBackend::make_kernels(const plan::Plan &plan) {
    cpu::CpuOptions copts;
    copts.run_shards = true;
    auto ops = cpu::resolve_operations(plan.graph, OpLibrary::standard(), copts);
    if (!ops) return unexpected(ops.error());
    ops_ = std::make_unique<cpu::ResolvedOps>(std::move(ops).value());
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
    const auto it = ops_->index.find(OpId(s.op));
    if (it == ops_->index.end()) return unexpected("operation '" + s.op + "' is not in the plan's graph");
    const cpu::ResolvedOp &info = ops_->ops[static_cast<size_t>(it->second)];
    ZRange index = info.absolute.signature.index_space;
    if (!s.shard.empty()) {
        const auto sh = std::find_if(info.op->shards.begin(), info.op->shards.end(),
                                     [&](const Shard &x) { return x.id.value == s.shard; });
        if (sh == info.op->shards.end()) return unexpected("operation '" + s.op + "' has no shard '" + s.shard + "'");
        index = sh->index;
    }
    const ShardSelections sel = derive_shard_selections(plan.graph, *info.op, info.absolute.signature, index);
    // A view of a selection, on the step's region of it.
    auto view_of = [&](const TensorSelection &t, const std::vector<plan::Region> &regions,
                       const char *what) -> Expected<cpu::View, std::string> {
        const Tensor *tensor = plan.graph.find_tensor(t.tensor);
        cpu::View v;
        v.dtype = tensor ? tensor->dtype : DType::f32;
        v.shape = t.range.shape();
        for (const plan::Region &r : regions) {
            const plan::Buffer &b = plan.buffers[static_cast<size_t>(r.buffer)];
            if (b.tensor != t.tensor || !(r.box == t.range)) continue;
            if (b.device != s.device) return unexpected(std::string("it ") + what + " a buffer of another device");
            const HostBox hb = box_of(r);
            v.data = hb.data;
            v.dtype = b.dtype;
            v.strides = t.range.rank() == 0 ? std::vector<std::int64_t>{} : hb.strides;
            return v;
        }
        if (t.range.empty() && t.range.rank() > 0) {
            v.strides.assign(static_cast<size_t>(t.range.rank()), 1);
            return v;  // touches nothing
        }
        return unexpected("it " + std::string(what) + " no region for " + t.tensor.value + " " + t.range.to_string() +
                          ", which its shard selects");
    };
    PreparedKernel k;
    cpu::KernelSpec spec;
    spec.def = info.def;
    spec.params = info.params;
    spec.derivation = info.relative;
    spec.operands = info.operands;
    spec.index_range = index;
    spec.threads = threads_;
    for (const TensorSelection &t : cpu::selections_in_port_order(sel.inputs, info.def->input_ports())) {
        auto v = view_of(t, s.reads, "reads");
        if (!v) return unexpected(v.error());
        spec.input_shapes.push_back(v->shape);
        spec.input_strides.push_back(v->strides);
        k.inputs.push_back(std::move(v).value());
    }
    for (const TensorSelection &t : cpu::selections_in_port_order(sel.outputs, info.def->output_ports())) {
        auto v = view_of(t, s.writes, "writes");
        if (!v) return unexpected(v.error());
        spec.output_shapes.push_back(v->shape);
        spec.output_strides.push_back(v->strides);
        k.outputs.push_back(std::move(v).value());
    }
    auto made = cpu::make_kernel(ops_->factory(info), spec);
    if (!made) return unexpected(made.error());
    k.kernel = std::move(made->kernel);
    return k;
}

// ---- transfers and collectives -----------------------------------------------------------

// copy and send_recv: the one read box into the one write box.
Expected<StepOutcome, std::string> HostBackend::transfer(int step) {
    const plan::Step &s = plan_->steps[static_cast<size_t>(step)];
    if (s.reads.size() != 1 || s.writes.size() != 1)
        return unexpected("a " + std::string(plan::step_kind_name(s.kind)) + " reads one box and writes one (it has " +
                          std::to_string(s.reads.size()) + " and " + std::to_string(s.writes.size()) + ")");
    const HostBox src = box_of(s.reads[0]), dst = box_of(s.writes[0]);
    if (src.elements() != dst.elements()) return unexpected(std::string("its read and write boxes differ in size"));
    auto moved = hop(step, device_of(s.reads[0]), src, device_of(s.writes[0]), dst, 0, dst.elements(), false);
    if (!moved) return unexpected(moved.error());
    if (auto f = finish_hops(step); !f) return unexpected(f.error());
    return StepOutcome{*moved};
}

const plan::Region *HostBackend::read_on(const plan::Step &s, int dev) const {
    for (const plan::Region &r : s.reads)
        if (device_of(r) == dev) return &r;
    return nullptr;
}

const plan::Region *HostBackend::write_on(const plan::Step &s, int dev) const {
    for (const plan::Region &r : s.writes)
        if (device_of(r) == dev) return &r;
    return nullptr;
}

// Participant's partials (read region `read`, dims 1.. in T) of output box `z`
// (Z coordinates), summed over their dim 0 into `dst`; `first`: dst starts empty.
void HostBackend::add_partials(const plan::Region &read, const ZRange &z, const ZPoint &shift, const HostBox &dst,
                               bool first) const {
    ZPoint start = ZPoint::zeros(read.box.rank()), end = ZPoint::zeros(read.box.rank());
    start[0] = read.box.start()[0];
    end[0] = read.box.end()[0];
    for (int d = 1; d < read.box.rank(); ++d) {
        start[d] = z.start()[d - 1] + shift[d - 1];
        end[d] = z.end()[d - 1] + shift[d - 1];
    }
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(read.buffer)];
    const HostBox all = host_box(data_[static_cast<size_t>(read.buffer)], b.region, ZRange(start, end), b.dtype);
    for (std::int64_t k = 0; k < all.shape[0]; ++k) {
        if (first && k == 0) copy_box(all.slice0(0), dst);
        else add_elements(all.slice0(k), dst, 0, dst.elements());
    }
}

// T (partials, [parts, …]) dims 1.. minus Z's coordinates.
Expected<ZPoint, std::string> HostBackend::partial_shift(const plan::Step &s) const {
    if (s.reads.empty() || s.writes.empty()) return unexpected(std::string("it reads or writes nothing"));
    const Tensor *t = plan_->graph.find_tensor(plan_->buffers[static_cast<size_t>(s.reads.front().buffer)].tensor);
    const Tensor *z = plan_->graph.find_tensor(plan_->buffers[static_cast<size_t>(s.writes.front().buffer)].tensor);
    if (!t || !z || t->range.rank() != z->range.rank() + 1)
        return unexpected(std::string("it does not sum a partials tensor over its dim 0 into one of a rank less"));
    ZPoint shift = ZPoint::zeros(z->range.rank());
    for (int d = 0; d < z->range.rank(); ++d) shift[d] = t->range.start()[d + 1] - z->range.start()[d];
    return shift;
}

// Every participant's sum in its own write box, then ring (reduce-scatter and
// all-gather of n chunks) or tree (a binary reduction to the first participant,
// then a binary broadcast).
Expected<StepOutcome, std::string> HostBackend::all_reduce(int step, const plan::Step &s, bool tree) {
    if (s.reads.empty() || s.writes.size() != s.participants.size())
        return unexpected(std::string("an all_reduce writes one box on each participant"));
    auto shift = partial_shift(s);
    if (!shift) return unexpected(shift.error());
    const ZRange &z = s.writes.front().box;
    const std::vector<int> &p = s.participants;
    std::vector<HostBox> w;
    for (int dev : p) {
        const plan::Region *write = write_on(s, dev);
        const plan::Region *read = read_on(s, dev);
        if (!write || !read || !(write->box == z))
            return unexpected(device_text(dev) + " does not read its partials and write the summed box");
        w.push_back(box_of(*write));
        if (local(dev)) add_partials(*read, z, *shift, w.back(), true);
    }
    const int n = static_cast<int>(w.size());
    const std::int64_t count = w.front().elements();
    StepOutcome out;
    auto move = [&](int from, int to, std::int64_t lo, std::int64_t hi, bool add) -> Expected<std::monostate, std::string> {
        auto moved = hop(step, p[static_cast<size_t>(from)], w[static_cast<size_t>(from)], p[static_cast<size_t>(to)],
                         w[static_cast<size_t>(to)], lo, hi, add);
        if (!moved) return unexpected(moved.error());
        out.moved_bytes += *moved;
        return std::monostate{};
    };
    if (tree) {
        for (int stride = 1; stride < n; stride *= 2)
            for (int i = 0; i + stride < n; i += 2 * stride)
                if (auto m = move(i + stride, i, 0, count, true); !m) return unexpected(m.error());
        int top = 1;
        while (top < n) top *= 2;
        for (int stride = top / 2; stride >= 1; stride /= 2)
            for (int i = 0; i + stride < n; i += 2 * stride)
                if (auto m = move(i, i + stride, 0, count, false); !m) return unexpected(m.error());
        return out;
    }
    auto chunk = [&](int c, std::int64_t &lo, std::int64_t &hi) {
        lo = count * c / n;
        hi = count * (c + 1) / n;
    };
    for (int k = 0; k < n - 1; ++k)  // reduce-scatter: chunk (i − k) travels i → i+1, added there
        for (int i = 0; i < n; ++i) {
            std::int64_t lo, hi;
            chunk(((i - k) % n + n) % n, lo, hi);
            if (auto m = move(i, (i + 1) % n, lo, hi, true); !m) return unexpected(m.error());
        }
    for (int k = 0; k < n - 1; ++k)  // all-gather: device i holds chunk (i + 1) summed
        for (int i = 0; i < n; ++i) {
            std::int64_t lo, hi;
            chunk(((i + 1 - k) % n + n) % n, lo, hi);
            if (auto m = move(i, (i + 1) % n, lo, hi, false); !m) return unexpected(m.error());
        }
    return out;
}

// Each write's sum travels the ring from the participant after its owner, each
// device adding its partials, and lands in the owner's box.
Expected<StepOutcome, std::string> HostBackend::reduce_scatter(int step, const plan::Step &s) {
    auto shift = partial_shift(s);
    if (!shift) return unexpected(shift.error());
    const std::vector<int> &p = s.participants;
    const int n = static_cast<int>(p.size());
    StepOutcome out;
    for (const plan::Region &write : s.writes) {
        const int owner = static_cast<int>(std::find(p.begin(), p.end(), device_of(write)) - p.begin());
        if (owner == n) return unexpected(std::string("a write lies on a device that is not a participant"));
        const HostBox dst = box_of(write);
        // The message in flight: dense, the write's dtype (NCCL's staging buffer).
        std::vector<std::byte> message(static_cast<size_t>(dst.elements()) * static_cast<size_t>(dtype_bytes(dst.dtype)));
        const ZRange flat = ZRange::of_shape({dst.elements()});
        const HostBox msg = host_box(message.data(), flat, flat, dst.dtype);
        for (int h = 1; h <= n; ++h) {
            const int dev = p[static_cast<size_t>((owner + h) % n)];
            const plan::Region *read = read_on(s, dev);
            if (!read) return unexpected(device_text(dev) + " contributes no partials");
            if (h > 1) {  // the message arrives from the previous participant
                auto moved = hop(step, p[static_cast<size_t>((owner + h - 1) % n)], msg, dev, msg, 0, msg.elements(), false);
                if (!moved) return unexpected(moved.error());
                out.moved_bytes += *moved;
            }
            if (!local(dev)) continue;
            if (h < n) {
                add_partials(*read, write.box, *shift, msg, h == 1);
            } else {
                copy_box(msg, dst);
                add_partials(*read, write.box, *shift, dst, false);
            }
        }
    }
    return out;
}

// Each participant's piece into its own box of the gathered tensor, then ring: at
// step k device i passes piece (i − k) to device i+1.
Expected<StepOutcome, std::string> HostBackend::all_gather(int step, const plan::Step &s) {
    const std::vector<int> &p = s.participants;
    const int n = static_cast<int>(p.size());
    if (s.writes.size() != p.size() || s.reads.size() != p.size())
        return unexpected(std::string("an all_gather reads one piece and writes the whole box on each participant"));
    ZRange pieces = s.reads.front().box;
    for (const plan::Region &r : s.reads) pieces = pieces.bounding(r.box);
    const ZRange &whole = s.writes.front().box;
    if (!(whole.shape() == pieces.shape())) return unexpected(std::string("its pieces do not tile the box it gathers"));
    const ZPoint back = whole.start() - pieces.start();
    std::vector<const plan::Region *> piece(p.size()), write(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
        piece[i] = read_on(s, p[i]);
        write[i] = write_on(s, p[i]);
        if (!piece[i] || !write[i] || !(write[i]->box == whole))
            return unexpected(device_text(p[i]) + " does not contribute a piece and receive the whole box");
    }
    auto place = [&](size_t holder, size_t k) {  // piece k's box in holder's write buffer
        const plan::Buffer &b = plan_->buffers[static_cast<size_t>(write[holder]->buffer)];
        return host_box(data_[static_cast<size_t>(write[holder]->buffer)], b.region, piece[k]->box.translated(back), b.dtype);
    };
    for (size_t i = 0; i < p.size(); ++i)
        if (local(p[i])) copy_box(box_of(*piece[i]), place(i, i));
    StepOutcome out;
    for (int k = 0; k < n - 1; ++k)
        for (int i = 0; i < n; ++i) {
            const size_t which = static_cast<size_t>(((i - k) % n + n) % n);
            const size_t to = static_cast<size_t>((i + 1) % n);
            const HostBox src = place(static_cast<size_t>(i), which);
            auto moved = hop(step, p[static_cast<size_t>(i)], src, p[to], place(to, which), 0, src.elements(), false);
            if (!moved) return unexpected(moved.error());
            out.moved_bytes += *moved;
        }
    return out;
}

// The root's box along the chain root → next → … (ring), each receiver forwarding
// what it received.
Expected<StepOutcome, std::string> HostBackend::broadcast(int step, const plan::Step &s) {
    if (s.reads.size() != 1) return unexpected(std::string("a broadcast reads one box, on its root"));
    const int root = device_of(s.reads.front());
    const std::vector<int> &p = s.participants;
    const size_t at = static_cast<size_t>(std::find(p.begin(), p.end(), root) - p.begin());
    if (at == p.size()) return unexpected(std::string("its root is not a participant"));
    HostBox from = box_of(s.reads.front());
    int from_dev = root;
    StepOutcome out;
    for (size_t h = 1; h < p.size(); ++h) {
        const int dev = p[(at + h) % p.size()];
        const plan::Region *write = write_on(s, dev);
        if (!write) return unexpected(device_text(dev) + " receives nothing");
        const HostBox to = box_of(*write);
        if (to.elements() != from.elements()) return unexpected(std::string("a receiver's box differs from the root's"));
        auto moved = hop(step, from_dev, from, dev, to, 0, to.elements(), false);
        if (!moved) return unexpected(moved.error());
        out.moved_bytes += *moved;
        from = to;
        from_dev = dev;
    }
    return out;
}

}  // namespace tapestry::launch
