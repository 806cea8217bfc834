// Making the steps (runtime/cpu/program_plan.h): one per whole operation, shard or
// batch tile, with its views into the tensors' buffers and its prepared kernel.
#include <sstream>

#include "graph/resolve.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {

namespace {

// The step for one index range of an op, and the spec its kernel is made from.
struct StepDraft {
    Step step;
    KernelSpec spec;
};

class StepMaker {
public:
    StepMaker(const Graph &g, const ResolvedOps &ops, const FoldedEpilogues &epilogues, const BatchTiles &tiles,
              const CpuOptions &options, ProgramPlan &plan)
        : g_(g), ops_(ops), epilogues_(epilogues), tiles_(tiles), options_(options), plan_(plan) {}

    Expected<std::monostate, std::string> make_all() {
        // oneDNN fixes a primitive's thread count when the primitive is created (from
        // the creating thread's OpenMP setting), not when it runs: kernels are made
        // with the count of the step that runs them (spec.threads), or a one-thread
        // shard would run two threads inside a worker beside another worker.
        struct RestoreThreads {
            int n = omp_threads();
            ~RestoreThreads() { set_omp_threads(n); }
        } restore_threads;
        for (const ResolvedOp &info : ops_.ops) {
            if (epilogues_.is_folded(info)) continue;
            std::vector<ZRange> ranges;
            std::vector<std::string> shard_ids;
            split(info, ranges, shard_ids);
            for (size_t r = 0; r < ranges.size(); ++r) {
                if (ranges[r].empty() && ranges[r].rank() > 0) continue;  // touches nothing
                StepDraft draft = draft_step(info, ranges, shard_ids, r);
                auto made = attach_kernel(ops_.factory(info), draft);
                if (!made) return made;
                plan_.steps.push_back(std::move(draft.step));
            }
        }
        return std::monostate{};
    }

private:
    // The index ranges `info` runs as — its shards, its batch tiles, or its whole
    // space — with their shard ids ("" for a tile or the whole op).
    void split(const ResolvedOp &info, std::vector<ZRange> &ranges, std::vector<std::string> &shard_ids) const {
        const auto tiled = tiles_.tiles.find(&info);
        if (ops_.is_sharded(info)) {
            for (const Shard &s : info.op->shards) {
                ranges.push_back(s.index);
                shard_ids.push_back(s.id.value);
            }
        } else if (tiled != tiles_.tiles.end()) {
            ranges = info.absolute.signature.index_space.split(0, tiled->second);
            shard_ids.resize(ranges.size());
        } else {
            ranges.push_back(info.absolute.signature.index_space);
            shard_ids.emplace_back();
        }
    }

    // A view of selection `s`, recorded as one of the step's accesses.
    StepView make_view(const TensorSelection &s, Step &step, bool write) const {
        const int ti = plan_.tensor_index.at(s.tensor);
        const TensorPlan &tp = plan_.tensors[static_cast<size_t>(ti)];
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
    }

    // Step r of `info`: its views (the op's inputs, the epilogues' extra operands,
    // the outputs of the chain's last op) and the spec of its kernel.
    StepDraft draft_step(const ResolvedOp &info, const std::vector<ZRange> &ranges,
                         const std::vector<std::string> &shard_ids, size_t r) const {
        StepDraft draft;
        Step &step = draft.step;
        step.op = info.op->id.value;
        step.shard = shard_ids[r];
        step.kind = info.op->kind;
        step.op_order = info.order;
        const auto tiled = tiles_.tiles.find(&info);
        if (tiled != tiles_.tiles.end()) {
            step.tile = static_cast<int>(r);
            step.tiles = static_cast<int>(ranges.size());
            step.run = tiles_.run.at(&info);
            step.tile_lo = ranges[r].start()[0];
            step.space_lo = info.absolute.signature.index_space.start()[0];
            step.space_rows = info.absolute.signature.index_space.extent(0);
        }
        step.whole = shard_ids[r].empty() && step.tile < 0;
        const auto sel = derive_shard_selections(g_, *info.op, info.absolute.signature, ranges[r]);
        for (const TensorSelection &s : selections_in_port_order(sel.inputs, info.def->input_ports()))
            step.inputs.push_back(make_view(s, step, false));
        std::vector<TensorSelection> outs = selections_in_port_order(sel.outputs, info.def->output_ports());
        KernelSpec &spec = draft.spec;
        spec.def = info.def;
        spec.params = info.params;
        spec.derivation = info.relative;
        spec.operands = info.operands;
        spec.index_range = ranges[r];
        spec.threads = step.whole ? options_.threads : 1;
        spec.winograd = options_.winograd;
        spec.bf16_matmul = options_.bf16_matmul;
        if (const EpilogueChain *chain = epilogues_.chain_of(info)) {
            for (const PlannedEpilogue &e : *chain) {
                spec.epilogues.push_back(e.epilogue);
                step.fused.push_back(e.consumer->op->id.value);
                if (e.extra) step.inputs.push_back(make_view(*e.extra, step, false));
            }
            const PlannedEpilogue &last = chain->back();
            std::vector<TensorSelection> head_outs = std::move(outs);
            outs = selections_in_port_order(last.consumer->op->outputs, last.consumer->def->output_ports());
            if (step.tile >= 0) {
                // The tile of the chain's output: the head's tile, moved to where the
                // (same-shaped) last output starts.
                const ZRange whole_out =
                    selections_in_port_order(info.op->outputs, info.def->output_ports()).at(0).range;
                outs.at(0).range = head_outs.at(0).range.translated(outs[0].range.start() - whole_out.start());
            }
        }
        for (const TensorSelection &s : outs) step.outputs.push_back(make_view(s, step, true));
        fill_spec_views(step, spec);
        return draft;
    }

    // The spec's view shapes, strides and constant inputs, from the step's views.
    void fill_spec_views(const Step &step, KernelSpec &spec) const {
        for (const StepView &v : step.inputs) {
            spec.input_shapes.push_back(v.shape);
            spec.input_strides.push_back(v.strides);
            // A parameter's own value (run() binds it unless the caller overrides it).
            const Tensor &t = *plan_.tensors[static_cast<size_t>(v.tensor)].tensor;
            const bool constant =
                t.role == TensorRole::parameter && t.value && t.value->dtype == t.dtype && t.value->shape == t.shape();
            spec.constant_inputs.push_back(constant ? t.value->bytes.data() + v.offset * dtype_bytes(v.dtype)
                                                    : nullptr);
        }
        for (const StepView &v : step.outputs) {
            spec.output_shapes.push_back(v.shape);
            spec.output_strides.push_back(v.strides);
        }
    }

    // The step's kernel: its own, or for a tile of a tile-invariant kernel one per
    // worker, shared by the op's tiles of the same shapes and strides.
    Expected<std::monostate, std::string> attach_kernel(const KernelFactory &factory, StepDraft &draft) {
        Step &step = draft.step;
        const KernelSpec &spec = draft.spec;
        set_omp_threads(spec.threads);
        if (step.tile >= 0 && factory.tile_invariant) {
            const std::string key = tile_key(step, spec);
            auto &shared = tile_kernels_[key];
            if (!shared) {
                auto set = std::make_shared<std::vector<std::unique_ptr<Kernel>>>();
                for (int w = 0; w < options_.threads; ++w) {
                    auto made = make_kernel(factory, spec);
                    if (!made) return unexpected("operation " + quoted(step.op) + ": " + made.error());
                    shared_fallback_[key] = made->fallback;
                    set->push_back(std::move(made->kernel));
                }
                shared = std::move(set);
            }
            step.per_worker = shared;
            step.fallback = shared_fallback_[key];
            step.notes = (*shared)[0]->notes();
            return std::monostate{};
        }
        auto made = make_kernel(factory, spec);
        if (!made)
            return unexpected("operation " + quoted(step.op) +
                              (step.shard.empty() ? "" : " shard " + quoted(step.shard)) + ": " + made.error());
        step.kernel = std::move(made->kernel);
        step.fallback = std::move(made->fallback);
        step.notes = step.kernel->notes();
        return std::monostate{};
    }

    // Tiles with equal keys can run on one kernel.
    static std::string tile_key(const Step &step, const KernelSpec &spec) {
        std::ostringstream key;
        key << step.op;
        for (const auto *shapes : {&spec.input_shapes, &spec.output_shapes})
            for (const ZPoint &z : *shapes) key << "|" << z.to_string();
        for (const auto *strides : {&spec.input_strides, &spec.output_strides})
            for (const std::vector<std::int64_t> &st : *strides) {
                key << "|";
                for (std::int64_t x : st) key << x << ",";
            }
        return key.str();
    }

    const Graph &g_;
    const ResolvedOps &ops_;
    const FoldedEpilogues &epilogues_;
    const BatchTiles &tiles_;
    const CpuOptions &options_;
    ProgramPlan &plan_;
    std::map<std::string, std::shared_ptr<std::vector<std::unique_ptr<Kernel>>>> tile_kernels_;
    std::map<std::string, std::string> shared_fallback_;  // tile_kernels_' make_kernel fallbacks
};

}  // namespace

Expected<std::monostate, std::string> make_steps(const Graph &g, const ResolvedOps &ops,
                                                 const FoldedEpilogues &epilogues, const BatchTiles &tiles,
                                                 const CpuOptions &options, ProgramPlan &plan) {
    return StepMaker(g, ops, epilogues, tiles, options, plan).make_all();
}

}  // namespace tapestry::cpu
