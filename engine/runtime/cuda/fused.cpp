// The `fused` kind on CUDA (ops/fused.h). An elementwise head and its epilogues
// are one NVRTC-generated kernel (runtime/cuda/nvrtc.h); a matmul or linear head
// is one cuBLASLt call that applies the longest prefix of epilogues cuBLASLt has
// (bias, a residual add as its C, then relu or tanh-GELU), the rest an NVRTC kernel in place on the
// output; a conv2d head is cuDNN's convolution with a leading relu fused
// (conv.h), the rest generated; a product cuBLASLt cannot take in one call is
// the head's own kernel with every epilogue generated; a normalization tail is the
// generated row kernel, applying the epilogues still pending as it loads a row.
// The plan — which kernels, their sources and launch arguments — needs no GPU
// (fused_generated_kernels, compiled in CI); make() compiles and loads.
#include "ops/fused.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "ops/library.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/conv.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernel.h"
#include "runtime/cuda/nvrtc.h"

namespace tapestry::cuda {
namespace {

using Made = Expected<std::unique_ptr<Kernel>, std::string>;

std::string fail(const std::string &why) {
    return "fused kernel: " + why;
}

// The piece as the plan reads it: the chain, its derivation and the views.
struct Piece {
    const KernelSpec *spec = nullptr;
    FusedChain chain;
    FusedDerivation fd;
    std::vector<OperandType> operands;
    std::vector<ViewShape> inputs;
    ViewShape output;
    DType out_dtype = DType::f32;
    size_t body_end = 0;  // the members before the tail (all without one)
    std::optional<RowTail> tail;
    std::string tail_kind;
    int first_normalized = 0, normalized_count = 0;
};

// One generated kernel and where its inputs come from.
struct GeneratedPlan {
    bool rows = false;
    ElementProgram program;
    RowTail tail;
    std::vector<int> views;  // per kernel input: a piece input, or -1 for the piece's output (in place)
    ElementArgs element_args;
    RowArgs row_args;
    std::string source;
    std::string note;
};

// A product head as one cuBLASLt call with the leading epilogues.
struct GemmHead {
    GemmDesc desc;
    int a = 0, w = 1, bias = -1;  // piece inputs
    int addend = -1;              // a piece input added as cuBLASLt's C (a residual), or -1
};

struct FusedPlan {
    enum class Head { generated, gemm, kernel } head = Head::generated;
    std::optional<GemmHead> gemm;
    KernelSpec head_spec;                             // Head::kernel, and Head::gemm's fallback
    int head_inputs = 0;                              // the head kernel's inputs: the piece's first head_inputs
    bool conv_relu = false;                           // a conv2d head applies the first epilogue, a relu
    std::optional<GeneratedPlan> generated;           // after the head (the whole chain for Head::generated)
    std::optional<GeneratedPlan> fallback_generated;  // Head::gemm: every epilogue, if cuBLASLt refuses
    std::vector<std::string> notes;
};

ViewShape view_of(const std::vector<ZPoint> &shapes, const std::vector<std::vector<std::int64_t>> &strides, size_t i) {
    return ViewShape{shapes[i], i < strides.size() ? strides[i] : std::vector<std::int64_t>{}};
}

// The strides of a view (row-major when the spec gives none).
std::vector<std::int64_t> strides_or_dense(const ViewShape &v) {
    if (!v.strides.empty()) return v.strides;
    std::vector<std::int64_t> st(static_cast<size_t>(v.shape.rank()), 1);
    for (int d = v.shape.rank() - 2; d >= 0; --d)
        st[static_cast<size_t>(d)] = st[static_cast<size_t>(d + 1)] * v.shape[d + 1];
    return st;
}

Expected<Piece, std::string> read_piece(const KernelSpec &spec) {
    const OpLibrary &lib = OpLibrary::standard();
    Piece p;
    p.spec = &spec;
    auto chain = parse_fused_chain(spec.params);
    if (!chain) return unexpected(fail(chain.error().message));
    p.chain = std::move(chain).value();
    if (spec.operands.size() != 1) return unexpected(fail("expected the operands of port x"));
    p.operands = spec.operands[0].operands;
    auto fd = derive_fused(lib, p.chain, p.operands);
    if (!fd) return unexpected(fail(fd.error().message));
    p.fd = std::move(fd).value();
    if (spec.input_shapes.size() != p.operands.size() || spec.output_shapes.size() != 1)
        return unexpected(fail("expected " + std::to_string(p.operands.size()) +
                               " input views and 1 output view, got " + std::to_string(spec.input_shapes.size()) +
                               " and " + std::to_string(spec.output_shapes.size())));
    for (size_t i = 0; i < spec.input_shapes.size(); ++i)
        p.inputs.push_back(view_of(spec.input_shapes, spec.input_strides, i));
    p.output = view_of(spec.output_shapes, spec.output_strides, 0);
    p.out_dtype = p.fd.fused.outputs.at(0).operands.at(0).dtype;
    p.body_end = p.chain.members.size();
    if (!p.chain.has_tail()) return p;

    // A normalization tail: this piece must hold whole normalized slices.
    p.body_end -= 1;
    const FusedMember &t = p.chain.members.back();
    const OpDef *tdef = lib.find(t.kind);
    const Params tp = lib.with_defaults(*tdef, t.params);
    const ZPoint &shape = p.fd.members.back().outputs.at(0).operands.at(0).shape;
    const int rank = shape.rank();
    std::int64_t axis = tp.get_int("axis", -1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return unexpected(fail("the " + t.kind + " tail's axis is out of range"));
    if (spec.index_range.rank() != rank || p.output.shape.rank() != rank)
        return unexpected(fail("unexpected views for the " + t.kind + " tail"));
    p.tail_kind = t.kind;
    p.first_normalized = static_cast<int>(axis);
    p.normalized_count = t.kind == "softmax" ? 1 : rank - static_cast<int>(axis);
    for (int d = p.first_normalized; d < p.first_normalized + p.normalized_count; ++d)
        if (spec.index_range.shape()[d] != shape[d] || p.output.shape[d] != shape[d])
            return unexpected(fail("this piece splits the " + t.kind + "'s normalized axis " + std::to_string(d) +
                                   " (" + std::to_string(spec.index_range.shape()[d]) + " of " +
                                   std::to_string(shape[d]) + ")"));
    RowTail tail;
    tail.norm = t.kind == "softmax" ? RowNorm::softmax : t.kind == "layernorm" ? RowNorm::layernorm : RowNorm::rmsnorm;
    tail.epsilon = tp.get_float("epsilon", 0);
    for (size_t k = 0; k < p.fd.tail_operand.size(); ++k) (k == 0 ? tail.gamma : tail.beta) = p.fd.tail_operand[k];
    p.tail = tail;
    return p;
}

ElementStep step_of(const FusedMember &m, int operand) {
    const OpLibrary &lib = OpLibrary::standard();
    ElementStep s;
    s.kind = m.kind;
    if (const OpDef *def = lib.find(m.kind)) s.params = lib.with_defaults(*def, m.params);
    s.operand = operand;
    s.value_left = m.chain_port != 1;
    return s;
}

// The generated kernel for `program` over kernel inputs `views` (piece inputs,
// -1 the output), with the piece's tail when it has one.
Expected<GeneratedPlan, std::string> generate(const Piece &p, ElementProgram program, std::vector<int> views,
                                              const RowTail *tail) {
    GeneratedPlan g;
    std::vector<ViewShape> in;
    for (int v : views) in.push_back(v < 0 ? p.output : p.inputs[static_cast<size_t>(v)]);
    const std::string chain = describe(program);
    if (tail) {
        g.rows = true;
        g.tail = *tail;
        auto source = row_kernel_source(program, *tail);
        if (!source) return unexpected(fail(source.error()));
        auto args = row_args(in, p.output, p.first_normalized, p.normalized_count);
        if (!args) return unexpected(fail(args.error()));
        g.source = std::move(source).value();
        g.row_args = std::move(args).value();
        g.note = "NVRTC rows: " + chain + " → " + p.tail_kind + " over " + std::to_string(g.row_args.rows) +
                 " rows of " + std::to_string(g.row_args.row_length) + (g.row_args.shared_bytes ? " (cached)" : "");
    } else {
        auto source = elementwise_kernel_source(program);
        if (!source) return unexpected(fail(source.error()));
        auto args = elementwise_args(in, p.output);
        if (!args) return unexpected(fail(args.error()));
        g.source = std::move(source).value();
        g.element_args = std::move(args).value();
        g.note = "NVRTC elementwise: " + chain + " over " + std::to_string(g.element_args.elements) + " elements, " +
                 (g.element_args.narrow ? "32" : "64") + "-bit indices";
    }
    g.program = std::move(program);
    g.views = std::move(views);
    return g;
}

// An elementwise head: the whole chain (and tail) as one kernel over the piece's inputs.
Expected<GeneratedPlan, std::string> whole_chain(const Piece &p) {
    ElementProgram program;
    for (const OperandType &t : p.operands) program.inputs.push_back(t.dtype);
    program.output = p.out_dtype;
    program.head = step_of(p.chain.members.front(), -1);
    for (size_t k = 1; k < p.body_end; ++k)
        program.steps.push_back(step_of(p.chain.members[k], p.fd.extra_operand[k - 1]));
    std::vector<int> views;
    for (size_t i = 0; i < p.inputs.size(); ++i) views.push_back(static_cast<int>(i));
    return generate(p, std::move(program), std::move(views), p.tail ? &*p.tail : nullptr);
}

// The epilogues from member `first` on (after `bias`, a piece input added first
// when cuBLASLt could not take the head's bias) and the tail, in place on the
// head's output; nullopt when nothing is left.
Expected<std::optional<GeneratedPlan>, std::string> epilogue_kernel(const Piece &p, size_t first, int bias) {
    if (first >= p.body_end && bias < 0 && !p.tail) return std::optional<GeneratedPlan>();
    ElementProgram program;
    program.output = p.out_dtype;
    program.inputs.push_back(p.out_dtype);
    std::vector<int> views{-1};
    auto input = [&](int view) {
        views.push_back(view);
        program.inputs.push_back(p.operands[static_cast<size_t>(view)].dtype);
        return static_cast<int>(views.size()) - 1;
    };
    if (bias >= 0) {
        ElementStep add;
        add.kind = "add";
        add.operand = input(bias);
        program.steps.push_back(add);
    }
    for (size_t k = first; k < p.body_end; ++k) {
        const int extra = p.fd.extra_operand[k - 1];
        program.steps.push_back(step_of(p.chain.members[k], extra < 0 ? -1 : input(extra)));
    }
    std::optional<RowTail> tail = p.tail;
    if (tail) {
        if (tail->gamma >= 0) tail->gamma = input(tail->gamma);
        if (tail->beta >= 0) tail->beta = input(tail->beta);
    }
    auto g = generate(p, std::move(program), std::move(views), tail ? &*tail : nullptr);
    if (!g) return unexpected(g.error());
    return std::optional<GeneratedPlan>(std::move(g).value());
}

// ---- a product head as one cuBLASLt call -------------------------------------------

// A view right-aligned to `rank` dims (leading extent-1 dims of stride 0).
struct Box {
    std::vector<std::int64_t> shape, strides;
};

Box aligned(const ViewShape &v, int rank) {
    Box b{std::vector<std::int64_t>(static_cast<size_t>(rank), 1),
          std::vector<std::int64_t>(static_cast<size_t>(rank), 0)};
    const std::vector<std::int64_t> st = strides_or_dense(v);
    const int own = v.shape.rank();
    for (int d = 0; d < own && d < rank; ++d) {
        b.shape[static_cast<size_t>(rank - own + d)] = v.shape[d];
        b.strides[static_cast<size_t>(rank - own + d)] = st[static_cast<size_t>(d)];
    }
    return b;
}

bool gemm_dtypes(DType in, DType out) {
    return (in == DType::f32 && out == DType::f32) ||
           ((in == DType::bf16 || in == DType::f16) && (out == in || out == DType::f32));
}

// Whether piece input `i` is a bias row for a product of width n writing `out`:
// extent n along the last dim, 1 elsewhere, contiguous, y's dtype.
bool bias_row(const Piece &p, int i, std::int64_t n) {
    const ViewShape &v = p.inputs[static_cast<size_t>(i)];
    const int rank = v.shape.rank();
    if (rank < 1 || v.shape[rank - 1] != n || p.operands[static_cast<size_t>(i)].dtype != p.out_dtype) return false;
    for (int d = 0; d + 1 < rank; ++d)
        if (v.shape[d] != 1) return false;
    return n <= 1 || strides_or_dense(v)[static_cast<size_t>(rank - 1)] == 1;
}

// The descriptor of one cuBLASLt call computing a matmul/linear head's output
// view, or why there is none (batch dims that do not merge into one). With
// `addend` (a piece input of y's shape and dtype), the call adds it as its C.
Expected<GemmDesc, std::string> product_desc(const Piece &p, int addend = -1) {
    const bool linear = p.chain.members.front().kind == "linear";
    const ViewShape &yv = p.output;
    const int rank = std::max(2, yv.shape.rank());
    const Box a = aligned(p.inputs[0], rank), w = aligned(p.inputs[1], rank), y = aligned(yv, rank);
    const Box c = addend >= 0 ? aligned(p.inputs[static_cast<size_t>(addend)], rank) : y;
    if (addend >= 0 && (c.shape != y.shape || p.operands[static_cast<size_t>(addend)].dtype != p.out_dtype ||
                        p.inputs[static_cast<size_t>(addend)].shape.rank() > rank))
        return unexpected(std::string("the addend is not a view of y's shape and dtype"));
    const auto m = static_cast<size_t>(rank - 2), n = static_cast<size_t>(rank - 1);
    const DType in = p.operands[0].dtype;
    if (p.operands[1].dtype != in || !gemm_dtypes(in, p.out_dtype))
        return unexpected("cuBLASLt takes no " + std::string(dtype_name(in)) + "·" +
                          std::string(dtype_name(p.operands[1].dtype)) + " → " + std::string(dtype_name(p.out_dtype)));
    if (p.fd.members.front().outputs.at(0).operands.at(0).dtype != p.out_dtype)
        return unexpected(std::string("a cast in the chain changes the product's dtype"));
    GemmDesc d;
    d.m = y.shape[m];
    d.n = y.shape[n];
    d.k = a.shape[n];
    if (a.shape[m] != d.m || w.shape[n] != d.n || w.shape[m] != d.k)
        return unexpected(std::string("the views do not form a product"));
    d.a = {in, a.strides[m], a.strides[n], 0};
    d.w = {in, w.strides[m], w.strides[n], 0};
    d.y = {p.out_dtype, y.strides[m], y.strides[n], 0};
    d.addend = addend >= 0;
    d.c = {p.out_dtype, c.strides[m], c.strides[n], 0};
    if (d.addend && d.c.col_stride != 1 && d.n > 1) return unexpected(std::string("the addend's columns are strided"));
    d.tf32 = p.spec->tf32;
    // Batch dims (y's extent > 1): a's and w's strides, 0 where they broadcast.
    struct Dim {
        std::int64_t size, a, w, y, c;
    };
    std::vector<Dim> dims;
    for (size_t i = 0; i + 2 < static_cast<size_t>(rank); ++i) {
        if (y.shape[i] == 1) continue;
        if (y.shape[i] == 0) return unexpected(std::string("an empty view"));
        dims.push_back({y.shape[i], a.shape[i] == 1 ? 0 : a.strides[i], linear || w.shape[i] == 1 ? 0 : w.strides[i],
                        y.strides[i], c.strides[i]});
    }
    // Fold batch dims into m while a's and y's rows continue across them and w is shared.
    while (!dims.empty() && dims.back().w == 0 && (d.a.col_stride == 1 || d.k <= 1) &&
           (d.y.col_stride == 1 || d.n <= 1)) {
        const Dim &b = dims.back();
        if (d.m == 1) {
            // One row per batch: the batch stride becomes the row stride (cuBLASLt
            // needs a leading dimension of at least a row's length).
            if (b.a < std::max<std::int64_t>(d.k, 1) || b.y < std::max<std::int64_t>(d.n, 1) ||
                (d.addend && b.c < std::max<std::int64_t>(d.n, 1)))
                break;
            d.a.row_stride = b.a;
            d.y.row_stride = b.y;
            d.c.row_stride = b.c;
        } else if (b.a != d.a.row_stride * d.m || b.y != d.y.row_stride * d.m ||
                   (d.addend && b.c != d.c.row_stride * d.m)) {
            break;
        }
        d.m *= b.size;
        dims.pop_back();
    }
    // Merge neighbours that step evenly for all three.
    std::vector<Dim> merged;
    for (const Dim &b : dims) {
        if (!merged.empty()) {
            Dim &o = merged.back();
            if (o.a == b.a * b.size && o.w == b.w * b.size && o.y == b.y * b.size && o.c == b.c * b.size) {
                o = {o.size * b.size, b.a, b.w, b.y, b.c};
                continue;
            }
        }
        merged.push_back(b);
    }
    if (merged.size() > 1) return unexpected(std::to_string(merged.size()) + " batch dims that do not merge");
    if (merged.size() == 1) {
        if (merged[0].y == 0) return unexpected(std::string("a batch dim of y has stride 0"));
        d.batch = merged[0].size;
        d.a.batch_stride = merged[0].a;
        d.w.batch_stride = merged[0].w;
        d.y.batch_stride = merged[0].y;
        d.c.batch_stride = merged[0].c;
    }
    return d;
}

// The head's own CUDA kernel's spec (conv2d, or a product cuBLASLt cannot take in
// one call): its operands are the piece's first inputs.
KernelSpec head_spec(const Piece &p) {
    const OpLibrary &lib = OpLibrary::standard();
    const FusedMember &head = p.chain.members.front();
    const OpDef *def = lib.find(head.kind);
    KernelSpec h;
    h.def = def;
    h.params = lib.with_defaults(*def, head.params);
    h.derivation = p.fd.members.front();
    const auto ports = def->input_ports();
    for (size_t port = 0, next = 0; port < ports.size(); ++port)
        if (p.chain.head_operands[port] > 0) h.operands.push_back(PortTypes{ports[port].name, {p.operands[next++]}});
    h.index_range = p.spec->index_range;
    const auto own = static_cast<size_t>(p.chain.head_operand_count());
    for (size_t i = 0; i < own; ++i) {
        h.input_shapes.push_back(p.inputs[i].shape);
        h.input_strides.push_back(strides_or_dense(p.inputs[i]));
    }
    h.output_shapes = {p.output.shape};
    h.output_strides = {strides_or_dense(p.output)};
    h.tf32 = p.spec->tf32;
    return h;
}

Expected<FusedPlan, std::string> plan_fused(const KernelSpec &spec) {
    auto piece = read_piece(spec);
    if (!piece) return unexpected(piece.error());
    const Piece &p = *piece;
    const std::string &head = p.chain.members.front().kind;
    FusedPlan plan;
    if (head != "matmul" && head != "linear" && head != "conv2d") {
        auto g = whole_chain(p);
        if (!g) return unexpected(g.error());
        plan.generated = std::move(g).value();
        return plan;
    }
    if (p.fd.members.front().outputs.at(0).operands.at(0).dtype != p.out_dtype)
        return unexpected(fail("a cast after the " + head + " head changes the output's dtype; not supported"));
    plan.head_spec = head_spec(p);
    plan.head_inputs = p.chain.head_operand_count();
    plan.head = FusedPlan::Head::kernel;
    if (head == "conv2d") {
        // cuDNN applies a relu right after the convolution (and its bias).
        plan.conv_relu = p.body_end > 1 && p.chain.members[1].kind == "relu";
        auto rest = epilogue_kernel(p, plan.conv_relu ? 2 : 1, -1);
        if (!rest) return unexpected(rest.error());
        plan.generated = std::move(rest).value();
        return plan;
    }
    auto all = epilogue_kernel(p, 1, -1);
    if (!all) return unexpected(all.error());
    auto desc = product_desc(p);
    if (!desc) {
        plan.generated = std::move(all).value();
        plan.notes.push_back("the " + head + " head runs as its own kernel: " + desc.error());
        return plan;
    }
    // The longest prefix cuBLASLt applies: a bias (linear's own, or an add of a
    // bias row), a residual add (its C), then relu or tanh-GELU.
    GemmHead g;
    g.desc = *desc;
    size_t next = 1;
    int pending_bias = -1;
    const bool has_bias = head == "linear" && p.chain.head_operands.size() > 2 && p.chain.head_operands[2] > 0;
    if (has_bias) {
        if (bias_row(p, 2, g.desc.n))
            g.bias = 2;
        else
            pending_bias = 2;
    } else if (next < p.body_end && p.chain.members[next].kind == "add" && p.fd.extra_operand[next - 1] >= 0 &&
               bias_row(p, p.fd.extra_operand[next - 1], g.desc.n)) {
        g.bias = p.fd.extra_operand[next - 1];
        ++next;
    }
    // A residual add: cuBLASLt's C (D = a·w + bias + C before the activation), so
    // y is written once instead of re-read and re-written by a generated kernel.
    if (pending_bias < 0 && next < p.body_end && p.chain.members[next].kind == "add" &&
        p.fd.extra_operand[next - 1] >= 0) {
        if (auto with_c = product_desc(p, p.fd.extra_operand[next - 1])) {
            g.desc = *with_c;
            g.addend = p.fd.extra_operand[next - 1];
            ++next;
        }
    }
    if (pending_bias < 0 && next < p.body_end) {
        const FusedMember &m = p.chain.members[next];
        if (m.kind == "relu") {
            g.desc.epilogue = GemmEpilogue::relu;
            ++next;
        } else if (m.kind == "gelu" && m.params.get_string("approximate", "none") == "tanh") {
            g.desc.epilogue = GemmEpilogue::gelu_tanh;
            ++next;
        }
    }
    g.desc.bias = g.bias >= 0;
    auto rest = epilogue_kernel(p, next, pending_bias);
    if (!rest) return unexpected(rest.error());
    plan.head = FusedPlan::Head::gemm;
    plan.gemm = g;
    plan.generated = std::move(rest).value();
    plan.fallback_generated = std::move(all).value();
    return plan;
}

// ---- the kernel ------------------------------------------------------------------------

struct LoadedGenerated {
    GeneratedPlan plan;
    cudaKernel_t narrow = nullptr, wide = nullptr, dense = nullptr, rows = nullptr;
};

Expected<LoadedGenerated, std::string> load(Context &context, GeneratedPlan plan) {
    LoadedGenerated l;
    const std::vector<std::string> entries =
        plan.rows ? std::vector<std::string>{kRowsEntry}
                  : std::vector<std::string>{kElementwiseEntry32, kElementwiseEntry64, kElementwiseEntryDense};
    auto kernels = load_kernels(context, plan.source, entries);
    if (!kernels) return unexpected(fail(kernels.error()));
    if (plan.rows) {
        l.rows = (*kernels)[0];
    } else {
        l.narrow = (*kernels)[0];
        l.wide = (*kernels)[1];
        l.dense = (*kernels)[2];
    }
    l.plan = std::move(plan);
    return l;
}

class FusedKernel final : public Kernel {
public:
    FusedKernel(const KernelSpec &spec, std::vector<std::string> notes) : notes_(std::move(notes)) {
        for (size_t i = 0; i < spec.input_shapes.size(); ++i)
            inputs_.push_back(view_of(spec.input_shapes, spec.input_strides, i));
        output_ = view_of(spec.output_shapes, spec.output_strides, 0);
    }

    std::optional<GemmPlan> gemm;
    int gemm_a = 0, gemm_w = 1, gemm_bias = -1, gemm_addend = -1;
    std::unique_ptr<Kernel> head;
    int head_inputs = 0;
    std::optional<LoadedGenerated> generated;

    Status enqueue(std::span<const View> inputs, std::span<const View> outputs, void *workspace,
                   cudaStream_t stream) override {
        if (inputs.size() != inputs_.size() || outputs.size() != 1)
            return unexpected(fail("expected " + std::to_string(inputs_.size()) + " inputs and 1 output, got " +
                                   std::to_string(inputs.size()) + " and " + std::to_string(outputs.size())));
        for (size_t i = 0; i <= inputs.size(); ++i) {
            const View &v = i < inputs.size() ? inputs[i] : outputs[0];
            const ViewShape &s = i < inputs.size() ? inputs_[i] : output_;
            if (v.shape != s.shape || (!s.strides.empty() && v.strides != s.strides))
                return unexpected(fail("a view differs from the one the kernel was made for: " + v.shape.to_string() +
                                       " vs " + s.shape.to_string()));
        }
        if (outputs[0].elements() == 0) return std::monostate{};
        if (gemm) {
            const void *bias = gemm_bias >= 0 ? inputs[static_cast<size_t>(gemm_bias)].data : nullptr;
            const void *addend = gemm_addend >= 0 ? inputs[static_cast<size_t>(gemm_addend)].data : nullptr;
            if (Status s =
                    gemm->enqueue(inputs[static_cast<size_t>(gemm_a)].data, inputs[static_cast<size_t>(gemm_w)].data,
                                  bias, outputs[0].data, workspace, stream, addend);
                !s)
                return unexpected(fail(s.error()));
        }
        if (head)
            if (Status s = head->enqueue(inputs.first(static_cast<size_t>(head_inputs)), outputs, workspace, stream);
                !s)
                return unexpected(fail(s.error()));
        if (!generated) return std::monostate{};
        const GeneratedPlan &g = generated->plan;
        std::vector<const void *> pointers;
        for (int v : g.views) pointers.push_back(v < 0 ? outputs[0].data : inputs[static_cast<size_t>(v)].data);
        if (g.rows) {
            std::vector<std::int64_t> words = g.row_args.words;
            set_pointers(words, pointers, outputs[0].data);
            return launch_generated(generated->rows, g.row_args.blocks, g.row_args.threads, g.row_args.shared_bytes,
                                    words, stream, "fused kernel: launching the generated row kernel");
        }
        std::vector<std::int64_t> words = g.element_args.words;
        set_pointers(words, pointers, outputs[0].data);
        bool aligned = g.element_args.dense;
        for (size_t i = 0; i <= pointers.size() && aligned; ++i)
            aligned = reinterpret_cast<std::uintptr_t>(i < pointers.size() ? pointers[i] : outputs[0].data) % 16 == 0;
        if (aligned)
            return launch_generated(generated->dense, g.element_args.dense_blocks, g.element_args.threads, 0, words,
                                    stream, "fused kernel: launching the generated dense elementwise kernel");
        return launch_generated(g.element_args.narrow ? generated->narrow : generated->wide, g.element_args.blocks,
                                g.element_args.threads, 0, words, stream,
                                "fused kernel: launching the generated elementwise kernel");
    }

    std::size_t workspace_bytes() const override {
        return std::max(gemm ? gemm->workspace_bytes() : 0, head ? head->workspace_bytes() : 0);
    }

    std::vector<std::string> notes() const override {
        std::vector<std::string> out = notes_;
        if (gemm) out.push_back(gemm->note());
        if (head)
            for (const std::string &n : head->notes()) out.push_back("head: " + n);
        if (generated) out.push_back(generated->plan.note);
        return out;
    }

private:
    std::vector<ViewShape> inputs_;
    ViewShape output_;
    std::vector<std::string> notes_;
};

Expected<std::unique_ptr<Kernel>, std::string> make_head_kernel(const FusedPlan &plan, Context &context) {
    const std::string kind = plan.head_spec.def ? std::string(plan.head_spec.def->kind()) : std::string("?");
    if (kind == "conv2d") {
        auto k =
            make_conv2d_kernel(plan.head_spec, context, plan.conv_relu ? ConvActivation::relu : ConvActivation::none);
        if (!k) return unexpected(fail("the conv2d head: " + k.error()));
        return k;
    }
    const KernelFactory *factory = find_kernel(kind);
    if (!factory) return unexpected(fail("no CUDA kernel for its " + kind + " head"));
    auto k = factory->make(plan.head_spec, context);
    if (!k) return unexpected(fail("the " + kind + " head: " + k.error()));
    return k;
}

Made make_fused(const KernelSpec &spec, Context &context) {
    auto planned = plan_fused(spec);
    if (!planned) return unexpected(planned.error());
    FusedPlan &plan = *planned;
    auto kernel = std::make_unique<FusedKernel>(spec, plan.notes);
    std::optional<GeneratedPlan> generated = std::move(plan.generated);
    if (plan.head == FusedPlan::Head::gemm) {
        auto g = GemmPlan::make(plan.gemm->desc, context);
        if (g) {
            kernel->gemm = std::move(g).value();
            kernel->gemm_a = plan.gemm->a;
            kernel->gemm_w = plan.gemm->w;
            kernel->gemm_bias = plan.gemm->bias;
            kernel->gemm_addend = plan.gemm->addend;
        } else {
            // cuBLASLt refused the epilogue or layout: the head's own kernel, every
            // epilogue generated.
            auto head = make_head_kernel(plan, context);
            if (!head) return unexpected(fail("cuBLASLt refused the product (" + g.error() + "); " + head.error()));
            kernel->head = std::move(head).value();
            kernel->head_inputs = plan.head_inputs;
            generated = std::move(plan.fallback_generated);
        }
    } else if (plan.head == FusedPlan::Head::kernel) {
        auto head = make_head_kernel(plan, context);
        if (!head) return unexpected(head.error());
        kernel->head = std::move(head).value();
        kernel->head_inputs = plan.head_inputs;
    }
    if (generated) {
        auto loaded = load(context, std::move(*generated));
        if (!loaded) return unexpected(loaded.error());
        kernel->generated = std::move(loaded).value();
    }
    return std::unique_ptr<Kernel>(std::move(kernel));
}

GeneratedKernel listed(const GeneratedPlan &g, const std::string &when) {
    GeneratedKernel k;
    k.source = g.source;
    k.entries = g.rows ? std::vector<std::string>{kRowsEntry}
                       : std::vector<std::string>{kElementwiseEntry32, kElementwiseEntry64, kElementwiseEntryDense};
    k.note = g.note + when;
    return k;
}

}  // namespace

Expected<std::vector<GeneratedKernel>, std::string> fused_generated_kernels(const KernelSpec &spec) {
    auto plan = plan_fused(spec);
    if (!plan) return unexpected(plan.error());
    std::vector<GeneratedKernel> out;
    if (plan->generated) out.push_back(listed(*plan->generated, ""));
    if (plan->fallback_generated)
        out.push_back(listed(*plan->fallback_generated, " (when cuBLASLt refuses the product)"));
    return out;
}

std::vector<KernelFactory> fused_factories() {
    return {{"fused", make_fused}};
}

}  // namespace tapestry::cuda
