// Numeric proof of equivalence: sharded executor run vs the double-precision
// oracle and vs the unsharded executor run, output by output.
#include "verify/verify.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ops/evaluate.h"

namespace tapestry::verify {
namespace {

using cpu::CpuOptions;
using cpu::Program;
using cpu::RunResult;

// Denominator floor of the relative error, so that an exact zero in the oracle
// gives a large but finite relative error instead of a division by zero.
constexpr double kTiny = 1e-30;

// References smaller than atol are judged by their absolute error: measuring
// them relatively would report f32's 0 against the oracle's 1e-20 as a relative
// error of 1, which says nothing about the result.
double relative_floor(double atol) {
    return std::max(atol, kTiny);
}

std::string quoted(const std::string &s) {
    return "'" + s + "'";
}

}  // namespace

const char *to_string(VerifyPhase phase) {
    switch (phase) {
        case VerifyPhase::unsharded_run: return "unsharded run";
        case VerifyPhase::sharded_run: return "sharded run";
        case VerifyPhase::oracle: return "oracle";
    }
    return "?";
}

namespace {

bool has_shards(const Graph &g) {
    return std::any_of(g.operations().begin(), g.operations().end(),
                       [](const OpPtr &op) { return !op->shards.empty(); });
}

Expected<RunResult, std::string> run_program(const Graph &g, const OpLibrary &lib,
                                             const std::map<TensorId, TensorData> &inputs, const VerifyOptions &options,
                                             bool run_shards) {
    CpuOptions cpu;
    cpu.threads = options.threads;
    cpu.run_shards = run_shards;
    auto program = Program::compile(g, lib, cpu);
    if (!program) return unexpected(program.error());
    auto result = (*program)->run(inputs, options.control);
    if (!result) return unexpected(result.error());
    return std::move(result).value();
}

// The output of `run` for tensor `t`, checked against the tensor's shape.
Expected<const TensorData *, std::string> output_of(const RunResult &run, const Tensor &t, const char *which) {
    auto it = run.outputs.find(t.id);
    if (it == run.outputs.end())
        return unexpected(std::string("the ") + which + " run returned no value for output " + quoted(t.id.value));
    if (it->second.shape != t.range.shape())
        return unexpected(std::string("the ") + which + " run returned output " + quoted(t.id.value) + " with shape " +
                          it->second.shape.to_string() + ", but the tensor's shape is " + t.range.shape().to_string());
    return &it->second;
}

std::vector<double> as_doubles(const TensorData &t) {
    std::vector<double> out(static_cast<size_t>(t.element_count()));
    for (std::int64_t i = 0; i < t.element_count(); ++i) out[static_cast<size_t>(i)] = t.get(i);
    return out;
}

}  // namespace

Expected<std::map<TensorId, RefArray>, std::string> oracle_inputs(const Graph &g,
                                                                  const std::map<TensorId, TensorData> &inputs) {
    std::map<TensorId, RefArray> out;
    for (const TensorPtr &t : g.tensors()) {
        if (!g.producers(t->id).empty()) continue;
        const TensorData *data = nullptr;
        if (auto it = inputs.find(t->id); it != inputs.end())
            data = &it->second;
        else if (t->value)
            data = t->value.get();
        if (!data)
            return unexpected("tensor " + quoted(t->id.value) +
                              " has no value: it is not among the inputs, has no data, and no operation writes it");
        if (data->shape != t->range.shape())
            return unexpected("the value of tensor " + quoted(t->id.value) + " has shape " + data->shape.to_string() +
                              ", but the tensor's shape is " + t->range.shape().to_string());
        RefArray a(t->range);
        for (std::int64_t i = 0; i < data->element_count(); ++i) a.data[static_cast<size_t>(i)] = data->get(i);
        out.emplace(t->id, std::move(a));
    }
    return out;
}

double output_scale(std::span<const double> values) {
    double scale = 1.0;
    for (double v : values)
        if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
    return scale;
}

Tolerance dtype_tolerance_floor(DType dtype) {
    switch (dtype) {
        case DType::bf16: return {0.015625, 0.015625};       // 2^-6
        case DType::f16: return {0.001953125, 0.001953125};  // 2^-9
        default: return {};
    }
}

namespace {

bool reduced(DType d) { return d == DType::bf16 || d == DType::f16; }

// reduced_roundings, remembering each tensor's count.
int roundings_to(const Graph &g, const TensorId &id, std::map<TensorId, int> &memo) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    memo[id] = 0;  // a graph is acyclic; this only guards a malformed one
    int deepest = 0;
    const std::vector<OpId> producers = g.producers(id);
    for (const OpId &p : producers)
        if (const Operation *op = g.find_op(p))
            for (const PortBinding &in : op->inputs)
                for (const TensorSelection &sel : in.selections) deepest = std::max(deepest, roundings_to(g, sel.tensor, memo));
    const Tensor *t = g.find_tensor(id);
    const int here = deepest + (t != nullptr && reduced(t->dtype) && !producers.empty() ? 1 : 0);
    memo[id] = here;
    return here;
}

}  // namespace

int reduced_roundings(const Graph &g, const TensorId &id) {
    std::map<TensorId, int> memo;
    return roundings_to(g, id, memo);
}

Tolerance output_tolerance_floor(const Graph &g, const Tensor &t) {
    Tolerance floor = dtype_tolerance_floor(t.dtype);
    if (reduced(t.dtype)) floor.atol *= std::max(1.0, reduced_roundings(g, t.id) / 4.0);
    return floor;
}

bool VerifyReport::pass() const {
    return std::all_of(comparisons.begin(), comparisons.end(), [](const OutputComparison &c) { return c.pass; });
}

OutputComparison compare_values(const TensorData &actual, std::span<const double> expected, double atol, double rtol) {
    TAPESTRY_CHECK(static_cast<std::int64_t>(expected.size()) == actual.element_count(),
                   "compare_values: element counts differ");
    OutputComparison c;
    c.pass = true;
    c.atol = atol;
    c.rtol = rtol;
    // The worst element: the failing one with the largest error; while none fails,
    // the one closest to its tolerance (largest error / tolerance).
    double worst_ratio = -1;
    double worst_failing_error = -1;
    const std::int64_t n = actual.element_count();
    for (std::int64_t i = 0; i < n; ++i) {
        const double a = actual.get(i);
        const double b = expected[static_cast<size_t>(i)];
        const double tolerance = atol + rtol * std::fabs(b);
        double err = 0;
        double rel = 0;
        bool ok = true;
        if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
            // NaN equals NaN (an oracle's NaN row, e.g. a fully masked query); equal infinities agree.
            ok = (std::isnan(a) && std::isnan(b)) || a == b;
            err = rel = ok ? 0.0 : std::numeric_limits<double>::infinity();
        } else {
            err = std::fabs(a - b);
            rel = err / std::max(std::fabs(b), relative_floor(atol));
            ok = err <= tolerance;
        }
        if (!ok) {
            if (err > worst_failing_error) {
                worst_failing_error = err;
                c.worst_index = i;
            }
        } else if (worst_failing_error < 0) {
            const double ratio = tolerance > 0 ? err / tolerance : 0.0;
            if (ratio > worst_ratio) {
                worst_ratio = ratio;
                c.worst_index = i;
            }
        }
        c.max_abs_error = std::max(c.max_abs_error, err);
        c.max_rel_error = std::max(c.max_rel_error, rel);
        c.pass = c.pass && ok;
    }
    return c;
}

OutputComparison compare_values(const TensorData &actual, const TensorData &expected, double atol, double rtol) {
    TAPESTRY_CHECK(actual.element_count() == expected.element_count(), "compare_values: element counts differ");
    return compare_values(actual, as_doubles(expected), atol, rtol);
}

Expected<VerifyReport, std::string> check_equivalence(const Graph &g, const OpLibrary &lib,
                                                      const std::map<TensorId, TensorData> &inputs,
                                                      const VerifyOptions &options) {
    std::vector<const Tensor *> outputs;
    for (const TensorPtr &t : g.tensors())
        if (t->role == TensorRole::output) outputs.push_back(t.get());
    if (outputs.empty()) return unexpected(std::string("the graph has no tensor with role output to compare"));
    if (!(options.atol >= 0) || !(options.rtol >= 0))
        return unexpected(std::string("the tolerances must not be negative"));

    VerifyReport report;
    report.sharded = has_shards(g);

    // Executor runs first: they fail fast on a graph without kernels, before the
    // (slow) oracle starts.
    auto enter = [&](VerifyPhase phase) {
        if (options.phase) options.phase(phase);
    };
    enter(VerifyPhase::unsharded_run);
    auto unsharded = run_program(g, lib, inputs, options, false);
    if (!unsharded) return unexpected("unsharded run: " + unsharded.error());
    std::optional<RunResult> sharded;
    if (report.sharded) {
        enter(VerifyPhase::sharded_run);
        auto r = run_program(g, lib, inputs, options, true);
        if (!r) return unexpected("sharded run: " + r.error());
        sharded = std::move(r).value();
    }
    if (options.control.cancelled && options.control.cancelled()) return unexpected(std::string("cancelled"));

    // The meaning of the program: the graph itself or, for a stage, its original.
    const Graph &meaning = options.original ? *options.original : g;
    const std::string oracle_name = options.original ? "original" : "oracle";
    if (options.original)
        for (const TensorPtr &t : meaning.tensors()) {
            const Tensor *mine = g.find_tensor(t->id);
            if (t->role == TensorRole::output && (!mine || mine->role != TensorRole::output))
                return unexpected("output " + quoted(t->id.value) + " of the original is not an output of the stage");
            if (mine && (t->role == TensorRole::output || meaning.producers(t->id).empty()) &&
                mine->range.shape() != t->range.shape())
                return unexpected("tensor " + quoted(t->id.value) + " has shape " + mine->range.shape().to_string() +
                                  " in the stage but " + t->range.shape().to_string() +
                                  " in the original: is it the stage of another project?");
        }
    auto ref_inputs = oracle_inputs(meaning, inputs);
    if (!ref_inputs) return unexpected(oracle_name + ": " + ref_inputs.error());
    enter(VerifyPhase::oracle);
    EvaluationOptions eval;
    eval.run_shards = false;  // the oracle computes the unsharded graph: the meaning of the program
    eval.cancelled = options.control.cancelled;
    if (options.control.progress)
        eval.progress = [&progress = options.control.progress](std::int64_t done, std::int64_t total) {
            const auto scaled = total > 0 ? static_cast<int>(static_cast<double>(done) / static_cast<double>(total) *
                                                             kOracleProgressTotal)
                                          : kOracleProgressTotal;
            progress(scaled, kOracleProgressTotal);
        };
    auto oracle = evaluate_reference(meaning, *ref_inputs, lib, eval);
    if (!oracle) return unexpected(oracle.error() == "cancelled" ? oracle.error() : oracle_name + ": " + oracle.error());

    const RunResult &subject = sharded ? *sharded : *unsharded;
    const char *subject_name = sharded ? "sharded" : "unsharded";
    report.notices = subject.notices;
    for (const Tensor *t : outputs) {
        auto actual = output_of(subject, *t, subject_name);
        if (!actual) return unexpected(actual.error());
        auto ref = oracle->find(t->id);
        if (ref == oracle->end() || ref->second.data.size() != static_cast<size_t>(t->range.size()))
            return unexpected("the " + oracle_name + " oracle computed no value for output " + quoted(t->id.value));
        const Tolerance floor = options.dtype_floor ? dtype_tolerance_floor(t->dtype) : Tolerance{};
        const double atol = std::max(options.atol, floor.atol), rtol = std::max(options.rtol, floor.rtol);
        const double scale = options.scale_atol ? output_scale(ref->second.data) : 1.0;
        OutputComparison vs_oracle = compare_values(**actual, ref->second.data, atol * scale, rtol);
        vs_oracle.tensor = t->id.value;
        vs_oracle.against = oracle_name;
        report.comparisons.push_back(std::move(vs_oracle));
        if (sharded) {
            auto whole = output_of(*unsharded, *t, "unsharded");
            if (!whole) return unexpected(whole.error());
            const std::vector<double> reference = as_doubles(**whole);
            const double whole_scale = options.scale_atol ? output_scale(reference) : 1.0;
            OutputComparison vs_whole = compare_values(**actual, reference, atol * whole_scale, rtol);
            vs_whole.tensor = t->id.value;
            vs_whole.against = "unsharded";
            report.comparisons.push_back(std::move(vs_whole));
        }
    }
    return report;
}

}  // namespace tapestry::verify
