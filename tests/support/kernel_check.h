// Test harness for CPU kernels: builds one kernel (op kind, params, operand
// shapes, an index sub-range, optional fused epilogues) through cpu::make_kernel —
// as the executor does, so a dtype fallback counts — over random TensorData
// buffers, runs it on strided views of the sub-range's selections, and compares
// with the op library's double-precision reference kernel over the same points.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/resolve.h"
#include "graph/tensor_data.h"
#include "ops/library.h"
#include "ops/reference.h"
#include "runtime/cpu/kernel.h"

namespace tapestry::test {

struct KernelCase {
    std::string kind;
    Params params;                                                   // without defaults (the harness fills them)
    std::vector<std::pair<std::string, std::vector<ZPoint>>> inputs;  // port → operand shapes (absent ports omitted)
    std::optional<ZRange> index_range;                               // default: the whole index space
    DType dtype = DType::f32;                                        // of the floating operands
    // Values for some operands (port → per-operand data), e.g. integer ids; others are random.
    std::map<std::string, std::vector<TensorData>> data;
    // Fused epilogues; a binary one reads extra operand `extra_input` (shape from
    // epilogue_shapes, projection relative to the op's index space).
    std::vector<cpu::Epilogue> epilogues;
    std::vector<ZPoint> epilogue_shapes;
    double lo = -1.0, hi = 1.0;  // float inputs are uniform in [lo, hi) (lo > 0 for sqrt, pow)
    int threads = 1;
    // The kernel to check instead of cpu::find_kernel(kind) (one implementation
    // of a kind among several, e.g. our Winograd convolution on any ISA).
    const cpu::KernelFactory *factory = nullptr;
    std::uint64_t seed = 1;
    double rtol = 1e-4;
    double atol = 1e-5;
};

struct KernelCheckResult {
    bool ok = false;
    std::string message;  // why it failed, or a summary
    double max_abs_error = 0;
    std::int64_t compared = 0;  // elements compared
    std::string fallback;       // cpu::MadeKernel::fallback: the kernel computed 16-bit floats in f32, and why
};

// Uniform values in [-1, 1) (or [lo, hi) when given), rounded to the dtype.
inline TensorData random_tensor(DType t, const ZPoint &shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
    TensorData d(t, shape);
    std::mt19937_64 rng(seed);
    if (dtype_is_float(t)) {
        std::uniform_real_distribution<double> u(lo, hi);
        for (std::int64_t i = 0; i < d.element_count(); ++i) d.set(i, u(rng));
    } else {
        std::uniform_int_distribution<std::int64_t> u(static_cast<std::int64_t>(lo),
                                                      std::max(static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi) - 1));
        for (std::int64_t i = 0; i < d.element_count(); ++i) d.set(i, static_cast<double>(u(rng)));
    }
    return d;
}

// A strided view of `sel` (zero-origin coordinates) inside a dense buffer.
inline cpu::View view_of(TensorData &buffer, const ZRange &sel) {
    cpu::View v;
    v.dtype = buffer.dtype;
    v.shape = sel.shape();
    v.strides.assign(static_cast<size_t>(buffer.shape.rank()), 1);
    std::int64_t acc = 1;
    for (int d = buffer.shape.rank() - 1; d >= 0; --d) {
        v.strides[static_cast<size_t>(d)] = acc;
        acc *= std::max<std::int64_t>(buffer.shape[d], 1);
    }
    std::int64_t offset = 0;
    if (!sel.empty())
        for (int d = 0; d < sel.rank(); ++d) offset += sel.start()[d] * v.strides[static_cast<size_t>(d)];
    v.data = buffer.bytes.data() + offset * dtype_bytes(buffer.dtype);
    return v;
}

inline RefArray to_ref(const TensorData &d) {
    RefArray a(ZRange::of_shape(d.shape));
    for (std::int64_t i = 0; i < d.element_count(); ++i) a.data[static_cast<size_t>(i)] = d.get(i);
    return a;
}

namespace detail {

// Applies one epilogue to `y` (the zero-origin values of the output selection) with
// the op library's reference kernel of the epilogue's kind.
inline std::optional<std::string> apply_reference_epilogue(const OpLibrary &lib, const cpu::Epilogue &e, RefArray &y,
                                                           const RefArray *other, DType dtype) {
    const OpDef *def = lib.find(e.kind);
    if (!def) return "epilogue kind '" + e.kind + "' is not in the op library";
    std::vector<PortTypes> ports;
    if (other) {
        ports.push_back({"a", {OperandType{dtype, y.range.shape()}}});
        ports.push_back({"b", {OperandType{dtype, other->range.shape()}}});
    } else {
        ports.push_back({"x", {OperandType{dtype, y.range.shape()}}});
    }
    auto d = lib.derive(e.kind, e.params, ports);
    if (!d) return "epilogue '" + e.kind + "': " + d.error().message;
    const Params params = lib.with_defaults(*def, e.params);
    RefArray out(ZRange::of_shape(d->outputs[0].operands[0].shape), std::numeric_limits<double>::quiet_NaN());
    if (!(out.range == y.range)) return "epilogue '" + e.kind + "' changes the output shape";
    std::vector<std::vector<const RefArray *>> ins;
    ins.push_back({&y});
    if (other) ins.push_back({other});
    RefContext ctx{params, *d, ins, {{&out}}, d->signature.index_space, nullptr};
    def->reference(ctx);
    y = std::move(out);
    return std::nullopt;
}

}  // namespace detail

inline KernelCheckResult check_kernel(const KernelCase &c) {
    KernelCheckResult r;
    const OpLibrary &lib = OpLibrary::standard();
    const OpDef *def = lib.find(c.kind);
    if (!def) {
        r.message = "unknown kind " + c.kind;
        return r;
    }
    // Operand types in the op's port order.
    std::vector<PortTypes> operands;
    std::vector<std::vector<TensorData>> in_data;  // per port in port order (empty: absent)
    std::uint64_t seed = c.seed;
    for (const PortSpec &port : def->input_ports()) {
        in_data.emplace_back();
        auto it = std::find_if(c.inputs.begin(), c.inputs.end(), [&](const auto &p) { return p.first == port.name; });
        if (it == c.inputs.end()) continue;
        PortTypes pt{port.name, {}};
        auto given = c.data.find(port.name);
        for (size_t i = 0; i < it->second.size(); ++i) {
            if (given != c.data.end() && i < given->second.size()) {
                in_data.back().push_back(given->second[i]);
            } else {
                in_data.back().push_back(random_tensor(c.dtype, it->second[i], seed++, c.lo, c.hi));
            }
            pt.operands.push_back({in_data.back().back().dtype, it->second[i]});
        }
        operands.push_back(std::move(pt));
    }
    auto derived = lib.derive(c.kind, c.params, operands);
    if (!derived) {
        r.message = "derive failed: " + derived.error().message;
        return r;
    }
    const Derivation &d = *derived;
    const Params params = lib.with_defaults(*def, c.params);
    const ZRange index = c.index_range.value_or(d.signature.index_space);

    cpu::KernelSpec spec;
    spec.def = def;
    spec.params = params;
    spec.derivation = d;
    spec.operands = operands;
    spec.index_range = index;
    spec.epilogues = c.epilogues;
    spec.threads = c.threads;

    std::vector<cpu::View> in_views;
    const auto ports = def->input_ports();
    for (size_t p = 0; p < ports.size(); ++p)
        for (size_t i = 0; i < in_data[p].size(); ++i) {
            const OperandProjection *proj = d.signature.input(ports[p].name, i);
            if (!proj) {
                r.message = "no projection for input " + ports[p].name;
                return r;
            }
            const ZRange sel = selection_of(*proj, index, ZRange::of_shape(in_data[p][i].shape));
            in_views.push_back(view_of(in_data[p][i], sel));
        }
    std::vector<TensorData> extra_data;
    std::vector<ZRange> extra_sels;
    for (size_t k = 0; k < c.epilogue_shapes.size(); ++k)
        extra_data.push_back(random_tensor(c.dtype, c.epilogue_shapes[k], seed++));
    for (const cpu::Epilogue &e : c.epilogues) {
        if (e.extra_input < 0) continue;
        if (static_cast<size_t>(e.extra_input) >= extra_data.size()) {
            r.message = "epilogue operand missing";
            return r;
        }
    }
    for (size_t k = 0; k < extra_data.size(); ++k) {
        // The projection of the first epilogue using this operand.
        const cpu::Epilogue *user = nullptr;
        for (const cpu::Epilogue &e : c.epilogues)
            if (e.extra_input == static_cast<int>(k)) user = &e;
        if (!user) {
            r.message = "epilogue operand unused";
            return r;
        }
        extra_sels.push_back(selection_of(user->projection, index, ZRange::of_shape(extra_data[k].shape)));
        in_views.push_back(view_of(extra_data[k], extra_sels.back()));
    }
    std::vector<TensorData> out_data;
    std::vector<ZRange> out_sels;
    std::vector<cpu::View> out_views;
    for (const PortTypes &pt : d.outputs)
        for (size_t i = 0; i < pt.operands.size(); ++i) {
            out_data.emplace_back(pt.operands[i].dtype, pt.operands[i].shape);
            for (std::int64_t e = 0; e < out_data.back().element_count(); ++e)
                out_data.back().set(e, std::numeric_limits<double>::quiet_NaN());
            const OperandProjection *proj = d.signature.output(pt.port, i);
            out_sels.push_back(selection_of(*proj, index, ZRange::of_shape(pt.operands[i].shape)));
        }
    for (size_t k = 0; k < out_data.size(); ++k) out_views.push_back(view_of(out_data[k], out_sels[k]));
    for (const cpu::View &v : in_views) {
        spec.input_shapes.push_back(v.shape);
        spec.input_strides.push_back(v.strides);
    }
    for (const cpu::View &v : out_views) {
        spec.output_shapes.push_back(v.shape);
        spec.output_strides.push_back(v.strides);
    }

    const cpu::KernelFactory *factory = c.factory ? c.factory : cpu::find_kernel(c.kind);
    if (!factory) {
        r.message = "no CPU kernel for " + c.kind;
        return r;
    }
    // As the executor asks: each epilogue with the ones before it already fused.
    for (size_t i = 0; i < c.epilogues.size(); ++i) {
        cpu::KernelSpec probe = spec;
        probe.epilogues.assign(c.epilogues.begin(), c.epilogues.begin() + static_cast<std::ptrdiff_t>(i));
        if (!factory->can_fuse || !factory->can_fuse(probe, c.epilogues[i])) {
            r.message = "kernel " + c.kind + " cannot fuse epilogue " + c.epilogues[i].kind;
            return r;
        }
    }
    auto made = cpu::make_kernel(*factory, spec);
    if (!made) {
        r.message = "make failed: " + made.error();
        return r;
    }
    r.fallback = made->fallback;
    made->kernel->run(in_views, out_views);

    // Reference over the same index range.
    std::vector<std::vector<RefArray>> ref_in(ports.size());
    for (size_t p = 0; p < ports.size(); ++p)
        for (const TensorData &t : in_data[p]) ref_in[p].push_back(to_ref(t));
    std::vector<std::vector<const RefArray *>> ins(ports.size());
    for (size_t p = 0; p < ports.size(); ++p)
        for (const RefArray &a : ref_in[p]) ins[p].push_back(&a);
    std::vector<RefArray> ref_out;
    for (const TensorData &t : out_data)
        ref_out.emplace_back(ZRange::of_shape(t.shape), std::numeric_limits<double>::quiet_NaN());
    std::vector<std::vector<RefArray *>> outs;
    {
        size_t k = 0;
        for (const PortTypes &pt : d.outputs) {
            outs.emplace_back();
            for (size_t i = 0; i < pt.operands.size(); ++i) outs.back().push_back(&ref_out[k++]);
        }
    }
    RefContext ctx{params, d, ins, outs, index, nullptr};
    if (index.size() > 0) def->reference(ctx);
    if (!c.epilogues.empty()) {
        // Epilogues act on the (single) output selection.
        RefArray y(ZRange::of_shape(out_sels[0].shape()));
        y.range.for_each_point([&](const ZPoint &p) { y.at(p) = ref_out[0].at(p + out_sels[0].start()); });
        for (const cpu::Epilogue &e : c.epilogues) {
            std::optional<RefArray> other;
            if (e.extra_input >= 0) {
                const auto k = static_cast<size_t>(e.extra_input);
                RefArray o(ZRange::of_shape(extra_sels[k].shape()));
                const RefArray full = to_ref(extra_data[k]);
                o.range.for_each_point([&](const ZPoint &p) { o.at(p) = full.at(p + extra_sels[k].start()); });
                other = std::move(o);
            }
            if (auto err = detail::apply_reference_epilogue(lib, e, y, other ? &*other : nullptr, c.dtype)) {
                r.message = *err;
                return r;
            }
        }
        y.range.for_each_point([&](const ZPoint &p) { ref_out[0].at(p + out_sels[0].start()) = y.at(p); });
    }

    // Compare: inside the selections within tolerance, outside untouched (NaN).
    for (size_t k = 0; k < out_data.size(); ++k) {
        const ZRange full = ZRange::of_shape(out_data[k].shape);
        std::ostringstream why;
        bool bad = false;
        full.for_each_point([&](const ZPoint &p) {
            if (bad) return;
            const std::int64_t i = full.linear_index(p);
            const double got = out_data[k].get(i);
            const double want = ref_out[k].at(p);
            const bool inside = index.size() > 0 && out_sels[k].contains(p);
            if (!inside) {
                if (!std::isnan(got)) {
                    why << "output " << k << " element " << p.to_string() << " outside the selection "
                        << out_sels[k].to_string() << " was written (" << got << ")";
                    bad = true;
                }
                return;
            }
            ++r.compared;
            if (std::isnan(want) && std::isnan(got)) return;
            const double err = std::abs(got - want);
            r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
            if (!(err <= c.atol + c.rtol * std::abs(want))) {
                why << "output " << k << " element " << p.to_string() << ": kernel " << got << ", reference " << want
                    << " (|diff| " << err << ")";
                bad = true;
            }
        });
        if (bad) {
            r.message = c.kind + ": " + why.str();
            return r;
        }
    }
    r.ok = true;
    r.message = "ok: " + std::to_string(r.compared) + " elements, max |diff| " + std::to_string(r.max_abs_error);
    return r;
}

}  // namespace tapestry::test
