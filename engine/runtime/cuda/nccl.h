// NCCL for the cuda backend's transfers between plan devices (issue 18, docs/gpu.md):
// one communicator per GPU this process drives, made non-blocking so that no NCCL
// call can hold the host for ever — each call's completion is polled against a
// deadline, and a communicator that misses it is aborted. A message is a run of
// bytes from one rank's GPU memory to another's, sent and received in one NCCL
// group (one thread drives every rank of the process). A communicator of one rank
// sends to itself: that is how every NCCL path of a multi-device plan runs on one
// lent GPU (NCCL refuses two ranks on one GPU).
// Built where CMake finds NCCL (TAPESTRY_WITH_NCCL); elsewhere NcclComms::make
// says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/kernel.h"

namespace tapestry::cuda {

// Whether this build has NCCL.
bool nccl_built();
// The NCCL library this process runs with ("2.28.3"), or why there is none.
std::string nccl_version();

// How the processes of a distributed launch meet: NCCL's unique id (made by one
// process, nccl_unique_id, and sent to the others — over MPI), the ranks in all, and
// this process's first.
struct NcclBootstrap {
    std::string id;  // ncclUniqueId's bytes
    int ranks = 0;
    int first = 0;
};
Expected<std::string, std::string> nccl_unique_id();

class NcclComms {
public:
    // One communicator for each GPU (CUDA ordinals, distinct) of this process: rank i
    // on ordinals[i] — or, with a bootstrap, rank first + i of its ranks, the others in
    // other processes making theirs with the same id. Waits at most `limit` for NCCL
    // to set them up (every process's).
    static Expected<std::unique_ptr<NcclComms>, std::string> make(const std::vector<int> &ordinals,
                                                                  std::chrono::milliseconds limit,
                                                                  const NcclBootstrap *bootstrap = nullptr);
    // Finalized and destroyed; aborted instead when one failed or timed out.
    ~NcclComms();
    NcclComms(const NcclComms &) = delete;
    NcclComms &operator=(const NcclComms &) = delete;

    int ranks() const { return ranks_; }
    // Whether NCCL rank r's communicator is in this process.
    bool local(int r) const { return r >= first_ && r < first_ + static_cast<int>(ordinals_.size()); }

    // `bytes` bytes from `src` on rank `from` (enqueued on `from_stream`, a stream of
    // its GPU) into `dst` on rank `to` (on `to_stream`); from == to sends to itself.
    // Only the sides whose rank is in this process are posted (the other process
    // posts its side, in the same order). Returns once NCCL has taken the calls (at
    // most `limit`); the data moves when the streams reach them.
    Status exchange(int from, const void *src, cudaStream_t from_stream, int to, void *dst, cudaStream_t to_stream,
                    std::int64_t bytes, std::chrono::milliseconds limit);

    // An error NCCL found while the streams ran (a peer's fault, a broken link),
    // as text naming the rank; nullopt while every communicator is fine.
    std::optional<std::string> async_error() const;
    // Aborts every communicator: operations in flight end (a wait for a stream
    // that holds one returns). The object is unusable afterwards.
    void abort();
    bool aborted() const { return aborted_; }

private:
    NcclComms() = default;
    std::vector<int> ordinals_;
    std::vector<void *> comms_;  // ncclComm_t per local rank
    int ranks_ = 0, first_ = 0;
    bool aborted_ = false;
};

}  // namespace tapestry::cuda
