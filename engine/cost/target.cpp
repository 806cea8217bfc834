// Target JSON (docs/targets.md): parsed field by field, every error naming the
// file and the JSON path; the built-in targets come from resources/targets/,
// compiled in by engine/CMakeLists.txt (builtin_targets.cpp).
#include "cost/target.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "io/bounded_file.h"

namespace tapestry::cost {

// Generated from resources/targets/*.json (engine/CMakeLists.txt).
const std::vector<std::pair<std::string, std::string>> &builtin_target_texts();

namespace {

using nlohmann::json;
constexpr const char *kClassNames[kKernelClasses] = {"gemm", "convolution", "elementwise", "reduction", "copy"};
constexpr double kMaxWorkspaceBytes = 64.0 * 1024 * 1024 * 1024;
const std::vector<std::string> kLinkClasses = {"nvlink", "nvswitch", "pcie", "infiniband", "roce",
                                               "host_shared_memory"};
const std::vector<std::string> kPeakKeys = {"f32", "tf32", "bf16", "f16", "fp8"};

// A member's JSON path: "device.memory_bytes", "name" at the top (no leading dot).
std::string member_path(const std::string &path, const std::string &key) {
    return path.empty() ? key : path + "." + key;
}

struct Reader {
    std::string where;
    std::string error;
    bool failed() const { return !error.empty(); }
    void fail(const std::string &path, const std::string &what) {
        if (error.empty()) error = where + ": " + path + ": " + what;
    }
    const json *member(const json &o, const std::string &key, const std::string &path, bool required) {
        if (!o.is_object()) {
            fail(path, "expected an object");
            return nullptr;
        }
        const auto it = o.find(key);
        if (it == o.end() || it->is_null()) {
            if (required) fail(member_path(path, key), "missing");
            return nullptr;
        }
        return &*it;
    }
    std::string string(const json &o, const std::string &key, const std::string &path, bool required) {
        const json *v = member(o, key, path, required);
        if (!v) return "";
        if (!v->is_string()) {
            fail(member_path(path, key), "expected a string");
            return "";
        }
        return v->get<std::string>();
    }
    double number(const json &v, const std::string &path) {
        if (!v.is_number()) {
            fail(path, "expected a number");
            return 0;
        }
        const double d = v.get<double>();
        if (!std::isfinite(d) || d < 0) fail(path, "expected a finite number ≥ 0");
        return d;
    }
    int integer(const json &o, const std::string &key, const std::string &path, int lo, int hi) {
        const json *v = member(o, key, path, true);
        if (!v) return lo;
        if (!v->is_number_integer() || v->get<std::int64_t>() < lo || v->get<std::int64_t>() > hi) {
            fail(member_path(path, key), "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
            return lo;
        }
        return static_cast<int>(v->get<std::int64_t>());
    }
    Figure figure(const json &o, const std::string &key, const std::string &path, bool required) {
        Figure f;
        const json *v = member(o, key, path, required);
        if (!v) return f;
        const std::string p = member_path(path, key);
        if (!v->is_object()) {
            fail(p, "expected {\"value\": number, \"source\": id}");
            return f;
        }
        const json *value = member(*v, "value", p, true);
        if (value) f.value = number(*value, p + ".value");
        f.source = string(*v, "source", p, true);
        f.present = !failed();
        return f;
    }
};

json figure_json(const Figure &f) {
    return json{{"value", f.value}, {"source", f.source}};
}

}  // namespace

const char *kernel_class_name(KernelClass c) {
    return kClassNames[static_cast<int>(c)];
}

std::optional<KernelClass> parse_kernel_class(const std::string &name) {
    for (int i = 0; i < kKernelClasses; ++i)
        if (name == kClassNames[i]) return static_cast<KernelClass>(i);
    return std::nullopt;
}

double EfficiencyCurve::at(double size) const {
    if (points.empty()) return 1.0;
    if (size <= points.front().first) return points.front().second;
    if (size >= points.back().first) return points.back().second;
    const double x = std::log10(size);
    for (size_t i = 1; i < points.size(); ++i)
        if (size <= points[i].first) {
            const double x0 = std::log10(points[i - 1].first), x1 = std::log10(points[i].first);
            const double t = x1 > x0 ? (x - x0) / (x1 - x0) : 1.0;
            return points[i - 1].second + t * (points[i].second - points[i - 1].second);
        }
    return points.back().second;
}

const Link *Target::link(const std::string &n) const {
    for (const Link &l : links)
        if (l.name == n) return &l;
    return nullptr;
}

const Cluster *Target::cluster(const std::string &n) const {
    for (const Cluster &c : clusters)
        if (c.name == n) return &c;
    return nullptr;
}

double Target::peak_flops(DType dtype) const {
    const char *key = dtype == DType::bf16 ? "bf16" : dtype == DType::f16 ? "f16" : "f32";
    const auto it = device.peak_flops.find(key);
    if (it != device.peak_flops.end() && it->second.present) return it->second.value;
    const auto f32 = device.peak_flops.find("f32");
    return f32 != device.peak_flops.end() && f32->second.present ? f32->second.value : 0.0;
}

std::string Target::missing_figures() const {
    std::vector<std::string> missing;
    const auto f32 = device.peak_flops.find("f32");
    if (f32 == device.peak_flops.end() || !f32->second.present || f32->second.value <= 0)
        missing.push_back("peak_flops.f32");
    if (!device.memory_bytes.present || device.memory_bytes.value <= 0) missing.push_back("memory_bytes");
    if (!device.memory_bandwidth.present || device.memory_bandwidth.value <= 0)
        missing.push_back("memory_bandwidth");
    if (!device.launch_overhead.present) missing.push_back("launch_overhead");
    std::string out;
    for (const std::string &m : missing) out += (out.empty() ? "" : ", ") + m;
    return out;
}

Expected<Target, std::string> parse_target(const std::string &text, const std::string &where) {
    Reader r{where, ""};
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) return unexpected(where + ": not valid JSON");
    if (!doc.is_object()) return unexpected(where + ": expected a JSON object");
    Target t;
    if (r.string(doc, "format", "", true) != "tapestry-target" && !r.failed())
        r.fail("format", "expected \"tapestry-target\"");
    const json *version = r.member(doc, "version", "", true);
    if (version && (!version->is_number_integer() || version->get<std::int64_t>() != 1))
        r.fail("version", "this build reads version 1");
    t.name = r.string(doc, "name", "", true);
    if (!r.failed() && (t.name.empty() || !std::all_of(t.name.begin(), t.name.end(), [](char c) {
                            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                        })))
        r.fail("name", "expected lower-case letters, digits and '-'");
    t.title = r.string(doc, "title", "", true);
    t.kind = r.string(doc, "kind", "", true);
    if (!r.failed() && t.kind != "gpu" && t.kind != "cpu") r.fail("kind", "expected \"gpu\" or \"cpu\"");
    if (const json *m = r.member(doc, "measured", "", false)) {
        if (!m->is_array()) r.fail("measured", "expected an array of field names");
        else
            for (size_t i = 0; i < m->size(); ++i) {
                if (!(*m)[i].is_string()) r.fail("measured[" + std::to_string(i) + "]", "expected a string");
                else t.measured.push_back((*m)[i].get<std::string>());
            }
    }
    auto is_measured = [&](const std::string &field) {
        return std::find(t.measured.begin(), t.measured.end(), field) != t.measured.end();
    };
    if (const json *sources = r.member(doc, "sources", "", true)) {
        if (!sources->is_object()) r.fail("sources", "expected an object");
        else
            for (const auto &[id, s] : sources->items()) {
                const std::string p = "sources." + id;
                Source src;
                src.title = r.string(s, "title", p, true);
                src.url = r.string(s, "url", p, false);
                src.kind = r.string(s, "kind", p, true);
                src.note = r.string(s, "note", p, false);
                t.sources[id] = src;
            }
    }
    if (const json *dev = r.member(doc, "device", "", true)) {
        const bool gpu = t.kind == "gpu";
        if (const json *peaks = r.member(*dev, "peak_flops", "device", true)) {
            if (!peaks->is_object()) r.fail("device.peak_flops", "expected an object");
            else
                for (const auto &[key, v] : peaks->items()) {
                    if (std::find(kPeakKeys.begin(), kPeakKeys.end(), key) == kPeakKeys.end()) {
                        r.fail("device.peak_flops." + key, "unknown dtype (known: f32, tf32, bf16, f16, fp8)");
                        break;
                    }
                    t.device.peak_flops[key] = r.figure(*peaks, key, "device.peak_flops", true);
                }
            if (!r.failed() && !t.device.peak_flops.count("f32") && !is_measured("peak_flops.f32"))
                r.fail("device.peak_flops.f32", "missing");
        }
        auto device_figure = [&](const std::string &key) {
            return r.figure(*dev, key, "device", gpu || !is_measured(key));
        };
        t.device.memory_bytes = device_figure("memory_bytes");
        t.device.memory_bandwidth = device_figure("memory_bandwidth");
        t.device.launch_overhead = device_figure("launch_overhead");
        t.device.power = r.figure(*dev, "power", "device", false);
        t.device.cores = r.figure(*dev, "cores", "device", false);
        if (!r.failed() && t.device.cores.present && (t.device.cores.value < 1 || t.device.cores.value > 65536))
            r.fail("device.cores.value", "expected a core count from 1 to 65536");
        if (const json *ws = r.member(*dev, "workspace", "device", false)) {
            if (!ws->is_object()) r.fail("device.workspace", "expected an object of kernel classes");
            else
                for (const auto &[key, v] : ws->items()) {
                    const auto c = parse_kernel_class(key);
                    if (!c) {
                        r.fail("device.workspace." + key,
                               "unknown kernel class (known: gemm, convolution, elementwise, reduction, copy)");
                        break;
                    }
                    t.device.workspace[static_cast<size_t>(*c)] = r.figure(*ws, key, "device.workspace", true);
                    if (!r.failed() && t.device.workspace[static_cast<size_t>(*c)].value > kMaxWorkspaceBytes)
                        r.fail("device.workspace." + key + ".value", "more than 64 GiB of workspace");
                }
        }
        if (const json *eff = r.member(*dev, "efficiency", "device", true)) {
            for (int c = 0; c < kKernelClasses && !r.failed(); ++c) {
                const std::string p = std::string("device.efficiency.") + kClassNames[c];
                const json *curve = r.member(*eff, kClassNames[c], "device.efficiency", true);
                if (!curve) break;
                EfficiencyCurve &e = t.device.efficiency[static_cast<size_t>(c)];
                const std::string by = r.string(*curve, "by", p, true);
                if (!r.failed() && by != "flops" && by != "bytes") r.fail(p + ".by", "expected \"flops\" or \"bytes\"");
                e.by_flops = by == "flops";
                e.source = r.string(*curve, "source", p, true);
                const json *points = r.member(*curve, "points", p, true);
                if (!points) break;
                if (!points->is_array() || points->empty()) {
                    r.fail(p + ".points", "expected a non-empty array of [size, efficiency]");
                    break;
                }
                for (size_t i = 0; i < points->size() && !r.failed(); ++i) {
                    const std::string pp = p + ".points[" + std::to_string(i) + "]";
                    const json &pt = (*points)[i];
                    if (!pt.is_array() || pt.size() != 2) {
                        r.fail(pp, "expected [size, efficiency]");
                        break;
                    }
                    const double size = r.number(pt[0], pp + "[0]"), eff_v = r.number(pt[1], pp + "[1]");
                    if (r.failed()) break;
                    if (size <= 0 || (!e.points.empty() && size <= e.points.back().first))
                        r.fail(pp + "[0]", "sizes must be positive and strictly increasing");
                    else if (eff_v <= 0 || eff_v > 1)
                        r.fail(pp + "[1]", "efficiency must be in (0, 1]");
                    e.points.emplace_back(size, eff_v);
                }
            }
        }
    }
    if (const json *links = r.member(doc, "links", "", true)) {
        if (!links->is_array()) r.fail("links", "expected an array");
        else
            for (size_t i = 0; i < links->size() && !r.failed(); ++i) {
                const std::string p = "links[" + std::to_string(i) + "]";
                const json &l = (*links)[i];
                Link link;
                link.name = r.string(l, "name", p, true);
                link.link_class = r.string(l, "class", p, true);
                if (!r.failed() && std::find(kLinkClasses.begin(), kLinkClasses.end(), link.link_class) ==
                                       kLinkClasses.end())
                    r.fail(p + ".class", "unknown link class '" + link.link_class +
                                             "' (known: nvlink, nvswitch, pcie, infiniband, roce, host_shared_memory)");
                link.bandwidth = r.figure(l, "bandwidth", p, true);
                link.latency = r.figure(l, "latency", p, true);
                link.efficiency = r.figure(l, "efficiency", p, false);
                if (!r.failed() && link.bandwidth.value <= 0) r.fail(p + ".bandwidth.value", "must be positive");
                if (!r.failed() && link.efficiency.present && (link.efficiency.value <= 0 || link.efficiency.value > 1))
                    r.fail(p + ".efficiency.value", "must be in (0, 1]");
                if (!r.failed() && t.link(link.name)) r.fail(p + ".name", "duplicate link '" + link.name + "'");
                t.links.push_back(link);
            }
    }
    if (const json *clusters = r.member(doc, "clusters", "", true)) {
        if (!clusters->is_array() || clusters->empty()) r.fail("clusters", "expected a non-empty array");
        else
            for (size_t i = 0; i < clusters->size() && !r.failed(); ++i) {
                const std::string p = "clusters[" + std::to_string(i) + "]";
                const json &c = (*clusters)[i];
                Cluster cl;
                cl.name = r.string(c, "name", p, true);
                cl.title = r.string(c, "title", p, false);
                cl.nodes = r.integer(c, "nodes", p, 1, 1 << 16);
                cl.devices_per_node = r.integer(c, "devices_per_node", p, 1, 1 << 10);
                cl.intra_node = r.string(c, "intra_node", p, true);
                cl.inter_node = r.string(c, "inter_node", p, false);
                if (!r.failed() && !t.link(cl.intra_node))
                    r.fail(p + ".intra_node", "no link named '" + cl.intra_node + "'");
                if (!r.failed() && !cl.inter_node.empty() && !t.link(cl.inter_node))
                    r.fail(p + ".inter_node", "no link named '" + cl.inter_node + "'");
                if (!r.failed() && cl.nodes > 1 && cl.inter_node.empty())
                    r.fail(p + ".inter_node", "a cluster of several nodes needs an inter-node link");
                t.clusters.push_back(cl);
            }
    }
    if (r.failed()) return unexpected(r.error);
    // Every figure names a source the file lists (or was measured here).
    auto check_source = [&](const std::string &path, const std::string &source) {
        if (!source.empty() && source != "measured" && !t.sources.count(source))
            r.fail(path + ".source", "'" + source + "' is not in \"sources\"");
    };
    for (const auto &[k, f] : t.device.peak_flops) check_source("device.peak_flops." + k, f.source);
    check_source("device.memory_bytes", t.device.memory_bytes.source);
    check_source("device.memory_bandwidth", t.device.memory_bandwidth.source);
    check_source("device.launch_overhead", t.device.launch_overhead.source);
    check_source("device.power", t.device.power.source);
    check_source("device.cores", t.device.cores.source);
    for (int c = 0; c < kKernelClasses; ++c) {
        check_source(std::string("device.efficiency.") + kClassNames[c], t.device.efficiency[static_cast<size_t>(c)].source);
        check_source(std::string("device.workspace.") + kClassNames[c], t.device.workspace[static_cast<size_t>(c)].source);
    }
    for (size_t i = 0; i < t.links.size(); ++i) {
        const std::string p = "links[" + std::to_string(i) + "]";
        check_source(p + ".bandwidth", t.links[i].bandwidth.source);
        check_source(p + ".latency", t.links[i].latency.source);
        check_source(p + ".efficiency", t.links[i].efficiency.source);
    }
    if (r.failed()) return unexpected(r.error);
    t.origin = where;
    return t;
}

Expected<Target, std::string> load_target(const std::string &path) {
    auto text = read_regular_file(path, 4 * kMiB, "a target file");
    if (!text) return unexpected(path + ": " + text.error());
    return parse_target(*text, path);
}

std::string target_json(const Target &t) {
    json doc;
    doc["format"] = "tapestry-target";
    doc["version"] = 1;
    doc["name"] = t.name;
    doc["title"] = t.title;
    doc["kind"] = t.kind;
    if (!t.measured.empty()) doc["measured"] = t.measured;
    json dev;
    json peaks = json::object();
    for (const auto &[k, f] : t.device.peak_flops)
        if (f.present) peaks[k] = figure_json(f);
    dev["peak_flops"] = peaks;
    if (t.device.memory_bytes.present) dev["memory_bytes"] = figure_json(t.device.memory_bytes);
    if (t.device.memory_bandwidth.present) dev["memory_bandwidth"] = figure_json(t.device.memory_bandwidth);
    if (t.device.launch_overhead.present) dev["launch_overhead"] = figure_json(t.device.launch_overhead);
    if (t.device.power.present) dev["power"] = figure_json(t.device.power);
    if (t.device.cores.present) dev["cores"] = figure_json(t.device.cores);
    json eff;
    for (int c = 0; c < kKernelClasses; ++c) {
        const EfficiencyCurve &e = t.device.efficiency[static_cast<size_t>(c)];
        json pts = json::array();
        for (const auto &[s, v] : e.points) pts.push_back(json::array({s, v}));
        eff[kClassNames[c]] = json{{"by", e.by_flops ? "flops" : "bytes"}, {"points", pts}, {"source", e.source}};
    }
    dev["efficiency"] = eff;
    json ws = json::object();
    for (int c = 0; c < kKernelClasses; ++c)
        if (t.device.workspace[static_cast<size_t>(c)].present)
            ws[kClassNames[c]] = figure_json(t.device.workspace[static_cast<size_t>(c)]);
    if (!ws.empty()) dev["workspace"] = ws;
    doc["device"] = dev;
    json links = json::array();
    for (const Link &l : t.links) {
        json j{{"name", l.name}, {"class", l.link_class}, {"bandwidth", figure_json(l.bandwidth)},
               {"latency", figure_json(l.latency)}};
        if (l.efficiency.present) j["efficiency"] = figure_json(l.efficiency);
        links.push_back(j);
    }
    doc["links"] = links;
    json clusters = json::array();
    for (const Cluster &c : t.clusters)
        clusters.push_back(json{{"name", c.name},
                                {"title", c.title},
                                {"nodes", c.nodes},
                                {"devices_per_node", c.devices_per_node},
                                {"intra_node", c.intra_node},
                                {"inter_node", c.inter_node.empty() ? json(nullptr) : json(c.inter_node)}});
    doc["clusters"] = clusters;
    json sources = json::object();
    for (const auto &[id, s] : t.sources) {
        json j{{"title", s.title}, {"kind", s.kind}};
        if (!s.url.empty()) j["url"] = s.url;
        if (!s.note.empty()) j["note"] = s.note;
        sources[id] = j;
    }
    doc["sources"] = sources;
    return doc.dump(2) + "\n";
}

const std::vector<std::string> &builtin_target_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto &[name, text] : builtin_target_texts()) out.push_back(name);
        return out;
    }();
    return names;
}

Expected<Target, std::string> builtin_target(const std::string &name) {
    const auto &texts = builtin_target_texts();
    const std::pair<std::string, std::string> *match = nullptr;
    int prefix_matches = 0;
    for (const auto &entry : texts) {
        if (entry.first == name) {
            match = &entry;
            prefix_matches = 1;
            break;
        }
        if (entry.first.rfind(name, 0) == 0) {
            match = &entry;
            ++prefix_matches;
        }
    }
    std::string known;
    for (const auto &entry : texts) known += (known.empty() ? "" : ", ") + entry.first;
    if (!match || prefix_matches != 1)
        return unexpected("unknown target '" + name + "' (built in: " + known + "; or a path to a target file)");
    auto t = parse_target(match->second, "resources/targets/" + match->first + ".json");
    if (t) t->origin = "built-in";
    return t;
}

Target measured_target(Target t, const HostFigures &f) {
    auto set = [](Figure &fig, double v) {
        if (v <= 0) return;
        fig.value = v;
        fig.source = "measured";
        fig.present = true;
    };
    set(t.device.peak_flops["f32"], f.f32_flops);
    if (f.bf16_flops > 0) set(t.device.peak_flops["bf16"], f.bf16_flops);
    else t.device.peak_flops.erase("bf16");
    set(t.device.memory_bandwidth, f.memory_bandwidth);
    set(t.device.memory_bytes, f.memory_bytes);
    set(t.device.launch_overhead, f.launch_overhead);
    set(t.device.cores, f.cores);
    // The host's shared-memory link moves data at the measured copy bandwidth.
    for (Link &l : t.links)
        if (l.link_class == "host_shared_memory" && f.memory_bandwidth > 0) set(l.bandwidth, f.memory_bandwidth / 2);
    t.measured.clear();
    t.sources["measured"] = Source{"measured on this machine", "", "measurement", f.note};
    t.origin = "measured";
    return t;
}

int ClusterShape::threads_per_device() const {
    return shared_cores > 0 ? std::max(1, shared_cores / std::max(1, devices())) : 0;
}

int ClusterShape::concurrent_steps() const {
    return shared_cores > 0 ? std::max(1, shared_cores / threads_per_device()) : 0;
}

std::string ClusterShape::device_name(int d) const {
    return std::to_string(node_of(d)) + ":" + std::to_string(d % devices_per_node);
}

Expected<ClusterShape, std::string> cluster_shape(const Target &t, int devices, int nodes) {
    if (devices < 1) return unexpected("--devices must be at least 1");
    if (t.clusters.empty()) return unexpected("target '" + t.name + "' has no cluster");
    // The node size: the largest devices_per_node of the target's clusters, unless
    // the user says how many nodes.
    const Cluster *multi = nullptr;
    const Cluster *single = &t.clusters.front();
    for (const Cluster &c : t.clusters) {
        if (!c.inter_node.empty() && !multi) multi = &c;
        if (c.devices_per_node > single->devices_per_node) single = &c;
    }
    ClusterShape s;
    s.target = t.name;
    if (nodes <= 0) nodes = (devices + single->devices_per_node - 1) / single->devices_per_node;
    if (devices % nodes != 0)
        return unexpected(std::to_string(devices) + " devices do not spread evenly over " + std::to_string(nodes) +
                          " nodes");
    s.nodes = nodes;
    s.devices_per_node = devices / nodes;
    const Cluster &base = nodes > 1 && multi ? *multi : *single;
    s.intra_node = base.intra_node;
    s.inter_node = base.inter_node;
    if (t.kind == "cpu" && t.device.cores.present) s.shared_cores = static_cast<int>(t.device.cores.value);
    if (nodes > 1 && s.inter_node.empty())
        return unexpected("target '" + t.name + "' has no inter-node link, so it cannot span " + std::to_string(nodes) +
                          " nodes");
    return s;
}

}  // namespace tapestry::cost
