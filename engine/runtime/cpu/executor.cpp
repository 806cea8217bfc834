// The CPU executor (runtime/cpu/executor.h): compile = validate, then plan
// (runtime/cpu/program_plan.h: resolve, fold epilogues, lay out, tile, make the
// steps and kernels, order, store); run = a DAG of steps on a pool of worker
// threads (whole operations one at a time with every thread inside oneDNN, shards
// and batch tiles in parallel with one thread each).
#include "runtime/cpu/executor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/checked_size.h"
#include "graph/validate.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/cpu/program_plan.h"

namespace tapestry::cpu {
namespace {

struct AlignedFree {
    void operator()(std::byte *p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte, AlignedFree>;

AlignedBuffer aligned_buffer(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    return AlignedBuffer(static_cast<std::byte *>(std::aligned_alloc(kArenaAlign, align_up(bytes))));
}

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
    std::string make_description() const;
    std::vector<std::string> make_notices() const;

    Graph graph_;
    CpuOptions options_;
    ProgramPlan plan_;
    AlignedBuffer arena_;  // plan_.arena_bytes
    std::string description_;
    std::vector<std::string> notices_;

    // Run state (guarded by mutex_).
    std::mutex run_mutex_;  // one run at a time
    std::mutex mutex_;
    std::condition_variable work_cv_;
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

// The planner's steps (runtime/cpu/program_plan.h), each in its own file.
Expected<std::monostate, std::string> CpuProgram::plan(const Graph &g, const OpLibrary &lib) {
    plan_ = plan_tensors(g);
    const auto ops = resolve_operations(g, lib, options_);
    if (!ops) return unexpected(ops.error());
    const FoldedEpilogues epilogues = options_.fuse_epilogues ? fold_epilogues(g, *ops, plan_) : FoldedEpilogues{};
    if (options_.channels_last) lay_out_channels_last(g, *ops, epilogues, plan_);
    const BatchTiles tiles = options_.tile_bytes > 0 ? plan_batch_tiles(g, *ops, epilogues, options_) : BatchTiles{};
    if (auto made = make_steps(g, *ops, epilogues, tiles, options_, plan_); !made) return made;
    if (!tiles.tiles.empty()) order_tiles_depth_first(plan_, epilogues.fused_away, options_.threads);
    if (auto stored = assign_storage(plan_, epilogues.fused_away); !stored) return stored;
    plan_buffers(plan_);
    plan_dependencies(plan_);
    // An arena larger than the machine's memory is refused before the attempt
    // (check_memory guards run and verify earlier; this guards every caller), and
    // aligned_alloc reports failure with null, not an exception: refuse that too
    // rather than let the first kernel write through it.
    const std::int64_t available = available_memory();
    if (available > 0 && plan_.arena_bytes > static_cast<std::uint64_t>(available))
        return unexpected("the arena for the intermediates needs " +
                          byte_text(static_cast<std::int64_t>(
                              std::min<std::uint64_t>(plan_.arena_bytes, static_cast<std::uint64_t>(kSizeSaturated)))) +
                          " but this machine has " + byte_text(available) + " available");
    arena_ = aligned_buffer(plan_.arena_bytes);
    if (plan_.arena_bytes > 0 && !arena_)
        return unexpected("the arena for the intermediates (" + std::to_string(plan_.arena_bytes) +
                          " bytes) cannot be allocated: not enough memory");
    return std::monostate{};
}

std::string CpuProgram::make_description() const {
    std::ostringstream o;
    o << "CPU program: " << plan_.steps.size() << " steps, " << options_.threads << " threads"
      << (options_.run_shards ? ", shards" : ", whole operations") << (options_.fuse_epilogues ? ", fused epilogues" : "")
      << ", oneDNN ISA " << cpu_isa().name << "\n";
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
        const Step &st = plan_.steps[s];
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
    for (const TensorPlan &t : plan_.tensors) {
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
    o << "arena: " << plan_.arena_bytes << " B for " << intermediate_sum << " B of intermediates\n";
    return o.str();
}

std::vector<std::string> CpuProgram::make_notices() const {
    std::vector<std::string> out;
    std::map<std::string, int> fallback_ops;  // op → steps
    for (const Step &st : plan_.steps)
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
    for (const Step &st : plan_.steps)
        for (const std::string &n : st.notes)
            if (notes[n]++ == 0) order.push_back(n);
    for (const std::string &n : order)
        out.push_back(n + " (" + std::to_string(notes[n]) + (notes[n] == 1 ? " step)" : " steps)"));
    return out;
}

// Workers 1 … threads − 1 are threads of the program; worker 0 is the thread that
// calls run(), for as long as the run lasts. The whole-operation steps run on
// worker 0 with every thread, so their OpenMP team is the caller's own — the team
// that made the kernels at compile time, kept from run to run — rather than a
// second team beside it whose threads spin on the same cores after each parallel
// region (libgomp's default wait policy).
void CpuProgram::start_workers() {
    for (int i = 1; i < options_.threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
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
    // Worker 0 runs on the caller of run() and gives the caller's thread count back.
    const int callers_team = index == 0 ? omp_threads() : -1;
    int team = callers_team;
    int last_run = -1, last_tile = -1;
    const int total = static_cast<int>(plan_.steps.size());
    std::unique_lock lock(mutex_);
    while (true) {
        if (index == 0 && running_ == 0 && (abort_ || finished_ == total)) {
            if (team != callers_team) set_omp_threads(callers_team);
            return;
        }
        // Pick a runnable step: whole-operation steps only on worker 0 and only alone.
        int pick = -1;
        if (!stopping_ && !abort_ && !exclusive_running_ && last_tile >= 0) {
            // Stay on the batch tile this worker ran last: its data is in this core's cache.
            for (int s : ready_) {
                const Step &st = plan_.steps[static_cast<size_t>(s)];
                if (st.run == last_run && st.tile == last_tile) {
                    pick = s;
                    break;
                }
            }
        }
        if (pick < 0 && !stopping_ && !abort_ && !exclusive_running_) {
            for (int s : ready_) {
                const Step &st = plan_.steps[static_cast<size_t>(s)];
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
        Step &st = plan_.steps[static_cast<size_t>(pick)];
        if (control_ && control_->cancelled && control_->cancelled()) {
            cancelled_ = true;
            abort_ = true;
            work_cv_.notify_all();
            continue;
        }
        ready_.erase(pick);
        last_run = st.run;
        last_tile = st.tile;
        ++running_;
        if (st.whole) exclusive_running_ = true;
        lock.unlock();

        const int want = st.whole ? options_.threads : 1;
        if (want != team) {
            set_omp_threads(want);
            team = want;
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
        if (control_ && control_->progress) {
            lock.unlock();
            control_->progress(done, total);
            lock.lock();
        }
        // Wake the others only when there is something for them (a run of batch
        // tiles finishes hundreds of steps; a wake-up per step is a futex call and,
        // on a busy machine, a lost time slice).
        // The run's end wakes worker 0 (the caller) too.
        if (released || finished_ == total || (abort_ && running_ == 0)) work_cv_.notify_all();
    }
}

Expected<RunResult, std::string> CpuProgram::run(const std::map<TensorId, TensorData> &inputs,
                                                 const RunControl &control) {
    std::lock_guard run_lock(run_mutex_);
    const auto t0 = std::chrono::steady_clock::now();
    RunResult result;
    result.arena_bytes = plan_.arena_bytes;
    // Buffers of this run.
    bases_.assign(plan_.tensors.size(), nullptr);
    for (size_t i = 0; i < plan_.tensors.size(); ++i) {
        TensorPlan &tp = plan_.tensors[i];
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
        pending_.assign(plan_.steps.size(), 0);
        ready_.clear();
        for (size_t s = 0; s < plan_.steps.size(); ++s) {
            pending_[s] = plan_.steps[s].dependencies;
            if (pending_[s] == 0) ready_.insert(static_cast<int>(s));
        }
        step_ms_.assign(plan_.steps.size(), 0.0);
        running_ = 0;
        finished_ = 0;
        exclusive_running_ = false;
        abort_ = false;
        cancelled_ = false;
        error_.clear();
        work_cv_.notify_all();
        lock.unlock();
        worker_loop(0);  // returns when every step has finished, or the run aborted with none running
        lock.lock();
        control_ = nullptr;
        if (!error_.empty()) return unexpected(error_);
        if (cancelled_) return unexpected(std::string("cancelled"));
    }
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
        const Step &st = plan_.steps[s];
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
