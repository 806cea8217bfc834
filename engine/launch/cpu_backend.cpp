// The `cpu` backend (launch/cpu_backend.h): the host backend with every device in
// this process, so a hop between devices is a copy between their memories.
#include "launch/cpu_backend.h"

#include <algorithm>
#include <thread>

#include "common/checked_size.h"
#include "launch/host_backend.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/memory_budget.h"

namespace tapestry::launch {
namespace {

class CpuBackend final : public HostBackend {
public:
    explicit CpuBackend(const CpuBackendOptions &options) : HostBackend(options) {}

    std::string name() const override { return "cpu"; }
    // Every device is in this process, on the machine's cores: as many steps at
    // once as the cores hold kernels of threads_for() threads.
    int concurrent_steps() const override { return std::max(1, machine_cores() / kernel_threads()); }
    std::string describe() const override {
        const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
        const std::int64_t available = cpu::available_memory();
        return "cpu: " + std::to_string(cores) + (cores == 1 ? " core" : " cores") + " (" + cpu::cpu_isa().name + "), " +
               (available > 0 ? byte_text(available) + " available" : std::string("memory unknown")) + ", up to " +
               std::to_string(options_.max_devices) + " virtual devices";
    }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions &options) {
    return std::make_unique<CpuBackend>(options);
}

}  // namespace tapestry::launch
