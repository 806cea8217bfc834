// The cost model (DESIGN.md §6, docs/cost-model.md): predicted seconds of a kernel
// (roofline with the target's efficiency curves, plus launch overhead), of a copy,
// of a point-to-point transfer and of a collective (the α–β time of the algorithm
// NCCL would pick), on a target's cluster. Every figure it gives is a prediction.
// A calibration table, filled from launches, scales kernel predictions per kernel
// class and size band, and reports its own error.
#pragma once

#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "cost/target.h"
#include "graph/dtype.h"

namespace tapestry::cost {

struct KernelWork {
    KernelClass kernel_class = KernelClass::elementwise;
    DType dtype = DType::f32;
    double flops = 0;
    double bytes = 0;  // read + written
    // The kernel: the op's kind ("layernorm", "add", "fused", …); empty for copies
    // and wherever it is not known. Calibration is finer by it (Calibration::factor).
    std::string kernel = {};
    // The kernel's exact shape (plan::step_shape: its regions' extents), "" not
    // known. Calibration is finest by it: a GEMM of 2048×768·768×3072 and one of
    // 2048×3072·3072×768 do the same FLOPs at different rates.
    std::string shape = {};
};

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast };
const char *collective_name(Collective c);  // "all_reduce", …
std::optional<Collective> parse_collective(std::string_view name);  // collective_name's inverse
enum class Algorithm { ring, tree };
const char *algorithm_name(Algorithm a);  // "ring", "tree"

struct CollectiveTime {
    Algorithm algorithm = Algorithm::ring;
    double seconds = 0;
    bool crosses_nodes = false;
};

// α–β times (seconds) of the collectives on n devices, S bytes (the whole buffer:
// all-reduce and broadcast the buffer each device holds, all-gather the gathered
// result, reduce-scatter the buffer reduced), β bytes/s, α seconds per hop.
double ring_all_reduce_seconds(double bytes, int n, double alpha, double beta);      // 2(n−1)/n·S/β + 2(n−1)α
double ring_all_gather_seconds(double bytes, int n, double alpha, double beta);      // (n−1)/n·S/β + (n−1)α
double ring_broadcast_seconds(double bytes, int n, double alpha, double beta);       // S/β + (n−1)α (pipelined)
double tree_all_reduce_seconds(double bytes, int n, double alpha, double beta);      // 2·S/β + 2⌈log2 n⌉α
// The bytes a ring collective moves between its n devices in all, S as above:
// all-reduce 2(n−1)·S (a reduce-scatter, then an all-gather), the others (n−1)·S.
double collective_moved_bytes(Collective c, double bytes, int n);

struct ClusterShape;
struct KernelWork;
// A collective among devices sharing one machine's cores and memory
// (ClusterShape::shared_cores, all on one node) is no link's traffic but copies
// on those cores: the bytes it moves, copied (class copy, kernel its name, so
// calibration learns it apart). nullopt for any other collective.
std::optional<KernelWork> shared_collective_work(const ClusterShape &shape, Collective c, double bytes,
                                                 const std::vector<int> &devices);

// Measured against predicted, per kernel class and size band (the decade of the
// size the class's efficiency curve is indexed by), and within them per kernel.
struct CalibrationSample {
    KernelClass kernel_class = KernelClass::elementwise;
    double size = 0;  // FLOPs or bytes, as the curve
    double predicted = 0;
    double measured = 0;
    std::string kernel = {};  // KernelWork::kernel ("" unknown: counts for its band only)
    int threads = 0;          // the threads a kernel ran on (Model::kernel_threads; 0 a GPU's)
    // The kernel's element type (KernelWork::dtype); none: not known (points kept
    // before schema v5), which count for their kernel's every-dtype group only.
    std::optional<DType> dtype = {};
    std::string shape = {};  // KernelWork::shape ("" not known: points kept before schema v6)
};
// A row of the calibration table: the factor of a class's size band, of every
// kernel in it or of one kernel, on every thread count or on one.
struct CalibrationEntry {
    KernelClass kernel_class = KernelClass::elementwise;
    int band = 0;
    int threads = -1;    // -1 for every thread count
    std::string kernel;  // "" for every kernel
    std::optional<DType> dtype;  // a kernel's rows only: none for every dtype
    double factor = 1;   // median of measured / predicted
    int samples = 0;
};
struct CalibrationError {
    int samples = 0;
    double median_before = 0;  // median |predicted − measured| / measured, uncalibrated
    double median_after = 0;   // the same with the table's factors
};
class Calibration {
public:
    // The samples (those with a measured and a predicted time) and the wake fitted
    // on `wake_launches` launches (0: none).
    static Calibration of(const std::vector<CalibrationSample> &samples, double wake = 0, int wake_launches = 0);
    void add(const CalibrationSample &s);
    const std::vector<CalibrationSample> &samples() const { return samples_; }
    // The factor predictions of this class, size, kernel, thread count and dtype
    // are scaled by: the median of measured/predicted in the class's size band of
    // the finest group with samples — that kernel in that dtype on those threads,
    // in that dtype on any, that kernel on those threads, on any, any kernel on
    // those threads, the whole band (kernels of one class differ: a layer norm is
    // not a residual add; nor is a kernel on one core half of it on two, nor a
    // bf16 layer norm an f32 one, whose bytes move at another rate) —, a group
    // finer than the band only from kMinGroupSamples points; 1 where the band has
    // no sample. `threads` -1, `dtype` none: not known. Finer than all of these, a
    // kernel of one exact `shape` in that dtype (on those threads, then on any):
    // the rate a shape runs at, where it was measured.
    double factor(KernelClass c, double size, std::string_view kernel = {}, int threads = -1,
                  std::optional<DType> dtype = {}, std::string_view shape = {}) const;
    // Whether any point has a shape (else a shape is not worth computing).
    bool has_shapes() const { return !shape_ratios_.empty(); }
    // Shapes with at least kMinGroupSamples points (each calibrated apart).
    int calibrated_shapes() const;
    static int band(double size);  // ⌊log10 size⌋
    static constexpr size_t kMinGroupSamples = 3;
    // The table, by class, band, threads and kernel: each band's row (every thread
    // count, every kernel) first.
    std::vector<CalibrationEntry> table() const;
    CalibrationError error() const;
    bool empty() const { return samples_.empty() && wake_launches_ == 0; }

    // The shared-core hand-off (ClusterShape::wake) fitted on whole launches
    // (launch::fit_wake), and how many launches it was fitted on (0: none, and the
    // plans it calibrates keep a wake of 0).
    void set_wake(double seconds, int launches) {
        wake_ = seconds;
        wake_launches_ = launches;
    }
    double wake() const { return wake_; }
    int wake_launches() const { return wake_launches_; }

private:
    // Orders tuple keys with their strings compared as string_views, so a key is
    // looked up by a tuple of string_views without building a string (one
    // comparison of plain tuples: libstdc++'s tuple<…, string> < tuple<…,
    // string_view> does not compile under clang).
    struct ViewLess {
        using is_transparent = void;
        template <typename T> static auto view_of(const T &v) {
            if constexpr (std::is_same_v<T, std::string>) return std::string_view(v);
            else return v;
        }
        template <typename A> static auto view(const A &k) {
            return std::apply([](const auto &...x) { return std::tuple{view_of(x)...}; }, k);
        }
        template <typename A, typename B> bool operator()(const A &a, const B &b) const { return view(a) < view(b); }
    };
    // class, band, threads (-1 any), kernel ("" any), dtype (-1 any)
    using Key = std::tuple<int, int, int, std::string, int>;
    std::vector<CalibrationSample> samples_;
    std::map<Key, std::vector<double>, ViewLess> ratios_;  // each sorted ascending
    // By class, threads (-1 any), dtype (-1 any), kernel and shape: each sorted
    // ascending (no string per predicted step).
    using ShapeKey = std::tuple<int, int, int, std::string, std::string>;
    std::map<ShapeKey, std::vector<double>, ViewLess> shape_ratios_;
    double wake_ = 0;
    int wake_launches_ = 0;
};

class Model {
public:
    Model(Target target, ClusterShape shape);

    const Target &target() const { return target_; }
    const ClusterShape &shape() const { return shape_; }
    Calibration &calibration() { return calibration_; }
    const Calibration &calibration() const { return calibration_; }

    // The size a class's efficiency curve is indexed by (FLOPs or bytes).
    double curve_size(const KernelWork &w) const;
    // The share of the target's compute and memory bandwidth one kernel has: 1 for
    // a GPU; for a CPU target, whose devices are workers sharing one machine's
    // cores (its figures are measured with all of them), the cores one device's
    // kernel runs on (ClusterShape::threads_per_device) out of them — 1/n for n
    // devices when the core count is not known.
    double device_share() const;
    // The threads one kernel runs on, as calibration tells them apart: a cpu
    // target's ClusterShape::threads_per_device (0 where the cores are not known);
    // 0 for a GPU.
    int kernel_threads() const;
    // max(flops / (peak(dtype)·share), bytes / (bandwidth·share)): the bound, without efficiency.
    double roofline_seconds(const KernelWork &w) const;
    // roofline / efficiency(class, size) + launch overhead, times the calibration factor.
    double kernel_seconds(const KernelWork &w) const;
    // A copy of `bytes` inside one device's memory (read and write).
    // A copy step of `shape` (plan::step_shape; "" not known: its band's factor).
    double copy_seconds(double bytes, const std::string &shape = {}) const;
    // The link between two devices of the cluster (intra-node or inter-node).
    const Link &link_between(int a, int b) const;
    // One point-to-point transfer: α + S/β of the link it crosses; a copy
    // (copy_seconds, by its `shape` where given) between devices sharing one
    // machine's memory (shared_cores).
    double transfer_seconds(double bytes, int from, int to, const std::string &shape = {}) const;
    // Among devices sharing a machine (shared_collective_work): the copies, on
    // the ring. Otherwise the faster of ring and tree (as NCCL's tuner picks; tree only for
    // all-reduce, as in NCCL) on these devices; a
    // collective that spans nodes runs at the slower of the intra-node link and
    // the node's inter-node links together (one NIC per device), with the
    // inter-node latency per hop.
    CollectiveTime collective_seconds(Collective c, double bytes, const std::vector<int> &devices) const;
    // The device's memory capacity in bytes.
    double memory_capacity() const { return target_.device.memory_bytes.value; }

private:
    Target target_;
    ClusterShape shape_;
    const Link *intra_ = nullptr;
    const Link *inter_ = nullptr;
    Calibration calibration_;
};

}  // namespace tapestry::cost
