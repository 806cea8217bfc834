// Hardware targets (DESIGN.md §6, docs/targets.md): what a device can do (peak
// FLOP/s per dtype, memory, bandwidth, launch overhead, efficiency by problem
// size per kernel class), the links between devices and the clusters built from
// them. Read from JSON (resources/targets/*.json, compiled into the engine, or a
// user's copy); every vendor figure names its source.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "graph/dtype.h"

namespace tapestry::cost {

// What a kernel is limited by, and which efficiency curve it follows.
enum class KernelClass { gemm, convolution, elementwise, reduction, copy };
inline constexpr int kKernelClasses = 5;
const char *kernel_class_name(KernelClass c);  // "gemm", …
std::optional<KernelClass> parse_kernel_class(const std::string &name);

// A figure and where it comes from (a key of Target::sources, or "measured").
struct Figure {
    double value = 0;
    std::string source;
    bool present = false;
};

// Fraction of the roofline achieved by problem size (FLOPs for gemm and
// convolution, bytes for the rest): linear in log10(size) between the points,
// clamped outside them.
struct EfficiencyCurve {
    bool by_flops = false;
    std::vector<std::pair<double, double>> points;  // (size, efficiency), sizes increasing
    std::string source;
    double at(double size) const;
};

struct Link {
    std::string name;
    std::string link_class;  // nvlink, nvswitch, pcie, infiniband, roce, host_shared_memory
    Figure bandwidth;        // bytes/s, one direction, per device
    Figure latency;          // seconds per hop (α)
    Figure efficiency;       // achievable fraction of the bandwidth (1 when absent)
    double effective_bandwidth() const { return bandwidth.value * (efficiency.present ? efficiency.value : 1.0); }
};

struct Cluster {
    std::string name;
    std::string title;
    int nodes = 1;
    int devices_per_node = 1;
    std::string intra_node;  // a Link name
    std::string inter_node;  // a Link name, or "" for one node
    int devices() const { return nodes * devices_per_node; }
};

struct Source {
    std::string title, url, kind, note;
};

struct Device {
    std::map<std::string, Figure> peak_flops;  // "f32", "tf32", "bf16", "f16", "fp8"
    Figure memory_bytes;
    Figure memory_bandwidth;
    Figure launch_overhead;
    // Watts: the board's power limit (TDP), where the vendor publishes one. The
    // search's energy objective takes it (absent: no energy predictions).
    Figure power;
    // A cpu target: the cores its figures were measured with, which its virtual
    // devices share (cluster_shape divides them among the devices).
    Figure cores;
    std::array<EfficiencyCurve, kKernelClasses> efficiency;
    // Workspace a kernel of the class may use (bytes), when the device's library
    // takes one: cuBLASLt's workspace for gemm, cuDNN's for convolution. A backend
    // gives each kernel at most this; a plan reserves one such buffer per device.
    std::array<Figure, kKernelClasses> workspace;
};

struct Target {
    std::string name;   // file stem: "h100-sxm"
    std::string title;  // "NVIDIA H100 SXM5 80 GB"
    std::string kind;   // "gpu" or "cpu"
    Device device;
    std::vector<Link> links;
    std::vector<Cluster> clusters;
    std::vector<std::string> measured;  // device fields measured on the machine (host)
    std::map<std::string, Source> sources;
    std::string origin;  // "built-in", a file path, or "session"

    const Link *link(const std::string &name) const;
    const Cluster *cluster(const std::string &name) const;
    // Peak FLOP/s for computing in `dtype` (f32 → "f32"; bf16 → "bf16"; f16 → "f16";
    // integer kinds use the f32 figure); 0 when the target has none.
    double peak_flops(DType dtype) const;
    // Whether every figure the cost model needs is there (a host target is not
    // until it has been measured): "" or what is missing.
    std::string missing_figures() const;
};

// Parses target JSON. `where` names the file in messages, which name the JSON
// path: "h100.json: device.peak_flops.bf16.value: expected a number".
Expected<Target, std::string> parse_target(const std::string &text, const std::string &where);
// Reads a file (regular files only, at most 4 MiB).
Expected<Target, std::string> load_target(const std::string &path);
// The JSON form (parse_target's inverse; stable key order, 2-space indent).
std::string target_json(const Target &t);

// The targets compiled into the engine from resources/targets/, by name.
const std::vector<std::string> &builtin_target_names();
// A built-in target by name; "h100" is accepted for "h100-sxm" (a unique prefix).
Expected<Target, std::string> builtin_target(const std::string &name);

// The host target with its measured figures filled in (source "measured"):
// `base` is the built-in "host" (or a copy); zero figures are left out.
struct HostFigures {
    double f32_flops = 0, bf16_flops = 0, memory_bandwidth = 0, memory_bytes = 0, launch_overhead = 0;
    std::string note;  // how and when it was measured, e.g. "avx512_core_bf16, 2 threads, 2026-11-25"
    int cores = 0;     // the threads the figures were measured with (0: not known)
};
Target measured_target(Target base, const HostFigures &figures);

// The devices of a plan: `devices` of a target spread over `nodes` nodes (0: the
// target's first cluster's node size decides), named "node:index".
struct ClusterShape {
    std::string target;
    int nodes = 1;
    int devices_per_node = 1;
    std::string intra_node;  // link names
    std::string inter_node;
    // A cpu target's devices are workers sharing one machine's cores: how many
    // (0: each device is hardware of its own, as a GPU). A kernel then runs on
    // threads_per_device() of them and at most concurrent_steps() steps run at
    // once — as the cpu backend runs them (docs/launch.md).
    int shared_cores = 0;
    // With shared cores: the seconds from a core's release to the start of a step
    // that waited for one — the launcher waking that step's worker and the OS
    // giving it the core (25 µs typically, milliseconds now and then on 2 cores).
    // Learned from launches (launch::fit_wake); 0 until then. A prediction.
    double wake = 0;
    int devices() const { return nodes * devices_per_node; }
    int threads_per_device() const;  // max(1, shared_cores / devices); 0 when not shared
    int concurrent_steps() const;    // max(1, shared_cores / threads_per_device); 0: no limit
    std::string device_name(int d) const;  // "1:3"
    int node_of(int d) const { return d / devices_per_node; }
};
Expected<ClusterShape, std::string> cluster_shape(const Target &t, int devices, int nodes);

}  // namespace tapestry::cost
