#include "runtime/cpu/memory_budget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/checked_size.h"

namespace tapestry::cpu {

MemoryNeed memory_need(const Graph &g, bool oracle) {
    MemoryNeed need;
    std::vector<std::pair<std::string, std::int64_t>> per_tensor;
    for (const TensorPtr &t : g.tensors()) {
        std::int64_t bytes = t->bytes();
        if (oracle) {
            // The oracle's doubles; a second copy of each output (two executor runs).
            bytes = size_add(bytes, size_mul(t->range.size(), 8));
            if (t->role == TensorRole::output) bytes = size_add(bytes, t->bytes());
        }
        need.bytes = size_add(need.bytes, bytes);
        per_tensor.emplace_back(t->id.value, bytes);
    }
    std::stable_sort(per_tensor.begin(), per_tensor.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
    if (per_tensor.size() > 5) per_tensor.resize(5);
    need.largest = std::move(per_tensor);
    return need;
}

namespace {

// The first number after `key` in a "key: value kB" file, in bytes; 0 if none.
std::int64_t meminfo_bytes(const std::string &key) {
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0) {
            std::istringstream s(line.substr(key.size() + 1));
            std::int64_t kib = 0;
            s >> kib;
            return size_mul(std::max<std::int64_t>(kib, 0), 1024);
        }
    return 0;
}

std::int64_t cgroup_limit() {
    std::ifstream in("/sys/fs/cgroup/memory.max");
    std::string text;
    if (!(in >> text) || text == "max") return 0;
    try {
        return std::stoll(text);
    } catch (...) {
        return 0;
    }
}

}  // namespace

std::int64_t available_memory() {
    std::int64_t available = meminfo_bytes("MemAvailable");
    const std::int64_t cgroup = cgroup_limit();
    if (cgroup > 0 && (available == 0 || cgroup < available)) available = cgroup;
    return available;
}

Expected<std::monostate, std::string> check_allocation(std::int64_t bytes, const std::string &what) {
    const std::int64_t available = available_memory();
    if (available <= 0 || bytes <= available) return std::monostate{};
    return unexpected(what + " needs " + byte_text(bytes) + " but this machine has " + byte_text(available) + " available");
}

Expected<std::monostate, std::string> check_memory(const Graph &g, bool oracle, std::int64_t limit) {
    const std::int64_t budget = limit > 0 ? limit : available_memory();
    if (budget <= 0) return std::monostate{};
    const MemoryNeed need = memory_need(g, oracle);
    if (need.bytes <= budget) return std::monostate{};
    std::string largest;
    for (const auto &[id, bytes] : need.largest) {
        if (bytes == 0) break;
        largest += (largest.empty() ? "" : ", ") + ("'" + id + "' ") + byte_text(bytes);
    }
    return unexpected(std::string("not enough memory to ") + (oracle ? "verify" : "run") + ": its tensors need " +
                      byte_text(need.bytes) + " (largest: " + largest + ") but " +
                      (limit > 0 ? "the memory limit is " + byte_text(limit)
                                 : "this machine has " + byte_text(budget) + " available") +
                      "; nothing was allocated");
}

Expected<std::int64_t, std::string> parse_byte_size(const std::string &text) {
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (...) {
        used = 0;
    }
    std::string unit = text.substr(used);
    std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!unit.empty() && unit.back() == 'b') unit.pop_back();
    if (unit.size() == 2 && unit[1] == 'i') unit.pop_back();
    static const std::string units = "kmgtp";
    double scale = 1;
    if (unit.size() == 1 && units.find(unit[0]) != std::string::npos)
        scale = std::pow(1024.0, static_cast<double>(units.find(unit[0]) + 1));
    else if (!unit.empty())
        used = 0;
    const double bytes = value * scale;
    if (used == 0 || !std::isfinite(bytes) || bytes < 1 || bytes >= 9.2e18)
        return unexpected("'" + text + "' is not a size in bytes (e.g. 8G, 512M, 1.5GiB)");
    return static_cast<std::int64_t>(bytes);
}

}  // namespace tapestry::cpu
