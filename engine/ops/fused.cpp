// The `fused` kind: a head, its elementwise epilogues and optionally a
// normalization tail as one operation. Its derivation derives every member in
// turn (each epilogue's index space is the value's shape, read one-to-one) and
// composes each extra operand's projection with the head's output projection (and,
// with a tail, with the tail's windowed `x` projection); its reference kernel runs
// the members' own reference kernels in sequence.
#include "ops/fused.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/check.h"
#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {
namespace {

using op_util::derivation_error;

DerivationError bad(const std::string &param, const std::string &message) {
    return derivation_error("bad-param", "params." + param, "fused: " + message);
}

bool writable_string(const std::string &s) {
    return s.find_first_of("\"\\;,{}[]=") == std::string::npos;
}

std::optional<std::string> value_text(const ParamValue &v) {
    if (const bool *b = std::get_if<bool>(&v)) return std::string(*b ? "true" : "false");
    if (const std::int64_t *i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
    if (const double *d = std::get_if<double>(&v)) {
        if (!std::isfinite(*d)) return std::nullopt;
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        std::string s = buf;
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
        return s;
    }
    if (const std::string *s = std::get_if<std::string>(&v)) {
        if (!writable_string(*s)) return std::nullopt;
        return "\"" + *s + "\"";
    }
    const auto &list = std::get<std::vector<std::int64_t>>(v);
    std::string s = "[";
    for (size_t k = 0; k < list.size(); ++k) s += (k ? "," : "") + std::to_string(list[k]);
    return s + "]";
}

std::optional<std::int64_t> parse_int(const std::string &s) {
    std::int64_t v = 0;
    const char *end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, v);
    if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return v;
}

std::optional<ParamValue> parse_value(const std::string &s) {
    if (s == "true") return ParamValue{true};
    if (s == "false") return ParamValue{false};
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return ParamValue{s.substr(1, s.size() - 2)};
    if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
        std::vector<std::int64_t> list;
        const std::string body = s.substr(1, s.size() - 2);
        size_t pos = 0;
        while (!body.empty()) {
            const size_t comma = body.find(',', pos);
            auto v = parse_int(body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
            if (!v) return std::nullopt;
            list.push_back(*v);
            if (comma == std::string::npos) break;
            pos = comma + 1;
        }
        return ParamValue{list};
    }
    if (s.find_first_of(".eE") != std::string::npos) {
        double d = 0;
        const char *end = s.data() + s.size();
        auto [ptr, ec] = std::from_chars(s.data(), end, d);
        if (ec != std::errc() || ptr != end) return std::nullopt;
        return ParamValue{d};
    }
    if (auto i = parse_int(s)) return ParamValue{*i};
    return std::nullopt;
}

// Splits at `sep` outside quotes and brackets.
std::vector<std::string> split_top(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    int depth = 0;
    bool quoted = false;
    for (char c : s) {
        if (c == '"') quoted = !quoted;
        if (!quoted && (c == '[' || c == '{')) ++depth;
        if (!quoted && (c == ']' || c == '}')) --depth;
        if (!quoted && depth == 0 && c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

// P_e ∘ O: the extra operand's projection (over the value's coordinates) applied
// after the head's output projection (index point → value coordinates).
IndexProjection compose(const IndexProjection &extra, const IndexProjection &head_out) {
    const ZMatrix &e = extra.map().matrix();
    const ZMatrix &o = head_out.map().matrix();
    ZMatrix a(e.rows(), o.cols());
    for (int r = 0; r < e.rows(); ++r)
        for (int c = 0; c < o.cols(); ++c) {
            Coord sum = 0;
            for (int k = 0; k < e.cols(); ++k) sum += e.at(r, k) * o.at(k, c);
            a.at(r, c) = sum;
        }
    const ZPoint b = e * head_out.map().offset() + extra.map().offset();
    return IndexProjection(AffineMap(a, b), extra.window());
}

// P ∘ T where T reads windows (a tail's `x` projection): the map as compose(), and
// per row r the window P.window[r] + Σ_j |P[r][j]|·(T.window[j] − 1) — exact for
// the rows of the chain's projections (a unit row, or a zero row with its own
// window).
IndexProjection compose_windowed(const IndexProjection &p, const IndexProjection &t) {
    const IndexProjection m = compose(p, IndexProjection(t.map(), ZPoint::filled(t.tensor_rank(), 1)));
    const ZMatrix &a = p.map().matrix();
    ZPoint w = p.window();
    for (int r = 0; r < a.rows(); ++r)
        for (int j = 0; j < a.cols(); ++j) {
            const Coord c = a.at(r, j) < 0 ? -a.at(r, j) : a.at(r, j);
            w[r] += c * (t.window()[j] - 1);
        }
    return IndexProjection(m.map(), w);
}

bool tail_kind(const std::string &kind) { return kind == "softmax" || kind == "layernorm" || kind == "rmsnorm"; }

std::string member_name(size_t k, const std::string &kind) {
    return "fused member " + std::to_string(k) + " (" + kind + ")";
}

// Records a member's reads of the fused op's operands under the fused op's
// numbering (port 0, operand k); reads of the chain's own values and every write
// stay inside the kernel.
class MemberRecorder final : public AccessRecorder {
public:
    MemberRecorder(AccessRecorder *outer, std::vector<std::vector<int>> map) : outer_(outer), map_(std::move(map)) {}
    void on_read(int port, int operand, const ZPoint &element) override {
        if (!outer_ || port >= static_cast<int>(map_.size())) return;
        const auto &ops = map_[static_cast<size_t>(port)];
        if (operand >= static_cast<int>(ops.size())) return;
        const int k = ops[static_cast<size_t>(operand)];
        if (k >= 0) outer_->on_read(0, k, element);
    }
    void on_write(int, int, const ZPoint &) override {}

private:
    AccessRecorder *outer_;
    std::vector<std::vector<int>> map_;  // member port → operand → fused operand (-1: internal)
};

class FusedOp final : public OpDef {
public:
    std::string_view kind() const override { return "fused"; }
    std::string_view category() const override { return "fused"; }
    std::string_view summary() const override {
        return "a head (matmul, linear, conv2d or elementwise), its elementwise epilogues and optionally a "
               "normalization tail (softmax, layernorm, rmsnorm) as one operation";
    }
    std::vector<PortSpec> input_ports() const override {
        return {{"x", "the head's operands, then one extra operand per binary epilogue", false, true}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "the last member's output", false, false}}; }
    std::vector<ParamSpec> params() const override {
        using namespace op_util;
        return {required_param("chain", ParamKind::string,
                               "members in order, ';'-separated: kind or kind{name=value,…}, the head first"),
                required_param("head_operands", ParamKind::int_list,
                               "per head input port: operands of x it takes (1, or 0 for an absent optional port)"),
                ints_param("chain_ports", {},
                           "per epilogue: -1 unary (and the tail); 0 the chain value is a (extra operand b); 1 it is b"),
                ints_param("tail_operands", {},
                           "with a normalization tail: per tail port after x (gamma, beta), 1 or 0"),
                ParamSpec{"members", ParamKind::string, false, ParamValue{std::string()},
                          "the fused operations' ids, ','-separated (display only)", {}}};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        auto chain = parse_fused_chain(params);
        if (!chain) return unexpected(chain.error());
        const PortTypes *x = op_util::find_port(inputs, "x");
        std::vector<OperandType> operands = x ? x->operands : std::vector<OperandType>{};
        auto d = derive_fused(OpLibrary::standard(), *chain, operands);
        if (!d) return unexpected(d.error());
        return std::move(d->fused);
    }

    double flops_per_point(const Params &params, const Derivation &d) const override {
        auto chain = parse_fused_chain(params);
        if (!chain) return 0;
        const OpLibrary &lib = OpLibrary::standard();
        // The head's derivation, rebuilt from the fused signature (flop counts read
        // windows and the presence of ports, not shapes).
        const FusedMember &head = chain->members.front();
        const OpDef *hdef = lib.find(head.kind);
        if (!hdef) return 0;
        Derivation hd;
        hd.outputs = d.outputs;
        hd.signature.index_space = d.signature.index_space;
        hd.signature.outputs = {PortProjections{"y", d.signature.outputs.at(0).operands}};
        const auto ports = hdef->input_ports();
        size_t next = 0;
        for (size_t p = 0; p < ports.size() && p < chain->head_operands.size(); ++p)
            if (chain->head_operands[p] > 0 && next < d.signature.inputs.at(0).operands.size())
                hd.signature.inputs.push_back(PortProjections{ports[p].name, {d.signature.inputs[0].operands[next++]}});
        double flops = hdef->flops_per_point(lib.with_defaults(*hdef, head.params), hd);
        const double points = static_cast<double>(d.signature.index_space.size());
        const double values = static_cast<double>(d.outputs.at(0).operands.at(0).shape.product());
        for (size_t k = 1; k < chain->members.size(); ++k) {
            const OpDef *m = lib.find(chain->members[k].kind);
            if (!m || points <= 0) continue;
            if (chain->has_tail() && k + 1 == chain->members.size()) {
                // The tail's count reads which of its operand ports are present.
                Derivation td = d;
                const auto tports = m->input_ports();
                for (size_t p = 1; p < tports.size() && p - 1 < chain->tail_operands.size(); ++p)
                    if (chain->tail_operands[p - 1] > 0)
                        td.signature.inputs.push_back(PortProjections{tports[p].name, {OperandProjection{}}});
                flops += m->flops_per_point(lib.with_defaults(*m, chain->members[k].params), td) * values / points;
                continue;
            }
            flops += m->flops_per_point(lib.with_defaults(*m, chain->members[k].params), d) * values / points;
        }
        return flops;
    }

    ReadPattern read_pattern(const Params &params) const override {
        auto chain = parse_fused_chain(params);
        if (!chain) return ReadPattern::dense;
        const OpLibrary &lib = OpLibrary::standard();
        const OpDef *h = lib.find(chain->members.front().kind);
        return h ? h->read_pattern(lib.with_defaults(*h, chain->members.front().params)) : ReadPattern::dense;
    }

    // Runs the head over ctx.index_range, then each epilogue over the values the
    // head computed, all in double precision, and writes the last value. Member
    // derivations are redone with f32 operands: projections do not depend on dtype.
    void reference(const RefContext &ctx) const override {
        auto chain = parse_fused_chain(ctx.params);
        TAPESTRY_CHECK(chain.has_value(), "fused reference: params were checked by derive");
        const OpLibrary &lib = OpLibrary::standard();
        std::vector<OperandType> operands;
        for (const RefArray *a : ctx.inputs.at(0)) operands.push_back(OperandType{DType::f32, a->range.shape()});
        auto fd = derive_fused(lib, *chain, operands);
        TAPESTRY_CHECK(fd.has_value(), "fused reference: the chain was derived before");

        // Head.
        const FusedMember &head = chain->members.front();
        const OpDef *hdef = lib.find(head.kind);
        const Params hparams = lib.with_defaults(*hdef, head.params);
        const Derivation &hd = fd->members.front();
        const auto ports = hdef->input_ports();
        std::vector<std::vector<const RefArray *>> hin;
        std::vector<std::vector<int>> hmap;
        int next = 0;
        for (size_t p = 0; p < ports.size(); ++p) {
            hin.emplace_back();
            hmap.emplace_back();
            if (chain->head_operands[p] > 0) {
                hin.back().push_back(ctx.inputs[0][static_cast<size_t>(next)]);
                hmap.back().push_back(next++);
            }
        }
        // With a tail, the head and the epilogues compute the whole normalized
        // slices the tail reads (the head's index space is the value's coordinates).
        const bool tail = chain->has_tail();
        if (tail && ctx.index_range.empty()) return;
        const ZRange head_range =
            tail ? fd->members.back().signature.input("x", 0)->projection.image(ctx.index_range) : ctx.index_range;
        const ZPoint value_shape = hd.outputs.at(0).operands.at(0).shape;
        RefArray value(ZRange::of_shape(value_shape));
        {
            MemberRecorder rec(ctx.recorder, hmap);
            RefContext hctx{hparams, hd, hin, {{&value}}, head_range, ctx.recorder ? &rec : nullptr, ctx.fast_kernels};
            hdef->reference(hctx);
        }
        // The values this piece computes.
        const IndexProjection &out = hd.signature.outputs.at(0).operands.at(0).projection;
        ZRange region = out.image(head_range);
        // Epilogues.
        for (size_t k = 1; k < chain->members.size(); ++k) {
            const FusedMember &m = chain->members[k];
            const OpDef *mdef = lib.find(m.kind);
            const Params mparams = lib.with_defaults(*mdef, m.params);
            const Derivation &md = fd->members[k];
            const int extra = fd->extra_operand[k - 1];
            std::vector<std::vector<const RefArray *>> min;
            std::vector<std::vector<int>> mmap;
            if (tail && k + 1 == chain->members.size()) {
                min = {{&value}};
                mmap = {{-1}};
                for (int t : fd->tail_operand) {
                    min.push_back(t < 0 ? std::vector<const RefArray *>{}
                                        : std::vector<const RefArray *>{ctx.inputs[0][static_cast<size_t>(t)]});
                    mmap.push_back(t < 0 ? std::vector<int>{} : std::vector<int>{t});
                }
                RefArray normalized(ZRange::of_shape(value_shape));
                MemberRecorder rec(ctx.recorder, mmap);
                AccessRecorder *recorder = ctx.recorder ? &rec : nullptr;
                RefContext tctx{mparams, md, min, {{&normalized}}, ctx.index_range, recorder, ctx.fast_kernels};
                mdef->reference(tctx);
                value = std::move(normalized);
                region = md.signature.outputs.at(0).operands.at(0).projection.image(ctx.index_range);
                break;
            }
            if (m.chain_port < 0) {
                min = {{&value}};
                mmap = {{-1}};
            } else {
                const RefArray *other = ctx.inputs[0][static_cast<size_t>(extra)];
                min = m.chain_port == 0 ? std::vector<std::vector<const RefArray *>>{{&value}, {other}}
                                        : std::vector<std::vector<const RefArray *>>{{other}, {&value}};
                mmap = m.chain_port == 0 ? std::vector<std::vector<int>>{{-1}, {extra}}
                                         : std::vector<std::vector<int>>{{extra}, {-1}};
            }
            RefArray next_value(ZRange::of_shape(value_shape));
            MemberRecorder rec(ctx.recorder, mmap);
            RefContext mctx{mparams, md, min, {{&next_value}}, region, ctx.recorder ? &rec : nullptr, ctx.fast_kernels};
            mdef->reference(mctx);
            value = std::move(next_value);
        }
        if (region.empty() && region.rank() > 0) return;
        region.for_each_point([&](const ZPoint &p) { ctx.write(0, p, value.at(p)); });
    }
};

}  // namespace

bool FusedChain::has_tail() const { return !members.empty() && tail_kind(members.back().kind); }

int FusedChain::head_operand_count() const {
    int n = 0;
    for (std::int64_t c : head_operands) n += static_cast<int>(c);
    return n;
}

int FusedChain::extra_count() const {
    int n = 0;
    for (size_t k = 1; k < members.size(); ++k)
        if (members[k].chain_port >= 0) ++n;
    for (std::int64_t c : tail_operands) n += static_cast<int>(c);
    return n;
}

std::optional<Params> fused_params(const FusedChain &chain) {
    std::string text;
    std::vector<std::int64_t> ports;
    for (size_t k = 0; k < chain.members.size(); ++k) {
        const FusedMember &m = chain.members[k];
        if (!writable_string(m.kind)) return std::nullopt;
        text += (k ? ";" : "") + m.kind;
        if (!m.params.empty()) {
            text += "{";
            bool first = true;
            for (const auto &[name, v] : m.params.values()) {
                auto vt = value_text(v);
                if (!vt || !writable_string(name)) return std::nullopt;
                text += (first ? "" : ",") + name + "=" + *vt;
                first = false;
            }
            text += "}";
        }
        if (k > 0) ports.push_back(m.chain_port);
    }
    std::string ids;
    for (size_t k = 0; k < chain.member_ids.size(); ++k) {
        if (!writable_string(chain.member_ids[k])) return std::nullopt;
        ids += (k ? "," : "") + chain.member_ids[k];
    }
    Params p;
    p.set("chain", text);
    p.set("head_operands", chain.head_operands);
    if (!ports.empty()) p.set("chain_ports", ports);
    if (chain.has_tail() && !chain.tail_operands.empty()) p.set("tail_operands", chain.tail_operands);
    if (!ids.empty()) p.set("members", ids);
    return p;
}

Expected<FusedChain, DerivationError> parse_fused_chain(const Params &params) {
    FusedChain chain;
    const std::string text = params.get_string("chain", "");
    for (const std::string &piece : split_top(text, ';')) {
        FusedMember m;
        const size_t brace = piece.find('{');
        m.kind = piece.substr(0, brace);
        if (m.kind.empty()) return unexpected(bad("chain", "member '" + piece + "' has no kind"));
        if (brace != std::string::npos) {
            if (piece.back() != '}')
                return unexpected(bad("chain", "member '" + piece + "': its parameters must end with '}'"));
            const std::string body = piece.substr(brace + 1, piece.size() - brace - 2);
            if (!body.empty())
                for (const std::string &assign : split_top(body, ',')) {
                    const size_t eq = assign.find('=');
                    auto v = eq == std::string::npos ? std::nullopt : parse_value(assign.substr(eq + 1));
                    if (!v || eq == 0)
                        return unexpected(bad("chain", "member '" + m.kind + "': cannot read parameter '" + assign + "'"));
                    m.params.set(assign.substr(0, eq), *v);
                }
        }
        chain.members.push_back(std::move(m));
    }
    if (chain.members.size() < 2)
        return unexpected(bad("chain", "a chain needs a head and at least one epilogue, got '" + text + "'"));
    chain.head_operands = params.get_ints("head_operands", {});
    const std::vector<std::int64_t> ports = params.get_ints("chain_ports", {});
    if (ports.size() != chain.members.size() - 1)
        return unexpected(bad("chain_ports", "expected one entry per epilogue (" +
                                                 std::to_string(chain.members.size() - 1) + "), got " +
                                                 std::to_string(ports.size())));
    for (size_t k = 0; k < ports.size(); ++k) {
        if (ports[k] < -1 || ports[k] > 1)
            return unexpected(bad("chain_ports", "entry " + std::to_string(k) + " is " + std::to_string(ports[k]) +
                                                     "; expected -1, 0 or 1"));
        chain.members[k + 1].chain_port = static_cast<int>(ports[k]);
    }
    chain.tail_operands = params.get_ints("tail_operands", {});
    if (!chain.has_tail() && !chain.tail_operands.empty())
        return unexpected(bad("tail_operands", "only a chain ending in softmax, layernorm or rmsnorm takes tail operands"));
    for (size_t k = 0; k < chain.tail_operands.size(); ++k)
        if (chain.tail_operands[k] < 0 || chain.tail_operands[k] > 1)
            return unexpected(bad("tail_operands", "entry " + std::to_string(k) + " is " +
                                                       std::to_string(chain.tail_operands[k]) + "; expected 0 or 1"));
    const std::string ids = params.get_string("members", "");
    if (!ids.empty()) chain.member_ids = split_top(ids, ',');
    return chain;
}

bool fusable_epilogue(const OpDef &def) {
    if (def.category() != "elementwise") return false;
    const size_t n = def.input_ports().size();
    return n == 1 || n == 2;
}

bool fusable_tail(const OpDef &def) { return tail_kind(std::string(def.kind())); }

bool fusable_head(const OpDef &def) {
    const std::string_view k = def.kind();
    return k == "matmul" || k == "linear" || k == "conv2d" || fusable_epilogue(def);
}

Expected<FusedDerivation, DerivationError> derive_fused(const OpLibrary &lib, const FusedChain &chain,
                                                        const std::vector<OperandType> &operands) {
    FusedDerivation out;
    const FusedMember &head = chain.members.front();
    const OpDef *hdef = lib.find(head.kind);
    if (!hdef || !fusable_head(*hdef))
        return unexpected(bad("chain", "'" + head.kind + "' cannot head a chain (matmul, linear, conv2d or an elementwise kind)"));
    const auto ports = hdef->input_ports();
    if (chain.head_operands.size() != ports.size())
        return unexpected(bad("head_operands", "expected one entry per input port of " + head.kind + " (" +
                                                   std::to_string(ports.size()) + "), got " +
                                                   std::to_string(chain.head_operands.size())));
    const size_t expected = static_cast<size_t>(chain.head_operand_count() + chain.extra_count());
    if (operands.size() != expected)
        return unexpected(derivation_error("arity", "inputs.x", "fused: the chain takes " + std::to_string(expected) +
                                                                    " operands, got " + std::to_string(operands.size())));
    std::vector<PortTypes> htypes;
    size_t next = 0;
    for (size_t p = 0; p < ports.size(); ++p) {
        const std::int64_t c = chain.head_operands[p];
        if (c < 0 || c > 1 || (c == 0 && !ports[p].optional))
            return unexpected(bad("head_operands", "entry " + std::to_string(p) + " (port " + ports[p].name + ") is " +
                                                       std::to_string(c)));
        if (c == 1) htypes.push_back(PortTypes{ports[p].name, {operands[next++]}});
    }
    auto hd = lib.derive(head.kind, head.params, htypes);
    if (!hd) {
        DerivationError e = hd.error();
        e.message = member_name(0, head.kind) + ": " + e.message;
        return unexpected(e);
    }
    if (hd->outputs.size() != 1 || hd->outputs[0].operands.size() != 1 || hd->signature.outputs.size() != 1 ||
        hd->signature.outputs[0].operands.size() != 1)
        return unexpected(bad("chain", member_name(0, head.kind) + " must have exactly one output"));
    const OperandProjection head_out = hd->signature.outputs[0].operands[0];
    for (int d = 0; d < head_out.projection.window().rank(); ++d)
        if (head_out.projection.window()[d] != 1)
            return unexpected(bad("chain", member_name(0, head.kind) + " writes windows, not single elements"));
    OperandType value = hd->outputs[0].operands[0];

    Derivation fused;
    fused.signature.index_space = hd->signature.index_space;
    PortProjections xin{"x", {}};
    for (const PortProjections &pp : hd->signature.inputs)
        for (const OperandProjection &op : pp.operands) xin.operands.push_back(op);
    out.members.push_back(std::move(hd).value());

    for (size_t k = 1; k < chain.members.size(); ++k) {
        const FusedMember &m = chain.members[k];
        const std::string who = member_name(k, m.kind);
        const OpDef *mdef = lib.find(m.kind);
        if (mdef && k + 1 == chain.members.size() && chain.has_tail()) {
            const int rank = value.shape.rank();
            if (!(head_out.projection == IndexProjection::identity(rank)) ||
                !(fused.signature.index_space == ZRange::of_shape(value.shape)))
                return unexpected(bad("chain", who + ": a normalization tail needs a head that writes its index space "
                                                     "one-to-one (matmul, linear or an elementwise kind)"));
            if (m.chain_port != -1) return unexpected(bad("chain_ports", who + ": the tail takes -1"));
            const auto tports = mdef->input_ports();
            if (chain.tail_operands.size() + 1 != tports.size())
                return unexpected(bad("tail_operands", "expected one entry per input port of " + m.kind + " after x (" +
                                                           std::to_string(tports.size() - 1) + "), got " +
                                                           std::to_string(chain.tail_operands.size())));
            std::vector<PortTypes> types{PortTypes{tports[0].name, {value}}};
            for (size_t p = 1; p < tports.size(); ++p) {
                if (chain.tail_operands[p - 1] == 0) {
                    out.tail_operand.push_back(-1);
                    continue;
                }
                const int idx = static_cast<int>(next++);
                out.tail_operand.push_back(idx);
                types.push_back(PortTypes{tports[p].name, {operands[static_cast<size_t>(idx)]}});
            }
            auto md = lib.derive(m.kind, m.params, types);
            if (!md) {
                DerivationError e = md.error();
                e.message = who + ": " + e.message;
                return unexpected(e);
            }
            const OperandProjection *through = md->signature.input(tports[0].name, 0);
            const OperandProjection *written = md->signature.output("y", 0);
            if (md->outputs.size() != 1 || md->outputs[0].operands.size() != 1 ||
                md->outputs[0].operands[0].shape != value.shape ||
                !(md->signature.index_space == ZRange::of_shape(value.shape)) || !through || !written ||
                !(written->projection == IndexProjection::identity(rank)))
                return unexpected(derivation_error("shape-mismatch", "params.chain",
                                                   "fused: " + who + " must normalize the chain's value " +
                                                       op_util::shape_string(value.shape) + " in place"));
            // The chain's members run over whole normalized slices: every operand so
            // far is read through the tail's x projection.
            for (OperandProjection &op : xin.operands) op.projection = compose_windowed(op.projection, through->projection);
            for (size_t p = 1; p < tports.size(); ++p)
                if (chain.tail_operands[p - 1] == 1) {
                    const OperandProjection *tp = md->signature.input(tports[p].name, 0);
                    TAPESTRY_CHECK(tp != nullptr, "fused: the tail derives its operands' projections");
                    xin.operands.push_back(*tp);
                }
            out.extra_operand.push_back(-1);
            value = md->outputs[0].operands[0];
            out.members.push_back(std::move(md).value());
            break;
        }
        if (!mdef || !fusable_epilogue(*mdef))
            return unexpected(bad("chain", who + ": only elementwise kinds can follow the head, "
                                                 "and softmax, layernorm or rmsnorm end it"));
        const auto mports = mdef->input_ports();
        const bool unary = mports.size() == 1;
        if (unary != (m.chain_port < 0))
            return unexpected(bad("chain_ports", who + ": " + (unary ? "a unary member takes -1" : "a binary member takes 0 or 1")));
        std::vector<PortTypes> types;
        int extra = -1;
        if (unary) {
            types.push_back(PortTypes{mports[0].name, {value}});
        } else {
            extra = static_cast<int>(next++);
            const OperandType &other = operands[static_cast<size_t>(extra)];
            types.push_back(PortTypes{mports[0].name, {m.chain_port == 0 ? value : other}});
            types.push_back(PortTypes{mports[1].name, {m.chain_port == 0 ? other : value}});
        }
        auto md = lib.derive(m.kind, m.params, types);
        if (!md) {
            DerivationError e = md.error();
            e.message = who + ": " + e.message;
            return unexpected(e);
        }
        const int rank = value.shape.rank();
        const std::string chain_port_name = unary ? mports[0].name : mports[static_cast<size_t>(m.chain_port)].name;
        const OperandProjection *through = md->signature.input(chain_port_name, 0);
        const OperandProjection *written = md->signature.output("y", 0);
        if (md->outputs.size() != 1 || md->outputs[0].operands.size() != 1 ||
            md->outputs[0].operands[0].shape != value.shape ||
            !(md->signature.index_space == ZRange::of_shape(value.shape)) || !through || !written ||
            !(through->projection == IndexProjection::identity(rank)) ||
            !(written->projection == IndexProjection::identity(rank)))
            return unexpected(derivation_error("shape-mismatch", "params.chain",
                                               "fused: " + who + " must read the chain's value " +
                                                   op_util::shape_string(value.shape) +
                                                   " one-to-one (no broadcast of it) and write the same shape"));
        if (extra >= 0) {
            const OperandProjection *p = md->signature.input(mports[static_cast<size_t>(m.chain_port == 0 ? 1 : 0)].name, 0);
            TAPESTRY_CHECK(p != nullptr, "fused: a binary member derives both projections");
            xin.operands.push_back(OperandProjection{compose(p->projection, head_out.projection), p->clipped});
        }
        out.extra_operand.push_back(extra);
        value = md->outputs[0].operands[0];
        out.members.push_back(std::move(md).value());
    }
    fused.signature.inputs.push_back(std::move(xin));
    fused.signature.outputs.push_back(PortProjections{"y", {head_out}});
    fused.outputs.push_back(PortTypes{"y", {value}});
    out.fused = std::move(fused);
    return out;
}

void register_fused_ops(OpLibrary &lib) { lib.add(std::make_unique<FusedOp>()); }

}  // namespace tapestry
