// The one chain finder's step, shared by the fusion pass (passes/fuse.cpp,
// Fuser::grow) and the CPU executor's epilogue folding
// (runtime/cpu/plan_epilogues.cpp): may the value an operation writes flow
// straight into the next operation of a chain, never stored? Only when it is
// not a graph output, has one producer and one consumer, and that consumer
// reads it exactly once. What else a link needs (an elementwise consumer, a
// kernel or backend that takes it, matching pieces) each caller asks itself.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace tapestry {

// Why a value ends a chain; `none` when it may continue it.
enum class ChainEnd {
    none,
    no_consumer,        // nothing reads it (or the tensor is unknown)
    several_consumers,  // more than one operation reads it
    graph_output,       // it is an output of the graph: it must be stored
    several_producers,  // more than one operation writes it
    not_read_once,      // its one consumer reads it several times
};

struct ChainLink {
    ChainEnd end = ChainEnd::none;
    std::vector<OpId> consumers;          // every operation that reads the value
    const Operation *consumer = nullptr;  // the one consumer, where there is exactly one
    std::string port;                     // the port it reads the value through (the last, if several)
    int uses = 0;                         // how many of the consumer's selections read the value
};

// The link from `value` (a tensor an operation writes) to its consumer. The
// checks run in the order of ChainEnd, so `end` names the first that fails;
// `consumer` is set whenever there is exactly one, whatever `end` says.
ChainLink next_chain_link(const Graph &g, const TensorId &value);

}  // namespace tapestry
