// Operations in dependency order: every operation after the operations writing
// the tensors it reads, and file order among operations that are ready together
// (stable results and messages). Linear in the size of the graph.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace tapestry {

struct DependencyOrder {
    std::vector<const Operation *> order;  // every operation that is not on or behind a cycle
    std::vector<const Operation *> cyclic; // the rest, in file order (empty for a valid graph)
};

DependencyOrder dependency_order(const Graph &g);

}  // namespace tapestry
