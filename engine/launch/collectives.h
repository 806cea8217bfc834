// The plan's transfers and collectives as element moves (internal to
// engine/launch): a copy or send_recv moves its one read box into its one write
// box; ring and tree collectives are written as hops — element ranges of the
// row-major order moved, or added, from one participant's box into another's —
// in a fixed order that every process walks alike (so the ranks of an MPI launch
// meet hop by hop). Whatever memory holds the boxes implements BoxMemory: host
// memory and MPI messages (host_backend.h, mpi_backend.h), GPU memory on CUDA
// streams (cuda_backend.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/expected.h"
#include "launch/backend.h"
#include "launch/host_boxes.h"
#include "plan/plan.h"

namespace tapestry::launch {

class BoxMemory {
public:
    virtual ~BoxMemory() = default;
    // Box `box` (tensor coordinates) of buffer `buffer`: its data pointer null when
    // this process does not hold the buffer (shape and strides still right).
    virtual HostBox box_in(int buffer, const ZRange &box) const = 0;
    // Whether device d's memory is in this process.
    virtual bool local(int device) const = 0;
    // Elements [lo, hi) of `src` (device `from`) into `dst` (device `to`), added when
    // `add`. Returns the bytes it sent to another device (0 when it only received
    // or stayed on one device).
    virtual Expected<double, std::string> hop(int step, int from, const HostBox &src, int to, const HostBox &dst,
                                              std::int64_t lo, std::int64_t hi, bool add) = 0;
    // dst = src (or += with `add`) over elements [lo, hi), both boxes held here, as
    // part of step `step`.
    virtual void move_here(int step, const HostBox &src, const HostBox &dst, std::int64_t lo, std::int64_t hi,
                           bool add) = 0;
    // A dense box of `elements` elements of `dtype` that stays valid until step
    // `step` ends: a collective's message in flight (NCCL's staging buffer).
    virtual Expected<HostBox, std::string> staging(int step, DType dtype, std::int64_t elements) = 0;
};

// Runs a copy or send_recv step, or a collective step (all_reduce by ring or
// tree, reduce_scatter, all_gather, broadcast), through `memory`.
Expected<StepOutcome, std::string> run_transfer(const plan::Plan &plan, int step, BoxMemory &memory);
Expected<StepOutcome, std::string> run_collective(const plan::Plan &plan, int step, BoxMemory &memory);

}  // namespace tapestry::launch
