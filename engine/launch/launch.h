// Launching a compiled plan (docs/launch.md): the plan's own program — its
// devices, buffers, steps, copies and collectives — run on a backend
// (launch/backend.h), not the graph run another way. Each device's compute and
// communication streams are workers that take their steps in plan order; a step
// starts when its dependencies are done and every stream it holds has reached it
// (a transfer holds both ends, a collective every participant). Every wait is
// bounded: a launch ends, with a report naming the step, device and rank, however
// it fails. What ran is measured: each step's start and end, each device's
// memory, the bytes moved — beside the plan's predictions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/tensor_data.h"
#include "launch/backend.h"
#include "plan/plan.h"
#include "plan/simulate.h"

namespace tapestry::launch {

struct LaunchOptions {
    // The longest any worker waits — for a dependency, or for the other ends of a
    // transfer or collective — before the launch is failed naming what it waited for
    // (twice that for a host backend's admission behind an earlier step in plan
    // order, so that the earlier step's own wait names the cause).
    double wait_timeout_seconds = 120;
    std::function<bool()> cancelled;                    // polled while waiting and between steps
    std::function<void(int done, int total)> progress;  // called from worker threads
    // The rank this process is (MPI launches; 0 otherwise), for reports.
    int rank = 0;
    // Tests: fail step N as a kernel fault would ("injected fault"), -1: none.
    int fail_step = -1;
    // Tests: this rank fails its preparation ("injected fault"), -1: none.
    int fail_prepare_rank = -1;
};

struct DeviceMeasurement {
    std::string name;               // "node:index"
    std::int64_t arena_bytes = 0;   // allocated: the plan's arena
    std::int64_t resident_bytes = 0;
    // Resident bytes plus the most arena bytes in use at once, from the buffers'
    // lifetimes as they ran: a buffer is in use from the start of its first step to
    // the end of its last (measured times; plan::simulate's rule on predicted ones).
    std::int64_t peak_bytes = 0;
    std::int64_t predicted_peak_bytes = 0;  // plan::simulate's (a prediction)
    double busy_seconds = 0;                // its compute stream's steps, measured
    double moved_bytes = 0;                 // bytes it sent
};

// Where a launch failed.
struct LaunchFault {
    int step = -1;       // -1: before any step (preparation, inputs)
    int device = -1;     // plan device, -1: none in particular
    int rank = 0;
    std::string message; // the whole sentence, naming step, device and rank
};

struct LaunchResult {
    std::string backend;
    std::string hardware;  // Backend::describe(): what it ran on ("cuda: 1 × NVIDIA H200 (sm_90, 139.8 GiB)")
    std::string status;  // "ok", "failed", "cancelled"
    LaunchFault fault;   // when failed
    std::vector<MeasuredStep> steps;  // the steps that finished, in plan order
    std::vector<DeviceMeasurement> devices;
    double wall_seconds = 0;          // first step's start to last step's end
    double predicted_makespan = 0;    // plan::simulate's (a prediction)
    double moved_bytes = 0;
    // The wall clock (ISO 8601 UTC, milliseconds, as the session writes times)
    // when the steps began running and when the last one had ended.
    std::string started_at, finished_at;
    std::map<TensorId, TensorData> outputs;  // every graph output, assembled (status ok only)
    bool ok() const { return status == "ok"; }
};

// Checks the plan fits the backend before anything is allocated: its devices
// against the backend's count, each device's predicted peak against its capacity.
// The refusal names the device, its peak and the capacity. `predicted` is
// plan::simulate of the plan (the caller has it, and needs it after).
Expected<std::monostate, std::string> check_fits(const plan::Plan &plan, const Backend &backend,
                                                 const plan::Prediction &predicted);

// Launches `plan` on `backend`: check_fits, prepare, load every input and
// parameter (from `inputs`, else the tensor's own value) into the resident
// buffers that hold a box of it, run, read the outputs back. A refusal before
// anything ran is an error; a failure while running is a result with status
// "failed", its fault, and the steps measured before it.
Expected<LaunchResult, std::string> launch_plan(const plan::Plan &plan, Backend &backend,
                                                const std::map<TensorId, TensorData> &inputs,
                                                const LaunchOptions &options = {});

// The streams a step holds, numbered 2·device (+1 for the device's communication
// stream): a kernel or copy its device's compute stream; a send_recv the
// communication streams of both ends; a collective every participant's. The first
// is where it runs.
std::vector<int> step_streams(const plan::Step &s);

// Per device: resident bytes plus the most arena bytes in use at once when each
// step ran over [start, end) of `times` (one per plan step; a step that did not
// run has start < 0 and keeps no buffer alive).
std::vector<std::int64_t> device_peaks(const plan::Plan &plan, const std::vector<plan::StepTime> &times);

}  // namespace tapestry::launch
