// The memory budget of a run or a verification (issue 14): what the values of a
// graph will take, computed overflow-checked from its tensors before anything
// is allocated, against what the machine has available (or a limit the user
// gives). A graph over budget is refused with the largest tensors named — never
// a std::bad_alloc halfway through.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"

namespace tapestry::cpu {

struct MemoryNeed {
    std::int64_t bytes = 0;  // saturated at kSizeSaturated
    // The tensors that take the most, largest first (at most five), with their bytes.
    std::vector<std::pair<std::string, std::int64_t>> largest;
};

// What values of `g` a run holds at once, at most: every input, parameter and
// output, plus every intermediate (the arena holds no more than all of them).
// With `oracle` (a verification): both executor runs' outputs and the
// double-precision oracle's copy of every tensor (8 bytes an element) too.
MemoryNeed memory_need(const Graph &g, bool oracle);

// Bytes this process may still allocate: MemAvailable of /proc/meminfo, capped
// by the cgroup's memory.max where one is set; 0 when neither can be read.
std::int64_t available_memory();

// Refuses one allocation of `bytes` (overflow-checked by the caller) larger than
// available_memory() reports: "<what> needs <bytes> but this machine has <free>
// available" (not checked when that is unknown). For what a kernel makes when it
// is made (widened copies, a mask), which memory_need does not count.
Expected<std::monostate, std::string> check_allocation(std::int64_t bytes, const std::string &what);

// Refuses (with the need, the largest tensors and the budget, in a sentence)
// when memory_need(g, oracle) exceeds `limit` bytes — or, with limit 0, what
// available_memory() reports (not checked when that is unknown).
Expected<std::monostate, std::string> check_memory(const Graph &g, bool oracle, std::int64_t limit = 0);

// "8G", "512M", "1.5GiB", "1000000" → bytes; an error naming the text otherwise.
Expected<std::int64_t, std::string> parse_byte_size(const std::string &text);

}  // namespace tapestry::cpu
