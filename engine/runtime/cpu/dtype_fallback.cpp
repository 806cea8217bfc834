// make_kernel (runtime/cpu/kernel.h): the factory's own kernel, or its f32 kernel
// behind a widening conversion where the native one cannot be made — oneDNN 2.6
// has no bf16 primitives below AVX-512 and no f16 compute at all on the CPU, and
// several of our loops are f32-only. Widening bf16/f16 to f32 is exact, and
// rounding the f32 result back once is what the oracle's semantics for 16-bit
// floats are (compute wide, store narrow), so the fallback is not an
// approximation of the native kernel but the same contract.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "common/checked_size.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/float_formats.h"
#include "runtime/cpu/memory_budget.h"

namespace tapestry::cpu {

namespace {

bool narrow_float(DType t) { return t == DType::bf16 || t == DType::f16; }

// Calls f(element offset, count, stride) for every innermost row of a strided box.
template <typename F> void for_each_row(const ZPoint &shape, const std::vector<std::int64_t> &strides, F &&f) {
    const int rank = shape.rank();
    if (rank == 0) {
        f(std::int64_t{0}, std::int64_t{1}, std::int64_t{1});
        return;
    }
    for (int d = 0; d < rank; ++d)
        if (shape[d] == 0) return;
    const std::int64_t inner = shape[rank - 1], inner_stride = strides[static_cast<size_t>(rank - 1)];
    std::vector<std::int64_t> at(static_cast<size_t>(rank), 0);
    while (true) {
        std::int64_t offset = 0;
        for (int d = 0; d + 1 < rank; ++d) offset += at[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
        f(offset, inner, inner_stride);
        int d = rank - 2;
        for (; d >= 0; --d) {
            if (++at[static_cast<size_t>(d)] < shape[d]) break;
            at[static_cast<size_t>(d)] = 0;
        }
        if (d < 0) return;
    }
}

// A strided bf16/f16 view → a dense f32 buffer (exact).
void widen(const View &v, float *out) {
    const auto *src = reinterpret_cast<const std::uint16_t *>(v.data);
    const bool bf16 = v.dtype == DType::bf16;
    for_each_row(v.shape, v.strides, [&](std::int64_t offset, std::int64_t n, std::int64_t stride) {
        const std::uint16_t *p = src + offset;
        if (bf16)
            for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(p[i * stride]);
        else
            for (std::int64_t i = 0; i < n; ++i) out[i] = f16_to_float(p[i * stride]);
        out += n;
    });
}

// A dense f32 buffer → a strided bf16/f16 view, rounded to nearest even.
void narrow(const float *in, const View &v) {
    auto *dst = reinterpret_cast<std::uint16_t *>(v.data);
    const bool bf16 = v.dtype == DType::bf16;
    for_each_row(v.shape, v.strides, [&](std::int64_t offset, std::int64_t n, std::int64_t stride) {
        std::uint16_t *p = dst + offset;
        if (bf16)
            for (std::int64_t i = 0; i < n; ++i) p[i * stride] = float_to_bf16(in[i]);
        else
            for (std::int64_t i = 0; i < n; ++i) p[i * stride] = float_to_f16(in[i]);
        in += n;
    });
}

View dense_f32_view(std::vector<float> &buffer, const ZPoint &shape) {
    View v;
    v.data = reinterpret_cast<std::byte *>(buffer.data());
    v.dtype = DType::f32;
    v.shape = shape;
    v.strides = dense_strides(shape);
    return v;
}

// One view of the wrapped kernel: passed through, or staged through f32.
struct Stage {
    bool widened = false;
    ZPoint shape;
    std::vector<float> buffer;
    // A constant input (KernelSpec::constant_inputs): its bytes and their f32
    // copy, made once; the inner kernel was told that copy is the constant.
    const std::byte *constant = nullptr;
    std::vector<float> constant_f32;
};

class WideningKernel final : public Kernel {
public:
    WideningKernel(std::unique_ptr<Kernel> inner, std::vector<Stage> inputs, std::vector<Stage> outputs)
        : inner_(std::move(inner)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        std::vector<View> in(inputs.begin(), inputs.end()), out(outputs.begin(), outputs.end());
        for (size_t i = 0; i < in.size() && i < inputs_.size(); ++i) {
            Stage &s = inputs_[i];
            if (!s.widened) continue;
            if (s.constant && inputs[i].data == s.constant) {
                in[i] = dense_f32_view(s.constant_f32, s.shape);
                continue;
            }
            widen(inputs[i], s.buffer.data());
            in[i] = dense_f32_view(s.buffer, s.shape);
        }
        for (size_t i = 0; i < out.size() && i < outputs_.size(); ++i) {
            Stage &s = outputs_[i];
            if (!s.widened) continue;
            // The output's current values go in first: a kernel that leaves part of
            // its view unwritten (holes of a sharded attention) must leave it as it
            // was, and bf16/f16 → f32 → bf16/f16 is the identity.
            widen(outputs[i], s.buffer.data());
            out[i] = dense_f32_view(s.buffer, s.shape);
        }
        inner_->run(in, out);
        for (size_t i = 0; i < out.size() && i < outputs_.size(); ++i)
            if (outputs_[i].widened) narrow(outputs_[i].buffer.data(), outputs[i]);
    }

    std::size_t scratch_bytes() const override {
        std::size_t bytes = inner_->scratch_bytes();
        for (const auto *stages : {&inputs_, &outputs_})
            for (const Stage &s : *stages) bytes += (s.buffer.size() + s.constant_f32.size()) * sizeof(float);
        return bytes;
    }
    std::vector<std::string> notes() const override { return inner_->notes(); }

private:
    std::unique_ptr<Kernel> inner_;
    std::vector<Stage> inputs_, outputs_;
};

// The dtype of each input view: the op's operands in port order, then the
// epilogues' extra operands (elementwise on the output: its dtype).
std::vector<DType> input_view_dtypes(const KernelSpec &spec) {
    std::vector<DType> out;
    for (const PortTypes &p : spec.operands)
        for (const OperandType &o : p.operands) out.push_back(o.dtype);
    DType result = out.empty() ? DType::f32 : out.front();
    if (!spec.derivation.outputs.empty() && !spec.derivation.outputs.front().operands.empty())
        result = spec.derivation.outputs.front().operands.front().dtype;
    while (out.size() < spec.input_shapes.size()) out.push_back(result);
    return out;
}

std::vector<DType> output_view_dtypes(const KernelSpec &spec) {
    std::vector<DType> out;
    for (const PortTypes &p : spec.derivation.outputs)
        for (const OperandType &o : p.operands) out.push_back(o.dtype);
    return out;
}

bool has_narrow_floats(const KernelSpec &spec) {
    for (const DType t : input_view_dtypes(spec))
        if (narrow_float(t)) return true;
    for (const DType t : output_view_dtypes(spec))
        if (narrow_float(t)) return true;
    return false;
}

// The spec with its bf16/f16 operands (and so its outputs) retyped to f32; the
// views, strides and constants still those of the narrow spec.
std::optional<KernelSpec> widened_types(const KernelSpec &spec) {
    if (!spec.def) return std::nullopt;
    KernelSpec wide = spec;
    for (PortTypes &p : wide.operands)
        for (OperandType &o : p.operands)
            if (narrow_float(o.dtype)) o.dtype = DType::f32;
    auto derivation = spec.def->derive(spec.params, wide.operands);
    if (!derivation) return std::nullopt;
    wide.derivation = std::move(derivation).value();
    return wide;
}

// The f32 kernel behind a widening conversion, or an error saying why not.
Expected<std::unique_ptr<Kernel>, std::string> make_widened(const KernelFactory &factory, const KernelSpec &spec) {
    auto typed = widened_types(spec);
    if (!typed) return unexpected(std::string("the op has no f32 form"));
    KernelSpec wide = std::move(typed).value();

    const std::vector<DType> in_types = input_view_dtypes(spec), out_types = output_view_dtypes(spec);
    if (out_types.size() != spec.output_shapes.size()) return unexpected(std::string("unexpected output views"));
    // The f32 copies are made now: their bytes (overflow-checked) are checked
    // against what this process may still allocate before any of them is.
    std::int64_t staged = 0;
    for (size_t i = 0; i < spec.input_shapes.size() && i < in_types.size(); ++i)
        if (narrow_float(in_types[i])) staged = size_add(staged, size_mul(spec.input_shapes[i].product(), 4));
    for (size_t i = 0; i < spec.output_shapes.size(); ++i)
        if (narrow_float(out_types[i])) staged = size_add(staged, size_mul(spec.output_shapes[i].product(), 4));
    if (auto fits = check_allocation(staged, "its f32 copies of the 16-bit operands"); !fits) return unexpected(fits.error());
    std::vector<Stage> inputs(spec.input_shapes.size()), outputs(spec.output_shapes.size());
    wide.input_strides.resize(spec.input_shapes.size());
    wide.output_strides.resize(spec.output_shapes.size());
    wide.constant_inputs.resize(spec.input_shapes.size(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!narrow_float(in_types[i])) continue;
        Stage &s = inputs[i];
        s.widened = true;
        s.shape = spec.input_shapes[i];
        s.buffer.resize(static_cast<size_t>(s.shape.product()));
        wide.input_strides[i] = {};  // dense
        if (i < spec.constant_inputs.size() && spec.constant_inputs[i]) {
            s.constant = spec.constant_inputs[i];
            s.constant_f32.resize(s.buffer.size());
            View v;
            v.data = const_cast<std::byte *>(s.constant);
            v.dtype = in_types[i];
            v.shape = s.shape;
            v.strides = spec_input_strides(spec, i);
            widen(v, s.constant_f32.data());
            wide.constant_inputs[i] = reinterpret_cast<const std::byte *>(s.constant_f32.data());
        } else {
            wide.constant_inputs[i] = nullptr;
        }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
        if (!narrow_float(out_types[i])) continue;
        Stage &s = outputs[i];
        s.widened = true;
        s.shape = spec.output_shapes[i];
        s.buffer.resize(static_cast<size_t>(s.shape.product()));
        wide.output_strides[i] = {};
    }
    auto inner = factory.make(wide);
    if (!inner) return unexpected(inner.error());
    return std::unique_ptr<Kernel>(
        std::make_unique<WideningKernel>(std::move(inner).value(), std::move(inputs), std::move(outputs)));
}

}  // namespace

Expected<MadeKernel, std::string> make_kernel(const KernelFactory &factory, const KernelSpec &spec) {
    auto native = factory.make(spec);
    if (native) return MadeKernel{std::move(native).value(), {}};
    if (!has_narrow_floats(spec) || !spec.def) return unexpected(native.error());
    auto wide = make_widened(factory, spec);
    if (!wide) return unexpected(native.error() + " (nor in f32: " + wide.error() + ")");
    std::string types;
    for (const DType t : {DType::bf16, DType::f16}) {
        bool seen = false;
        for (const DType u : input_view_dtypes(spec)) seen = seen || u == t;
        for (const DType u : output_view_dtypes(spec)) seen = seen || u == t;
        if (seen) types += (types.empty() ? "" : "/") + std::string(dtype_name(t));
    }
    return MadeKernel{std::move(wide).value(), types + " computed in f32 (on " + cpu_isa().name +
                                                   " there is no native kernel: " + native.error() + ")"};
}

bool can_fuse(const KernelFactory &factory, const KernelSpec &spec, const Epilogue &epilogue) {
    if (!factory.can_fuse) return false;
    if (factory.can_fuse(spec, epilogue)) return true;
    if (!has_narrow_floats(spec)) return false;
    const auto wide = widened_types(spec);
    return wide && factory.can_fuse(*wide, epilogue);
}

}  // namespace tapestry::cpu
