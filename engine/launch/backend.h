// The backend interface of the plan executor (docs/launch.md): what a machine
// offers to run a compiled plan — memory for each plan device (one arena, the
// plan's offsets, and its resident buffers) and the four kinds of step. The
// launcher (launch/launch.h) decides when a step runs; a backend only runs it.
// The `cpu` backend (launch/cpu_backend.h) implements it today; the CUDA and MPI
// backends of later issues implement the same calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "common/expected.h"
#include "plan/plan.h"

namespace tapestry::launch {

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

    // Runs step `step` of the plan to completion on the calling thread. Steps the
    // plan lets run at once (no dependency path between them) may be run from
    // different threads at the same time. Errors name what failed; the launcher
    // adds the step and device.
    virtual Expected<StepOutcome, std::string> run_kernel(int step) = 0;
    virtual Expected<StepOutcome, std::string> run_copy(int step) = 0;
    virtual Expected<StepOutcome, std::string> run_send_recv(int step) = 0;
    virtual Expected<StepOutcome, std::string> run_collective(int step) = 0;
};

}  // namespace tapestry::launch
