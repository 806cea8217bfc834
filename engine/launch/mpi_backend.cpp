// The `mpi` backend (launch/mpi_backend.h): the host backend whose hops between
// ranks are MPI messages. Every MPI call goes through one mutex
// (MPI_THREAD_SERIALIZED): the launcher's stream workers hop from several
// threads. A step's messages between two ranks share one tag (the step's) and
// both sides walk the step's hops in the same order, so MPI's non-overtaking
// order matches them; every wait polls with a deadline.
#include "launch/mpi_backend.h"

#ifdef TAPESTRY_HAVE_MPI

// The C API only: OpenMPI's deprecated C++ bindings do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/checked_size.h"
#include "launch/host_backend.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/memory_budget.h"

namespace tapestry::launch {
namespace {

constexpr int kTagFault = 1;    // a rank's fault, told to the others
constexpr int kTagSteps = 2;    // measured steps, to rank 0
constexpr int kTagOutput = 3;   // output buffers, to rank 0
constexpr int kTagStepBase = 16;  // a step's messages: 16 + step

using Clock = std::chrono::steady_clock;

// The ranks of MPI_COMM_WORLD (a duplicate of it) as a RankWorld, and the bounded
// waits the mpi backend's messages use too.
class MpiWorld final : public RankWorld {
public:
    MpiWorld(MPI_Comm comm, int rank, int size, long tag_ub, int node_rank, int node_ranks)
        : comm_(comm), rank_(rank), size_(size), tag_ub_(tag_ub), node_rank_(node_rank), node_ranks_(node_ranks) {}

    int rank() const override { return rank_; }
    int ranks() const override { return size_; }
    int node_ranks() const override { return node_ranks_; }
    int node_rank() const override { return node_rank_; }
    long tag_ub() const { return tag_ub_; }
    MPI_Comm comm() const { return comm_; }
    std::mutex &mutex() { return mpi_; }

    void set_wait_limits(double timeout_seconds, std::function<bool()> stop) override {
        timeout_ = timeout_seconds;
        stop_ = std::move(stop);
    }

    Expected<std::monostate, std::string> barrier(const std::string &what) override {
        MPI_Request r;
        {
            std::lock_guard lock(mpi_);
            MPI_Ibarrier(comm_, &r);
        }
        return wait(r, what, -1);
    }

    Expected<std::monostate, std::string> broadcast(void *data, std::int64_t bytes, int root, const std::string &what) override {
        if (bytes > INT_MAX) return unexpected(what + ": over 2 GiB in one broadcast");
        MPI_Request r;
        {
            std::lock_guard lock(mpi_);
            MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_, &r);
        }
        return wait(r, what, root == rank_ ? -1 : root);
    }

    Expected<std::vector<std::int64_t>, std::string> allgather(std::int64_t value, const std::string &what) override {
        std::vector<long long> all(static_cast<size_t>(size_));
        long long mine = value;
        MPI_Request r;
        {
            std::lock_guard lock(mpi_);
            MPI_Iallgather(&mine, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, comm_, &r);
        }
        if (auto w = wait(r, what, -1); !w) return unexpected(w.error());
        return std::vector<std::int64_t>(all.begin(), all.end());
    }

    void announce_fault(const std::string &message) override {
        std::lock_guard lock(mpi_);
        if (!fault_text_.empty()) return;
        fault_text_ = message;
        for (int r = 0; r < size_; ++r) {
            if (r == rank_) continue;
            MPI_Request q;
            MPI_Isend(fault_text_.data(), static_cast<int>(fault_text_.size()), MPI_CHAR, r, kTagFault, comm_, &q);
            MPI_Request_free(&q);  // never waited for: the other rank may be gone
        }
    }

    std::optional<std::string> remote_fault() override {
        std::lock_guard lock(mpi_);
        if (remote_fault_) return remote_fault_;
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, kTagFault, comm_, &flag, &st);
        if (!flag) return std::nullopt;
        int n = 0;
        MPI_Get_count(&st, MPI_CHAR, &n);
        std::string m(static_cast<size_t>(std::max(0, n)), '\0');
        MPI_Recv(m.data(), n, MPI_CHAR, st.MPI_SOURCE, kTagFault, comm_, MPI_STATUS_IGNORE);
        remote_fault_ = m;
        return remote_fault_;
    }

    Expected<std::monostate, std::string> gather_at_root(
        const plan::Plan &plan, std::vector<MeasuredStep> &steps, const std::function<int(int buffer)> &owner,
        const std::function<Expected<std::vector<std::byte>, std::string>(int buffer)> &bytes_of,
        const std::function<void(int buffer, std::vector<std::byte> bytes)> &store) override {
        // The output buffers, in the order both sides walk them.
        std::vector<int> outputs;
        std::set<int> seen;
        for (const plan::OutputPiece &p : plan.outputs)
            if (seen.insert(p.buffer).second) outputs.push_back(p.buffer);
        if (rank_ != 0) return send_to_root(steps, outputs, owner, bytes_of);
        std::string errors;
        std::set<int> silent;
        for (int r = 1; r < size_; ++r) {
            auto got = receive_steps(r, steps);
            if (!got) {
                errors += (errors.empty() ? "" : "; ") + got.error();
                silent.insert(r);
            }
        }
        for (int b : outputs) {
            const std::int64_t bytes = plan.buffers[static_cast<size_t>(b)].bytes;
            const int from = owner(b);
            if (from == 0 || silent.count(from)) continue;
            std::vector<std::byte> data(static_cast<size_t>(bytes));
            auto got = receive(data.data(), bytes, from, kTagOutput,
                               "output buffer " + std::to_string(b) + " from rank " + std::to_string(from));
            if (!got) {
                errors += (errors.empty() ? "" : "; ") + got.error();
                silent.insert(from);
                continue;
            }
            store(b, std::move(data));
        }
        if (!errors.empty()) return unexpected(errors);
        return std::monostate{};
    }

    // Polls `r` until it completes, the launch stops, another rank reports a fault
    // or the timeout passes (then the request is cancelled).
    Expected<std::monostate, std::string> wait(MPI_Request &r, const std::string &what, int peer) {
        const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
        while (true) {
            int flag = 0;
            {
                std::lock_guard lock(mpi_);
                MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            }
            if (flag) return std::monostate{};
            std::string why;
            if (stop_ && stop_()) why = "stopped: the launch failed elsewhere";
            else if (auto f = remote_fault()) why = *f;
            else if (Clock::now() >= deadline) {
                char secs[32];
                std::snprintf(secs, sizeof secs, "%g", timeout_);
                why = "rank " + std::to_string(rank_) + " waited over " + secs + " s for " + what +
                      (peer >= 0 ? ": rank " + std::to_string(peer) + " did not answer (it may have died)" : "");
            }
            if (!why.empty()) {
                std::lock_guard lock(mpi_);
                MPI_Cancel(&r);
                MPI_Request_free(&r);
                return unexpected(why);
            }
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }

    Expected<std::monostate, std::string> receive(std::byte *into, std::int64_t bytes, int from, int tag,
                                                  const std::string &what) {
        if (bytes > INT_MAX) return unexpected(what + ": a message of over 2 GiB (not sent in pieces yet)");
        MPI_Request r;
        {
            std::lock_guard lock(mpi_);
            MPI_Irecv(into, static_cast<int>(bytes), MPI_BYTE, from, tag, comm_, &r);
        }
        return wait(r, what, from);
    }

private:
    // Rank 0: rank r's measured steps (6 doubles each), however many it sends.
    Expected<std::monostate, std::string> receive_steps(int r, std::vector<MeasuredStep> &steps) {
        const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
        MPI_Status st;
        while (true) {
            int flag = 0;
            {
                std::lock_guard lock(mpi_);
                MPI_Iprobe(r, kTagSteps, comm_, &flag, &st);
            }
            if (flag) break;
            if (Clock::now() >= deadline)
                return unexpected("rank " + std::to_string(r) + " sent no measurements after the run (it may have died)");
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        int n = 0;
        std::vector<double> v;
        {
            std::lock_guard lock(mpi_);
            MPI_Get_count(&st, MPI_DOUBLE, &n);
            v.resize(static_cast<size_t>(std::max(0, n)));
            MPI_Recv(v.data(), n, MPI_DOUBLE, r, kTagSteps, comm_, MPI_STATUS_IGNORE);
        }
        for (size_t i = 0; i + 6 <= v.size(); i += 6)
            steps.push_back(MeasuredStep{static_cast<int>(v[i]), v[i + 1], v[i + 2], v[i + 3], v[i + 4], static_cast<int>(v[i + 5])});
        return std::monostate{};
    }

    Expected<std::monostate, std::string> send_to_root(
        const std::vector<MeasuredStep> &steps, const std::vector<int> &outputs, const std::function<int(int)> &owner,
        const std::function<Expected<std::vector<std::byte>, std::string>(int buffer)> &bytes_of) {
        std::vector<double> v;
        for (const MeasuredStep &m : steps)
            v.insert(v.end(), {static_cast<double>(m.step), m.start, m.end, m.predicted, m.moved_bytes, static_cast<double>(m.rank)});
        MPI_Request r;
        {
            std::lock_guard lock(mpi_);
            MPI_Isend(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, 0, kTagSteps, comm_, &r);
        }
        if (auto w = wait(r, "rank 0 to take the measurements", 0); !w) return w;
        for (int b : outputs) {
            if (owner(b) != rank_) continue;
            auto bytes = bytes_of(b);
            if (!bytes) return unexpected("output buffer " + std::to_string(b) + ": " + bytes.error());
            if (bytes->size() > static_cast<size_t>(INT_MAX))
                return unexpected("output buffer " + std::to_string(b) + ": over 2 GiB (not sent in pieces yet)");
            {
                std::lock_guard lock(mpi_);
                MPI_Isend(bytes->data(), static_cast<int>(bytes->size()), MPI_BYTE, 0, kTagOutput, comm_, &r);
            }
            if (auto w = wait(r, "rank 0 to take output buffer " + std::to_string(b), 0); !w) return w;
        }
        return std::monostate{};
    }

    MPI_Comm comm_;
    int rank_ = 0, size_ = 1;
    long tag_ub_ = 32767;
    int node_rank_ = 0, node_ranks_ = 1;
    double timeout_ = 120;
    std::function<bool()> stop_;
    std::mutex mpi_;
    std::string fault_text_;
    std::optional<std::string> remote_fault_;
};

class MpiBackend final : public HostBackend {
public:
    MpiBackend(const CpuBackendOptions &options, std::shared_ptr<MpiWorld> world)
        : HostBackend(options), world_(std::move(world)), rank_(world_->rank()), size_(world_->ranks()) {}

    std::string name() const override { return "mpi"; }
    std::string describe() const override {
        const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
        return "mpi: rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ", " + std::to_string(cores) +
               (cores == 1 ? " core" : " cores") + " (" + cpu::cpu_isa().name + ") here, up to " +
               std::to_string(options_.max_devices) + " devices a rank";
    }
    int max_devices() const override { return options_.max_devices * size_; }
    int rank() const override { return rank_; }
    int ranks() const override { return size_; }
    bool owns(int device) const override { return local(device); }

    Expected<std::monostate, std::string> prepare(const plan::Plan &plan) override {
        devices_ = static_cast<int>(plan.devices.size());
        if (size_ > devices_)
            return unexpected(std::to_string(size_) + " ranks run a plan of " + std::to_string(devices_) +
                              " devices: a rank needs at least one device (run mpirun -np " + std::to_string(devices_) +
                              " or fewer)");
        if (static_cast<long>(plan.steps.size()) + kTagStepBase > world_->tag_ub())
            return unexpected("the plan's " + std::to_string(plan.steps.size()) + " steps exceed this MPI's tag range (" +
                              std::to_string(world_->tag_ub()) + ")");
        return HostBackend::prepare(plan);
    }

    void set_wait_limits(double timeout_seconds, std::function<bool()> stop) override {
        world_->set_wait_limits(timeout_seconds, std::move(stop));
    }
    Expected<std::monostate, std::string> agree(Expected<std::monostate, std::string> mine, const std::string &what) override {
        return agree_ranks(*world_, std::move(mine), what);
    }
    Expected<std::monostate, std::string> synchronize() override { return world_->barrier("the other ranks to start"); }
    void announce_fault(const std::string &message) override { world_->announce_fault(message); }
    std::optional<std::string> remote_fault() override { return world_->remote_fault(); }

    Expected<std::monostate, std::string> gather(std::vector<MeasuredStep> &steps) override {
        return world_->gather_at_root(
            *plan_, steps, [this](int b) { return rank_of(plan_->buffers[static_cast<size_t>(b)].device); },
            [this](int b) -> Expected<std::vector<std::byte>, std::string> {
                const std::byte *p = data_[static_cast<size_t>(b)];
                return std::vector<std::byte>(p, p + plan_->buffers[static_cast<size_t>(b)].bytes);
            },
            [this](int b, std::vector<std::byte> bytes) {
                resident_[static_cast<size_t>(b)] = std::move(bytes);
                data_[static_cast<size_t>(b)] = resident_[static_cast<size_t>(b)].data();
            });
    }

protected:
    bool local(int device) const override { return rank_of(device) == rank_; }

    Expected<double, std::string> hop(int step, int from, const HostBox &src, int to, const HostBox &dst,
                                      std::int64_t lo, std::int64_t hi, bool add) override {
        const bool here = local(from), there = local(to);
        if (here && there) return HostBackend::hop(step, from, src, to, dst, lo, hi, add);
        if (!here && !there) return 0.0;
        const std::int64_t bytes = (hi - lo) * dtype_bytes(src.dtype);
        if (bytes > INT_MAX) return unexpected(std::string("a message of over 2 GiB (not sent in pieces yet)"));
        if (here) {
            Pending p;
            p.bytes.resize(static_cast<size_t>(bytes));
            pack_elements(src, lo, hi, p.bytes.data());
            p.peer = rank_of(to);
            {
                std::lock_guard lock(world_->mutex());
                MPI_Isend(p.bytes.data(), static_cast<int>(bytes), MPI_BYTE, p.peer, kTagStepBase + step, world_->comm(),
                          &p.request);
            }
            std::lock_guard lock(pending_mutex_);
            pending_[step].push_back(std::move(p));
            return static_cast<double>(bytes);
        }
        std::vector<std::byte> in(static_cast<size_t>(bytes));
        auto got = world_->receive(in.data(), bytes, rank_of(from), kTagStepBase + step,
                                   "a message from rank " + std::to_string(rank_of(from)) + " (device " +
                                       plan_->devices[static_cast<size_t>(from)].name + ") at step " + std::to_string(step));
        if (!got) return unexpected(got.error());
        unpack_elements(in.data(), dst, lo, hi, add);
        return 0.0;
    }

    Expected<std::monostate, std::string> finish_hops(int step) override {
        std::vector<Pending> mine;
        {
            std::lock_guard lock(pending_mutex_);
            auto it = pending_.find(step);
            if (it == pending_.end()) return std::monostate{};
            mine = std::move(it->second);
            pending_.erase(it);
        }
        for (Pending &p : mine) {
            auto done = world_->wait(p.request, "rank " + std::to_string(p.peer) + " to take step " + std::to_string(step) +
                                                    "'s message", p.peer);
            if (!done) return done;
        }
        return std::monostate{};
    }

private:
    struct Pending {
        std::vector<std::byte> bytes;
        MPI_Request request = MPI_REQUEST_NULL;
        int peer = 0;
    };

    int rank_of(int device) const { return rank_of_device(device, devices_, size_); }

    std::shared_ptr<MpiWorld> world_;
    int rank_ = 0, size_ = 1;
    int devices_ = 0;
    std::mutex pending_mutex_;
    std::map<int, std::vector<Pending>> pending_;  // per step: sends in flight
};

// MPI started in this process (once; MPI_Init_thread) and its world: MPI_COMM_WORLD
// duplicated, errors returned, the ranks of this machine found by a shared-memory split.
Expected<std::shared_ptr<MpiWorld>, std::string> start_mpi_world() {
    int started = 0;
    MPI_Initialized(&started);
    if (!started) {
        int provided = 0;
        if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            return unexpected(std::string("MPI did not start (MPI_Init_thread failed)"));
        if (provided < MPI_THREAD_SERIALIZED)
            return unexpected(std::string("this MPI offers no MPI_THREAD_SERIALIZED: the launcher's streams need it"));
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    void *value = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
    const long tag_ub = flag && value ? static_cast<long>(*static_cast<int *>(value)) : 32767;
    MPI_Comm node;
    int node_rank = 0, node_ranks = 1;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &node_rank);
        MPI_Comm_size(node, &node_ranks);
        MPI_Comm_free(&node);
    }
    return std::make_shared<MpiWorld>(comm, rank, size, tag_ub, node_rank, node_ranks);
}

}  // namespace

bool mpi_backend_built() { return true; }

Expected<std::unique_ptr<Backend>, std::string> make_mpi_backend(const CpuBackendOptions &options) {
    auto world = start_mpi_world();
    if (!world) return unexpected(world.error());
    return std::unique_ptr<Backend>(std::make_unique<MpiBackend>(options, std::move(world).value()));
}

Expected<std::shared_ptr<RankWorld>, std::string> make_mpi_world() {
    auto world = start_mpi_world();
    if (!world) return unexpected(world.error());
    return std::shared_ptr<RankWorld>(std::move(world).value());
}

bool launched_by_mpi() {
    for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
        if (std::getenv(v)) return true;
    return false;
}

void finish_mpi(bool clean) {
    int started = 0, finished = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&finished);
    if (started && !finished && clean) MPI_Finalize();
}

}  // namespace tapestry::launch

#else  // no MPI in this build

namespace tapestry::launch {

bool mpi_backend_built() { return false; }

const char *kNoMpi = "this tapestry was built without MPI: install OpenMPI (openmpi-bin, libopenmpi-dev) and build again";

Expected<std::unique_ptr<Backend>, std::string> make_mpi_backend(const CpuBackendOptions &) {
    return unexpected(std::string(kNoMpi));
}
Expected<std::shared_ptr<RankWorld>, std::string> make_mpi_world() { return unexpected(std::string(kNoMpi)); }
bool launched_by_mpi() { return false; }

void finish_mpi(bool) {}

}  // namespace tapestry::launch

#endif
