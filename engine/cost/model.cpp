// The cost model's formulas (docs/cost-model.md).
#include "cost/model.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace tapestry::cost {

const char *collective_name(Collective c) {
    switch (c) {
        case Collective::all_reduce: return "all_reduce";
        case Collective::all_gather: return "all_gather";
        case Collective::reduce_scatter: return "reduce_scatter";
        case Collective::broadcast: return "broadcast";
    }
    return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::broadcast})
        if (name == collective_name(c)) return c;
    return std::nullopt;
}

const char *algorithm_name(Algorithm a) {
    return a == Algorithm::ring ? "ring" : "tree";
}

double ring_all_reduce_seconds(double bytes, int n, double alpha, double beta) {
    if (n <= 1) return 0;
    return 2.0 * (n - 1) / n * bytes / beta + 2.0 * (n - 1) * alpha;
}

double ring_all_gather_seconds(double bytes, int n, double alpha, double beta) {
    if (n <= 1) return 0;
    return static_cast<double>(n - 1) / n * bytes / beta + (n - 1) * alpha;
}

double ring_broadcast_seconds(double bytes, int n, double alpha, double beta) {
    if (n <= 1) return 0;
    return bytes / beta + (n - 1) * alpha;
}

namespace {
double log2_ceil(int n) {
    return std::ceil(std::log2(static_cast<double>(std::max(n, 1))));
}
}  // namespace

double tree_all_reduce_seconds(double bytes, int n, double alpha, double beta) {
    if (n <= 1) return 0;
    return 2.0 * bytes / beta + 2.0 * log2_ceil(n) * alpha;
}

double collective_moved_bytes(Collective c, double bytes, int n) {
    if (n <= 1) return 0;
    return (c == Collective::all_reduce ? 2.0 : 1.0) * (n - 1) * bytes;
}

std::optional<KernelWork> shared_collective_work(const ClusterShape &shape, Collective c, double bytes,
                                                 const std::vector<int> &devices) {
    if (shape.shared_cores <= 0 || devices.size() < 2) return std::nullopt;
    for (int d : devices)
        if (shape.node_of(d) != shape.node_of(devices.front())) return std::nullopt;
    const double moved = collective_moved_bytes(c, bytes, static_cast<int>(devices.size()));
    return KernelWork{KernelClass::copy, DType::f32, 0, 2 * moved, collective_name(c)};
}


// ---- Calibration -------------------------------------------------------------------

int Calibration::band(double size) {
    return size > 0 ? static_cast<int>(std::floor(std::log10(size))) : 0;
}

Calibration Calibration::of(const std::vector<CalibrationSample> &samples, double wake, int wake_launches) {
    Calibration c;
    for (const CalibrationSample &s : samples) c.add(s);  // add skips points without both times
    if (wake_launches > 0) c.set_wake(wake, wake_launches);
    return c;
}

void Calibration::add(const CalibrationSample &s) {
    if (!(s.predicted > 0 && s.measured > 0)) return;
    samples_.push_back(s);
    const double r = s.measured / s.predicted;
    auto insert = [&](Key key) {
        std::vector<double> &v = ratios_[std::move(key)];
        v.insert(std::upper_bound(v.begin(), v.end(), r), r);
    };
    const int c = static_cast<int>(s.kernel_class), b = band(s.size);
    insert(Key{c, b, -1, std::string(), -1});
    insert(Key{c, b, s.threads, std::string(), -1});
    if (!s.kernel.empty()) {
        insert(Key{c, b, -1, s.kernel, -1});
        insert(Key{c, b, s.threads, s.kernel, -1});
        if (s.dtype) {
            const int d = static_cast<int>(*s.dtype);
            insert(Key{c, b, -1, s.kernel, d});
            insert(Key{c, b, s.threads, s.kernel, d});
        }
        if (!s.shape.empty()) {
            const int d = s.dtype ? static_cast<int>(*s.dtype) : -1;
            for (int t : {-1, s.threads}) {
                std::vector<double> &v = shape_ratios_[ShapeKey{c, t, d, s.kernel, s.shape}];
                v.insert(std::upper_bound(v.begin(), v.end(), r), r);
            }
        }
    }
}

int Calibration::calibrated_shapes() const {
    int n = 0;
    for (const auto &[key, r] : shape_ratios_) n += std::get<1>(key) < 0 && r.size() >= kMinGroupSamples;
    return n;
}

namespace {
double median_of_sorted(const std::vector<double> &v) {
    if (v.empty()) return 0;
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return median_of_sorted(v);
}
}  // namespace

std::vector<CalibrationEntry> Calibration::table() const {
    std::vector<CalibrationEntry> out;
    out.reserve(ratios_.size());
    // The map's order: per (class, band) the band's own row (threads -1, kernel "") first.
    for (const auto &[key, r] : ratios_)
        out.push_back(CalibrationEntry{static_cast<KernelClass>(std::get<0>(key)), std::get<1>(key), std::get<2>(key),
                                       std::get<3>(key),
                                       std::get<4>(key) < 0 ? std::nullopt
                                                            : std::optional<DType>(static_cast<DType>(std::get<4>(key))),
                                       median_of_sorted(r), static_cast<int>(r.size())});
    return out;
}

double Calibration::factor(KernelClass c, double size, std::string_view kernel, int threads,
                           std::optional<DType> dtype, std::string_view shape) const {
    if (ratios_.empty()) return 1.0;
    const int cls = static_cast<int>(c), b = band(size);
    const int d = dtype && !kernel.empty() ? static_cast<int>(*dtype) : -1;
    if (!shape.empty() && !kernel.empty() && !shape_ratios_.empty()) {
        using Probe = std::tuple<int, int, int, std::string_view, std::string_view>;
        for (int t : {threads, -1})
            if (auto it = shape_ratios_.find(Probe{cls, t, d, kernel, shape});
                it != shape_ratios_.end() && it->second.size() >= kMinGroupSamples)
                return median_of_sorted(it->second);
    }
    using Probe = std::tuple<int, int, int, std::string_view, int>;
    // Finest first; a probe with threads -1, kernel "" or dtype -1 is a coarser
    // group itself. A finer group counts from kMinGroupSamples points (one launch's
    // noise is not a kernel's character); the band from one.
    for (const Probe &p : {Probe{cls, b, threads, kernel, d}, Probe{cls, b, -1, kernel, d}, Probe{cls, b, threads, kernel, -1},
                           Probe{cls, b, -1, kernel, -1}, Probe{cls, b, threads, {}, -1}})
        if (auto it = ratios_.find(p); it != ratios_.end() && it->second.size() >= kMinGroupSamples)
            return median_of_sorted(it->second);
    if (auto it = ratios_.find(Probe{cls, b, -1, {}, -1}); it != ratios_.end()) return median_of_sorted(it->second);
    return 1.0;
}

CalibrationError Calibration::error() const {
    CalibrationError e;
    e.samples = static_cast<int>(samples_.size());
    std::vector<double> before, after;
    for (const CalibrationSample &s : samples_) {
        before.push_back(std::abs(s.predicted - s.measured) / s.measured);
        const double p = s.predicted * factor(s.kernel_class, s.size, s.kernel, s.threads, s.dtype, s.shape);
        after.push_back(std::abs(p - s.measured) / s.measured);
    }
    e.median_before = median(before);
    e.median_after = median(after);
    return e;
}

// ---- The model ---------------------------------------------------------------------

Model::Model(Target target, ClusterShape shape) : target_(std::move(target)), shape_(std::move(shape)) {
    intra_ = target_.link(shape_.intra_node);
    inter_ = shape_.inter_node.empty() ? nullptr : target_.link(shape_.inter_node);
    TAPESTRY_CHECK(intra_ != nullptr, "the cluster shape names an intra-node link the target lacks");
    if (!inter_) inter_ = intra_;
}

double Model::curve_size(const KernelWork &w) const {
    return target_.device.efficiency[static_cast<size_t>(w.kernel_class)].by_flops ? w.flops : w.bytes;
}

double Model::device_share() const {
    if (target_.kind != "cpu") return 1.0;
    if (shape_.shared_cores > 0) return static_cast<double>(shape_.threads_per_device()) / shape_.shared_cores;
    return 1.0 / std::max(1, shape_.devices());
}

int Model::kernel_threads() const {
    return target_.kind == "cpu" ? shape_.threads_per_device() : 0;
}

double Model::roofline_seconds(const KernelWork &w) const {
    const double peak = target_.peak_flops(w.dtype) * device_share();
    const double bw = target_.device.memory_bandwidth.value * device_share();
    const double compute = peak > 0 ? w.flops / peak : 0;
    const double memory = bw > 0 ? w.bytes / bw : 0;
    return std::max(compute, memory);
}

double Model::kernel_seconds(const KernelWork &w) const {
    const double size = curve_size(w);
    const double eff = std::max(1e-6, target_.device.efficiency[static_cast<size_t>(w.kernel_class)].at(size));
    const double t = roofline_seconds(w) / eff + target_.device.launch_overhead.value;
    return t * calibration_.factor(w.kernel_class, size, w.kernel, kernel_threads(), w.dtype, w.shape);
}

double Model::copy_seconds(double bytes, const std::string &shape) const {
    return kernel_seconds(KernelWork{KernelClass::copy, DType::f32, 0, 2 * bytes, shape.empty() ? "" : "copy", shape});
}

const Link &Model::link_between(int a, int b) const {
    return shape_.node_of(a) == shape_.node_of(b) ? *intra_ : *inter_;
}

double Model::transfer_seconds(double bytes, int from, int to, const std::string &shape) const {
    // Devices sharing one machine's memory (a cpu target): a transfer is a copy
    // from one device's memory into the other's, on the cores they share.
    if (from == to || (shape_.shared_cores > 0 && shape_.node_of(from) == shape_.node_of(to)))
        return copy_seconds(bytes, shape);
    const Link &l = link_between(from, to);
    return l.latency.value + bytes / l.effective_bandwidth();
}

CollectiveTime Model::collective_seconds(Collective c, double bytes, const std::vector<int> &devices) const {
    CollectiveTime out;
    const int n = static_cast<int>(devices.size());
    if (n <= 1) return out;
    if (const auto w = shared_collective_work(shape_, c, bytes, devices)) {
        out.seconds = kernel_seconds(*w);
        return out;
    }
    bool cross = false;
    for (int d : devices) cross = cross || shape_.node_of(d) != shape_.node_of(devices.front());
    out.crosses_nodes = cross;
    double beta = intra_->effective_bandwidth(), alpha = intra_->latency.value;
    if (cross) {
        // Every device of a node drives its own inter-node link (NCCL's channels
        // spread over the NICs), so a ring crossing nodes runs at the slower of the
        // intra-node link and the per-node share of the NICs.
        int per_node = 0;
        for (int d : devices) per_node += shape_.node_of(d) == shape_.node_of(devices.front()) ? 1 : 0;
        beta = std::min(beta, inter_->effective_bandwidth() * per_node);
        alpha = std::max(alpha, inter_->latency.value);
    }
    double ring = 0, tree = -1;
    switch (c) {
        case Collective::all_reduce:
            ring = ring_all_reduce_seconds(bytes, n, alpha, beta);
            tree = tree_all_reduce_seconds(bytes, n, alpha, beta);
            break;
        case Collective::all_gather:
        case Collective::reduce_scatter: ring = ring_all_gather_seconds(bytes, n, alpha, beta); break;
        case Collective::broadcast:
            // NCCL runs broadcast on the ring only (its tree serves all-reduce).
            ring = ring_broadcast_seconds(bytes, n, alpha, beta);
            break;
    }
    out.algorithm = tree >= 0 && tree < ring ? Algorithm::tree : Algorithm::ring;
    out.seconds = out.algorithm == Algorithm::tree ? tree : ring;
    return out;
}

}  // namespace tapestry::cost
