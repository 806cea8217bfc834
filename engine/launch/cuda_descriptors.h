// A compiled plan as CUDA launch descriptors (docs/gpu.md): which GPU holds each
// plan device, one CUDA stream per device stream, where every buffer lies (the
// device's one arena at the plan's offsets, its resident buffers in one
// allocation beside it), and the event graph: which earlier steps each step
// waits for on other streams, and which streams a step holds (a transfer both
// ends, a collective every participant) so those streams wait for its end.
// Plain data, no CUDA: made and unit-tested on machines without a GPU; the cuda
// backend (launch/cuda_backend.h) enqueues by it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"
#include "plan/plan.h"

namespace tapestry::launch {

struct CudaStream {
    int device = 0;  // plan device
    bool communication = false;
    int gpu = 0;     // the GPU (index among this process's) it is made on; -1: another rank's device
};

struct CudaStepLaunch {
    bool here = true;            // this process runs it (it holds a stream of a device this rank owns)
    int stream = 0;              // where it is enqueued: the first stream it holds here (launch.h step_streams)
    std::vector<int> waits;      // earlier steps on other streams whose end it waits for: per stream the latest only
    std::vector<int> holds;      // the other streams it holds: each waits for its end before going on
    bool records = false;        // a later step waits for its end, or a stream it holds does
};

struct CudaBufferPlace {
    int gpu = 0;                 // -1: another rank's (not allocated here)
    bool in_arena = false;       // in its device's arena, else in the device's resident block
    std::int64_t offset = 0;     // in the arena or the resident block
    std::int64_t bytes = 0;
};

struct CudaLaunchDescriptors {
    int gpus = 0;                          // GPUs used (by this process)
    bool virtual_devices = false;          // several plan devices share a GPU
    std::vector<int> device_gpu;           // per plan device (-1: another rank's)
    std::vector<std::int64_t> arena_bytes;     // per plan device: the arena allocation
    std::vector<std::int64_t> resident_bytes;  // per plan device: the resident block (aligned pieces)
    std::vector<CudaStream> streams;       // numbered as step_streams: 2·device (+1 communication)
    std::vector<CudaStepLaunch> steps;     // plan order
    std::vector<CudaBufferPlace> buffers;  // per plan buffer
};

// The process's part of a launch over several ranks (launch/rank_world.h): rank
// `rank` of `ranks` owns the devices rank_of_device gives it.
struct CudaRanks {
    int rank = 0, ranks = 1;
};

// The descriptors of `plan` on `gpus` GPUs (≥ 1) of this process: its k-th plan device
// (of those its rank owns: all, in one process) on GPU k when it has no more devices
// than GPUs, else every one on GPU 0 (virtual devices: a stream set each,
// device-to-device copies for transfers). Another rank's devices, buffers and
// streams get GPU -1; a step runs here when it holds a stream of this rank's, on the
// first such, holding only this rank's others and waiting only for steps run here.
// Fails naming the buffer or step that does not fit the plan's own layout.
Expected<CudaLaunchDescriptors, std::string> describe_cuda_launch(const plan::Plan &plan, int gpus,
                                                                  CudaRanks ranks = {});

// The descriptors as text, one line per device, buffer and step (tests' golden text,
// `tapestry-gpu-check --describe`):
//   device 0:0 gpu 0 arena 4096 resident 1024
//   buffer 3 gpu 0 arena +512 256
//   step 4 stream 1 (0:0 comm) waits 2 holds 3 records
// (another rank's: "gpu -", and "step 5 elsewhere")
std::string descriptors_text(const plan::Plan &plan, const CudaLaunchDescriptors &d);

}  // namespace tapestry::launch
