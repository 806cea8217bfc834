// A plan as CUDA launch descriptors (launch/cuda_descriptors.h).
#include "launch/cuda_descriptors.h"

#include <algorithm>
#include <map>

#include "common/checked_size.h"
#include "launch/launch.h"
#include "launch/rank_world.h"
#include "schedule/arena.h"

namespace tapestry::launch {

Expected<CudaLaunchDescriptors, std::string> describe_cuda_launch(const plan::Plan &plan, int gpus, CudaRanks ranks) {
    if (gpus < 1) return unexpected(std::string("no GPU to launch on"));
    const int n = static_cast<int>(plan.devices.size());
    if (ranks.ranks < 1 || ranks.rank < 0 || ranks.rank >= ranks.ranks)
        return unexpected("rank " + std::to_string(ranks.rank) + " of " + std::to_string(ranks.ranks) + " is no rank");
    if (ranks.ranks > n)
        return unexpected(std::to_string(ranks.ranks) + " ranks launch a plan of " + std::to_string(n) +
                          " devices: a rank needs at least one device");
    std::vector<char> mine(static_cast<size_t>(n), 0);
    int owned = 0;
    for (int dev = 0; dev < n; ++dev)
        if (rank_of_device(dev, n, ranks.ranks) == ranks.rank) {
            mine[static_cast<size_t>(dev)] = 1;
            ++owned;
        }
    CudaLaunchDescriptors d;
    d.virtual_devices = owned > gpus;
    d.gpus = d.virtual_devices ? 1 : std::max(1, owned);
    for (int dev = 0, k = 0; dev < n; ++dev) d.device_gpu.push_back(!mine[static_cast<size_t>(dev)] ? -1 : d.virtual_devices ? 0 : k++);
    d.arena_bytes.assign(static_cast<size_t>(n), 0);
    d.resident_bytes.assign(static_cast<size_t>(n), 0);
    for (int dev = 0; dev < n; ++dev) {
        d.arena_bytes[static_cast<size_t>(dev)] = plan.devices[static_cast<size_t>(dev)].arena_bytes;
        for (int comm = 0; comm < 2; ++comm)
            d.streams.push_back(CudaStream{dev, comm == 1, d.device_gpu[static_cast<size_t>(dev)]});
    }
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const plan::Buffer &buf = plan.buffers[b];
        const std::string name = "buffer " + std::to_string(b) + " (" + (buf.tensor.value.empty() ? "workspace" : buf.tensor.value) + ")";
        if (buf.device < 0 || buf.device >= n) return unexpected(name + " is on no device of the plan");
        if (buf.bytes < 0) return unexpected(name + " has a negative size");
        CudaBufferPlace place;
        place.gpu = d.device_gpu[static_cast<size_t>(buf.device)];
        place.bytes = buf.bytes;
        place.in_arena = buf.in_arena();
        if (place.in_arena) {
            const std::int64_t arena = d.arena_bytes[static_cast<size_t>(buf.device)];
            if (buf.offset < 0 || size_add(buf.offset, buf.bytes) > arena)
                return unexpected(name + " at offset " + std::to_string(buf.offset) + " (" + std::to_string(buf.bytes) +
                                  " bytes) lies outside its device's arena of " + std::to_string(arena) + " bytes");
            place.offset = buf.offset;
        } else {
            std::int64_t &block = d.resident_bytes[static_cast<size_t>(buf.device)];
            place.offset = block;
            block = size_add(block, static_cast<std::int64_t>(schedule::align_up(static_cast<std::size_t>(buf.bytes))));
        }
        d.buffers.push_back(place);
    }
    // Per stream, the last step enqueued on it so far (plan order is enqueue order).
    const int streams = 2 * n;
    std::vector<int> last_on(static_cast<size_t>(streams), -1);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const plan::Step &s = plan.steps[i];
        const std::vector<int> held = step_streams(s);
        for (int k : held)
            if (k < 0 || k >= streams)
                return unexpected("step " + std::to_string(i) + " runs on a device the plan does not have");
        CudaStepLaunch l;
        std::vector<int> here;
        for (int k : held)
            if (mine[static_cast<size_t>(k / 2)]) here.push_back(k);
        l.here = !here.empty();
        if (!l.here) {
            l.stream = held.front();
            d.steps.push_back(std::move(l));
            continue;
        }
        l.stream = here.front();
        l.holds.assign(here.begin() + 1, here.end());
        // What it waits for: its dependencies, and — for a step holding several streams —
        // the last step on each of those streams before it. Per stream (where the awaited
        // step was enqueued) only the latest, which implies the earlier ones; none on its
        // own stream, which runs in order.
        std::map<int, int> latest;  // stream → step
        auto await = [&](int dep) {
            if (!d.steps[static_cast<size_t>(dep)].here) return;  // another rank's: its data arrives by this step's messages
            const int on = d.steps[static_cast<size_t>(dep)].stream;
            if (on == l.stream) return;
            int &at = latest.try_emplace(on, dep).first->second;
            at = std::max(at, dep);
        };
        for (int dep : s.deps) {
            if (dep < 0 || dep >= static_cast<int>(i))
                return unexpected("step " + std::to_string(i) + " depends on step " + std::to_string(dep) + ", which does not come before it");
            await(dep);
        }
        for (int k : l.holds)
            if (last_on[static_cast<size_t>(k)] >= 0) await(last_on[static_cast<size_t>(k)]);
        for (const auto &[stream, dep] : latest) {
            (void)stream;
            l.waits.push_back(dep);
            d.steps[static_cast<size_t>(dep)].records = true;
        }
        std::sort(l.waits.begin(), l.waits.end());
        if (!l.holds.empty()) l.records = true;
        for (int k : here) last_on[static_cast<size_t>(k)] = static_cast<int>(i);
        d.steps.push_back(std::move(l));
    }
    return d;
}

std::string descriptors_text(const plan::Plan &plan, const CudaLaunchDescriptors &d) {
    std::string out;
    auto stream_name = [&](int k) {
        return plan.devices[static_cast<size_t>(k / 2)].name + (k % 2 ? " comm" : " compute");
    };
    auto gpu = [](int g) { return g < 0 ? std::string("-") : std::to_string(g); };
    for (size_t dev = 0; dev < d.device_gpu.size(); ++dev)
        out += "device " + plan.devices[dev].name + " gpu " + gpu(d.device_gpu[dev]) + " arena " +
               std::to_string(d.arena_bytes[dev]) + " resident " + std::to_string(d.resident_bytes[dev]) + "\n";
    for (size_t b = 0; b < d.buffers.size(); ++b) {
        const CudaBufferPlace &p = d.buffers[b];
        out += "buffer " + std::to_string(b) + " gpu " + gpu(p.gpu) + (p.in_arena ? " arena +" : " resident +") +
               std::to_string(p.offset) + " " + std::to_string(p.bytes) + "\n";
    }
    for (size_t i = 0; i < d.steps.size(); ++i) {
        const CudaStepLaunch &l = d.steps[i];
        if (!l.here) {
            out += "step " + std::to_string(i) + " elsewhere\n";
            continue;
        }
        out += "step " + std::to_string(i) + " stream " + std::to_string(l.stream) + " (" + stream_name(l.stream) + ")";
        if (!l.waits.empty()) {
            out += " waits";
            for (int w : l.waits) out += " " + std::to_string(w);
        }
        if (!l.holds.empty()) {
            out += " holds";
            for (int h : l.holds) out += " " + std::to_string(h);
        }
        if (l.records) out += " records";
        out += "\n";
    }
    return out;
}

}  // namespace tapestry::launch
