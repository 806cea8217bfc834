// Graph validation: every finding is an Issue naming node and JSON path
// (graph/issue.h). Checks: references, duplicate ids, ranks and dtypes, selections
// inside tensors, agreement with the op library, cycles, shard coverage decided
// exactly with ISL (gaps and overlaps, including ones whose sizes cancel), and
// injectivity of output projections.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/issue.h"
#include "graph/signature.h"

namespace tapestry {

struct ValidationOptions {
    // Shard-level checks (coverage, stated shard selections). Off for a quick pass.
    bool check_shards = true;
    // Exact injectivity of output projections through ISL (cheap fast path first).
    bool check_injectivity = true;
};

std::vector<Issue> validate(const Graph &g, const SignatureSource &library, const ValidationOptions &options = {});

// The refusal of a graph validation finds errors in, for what plans or searches
// it (a plan of an invalid graph fails its certificates, which would read as a
// bug of ours): "the graph is invalid: <first error>", then how many more there
// are. Warnings do not refuse.
Expected<std::monostate, std::string> require_valid(const Graph &g, const SignatureSource &library);

}  // namespace tapestry
