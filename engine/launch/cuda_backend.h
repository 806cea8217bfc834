// The `cuda` backend (docs/gpu.md, issue 18): a plan launched on this machine's
// NVIDIA GPUs. Each plan device gets one arena (a single cudaMalloc, the plan's
// offsets) and one block for its resident buffers, a CUDA stream per device stream
// and events for dependencies across streams (launch/cuda_descriptors.h); every
// step is timed by CUDA events around it. Kernels come from runtime/cuda
// (cuBLASLt, cuDNN, our own, NVRTC-compiled fused chains). A plan for more devices
// than GPUs runs on GPU 0 with a stream set per virtual device and
// device-to-device copies for its transfers and collectives. Between GPUs a
// transfer's or a collective's hops are NCCL messages (runtime/cuda/nccl.h).
// Built where CMake finds the CUDA toolkit (TAPESTRY_WITH_CUDA); elsewhere, and on
// machines without a driver or GPU, make_cuda_backend says why.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "launch/backend.h"

namespace tapestry::launch {

class RankWorld;  // launch/rank_world.h

// How a hop of a transfer or collective between two plan devices moves its elements.
enum class CudaTransport {
    automatic,  // NCCL between GPUs where this build has it, else peer copies; on one GPU, copies
    peer,       // copies through peer access (cudaMemcpy-like box moves), also between GPUs
    nccl,       // NCCL messages, also between virtual devices of one GPU (a one-rank communicator
                // sending to itself): every NCCL path of a plan on one lent GPU
};
std::string_view transport_name(CudaTransport t);  // "auto", "peer", "nccl"
std::optional<CudaTransport> transport_from_name(std::string_view name);

struct CudaBackendOptions {
    int max_devices = 64;            // plan devices it accepts (virtual devices beyond the GPUs)
    int gpus = 0;                    // GPUs to use (0: all it finds)
    std::int64_t device_memory = 0;  // bytes one plan device may hold (0: its GPU's free memory, shared)
    bool tf32 = false;               // f32 matrix products on TF32 tensor cores
    CudaTransport transport = CudaTransport::automatic;
    // Under mpirun (`tapestry launch PLAN --backend cuda` on every rank): the ranks
    // (make_mpi_world). This process is one rank owning a contiguous block of the plan's
    // devices (as the mpi backend) on its GPUs — the ranks of one machine split its
    // GPUs — and messages between ranks are NCCL's, bootstrapped over MPI; rank 0
    // gathers the measurements and outputs. Null: every device in this process.
    std::shared_ptr<RankWorld> world;
};

// Whether this build has the cuda backend.
bool cuda_backend_built();
// The NCCL library its transfers between GPUs use ("2.28.3"), or why there is none.
std::string cuda_nccl_status();

struct GpuInfo {
    int ordinal = 0;
    std::string name;            // "NVIDIA H200"
    std::int64_t memory = 0;     // total bytes
    std::int64_t free = 0;       // free bytes now
    int cc_major = 0, cc_minor = 0;
    int multiprocessors = 0;
    std::vector<int> peers;      // GPUs it can access directly (NVLink or PCIe peer access)
};

// The GPUs the CUDA runtime finds; an error says why there are none (no toolkit in
// this build, no driver: cudaGetDeviceCount's error, no device).
Expected<std::vector<GpuInfo>, std::string> cuda_gpus();

// Whether every GPU still works in this process: after a kernel fault (an illegal
// address, a trap) CUDA's context is lost until the process ends — the error says so.
Expected<std::monostate, std::string> cuda_devices_usable();

Expected<std::unique_ptr<Backend>, std::string> make_cuda_backend(const CudaBackendOptions &options = {});

// The cuda backend's own measurement of a whole plan: every step enqueued in plan
// order on its stream with its event waits and no host synchronisation between
// steps — how a plan runs in production — `repeats` times after `warmups`; the
// median of the runs' device times (the run's start to the last step's end, CUDA
// events) and each step's device time in the median run. The backend must have
// been prepared (launch_plan ran, or prepare and the uploads).
//
// How the GPU meets the host's submission:
//  - live: the GPU starts on the first step while the host enqueues the rest — what
//    one run of the plan costs, the first kernel's submission included (the time a
//    peer framework's one call is compared with);
//  - gated: every step is enqueued behind a gate (runtime/cuda/gate.h) that opens
//    once the host has enqueued the last, and the run starts when it opens: the
//    steps run back to back, and each step's time is its work on the GPU alone, with
//    no host submission in it — what the cost model predicts and calibration fits.
//    If the gate gave up before the host opened it, the run is an error that says so.
enum class Submission { live, gated };

struct EnqueuedRun {
    double seconds = 0;                 // median over the repeats
    std::vector<double> runs;           // every repeat's seconds
    std::vector<std::pair<double, double>> steps;  // per plan step: [start, end) in the median run
    std::vector<std::vector<std::pair<double, double>>> run_steps;  // the same, per repeat (as `runs`)
};
Expected<EnqueuedRun, std::string> run_enqueued(Backend &cuda_backend, int warmups, int repeats,
                                                Submission submission = Submission::live);

}  // namespace tapestry::launch
