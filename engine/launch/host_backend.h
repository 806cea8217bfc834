// The host backends' common part (internal to engine/launch): plan devices whose
// memory is host memory — one arena allocation per device at the plan's offsets,
// resident buffers beside it — kernel steps on the CPU executor's kernels, and the
// collectives' algorithms (ring, tree) written as hops: element ranges moved or
// added from one device's box into another's. In one process (the cpu backend) a
// hop is a copy; across MPI ranks (the mpi backend) a hop between ranks is a
// message. A process holds the memory of its local devices only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "launch/backend.h"
#include "launch/collectives.h"
#include "launch/cpu_backend.h"
#include "launch/host_boxes.h"
#include "launch/step_operands.h"

namespace tapestry::launch {

class HostBackend : public Backend, protected BoxMemory {
public:
    explicit HostBackend(const CpuBackendOptions &options);
    ~HostBackend() override;

    int max_devices() const override { return options_.max_devices; }
    bool orders_memory() const override { return true; }
    std::int64_t device_capacity(int devices) const override;
    Expected<std::monostate, std::string> prepare(const plan::Plan &plan) override;
    Expected<std::monostate, std::string> upload(int buffer, std::span<const std::byte> bytes) override;
    Expected<std::monostate, std::string> download(int buffer, std::span<std::byte> bytes) const override;
    bool read_in_place(int buffer, std::span<const std::byte> bytes) override;
    std::byte *host_memory(int buffer) override;
    Expected<StepOutcome, std::string> run_kernel(int step) override;
    Expected<StepOutcome, std::string> run_copy(int step) override { return transfer(step); }
    Expected<StepOutcome, std::string> run_send_recv(int step) override { return transfer(step); }
    Expected<StepOutcome, std::string> run_collective(int step) override;

protected:
    // BoxMemory (launch/collectives.h): host memory; in one process every device is
    // local and a hop is a copy (the mpi backend makes hops between ranks messages).
    bool local(int device) const override {
        (void)device;
        return true;
    }
    Expected<double, std::string> hop(int step, int from, const HostBox &src, int to, const HostBox &dst,
                                      std::int64_t lo, std::int64_t hi, bool add) override;
    HostBox box_in(int buffer, const ZRange &box) const override;
    void move_here(int step, const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi, bool add) override;
    Expected<HostBox, std::string> staging(int step, DType dtype, std::int64_t elements) override;
    // The end of a step that made hops (the mpi backend waits for its sends there).
    virtual Expected<std::monostate, std::string> finish_hops(int step) {
        (void)step;
        return std::monostate{};
    }
    // Kernel threads for a plan of `devices` devices of which `local_devices` are here.
    int threads_for(int local_devices) const;
    // The threads each kernel of the prepared plan runs on.
    int kernel_threads() const { return threads_; }
    static int machine_cores();

    const plan::Plan *plan_ = nullptr;
    CpuBackendOptions options_;

    HostBox box_of(const plan::Region &r) const { return box_in(r.buffer, r.box); }
    std::vector<std::byte *> data_;                  // per buffer: its first byte (null: not local)
    std::vector<std::vector<std::byte>> resident_;   // per buffer (resident ones held here)
    // Inputs and parameters: allocated when loaded (not zero-filled first), or
    // read in place (read_in_place); `loading_` marks those not yet placed.
    std::vector<std::unique_ptr<std::byte[]>> loaded_;
    std::vector<char> loading_;
    // Per buffer: the only buffer of its tensor, and written by no step (read_in_place).
    std::vector<char> readable_in_place_;

private:
    struct PreparedKernel;
    struct FreeDeleter {
        void operator()(std::byte *p) const;
    };
    struct Arena {
        std::unique_ptr<std::byte, FreeDeleter> memory;
        std::size_t size = 0;
        std::byte *get() const { return memory.get(); }
    };
    // Arenas of earlier launches in this process, reused without page faults.
    static std::vector<Arena> &kept_arenas();
    static Arena take_arena(std::size_t size);
    static void keep_arena(Arena arena);
    void return_arenas();

    Expected<std::monostate, std::string> allocate(const plan::Plan &plan);
    Expected<std::monostate, std::string> make_kernels(const plan::Plan &plan);
    Expected<PreparedKernel, std::string> make_kernel(const plan::Plan &plan, const plan::Step &s) const;
    Expected<StepOutcome, std::string> transfer(int step);

    int threads_ = 1;
    std::vector<Arena> arenas_;  // per device (local ones)
    std::map<OpId, ResolvedPlanOp> ops_;
    std::vector<std::unique_ptr<PreparedKernel>> kernels_;  // per step (local kernel steps)
    std::mutex staging_mutex_;
    std::map<int, std::vector<std::vector<std::byte>>> staged_;  // per step: its messages in flight
};

}  // namespace tapestry::launch
