#include "graph/value_chain.h"

namespace tapestry {

ChainLink next_chain_link(const Graph &g, const TensorId &value) {
    ChainLink link;
    const Tensor *t = g.find_tensor(value);
    if (t) link.consumers = g.consumers(value);
    if (link.consumers.empty()) {
        link.end = ChainEnd::no_consumer;
        return link;
    }
    if (link.consumers.size() > 1) {
        link.end = ChainEnd::several_consumers;
        return link;
    }
    link.consumer = g.find_op(link.consumers[0]);
    for (const PortBinding &b : link.consumer->inputs)
        for (const TensorSelection &s : b.selections)
            if (s.tensor == value) {
                ++link.uses;
                link.port = b.name;
            }
    if (t->role == TensorRole::output)
        link.end = ChainEnd::graph_output;
    else if (g.producers(value).size() != 1)
        link.end = ChainEnd::several_producers;
    else if (link.uses != 1)
        link.end = ChainEnd::not_read_once;
    return link;
}

}  // namespace tapestry
