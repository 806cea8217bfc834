// The CPU kernel of the `fused` kind (ops/fused.h): a matmul, linear or conv2d
// head runs as its own kernel with the epilogues as oneDNN post-ops (each one
// accepted by the head's can_fuse, as the executor's epilogue fusion asks); an
// elementwise chain runs as one loop over the output, in double precision per
// element, reading every operand through its broadcast strides.
#include <cmath>

#include "ops/fused.h"
#include "ops/library.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {
namespace {

enum class Fn { relu, sigmoid, tanh_, exp_, erf_, sqrt_, pow_, gelu_erf, gelu_tanh, add, sub, mul, div };

std::optional<Fn> fn_of(const std::string &kind, const Params &params) {
    if (kind == "relu") return Fn::relu;
    if (kind == "sigmoid") return Fn::sigmoid;
    if (kind == "tanh") return Fn::tanh_;
    if (kind == "exp") return Fn::exp_;
    if (kind == "erf") return Fn::erf_;
    if (kind == "sqrt") return Fn::sqrt_;
    if (kind == "pow") return Fn::pow_;
    if (kind == "gelu") {
        const std::string a = params.get_string("approximate", "none");
        if (a == "none") return Fn::gelu_erf;
        if (a == "tanh") return Fn::gelu_tanh;
        return std::nullopt;
    }
    if (kind == "add") return Fn::add;
    if (kind == "sub") return Fn::sub;
    if (kind == "mul") return Fn::mul;
    if (kind == "div") return Fn::div;
    return std::nullopt;
}

double apply1(Fn f, double x, double p) {
    switch (f) {
        case Fn::relu: return x > 0 ? x : 0;
        case Fn::sigmoid: return 1 / (1 + std::exp(-x));
        case Fn::tanh_: return std::tanh(x);
        case Fn::exp_: return std::exp(x);
        case Fn::erf_: return std::erf(x);
        case Fn::sqrt_: return std::sqrt(x);
        case Fn::pow_: return std::pow(x, p);
        case Fn::gelu_erf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        case Fn::gelu_tanh: {
            const double c = std::sqrt(2.0 / 3.14159265358979323846);
            return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
        }
        default: return x;
    }
}

double apply2(Fn f, double a, double b) {
    switch (f) {
        case Fn::add: return a + b;
        case Fn::sub: return a - b;
        case Fn::mul: return a * b;
        case Fn::div: return a / b;
        default: return a;
    }
}

bool binary(Fn f) { return f == Fn::add || f == Fn::sub || f == Fn::mul || f == Fn::div; }

// One member of an elementwise chain: the function, pow's exponent, and for a
// binary member the input view of its other operand and whether the chain's
// value is its left operand.
struct Member {
    Fn fn = Fn::relu;
    double exponent = 1;
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
            double v = head_inputs_ == 2 ? apply2(h.fn, in(0), in(1)) : apply1(h.fn, in(0), h.exponent);
            for (size_t k = 1; k < members_.size(); ++k) {
                const Member &m = members_[k];
                if (m.other < 0)
                    v = apply1(m.fn, v, m.exponent);
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

bool onednn_head(const std::string &kind) { return kind == "matmul" || kind == "linear" || kind == "conv2d"; }

Expected<std::unique_ptr<Kernel>, std::string> make_fused(const KernelSpec &spec) {
    const OpLibrary &lib = OpLibrary::standard();
    auto chain = parse_fused_chain(spec.params);
    if (!chain) return unexpected("fused kernel: " + chain.error().message);
    if (spec.operands.size() != 1) return unexpected(std::string("fused kernel: expected the operands of port x"));
    const std::vector<OperandType> &operands = spec.operands[0].operands;
    auto fd = derive_fused(lib, *chain, operands);
    if (!fd) return unexpected("fused kernel: " + fd.error().message);
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
        for (size_t k = 1; k < chain->members.size(); ++k) {
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
                e.projection = fd->fused.signature.inputs.at(0).operands.at(static_cast<size_t>(extra));
            }
            if (!factory->can_fuse || !factory->can_fuse(h, e))
                return unexpected("fused kernel: the " + head.kind + " kernel cannot take " + m.kind +
                                  " (member " + std::to_string(k) + ") as a post-op here");
            h.epilogues.push_back(std::move(e));
        }
        return factory->make(h);
    }

    // An elementwise chain: f32 throughout.
    for (const OperandType &t : operands)
        if (t.dtype != DType::f32)
            return unexpected("fused kernel: an elementwise chain runs on f32 only, got " + std::string(dtype_name(t.dtype)));
    for (const Derivation &d : fd->members)
        if (d.outputs.at(0).operands.at(0).dtype != DType::f32)
            return unexpected(std::string("fused kernel: an elementwise chain runs on f32 only"));
    if (spec.output_shapes.size() != 1 || spec.input_shapes.size() != operands.size())
        return unexpected(std::string("fused kernel: unexpected operands"));
    std::vector<Member> members;
    for (size_t k = 0; k < chain->members.size(); ++k) {
        const FusedMember &m = chain->members[k];
        const OpDef *mdef = lib.find(m.kind);
        const Params p = lib.with_defaults(*mdef, m.params);
        auto fn = fn_of(m.kind, p);
        if (!fn) return unexpected("fused kernel: no fused loop for " + m.kind);
        Member mem;
        mem.fn = *fn;
        mem.exponent = p.get_float("exponent", 1.0);
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
