// The event-driven simulation of a plan (docs/cost-model.md): every device has a
// compute stream and a communication stream, each running its steps in plan
// order; a step starts when its streams are free and its dependencies are done
// (a transfer holds the communication streams of both ends, a collective those
// of every participant). Gives the makespan, per-device busy, communication and
// idle time, and memory over time from buffer lifetimes. Every figure is a
// prediction.
//
// When the devices share one machine's cores (a cpu target: cluster
// shared_cores), at most ClusterShape::concurrent_steps() steps run at once and
// they are admitted in plan order: a step starts no earlier than the step before
// it in plan order, and when one of the slots is free — the cpu backend's rule —,
// a step that waited for a slot ClusterShape::wake after its release (the
// launcher waking its worker: learned from launches, 0 until then).
// Its memory is then used in plan order too: a step that begins an arena
// buffer's lifetime on a device starts after every earlier step that ends one
// there (memory_events) — so every device's peak is the plan order's, whatever
// the durations, and a host backend that keeps the same two rules measures the
// same peak.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cost/model.h"
#include "plan/plan.h"

namespace tapestry::plan {

struct StepTime {
    double start = 0, end = 0;
};

struct DeviceLoad {
    double compute = 0;        // seconds its compute stream is busy
    double communication = 0;  // seconds its communication stream is busy
    double idle = 0;           // makespan − compute
    double comm_bytes = 0;     // bytes it sends (transfers, and its share of collectives)
    std::int64_t resident = 0;     // parameters, inputs, outputs
    std::int64_t arena = 0;        // the arena's size (what is allocated)
    std::int64_t peak = 0;         // resident + the most arena bytes alive at once
    std::vector<std::pair<double, std::int64_t>> memory;  // (time, bytes alive from then on), starting at 0
};

struct Prediction {
    double makespan = 0;
    std::vector<StepTime> steps;
    std::vector<DeviceLoad> devices;
    double comm_seconds = 0;  // summed over transfers and collectives
    double comm_bytes = 0;    // bytes that cross between devices
    std::int64_t peak = 0;    // the largest device peak
    int peak_device = 0;
};

// Per step, the devices where it is the first step of an arena buffer's
// lifetime (it allocates there) and where it is the last (it frees there).
struct MemoryEvents {
    std::vector<std::vector<int>> allocates, frees;
};
MemoryEvents memory_events(const Plan &plan);

// With each step's Step::predicted as its duration.
Prediction simulate(const Plan &plan);
// With the given durations (one per step): for re-costing without recompiling.
Prediction simulate(const Plan &plan, const std::vector<double> &durations);

// "1.23 ms", "456 µs", "2.1 s".
std::string seconds_text(double s);

}  // namespace tapestry::plan
