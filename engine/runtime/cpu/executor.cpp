// The CPU executor (runtime/cpu/executor.h): compile = validate, order, resolve,
// fuse epilogues, plan buffers, make kernels; run = a DAG of steps on a pool of
// worker threads (whole operations one at a time with every thread inside
// oneDNN, shards in parallel with one thread each).
#include "runtime/cpu/executor.h"

#include "graph/order.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "graph/resolve.h"
#include "graph/validate.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {
namespace {

constexpr std::size_t kAlign = 64;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string quoted(const std::string &s) { return "'" + s + "'"; }

struct AlignedFree {
    void operator()(std::byte *p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte, AlignedFree>;

AlignedBuffer aligned_buffer(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    return AlignedBuffer(static_cast<std::byte *>(std::aligned_alloc(kAlign, align_up(bytes))));
}

// Where a tensor's values live during a run.
enum class Storage { input, parameter, output, arena, none };

struct TensorPlan {
    const Tensor *tensor = nullptr;
    Storage storage = Storage::none;
    std::size_t arena_offset = 0;
    std::size_t bytes = 0;
    std::vector<std::int64_t> strides;  // element strides of the tensor's range (row-major unless channels_last)
    bool channels_last = false;         // a 4-D [N, C, H, W] intermediate stored NHWC
    int slots = 0;  // > 0: a tiled run's own intermediate, stored as a ring of this many batch tiles
    int first_step = -1, last_step = -1;  // lifetime in step order
};

// One operand of a step: a box of a tensor.
struct Access {
    int tensor = -1;  // index into the tensor plans
    ZRange range;     // absolute coordinates
    bool write = false;
    int slot = -1;    // the ring slot of a tiled tensor (TensorPlan::slots), or -1
};

struct StepView {
    int tensor = -1;
    std::int64_t offset = 0;  // elements from the tensor's first element
    ZPoint shape;
    std::vector<std::int64_t> strides;
    DType dtype = DType::f32;
};

struct Step {
    std::string op;
    std::string shard;  // "" for a whole operation
    std::string kind;
    bool whole = true;  // runs alone with every thread
    int tile = -1, tiles = 0;        // batch tile k of K (CpuOptions::tile_bytes)
    int run = -1;                    // the tiled run it belongs to
    Coord tile_lo = 0, space_lo = 0, space_rows = 0;  // a tile's first index row; the op's index dim 0
    int op_order = 0;                // the op's position in dependency order
    std::vector<std::string> fused;  // epilogue operation ids
    std::string fallback;            // MadeKernel::fallback: why it computes in f32, or ""
    std::vector<std::string> notes;  // Kernel::notes()
    std::vector<StepView> inputs, outputs;
    std::vector<Access> accesses;
    std::unique_ptr<Kernel> kernel;
    // Or, for the tiles of an op (KernelFactory::tile_invariant), one kernel per worker.
    std::shared_ptr<std::vector<std::unique_ptr<Kernel>>> per_worker;
    Kernel &kernel_for(int worker) const { return per_worker ? *(*per_worker)[static_cast<size_t>(worker)] : *kernel; }
    std::vector<int> dependents;
    int dependencies = 0;
};


// Selections flattened in the op's port order (absent ports skipped).
std::vector<TensorSelection> flatten(const std::vector<PortBinding> &bindings, const std::vector<PortSpec> &ports) {
    std::vector<TensorSelection> out;
    for (const PortSpec &p : ports)
        for (const PortBinding &b : bindings)
            if (b.name == p.name) out.insert(out.end(), b.selections.begin(), b.selections.end());
    return out;
}

std::vector<PortTypes> in_port_order(const std::vector<PortTypes> &types, const std::vector<PortSpec> &ports) {
    std::vector<PortTypes> out;
    for (const PortSpec &p : ports)
        for (const PortTypes &t : types)
            if (t.port == p.name && !t.operands.empty()) out.push_back(t);
    return out;
}

// What one operation resolves to.
struct OpInfo {
    const Operation *op = nullptr;
    const OpDef *def = nullptr;
    const KernelFactory *factory = nullptr;
    Params params;
    Derivation relative;
    Derivation absolute;
    std::vector<PortTypes> operands;  // port order
    int order = 0;                    // position in dependency order
};

// A planned epilogue: the consumer op folded into its producer.
struct PlannedEpilogue {
    const OpInfo *consumer = nullptr;
    Epilogue epilogue;
    std::optional<TensorSelection> extra;  // the binary epilogue's other operand
};

class CpuProgram final : public Program {
public:
    ~CpuProgram() override { stop_workers(); }

    static Expected<std::unique_ptr<Program>, std::string> build(const Graph &g, const OpLibrary &lib,
                                                                 const CpuOptions &options);
    Expected<RunResult, std::string> run(const std::map<TensorId, TensorData> &inputs,
                                         const RunControl &control) override;
    std::string describe() const override { return description_; }
    std::vector<std::string> notices() const override { return notices_; }

private:
    void start_workers();
    void stop_workers();
    void worker_loop(int index);
    Expected<std::monostate, std::string> plan(const Graph &g, const OpLibrary &lib);
    void plan_tile_slots(const std::set<int> &eliminated);
    void plan_buffers();
    void plan_dependencies();
    std::string make_description() const;
    std::vector<std::string> make_notices() const;

    Graph graph_;
    CpuOptions options_;
    std::vector<TensorPlan> tensors_;
    std::map<TensorId, int> tensor_index_;
    std::vector<Step> steps_;
    std::size_t arena_bytes_ = 0;
    AlignedBuffer arena_;
    std::string description_;
    std::vector<std::string> notices_;

    // Run state (guarded by mutex_).
    std::mutex run_mutex_;  // one run at a time
    std::mutex mutex_;
    std::condition_variable work_cv_, done_cv_;
    std::vector<std::thread> workers_;
    bool stopping_ = false;
    std::set<int> ready_;
    std::vector<int> pending_;
    int running_ = 0;
    int finished_ = 0;
    bool exclusive_running_ = false;
    bool abort_ = false;
    std::string error_;
    bool cancelled_ = false;
    const RunControl *control_ = nullptr;
    std::vector<std::byte *> bases_;
    std::vector<double> step_ms_;
};

Expected<std::unique_ptr<Program>, std::string> CpuProgram::build(const Graph &g, const OpLibrary &lib,
                                                                  const CpuOptions &options) {
    const std::vector<Issue> issues = validate(g, lib);
    for (const Issue &i : issues)
        if (i.severity == Severity::error) return unexpected(format_issue(i));
    auto p = std::unique_ptr<CpuProgram>(new CpuProgram());
    p->graph_ = g;
    p->options_ = options;
    p->options_.threads = std::max(1, options.threads);
    auto planned = p->plan(p->graph_, lib);
    if (!planned) return unexpected(planned.error());
    p->description_ = p->make_description();
    p->notices_ = p->make_notices();
    p->start_workers();
    return std::unique_ptr<Program>(std::move(p));
}

Expected<std::monostate, std::string> CpuProgram::plan(const Graph &g, const OpLibrary &lib) {
    for (const TensorPtr &t : g.tensors()) {
        TensorPlan tp;
        tp.tensor = t.get();
        tp.bytes = static_cast<std::size_t>(t->bytes());
        tp.strides = dense_strides(t->shape());
        tensor_index_[t->id] = static_cast<int>(tensors_.size());
        tensors_.push_back(std::move(tp));
    }

    // Resolve every operation.
    std::vector<OpInfo> infos;
    const auto order = dependency_order(g).order;  // validation has refused cycles
    for (const Operation *op : order) {
        OpInfo info;
        info.op = op;
        info.def = lib.find(op->kind);
        info.factory = find_kernel(op->kind);
        if (!info.def || !info.factory)
            return unexpected("operation " + quoted(op->id.value) + ": no CPU kernel for kind " + quoted(op->kind));
        auto types = operand_types(g, *op);
        if (!types) return unexpected("operation " + quoted(op->id.value) + ": " + types.error().message);
        info.operands = in_port_order(*types, info.def->input_ports());
        auto rel = lib.derive(op->kind, op->params, *types);
        if (!rel) return unexpected("operation " + quoted(op->id.value) + ": " + rel.error().message);
        info.relative = std::move(rel).value();
        auto abs = resolve(g, *op, lib);
        if (!abs) return unexpected("operation " + quoted(op->id.value) + ": " + abs.error().message);
        info.absolute = std::move(abs).value();
        info.params = lib.with_defaults(*info.def, op->params);
        info.order = static_cast<int>(infos.size());
        infos.push_back(std::move(info));
    }
    std::map<OpId, const OpInfo *> by_id;
    for (const OpInfo &i : infos) by_id[i.op->id] = &i;
    auto sharded = [&](const OpInfo &i) { return options_.run_shards && !i.op->shards.empty(); };

    // Epilogue fusion: producer → its chain of folded consumers.
    std::map<const OpInfo *, std::vector<PlannedEpilogue>> epilogues;
    std::set<const OpInfo *> folded;
    if (options_.fuse_epilogues) {
        for (const OpInfo &p : infos) {
            if (sharded(p) || folded.count(&p)) continue;
            const auto p_outs = flatten(p.op->outputs, p.def->output_ports());
            if (p_outs.size() != 1) continue;
            TensorSelection current = p_outs[0];
            std::vector<PlannedEpilogue> chain;
            while (true) {
                const Tensor *t = g.find_tensor(current.tensor);
                if (!t || t->role == TensorRole::output) break;
                const auto consumers = g.consumers(current.tensor);
                const auto producers = g.producers(current.tensor);
                if (consumers.size() != 1 || producers.size() != 1) break;
                const OpInfo *c = by_id.at(consumers[0]);
                if (sharded(*c) || c->def->category() != "elementwise") break;
                // The consumer reads exactly the produced selection, once, without broadcasting it.
                const auto c_ins = flatten(c->op->inputs, c->def->input_ports());
                const auto c_outs = flatten(c->op->outputs, c->def->output_ports());
                if (c_outs.size() != 1 || c_outs[0].range.shape() != current.range.shape()) break;
                int uses = 0, at = -1;
                for (size_t i = 0; i < c_ins.size(); ++i)
                    if (c_ins[i].tensor == current.tensor) {
                        ++uses;
                        at = static_cast<int>(i);
                    }
                if (uses != 1 || !(c_ins[static_cast<size_t>(at)].range == current.range)) break;
                if (c_outs[0].tensor == current.tensor) break;
                PlannedEpilogue pe;
                pe.consumer = c;
                pe.epilogue.kind = c->op->kind;
                pe.epilogue.params = c->params;
                if (c_ins.size() == 2) {
                    // sub/div are not commutative: the producer must be the left operand.
                    if (at != 0 && (c->op->kind == "sub" || c->op->kind == "div")) break;
                    const TensorSelection &other = c_ins[static_cast<size_t>(1 - at)];
                    // Its producer must come before the fused step.
                    bool early = true;
                    for (const OpId &q : g.producers(other.tensor))
                        if (by_id.at(q)->order > p.order || folded.count(by_id.at(q))) early = false;
                    if (!early) break;
                    pe.extra = other;
                    const std::string port = at == 0 ? "b" : "a";
                    if (const OperandProjection *proj = c->relative.signature.input(port, 0)) pe.epilogue.projection = *proj;
                } else if (c_ins.size() != 1) {
                    break;
                }
                // Ask the producer's kernel, with the extra operands so far.
                KernelSpec probe;
                probe.def = p.def;
                probe.params = p.params;
                probe.derivation = p.relative;
                probe.operands = p.operands;
                probe.index_range = p.absolute.signature.index_space;
                const auto sel = derive_shard_selections(g, *p.op, p.absolute.signature, probe.index_range);
                for (const TensorSelection &s : flatten(sel.inputs, p.def->input_ports())) probe.input_shapes.push_back(s.range.shape());
                for (const TensorSelection &s : flatten(sel.outputs, p.def->output_ports())) probe.output_shapes.push_back(s.range.shape());
                int extras = 0;
                for (const PlannedEpilogue &e : chain) {
                    probe.epilogues.push_back(e.epilogue);
                    if (e.extra) {
                        probe.input_shapes.push_back(e.extra->range.shape());
                        ++extras;
                    }
                }
                if (pe.extra) {
                    pe.epilogue.extra_input = extras;
                    probe.input_shapes.push_back(pe.extra->range.shape());
                }
                if (!epilogue_supported(pe.epilogue) || !can_fuse(*p.factory, probe, pe.epilogue)) break;
                chain.push_back(pe);
                folded.insert(c);
                current = c_outs[0];
            }
            if (!chain.empty()) epilogues[&p] = std::move(chain);
        }
    }

    // Channels-last intermediates: a 4-D intermediate that only whole conv2d and
    // pool steps write and read (as their x) is laid out NHWC — what oneDNN's
    // direct convolutions and pools run fastest on — so that no step reorders it.
    if (options_.channels_last) {
        std::map<const OpInfo *, const OpInfo *> head;  // op → the step that runs it
        for (const OpInfo &i : infos) head[&i] = &i;
        for (const auto &[p, chain] : epilogues)
            for (const PlannedEpilogue &e : chain) head[e.consumer] = p;
        auto spatial = [](const std::string &k) { return k == "conv2d" || k == "max_pool2d" || k == "avg_pool2d"; };
        for (TensorPlan &tp : tensors_) {
            const Tensor &t = *tp.tensor;
            if (t.role != TensorRole::intermediate || t.range.rank() != 4) continue;
            const auto producers = g.producers(t.id), consumers = g.consumers(t.id);
            if (producers.empty() || consumers.empty()) continue;
            bool ok = true;
            for (const OpId &q : producers) {
                const OpInfo *h = head.at(by_id.at(q));
                ok = ok && !sharded(*h) && spatial(h->op->kind);
            }
            for (const OpId &q : consumers) {
                const OpInfo *c = by_id.at(q);
                ok = ok && !folded.count(c) && !sharded(*c) && spatial(c->op->kind);
                for (const PortBinding &b : c->op->inputs)
                    for (const TensorSelection &sel : b.selections)
                        if (sel.tensor == t.id && b.name != "x") ok = false;
            }
            if (!ok) continue;
            const ZPoint sh = t.range.shape();
            tp.strides = {sh[1] * sh[2] * sh[3], 1, sh[3] * sh[1], sh[1]};
            tp.channels_last = true;
        }
    }

    // Batch tiling (CpuOptions::tile_bytes): runs of consecutive unsharded steps
    // (in dependency order) whose index dim 0 is the batch of every operand but the
    // parameters — each tile of it reads and writes the same rows of dim 0 — and
    // whose parameters are small.
    std::map<const OpInfo *, int> tiles;     // head step → number of batch tiles
    std::map<const OpInfo *, int> tile_run;  // head step → its run
    if (options_.tile_bytes > 0) {
        constexpr std::size_t kMaxParamBytes = 1 << 20;  // weights read again by every tile
        struct Candidate {
            const OpInfo *info = nullptr;
            Coord batch = 0;
            std::size_t largest = 0;  // bytes of its largest batch-parallel operand
        };
        auto candidate = [&](const OpInfo &info) -> std::optional<Candidate> {
            if (sharded(info) || folded.count(&info)) return std::nullopt;
            const ZRange &space = info.absolute.signature.index_space;
            if (space.rank() == 0 || space.extent(0) < 2) return std::nullopt;
            const auto ep = epilogues.find(&info);
            if (ep != epilogues.end())
                for (const PlannedEpilogue &e : ep->second)
                    if (e.extra) return std::nullopt;
            const Coord n = space.extent(0);
            const ZRange part = space.split(0, 2)[1];
            const Coord shift = part.start()[0] - space.start()[0];
            const auto whole = derive_shard_selections(g, *info.op, info.absolute.signature, space);
            const auto cut = derive_shard_selections(g, *info.op, info.absolute.signature, part);
            Candidate c{&info, n, 0};
            std::size_t param_bytes = 0;
            auto follows = [&](const std::vector<TensorSelection> &w, const std::vector<TensorSelection> &p,
                               bool outputs) {
                if (w.size() != p.size()) return false;
                for (size_t i = 0; i < w.size(); ++i) {
                    const Tensor *t = g.find_tensor(w[i].tensor);
                    if (!t || w[i].tensor != p[i].tensor) return false;
                    const std::size_t bytes = static_cast<std::size_t>(w[i].range.size()) * dtype_bytes(t->dtype);
                    if (!outputs && t->role == TensorRole::parameter) {
                        if (!(p[i].range == w[i].range)) return false;
                        param_bytes += bytes;
                        continue;
                    }
                    const ZRange &a = w[i].range, &b = p[i].range;
                    if (a.rank() == 0 || a.rank() != b.rank() || a.extent(0) != n) return false;
                    if (b.start()[0] != a.start()[0] + shift || b.extent(0) != part.extent(0)) return false;
                    for (int d = 1; d < a.rank(); ++d)
                        if (a.start()[d] != b.start()[d] || a.end()[d] != b.end()[d]) return false;
                    c.largest = std::max(c.largest, bytes);
                }
                return true;
            };
            if (!follows(flatten(whole.inputs, info.def->input_ports()), flatten(cut.inputs, info.def->input_ports()),
                         false) ||
                !follows(flatten(whole.outputs, info.def->output_ports()),
                         flatten(cut.outputs, info.def->output_ports()), true))
                return std::nullopt;
            if (param_bytes > kMaxParamBytes) return std::nullopt;
            return c;
        };
        std::vector<Candidate> run;
        auto close_run = [&] {
            if (run.size() >= 2) {
                std::size_t largest = 0;
                for (const Candidate &c : run) largest = std::max(largest, c.largest);
                const Coord n = run.front().batch;
                // Worth it only when the run's tensors do not already fit in cache.
                if (largest >= 4 * options_.tile_bytes) {
                    const Coord want = static_cast<Coord>((largest + options_.tile_bytes - 1) / options_.tile_bytes);
                    const Coord k = std::min<Coord>(n, std::max<Coord>(2 * options_.threads, want));
                    const int id = static_cast<int>(tile_run.size());
                    for (const Candidate &c : run) {
                        tiles[c.info] = static_cast<int>(k);
                        tile_run[c.info] = id;
                    }
                }
            }
            run.clear();
        };
        for (const OpInfo &info : infos) {
            if (folded.count(&info)) continue;
            auto c = candidate(info);
            if (!c || (!run.empty() && run.front().batch != c->batch)) close_run();
            if (c) run.push_back(*c);
        }
        close_run();
    }

    // Steps.
    std::set<int> eliminated;  // intermediates folded away
    for (const auto &[p, chain] : epilogues) {
        const auto p_outs = flatten(p->op->outputs, p->def->output_ports());
        eliminated.insert(tensor_index_.at(p_outs[0].tensor));
        for (size_t i = 0; i + 1 < chain.size(); ++i) {
            const auto outs = flatten(chain[i].consumer->op->outputs, chain[i].consumer->def->output_ports());
            eliminated.insert(tensor_index_.at(outs[0].tensor));
        }
    }
    auto make_view = [&](const TensorSelection &s, Step &step, bool write) {
        const int ti = tensor_index_.at(s.tensor);
        const TensorPlan &tp = tensors_[static_cast<size_t>(ti)];
        StepView v;
        v.tensor = ti;
        v.shape = s.range.shape();
        v.strides = tp.strides;
        v.dtype = tp.tensor->dtype;
        if (!s.range.empty())
            for (int d = 0; d < s.range.rank(); ++d)
                v.offset += (s.range.start()[d] - tp.tensor->range.start()[d]) * tp.strides[static_cast<size_t>(d)];
        step.accesses.push_back({ti, s.range, write});
        return v;
    };
    std::map<std::string, std::shared_ptr<std::vector<std::unique_ptr<Kernel>>>> tile_kernels;
    std::map<std::string, std::string> shared_fallback;  // tile_kernels' make_kernel fallbacks
    // oneDNN fixes a primitive's thread count when the primitive is created (from
    // the creating thread's OpenMP setting), not when it runs: kernels are made
    // with the count of the step that runs them (spec.threads), or a one-thread
    // shard would run two threads inside a worker beside another worker.
    struct RestoreThreads {
        int n = omp_threads();
        ~RestoreThreads() { set_omp_threads(n); }
    } restore_threads;
    for (const OpInfo &info : infos) {
        if (folded.count(&info)) continue;
        const auto ep_it = epilogues.find(&info);
        std::vector<ZRange> ranges;
        std::vector<std::string> shard_ids;
        const auto tiled = tiles.find(&info);
        if (sharded(info)) {
            for (const Shard &s : info.op->shards) {
                ranges.push_back(s.index);
                shard_ids.push_back(s.id.value);
            }
        } else if (tiled != tiles.end()) {
            ranges = info.absolute.signature.index_space.split(0, tiled->second);
            shard_ids.resize(ranges.size());
        } else {
            ranges.push_back(info.absolute.signature.index_space);
            shard_ids.emplace_back();
        }
        for (size_t r = 0; r < ranges.size(); ++r) {
            if (ranges[r].empty() && ranges[r].rank() > 0) continue;  // touches nothing
            Step step;
            step.op = info.op->id.value;
            step.shard = shard_ids[r];
            step.kind = info.op->kind;
            step.op_order = info.order;
            if (tiled != tiles.end()) {
                step.tile = static_cast<int>(r);
                step.tiles = static_cast<int>(ranges.size());
                step.run = tile_run.at(&info);
                step.tile_lo = ranges[r].start()[0];
                step.space_lo = info.absolute.signature.index_space.start()[0];
                step.space_rows = info.absolute.signature.index_space.extent(0);
            }
            step.whole = shard_ids[r].empty() && step.tile < 0;
            const auto sel = derive_shard_selections(g, *info.op, info.absolute.signature, ranges[r]);
            for (const TensorSelection &s : flatten(sel.inputs, info.def->input_ports()))
                step.inputs.push_back(make_view(s, step, false));
            std::vector<TensorSelection> outs = flatten(sel.outputs, info.def->output_ports());
            KernelSpec spec;
            spec.def = info.def;
            spec.params = info.params;
            spec.derivation = info.relative;
            spec.operands = info.operands;
            spec.index_range = ranges[r];
            spec.threads = step.whole ? options_.threads : 1;
            spec.winograd = options_.winograd;
            spec.bf16_matmul = options_.bf16_matmul;
            if (ep_it != epilogues.end()) {
                for (const PlannedEpilogue &e : ep_it->second) {
                    spec.epilogues.push_back(e.epilogue);
                    step.fused.push_back(e.consumer->op->id.value);
                    if (e.extra) step.inputs.push_back(make_view(*e.extra, step, false));
                }
                const PlannedEpilogue &last = ep_it->second.back();
                std::vector<TensorSelection> head_outs = std::move(outs);
                outs = flatten(last.consumer->op->outputs, last.consumer->def->output_ports());
                if (step.tile >= 0) {
                    // The tile of the chain's output: the head's tile, moved to where the
                    // (same-shaped) last output starts.
                    const ZRange whole_out =
                        flatten(info.op->outputs, info.def->output_ports()).at(0).range;
                    outs.at(0).range = head_outs.at(0).range.translated(outs[0].range.start() - whole_out.start());
                }
            }
            for (const TensorSelection &s : outs) step.outputs.push_back(make_view(s, step, true));
            for (const StepView &v : step.inputs) {
                spec.input_shapes.push_back(v.shape);
                spec.input_strides.push_back(v.strides);
                // A parameter's own value (run() binds it unless the caller overrides it).
                const Tensor &t = *tensors_[static_cast<size_t>(v.tensor)].tensor;
                const bool constant = t.role == TensorRole::parameter && t.value && t.value->dtype == t.dtype &&
                                      t.value->shape == t.shape();
                spec.constant_inputs.push_back(constant ? t.value->bytes.data() + v.offset * dtype_bytes(v.dtype)
                                                        : nullptr);
            }
            for (const StepView &v : step.outputs) {
                spec.output_shapes.push_back(v.shape);
                spec.output_strides.push_back(v.strides);
            }
            set_omp_threads(spec.threads);
            if (step.tile >= 0 && info.factory->tile_invariant) {
                // Tiles of the same shapes and strides share one kernel per worker.
                std::ostringstream key;
                key << step.op;
                for (const auto *shapes : {&spec.input_shapes, &spec.output_shapes})
                    for (const ZPoint &z : *shapes) key << "|" << z.to_string();
                for (const auto *strides : {&spec.input_strides, &spec.output_strides})
                    for (const std::vector<std::int64_t> &st : *strides) {
                        key << "|";
                        for (std::int64_t x : st) key << x << ",";
                    }
                auto &shared = tile_kernels[key.str()];
                if (!shared) {
                    auto set = std::make_shared<std::vector<std::unique_ptr<Kernel>>>();
                    for (int w = 0; w < options_.threads; ++w) {
                        auto made = make_kernel(*info.factory, spec);
                        if (!made) return unexpected("operation " + quoted(step.op) + ": " + made.error());
                        shared_fallback[key.str()] = made->fallback;
                        set->push_back(std::move(made->kernel));
                    }
                    shared = std::move(set);
                }
                step.per_worker = shared;
                step.fallback = shared_fallback[key.str()];
                step.notes = (*shared)[0]->notes();
                steps_.push_back(std::move(step));
                continue;
            }
            auto made = make_kernel(*info.factory, spec);
            if (!made)
                return unexpected("operation " + quoted(step.op) + (step.shard.empty() ? "" : " shard " + quoted(step.shard)) +
                                  ": " + made.error());
            step.kernel = std::move(made->kernel);
            step.fallback = std::move(made->fallback);
            step.notes = step.kernel->notes();
            steps_.push_back(std::move(step));
        }
    }

    // Tiled runs go depth-first: tile k of every step of the run before tile k+1,
    // so that the ready step with the lowest index (the workers' pick) continues a
    // tile rather than starting the next op. Kept only when every conflict between
    // two steps still has the earlier op first (tiles are batch rows, so it does).
    if (!tiles.empty()) {
        std::vector<size_t> step_order(steps_.size());
        for (size_t i = 0; i < step_order.size(); ++i) step_order[i] = i;
        // Key: a run of consecutive tiled steps sorts by (tile, op step_order).
        std::vector<std::tuple<size_t, int, int>> key(steps_.size());
        size_t run_start = 0;
        for (size_t i = 0; i < steps_.size(); ++i) {
            const Step &st = steps_[i];
            const bool continues = i > 0 && st.tile >= 0 && steps_[i - 1].tile >= 0 && steps_[i - 1].tiles == st.tiles;
            if (!continues) run_start = i;
            key[i] = st.tile >= 0 ? std::make_tuple(run_start, st.tile, st.op_order)
                                  : std::make_tuple(i, 0, st.op_order);
        }
        std::stable_sort(step_order.begin(), step_order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
        bool sound = true;
        for (size_t j = 0; j < step_order.size() && sound; ++j)
            for (size_t i = 0; i < j && sound; ++i) {
                const Step &a = steps_[step_order[i]], &b = steps_[step_order[j]];
                if (a.op_order <= b.op_order) continue;
                for (const Access &x : a.accesses)
                    for (const Access &y : b.accesses)
                        if ((x.write || y.write) && x.tensor == y.tensor &&
                            (x.range.intersects(y.range) || x.range.rank() == 0))
                            sound = false;
            }
        if (sound) {
            std::vector<Step> sorted;
            sorted.reserve(steps_.size());
            for (size_t i : step_order) sorted.push_back(std::move(steps_[i]));
            steps_ = std::move(sorted);
            plan_tile_slots(eliminated);
        }
    }

    // Storage of each tensor.
    for (size_t i = 0; i < tensors_.size(); ++i) {
        TensorPlan &tp = tensors_[i];
        switch (tp.tensor->role) {
            case TensorRole::input: tp.storage = Storage::input; break;
            case TensorRole::parameter: tp.storage = Storage::parameter; break;
            case TensorRole::output: tp.storage = Storage::output; break;
            case TensorRole::intermediate:
                tp.storage = eliminated.count(static_cast<int>(i)) ? Storage::none : Storage::arena;
                break;
        }
    }
    for (size_t s = 0; s < steps_.size(); ++s)
        for (const Access &a : steps_[s].accesses) {
            TensorPlan &tp = tensors_[static_cast<size_t>(a.tensor)];
            if (tp.first_step < 0) tp.first_step = static_cast<int>(s);
            tp.last_step = static_cast<int>(s);
            if (tp.storage == Storage::arena && !a.write && tp.first_step == static_cast<int>(s)) {
                // Read before any step writes it.
                bool written = false;
                for (const Access &b : steps_[s].accesses) written = written || (b.tensor == a.tensor && b.write);
                if (!written)
                    return unexpected("tensor " + quoted(tp.tensor->id.value) +
                                      " has no value: it is an intermediate that no operation writes before " +
                                      quoted(steps_[s].op) + " reads it");
            }
        }
    plan_buffers();
    plan_dependencies();
    return std::monostate{};
}

// A tiled run's own intermediates (written and read only by its tiles, the
// whole batch of the tensor) need not exist whole: each is a ring of slots of
// one tile, tile k in slot k % slots, and a tile's writer waits for the readers
// of the tile that last used its slot (plan_dependencies: same slot, conflict).
// The intermediates then stay in cache from one step of a tile to the next.
void CpuProgram::plan_tile_slots(const std::set<int> &eliminated) {
    std::map<int, bool> ok;
    for (size_t s = 0; s < steps_.size(); ++s) {
        const Step &st = steps_[s];
        for (const Access &a : st.accesses) {
            auto [it, fresh] = ok.emplace(a.tensor, true);
            (void)fresh;
            const TensorPlan &tp = tensors_[static_cast<size_t>(a.tensor)];
            if (st.tile < 0 || tp.tensor->role != TensorRole::intermediate || eliminated.count(a.tensor) ||
                tp.tensor->range.rank() == 0 || tp.tensor->range.extent(0) != st.space_rows)
                it->second = false;
        }
    }
    for (auto &entry : ok) {
        // (Not a structured binding: clang 14 cannot capture one in the lambda below.)
        const int ti = entry.first;
        bool &good = entry.second;
        if (!good) continue;
        // One run, and every access is its step's tile rows.
        int run = -1, tiles = 0;
        std::int64_t rows = 0;
        for (const Step &st : steps_)
            for (const Access &a : st.accesses) {
                if (a.tensor != ti) continue;
                if (run < 0) {
                    run = st.run;
                    tiles = st.tiles;
                }
                const Coord t0 = tensors_[static_cast<size_t>(ti)].tensor->range.start()[0];
                if (st.run != run || st.tiles != tiles || a.range.start()[0] - t0 != st.tile_lo - st.space_lo)
                    good = false;
                rows = std::max<std::int64_t>(rows, a.range.extent(0));
            }
        if (!good || run < 0) continue;
        TensorPlan &tp = tensors_[static_cast<size_t>(ti)];
        const std::int64_t stride0 = tp.strides.at(0);
        tp.slots = std::min(tiles, 2 * options_.threads);
        const std::int64_t slot_elems = rows * stride0;
        tp.bytes = static_cast<std::size_t>(tp.slots * slot_elems) * dtype_bytes(tp.tensor->dtype);
        for (Step &st : steps_) {
            const int slot = st.tile % std::max(tp.slots, 1);
            for (Access &a : st.accesses)
                if (a.tensor == ti) a.slot = slot;
            auto patch = [&](std::vector<StepView> &views) {
                for (StepView &v : views)
                    if (v.tensor == ti)
                        v.offset += slot * slot_elems - (st.tile_lo - st.space_lo) * stride0;
            };
            patch(st.inputs);
            patch(st.outputs);
        }
    }
}

// Greedy interval allocation: largest first, each at the lowest offset that does
// not collide with an already placed tensor whose lifetime overlaps.
void CpuProgram::plan_buffers() {
    std::vector<int> arena;
    for (size_t i = 0; i < tensors_.size(); ++i)
        if (tensors_[i].storage == Storage::arena && tensors_[i].first_step >= 0) arena.push_back(static_cast<int>(i));
    std::stable_sort(arena.begin(), arena.end(), [&](int a, int b) {
        return tensors_[static_cast<size_t>(a)].bytes > tensors_[static_cast<size_t>(b)].bytes;
    });
    std::vector<int> placed;
    std::size_t total = 0;
    for (int i : arena) {
        TensorPlan &t = tensors_[static_cast<size_t>(i)];
        std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) of live neighbours
        for (int j : placed) {
            const TensorPlan &u = tensors_[static_cast<size_t>(j)];
            if (u.first_step <= t.last_step && t.first_step <= u.last_step)
                busy.emplace_back(u.arena_offset, u.arena_offset + align_up(u.bytes));
        }
        std::sort(busy.begin(), busy.end());
        std::size_t offset = 0;
        const std::size_t need = align_up(t.bytes);
        for (const auto &[b, e] : busy) {
            if (offset + need <= b) break;
            offset = std::max(offset, e);
        }
        t.arena_offset = offset;
        total = std::max(total, offset + need);
        placed.push_back(i);
    }
    arena_bytes_ = total;
    arena_ = aligned_buffer(total);
}

// Step j waits for an earlier step i when they touch intersecting boxes of one
// tensor (or overlapping arena bytes of two tensors) and one of them writes.
void CpuProgram::plan_dependencies() {
    auto arena_overlap = [&](int a, int b) {
        const TensorPlan &x = tensors_[static_cast<size_t>(a)];
        const TensorPlan &y = tensors_[static_cast<size_t>(b)];
        if (x.storage != Storage::arena || y.storage != Storage::arena) return false;
        return x.arena_offset < y.arena_offset + align_up(y.bytes) && y.arena_offset < x.arena_offset + align_up(x.bytes);
    };
    for (size_t j = 0; j < steps_.size(); ++j) {
        for (size_t i = 0; i < j; ++i) {
            bool dep = false;
            for (const Access &a : steps_[i].accesses) {
                for (const Access &b : steps_[j].accesses) {
                    if (!a.write && !b.write) continue;
                    const bool same = a.tensor == b.tensor;
                    if (same && a.slot >= 0 && b.slot >= 0 ? a.slot == b.slot
                        : same                              ? a.range.intersects(b.range) || a.range.rank() == 0
                                                            : arena_overlap(a.tensor, b.tensor)) {
                        dep = true;
                        break;
                    }
                }
                if (dep) break;
            }
            if (dep) {
                steps_[i].dependents.push_back(static_cast<int>(j));
                ++steps_[j].dependencies;
            }
        }
    }
}

std::string CpuProgram::make_description() const {
    std::ostringstream o;
    o << "CPU program: " << steps_.size() << " steps, " << options_.threads << " threads"
      << (options_.run_shards ? ", shards" : ", whole operations") << (options_.fuse_epilogues ? ", fused epilogues" : "")
      << ", oneDNN ISA " << cpu_isa().name << "\n";
    for (size_t s = 0; s < steps_.size(); ++s) {
        const Step &st = steps_[s];
        o << "  step " << s << ": " << st.kind << " " << st.op;
        if (!st.shard.empty()) o << " shard " << st.shard;
        if (st.tile >= 0) o << " tile " << st.tile + 1 << "/" << st.tiles;
        if (!st.fused.empty()) {
            o << " + fused";
            for (const std::string &f : st.fused) o << " " << f;
        }
        o << (st.whole ? " [all threads]" : " [1 thread]");
        if (st.dependencies > 0) o << " after " << st.dependencies << " step(s)";
        if (st.kernel_for(0).scratch_bytes() > 0) o << ", scratch " << st.kernel_for(0).scratch_bytes() << " B";
        o << "\n";
        if (!st.fallback.empty()) o << "      fallback: " << st.fallback << "\n";
        for (const std::string &n : st.notes) o << "      note: " << n << "\n";
    }
    o << "buffers:\n";
    std::size_t intermediate_sum = 0;
    for (const TensorPlan &t : tensors_) {
        o << "  " << t.tensor->id.value << " (" << role_name(t.tensor->role) << ", " << t.bytes << " B): ";
        switch (t.storage) {
            case Storage::input: o << "caller's input"; break;
            case Storage::parameter: o << (t.tensor->value ? "parameter value" : "caller's parameter"); break;
            case Storage::output: o << "output buffer"; break;
            case Storage::arena:
                if (t.first_step < 0) o << "unused";
                else o << "arena @" << t.arena_offset << ", steps " << t.first_step << "-" << t.last_step
                       << (t.channels_last ? ", channels-last (NHWC)" : "")
                       << (t.slots > 0 ? ", a ring of " + std::to_string(t.slots) + " batch tiles" : "");
                intermediate_sum += t.bytes;
                break;
            case Storage::none: o << "fused away (no buffer)"; break;
        }
        o << "\n";
    }
    o << "arena: " << arena_bytes_ << " B for " << intermediate_sum << " B of intermediates\n";
    return o.str();
}

std::vector<std::string> CpuProgram::make_notices() const {
    std::vector<std::string> out;
    std::map<std::string, int> fallback_ops;  // op → steps
    for (const Step &st : steps_)
        if (!st.fallback.empty()) ++fallback_ops[st.op];
    if (!fallback_ops.empty()) {
        std::string ops;
        int shown = 0;
        for (const auto &[op, n] : fallback_ops) {
            if (shown++ == 4) {
                ops += ", …";
                break;
            }
            ops += (ops.empty() ? "" : ", ") + quoted(op);
        }
        out.push_back(std::to_string(fallback_ops.size()) +
                      (fallback_ops.size() == 1 ? " operation computes its" : " operations compute their") +
                      " 16-bit floats in f32 (" + ops + "): no native kernel for them on " + cpu_isa().name);
    }
    std::map<std::string, int> notes;  // note → steps
    std::vector<std::string> order;
    for (const Step &st : steps_)
        for (const std::string &n : st.notes)
            if (notes[n]++ == 0) order.push_back(n);
    for (const std::string &n : order)
        out.push_back(n + " (" + std::to_string(notes[n]) + (notes[n] == 1 ? " step)" : " steps)"));
    return out;
}

void CpuProgram::start_workers() {
    for (int i = 0; i < options_.threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

void CpuProgram::stop_workers() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread &t : workers_) t.join();
    workers_.clear();
}

void CpuProgram::worker_loop(int index) {
    int omp_threads = -1;
    int last_run = -1, last_tile = -1;
    std::unique_lock lock(mutex_);
    while (true) {
        // Pick a runnable step: whole-operation steps only on worker 0 and only alone.
        int pick = -1;
        if (!stopping_ && !abort_ && !exclusive_running_ && last_tile >= 0) {
            // Stay on the batch tile this worker ran last: its data is in this core's cache.
            for (int s : ready_) {
                const Step &st = steps_[static_cast<size_t>(s)];
                if (st.run == last_run && st.tile == last_tile) {
                    pick = s;
                    break;
                }
            }
        }
        if (pick < 0 && !stopping_ && !abort_ && !exclusive_running_) {
            for (int s : ready_) {
                const Step &st = steps_[static_cast<size_t>(s)];
                if (st.whole) {
                    if (index == 0 && running_ == 0) {
                        pick = s;
                        break;
                    }
                } else {
                    pick = s;
                    break;
                }
            }
        }
        if (stopping_) return;
        if (pick < 0) {
            work_cv_.wait(lock);
            continue;
        }
        Step &st = steps_[static_cast<size_t>(pick)];
        if (control_ && control_->cancelled && control_->cancelled()) {
            cancelled_ = true;
            abort_ = true;
            done_cv_.notify_all();
            continue;
        }
        ready_.erase(pick);
        last_run = st.run;
        last_tile = st.tile;
        ++running_;
        if (st.whole) exclusive_running_ = true;
        lock.unlock();

        const int want = st.whole ? options_.threads : 1;
        if (want != omp_threads) {
            set_omp_threads(want);
            omp_threads = want;
        }
        std::vector<View> ins, outs;
        ins.reserve(st.inputs.size());
        outs.reserve(st.outputs.size());
        auto view = [&](const StepView &v) {
            View out;
            out.data = bases_[static_cast<size_t>(v.tensor)] + v.offset * dtype_bytes(v.dtype);
            out.dtype = v.dtype;
            out.shape = v.shape;
            out.strides = v.strides;
            return out;
        };
        for (const StepView &v : st.inputs) ins.push_back(view(v));
        for (const StepView &v : st.outputs) outs.push_back(view(v));
        std::string failure;
        const auto t0 = std::chrono::steady_clock::now();
        try {
            st.kernel_for(index).run(ins, outs);
        } catch (const dnnl::error &e) {
            failure = dnnl_error_text(e);
        } catch (const std::exception &e) {
            failure = e.what();
        }
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

        lock.lock();
        step_ms_[static_cast<size_t>(pick)] = ms;
        --running_;
        if (st.whole) exclusive_running_ = false;
        ++finished_;
        if (!failure.empty() && error_.empty()) {
            error_ = "operation " + quoted(st.op) + (st.shard.empty() ? "" : " shard " + quoted(st.shard)) + ": " + failure;
            abort_ = true;
        }
        bool released = st.whole || running_ == 0;  // a whole step may now start on worker 0
        for (int d : st.dependents)
            if (--pending_[static_cast<size_t>(d)] == 0) {
                ready_.insert(d);
                released = true;
            }
        const int done = finished_;
        const int total = static_cast<int>(steps_.size());
        if (control_ && control_->progress) {
            lock.unlock();
            control_->progress(done, total);
            lock.lock();
        }
        // Wake the others only when there is something for them (a run of batch
        // tiles finishes hundreds of steps; a wake-up per step is a futex call and,
        // on a busy machine, a lost time slice).
        if (released) work_cv_.notify_all();
        if (finished_ == total || (abort_ && running_ == 0)) done_cv_.notify_all();
    }
}

Expected<RunResult, std::string> CpuProgram::run(const std::map<TensorId, TensorData> &inputs,
                                                 const RunControl &control) {
    std::lock_guard run_lock(run_mutex_);
    const auto t0 = std::chrono::steady_clock::now();
    RunResult result;
    result.arena_bytes = arena_bytes_;
    // Buffers of this run.
    bases_.assign(tensors_.size(), nullptr);
    for (size_t i = 0; i < tensors_.size(); ++i) {
        TensorPlan &tp = tensors_[i];
        const Tensor &t = *tp.tensor;
        auto given = [&]() -> Expected<std::byte *, std::string> {
            auto it = inputs.find(t.id);
            if (it == inputs.end())
                return unexpected("tensor " + quoted(t.id.value) + " has no value: it is not given and no operation writes it");
            if (it->second.dtype != t.dtype || it->second.shape != t.shape() ||
                it->second.bytes.size() != static_cast<size_t>(t.bytes()))
                return unexpected("the value given for tensor " + quoted(t.id.value) + " is " +
                                  std::string(dtype_name(it->second.dtype)) + " " + it->second.shape.to_string() +
                                  " but the tensor is " + std::string(dtype_name(t.dtype)) + " " + t.shape().to_string());
            return const_cast<std::byte *>(it->second.bytes.data());
        };
        switch (tp.storage) {
            case Storage::input: {
                if (tp.first_step < 0) break;
                auto p = given();
                if (!p) return unexpected(p.error());
                bases_[i] = *p;
                break;
            }
            case Storage::parameter: {
                if (tp.first_step < 0) break;
                if (inputs.count(t.id) || !t.value) {
                    auto p = given();
                    if (!p) return unexpected(p.error());
                    bases_[i] = *p;
                } else {
                    if (t.value->dtype != t.dtype || t.value->shape != t.shape())
                        return unexpected("the value of parameter " + quoted(t.id.value) + " is " +
                                          std::string(dtype_name(t.value->dtype)) + " " + t.value->shape.to_string() +
                                          " but the tensor is " + std::string(dtype_name(t.dtype)) + " " +
                                          t.shape().to_string());
                    bases_[i] = const_cast<std::byte *>(t.value->bytes.data());
                }
                break;
            }
            case Storage::output: {
                TensorData &out = result.outputs[t.id];
                out = TensorData(t.dtype, t.shape());
                bases_[i] = out.bytes.data();
                break;
            }
            case Storage::arena: bases_[i] = arena_.get() + tp.arena_offset; break;
            case Storage::none: break;
        }
    }
    {
        std::unique_lock lock(mutex_);
        control_ = &control;
        pending_.assign(steps_.size(), 0);
        ready_.clear();
        for (size_t s = 0; s < steps_.size(); ++s) {
            pending_[s] = steps_[s].dependencies;
            if (pending_[s] == 0) ready_.insert(static_cast<int>(s));
        }
        step_ms_.assign(steps_.size(), 0.0);
        running_ = 0;
        finished_ = 0;
        exclusive_running_ = false;
        abort_ = false;
        cancelled_ = false;
        error_.clear();
        work_cv_.notify_all();
        done_cv_.wait(lock, [&] { return running_ == 0 && (abort_ || finished_ == static_cast<int>(steps_.size())); });
        control_ = nullptr;
        if (!error_.empty()) return unexpected(error_);
        if (cancelled_) return unexpected(std::string("cancelled"));
    }
    for (size_t s = 0; s < steps_.size(); ++s) {
        const Step &st = steps_[s];
        result.steps.push_back({st.op, st.shard, step_ms_[s], st.tile, st.tiles, st.fallback, st.notes});
    }
    result.notices = notices_;
    result.wall_milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

}  // namespace

std::string StepTiming::note() const {
    std::string out = fallback;
    for (const std::string &n : notes) out += (out.empty() ? "" : "; ") + n;
    return out;
}

Expected<std::unique_ptr<Program>, std::string> Program::compile(const Graph &g, const OpLibrary &lib,
                                                                const CpuOptions &options) {
    try {
        return CpuProgram::build(g, lib, options);
    } catch (const dnnl::error &e) {
        return unexpected(dnnl_error_text(e));
    } catch (const std::exception &e) {
        return unexpected(std::string("CPU compile failed: ") + e.what());
    }
}

}  // namespace tapestry::cpu
