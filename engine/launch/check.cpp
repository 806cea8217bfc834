// The launch's outputs against the reference run and the oracle (launch/check.h).
#include "launch/check.h"

#include <algorithm>
#include <cstdio>

#include "launch/launch.h"
#include "ops/evaluate.h"
#include "ops/library.h"
#include "plan/simulate.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/memory_budget.h"

namespace tapestry::launch {
namespace {

std::vector<double> as_doubles(const TensorData &t) {
    std::vector<double> out(static_cast<size_t>(t.element_count()));
    for (std::int64_t i = 0; i < t.element_count(); ++i) out[static_cast<size_t>(i)] = t.get(i);
    return out;
}

verify::OutputComparison compare(const Graph &g, const Tensor &t, const TensorData &actual,
                                 const std::vector<double> &expected, const char *against, const CheckOptions &options) {
    const verify::Tolerance floor = verify::output_tolerance_floor(g, t);
    const double atol = std::max(options.atol, floor.atol), rtol = std::max(options.rtol, floor.rtol);
    verify::OutputComparison c = verify::compare_values(actual, expected, atol * verify::output_scale(expected), rtol);
    c.tensor = t.id.value;
    c.against = against;
    return c;
}

}  // namespace

bool LaunchCheck::pass() const {
    return !comparisons.empty() &&
           std::all_of(comparisons.begin(), comparisons.end(), [](const verify::OutputComparison &c) { return c.pass; });
}

std::string LaunchCheck::summary() const {
    std::string out;
    for (const verify::OutputComparison &c : comparisons) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s vs %s: max |error| %.2g (tolerance %.2g + %.2g·|ref|)", c.tensor.c_str(),
                      c.against.c_str(), c.max_abs_error, c.atol, c.rtol);
        out += (out.empty() ? "" : "; ") + std::string(c.pass ? "PASS " : "FAIL ") + buf;
    }
    return out;
}

Expected<std::monostate, std::string> check_launchable(const plan::Plan &plan, const Backend &backend, bool oracle) {
    if (auto fits = check_fits(plan, backend, plan::simulate(plan)); !fits) return fits;
    return cpu::check_memory(plan.graph, oracle);
}

Expected<LaunchCheck, std::string> check_outputs(const plan::Plan &plan, const std::map<TensorId, TensorData> &inputs,
                                                 const std::map<TensorId, TensorData> &outputs,
                                                 const CheckOptions &options) {
    const OpLibrary &lib = OpLibrary::standard();
    cpu::CpuOptions cpu_options;
    cpu_options.threads = options.threads;
    cpu_options.run_shards = false;  // the graph whole: the plan's meaning, computed another way
    auto program = cpu::Program::compile(plan.graph, lib, cpu_options);
    if (!program) return unexpected("reference run: " + program.error());
    auto reference = (*program)->run(inputs);
    if (!reference) return unexpected("reference run: " + reference.error());

    std::map<TensorId, RefArray> oracle;
    if (options.oracle) {
        auto ref_inputs = verify::oracle_inputs(plan.graph, inputs);
        if (!ref_inputs) return unexpected("oracle: " + ref_inputs.error());
        EvaluationOptions eval;
        eval.run_shards = false;
        auto values = evaluate_reference(plan.graph, *ref_inputs, lib, eval);
        if (!values) return unexpected("oracle: " + values.error());
        oracle = std::move(values).value();
    }

    LaunchCheck check;
    for (const TensorPtr &t : plan.graph.tensors()) {
        if (t->role != TensorRole::output) continue;
        auto mine = outputs.find(t->id);
        if (mine == outputs.end()) return unexpected("the launch returned no value for output '" + t->id.value + "'");
        auto whole = reference->outputs.find(t->id);
        if (whole == reference->outputs.end() || whole->second.element_count() != mine->second.element_count())
            return unexpected("the reference run returned no value for output '" + t->id.value + "'");
        check.comparisons.push_back(compare(plan.graph, *t, mine->second, as_doubles(whole->second), "unsharded", options));
        if (options.oracle) {
            auto ref = oracle.find(t->id);
            if (ref == oracle.end() || ref->second.data.size() != static_cast<size_t>(mine->second.element_count()))
                return unexpected("the oracle computed no value for output '" + t->id.value + "'");
            check.comparisons.push_back(compare(plan.graph, *t, mine->second, ref->second.data, "oracle", options));
        }
    }
    if (check.comparisons.empty()) return unexpected(std::string("the plan's graph has no output to compare"));
    return check;
}

}  // namespace tapestry::launch
