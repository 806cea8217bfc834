// Plan JSON: written with nlohmann::json, read field by field with the JSON path
// of each problem; the embedded graph goes through the project reader.
#include "plan/plan_file.h"

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/bounded_file.h"
#include "io/project_file.h"

namespace tapestry::plan {
namespace {

using nlohmann::json;

json box_json(const ZRange &r) {
    return json::array({r.start().to_vector(), r.end().to_vector()});
}

json region_json(const Region &r) {
    json j{{"buffer", r.buffer}, {"box", box_json(r.box)}};
    if (!r.view_of.value.empty()) j["view_of"] = json{{"tensor", r.view_of.value}, {"box", box_json(r.view_box)}};
    return j;
}

std::string join(const std::string &path, const char *key) {
    return path.empty() ? std::string(key) : path + "." + key;
}

struct Reader {
    std::string where;
    std::string error;
    bool failed() const { return !error.empty(); }
    void fail(const std::string &path, const std::string &what) {
        if (error.empty()) error = where + ": " + path + ": " + what;
    }
    const json *at(const json &o, const char *key, const std::string &path, bool required = true) {
        if (failed()) return nullptr;
        if (!o.is_object()) {
            fail(path, "expected an object");
            return nullptr;
        }
        const auto it = o.find(key);
        if (it == o.end() || it->is_null()) {
            if (required) fail(join(path, key), "missing");
            return nullptr;
        }
        return &*it;
    }
    std::string str(const json &o, const char *key, const std::string &path, bool required = true) {
        const json *v = at(o, key, path, required);
        if (!v) return "";
        if (!v->is_string()) {
            fail(join(path, key), "expected a string");
            return "";
        }
        return v->get<std::string>();
    }
    std::int64_t integer(const json &o, const char *key, const std::string &path, std::int64_t lo, std::int64_t hi,
                         bool required = true, std::int64_t fallback = 0) {
        const json *v = at(o, key, path, required);
        if (!v) return fallback;
        if (!v->is_number_integer() || v->get<std::int64_t>() < lo || v->get<std::int64_t>() > hi) {
            fail(join(path, key), "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
            return fallback;
        }
        return v->get<std::int64_t>();
    }
    double number(const json &o, const char *key, const std::string &path) {
        const json *v = at(o, key, path, false);
        if (!v) return 0;
        if (!v->is_number() || v->get<double>() < 0) {
            fail(join(path, key), "expected a number ≥ 0");
            return 0;
        }
        return v->get<double>();
    }
    bool boolean(const json &o, const char *key, const std::string &path) {
        const json *v = at(o, key, path, false);
        if (!v) return false;
        if (!v->is_boolean()) fail(join(path, key), "expected true or false");
        return v->is_boolean() && v->get<bool>();
    }
    std::vector<int> ints(const json &o, const char *key, const std::string &path, int lo, int hi) {
        std::vector<int> out;
        const json *v = at(o, key, path, false);
        if (!v) return out;
        if (!v->is_array()) {
            fail(join(path, key), "expected an array of integers");
            return out;
        }
        for (size_t i = 0; i < v->size(); ++i) {
            const json &e = (*v)[i];
            if (!e.is_number_integer() || e.get<std::int64_t>() < lo || e.get<std::int64_t>() > hi) {
                fail(join(path, key) + "[" + std::to_string(i) + "]",
                     "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
                return out;
            }
            out.push_back(static_cast<int>(e.get<std::int64_t>()));
        }
        return out;
    }
    ZRange box(const json &o, const char *key, const std::string &path) {
        const json *v = at(o, key, path);
        const std::string p = join(path, key);
        if (!v) return {};
        if (!v->is_array() || v->size() != 2 || !(*v)[0].is_array() || !(*v)[1].is_array() ||
            (*v)[0].size() != (*v)[1].size() || (*v)[0].size() > 16) {
            fail(p, "expected [start, end], two coordinate lists of one rank");
            return {};
        }
        std::vector<Coord> s, e;
        for (size_t d = 0; d < (*v)[0].size(); ++d) {
            const json &a = (*v)[0][d], &b = (*v)[1][d];
            if (!a.is_number_integer() || !b.is_number_integer() || std::llabs(a.get<std::int64_t>()) > kMaxCoordinate ||
                std::llabs(b.get<std::int64_t>()) > kMaxCoordinate || b.get<std::int64_t>() < a.get<std::int64_t>()) {
                fail(p, "coordinates must be integers with start ≤ end, at most 2^40 in size");
                return {};
            }
            s.push_back(a.get<std::int64_t>());
            e.push_back(b.get<std::int64_t>());
        }
        return ZRange(ZPoint(s), ZPoint(e));
    }
};

template <typename E>
E parse_enum(Reader &r, const std::string &text, const std::string &path, const std::vector<std::pair<const char *, E>> &names) {
    std::string known;
    for (const auto &[n, e] : names) {
        if (text == n) return e;
        known += (known.empty() ? "" : ", ") + std::string(n);
    }
    if (!r.failed()) r.fail(path, "unknown value '" + text + "' (known: " + known + ")");
    return names.front().second;
}

const std::vector<std::pair<const char *, BufferKind>> kBufferKinds = {
    {"parameter", BufferKind::parameter}, {"input", BufferKind::input},         {"output", BufferKind::output},
    {"activation", BufferKind::activation}, {"received", BufferKind::received}, {"workspace", BufferKind::workspace}};
const std::vector<std::pair<const char *, StepKind>> kStepKinds = {{"kernel", StepKind::kernel},
                                                                     {"copy", StepKind::copy},
                                                                     {"send_recv", StepKind::send_recv},
                                                                     {"collective", StepKind::collective}};
const std::vector<std::pair<const char *, Stream>> kStreams = {{"compute", Stream::compute},
                                                                 {"communication", Stream::communication}};

}  // namespace

std::string plan_json(const Plan &plan, const Prediction *prediction) {
    json doc;
    doc["format"] = "tapestry-plan";
    doc["version"] = kPlanFormatVersion;
    doc["source"] = json{{"project", plan.source.project},
                         {"stage", plan.source.stage},
                         {"pass", plan.source.pass},
                         {"options", plan.source.options},
                         {"certificate", plan.source.certificate},
                         {"order", step_order_name(plan.source.order)}};
    doc["target"] = plan.target;
    doc["cluster"] = json{{"nodes", plan.cluster.nodes},
                          {"devices_per_node", plan.cluster.devices_per_node},
                          {"intra_node", plan.cluster.intra_node},
                          {"inter_node", plan.cluster.inter_node}};
    if (plan.cluster.shared_cores > 0) doc["cluster"]["shared_cores"] = plan.cluster.shared_cores;
    if (plan.cluster.wake > 0) doc["cluster"]["wake_seconds"] = plan.cluster.wake;
    json devices = json::array();
    for (const Device &d : plan.devices)
        devices.push_back(json{{"name", d.name}, {"node", d.node}, {"arena_bytes", d.arena_bytes},
                               {"resident_bytes", d.resident_bytes}, {"steps", d.steps}});
    doc["devices"] = devices;
    json buffers = json::array();
    for (const Buffer &b : plan.buffers)
        buffers.push_back(json{{"device", b.device},
                               {"tensor", b.tensor.value},
                               {"region", box_json(b.region)},
                               {"dtype", std::string(dtype_name(b.dtype))},
                               {"bytes", b.bytes},
                               {"kind", buffer_kind_name(b.kind)},
                               {"offset", b.offset},
                               {"first", b.first},
                               {"last", b.last}});
    doc["buffers"] = buffers;
    json steps = json::array();
    for (const Step &s : plan.steps) {
        json j{{"kind", step_kind_name(s.kind)},
               {"stream", s.stream == Stream::compute ? "compute" : "communication"},
               {"device", s.device},
               {"op", s.op},
               {"deps", s.deps},
               {"kernel_class", s.kernel_class},
               {"dtype", std::string(dtype_name(s.dtype))},
               {"flops", s.flops},
               {"bytes", s.bytes},
               {"predicted_seconds", s.predicted}};
        if (s.peer >= 0) j["peer"] = s.peer;
        if (!s.participants.empty()) j["participants"] = s.participants;
        if (!s.shard.empty()) j["shard"] = s.shard;
        if (!s.op_kind.empty()) j["op_kind"] = s.op_kind;
        if (!s.fused.empty()) j["fused"] = s.fused;
        if (!s.collective.empty()) j["collective"] = s.collective;
        if (!s.algorithm.empty()) j["algorithm"] = s.algorithm;
        if (s.crosses_nodes) j["crosses_nodes"] = true;
        json reads = json::array(), writes = json::array();
        for (const Region &r : s.reads) reads.push_back(region_json(r));
        for (const Region &r : s.writes) writes.push_back(region_json(r));
        j["reads"] = reads;
        j["writes"] = writes;
        steps.push_back(j);
    }
    doc["steps"] = steps;
    json outputs = json::array();
    for (const OutputPiece &o : plan.outputs)
        outputs.push_back(json{{"tensor", o.tensor.value}, {"buffer", o.buffer}, {"box", box_json(o.box)}});
    doc["outputs"] = outputs;
    doc["graph"] = json::parse(serialize_project(plan.graph));
    if (prediction) {
        json devs = json::array();
        for (size_t d = 0; d < prediction->devices.size(); ++d) {
            const DeviceLoad &l = prediction->devices[d];
            devs.push_back(json{{"device", plan.devices[d].name},
                                {"compute_seconds", l.compute},
                                {"communication_seconds", l.communication},
                                {"idle_seconds", l.idle},
                                {"peak_bytes", l.peak},
                                {"arena_bytes", l.arena},
                                {"resident_bytes", l.resident}});
        }
        doc["prediction"] = json{{"label", "prediction of the cost model (not a measurement)"},
                                 {"makespan_seconds", prediction->makespan},
                                 {"communication_seconds", prediction->comm_seconds},
                                 {"communication_bytes", prediction->comm_bytes},
                                 {"peak_bytes", prediction->peak},
                                 {"devices", devs}};
    }
    return doc.dump(2) + "\n";
}

Expected<Plan, std::string> parse_plan(const std::string &text, const std::string &where) {
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) return unexpected(where + ": not valid JSON");
    if (!doc.is_object()) return unexpected(where + ": expected a JSON object");
    Reader r{where, ""};
    if (const std::string format = r.str(doc, "format", ""); format != "tapestry-plan" && !r.failed()) {
        // What the file is instead, when it is one of ours: a plan is made from it, not read as one.
        const std::string instead =
            format == "tapestry-project" ? " (a project file: `tapestry plan PROJECT -o FILE` makes a plan of it)"
            : format == "tapestry-front" ? " (a front file: `tapestry optimize --export-plan K FILE` writes a plan of it)"
            : format == "tapestry-target" ? " (a target file: plans name a target, they are not one)"
                                          : "";
        r.fail("format", "expected \"tapestry-plan\"" +
                             (format.empty() ? std::string() : ", the file says \"" + format + "\"" + instead));
    }
    const std::int64_t version = r.integer(doc, "version", "", 1, 1 << 20);
    if (!r.failed() && version != kPlanFormatVersion)
        r.fail("version", "this build reads version " + std::to_string(kPlanFormatVersion) + ", the file is version " +
                              std::to_string(version));
    Plan plan;
    if (const json *src = r.at(doc, "source", "")) {
        plan.source.project = r.str(*src, "project", "source", false);
        plan.source.stage = static_cast<int>(r.integer(*src, "stage", "source", 0, 1 << 20, false));
        plan.source.pass = r.str(*src, "pass", "source", false);
        plan.source.options = r.str(*src, "options", "source", false);
        plan.source.certificate = r.str(*src, "certificate", "source", false);
        if (src->contains("order")) {
            const std::string order = r.str(*src, "order", "source");
            if (const auto o = parse_step_order(order)) plan.source.order = *o;
            else if (!r.failed()) r.fail("source.order", "'" + order + "' is not a step order (dependency, ready)");
        }
    }
    plan.target = r.str(doc, "target", "");
    if (const json *c = r.at(doc, "cluster", "")) {
        plan.cluster.target = plan.target;
        plan.cluster.nodes = static_cast<int>(r.integer(*c, "nodes", "cluster", 1, 1 << 16));
        plan.cluster.devices_per_node = static_cast<int>(r.integer(*c, "devices_per_node", "cluster", 1, 1 << 10));
        plan.cluster.intra_node = r.str(*c, "intra_node", "cluster");
        plan.cluster.inter_node = r.str(*c, "inter_node", "cluster", false);
        plan.cluster.shared_cores = static_cast<int>(r.integer(*c, "shared_cores", "cluster", 1, 1 << 16, false, 0));
        plan.cluster.wake = r.number(*c, "wake_seconds", "cluster");
    }
    if (const json *g = r.at(doc, "graph", "")) {
        LoadResult loaded = parse_project(g->dump(), "graph");
        if (!loaded.ok()) {
            for (const Issue &i : loaded.issues)
                if (i.severity == Severity::error) {
                    // "graph: $.tensors[0].shape: …" from the project reader.
                    r.fail("graph", i.message.rfind("graph: ", 0) == 0 ? i.message.substr(7) : i.message);
                    break;
                }
        }
        plan.graph = std::move(loaded.graph);
    }
    const json *devices = r.at(doc, "devices", "");
    const json *buffers = r.at(doc, "buffers", "");
    const json *steps = r.at(doc, "steps", "");
    const json *outputs = r.at(doc, "outputs", "");
    if (r.failed()) return unexpected(r.error);
    for (const auto &[name, v] : {std::pair{"devices", devices}, {"buffers", buffers}, {"steps", steps}, {"outputs", outputs}})
        if (!v->is_array()) return unexpected(where + ": " + name + ": expected an array");
    const int ndev = static_cast<int>(devices->size());
    if (ndev < 1 || ndev != plan.cluster.devices())
        return unexpected(where + ": devices: " + std::to_string(ndev) + " devices, but the cluster has " +
                          std::to_string(plan.cluster.devices()));
    const int nbuf = static_cast<int>(buffers->size());
    const int nsteps = static_cast<int>(steps->size());
    for (int d = 0; d < ndev && !r.failed(); ++d) {
        const std::string p = "devices[" + std::to_string(d) + "]";
        const json &j = (*devices)[static_cast<size_t>(d)];
        Device dev;
        dev.name = r.str(j, "name", p);
        dev.node = static_cast<int>(r.integer(j, "node", p, 0, plan.cluster.nodes - 1));
        dev.arena_bytes = r.integer(j, "arena_bytes", p, 0, kMaxElements);
        dev.resident_bytes = r.integer(j, "resident_bytes", p, 0, kMaxElements);
        dev.steps = r.ints(j, "steps", p, 0, std::max(0, nsteps - 1));
        plan.devices.push_back(std::move(dev));
    }
    for (int b = 0; b < nbuf && !r.failed(); ++b) {
        const std::string p = "buffers[" + std::to_string(b) + "]";
        const json &j = (*buffers)[static_cast<size_t>(b)];
        Buffer buf;
        buf.device = static_cast<int>(r.integer(j, "device", p, 0, ndev - 1));
        buf.kind = parse_enum(r, r.str(j, "kind", p), p + ".kind", kBufferKinds);
        buf.tensor = TensorId(r.str(j, "tensor", p));
        const bool workspace = buf.kind == BufferKind::workspace;
        if (!r.failed() && workspace && !buf.tensor.value.empty())
            r.fail(p + ".tensor", "a workspace buffer holds no tensor: expected \"\"");
        if (!r.failed() && !workspace && !plan.graph.find_tensor(buf.tensor))
            r.fail(p + ".tensor", "'" + buf.tensor.value + "' is not a tensor of the plan's graph");
        buf.region = r.box(j, "region", p);
        const std::string dt = r.str(j, "dtype", p);
        if (!r.failed()) {
            auto parsed = parse_dtype(dt);
            if (!parsed) r.fail(p + ".dtype", "unknown dtype '" + dt + "'");
            else buf.dtype = *parsed;
        }
        if (!r.failed() && workspace && (buf.dtype != DType::boolean || buf.region.rank() != 1))
            r.fail(p + ".region", "a workspace buffer is a one-dimensional region of bytes (dtype bool)");
        buf.bytes = r.integer(j, "bytes", p, 0, kMaxElements);
        if (!r.failed() && buf.bytes != size_mul(buf.region.size(), dtype_bytes(buf.dtype)))
            r.fail(p + ".bytes", std::to_string(buf.bytes) + " is not the size of its region (" +
                                     std::to_string(size_mul(buf.region.size(), dtype_bytes(buf.dtype))) + " bytes)");
        buf.offset = r.integer(j, "offset", p, 0, kMaxElements);
        // The steps that use it first and last (both -1: none does).
        buf.first = static_cast<int>(r.integer(j, "first", p, -1, nsteps - 1));
        buf.last = static_cast<int>(r.integer(j, "last", p, -1, nsteps - 1));
        if (!r.failed() && (buf.first < 0) != (buf.last < 0))
            r.fail(p + ".last", "first and last are both -1 (no step uses the buffer) or both steps");
        if (!r.failed() && buf.last < buf.first)
            r.fail(p + ".last", "step " + std::to_string(buf.last) + " comes before the first, step " +
                                    std::to_string(buf.first));
        plan.buffers.push_back(std::move(buf));
    }
    auto regions = [&](const json &j, const char *key, const std::string &p) {
        std::vector<Region> out;
        const json *v = r.at(j, key, p);
        if (!v) return out;
        if (!v->is_array()) {
            r.fail(join(p, key), "expected an array");
            return out;
        }
        for (size_t i = 0; i < v->size() && !r.failed(); ++i) {
            const std::string rp = join(p, key) + "[" + std::to_string(i) + "]";
            Region reg;
            reg.buffer = static_cast<int>(r.integer((*v)[i], "buffer", rp, 0, std::max(0, nbuf - 1)));
            reg.box = r.box((*v)[i], "box", rp);
            if (!r.failed() && reg.box.rank() != plan.buffers[static_cast<size_t>(reg.buffer)].region.rank())
                r.fail(rp + ".box", "rank differs from buffer " + std::to_string(reg.buffer) + "'s");
            if (const json *view = r.at((*v)[i], "view_of", rp, false); view != nullptr && !r.failed()) {
                const std::string vp = rp + ".view_of";
                if (std::string_view(key) != "reads") r.fail(vp, "only a read stands for another tensor's selection");
                reg.view_of = TensorId(r.str(*view, "tensor", vp));
                reg.view_box = r.box(*view, "box", vp);
                const Tensor *t = r.failed() ? nullptr : plan.graph.find_tensor(reg.view_of);
                if (!r.failed() && t == nullptr)
                    r.fail(vp + ".tensor", "'" + reg.view_of.value + "' is not a tensor of the plan's graph");
                else if (!r.failed() && reg.view_box.shape() != reg.box.shape())
                    r.fail(vp + ".box", reg.view_box.to_string() + " is not the shape of the box read, " + reg.box.to_string());
            }
            out.push_back(reg);
        }
        return out;
    };
    for (int i = 0; i < nsteps && !r.failed(); ++i) {
        const std::string p = "steps[" + std::to_string(i) + "]";
        const json &j = (*steps)[static_cast<size_t>(i)];
        Step s;
        s.kind = parse_enum(r, r.str(j, "kind", p), p + ".kind", kStepKinds);
        s.stream = parse_enum(r, r.str(j, "stream", p), p + ".stream", kStreams);
        s.device = static_cast<int>(r.integer(j, "device", p, 0, ndev - 1));
        s.peer = static_cast<int>(r.integer(j, "peer", p, 0, ndev - 1, false, -1));
        s.participants = r.ints(j, "participants", p, 0, ndev - 1);
        s.op = r.str(j, "op", p);
        s.shard = r.str(j, "shard", p, false);
        s.op_kind = r.str(j, "op_kind", p, false);
        if (const json *f = r.at(j, "fused", p, false)) {
            if (!f->is_array()) r.fail(p + ".fused", "expected an array of kinds");
            else
                for (const json &k : *f) s.fused.push_back(k.is_string() ? k.get<std::string>() : "");
        }
        s.collective = r.str(j, "collective", p, false);
        s.algorithm = r.str(j, "algorithm", p, false);
        s.crosses_nodes = r.boolean(j, "crosses_nodes", p);
        s.deps = r.ints(j, "deps", p, 0, std::max(0, i - 1));
        if (!r.failed() && i == 0 && !s.deps.empty()) r.fail(p + ".deps", "the first step cannot depend on another");
        s.kernel_class = r.str(j, "kernel_class", p);
        if (!r.failed() && !cost::parse_kernel_class(s.kernel_class))
            r.fail(p + ".kernel_class", "unknown kernel class '" + s.kernel_class + "'");
        const std::string dt = r.str(j, "dtype", p);
        if (!r.failed()) {
            auto parsed = parse_dtype(dt);
            if (!parsed) r.fail(p + ".dtype", "unknown dtype '" + dt + "'");
            else s.dtype = *parsed;
        }
        s.flops = r.number(j, "flops", p);
        s.bytes = r.number(j, "bytes", p);
        s.predicted = r.number(j, "predicted_seconds", p);
        s.reads = regions(j, "reads", p);
        s.writes = regions(j, "writes", p);
        if (!r.failed() && s.kind == StepKind::send_recv && s.peer < 0) r.fail(p + ".peer", "missing (a send_recv needs its receiver)");
        if (!r.failed() && s.kind == StepKind::collective && s.participants.size() < 2)
            r.fail(p + ".participants", "a collective needs two or more participants");
        plan.steps.push_back(std::move(s));
    }
    for (size_t i = 0; i < outputs->size() && !r.failed(); ++i) {
        const std::string p = "outputs[" + std::to_string(i) + "]";
        const json &j = (*outputs)[i];
        OutputPiece o;
        o.tensor = TensorId(r.str(j, "tensor", p));
        o.buffer = static_cast<int>(r.integer(j, "buffer", p, 0, std::max(0, nbuf - 1)));
        o.box = r.box(j, "box", p);
        plan.outputs.push_back(std::move(o));
    }
    if (r.failed()) return unexpected(r.error);
    return plan;
}

Expected<Plan, std::string> load_plan(const std::string &path) {
    auto text = read_regular_file(path, kGiB, "a plan file");
    if (!text) return unexpected(path + ": " + text.error());
    return parse_plan(*text, path);
}

std::string save_plan(const Plan &plan, const std::string &path, const Prediction *prediction) {
    return write_file_atomically(path, plan_json(plan, prediction));
}

}  // namespace tapestry::plan
