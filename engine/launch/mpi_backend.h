// The `mpi` backend (docs/launch.md): a plan launched across MPI ranks —
// `mpirun -np N tapestry launch PLAN --backend mpi` (or `srun` under Slurm). Each
// rank is a process that owns a contiguous block of the plan's devices (device d
// on rank ⌊d·N/D⌋) with their memory, and runs their streams; a transfer or a
// collective's hop between devices of two ranks is an MPI message carrying
// exactly the step's elements. Rank 0 gathers the measurements and the outputs.
// Every wait for another rank is bounded; a rank's fault is told to the others.
// Built only where CMake finds MPI (TAPESTRY_WITH_MPI); elsewhere
// make_mpi_backend says so.
#pragma once

#include <memory>
#include <string>

#include "common/expected.h"
#include "launch/backend.h"
#include "launch/cpu_backend.h"
#include "launch/rank_world.h"

namespace tapestry::launch {

// Whether this build has the mpi backend.
bool mpi_backend_built();

// Starts MPI in this process (once; MPI_Init_thread) and returns the backend of
// this rank. `options` apply per rank (max_devices: devices per rank).
Expected<std::unique_ptr<Backend>, std::string> make_mpi_backend(const CpuBackendOptions &options = {});

// MPI started in this process and its ranks as a RankWorld (launch/rank_world.h):
// what the cuda backend takes to run as one rank of `mpirun -np N tapestry launch
// PLAN --backend cuda`.
Expected<std::shared_ptr<RankWorld>, std::string> make_mpi_world();

// Whether this process was started by mpirun or srun (their environment variables).
bool launched_by_mpi();

// Ends MPI in this process. After a clean run every rank calls it with
// `clean`; after a fault MPI_Finalize could wait for a dead rank for ever, so
// the process leaves without it.
void finish_mpi(bool clean);

}  // namespace tapestry::launch
