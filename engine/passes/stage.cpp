// Stages and the pipeline; the stage text form documented in docs/passes.md.
#include "passes/stage.h"

#include "graph/resolve.h"
#include "graph/validate.h"
#include "ops/library.h"

namespace tapestry {

Stage original_stage(const Graph &g) {
    Stage s;
    s.pass = "original";
    s.input = g;
    s.graph = g;
    s.summary = "the input graph: " + std::to_string(g.tensors().size()) + " tensors, " +
                std::to_string(g.operations().size()) + " operations";
    return s;
}

Pipeline &Pipeline::add(std::string name, PassFunction pass) {
    passes_.push_back(Step{std::move(name), std::move(pass)});
    return *this;
}

Expected<std::vector<Stage>, std::string> Pipeline::run(const Graph &original,
                                                        const CertifyOptions &certify_options) const {
    // The passes rewrite a valid graph (the Issues dock, `tapestry validate`):
    // an invalid one is refused with its first error, not rewritten into stages
    // whose certificates fail.
    if (auto valid = require_valid(original, OpLibrary::standard()); !valid) return unexpected(valid.error());
    std::vector<Stage> stages;
    stages.push_back(original_stage(original));
    stages.back().certificate = certify(original, original, certify_options);
    for (size_t k = 0; k < passes_.size(); ++k) {
        auto stage = passes_[k].run(stages.back().graph);
        if (!stage) return unexpected("pass " + std::to_string(k + 1) + " (" + passes_[k].name + "): " + stage.error());
        Stage s = std::move(stage).value();
        if (s.pass.empty()) s.pass = passes_[k].name;
        s.certificate = certify(original, s.graph, certify_options);
        stages.push_back(std::move(s));
    }
    return stages;
}

std::string range_text(const ZRange &r) {
    if (r.rank() == 0) return "[]";
    std::string out;
    for (int d = 0; d < r.rank(); ++d) {
        if (d) out += "x";
        out += "[" + std::to_string(r.start()[d]) + "," + std::to_string(r.end()[d]) + ")";
    }
    return out;
}

namespace {

std::string tensor_line(const Tensor &t) {
    return "tensor " + t.id.value + " " + std::string(dtype_name(t.dtype)) + " " + range_text(t.range) + " " +
           std::string(role_name(t.role));
}

// The op's index space: stated, or derived in `g` (the graph the op lives in).
std::string index_space_text(const Graph &g, const Operation &op) {
    if (op.index_space) return range_text(*op.index_space);
    auto d = resolve(g, op, OpLibrary::standard());
    return d ? range_text(d->signature.index_space) : "(index space unknown: " + d.error().message + ")";
}

std::string op_line(const Graph &g, const Operation &op) {
    std::string out = "op " + op.id.value + " " + op.kind + " " + index_space_text(g, op);
    if (op.shards.empty()) return out + " unsharded";
    out += " shards " + std::to_string(op.shards.size()) + ":";
    for (size_t k = 0; k < op.shards.size(); ++k) {
        const Shard &s = op.shards[k];
        out += (k ? ", " : " ") + s.id.value + " " + range_text(s.index);
        if (!s.device.empty()) out += "@" + s.device;
    }
    return out;
}

}  // namespace

std::string stage_text(const Stage &stage, int number) {
    std::string out = "stage " + std::to_string(number) + ": " + stage.pass + "\n";
    out += "options: " + (stage.options.empty() ? std::string("(none)") : stage.options) + "\n";
    out += "summary: " + stage.summary + "\n";
    const GraphDelta::Summary sum = stage.diff.summary();
    out += "diff: " + std::to_string(sum.added.size()) + " added, " + std::to_string(sum.removed.size()) +
           " removed, " + std::to_string(sum.changed.size()) + " changed\n";
    auto line = [&](const char *what, const std::string &id, const Graph &g) {
        if (const Tensor *t = g.find_tensor(TensorId(id)))
            out += std::string(what) + " " + tensor_line(*t) + "\n";
        else if (const Operation *op = g.find_op(OpId(id)))
            out += std::string(what) + " " + op_line(g, *op) + "\n";
    };
    for (const std::string &id : sum.added) line("  added", id, stage.graph);
    for (const std::string &id : sum.removed) line("  removed", id, stage.input);
    for (const std::string &id : sum.changed) line("  changed", id, stage.graph);
    if (stage.certificate.certified()) out += stage.certificate.text();
    return out;
}

}  // namespace tapestry
