// Streams are in-order queues and the plan order is a topological order, so one
// pass in plan order is the event-driven schedule: each step starts at the latest
// of its dependencies' ends and its streams' free times — and, on a machine whose
// cores the devices share, of the previous step's start and the earliest end among
// the steps holding the slots.
#include "plan/simulate.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>

#include "common/checked_size.h"

namespace tapestry::plan {

MemoryEvents memory_events(const Plan &plan) {
    MemoryEvents m;
    m.allocates.resize(plan.steps.size());
    m.frees.resize(plan.steps.size());
    auto note = [](std::vector<int> &devices, int d) {
        if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    };
    for (const Buffer &b : plan.buffers) {
        if (!b.in_arena() || b.first < 0 || b.last < 0) continue;
        if (static_cast<size_t>(b.first) < m.allocates.size()) note(m.allocates[static_cast<size_t>(b.first)], b.device);
        if (static_cast<size_t>(b.last) < m.frees.size()) note(m.frees[static_cast<size_t>(b.last)], b.device);
    }
    return m;
}

Prediction simulate(const Plan &plan) {
    std::vector<double> d;
    d.reserve(plan.steps.size());
    for (const Step &s : plan.steps) d.push_back(s.predicted);
    return simulate(plan, d);
}

Prediction simulate(const Plan &plan, const std::vector<double> &durations) {
    Prediction p;
    const size_t n = plan.devices.size();
    p.steps.resize(plan.steps.size());
    p.devices.resize(n);
    std::vector<double> compute_free(n, 0), comm_free(n, 0);
    // Shared cores: the ends of the steps holding the slots (earliest first), and
    // the last admitted step's start.
    const int slots = plan.cluster.concurrent_steps();
    std::priority_queue<double, std::vector<double>, std::greater<>> held;
    double admitted = 0;
    // … and memory in plan order: per device, the latest end of a step that freed there.
    const MemoryEvents memory = slots > 0 ? memory_events(plan) : MemoryEvents{};
    std::vector<double> freed(n, 0);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const Step &s = plan.steps[i];
        const double dur = i < durations.size() ? durations[i] : s.predicted;
        double start = 0;
        for (int d : s.deps) start = std::max(start, p.steps[static_cast<size_t>(d)].end);
        if (slots > 0) {
            start = std::max(start, admitted);
            for (int d : memory.allocates[i]) start = std::max(start, freed[static_cast<size_t>(d)]);
            if (static_cast<int>(held.size()) >= slots) {
                // Every core taken: the step runs once one is released and its worker
                // is awake (ClusterShape::wake).
                start = std::max(start, held.top() + plan.cluster.wake);
                held.pop();
            }
        }
        auto streams = [&](auto &&f) {
            for_each_stream(s, [&](int d, Stream stream) {
                const size_t k = static_cast<size_t>(d);
                f(stream == Stream::compute ? compute_free[k] : comm_free[k], k);
            });
        };
        streams([&](double &free, size_t) { start = std::max(start, free); });
        const double end = start + dur;
        p.steps[i] = StepTime{start, end};
        if (slots > 0) {
            admitted = start;
            held.push(end);
            for (int d : memory.frees[i]) freed[static_cast<size_t>(d)] = std::max(freed[static_cast<size_t>(d)], end);
        }
        streams([&](double &free, size_t d) {
            free = end;
            DeviceLoad &load = p.devices[d];
            if (s.stream == Stream::compute) load.compute += dur;
            else load.communication += dur;
        });
        p.makespan = std::max(p.makespan, end);
        if (s.kind == StepKind::send_recv) {
            p.comm_seconds += dur;
            p.comm_bytes += s.bytes;
            p.devices[static_cast<size_t>(s.device)].comm_bytes += s.bytes;
        } else if (s.kind == StepKind::collective) {
            p.comm_seconds += dur;
            const double share = s.bytes * (static_cast<double>(s.participants.size()) - 1) /
                                 std::max<double>(1, static_cast<double>(s.participants.size()));
            for (int d : s.participants) p.devices[static_cast<size_t>(d)].comm_bytes += share;
            p.comm_bytes += share * static_cast<double>(s.participants.size());
        }
    }
    // Memory: resident buffers throughout; an arena buffer from the start of its
    // first step to the end of its last.
    std::vector<std::vector<std::pair<double, std::int64_t>>> events(n);
    for (const Buffer &b : plan.buffers) {
        DeviceLoad &load = p.devices[static_cast<size_t>(b.device)];
        if (!b.in_arena()) {
            load.resident = size_add(load.resident, b.bytes);
            continue;
        }
        if (b.first < 0) continue;
        events[static_cast<size_t>(b.device)].emplace_back(p.steps[static_cast<size_t>(b.first)].start, b.bytes);
        events[static_cast<size_t>(b.device)].emplace_back(p.steps[static_cast<size_t>(b.last)].end, -b.bytes);
    }
    for (size_t d = 0; d < n; ++d) {
        DeviceLoad &load = p.devices[d];
        load.arena = plan.devices[d].arena_bytes;
        load.idle = std::max(0.0, p.makespan - load.compute);
        auto &ev = events[d];
        // Frees before allocations at the same instant (a buffer reusing another's bytes).
        std::sort(ev.begin(), ev.end(), [](const auto &a, const auto &b) {
            return a.first != b.first ? a.first < b.first : a.second < b.second;
        });
        std::int64_t live = load.resident, peak = load.resident;
        load.memory.emplace_back(0.0, live);
        for (const auto &[t, delta] : ev) {
            live += delta;
            peak = std::max(peak, live);
            if (!load.memory.empty() && load.memory.back().first == t) load.memory.back().second = live;
            else load.memory.emplace_back(t, live);
        }
        load.peak = peak;
        if (peak > p.peak) {
            p.peak = peak;
            p.peak_device = static_cast<int>(d);
        }
    }
    return p;
}

std::string seconds_text(double s) {
    char buf[64];
    if (s >= 1) std::snprintf(buf, sizeof buf, "%.3g s", s);
    else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
    else if (s >= 1e-6) std::snprintf(buf, sizeof buf, "%.3g µs", s * 1e6);
    else std::snprintf(buf, sizeof buf, "%.3g ns", s * 1e9);
    return buf;
}

}  // namespace tapestry::plan
