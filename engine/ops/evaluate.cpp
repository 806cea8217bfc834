// The graph-level reference evaluator (the numeric oracle): every operation is
// planned first (derivation, bindings, pieces and their chunks), then run in
// dependency order, the chunks of each piece on a pool of threads.
#include "ops/evaluate.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <vector>

#include "graph/order.h"
#include "graph/resolve.h"
#include "ops/op_util.h"

namespace tapestry {
namespace {

constexpr double kUnwritten = std::numeric_limits<double>::quiet_NaN();

// Chunk sizes: at most kMaxChunkWork work units and kMaxChunkPoints points (the
// cancel latency: ~15 ms of blocked product on a free core), and about
// kChunksPerThread chunks per thread where the work allows (the load balance),
// but not below kMinChunkWork units (the overhead). Large chunks pay for
// themselves: a block of a product packs its operands once for all its rows or
// columns, and 128 × 128 blocks of the MLP's 4096-deep layers ran at about 60 %
// of the rate of 256 × 256 ones.
constexpr std::int64_t kMaxChunkWork = std::int64_t{1} << 28;
constexpr std::int64_t kMinChunkWork = std::int64_t{1} << 16;
constexpr Coord kMaxChunkPoints = Coord{1} << 16;
constexpr int kChunksPerThread = 4;

std::string quoted(const std::string &s) {
    return "'" + s + "'";
}

std::string field_suffix(const DerivationError &e) {
    return e.field.empty() ? "" : " (" + e.field + ")";
}

// Operations in dependency order; an error names a cycle's operations.
Expected<std::vector<const Operation *>, std::string> ordered_operations(const Graph &g) {
    DependencyOrder d = dependency_order(g);
    if (d.cyclic.empty()) return std::move(d.order);
    std::string names;
    for (const Operation *op : d.cyclic) names += (names.empty() ? "" : ", ") + quoted(op->id.value);
    return unexpected("the operations " + names + " form a cycle");
}

// ---- chunks -------------------------------------------------------------------------

// What cutting an operation's index space into chunks needs to know about it.
struct ChunkModel {
    double flops_per_point = 0;
    std::vector<std::pair<const OperandProjection *, ZRange>> inputs;  // projection, operand range

    std::int64_t work(const ZRange &r) const {
        return static_cast<std::int64_t>(static_cast<double>(r.size()) * std::max(1.0, flops_per_point));
    }
    // Elements of the inputs a sub-range reads: what a good cut keeps small.
    Coord elements_read(const ZRange &r) const {
        Coord n = 0;
        for (const auto &[projection, operand] : inputs) n += selection_of(*projection, r, operand).size();
        return n;
    }
};

// Bisects `r` until each chunk holds at most `max_work` units and kMaxChunkPoints
// points, each time along the dim whose halves read the fewest input elements
// (rows and columns of a matmul alike, a layernorm's rows whole, an attention's
// scores not recomputed per column), the outer dim on a tie. Row-major order.
void cut_into_chunks(const ZRange &r, const ChunkModel &model, std::int64_t max_work, std::vector<ZRange> &chunks) {
    int best = -1;
    if (model.work(r) > max_work || r.size() > kMaxChunkPoints) {
        Coord fewest = std::numeric_limits<Coord>::max();
        for (int d = 0; d < r.rank(); ++d) {
            if (r.extent(d) < 2) continue;
            const Coord read = model.elements_read(r.split(d, 2).front());
            if (read < fewest) fewest = read, best = d;
        }
    }
    if (best < 0) {
        chunks.push_back(r);
        return;
    }
    for (const ZRange &half : r.split(best, 2)) cut_into_chunks(half, model, max_work, chunks);
}

// ---- the worker pool --------------------------------------------------------------------

// Threads that run the tasks of one call of run() at a time, with the caller.
// Workers start at the first call with more than one task and live as long as
// the pool; an exception a task throws is rethrown by run() on the caller's thread.
class WorkerPool {
public:
    explicit WorkerPool(int threads) : threads_(std::max(threads, 1)) {}
    ~WorkerPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread &t : workers_) t.join();
    }
    WorkerPool(const WorkerPool &) = delete;
    WorkerPool &operator=(const WorkerPool &) = delete;

    // Calls task(i) once for every i in [0, count); returns when all have returned.
    void run(std::int64_t count, const std::function<void(std::int64_t)> &task) {
        if (threads_ == 1 || count <= 1) {
            for (std::int64_t i = 0; i < count; ++i) task(i);
            return;
        }
        while (static_cast<int>(workers_.size()) < threads_ - 1) workers_.emplace_back([this] { work(); });
        Job job{&task, count};
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = &job;
            ++generation_;
        }
        wake_.notify_all();
        drain(job);
        std::unique_lock<std::mutex> lock(mutex_);
        finished_.wait(lock, [&] { return busy_ == 0; });
        job_ = nullptr;  // a worker waking late finds no job
        if (job.error) std::rethrow_exception(job.error);
    }

private:
    struct Job {
        const std::function<void(std::int64_t)> *task = nullptr;
        std::int64_t count = 0;
        std::atomic<std::int64_t> next{0};
        std::exception_ptr error = nullptr;  // the first exception, under mutex_
    };

    void drain(Job &job) {
        for (std::int64_t i; (i = job.next.fetch_add(1)) < job.count;) {
            try {
                (*job.task)(i);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!job.error) job.error = std::current_exception();
            }
        }
    }

    void work() {
        std::uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(mutex_);
        while (true) {
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            if (!job_) continue;
            Job &job = *job_;
            ++busy_;
            lock.unlock();
            drain(job);
            lock.lock();
            if (--busy_ == 0) finished_.notify_all();
        }
    }

    const int threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, finished_;
    std::uint64_t generation_ = 0;
    Job *job_ = nullptr;
    int busy_ = 0;
    bool stop_ = false;
};

// ---- planning ------------------------------------------------------------------------

// One piece of an operation (a shard's index range, or the whole space) and its chunks.
struct Piece {
    ZRange index;
    std::vector<ZRange> chunks;
    std::vector<std::int64_t> work;  // per chunk
};

// An operation checked and ready to run: its kernel, bindings in the OpDef's
// port order, and pieces.
struct PlannedOperation {
    const Operation *op = nullptr;
    const OpDef *def = nullptr;
    std::string who;  // "operation 'fc1'", for errors
    Params params;
    Derivation derivation;  // relative
    std::vector<PortSpec> in_ports, out_ports;
    std::vector<const PortBinding *> in_bind, out_bind;
    std::vector<Piece> pieces;
};

// Every selection lies inside its tensor (validation reports this too).
std::string check_selections(const Graph &g, const Operation &op, const std::string &who) {
    for (const auto *side : {&op.inputs, &op.outputs})
        for (const PortBinding &b : *side)
            for (const TensorSelection &s : b.selections) {
                const Tensor *t = g.find_tensor(s.tensor);
                if (!t) return who + ": tensor " + quoted(s.tensor.value) + " does not exist";
                if (s.range.rank() != t->range.rank() || !t->range.contains(s.range))
                    return who + ": selection " + s.range.to_string() + " of tensor " + quoted(s.tensor.value) +
                           " lies outside its range " + t->range.to_string();
            }
    return {};
}

// The pieces of `planned` and their chunks, or an error for a shard of the wrong rank.
std::string plan_pieces(PlannedOperation &planned, const EvaluationOptions &options) {
    const Signature &sig = planned.derivation.signature;
    std::vector<ZRange> ranges;
    if (options.run_shards && !planned.op->shards.empty())
        for (const Shard &s : planned.op->shards) ranges.push_back(s.index);
    else
        ranges.push_back(sig.index_space);

    ChunkModel model{planned.def->flops_per_point(planned.params, planned.derivation), {}};
    for (size_t p = 0; p < planned.in_ports.size(); ++p)
        for (size_t i = 0; planned.in_bind[p] && i < planned.in_bind[p]->selections.size(); ++i)
            if (const OperandProjection *proj = sig.input(planned.in_ports[p].name, i))
                model.inputs.emplace_back(proj, ZRange::of_shape(planned.in_bind[p]->selections[i].range.shape()));
    const std::int64_t threads = std::max(options.threads, 1);
    for (const ZRange &range : ranges) {
        if (range.rank() != sig.index_space.rank())
            return planned.who + ": a shard's index range " + range.to_string() + " has rank " +
                   std::to_string(range.rank()) + " but the index space " + sig.index_space.to_string() + " has rank " +
                   std::to_string(sig.index_space.rank());
        Piece piece{range, {}, {}};
        const std::int64_t balanced = model.work(range) / (threads * kChunksPerThread);
        if (!range.empty())
            cut_into_chunks(range, model, std::clamp(balanced, kMinChunkWork, kMaxChunkWork), piece.chunks);
        for (const ZRange &c : piece.chunks) piece.work.push_back(model.work(c));
        planned.pieces.push_back(std::move(piece));
    }
    return {};
}

Expected<PlannedOperation, std::string> plan_operation(const Graph &g, const Operation &op, const OpLibrary &library,
                                                       const EvaluationOptions &options) {
    PlannedOperation planned;
    planned.op = &op;
    planned.who = "operation " + quoted(op.id.value);
    const std::string &who = planned.who;
    planned.def = library.find(op.kind);
    if (!planned.def) return unexpected(who + ": unknown operation kind " + quoted(op.kind));
    auto types = operand_types(g, op);
    if (!types) return unexpected(who + ": " + types.error().message + field_suffix(types.error()));
    auto relative = library.derive(op.kind, op.params, *types);
    if (!relative) return unexpected(who + ": " + relative.error().message + field_suffix(relative.error()));
    auto absolute = resolve(g, op, library);
    if (!absolute) return unexpected(who + ": " + absolute.error().message + field_suffix(absolute.error()));
    planned.params = library.with_defaults(*planned.def, op.params);
    planned.derivation = std::move(relative).value();

    planned.in_ports = planned.def->input_ports();
    planned.out_ports = planned.def->output_ports();
    for (const PortSpec &p : planned.in_ports) planned.in_bind.push_back(op.input(p.name));
    for (const PortSpec &p : planned.out_ports) {
        planned.out_bind.push_back(op.output(p.name));
        if (!planned.out_bind.back()) return unexpected(who + ": output port " + quoted(p.name) + " is not bound");
    }
    if (std::string e = check_selections(g, op, who); !e.empty()) return unexpected(e);
    for (size_t p = 0; p < planned.in_ports.size(); ++p)
        for (size_t i = 0; planned.in_bind[p] && i < planned.in_bind[p]->selections.size(); ++i)
            if (!planned.derivation.signature.input(planned.in_ports[p].name, i))
                return unexpected(who + ": no projection for inputs." + planned.in_ports[p].name);
    for (size_t p = 0; p < planned.out_ports.size(); ++p)
        for (size_t i = 0; i < planned.out_bind[p]->selections.size(); ++i)
            if (!planned.derivation.signature.output(planned.out_ports[p].name, i))
                return unexpected(who + ": no projection for outputs." + planned.out_ports[p].name);
    if (std::string e = plan_pieces(planned, options); !e.empty()) return unexpected(e);
    return planned;
}

// The given values, checked against the graph.
Expected<std::map<TensorId, RefArray>, std::string> given_values(const Graph &g,
                                                                 const std::map<TensorId, RefArray> &given) {
    std::map<TensorId, RefArray> values;
    for (const auto &[id, array] : given) {
        const Tensor *t = g.find_tensor(id);
        if (!t) return unexpected("a value is given for " + quoted(id.value) + ", which is not a tensor of the graph");
        if (!(array.range == t->range))
            return unexpected("the value given for tensor " + quoted(id.value) + " spans " + array.range.to_string() +
                              " but the tensor spans " + t->range.to_string());
        if (array.data.size() != static_cast<size_t>(array.range.size()))
            return unexpected("the value given for tensor " + quoted(id.value) + " holds " +
                              std::to_string(array.data.size()) + " elements instead of " +
                              std::to_string(array.range.size()));
        values[id] = array;
    }
    for (const TensorPtr &t : g.tensors())
        if (!values.count(t->id) && g.producers(t->id).empty())
            return unexpected("tensor " + quoted(t->id.value) +
                              " has no value: it is not given and no operation writes it");
    return values;
}

// ---- copying selections ------------------------------------------------------------------

// to[e] = from[e + shift] for every e of `box` (inside `to`'s range, shifted
// inside `from`'s), a row at a time.
void copy_box(const RefArray &from, const ZPoint &shift, RefArray &to, const ZRange &box) {
    const std::vector<Coord> from_strides = op_util::row_major_strides(from.range.shape());
    const std::vector<Coord> to_strides = op_util::row_major_strides(to.range.shape());
    auto flat = [](const std::vector<Coord> &strides, const ZPoint &p, const ZPoint &origin) {
        Coord at = 0;
        for (int d = 0; d < p.rank(); ++d) at += strides[static_cast<size_t>(d)] * (p[d] - origin[d]);
        return at;
    };
    op_util::for_each_row(box, [&](const ZPoint &start, Coord length) {
        const double *src = from.data.data() + flat(from_strides, start + shift, from.range.start());
        std::memcpy(to.data.data() + flat(to_strides, start, to.range.start()), src,
                    static_cast<size_t>(length) * sizeof(double));
    });
}

// Whether `selection` is all of `tensor`, whose range starts at the origin: its
// array can stand for the zero-origin array of the selection.
bool whole_at_origin(const RefArray &tensor, const ZRange &selection) {
    return selection == tensor.range && tensor.range.start() == ZPoint::zeros(selection.rank());
}

// ---- running ----------------------------------------------------------------------------

// One evaluation: the values so far, the pool, and progress and cancel state.
class Evaluation {
public:
    Evaluation(const Graph &g, std::map<TensorId, RefArray> values, const EvaluationOptions &options,
               std::int64_t total)
        : graph_(g), values_(std::move(values)), options_(options), pool_(options.threads), total_(total) {}

    // Runs every piece of `planned`; false when cancelled.
    bool run(const PlannedOperation &planned) {
        for (const PortBinding *b : planned.out_bind)
            for (const TensorSelection &s : b->selections)
                values_.try_emplace(s.tensor, graph_.find_tensor(s.tensor)->range, kUnwritten);
        for (const Piece &piece : planned.pieces)
            if (!run_piece(planned, piece)) return false;
        return true;
    }

    // The final progress call of an evaluation without work; true unless cancelled.
    bool finish() {
        if (total_ == 0 && options_.progress) options_.progress(0, 0);
        return !stopped();
    }

    std::map<TensorId, RefArray> take_values() { return std::move(values_); }

private:
    // Arrays a piece's kernel reads and writes, per port and operand; `own`
    // holds those that are not a tensor's array itself.
    template <typename Array>
    struct Bound {
        std::vector<std::vector<RefArray>> own;
        std::vector<std::vector<Array *>> arrays;
    };

    bool run_piece(const PlannedOperation &planned, const Piece &piece) {
        if (poll_cancelled()) return false;
        const Bound<const RefArray> inputs = bind_inputs(planned, piece);
        Bound<RefArray> outputs = bind_outputs(planned);
        const RefContext base{planned.params, planned.derivation,   inputs.arrays, outputs.arrays, piece.index,
                              nullptr,        options_.fast_kernels};
        if (!run_chunks(planned, piece, base)) return false;
        scatter(planned, piece, outputs);
        return true;
    }

    // Each operand's selection holding only what the piece selects (NaN elsewhere):
    // the tensor's own array where that is all of it.
    Bound<const RefArray> bind_inputs(const PlannedOperation &planned, const Piece &piece) const {
        Bound<const RefArray> bound{std::vector<std::vector<RefArray>>(planned.in_ports.size()),
                                    std::vector<std::vector<const RefArray *>>(planned.in_ports.size())};
        for (size_t p = 0; p < planned.in_ports.size(); ++p) {
            const PortBinding *b = planned.in_bind[p];
            bound.own[p].reserve(b ? b->selections.size() : 0);  // the pointers into it stay valid
            for (size_t i = 0; b && i < b->selections.size(); ++i) {
                const TensorSelection &s = b->selections[i];
                const RefArray &tensor = values_.at(s.tensor);
                const ZRange shape = ZRange::of_shape(s.range.shape());
                const OperandProjection &projection = *planned.derivation.signature.input(planned.in_ports[p].name, i);
                const ZRange region = selection_of(projection, piece.index, shape);
                if (whole_at_origin(tensor, s.range) && region == shape) {
                    bound.arrays[p].push_back(&tensor);
                    continue;
                }
                bound.own[p].emplace_back(shape, kUnwritten);
                copy_box(tensor, s.range.start(), bound.own[p].back(), region.intersect(shape));
                bound.arrays[p].push_back(&bound.own[p].back());
            }
        }
        return bound;
    }

    // The tensor's own array where the selection is all of it, else a scratch
    // array that scatter() copies from.
    Bound<RefArray> bind_outputs(const PlannedOperation &planned) {
        Bound<RefArray> bound{std::vector<std::vector<RefArray>>(planned.out_ports.size()),
                              std::vector<std::vector<RefArray *>>(planned.out_ports.size())};
        for (size_t p = 0; p < planned.out_ports.size(); ++p) {
            bound.own[p].reserve(planned.out_bind[p]->selections.size());
            for (const TensorSelection &s : planned.out_bind[p]->selections) {
                RefArray &tensor = values_.at(s.tensor);
                if (whole_at_origin(tensor, s.range)) {
                    bound.arrays[p].push_back(&tensor);
                    continue;
                }
                bound.own[p].emplace_back(ZRange::of_shape(s.range.shape()), kUnwritten);
                bound.arrays[p].push_back(&bound.own[p].back());
            }
        }
        return bound;
    }

    // Copies what the piece wrote into scratch arrays to its tensors.
    void scatter(const PlannedOperation &planned, const Piece &piece, const Bound<RefArray> &outputs) {
        for (size_t p = 0; p < planned.out_ports.size(); ++p)
            for (size_t i = 0; i < planned.out_bind[p]->selections.size(); ++i) {
                const TensorSelection &s = planned.out_bind[p]->selections[i];
                const RefArray &written = *outputs.arrays[p][i];
                RefArray &tensor = values_.at(s.tensor);
                if (&written == &tensor) continue;
                const OperandProjection &projection =
                    *planned.derivation.signature.output(planned.out_ports[p].name, i);
                const ZRange box = selection_of(projection, piece.index, written.range);
                copy_box(written, ZPoint::zeros(box.rank()) - s.range.start(), tensor, box.translated(s.range.start()));
            }
    }

    bool run_chunks(const PlannedOperation &planned, const Piece &piece, const RefContext &base) {
        pool_.run(static_cast<std::int64_t>(piece.chunks.size()), [&](std::int64_t c) {
            if (poll_cancelled()) return;
            RefContext ctx = base;
            ctx.index_range = piece.chunks[static_cast<size_t>(c)];
            planned.def->reference(ctx);
            report(piece.work[static_cast<size_t>(c)]);
        });
        return !stopped();
    }

    bool stopped() {
        std::lock_guard<std::mutex> lock(mutex_);
        return stopped_;
    }

    bool poll_cancelled() {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!stopped_ && options_.cancelled && options_.cancelled()) stopped_ = true;
        return stopped_;
    }

    void report(std::int64_t work) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_ += work;
        if (options_.progress && !stopped_) options_.progress(done_, total_);
    }

    const Graph &graph_;
    std::map<TensorId, RefArray> values_;
    const EvaluationOptions &options_;
    WorkerPool pool_;
    std::mutex mutex_;  // guards done_, stopped_ and the calls of progress and cancelled
    std::int64_t done_ = 0;
    const std::int64_t total_;
    bool stopped_ = false;
};

}  // namespace

Expected<std::map<TensorId, RefArray>, std::string> evaluate_reference(
    const Graph &g, const std::map<TensorId, RefArray> &inputs_and_params, const OpLibrary &library,
    const EvaluationOptions &options) {
    auto values = given_values(g, inputs_and_params);
    if (!values) return unexpected(values.error());
    auto order = ordered_operations(g);
    if (!order) return unexpected(order.error());

    std::vector<PlannedOperation> plan;
    std::int64_t total = 0;
    for (const Operation *op : *order) {
        auto planned = plan_operation(g, *op, library, options);
        if (!planned) return unexpected(planned.error());
        for (const Piece &piece : planned->pieces)
            for (std::int64_t w : piece.work) total += w;
        plan.push_back(std::move(planned).value());
    }

    Evaluation evaluation(g, std::move(values).value(), options, total);
    for (const PlannedOperation &planned : plan)
        if (!evaluation.run(planned)) return unexpected(std::string("cancelled"));
    if (!evaluation.finish()) return unexpected(std::string("cancelled"));
    return evaluation.take_values();
}

}  // namespace tapestry
