// The elementwise CUDA kernel factories (runtime/cuda/kernel.h): the unary kinds,
// the binary kinds with NumPy broadcasting, and cast — each a strided loop over
// its views (elementwise_launch.h), the element math of runtime/cuda/element_math.h.
#include <array>
#include <cfloat>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/elementwise_launch.h"

namespace tapestry::cuda {

namespace {

using Strides = std::vector<std::int64_t>;

std::string shape_text(const ZPoint &shape) {
    std::string s = "[";
    for (int d = 0; d < shape.rank(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "]";
}

// An operand's strides against the output's dims: right-aligned, stride 0 along the
// dims it is broadcast over (extent 1 where the output's is not); none when its
// shape does not broadcast to the output's.
std::optional<Strides> broadcast_strides(const ZPoint &shape, const Strides &strides, const ZPoint &out) {
    if (shape.rank() > out.rank()) return std::nullopt;
    Strides s(static_cast<size_t>(out.rank()), 0);
    const int offset = out.rank() - shape.rank();
    for (int d = 0; d < shape.rank(); ++d) {
        if (shape[d] == out[offset + d])
            s[static_cast<size_t>(offset + d)] = strides[static_cast<size_t>(d)];
        else if (shape[d] != 1)
            return std::nullopt;
    }
    return s;
}

// The loop over `out`'s points with K stride sets (LoopBuilder: extent-1 dims
// dropped, contiguous dims merged); fails beyond kMaxLoopRank dims.
template <int K>
Expected<Loop<K>, std::string> make_loop(const ZPoint &out, const std::array<Strides, K> &sets) {
    LoopBuilder<K> builder;
    for (int d = 0; d < out.rank(); ++d) {
        std::array<std::int64_t, K> step{};
        for (int k = 0; k < K; ++k) step[static_cast<size_t>(k)] = sets[static_cast<size_t>(k)][static_cast<size_t>(d)];
        builder.add(out[d], step);
    }
    auto loop = builder.build();
    if (!loop)
        return unexpected("views of " + std::to_string(out.rank()) + " dims that merge into more than " +
                          std::to_string(kMaxLoopRank));
    return *loop;
}

// The run's views against what the kernel was made for: their layouts (a
// mismatch is a backend bug, named rather than computed on), dtypes and data.
Status check_views(const std::string &kind, const ViewLayouts &layouts, std::span<const View> inputs,
                   std::span<const View> outputs, const std::vector<DType> &dtypes) {
    if (auto bad = layouts.mismatch(inputs, outputs)) return unexpected(kind + " kernel: " + *bad);
    for (size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
        const bool input = i < inputs.size();
        const View &v = input ? inputs[i] : outputs[i - inputs.size()];
        const std::string which =
            (input ? "input view " + std::to_string(i) : "output view " + std::to_string(i - inputs.size()));
        if (v.dtype != dtypes[i])
            return unexpected(kind + " kernel: " + which + " is " + std::string(dtype_name(v.dtype)) + ", made for " +
                              std::string(dtype_name(dtypes[i])));
        if (v.elements() > 0 && !v.data) return unexpected(kind + " kernel: " + which + " has no data");
    }
    return std::monostate{};
}

bool float_dtype(DType t) {
    return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

std::string dtype_text(DType t) {
    return std::string(dtype_name(t));
}

DType output_dtype(const KernelSpec &spec, DType fallback) {
    if (!spec.derivation.outputs.empty() && !spec.derivation.outputs[0].operands.empty())
        return spec.derivation.outputs[0].operands[0].dtype;
    return fallback;
}

std::optional<DType> input_dtype(const KernelSpec &spec, size_t port) {
    if (port < spec.operands.size() && !spec.operands[port].operands.empty())
        return spec.operands[port].operands[0].dtype;
    return std::nullopt;
}

// ---- unary ----------------------------------------------------------------------------

// The function and its two constants for a unary kind (params with defaults filled).
Expected<UnaryArgs, std::string> unary_of(const std::string &kind, const Params &p) {
    static const std::map<std::string, UnaryFn> plain{{"relu", UnaryFn::relu},
                                                      {"sigmoid", UnaryFn::sigmoid},
                                                      {"tanh", UnaryFn::tanh},
                                                      {"exp", UnaryFn::exp},
                                                      {"log", UnaryFn::log},
                                                      {"neg", UnaryFn::neg},
                                                      {"abs", UnaryFn::abs},
                                                      {"erf", UnaryFn::erf},
                                                      {"sqrt", UnaryFn::sqrt},
                                                      {"reciprocal", UnaryFn::reciprocal},
                                                      {"softplus", UnaryFn::softplus},
                                                      {"softsign", UnaryFn::softsign},
                                                      {"hard_swish", UnaryFn::hard_swish}};
    UnaryArgs u;
    auto f = [&](const char *name, double fallback) { return static_cast<float>(p.get_float(name, fallback)); };
    if (auto it = plain.find(kind); it != plain.end()) {
        u.fn = it->second;
    } else if (kind == "gelu") {
        const std::string form = p.get_string("approximate", "none");
        if (form != "none" && form != "tanh")
            return unexpected("gelu kernel: no CUDA kernel for approximate=\"" + form + "\" (none or tanh)");
        u.fn = form == "tanh" ? UnaryFn::gelu_tanh : UnaryFn::gelu_erf;
    } else if (kind == "leaky_relu") {
        u.fn = UnaryFn::leaky_relu;
        u.a = f("alpha", 0.01);
    } else if (kind == "elu") {
        u.fn = UnaryFn::elu;
        u.a = f("alpha", 1.0);
    } else if (kind == "selu") {
        u.fn = UnaryFn::selu;
        u.a = f("alpha", 1.6732632423543772);
        u.b = f("gamma", 1.0507009873554805);
    } else if (kind == "hard_sigmoid") {
        u.fn = UnaryFn::hard_sigmoid;
        u.a = f("alpha", 0.2);
        u.b = f("beta", 0.5);
    } else if (kind == "clip") {
        // A bound at or beyond ±FLT_MAX is none (element::clip); beyond, the float is ±inf.
        u.fn = UnaryFn::clip;
        u.a = f("min", -FLT_MAX);
        u.b = f("max", FLT_MAX);
    } else if (kind == "pow") {
        u.fn = UnaryFn::pow;
        u.a = f("exponent", 1.0);
    } else {
        return unexpected("no CUDA elementwise kernel for kind '" + kind + "'");
    }
    return u;
}

class UnaryKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        const std::string kind(spec.def->kind());
        if (spec.input_shapes.size() != 1 || spec.output_shapes.size() != 1)
            return unexpected(kind + " kernel: expected one input and one output view");
        auto args = unary_of(kind, spec.params);
        if (!args) return unexpected(args.error());
        args->x = input_dtype(spec, 0).value_or(DType::f32);
        args->y = output_dtype(spec, args->x);
        for (DType t : {args->x, args->y})
            if (!float_dtype(t)) return unexpected(kind + " kernel: no CUDA kernel for dtype " + dtype_text(t));
        if (spec.input_shapes[0] != spec.output_shapes[0])
            return unexpected(kind + " kernel: x view " + shape_text(spec.input_shapes[0]) + " and y view " +
                              shape_text(spec.output_shapes[0]) + " differ");
        const ViewLayouts layouts(spec);
        auto loop = make_loop<2>(spec.output_shapes[0], {layouts.input(0), layouts.output(0)});
        if (!loop) return unexpected(kind + " kernel: " + loop.error());
        args->loop = *loop;
        return std::unique_ptr<Kernel>(new UnaryKernel(kind, layouts, *args));
    }

    Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *, cudaStream_t stream) override {
        if (auto bad = check_views(kind_, layouts_, inputs, outputs, {args_.x, args_.y}); !bad) return bad;
        return launch_unary(args_, inputs[0].data, outputs[0].data, stream);
    }

    std::vector<std::string> notes() const override {
        return {kind_ + ": own CUDA kernel, " + dtype_text(args_.x) + " computed in f32 over a " +
                std::to_string(args_.loop.rank) + "-dim loop (16-byte vectors when dense and aligned)"};
    }

private:
    UnaryKernel(std::string kind, ViewLayouts layouts, UnaryArgs args)
        : kind_(std::move(kind)), layouts_(std::move(layouts)), args_(args) {}
    std::string kind_;
    ViewLayouts layouts_;
    UnaryArgs args_;
};

// ---- binary ---------------------------------------------------------------------------

std::optional<BinaryFn> binary_of(const std::string &kind) {
    static const std::map<std::string, BinaryFn> fns{{"add", BinaryFn::add}, {"sub", BinaryFn::sub},
                                                     {"mul", BinaryFn::mul}, {"div", BinaryFn::div},
                                                     {"max", BinaryFn::max}, {"min", BinaryFn::min}};
    const auto it = fns.find(kind);
    if (it == fns.end()) return std::nullopt;
    return it->second;
}

class BinaryKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        const std::string kind(spec.def->kind());
        if (spec.input_shapes.size() != 2 || spec.output_shapes.size() != 1)
            return unexpected(kind + " kernel: expected two input views (a, b) and one output view");
        const auto fn = binary_of(kind);
        if (!fn) return unexpected("no CUDA binary kernel for kind '" + kind + "'");
        BinaryArgs args;
        args.fn = *fn;
        args.a = input_dtype(spec, 0).value_or(DType::f32);
        args.b = input_dtype(spec, 1).value_or(args.a);
        args.y = output_dtype(spec, args.a);
        for (DType t : {args.a, args.b, args.y})
            if (!float_dtype(t)) return unexpected(kind + " kernel: no CUDA kernel for dtype " + dtype_text(t));
        // NumPy broadcasting as the views come: a and b right-aligned to y's view.
        const ViewLayouts layouts(spec);
        const ZPoint &out = spec.output_shapes[0];
        const auto a = broadcast_strides(spec.input_shapes[0], layouts.input(0), out);
        const auto b = broadcast_strides(spec.input_shapes[1], layouts.input(1), out);
        if (!a || !b)
            return unexpected(kind + " kernel: " + std::string(!a ? "a" : "b") + " view " +
                              shape_text(spec.input_shapes[!a ? 0 : 1]) + " does not broadcast to the y view " +
                              shape_text(out));
        auto loop = make_loop<3>(out, {*a, *b, layouts.output(0)});
        if (!loop) return unexpected(kind + " kernel: " + loop.error());
        args.loop = *loop;
        return std::unique_ptr<Kernel>(new BinaryKernel(kind, layouts, args));
    }

    Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *, cudaStream_t stream) override {
        if (auto bad = check_views(kind_, layouts_, inputs, outputs, {args_.a, args_.b, args_.y}); !bad) return bad;
        return launch_binary(args_, inputs[0].data, inputs[1].data, outputs[0].data, stream);
    }

    std::vector<std::string> notes() const override {
        return {kind_ + ": own CUDA kernel, " + dtype_text(args_.y) + " computed in f32 over a " +
                std::to_string(args_.loop.rank) +
                "-dim loop with broadcasting (16-byte vectors when dense and aligned)"};
    }

private:
    BinaryKernel(std::string kind, ViewLayouts layouts, BinaryArgs args)
        : kind_(std::move(kind)), layouts_(std::move(layouts)), args_(args) {}
    std::string kind_;
    ViewLayouts layouts_;
    BinaryArgs args_;
};

// ---- cast -----------------------------------------------------------------------------

class CastKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        if (spec.input_shapes.size() != 1 || spec.output_shapes.size() != 1 || spec.derivation.outputs.empty() ||
            spec.derivation.outputs[0].operands.empty())
            return unexpected(std::string("cast kernel: expected one input and one output view"));
        CastArgs args;
        args.from = input_dtype(spec, 0).value_or(DType::f32);
        args.to = spec.derivation.outputs[0].operands[0].dtype;
        if (spec.input_shapes[0] != spec.output_shapes[0])
            return unexpected("cast kernel: x view " + shape_text(spec.input_shapes[0]) + " and y view " +
                              shape_text(spec.output_shapes[0]) + " differ");
        const ViewLayouts layouts(spec);
        auto loop = make_loop<2>(spec.output_shapes[0], {layouts.input(0), layouts.output(0)});
        if (!loop) return unexpected("cast kernel: " + loop.error());
        args.loop = *loop;
        return std::unique_ptr<Kernel>(new CastKernel(layouts, args));
    }

    Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *, cudaStream_t stream) override {
        if (auto bad = check_views("cast", layouts_, inputs, outputs, {args_.from, args_.to}); !bad) return bad;
        return launch_cast(args_, inputs[0].data, outputs[0].data, stream);
    }

    std::vector<std::string> notes() const override {
        return {"cast: own CUDA kernel, " + dtype_text(args_.from) + " to " + dtype_text(args_.to) + " over a " +
                std::to_string(args_.loop.rank) + "-dim loop"};
    }

private:
    CastKernel(ViewLayouts layouts, CastArgs args) : layouts_(std::move(layouts)), args_(args) {}
    ViewLayouts layouts_;
    CastArgs args_;
};

}  // namespace

std::vector<KernelFactory> elementwise_factories() {
    std::vector<KernelFactory> out;
    auto unary = [](const KernelSpec &spec, Context &) { return UnaryKernel::make(spec); };
    auto binary = [](const KernelSpec &spec, Context &) { return BinaryKernel::make(spec); };
    for (const char *kind : {"relu",       "gelu", "sigmoid", "tanh",         "exp",      "log",      "neg",
                             "abs",        "erf",  "sqrt",    "reciprocal",   "softplus", "softsign", "hard_swish",
                             "leaky_relu", "elu",  "selu",    "hard_sigmoid", "clip",     "pow"})
        out.push_back({kind, unary});
    for (const char *kind : {"add", "sub", "mul", "div", "max", "min"}) out.push_back({kind, binary});
    out.push_back({"cast", [](const KernelSpec &spec, Context &) { return CastKernel::make(spec); }});
    return out;
}

}  // namespace tapestry::cuda
