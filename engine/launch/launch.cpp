// The launcher (launch/launch.h). One worker per device stream; a step runs on
// the worker that reaches it last among the streams it holds, once its
// dependencies are done — so the plan's lowest unfinished step can always run,
// and nothing waits on a step that cannot.
#include "launch/launch.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <functional>
#include <mutex>
#include <thread>

#include "common/checked_size.h"
#include "launch/host_boxes.h"

namespace tapestry::launch {
namespace {

using Clock = std::chrono::steady_clock;

std::string step_name(const plan::Plan &plan, int i) {
    const plan::Step &s = plan.steps[static_cast<size_t>(i)];
    std::string out = "step " + std::to_string(i) + " (" + plan::step_kind_name(s.kind) + " " + s.op;
    if (!s.shard.empty()) out += " " + s.shard;
    if (!s.collective.empty()) out += " " + s.collective;
    return out + ")";
}

const std::string &device_name(const plan::Plan &plan, int d) { return plan.devices[static_cast<size_t>(d)].name; }

}  // namespace

std::vector<int> step_streams(const plan::Step &s) {
    if (s.kind == plan::StepKind::collective) {
        std::vector<int> out;
        for (int d : s.participants) out.push_back(2 * d + 1);
        return out;
    }
    if (s.kind == plan::StepKind::send_recv) {
        if (s.peer == s.device || s.peer < 0) return {2 * s.device + 1};
        return {2 * s.device + 1, 2 * s.peer + 1};
    }
    return {2 * s.device};
}

namespace {

std::string stream_text(const plan::Plan &plan, int stream) {
    return "device " + device_name(plan, stream / 2) + (stream % 2 ? "'s communication stream" : "'s compute stream");
}

class Run {
public:
    Run(const plan::Plan &plan, Backend &backend, const LaunchOptions &options)
        : plan_(plan), backend_(backend), options_(options) {
        const size_t n = plan.steps.size();
        work_.resize(plan.devices.size() * 2);
        wakes_ = std::vector<std::condition_variable>(work_.size());
        ready_.resize(work_.size());
        needed_.resize(n);
        arrived_.assign(n, 0);
        done_.assign(n, 0);
        measured_.resize(n);
        // This process runs the streams of the devices it owns (all of them but
        // in an MPI launch). A step's dependencies that touch none of them are
        // kept by the ranks that own what they touch: every dependency comes from
        // a buffer both steps touch, and a buffer is one device's.
        for (size_t i = 0; i < n; ++i) {
            for (int k : step_streams(plan.steps[i]))
                if (backend.owns(k / 2)) {
                    ++needed_[i];
                    work_[static_cast<size_t>(k)].push_back(static_cast<int>(i));
                }
            if (needed_[i] > 0) {
                ticket_.push_back(static_cast<int>(admission_.size()));
                admission_.push_back(static_cast<int>(i));
            } else {
                ticket_.push_back(-1);
            }
        }
        slots_ = backend.concurrent_steps();
        ordered_ = slots_ > 0 || backend.orders_memory();
        if (backend.orders_memory()) {
            // Per step and device of this process it allocates on: how many earlier
            // steps free there (every step touching a device's buffers holds one of
            // its streams, so runs where the device is).
            memory_ = plan::memory_events(plan);
            std::vector<int> frees(plan.devices.size(), 0);
            frees_before_.resize(n);
            for (size_t i = 0; i < n; ++i) {
                for (int d : memory_.allocates[i])
                    if (backend.owns(d)) frees_before_[i].emplace_back(d, frees[static_cast<size_t>(d)]);
                for (int d : memory_.frees[i]) ++frees[static_cast<size_t>(d)];
            }
            freed_.assign(plan.devices.size(), 0);
        }
    }

    // Runs every stream to the end or the first fault; the result's steps and status.
    void run(LaunchResult &result) {
        backend_.set_wait_limits(options_.wait_timeout_seconds, [this] {
            std::lock_guard lock(mutex_);
            return aborted_;
        });
        if (auto sync = backend_.synchronize(); !sync) {
            backend_.set_wait_limits(options_.wait_timeout_seconds, {});
            result.status = "failed";
            result.fault = LaunchFault{-1, -1, options_.rank, "rank " + std::to_string(backend_.rank()) +
                                                                  ": the ranks did not start together: " + sync.error()};
            return;
        }
        t0_ = Clock::now();
        // The first stream with steps runs on the calling thread, each other one on
        // a thread of its own: a 1-device plan then runs where its kernels were
        // prepared, as `tapestry run` does — one OpenMP team, kept from launch to
        // launch, instead of a fresh thread and team per launch beside the
        // preparing thread's, which spins on the same cores (docs/launch.md,
        // "Overhead").
        std::vector<std::thread> threads;
        int here = -1;
        for (size_t k = 0; k < work_.size(); ++k) {
            if (work_[k].empty()) continue;
            if (here < 0) here = static_cast<int>(k);
            else threads.emplace_back([this, k] { worker(static_cast<int>(k)); });
        }
        if (here >= 0) worker(here);
        for (std::thread &t : threads) t.join();
        // The backend's waits after the run (gathering) outlive this run: no stop flag of ours.
        backend_.set_wait_limits(options_.wait_timeout_seconds, {});
        for (size_t i = 0; i < measured_.size(); ++i) {
            if (!done_[i]) continue;
            if (auto t = backend_.device_time(static_cast<int>(i))) {
                measured_[i].start = t->first;
                measured_[i].end = t->second;
            }
            result.steps.push_back(measured_[i]);
        }
        result.status = cancelled_ ? "cancelled" : (aborted_ ? "failed" : "ok");
        if (aborted_ && !cancelled_) result.fault = fault_;
        if (cancelled_) result.fault.message = "cancelled";
    }

private:
    double now() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

    // Records the first fault and stops every worker; `tell` passes it to the other
    // ranks (not for a fault another rank told us).
    void fail(int step, int device, const std::string &message, bool tell = true) {  // mutex_ held
        if (aborted_) return;
        aborted_ = true;
        fault_.step = step;
        fault_.device = device;
        fault_.rank = options_.rank;
        fault_.message = message;
        for (std::condition_variable &cv : wakes_) cv.notify_one();
        if (tell && !cancelled_) backend_.announce_fault(message);
    }

    // Wakes the streams whose wait is now over (mutex_ held): only those, so that a
    // finished step does not wake every stream of every device onto cores that run
    // kernels (8 streams for 4 devices on 2 cores).
    void wake() {
        for (size_t k = 0; k < ready_.size(); ++k)
            if (ready_[k] && ready_[k]()) wakes_[k].notify_one();
    }

    // Waits (mutex_ held through `lock`) until ready() holds, the launch aborts, it
    // is cancelled or the timeout passes; false unless ready. While it waits, its
    // stream's ready() is where wake() looks; every 20 ms it looks itself (a
    // cancel, a fault on another rank).
    // A wait for admission behind an earlier step (ordered_) may last twice the
    // timeout (`patience` 2): the earlier step's own wait, which began about as
    // early, ends first and names what really holds the launch up.
    template <typename Ready, typename Blame>
    bool wait(std::unique_lock<std::mutex> &lock, int stream, int step, Ready ready, Blame blame, double patience = 1) {
        const double limit = options_.wait_timeout_seconds * patience;
        const auto deadline = Clock::now() + std::chrono::duration<double>(limit);
        std::function<bool()> &waiting = ready_[static_cast<size_t>(stream)];
        waiting = ready;
        struct Done {
            std::function<bool()> &f;
            ~Done() { f = nullptr; }
        } done{waiting};
        while (!ready()) {
            if (aborted_) return false;
            if (options_.cancelled && options_.cancelled()) {
                cancelled_ = true;
                fail(step, stream / 2, "cancelled");
                return false;
            }
            if (auto remote = backend_.remote_fault()) {
                fail(step, stream / 2, *remote, false);
                return false;
            }
            if (Clock::now() >= deadline) {
                char secs[32];
                std::snprintf(secs, sizeof secs, "%g", limit);
                fail(step, stream / 2,
                     stream_text(plan_, stream) + " (rank " + std::to_string(options_.rank) + ") waited over " + secs +
                         " s at " + step_name(plan_, step) + ": " + blame());
                return false;
            }
            wakes_[static_cast<size_t>(stream)].wait_for(lock, std::chrono::milliseconds(20));
        }
        return !aborted_;
    }

    void worker(int stream) {
        std::unique_lock lock(mutex_);
        for (int s : work_[static_cast<size_t>(stream)]) {
            const plan::Step &step = plan_.steps[static_cast<size_t>(s)];
            auto mine = [&](int d) { return needed_[static_cast<size_t>(d)] > 0; };
            auto deps_done = [&] {
                return std::all_of(step.deps.begin(), step.deps.end(),
                                   [&](int d) { return !mine(d) || done_[static_cast<size_t>(d)] != 0; });
            };
            auto blame_deps = [&] {
                for (int d : step.deps)
                    if (mine(d) && !done_[static_cast<size_t>(d)])
                        return "its dependency " + step_name(plan_, d) + " has not finished";
                return std::string("its dependencies have not finished");
            };
            if (!wait(lock, stream, s, deps_done, blame_deps)) return;
            if (++arrived_[static_cast<size_t>(s)] < needed_[static_cast<size_t>(s)]) {
                auto finished = [&] { return done_[static_cast<size_t>(s)] != 0; };
                auto blame_ends = [&] {
                    return std::string("the other streams it holds (") +
                           (step.kind == plan::StepKind::collective ? "its participants" : "the other end") +
                           ") have not reached it or not finished it";
                };
                if (!wait(lock, stream, s, finished, blame_ends)) return;
                continue;
            }
            if (ordered_) {
                // Admitted in plan order (into one of the slots, on shared cores);
                // beginning a buffer's lifetime only once the earlier ones ended there.
                // A later free cannot have run yet, so counting the frees suffices.
                auto memory_free = [&] {
                    if (frees_before_.empty()) return true;
                    for (const auto &[d, count] : frees_before_[static_cast<size_t>(s)])
                        if (freed_[static_cast<size_t>(d)] < count) return false;
                    return true;
                };
                auto admitted = [&] {
                    return admitted_ == ticket_[static_cast<size_t>(s)] && (slots_ <= 0 || running_ < slots_) &&
                           memory_free();
                };
                auto blame_slot = [&] {
                    if (admitted_ < ticket_[static_cast<size_t>(s)])
                        return "the steps before it in plan order have not started (" +
                               step_name(plan_, admission_[static_cast<size_t>(admitted_)]) + " is next)";
                    if (!memory_free())
                        return std::string("the earlier steps that end buffers' lifetimes on its device have not finished");
                    return "all " + std::to_string(slots_) + " of the machine's step slots stayed busy";
                };
                if (!wait(lock, stream, s, admitted, blame_slot, 2)) return;
                ++admitted_;
                ++running_;
                wake();
            }
            if (options_.cancelled && options_.cancelled()) {
                cancelled_ = true;
                fail(s, step.device, "cancelled");
                return;
            }
            // Timed from its admission (under the lock): the measured starts keep plan order.
            const double start = now();
            lock.unlock();
            Expected<StepOutcome, std::string> r = execute(s, step);
            const double end = now();
            lock.lock();
            if (ordered_) --running_;
            if (!frees_before_.empty())
                for (int d : memory_.frees[static_cast<size_t>(s)]) ++freed_[static_cast<size_t>(d)];
            if (!r) {
                fail(s, step.device,
                     step_name(plan_, s) + " on device " + device_name(plan_, step.device) + " (rank " +
                         std::to_string(options_.rank) + ") failed: " + r.error());
                return;
            }
            measured_[static_cast<size_t>(s)] = MeasuredStep{s, start, end, step.predicted, r->moved_bytes, options_.rank};
            done_[static_cast<size_t>(s)] = 1;
            const int finished = ++finished_;
            wake();
            if (options_.progress) {
                lock.unlock();
                options_.progress(finished, static_cast<int>(plan_.steps.size()));
                lock.lock();
            }
        }
    }

    Expected<StepOutcome, std::string> execute(int s, const plan::Step &step) {
        if (s == options_.fail_step) return unexpected(std::string("injected fault (LaunchOptions::fail_step)"));
        switch (step.kind) {
            case plan::StepKind::kernel: return backend_.run_kernel(s);
            case plan::StepKind::copy: return backend_.run_copy(s);
            case plan::StepKind::send_recv: return backend_.run_send_recv(s);
            case plan::StepKind::collective: return backend_.run_collective(s);
        }
        return unexpected(std::string("unknown step kind"));
    }

    const plan::Plan &plan_;
    Backend &backend_;
    const LaunchOptions &options_;
    std::vector<std::vector<int>> work_;  // per stream: its steps, plan order
    std::vector<int> needed_;             // per step: the streams it holds
    std::mutex mutex_;
    // Per stream: what wakes it, and while it waits, what it waits for.
    std::vector<std::condition_variable> wakes_;
    std::vector<std::function<bool()>> ready_;
    std::vector<int> arrived_;
    std::vector<char> done_;
    // Shared cores (Backend::concurrent_steps): the steps this process runs in plan
    // order, each step's place among them (-1: not here), how many have been
    // admitted and how many are running.
    int slots_ = 0;
    bool ordered_ = false;
    std::vector<int> admission_, ticket_;
    int admitted_ = 0, running_ = 0;
    // Memory in plan order (Backend::orders_memory): per step, (device, frees
    // before it there) for each device it allocates on; per device, frees done.
    plan::MemoryEvents memory_;
    std::vector<std::vector<std::pair<int, int>>> frees_before_;
    std::vector<int> freed_;
    std::vector<MeasuredStep> measured_;
    int finished_ = 0;
    bool aborted_ = false, cancelled_ = false;
    LaunchFault fault_;
    Clock::time_point t0_;
};

// Every resident input and parameter buffer filled from its tensor's values.
Expected<std::monostate, std::string> load_inputs(const plan::Plan &plan, Backend &backend,
                                                  const std::map<TensorId, TensorData> &inputs) {
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const plan::Buffer &buf = plan.buffers[b];
        if (buf.kind != plan::BufferKind::input && buf.kind != plan::BufferKind::parameter) continue;
        if (!backend.owns(buf.device)) continue;
        const Tensor *t = plan.graph.find_tensor(buf.tensor);
        if (!t) return unexpected("buffer " + std::to_string(b) + " holds '" + buf.tensor.value + "', which the plan's graph lacks");
        const TensorData *value = nullptr;
        if (auto it = inputs.find(buf.tensor); it != inputs.end()) value = &it->second;
        else if (t->value) value = t->value.get();
        if (!value) return unexpected(std::string(role_name(t->role)) + " '" + t->id.value + "' has no value");
        if (value->dtype != t->dtype || !(value->shape == t->shape()))
            return unexpected(std::string(role_name(t->role)) + " '" + t->id.value + "': its value is " +
                              std::string(dtype_name(value->dtype)) + " " + value->shape.to_string() + ", the tensor " +
                              std::string(dtype_name(t->dtype)) + " " + t->shape().to_string());
        // The whole tensor read where it lies, or its box copied straight into the
        // device's host memory, or uploaded.
        if (buf.region == t->range && backend.read_in_place(static_cast<int>(b), value->bytes)) continue;
        auto *src = const_cast<std::byte *>(value->bytes.data());  // read only
        if (std::byte *dst = backend.host_memory(static_cast<int>(b))) {
            copy_box(host_box(src, t->range, buf.region, t->dtype), host_box(dst, buf.region, buf.region, t->dtype));
            continue;
        }
        std::vector<std::byte> bytes(static_cast<size_t>(buf.bytes));
        copy_box(host_box(src, t->range, buf.region, t->dtype), host_box(bytes.data(), buf.region, buf.region, t->dtype));
        if (auto up = backend.upload(static_cast<int>(b), bytes); !up)
            return unexpected("loading " + t->id.value + " on device " + device_name(plan, buf.device) + ": " + up.error());
    }
    return std::monostate{};
}

// Every graph output assembled from its output pieces.
Expected<std::map<TensorId, TensorData>, std::string> read_outputs(const plan::Plan &plan, const Backend &backend) {
    std::map<TensorId, TensorData> out;
    std::map<int, std::vector<std::byte>> fetched;
    for (const plan::OutputPiece &piece : plan.outputs) {
        const Tensor *t = plan.graph.find_tensor(piece.tensor);
        if (!t || piece.buffer < 0 || piece.buffer >= static_cast<int>(plan.buffers.size()))
            return unexpected("an output piece of '" + piece.tensor.value + "' names no tensor or buffer of the plan");
        const plan::Buffer &buf = plan.buffers[static_cast<size_t>(piece.buffer)];
        auto [it, fresh] = fetched.try_emplace(piece.buffer);
        if (fresh) {
            it->second.resize(static_cast<size_t>(buf.bytes));
            if (auto d = backend.download(piece.buffer, it->second); !d) return unexpected(d.error());
        }
        auto [slot, made] = out.try_emplace(t->id);
        if (made) slot->second = TensorData(t->dtype, t->shape());
        copy_box(host_box(it->second.data(), buf.region, piece.box, buf.dtype),
                 host_box(slot->second.bytes.data(), t->range, piece.box, t->dtype));
    }
    // An output without elements has no piece (the plan holds no buffer of it), yet
    // it is an output of the launch all the same: zero elements of its dtype and shape.
    for (const TensorPtr &t : plan.graph.tensors()) {
        if (t->role != TensorRole::output || out.count(t->id)) continue;
        if (!t->range.empty())
            return unexpected("output '" + t->id.value + "' (" + std::to_string(t->range.size()) +
                              " elements) has no output piece in the plan");
        out.emplace(t->id, TensorData(t->dtype, t->shape()));
    }
    return out;
}

}  // namespace

std::vector<std::int64_t> device_peaks(const plan::Plan &plan, const std::vector<plan::StepTime> &times) {
    const size_t n = plan.devices.size();
    std::vector<std::int64_t> resident(n, 0);
    std::vector<std::vector<std::pair<double, std::int64_t>>> events(n);
    for (const plan::Buffer &b : plan.buffers) {
        const size_t d = static_cast<size_t>(b.device);
        if (!b.in_arena()) {
            resident[d] = size_add(resident[d], b.bytes);
            continue;
        }
        if (b.first < 0 || b.first >= static_cast<int>(times.size()) || b.last >= static_cast<int>(times.size())) continue;
        const plan::StepTime &first = times[static_cast<size_t>(b.first)];
        if (first.start < 0) continue;  // never in use
        const plan::StepTime &last = times[static_cast<size_t>(b.last)];
        double end = last.start < 0 ? first.end : last.end;  // a failed launch: in use until it stopped
        events[d].emplace_back(first.start, b.bytes);
        events[d].emplace_back(std::max(end, first.start), -b.bytes);
    }
    std::vector<std::int64_t> peaks(n, 0);
    for (size_t d = 0; d < n; ++d) {
        auto &ev = events[d];
        // Frees before allocations at the same instant, as plan::simulate orders them.
        std::sort(ev.begin(), ev.end(), [](const auto &a, const auto &b) {
            return a.first != b.first ? a.first < b.first : a.second < b.second;
        });
        std::int64_t live = resident[d], peak = resident[d];
        for (const auto &[t, delta] : ev) {
            live += delta;
            peak = std::max(peak, live);
        }
        peaks[d] = peak;
    }
    return peaks;
}

Expected<std::monostate, std::string> check_fits(const plan::Plan &plan, const Backend &backend,
                                                 const plan::Prediction &p) {
    const int n = static_cast<int>(plan.devices.size());
    if (n > backend.max_devices())
        return unexpected("the plan has " + std::to_string(n) + " devices, but the " + backend.name() + " backend offers " +
                          std::to_string(backend.max_devices()));
    const std::int64_t capacity = backend.device_capacity(n);
    if (capacity <= 0) return std::monostate{};
    for (int d = 0; d < n; ++d) {
        const plan::DeviceLoad &load = p.devices[static_cast<size_t>(d)];
        // What is allocated counts: the whole arena (not only its peak in use) and the resident buffers.
        const std::int64_t need = std::max(load.peak, size_add(load.arena, load.resident));
        if (need > capacity)
            return unexpected("device " + device_name(plan, d) + " needs " + byte_text(need) + " (predicted peak " +
                              byte_text(load.peak) + ", arena " + byte_text(load.arena) + " and resident " +
                              byte_text(load.resident) + "), more than the " + byte_text(capacity) + " a " +
                              backend.name() + " device has");
    }
    return std::monostate{};
}

namespace {

// "2026-12-02T07:36:05.825Z", as the session's strftime('%Y-%m-%dT%H:%M:%fZ').
std::string utc_text(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

}  // namespace

Expected<LaunchResult, std::string> launch_plan(const plan::Plan &plan, Backend &backend,
                                                const std::map<TensorId, TensorData> &inputs,
                                                const LaunchOptions &options) {
    // Simulated once: the fit before anything is allocated, the predictions after.
    const plan::Prediction predicted = plan::simulate(plan);
    if (auto fits = check_fits(plan, backend, predicted); !fits) return unexpected(fits.error());
    // The backend's waits while it gets ready (other ranks' answers) are bounded too.
    backend.set_wait_limits(options.wait_timeout_seconds, options.cancelled);
    Expected<std::monostate, std::string> ready = backend.prepare(plan);
    if (ready && options.fail_prepare_rank == backend.rank())
        ready = unexpected(std::string("injected fault (LaunchOptions::fail_prepare_rank)"));
    if (ready) ready = load_inputs(plan, backend, inputs);
    if (auto agreed = backend.agree(std::move(ready), "preparing the plan"); !agreed) return unexpected(agreed.error());

    LaunchOptions options_here = options;
    options_here.rank = backend.rank();
    const LaunchOptions &opts = options_here;
    LaunchResult result;
    result.backend = backend.name();
    result.hardware = backend.describe();
    result.predicted_makespan = predicted.makespan;
    result.started_at = utc_text(std::chrono::system_clock::now());
    Run(plan, backend, opts).run(result);
    result.finished_at = utc_text(std::chrono::system_clock::now());
    // A distributed launch: rank 0 collects what the other ranks measured (and the
    // outputs they hold), whatever happened; a rank that does not answer is named.
    if (auto gathered = backend.gather(result.steps); !gathered && result.ok()) {
        result.status = "failed";
        result.fault = LaunchFault{-1, -1, opts.rank, gathered.error()};
    } else if (!gathered) {
        result.fault.message += "; " + gathered.error();
    }
    std::sort(result.steps.begin(), result.steps.end(),
              [](const MeasuredStep &a, const MeasuredStep &b) { return a.step < b.step; });
    // A step that spans ranks (a transfer or a collective between their devices) was
    // measured by each: it ran from the first start to the last end, and moved
    // what every rank sent.
    std::vector<MeasuredStep> merged;
    for (const MeasuredStep &m : result.steps) {
        if (!merged.empty() && merged.back().step == m.step) {
            MeasuredStep &x = merged.back();
            x.start = std::min(x.start, m.start);
            x.end = std::max(x.end, m.end);
            x.moved_bytes += m.moved_bytes;
        } else {
            merged.push_back(m);
        }
    }
    result.steps = std::move(merged);

    std::vector<plan::StepTime> times(plan.steps.size(), plan::StepTime{-1, -1});
    for (const MeasuredStep &m : result.steps) {
        times[static_cast<size_t>(m.step)] = plan::StepTime{m.start, m.end};
        result.wall_seconds = std::max(result.wall_seconds, m.end);
        result.moved_bytes += m.moved_bytes;
    }
    const std::vector<std::int64_t> peaks = device_peaks(plan, times);
    for (size_t d = 0; d < plan.devices.size(); ++d) {
        DeviceMeasurement dm;
        dm.name = plan.devices[d].name;
        dm.arena_bytes = plan.devices[d].arena_bytes;
        dm.resident_bytes = predicted.devices[d].resident;
        dm.peak_bytes = peaks[d];
        dm.predicted_peak_bytes = predicted.devices[d].peak;
        result.devices.push_back(std::move(dm));
    }
    for (const MeasuredStep &m : result.steps) {
        const plan::Step &s = plan.steps[static_cast<size_t>(m.step)];
        if (s.stream == plan::Stream::compute) result.devices[static_cast<size_t>(s.device)].busy_seconds += m.end - m.start;
        if (s.kind == plan::StepKind::send_recv) result.devices[static_cast<size_t>(s.device)].moved_bytes += m.moved_bytes;
        if (s.kind == plan::StepKind::collective)
            for (int d : s.participants)
                result.devices[static_cast<size_t>(d)].moved_bytes += m.moved_bytes / static_cast<double>(s.participants.size());
    }
    if (result.ok() && backend.rank() == 0) {
        auto outputs = read_outputs(plan, backend);
        if (!outputs) {
            result.status = "failed";
            result.fault = LaunchFault{-1, -1, opts.rank, "reading the outputs back: " + outputs.error()};
        } else {
            result.outputs = std::move(outputs).value();
        }
    }
    return result;
}

}  // namespace tapestry::launch
