// The operation library: registry, parameter/port checks, costs.
#include "ops/library.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/check.h"

namespace tapestry {

std::string_view param_kind_name(ParamKind k) {
    switch (k) {
        case ParamKind::boolean: return "bool";
        case ParamKind::integer: return "int";
        case ParamKind::number: return "float";
        case ParamKind::string: return "string";
        case ParamKind::int_list: return "int list";
    }
    return "?";
}

const OpLibrary &OpLibrary::standard() {
    static const OpLibrary lib = [] {
        OpLibrary l;
        register_elementwise_ops(l);
        register_linear_algebra_ops(l);
        register_reduction_ops(l);
        register_normalization_ops(l);
        register_shape_ops(l);
        register_convolution_ops(l);
        register_embedding_ops(l);
        register_attention_ops(l);
        register_data_movement_ops(l);
        register_fused_ops(l);
        return l;
    }();
    return lib;
}

void OpLibrary::add(std::unique_ptr<OpDef> def) {
    TAPESTRY_CHECK(def != nullptr, "OpLibrary::add: null definition");
    std::string kind(def->kind());
    TAPESTRY_CHECK(defs_.count(kind) == 0, "OpLibrary::add: kind registered twice");
    defs_.emplace(std::move(kind), std::move(def));
}

const OpDef *OpLibrary::find(const std::string &kind) const {
    auto it = defs_.find(kind);
    return it == defs_.end() ? nullptr : it->second.get();
}

std::vector<const OpDef *> OpLibrary::all() const {
    std::vector<const OpDef *> out;
    for (const auto &[k, d] : defs_) out.push_back(d.get());
    return out;
}

static bool value_matches(const ParamValue &v, ParamKind k) {
    switch (k) {
        case ParamKind::boolean: return std::holds_alternative<bool>(v);
        case ParamKind::integer: return std::holds_alternative<std::int64_t>(v);
        case ParamKind::number:
            if (auto *d = std::get_if<double>(&v)) return std::isfinite(*d);
            return std::holds_alternative<std::int64_t>(v);
        case ParamKind::string: return std::holds_alternative<std::string>(v);
        case ParamKind::int_list: return std::holds_alternative<std::vector<std::int64_t>>(v);
    }
    return false;
}

Expected<Derivation, DerivationError> OpLibrary::derive(const std::string &kind, const Params &params,
                                                        const std::vector<PortTypes> &inputs) const {
    const OpDef *def = find(kind);
    if (!def) return unexpected(DerivationError{"unknown-op", "kind", "unknown operation kind '" + kind + "'"});

    const std::vector<ParamSpec> specs = def->params();
    for (const auto &entry : params.values()) {
        // (Not a structured binding: clang 14 cannot capture those in the lambda below.)
        const std::string &name = entry.first;
        const ParamValue &value = entry.second;
        auto it = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec &s) { return s.name == name; });
        if (it == specs.end())
            return unexpected(DerivationError{"unknown-param", "params." + name,
                                              kind + " has no parameter '" + name + "'"});
        if (!value_matches(value, it->kind))
            return unexpected(DerivationError{"bad-param", "params." + name,
                                              "parameter '" + name + "' of " + kind + " must be " +
                                                  std::string(param_kind_name(it->kind)) + ", got " +
                                                  param_type_name(value) + " " + param_to_string(value)});
        if (!it->choices.empty()) {
            const std::string &s = std::get<std::string>(value);
            if (std::find(it->choices.begin(), it->choices.end(), s) == it->choices.end()) {
                std::string allowed;
                for (const std::string &c : it->choices) allowed += (allowed.empty() ? "" : ", ") + c;
                return unexpected(DerivationError{"bad-param", "params." + name,
                                                  "parameter '" + name + "' of " + kind + " must be one of " + allowed +
                                                      ", got \"" + s + "\""});
            }
        }
    }
    for (const ParamSpec &s : specs)
        if (s.required && !params.has(s.name))
            return unexpected(DerivationError{"missing-param", "params." + s.name,
                                              kind + " needs parameter '" + s.name + "'"});

    const std::vector<PortSpec> ports = def->input_ports();
    std::set<std::string> seen;
    for (const PortTypes &pt : inputs) {
        auto it = std::find_if(ports.begin(), ports.end(), [&](const PortSpec &p) { return p.name == pt.port; });
        if (it == ports.end())
            return unexpected(DerivationError{"unknown-port", "inputs." + pt.port,
                                              kind + " has no input port '" + pt.port + "'"});
        if (!seen.insert(pt.port).second)
            return unexpected(DerivationError{"arity", "inputs." + pt.port, "input port '" + pt.port + "' bound twice"});
        if (pt.operands.empty() && !it->optional)
            return unexpected(DerivationError{"arity", "inputs." + pt.port,
                                              "input port '" + pt.port + "' of " + kind + " needs a tensor"});
        if (pt.operands.size() > 1 && !it->variadic)
            return unexpected(DerivationError{"arity", "inputs." + pt.port,
                                              "input port '" + pt.port + "' of " + kind + " takes one tensor, got " +
                                                  std::to_string(pt.operands.size())});
    }
    for (const PortSpec &p : ports)
        if (!p.optional && !seen.count(p.name))
            return unexpected(DerivationError{"arity", "inputs." + p.name,
                                              kind + " needs input '" + p.name + "'"});

    // Present the ports to the OpDef in its declared order.
    std::vector<PortTypes> ordered;
    for (const PortSpec &p : ports)
        for (const PortTypes &pt : inputs)
            if (pt.port == p.name && !pt.operands.empty()) ordered.push_back(pt);
    return def->derive(with_defaults(*def, params), ordered);
}

Params OpLibrary::with_defaults(const OpDef &def, const Params &params) const {
    Params out = params;
    for (const ParamSpec &s : def.params())
        if (!s.required && !out.has(s.name)) out.set(s.name, s.default_value);
    return out;
}

OpCost OpLibrary::cost(const OpDef &def, const Params &params, const Derivation &d,
                       const std::vector<PortTypes> &inputs, const ZRange &index_range) const {
    OpCost c;
    // An empty shard touches nothing. (Its image into a rank-0 operand would be the
    // 0-dim range, which always holds one point — ZRange cannot express "no scalar".)
    if (index_range.empty()) return c;
    const Params full = with_defaults(def, params);
    c.flops = def.flops_per_point(full, d) * static_cast<double>(index_range.size());
    auto bytes = [&](const std::vector<PortProjections> &ports, const std::vector<PortTypes> &types) {
        double total = 0;
        for (const PortProjections &pp : ports) {
            const PortTypes *pt = nullptr;
            for (const PortTypes &t : types)
                if (t.port == pp.port) pt = &t;
            if (!pt) continue;
            for (size_t i = 0; i < pp.operands.size() && i < pt->operands.size(); ++i) {
                const OperandType &ot = pt->operands[i];
                ZRange r = pp.operands[i].projection.image(index_range);
                if (pp.operands[i].clipped) r = r.intersect(ZRange::of_shape(ot.shape));
                total += static_cast<double>(r.size()) * dtype_bytes(ot.dtype);
            }
        }
        return total;
    };
    c.bytes_read = bytes(d.signature.inputs, inputs);
    c.bytes_written = bytes(d.signature.outputs, d.outputs);
    return c;
}

}  // namespace tapestry
