// The CPU kernel of the `fused` kind (ops/fused.h): a matmul, linear or conv2d
// head runs as its own kernel with the epilogues as oneDNN post-ops (each one
// accepted by the head's can_fuse, as the executor's epilogue fusion asks); an
// elementwise chain runs as one loop over the output, in double precision per
// element, reading every operand through its broadcast strides. A normalization
// tail (softmax, layernorm, rmsnorm) runs after either, per normalized slice of the
// output view, in place (its pieces hold whole slices).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "ops/fused.h"
#include "ops/library.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/element_math.h"
#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {
namespace {

// One member of an elementwise chain: the function, its constants (unary_constants),
// and for a binary member the input view of its other operand and whether the
// chain's value is its left operand.
struct Member {
    Fn fn = Fn::relu;
    double a = 0, b = 0;
    int other = -1;
    bool value_left = true;
};

class FusedElementwiseKernel final : public Kernel {
public:
    FusedElementwiseKernel(std::vector<Member> members, int head_inputs)
        : members_(std::move(members)), head_inputs_(head_inputs) {}

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        const View &y = outputs[0];
        const int rank = y.shape.rank();
        if (y.elements() == 0) return;
        // Per input: strides along the output's dims (0 where it broadcasts).
        std::vector<std::vector<std::int64_t>> st(inputs.size(), std::vector<std::int64_t>(static_cast<size_t>(rank), 0));
        for (size_t i = 0; i < inputs.size(); ++i) {
            const View &v = inputs[i];
            const int shift = rank - v.shape.rank();
            for (int d = 0; d < v.shape.rank(); ++d)
                if (v.shape[d] != 1) st[i][static_cast<size_t>(d + shift)] = v.strides[static_cast<size_t>(d)];
        }
        std::vector<std::int64_t> off(inputs.size(), 0);
        std::int64_t yoff = 0;
        std::vector<Coord> idx(static_cast<size_t>(rank), 0);
        const std::int64_t n = y.elements();
        float *yp = y.f32();
        for (std::int64_t count = 0; count < n; ++count) {
            auto in = [&](int i) { return static_cast<double>(inputs[static_cast<size_t>(i)].f32()[off[static_cast<size_t>(i)]]); };
            const Member &h = members_.front();
            double v = head_inputs_ == 2 ? apply2(h.fn, in(0), in(1)) : apply1(h.fn, in(0), h.a, h.b);
            for (size_t k = 1; k < members_.size(); ++k) {
                const Member &m = members_[k];
                if (m.other < 0)
                    v = apply1(m.fn, v, m.a, m.b);
                else
                    v = m.value_left ? apply2(m.fn, v, in(m.other)) : apply2(m.fn, in(m.other), v);
            }
            yp[yoff] = static_cast<float>(v);
            // Odometer over the output's dims, last fastest.
            for (int d = rank - 1; d >= 0; --d) {
                const auto du = static_cast<size_t>(d);
                if (++idx[du] < y.shape[d]) {
                    for (size_t i = 0; i < inputs.size(); ++i) off[i] += st[i][du];
                    yoff += y.strides[du];
                    break;
                }
                for (size_t i = 0; i < inputs.size(); ++i) off[i] -= st[i][du] * (y.shape[d] - 1);
                yoff -= y.strides[du] * (y.shape[d] - 1);
                idx[du] = 0;
            }
        }
    }

private:
    std::vector<Member> members_;
    int head_inputs_;
};

// A normalization tail: runs the chain's kernel on the operands before the tail's
// own, then normalizes every slice of y in place (f32 storage, double sums).
class NormTailKernel final : public Kernel {
public:
    enum class Norm { softmax, layernorm, rmsnorm };
    NormTailKernel(std::unique_ptr<Kernel> chain, int chain_inputs, Norm norm, int axis, double eps, int gamma, int beta)
        : chain_(std::move(chain)), chain_inputs_(chain_inputs), norm_(norm), axis_(axis), eps_(eps), gamma_(gamma),
          beta_(beta) {}

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        chain_->run(inputs.first(static_cast<size_t>(chain_inputs_)), outputs);
        const View &y = outputs[0];
        if (y.elements() == 0) return;
        const int rank = y.shape.rank();
        // Normalized dims: softmax its axis; layernorm/rmsnorm axis…end (in order).
        std::vector<int> inner, outer;
        for (int d = 0; d < rank; ++d)
            ((norm_ == Norm::softmax ? d == axis_ : d >= axis_) ? inner : outer).push_back(d);
        // Offsets of one slice's elements in y and in gamma/beta (shaped like the
        // normalized dims), last dim fastest.
        std::vector<std::int64_t> yin, gin, bin;
        const View *g = gamma_ >= 0 ? &inputs[static_cast<size_t>(gamma_)] : nullptr;
        const View *b = beta_ >= 0 ? &inputs[static_cast<size_t>(beta_)] : nullptr;
        odometer(y.shape, inner, [&](const std::vector<Coord> &c) {
            std::int64_t yo = 0, go = 0, bo = 0;
            for (size_t k = 0; k < inner.size(); ++k) {
                yo += c[k] * y.strides[static_cast<size_t>(inner[k])];
                if (g) go += c[k] * g->strides[k];
                if (b) bo += c[k] * b->strides[k];
            }
            yin.push_back(yo);
            gin.push_back(go);
            bin.push_back(bo);
        });
        std::vector<double> row(yin.size());
        const double n = static_cast<double>(yin.size());
        odometer(y.shape, outer, [&](const std::vector<Coord> &c) {
            std::int64_t base = 0;
            for (size_t k = 0; k < outer.size(); ++k) base += c[k] * y.strides[static_cast<size_t>(outer[k])];
            float *yp = y.f32() + base;
            for (size_t e = 0; e < row.size(); ++e) row[e] = yp[yin[e]];
            if (norm_ == Norm::softmax) {
                double mx = -INFINITY, sum = 0;
                for (double v : row) mx = std::max(mx, v);
                for (double &v : row) sum += (v = std::exp(v - mx));
                for (size_t e = 0; e < row.size(); ++e) yp[yin[e]] = static_cast<float>(row[e] / sum);
                return;
            }
            double mean = 0, sq = 0;
            if (norm_ == Norm::layernorm) {
                for (double v : row) mean += v;
                mean /= n;
            }
            for (double v : row) sq += (v - mean) * (v - mean);
            const double inv = 1 / std::sqrt(sq / n + eps_);
            for (size_t e = 0; e < row.size(); ++e) {
                double v = (row[e] - mean) * inv;
                if (g) v *= static_cast<double>(g->f32()[gin[e]]);
                if (b) v += static_cast<double>(b->f32()[bin[e]]);
                yp[yin[e]] = static_cast<float>(v);
            }
        });
    }

private:
    // Calls f with every coordinate tuple over `dims` of `shape` (last fastest).
    template <class F>
    static void odometer(const ZPoint &shape, const std::vector<int> &dims, F &&f) {
        std::vector<Coord> c(dims.size(), 0);
        for (int d : dims)
            if (shape[d] == 0) return;
        while (true) {
            f(c);
            size_t k = dims.size();
            while (k > 0) {
                --k;
                if (++c[k] < shape[dims[k]]) break;
                c[k] = 0;
                if (k == 0) return;
            }
            if (dims.empty()) return;
        }
    }

    std::unique_ptr<Kernel> chain_;
    int chain_inputs_;
    Norm norm_;
    int axis_;
    double eps_;
    int gamma_, beta_;
};

bool onednn_head(const std::string &kind) { return kind == "matmul" || kind == "linear" || kind == "conv2d"; }

// The kernel of the chain's members before a tail (all of them without one): its
// inputs are the first `chain_inputs` views.
Expected<std::unique_ptr<Kernel>, std::string> make_body(const KernelSpec &spec, const FusedChain *chain,
                                                         const FusedDerivation *fd, size_t body, int chain_inputs);

Expected<std::unique_ptr<Kernel>, std::string> make_fused(const KernelSpec &spec) {
    const OpLibrary &lib = OpLibrary::standard();
    auto chain = parse_fused_chain(spec.params);
    if (!chain) return unexpected("fused kernel: " + chain.error().message);
    if (spec.operands.size() != 1) return unexpected(std::string("fused kernel: expected the operands of port x"));
    const std::vector<OperandType> &operands = spec.operands[0].operands;
    auto fd = derive_fused(lib, *chain, operands);
    if (!fd) return unexpected("fused kernel: " + fd.error().message);
    if (!chain->has_tail())
        return make_body(spec, &*chain, &*fd, chain->members.size(), static_cast<int>(operands.size()));

    // A normalization tail: f32 only, and this piece holds whole normalized slices.
    const FusedMember &t = chain->members.back();
    const OpDef *tdef = lib.find(t.kind);
    const Params tp = lib.with_defaults(*tdef, t.params);
    const Derivation &td = fd->members.back();
    const ZPoint &shape = td.outputs.at(0).operands.at(0).shape;
    if (td.outputs.at(0).operands.at(0).dtype != DType::f32)
        return unexpected("fused kernel: a " + t.kind + " tail runs on f32 only");
    for (const OperandType &o : operands)
        if (o.dtype != DType::f32) return unexpected("fused kernel: a " + t.kind + " tail runs on f32 only");
    const int rank = shape.rank();
    const int axis = static_cast<int>(t.params.get_int("axis", -1) < 0 ? t.params.get_int("axis", -1) + rank
                                                                         : t.params.get_int("axis", -1));
    if (axis < 0 || axis >= rank) return unexpected(std::string("fused kernel: the tail's axis is out of range"));
    if (spec.index_range.rank() != rank || spec.output_shapes.size() != 1 || spec.output_shapes[0].rank() != rank)
        return unexpected(std::string("fused kernel: unexpected views for the tail"));
    for (int d = axis; d < (t.kind == "softmax" ? axis + 1 : rank); ++d)
        if (spec.index_range.shape()[d] != shape[d] || spec.output_shapes[0][d] != shape[d])
            return unexpected("fused kernel: this piece splits the " + t.kind + "'s normalized axis " +
                              std::to_string(d) + " (" + std::to_string(spec.index_range.shape()[d]) + " of " +
                              std::to_string(shape[d]) + ")");
    int tail_count = 0, gamma = -1, beta = -1;
    for (size_t k = 0; k < fd->tail_operand.size(); ++k) {
        const int idx = fd->tail_operand[k];
        if (idx < 0) continue;
        ++tail_count;
        (k == 0 ? gamma : beta) = idx;
    }
    const int chain_inputs = static_cast<int>(operands.size()) - tail_count;
    KernelSpec body = spec;
    body.input_shapes.resize(std::min(body.input_shapes.size(), static_cast<size_t>(chain_inputs)));
    if (body.input_strides.size() > static_cast<size_t>(chain_inputs)) body.input_strides.resize(static_cast<size_t>(chain_inputs));
    if (body.constant_inputs.size() > static_cast<size_t>(chain_inputs)) body.constant_inputs.resize(static_cast<size_t>(chain_inputs));
    auto inner = make_body(body, &*chain, &*fd, chain->members.size() - 1, chain_inputs);
    if (!inner) return unexpected(inner.error());
    const auto norm = t.kind == "softmax"     ? NormTailKernel::Norm::softmax
                      : t.kind == "layernorm" ? NormTailKernel::Norm::layernorm
                                              : NormTailKernel::Norm::rmsnorm;
    return std::unique_ptr<Kernel>(new NormTailKernel(std::move(inner).value(), chain_inputs, norm, axis,
                                                      tp.get_float("epsilon", 0), gamma, beta));
}

Expected<std::unique_ptr<Kernel>, std::string> make_body(const KernelSpec &spec, const FusedChain *chain,
                                                         const FusedDerivation *fd, size_t body, int chain_inputs) {
    const OpLibrary &lib = OpLibrary::standard();
    const std::vector<OperandType> operands(spec.operands[0].operands.begin(),
                                            spec.operands[0].operands.begin() + chain_inputs);
    const FusedMember &head = chain->members.front();
    const OpDef *hdef = lib.find(head.kind);
    const int own = chain->head_operand_count();

    if (onednn_head(head.kind)) {
        const KernelFactory *factory = find_kernel(head.kind);
        if (!factory) return unexpected("fused kernel: no CPU kernel for " + head.kind);
        KernelSpec h = spec;
        h.def = hdef;
        h.params = lib.with_defaults(*hdef, head.params);
        h.derivation = fd->members.front();
        h.operands.clear();
        const auto ports = hdef->input_ports();
        for (size_t p = 0, next = 0; p < ports.size(); ++p)
            if (chain->head_operands[p] > 0) h.operands.push_back(PortTypes{ports[p].name, {operands[next++]}});
        h.epilogues.clear();
        for (size_t k = 1; k < body; ++k) {
            const FusedMember &m = chain->members[k];
            const OpDef *mdef = lib.find(m.kind);
            Epilogue e;
            e.kind = m.kind;
            e.params = lib.with_defaults(*mdef, m.params);
            const int extra = fd->extra_operand[k - 1];
            if (extra >= 0) {
                if (m.chain_port == 1 && (m.kind == "sub" || m.kind == "div"))
                    return unexpected("fused kernel: oneDNN post-ops compute value " + m.kind +
                                      " operand; member " + std::to_string(k) + " has the value on the right");
                e.extra_input = extra - own;
                if (chain->has_tail()) {
                    // The fused op reads it through the tail's windows; the head's
                    // post-op reads the member's own projection (the head's output
                    // projection is the identity under a tail).
                    const auto mports = mdef->input_ports();
                    const OperandProjection *p =
                        fd->members[k].signature.input(mports[m.chain_port == 0 ? 1 : 0].name, 0);
                    if (!p) return unexpected(std::string("fused kernel: a binary member without its projection"));
                    e.projection = *p;
                } else {
                    e.projection = fd->fused.signature.inputs.at(0).operands.at(static_cast<size_t>(extra));
                }
            }
            if (!factory->can_fuse || !factory->can_fuse(h, e)) {
                // can_fuse answers yes or no. Where the head is refused even without
                // this post-op (a matmul too large for oneDNN), that is the reason.
                if (auto alone = factory->make(h); !alone) return unexpected("fused kernel: " + alone.error());
                return unexpected("fused kernel: the " + head.kind + " kernel cannot take " + m.kind +
                                  " (member " + std::to_string(k) + ") as a post-op here");
            }
            h.epilogues.push_back(std::move(e));
        }
        return factory->make(h);
    }

    // An elementwise chain: f32 throughout.
    for (const OperandType &t : operands)
        if (t.dtype != DType::f32)
            return unexpected("fused kernel: an elementwise chain runs on f32 only, got " + std::string(dtype_name(t.dtype)));
    for (size_t k = 0; k < body; ++k)
        if (fd->members[k].outputs.at(0).operands.at(0).dtype != DType::f32)
            return unexpected(std::string("fused kernel: an elementwise chain runs on f32 only"));
    if (spec.output_shapes.size() != 1 || spec.input_shapes.size() != operands.size())
        return unexpected(std::string("fused kernel: unexpected operands"));
    std::vector<Member> members;
    for (size_t k = 0; k < body; ++k) {
        const FusedMember &m = chain->members[k];
        const OpDef *mdef = lib.find(m.kind);
        const Params p = lib.with_defaults(*mdef, m.params);
        auto fn = fn_of(m.kind, p);
        if (!fn) return unexpected("fused kernel: no fused loop for " + m.kind);
        Member mem;
        mem.fn = *fn;
        std::tie(mem.a, mem.b) = unary_constants(m.kind, p);
        if (k == 0) {
            if (binary(*fn) != (own == 2)) return unexpected(std::string("fused kernel: head arity"));
        } else if (fd->extra_operand[k - 1] >= 0) {
            mem.other = fd->extra_operand[k - 1];
            mem.value_left = m.chain_port == 0;
        }
        members.push_back(mem);
    }
    // Every input view must broadcast to the output view (right-aligned).
    const ZPoint &ys = spec.output_shapes[0];
    for (const ZPoint &s : spec.input_shapes) {
        if (s.rank() > ys.rank()) return unexpected(std::string("fused kernel: an operand has a higher rank than y"));
        for (int d = 0; d < s.rank(); ++d)
            if (s[d] != 1 && s[d] != ys[ys.rank() - s.rank() + d])
                return unexpected("fused kernel: operand " + s.to_string() + " does not broadcast to " + ys.to_string());
    }
    return std::unique_ptr<Kernel>(new FusedElementwiseKernel(std::move(members), own));
}

}  // namespace

void register_kernels_fused(std::vector<KernelFactory> &out) {
    // A fused op takes no further epilogues from the executor: the fusion pass
    // builds whole chains.
    out.push_back({"fused", [](const KernelSpec &, const Epilogue &) { return false; }, make_fused});
}

}  // namespace tapestry::cpu
