// The CPU program's planner, internal to runtime/cpu: the data a plan is made of
// (tensors with their layout and storage, steps with their views and kernels) and
// the named steps CpuProgram::plan (executor.cpp) runs to build it, in that order,
// one file each (runtime/cpu/plan_<step>.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "ops/library.h"
#include "ops/port_order.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/kernel.h"
#include "schedule/arena.h"

namespace tapestry::cpu {

// ---- The plan ------------------------------------------------------------------------

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
    int slot = -1;  // the ring slot of a tiled tensor (TensorPlan::slots), or -1
};

// Where a kernel's view lies in its tensor's buffer (resolved to a View per run).
struct StepView {
    int tensor = -1;
    std::int64_t offset = 0;  // elements from the tensor's first element
    ZPoint shape;
    std::vector<std::int64_t> strides;
    DType dtype = DType::f32;
};

// One kernel launch: a whole operation, one shard of it, or one batch tile.
struct Step {
    std::string op;
    std::string shard;  // "" for a whole operation
    std::string kind;
    bool whole = true;                                // runs alone with every thread
    int tile = -1, tiles = 0;                         // batch tile k of K (CpuOptions::tile_bytes)
    int run = -1;                                     // the tiled run it belongs to
    Coord tile_lo = 0, space_lo = 0, space_rows = 0;  // a tile's first index row; the op's index dim 0
    int op_order = 0;                                 // the op's position in dependency order
    std::vector<std::string> fused;                   // epilogue operation ids
    std::string fallback;                             // MadeKernel::fallback: why it computes in f32, or ""
    std::vector<std::string> notes;                   // Kernel::notes()
    std::vector<StepView> inputs, outputs;
    std::vector<Access> accesses;
    std::unique_ptr<Kernel> kernel;
    // Or, for the tiles of an op (KernelFactory::tile_invariant), one kernel per worker.
    std::shared_ptr<std::vector<std::unique_ptr<Kernel>>> per_worker;
    Kernel &kernel_for(int worker) const { return per_worker ? *(*per_worker)[static_cast<size_t>(worker)] : *kernel; }
    std::vector<int> dependents;
    int dependencies = 0;
};

// What a run needs: every tensor of the graph (in graph order) and the steps in
// the order the workers prefer them.
struct ProgramPlan {
    std::vector<TensorPlan> tensors;
    std::map<TensorId, int> tensor_index;  // tensor id → index into `tensors`
    std::vector<Step> steps;
    std::size_t arena_bytes = 0;  // the one allocation holding intermediates
};

using schedule::align_up;
using schedule::arena_add;
using schedule::kArenaAlign;

inline std::string quoted(const std::string &s) {
    return "'" + s + "'";
}

// Selections of port bindings flattened in the op's port order (absent ports skipped).
using ::tapestry::selections_in_port_order;

// ---- What the steps hand each other --------------------------------------------------

// An operation resolved against the op library (op level: nothing CPU-specific).
struct ResolvedOp {
    const Operation *op = nullptr;
    const OpDef *def = nullptr;
    Params params;                    // defaults filled in
    Derivation relative;              // zero-origin operands
    Derivation absolute;              // projections in tensor coordinates (graph/resolve.h)
    std::vector<PortTypes> operands;  // input types, port order
    int order = 0;                    // position in dependency order
};

// Every operation of the graph, resolved, with what the CPU runs it with.
struct ResolvedOps {
    std::vector<ResolvedOp> ops;                   // dependency order: ops[i].order == i
    std::vector<const KernelFactory *> factories;  // per op: its CPU kernel factory
    std::vector<bool> sharded;                     // per op: runs shard by shard (CpuOptions::run_shards)
    std::map<OpId, int> index;                     // op id → position in `ops`

    const ResolvedOp &at(const OpId &id) const { return ops[static_cast<size_t>(index.at(id))]; }
    bool is_sharded(const ResolvedOp &op) const { return sharded[static_cast<size_t>(op.order)]; }
    const KernelFactory &factory(const ResolvedOp &op) const { return *factories[static_cast<size_t>(op.order)]; }
};

// An elementwise consumer folded into its producer's kernel as an epilogue.
struct PlannedEpilogue {
    const ResolvedOp *consumer = nullptr;
    Epilogue epilogue;
    std::optional<TensorSelection> extra;  // the binary epilogue's other operand
};
using EpilogueChain = std::vector<PlannedEpilogue>;
using EpilogueChains = std::map<const ResolvedOp *, EpilogueChain>;  // producer → its chain

// Whether the producer's kernel can take `next` after the epilogues of `chain`
// (whose extra operands come before next's, in chain order).
using CanTakeEpilogue =
    std::function<bool(const ResolvedOp &producer, const EpilogueChain &chain, const PlannedEpilogue &next)>;

// The chain finder of epilogue folding (op level; CpuProgram's is fold_epilogues;
// its step through a value, graph/value_chain.h, is the fusion pass's too). For each producer P of
// `ops` (resolved ops in dependency order, ops[i].order == i) that is not
// sharded[P.order], not itself folded into an earlier chain and has exactly one
// output selection, it follows P's value — the selection V, at first P's output:
//  * V's tensor is not a graph output and has exactly one producer and one consumer C;
//  * C is not sharded, is of category "elementwise", has one output selection of
//    V's shape (not V's tensor: not in place) and reads V's tensor once, exactly V
//    (no broadcast of it);
//  * C is unary, or binary with V as its left operand where the kind is sub or div;
//    none of the other operand's producers comes after P in `ops` or is folded;
//  * can_take(P, chain so far, link) says yes, where the link is C with the
//    epilogue {C's kind, C's params (defaults filled), extra_input = how many links of the chain so
//    far have an extra operand, projection = C's relative projection of the other
//    operand} and extra = the other operand's selection (binary C only).
// Then the link joins P's chain, C is folded, V becomes C's output, and the walk
// goes on; the first failed condition ends the chain. The result holds P → chain
// for every non-empty chain; its pointers point into `ops`. Nothing here is
// CPU-specific but the Epilogue type, which is plain op-level data (kind, params,
// extra operand, projection) and can move to the op layer with the finder.
EpilogueChains find_epilogue_chains(const Graph &g, std::span<const ResolvedOp> ops, const std::vector<bool> &sharded,
                                    const CanTakeEpilogue &can_take);

// The epilogue folding of a program.
struct FoldedEpilogues {
    EpilogueChains chains;
    std::set<const ResolvedOp *> folded;  // the consumers in a chain: no step of their own
    std::set<int> fused_away;             // tensors (plan indices) a chain keeps out of memory

    bool is_folded(const ResolvedOp &op) const { return folded.count(&op) > 0; }
    const EpilogueChain *chain_of(const ResolvedOp &producer) const {
        const auto it = chains.find(&producer);
        return it == chains.end() ? nullptr : &it->second;
    }
};

// Batch tiling: which steps run tile by tile, in which run.
struct BatchTiles {
    std::map<const ResolvedOp *, int> tiles;  // head step → number of batch tiles
    std::map<const ResolvedOp *, int> run;    // head step → its run
};

// ---- The steps, in the order CpuProgram::plan runs them --------------------------------

// Every tensor of the graph, dense row-major, with no storage yet. (plan_resolve.cpp)
ProgramPlan plan_tensors(const Graph &g);
// Every operation resolved against the library and given its CPU kernel factory;
// fails naming the operation. (plan_resolve.cpp)
Expected<ResolvedOps, std::string> resolve_operations(const Graph &g, const OpLibrary &lib, const CpuOptions &options);
// Single-use elementwise consumers folded into their producers' kernels as
// post-ops, where the kernel says it can take them. (plan_epilogues.cpp)
FoldedEpilogues fold_epilogues(const Graph &g, const ResolvedOps &ops, const ProgramPlan &plan);
// 4-D intermediates that only whole conv2d/pool steps write and read (as their x)
// laid out NHWC. (plan_layout.cpp)
void lay_out_channels_last(const Graph &g, const ResolvedOps &ops, const FoldedEpilogues &epilogues, ProgramPlan &plan);
// Runs of batch-parallel steps with small parameters cut into batch tiles
// (CpuOptions::tile_bytes). (plan_tiling.cpp)
BatchTiles plan_batch_tiles(const Graph &g, const ResolvedOps &ops, const FoldedEpilogues &epilogues,
                            const CpuOptions &options);
// The steps, in dependency order, with their views and prepared kernels; fails
// naming the operation whose kernel cannot be made. (plan_steps.cpp)
Expected<std::monostate, std::string> make_steps(const Graph &g, const ResolvedOps &ops,
                                                 const FoldedEpilogues &epilogues, const BatchTiles &tiles,
                                                 const CpuOptions &options, ProgramPlan &plan);
// Tiled runs reordered depth-first (tile k of every step before tile k+1) where
// that keeps every conflict in dependency order; then their own intermediates
// become rings of tile slots (plan_tile_slots). (plan_order.cpp)
void order_tiles_depth_first(ProgramPlan &plan, const std::set<int> &fused_away, int threads);
void plan_tile_slots(ProgramPlan &plan, const std::set<int> &fused_away, int threads);
// Each tensor's storage and lifetime (first and last step); fails when a step
// reads an intermediate no earlier step writes. (plan_storage.cpp)
Expected<std::monostate, std::string> assign_storage(ProgramPlan &plan, const std::set<int> &fused_away);
// Arena offsets for the intermediates by lifetime (ProgramPlan::arena_bytes). (plan_storage.cpp)
void plan_buffers(ProgramPlan &plan);
// Each step's dependencies: the earlier steps it conflicts with. (plan_storage.cpp)
void plan_dependencies(ProgramPlan &plan);

}  // namespace tapestry::cpu
