// The processes of a distributed launch (docs/launch.md), as a backend of several
// ranks needs them: which rank this is, a barrier and a broadcast, faults told
// to the others, and rank 0 gathering what the others measured and the output
// buffers they hold. Every wait is bounded by the launch's wait limit and polls
// the launcher's stop flag; a rank that does not answer is named. MPI implements
// it (launch/mpi_backend.h make_mpi_world); the cuda backend takes one to run as
// one rank of `mpirun -np N tapestry launch PLAN --backend cuda`. No MPI here:
// this header is the launch core's, which a build without MPI has too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "launch/backend.h"
#include "plan/plan.h"

namespace tapestry::launch {

class RankWorld {
public:
    virtual ~RankWorld() = default;
    virtual int rank() const = 0;
    virtual int ranks() const = 0;
    // The ranks on this rank's machine, and this rank's place among them (0-based):
    // how the ranks of one machine share its GPUs.
    virtual int node_ranks() const = 0;
    virtual int node_rank() const = 0;

    virtual void set_wait_limits(double timeout_seconds, std::function<bool()> stop) = 0;
    // Every rank reaches it before any goes on.
    virtual Expected<std::monostate, std::string> barrier(const std::string &what) = 0;
    // `bytes` bytes at `data` from rank `root` to every rank.
    virtual Expected<std::monostate, std::string> broadcast(void *data, std::int64_t bytes, int root,
                                                            const std::string &what) = 0;
    // Every rank's `value`, in rank order.
    virtual Expected<std::vector<std::int64_t>, std::string> allgather(std::int64_t value, const std::string &what) = 0;

    virtual void announce_fault(const std::string &message) = 0;
    virtual std::optional<std::string> remote_fault() = 0;

    // Rank 0: every other rank's measured steps (appended to `steps`) and the output
    // buffers the others hold (each handed to `store`); another rank: sends its steps
    // and the output buffers it holds (their bytes from `bytes_of`). `owner` gives a
    // buffer's rank.
    virtual Expected<std::monostate, std::string> gather_at_root(
        const plan::Plan &plan, std::vector<MeasuredStep> &steps, const std::function<int(int buffer)> &owner,
        const std::function<Expected<std::vector<std::byte>, std::string>(int buffer)> &bytes_of,
        const std::function<void(int buffer, std::vector<std::byte> bytes)> &store) = 0;
};

// Every rank's outcome of a stage every rank goes through (preparing a plan,
// loading its inputs), told to every rank: a rank whose own outcome is an error
// returns it; the others, when a rank failed, return what the first failed rank
// said ("rank 1 could not finish preparing the plan: …"). So no rank waits out the wait limit for
// a rank that will never come. Every rank must call it, failed or not: an
// allgather of the outcomes, then the failed rank's message broadcast from it.
Expected<std::monostate, std::string> agree_ranks(RankWorld &world, Expected<std::monostate, std::string> mine,
                                                  const std::string &what);

// The rank owning plan device `device` of `devices` when `ranks` ranks share them:
// contiguous blocks, device d on rank ⌊d·ranks/devices⌋.
inline int rank_of_device(int device, int devices, int ranks) {
    return devices > 0 ? static_cast<int>(static_cast<long long>(device) * ranks / devices) : 0;
}

}  // namespace tapestry::launch
