// The CPU executor: compiles a graph into prepared kernels (one per operation, or
// one per shard), plans buffers once from tensor lifetimes, and runs it — shards
// of independent operations in parallel on a thread pool, each worker a virtual
// device (DESIGN.md §7).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/tensor_data.h"
#include "ops/library.h"
#include "runtime/cpu/cpu_isa.h"

namespace tapestry::cpu {

struct CpuOptions {
    int threads = 2;               // worker threads (virtual devices)
    bool run_shards = true;        // run sharded operations shard by shard (else as whole ops)
    bool fuse_epilogues = true;    // fold single-use elementwise consumers into matmul/conv post-ops
    bool channels_last = true;     // store 4-D intermediates between conv2d/pool steps NHWC
    // Batch tiling: a chain of two or more unsharded, batch-parallel steps whose
    // parameters are small (convolution stacks, not big matmuls) runs tile by tile
    // of the batch, depth-first, one thread per tile, so that a tile's
    // intermediates stay in cache between steps instead of going through memory.
    // The target size of a tile's largest tensor, in bytes; 0 turns tiling off.
    std::size_t tile_bytes = 512 * 1024;
    // 3×3 stride-1 f32 convolutions with channel counts in multiples of 16 run as
    // Winograd F(4×4, 3×3) — about twice as fast, with rounding errors a few times
    // those of the direct algorithm (still ~1e-6 of the output's scale). Off: every
    // convolution is direct.
    bool winograd = true;
    // Reduced precision, opt-in: matmul and linear steps with 2-D f32 weights
    // compute in bf16 — their input and weights rounded to bf16 (8 bits of
    // mantissa), products accumulated, biased and written in f32 — on CPUs with
    // AVX512-BF16 or AMX, about twice the f32 rate; relative errors grow from ~1e-6
    // to ~1e-3. Constant weights are converted once, others on every run. Where the
    // CPU lacks native bf16 the steps stay f32.
    bool bf16_matmul = false;
};

struct RunControl {
    std::function<bool()> cancelled;                   // polled between steps
    std::function<void(int done, int total)> progress; // called from worker threads
};

struct StepTiming {
    std::string op;     // operation id
    std::string shard;  // shard id, or "" for a whole operation
    double milliseconds = 0;
    int tile = -1;      // batch tile (CpuOptions::tile_bytes) of `tiles`, or -1
    int tiles = 0;
    // How its kernel runs on this CPU where that is not the plain native kernel:
    // the dtype fallback (MadeKernel::fallback: "bf16 computed in f32 (on avx2
    // there is no native kernel: …)") and the kernel's notes (Kernel::notes(): an
    // option that could not take effect). Empty otherwise.
    std::string fallback;
    std::vector<std::string> notes;
    std::string note() const;  // fallback and notes joined by "; "
};

struct RunResult {
    std::map<TensorId, TensorData> outputs;  // every tensor with role output
    std::vector<StepTiming> steps;
    double wall_milliseconds = 0;
    std::size_t arena_bytes = 0;  // the one allocation holding intermediates
    std::vector<std::string> notices;  // Program::notices()
};

class Program {
public:
    // Fails with a message naming the operation when an op has no CPU kernel or
    // the graph does not validate.
    static Expected<std::unique_ptr<Program>, std::string> compile(const Graph &g, const OpLibrary &lib,
                                                                  const CpuOptions &options = {});
    virtual ~Program() = default;
    // `inputs` holds every input tensor (and parameters without Tensor::value).
    // Returns "cancelled" when RunControl::cancelled said so.
    virtual Expected<RunResult, std::string> run(const std::map<TensorId, TensorData> &inputs,
                                                 const RunControl &control = {}) = 0;
    virtual std::string describe() const = 0;  // steps, fusions, buffer plan — for `tapestry run -v`
    // Sentences a user should see with every run of this program: the steps whose
    // kernels fell back to f32 compute, and options that cannot take effect on this
    // CPU (bf16 matmuls without native bf16, Winograd below AVX-512), each naming
    // the instruction set oneDNN runs on and how many steps it concerns.
    virtual std::vector<std::string> notices() const = 0;
};

}  // namespace tapestry::cpu
