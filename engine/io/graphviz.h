// Drawing graphs through the Graphviz library (DESIGN.md §10, BACKGROUND §5):
// DOT text, and SVG/PNG rendered by gvc. Layout for the studio canvas comes from
// the same place. Graphviz is not thread-safe: every call into it goes through
// one process-wide mutex held here.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/signature.h"

namespace tapestry {

struct DrawOptions {
    bool show_projections = false;  // IndexProjection tables as [A | b | window]
    bool show_shards = true;        // shards as notes inside their operation's cluster
    std::string rankdir = "TB";     // "TB" or "LR"
    // Ids of tensors, operations and shards drawn with the error colour's thick
    // border: those validation finds at fault, so a broken graph can be looked at.
    // A shard whose index does not fit its operation is marked in any case.
    std::set<std::string> marked;
};

// DOT text in the spirit of Tapestry's renderings: tensors as box3d with dtype,
// range and shape; operations as tabs with kind and ports; shards; projections.
std::string to_dot(const Graph &g, const SignatureSource &lib, const DrawOptions &options = {});

// Renders DOT through gvc with the `dot` engine. format: "svg", "png", "dot" (laid
// out DOT with positions). Error text when Graphviz fails.
Expected<std::string, std::string> render_dot(const std::string &dot, const std::string &format);

// Node geometry from a Graphviz layout, in points (1/72 inch), y growing downward
// (already flipped for screen use).
struct NodeBox {
    std::string id;  // TensorId / OpId value
    double x = 0, y = 0;           // centre
    double width = 0, height = 0;
};
struct EdgePath {
    std::string from, to;          // node ids
    std::vector<std::pair<double, double>> points;  // B-spline control points
};
struct Layout {
    double width = 0, height = 0;
    std::vector<NodeBox> nodes;
    std::vector<EdgePath> edges;
};

// Lays out the tensor/operation graph (one node per tensor and operation, an edge
// per selection) with `dot`. `cancelled` is polled between stages; a cancelled
// layout returns an error "cancelled". Safe to call from any thread.
Expected<Layout, std::string> layout_graph(const Graph &g, const std::function<bool()> &cancelled = {});

}  // namespace tapestry
