#include "graph/order.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

namespace tapestry {

DependencyOrder dependency_order(const Graph &g) {
    const auto &ops = g.operations();
    std::unordered_map<TensorId, std::vector<size_t>> writers;
    for (size_t i = 0; i < ops.size(); ++i)
        ops[i]->for_each_output_tensor([&](const TensorId &t) { writers[t].push_back(i); });

    std::vector<int> pending(ops.size(), 0);
    std::vector<std::vector<size_t>> dependents(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
        std::vector<size_t> deps;
        ops[i]->for_each_input_tensor([&](const TensorId &t) {
            auto it = writers.find(t);
            if (it == writers.end()) return;
            for (size_t p : it->second)
                if (p != i) deps.push_back(p);
        });
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        pending[i] = static_cast<int>(deps.size());
        for (size_t d : deps) dependents[d].push_back(i);
    }
    // A min-heap of ready positions keeps file order among ready operations.
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < ops.size(); ++i)
        if (pending[i] == 0) ready.push(i);
    DependencyOrder out;
    while (!ready.empty()) {
        const size_t i = ready.top();
        ready.pop();
        out.order.push_back(ops[i].get());
        for (size_t j : dependents[i])
            if (--pending[j] == 0) ready.push(j);
    }
    for (size_t i = 0; i < ops.size(); ++i)
        if (pending[i] > 0) out.cyclic.push_back(ops[i].get());
    return out;
}

}  // namespace tapestry
