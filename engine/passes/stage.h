// Stages and the pipeline (DESIGN.md §5): a pass turns a graph into a new one that
// shares its unchanged nodes, and records what it did as a Stage — its name,
// options, the rewriter's diff, a one-line summary and the certificate.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/delta.h"
#include "graph/graph.h"
#include "passes/certificate.h"

namespace tapestry {

struct Stage {
    std::string pass;     // "original", "shard", …
    std::string options;  // the pass's options as the user wrote them, e.g. "fc1:0=4 fc2:0=4"
    Graph input;          // the graph the pass ran on (for stage 0, the original itself)
    Graph graph;          // the result, sharing every node the pass did not change
    GraphDelta diff;      // the RecordingRewriter's log: input → graph
    std::string summary;  // one line a person reads
    Certificate certificate;
};

// The stage that starts every pipeline: the input graph, no diff.
Stage original_stage(const Graph &g);

// A pass as the pipeline runs it: a stage from a graph, or a message saying why not.
using PassFunction = std::function<Expected<Stage, std::string>(const Graph &)>;

// Runs named passes in order; stage 0 is the input ("original"), stage k the
// result of pass k, each certified against the original.
class Pipeline {
public:
    Pipeline &add(std::string name, PassFunction pass);
    size_t size() const { return passes_.size(); }

    // Stops at the first pass that fails: "pass 2 (shard): <its message>".
    Expected<std::vector<Stage>, std::string> run(const Graph &original, const CertifyOptions &certify = {}) const;

private:
    struct Step {
        std::string name;
        PassFunction run;
    };
    std::vector<Step> passes_;
};

// The stable text form of a stage used by golden tests and `tapestry passes`
// (docs/passes.md): header lines, then one line per added/removed/changed node
// (operations with kind, index space and shards, e.g. "fc1/0 [0,128)x[0,4096)"),
// then the certificate when there is one.
std::string stage_text(const Stage &stage, int number);
// "[0,128)x[0,4096)"; "[]" for a 0-dim range.
std::string range_text(const ZRange &r);

}  // namespace tapestry
