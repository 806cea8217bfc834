// Seeded random values for a graph's inputs (and parameters without values), so a
// run or a verification needs no data: floats uniform in [-1, 1); integer ids
// uniform in the range their consumers accept (embedding/gather: [0, rows)).
#pragma once

#include <cstdint>
#include <map>

#include "graph/graph.h"
#include "graph/tensor_data.h"

namespace tapestry {

std::map<TensorId, TensorData> make_random_inputs(const Graph &g, std::uint64_t seed);

}  // namespace tapestry
