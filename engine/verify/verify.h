// Numeric proof of equivalence (issue 3), the verify layer (DESIGN.md §2: above
// the runtime and the passes): run a graph's sharded form on the CPU executor,
// its unsharded form, and the double-precision oracle (ops/evaluate.h) on the
// same inputs, and compare every output. The comparison primitives here are the
// ones the stage certificates' numeric check uses too (verify/numeric_check.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/tensor_data.h"
#include "ops/library.h"
#include "ops/reference.h"
#include "runtime/cpu/executor.h"

namespace tapestry::verify {

enum class VerifyPhase { unsharded_run, sharded_run, oracle };
const char *to_string(VerifyPhase phase);  // "unsharded run", "sharded run", "oracle"
constexpr int kOracleProgressTotal = 1000;

struct VerifyOptions {
    int threads = 2;
    double atol = 1e-4;  // pass when |a-b| <= atol + rtol·|oracle| for every element
    double rtol = 1e-3;
    // Measure atol in units of the output's scale, max(1, max |reference|): an
    // output whose values reach 400 (random weights, no normalisation) carries f32
    // rounding errors of ~1e-3 in elements that cancel to near zero, which say
    // nothing about equivalence. Off: atol is absolute.
    bool scale_atol = true;
    // A pass's stage is checked against the graph it came from: when set, the oracle
    // computes this graph (same input and parameter ids; its own values for
    // parameters the inputs do not give) and every output of it must be an output of
    // the verified graph ("against" is then "original"). Null: the graph's own oracle.
    const Graph *original = nullptr;
    // Raise atol and rtol, per output, to at least dtype_tolerance_floor(its dtype):
    // a bf16 output cannot be compared at f32's tolerance. The CLI turns this off
    // when the user gives --atol or --rtol.
    bool dtype_floor = true;
    // Cancel and progress of every phase. The phases run one after the other on the
    // calling thread: the unsharded run, the sharded run (when the graph has
    // shards), then the oracle. `phase` is called as each starts, before any of its
    // progress; progress counts executor steps in the runs and, in the oracle, its
    // work (ops/evaluate.h) scaled to 0..kOracleProgressTotal. A cancel is polled
    // between steps and before every oracle chunk; it returns the error "cancelled".
    cpu::RunControl control;
    std::function<void(VerifyPhase)> phase;
};

// The least tolerance a comparison of an output of `dtype` can ask for. A 16-bit
// float result is rounded to 8 (bf16) or 11 (f16) significant bits, so two
// correct computations of it (the oracle's double, a kernel's f32 rounded once;
// two kernels rounding in other places) may differ in its last bit or two: two
// units in the last place, 2^-6 for bf16 and 2^-9 for f16, as rtol and as atol
// (in units of the output's scale). {0, 0} for f32 and the integer dtypes.
struct Tolerance {
    double atol = 0;
    double rtol = 0;
};
Tolerance dtype_tolerance_floor(DType dtype);

// The roundings to a 16-bit float (bf16, f16) on the longest path from the graph's
// inputs to tensor `id`: one at each operation writing such a tensor.
int reduced_roundings(const Graph &g, const TensorId &id);

// dtype_tolerance_floor of output `t` of `g`, its atol grown with the path: two
// executions of one graph in 16 bits (a plan's kernels, the reference's) round
// differently at each operation on the way — another order of a sum, another
// fusion — and drift apart with the path's length. The floor covers four roundings
// (each at most half a unit in the last place: 2^-8 of the scale for bf16); each
// further one adds a quarter. (On an H200 the fused bf16 GPT-2 block at batch 8,
// sequence 1024 — eight roundings, scale 1,728 — was 38 from the CPU's reference
// against a plain floor of 27, and the GPU's and the CPU's outputs each 170 from
// the oracle.)
Tolerance output_tolerance_floor(const Graph &g, const Tensor &t);

struct OutputComparison {
    std::string tensor;
    std::string against;  // "oracle", "original" (VerifyOptions::original) or "unsharded"
    double max_abs_error = 0;
    double max_rel_error = 0;
    std::int64_t worst_index = -1;  // flat index of the worst element
    bool pass = false;
    double atol = 0;  // the absolute tolerance applied (atol × the output's scale with scale_atol)
    double rtol = 0;  // the relative tolerance applied
};

struct VerifyReport {
    std::vector<OutputComparison> comparisons;  // per output: sharded vs oracle, sharded vs unsharded
    bool sharded = false;                       // whether the graph had shards to run
    std::vector<std::string> notices;           // the compared run's Program::notices()
    bool pass() const;
};

// The comparison behind check_equivalence(), element by element: error |a-b|, relative error
// |a-b| / max(|b|, atol, 1e-30) (a reference below atol counts in units of atol),
// pass when |a-b| <= atol + rtol·|b| everywhere (b is the `expected` side; atol
// as given, unscaled). NaN equals NaN; a NaN on one side only fails. The worst index
// is the failing element with the largest error or, when all pass, the element
// closest to its tolerance. `tensor` and `against` are left empty. Requires equal
// element counts.
OutputComparison compare_values(const TensorData &actual, std::span<const double> expected, double atol, double rtol);
OutputComparison compare_values(const TensorData &actual, const TensorData &expected, double atol, double rtol);

// The oracle's inputs for `g`: every tensor no operation writes, from `inputs`
// or else from the tensor's own value, as a double array spanning its range.
// Errors name the tensor without a value or with a value of the wrong shape.
Expected<std::map<TensorId, RefArray>, std::string> oracle_inputs(const Graph &g,
                                                                  const std::map<TensorId, TensorData> &inputs);

// max(1, largest finite |value|): the unit of atol with VerifyOptions::scale_atol.
double output_scale(std::span<const double> values);

// `inputs`: every input tensor (see make_random_inputs in io/random_inputs.h).
Expected<VerifyReport, std::string> check_equivalence(const Graph &g, const OpLibrary &lib,
                                                      const std::map<TensorId, TensorData> &inputs,
                                                      const VerifyOptions &options = {});

}  // namespace tapestry::verify
