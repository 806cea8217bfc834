// The backend interface of the plan executor (docs/launch.md): what a machine
// offers to run a compiled plan — memory for each plan device (one arena, the
// plan's offsets, and its resident buffers) and the four kinds of step. The
// launcher (launch/launch.h) decides when a step runs; a backend only runs it.
// The `cpu` backend (launch/cpu_backend.h) implements it today; the CUDA and MPI
// backends of later issues implement the same calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/expected.h"
#include "plan/plan.h"

namespace tapestry::launch {

// One step as it ran (seconds since the launch started) beside its prediction.
struct MeasuredStep {
    int step = 0;
    double start = 0, end = 0;
    double predicted = 0;  // the plan's Step::predicted (a prediction)
    double moved_bytes = 0;
    int rank = 0;          // the process that measured it
};

// What running one step did, besides its effect on the buffers.
struct StepOutcome {
    // Bytes that crossed between two devices' memories (a transfer, a collective's
    // messages); 0 for kernels and copies.
    double moved_bytes = 0;
};

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0;  // "cpu"
    // How many plan devices it can run at once.
    virtual int max_devices() const = 0;
    // Bytes one device of a plan of `devices` devices may hold (its arena and
    // resident buffers); 0 when unknown.
    virtual std::int64_t device_capacity(int devices) const = 0;
    // One line on what it runs on: "cpu: 2 cores (avx512_core), 23.1 GiB available".
    virtual std::string describe() const = 0;

    // Allocates every device's memory — one arena of Device::arena_bytes, buffers
    // at their plan offsets in it, resident buffers beside it — and prepares every
    // kernel step. Fails naming the device or the step; allocates nothing more
    // after a failure. The plan must outlive the backend's use of it.
    virtual Expected<std::monostate, std::string> prepare(const plan::Plan &plan) = 0;

    // A resident buffer's values (its region, dense row-major): inputs and
    // parameters are written before the plan runs, outputs read after it.
    virtual Expected<std::monostate, std::string> upload(int buffer, std::span<const std::byte> bytes) = 0;
    virtual Expected<std::monostate, std::string> download(int buffer, std::span<std::byte> bytes) const = 0;
    // A resident input or parameter buffer holding its whole tensor, offered where
    // its values lie (dense row-major), unchanged until the launch ends. A backend
    // whose devices address host memory may read them there instead of a copy, as
    // `tapestry run` does (true) — when no step writes the buffer and no other
    // device holds a box of the tensor, so no two devices share memory. Otherwise
    // false, and the launcher uploads.
    virtual bool read_in_place(int buffer, std::span<const std::byte> bytes) {
        (void)buffer;
        (void)bytes;
        return false;
    }
    // A resident buffer's memory, when the backend's devices address host memory
    // (the launcher then copies a box of an input straight into it); null otherwise.
    virtual std::byte *host_memory(int buffer) {
        (void)buffer;
        return nullptr;
    }

    // Runs step `step` of the plan to completion on the calling thread. Steps the
    // plan lets run at once (no dependency path between them) may be run from
    // different threads at the same time. Errors name what failed; the launcher
    // adds the step and device.
    virtual Expected<StepOutcome, std::string> run_kernel(int step) = 0;
    virtual Expected<StepOutcome, std::string> run_copy(int step) = 0;
    virtual Expected<StepOutcome, std::string> run_send_recv(int step) = 0;
    virtual Expected<StepOutcome, std::string> run_collective(int step) = 0;

    // ---- distributed backends (mpi: one process per rank). A backend in one
    // process keeps these defaults: rank 0 of 1, owning every device.
    virtual int rank() const { return 0; }
    virtual int ranks() const { return 1; }
    // Whether this process holds device d's memory and runs its streams.
    virtual bool owns(int device) const {
        (void)device;
        return true;
    }
    // Bounds the backend's own waits (for other ranks' messages) and gives it the
    // launcher's stop flag to poll while waiting.
    virtual void set_wait_limits(double timeout_seconds, std::function<bool()> stop) {
        (void)timeout_seconds;
        (void)stop;
    }
    // Every rank calls it once it has prepared the plan and loaded its inputs, with
    // how that went (`what`: "preparing the plan"): a distributed backend tells
    // every rank every rank's outcome (launch/rank_world.h agree_ranks), so a rank
    // that could not get ready fails them all at once, named, instead of leaving
    // them to wait out the wait limit at the start. One process: its own outcome.
    virtual Expected<std::monostate, std::string> agree(Expected<std::monostate, std::string> mine, const std::string &what) {
        (void)what;
        return mine;
    }
    // Every rank calls it before the first step: the ranks start together.
    virtual Expected<std::monostate, std::string> synchronize() { return std::monostate{}; }
    // A fault here, told to the other ranks; a fault another rank told (the
    // launcher polls it while it waits).
    virtual void announce_fault(const std::string &message) { (void)message; }
    virtual std::optional<std::string> remote_fault() { return std::nullopt; }
    // Every rank calls it after the run, whatever the outcome: rank 0 receives the
    // other ranks' measured steps (appended to `steps`) and the output buffers they
    // hold (download() then serves them); the others send theirs. Bounded by the
    // wait limit: a rank that does not answer is named in the error.
    virtual Expected<std::monostate, std::string> gather(std::vector<MeasuredStep> &steps) {
        (void)steps;
        return std::monostate{};
    }

    // How many of this process's steps may run at once after prepare(), 0: no
    // limit. A backend whose devices share the machine's cores (the cpu backend)
    // gives its cores over the threads one kernel runs on; the launcher then
    // admits steps in plan order into that many slots, so a kernel always has its
    // cores to itself and plan::simulate predicts the same schedule
    // (ClusterShape::concurrent_steps).
    virtual int concurrent_steps() const { return 0; }
    // Whether the launcher uses each device's memory in plan order: steps admitted
    // in plan order, and a step that begins an arena buffer's lifetime on a device
    // admitted only after every earlier step that ends one there has finished
    // (plan::memory_events). Then every device's measured peak is the plan order's,
    // which plan::simulate predicts for a plan of devices sharing a machine. The
    // host backends do; a GPU backend, whose streams overlap, does not.
    virtual bool orders_memory() const { return false; }

    // A backend that times steps on the device itself (the cuda backend: CUDA
    // events around each step) gives a finished step's [start, end) in seconds
    // since synchronize(); the launcher then reports these instead of its own
    // clock, which would count the host's waits for the device.
    virtual std::optional<std::pair<double, double>> device_time(int step) const {
        (void)step;
        return std::nullopt;
    }
};

}  // namespace tapestry::launch
