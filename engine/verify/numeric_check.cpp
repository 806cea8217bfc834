// The certificates' numeric check (see numeric_check.h).
#include "verify/numeric_check.h"

#include <cstdio>
#include <map>

#include "io/random_inputs.h"
#include "ops/evaluate.h"
#include "runtime/cpu/executor.h"
#include "verify/verify.h"

namespace tapestry::verify {
namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2e", v);
    return buf;
}

// The inputs both graphs read: the original's random inputs, and the stage's for
// tensors only the stage has.
std::map<TensorId, TensorData> shared_inputs(const Graph &original, const Graph &stage, std::uint64_t seed) {
    auto inputs = make_random_inputs(original, seed);
    for (auto &[id, data] : make_random_inputs(stage, seed)) inputs.try_emplace(id, std::move(data));
    return inputs;
}

Expected<cpu::RunResult, std::string> run(const Graph &g, const char *which, const OpLibrary &lib,
                                          const std::map<TensorId, TensorData> &inputs, int threads) {
    cpu::CpuOptions options;
    options.threads = threads;
    options.run_shards = true;
    auto program = cpu::Program::compile(g, lib, options);
    if (!program) return unexpected(std::string(which) + " does not compile: " + program.error());
    auto result = (*program)->run(inputs);
    if (!result) return unexpected(std::string(which) + " does not run: " + result.error());
    return std::move(result).value();
}

// Compares the stage's output `id` with a reference; a failure is a finding.
// Returns the summary line of a pass.
std::string compare(CertificateCheck &c, const TensorId &id, const TensorData &stage_value,
                    std::span<const double> reference, DType dtype, const char *against,
                    const NumericCheckOptions &o) {
    const Tolerance floor = dtype_tolerance_floor(dtype);
    const double atol = std::max(o.atol, floor.atol) * output_scale(reference);
    const OutputComparison cmp = compare_values(stage_value, reference, atol, std::max(o.rtol, floor.rtol));
    if (!cmp.pass)
        c.fail("output '" + id.value + "' differs from " + against + ": max abs error " + number(cmp.max_abs_error) +
                   " (tolerance " + number(cmp.atol) + " + " + number(cmp.rtol) + "·|x|), max rel error " +
                   number(cmp.max_rel_error) + ", worst at flat index " + std::to_string(cmp.worst_index),
               id.value);
    return id.value + " vs " + against + ": max abs error " + number(cmp.max_abs_error);
}

CertificateCheck check(const Graph &original, const Graph &stage, const NumericCheckOptions &o) {
    const OpLibrary &lib = o.library ? *o.library : OpLibrary::standard();
    CertificateCheck c{"numeric", true, "", {}, {}};
    const auto inputs = shared_inputs(original, stage, o.seed);
    auto want = run(original, "the original", lib, inputs, o.threads);
    if (!want) {
        c.fail(want.error(), "");
        return c;
    }
    auto got = run(stage, "the stage", lib, inputs, o.threads);
    if (!got) {
        c.fail(got.error(), "");
        return c;
    }
    std::map<TensorId, RefArray> oracle;
    if (o.oracle) {
        auto ref_inputs = oracle_inputs(original, inputs);
        EvaluationOptions eval;
        eval.run_shards = false;  // the meaning of the program
        auto evaluated = ref_inputs ? evaluate_reference(original, *ref_inputs, lib, eval)
                                    : Expected<std::map<TensorId, RefArray>, std::string>(unexpected(ref_inputs.error()));
        if (!evaluated) {
            c.fail("the oracle cannot evaluate the original: " + evaluated.error(), "");
            return c;
        }
        oracle = std::move(evaluated).value();
    }
    std::string summary;
    for (const auto &[id, expected] : want->outputs) {
        auto it = got->outputs.find(id);
        if (it == got->outputs.end()) {
            c.fail("output '" + id.value + "' of the original is not an output of the stage", id.value);
            continue;
        }
        if (it->second.element_count() != expected.element_count()) {
            c.fail("output '" + id.value + "' has shape " + it->second.shape.to_string() + " in the stage but " +
                       expected.shape.to_string() + " in the original",
                   id.value);
            continue;
        }
        std::vector<double> run_values(static_cast<size_t>(expected.element_count()));
        for (std::int64_t i = 0; i < expected.element_count(); ++i) run_values[static_cast<size_t>(i)] = expected.get(i);
        summary += (summary.empty() ? "" : "; ") +
                   compare(c, id, it->second, run_values, expected.dtype, "the original's run", o);
        if (auto ref = oracle.find(id); ref != oracle.end())
            summary += ", " + compare(c, id, it->second, ref->second.data, expected.dtype, "the oracle", o);
    }
    if (want->outputs.empty()) c.fail("the original has no output tensor to compare", "");
    if (c.pass) c.message = "seed " + std::to_string(o.seed) + ": " + summary;
    return c;
}

}  // namespace

NumericCheck numeric_check(NumericCheckOptions options) {
    return [options](const Graph &original, const Graph &stage) { return check(original, stage, options); };
}

}  // namespace tapestry::verify
