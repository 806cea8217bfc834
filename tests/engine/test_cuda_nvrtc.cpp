// The NVRTC-generated kernels of the `fused` kind (runtime/cuda/nvrtc.h,
// runtime/cuda/fused.cpp), without a GPU: every fused op the fusion pass makes
// from the example projects and from seeded random graphs (tests/support/
// random_graph.h) — fused for the CPU, and fused for a backend that takes every
// chain — has its kernels generated at each float dtype and compiled by NVRTC for
// sm_80 and sm_90; golden texts show one small chain's source and arguments; the
// refusals name what cannot be generated.
#include <QtTest/QtTest>
#include <chrono>
#include <map>
#include <random>
#include <set>

#include "graph/resolve.h"
#include "ops/fused.h"
#include "ops/library.h"
#include "passes/fuse.h"
#include "random_graph.h"
#include "runtime/cpu/fusion_backend.h"
#include "runtime/cuda/nvrtc.h"
#include "test_projects.h"

using namespace tapestry;

namespace {

// Accepts what `inner` accepts (everything when null) and keeps each piece asked about.
class RecordingBackend final : public FusionBackend {
public:
    explicit RecordingBackend(const FusionBackend *inner) : inner_(inner) {}
    std::string name() const override { return "recording"; }
    std::string refusal(const FusedPiece &piece) const override {
        std::string why = inner_ ? inner_->refusal(piece) : std::string();
        if (why.empty()) pieces.push_back(piece);
        return why;
    }
    mutable std::vector<FusedPiece> pieces;

private:
    const FusionBackend *inner_;
};

cuda::KernelSpec spec_of(const FusedPiece &p) {
    cuda::KernelSpec s;
    s.def = p.def;
    s.params = p.params;
    s.derivation = p.derivation;
    s.operands = p.operands;
    s.index_range = p.index_range;
    s.input_shapes = p.input_shapes;
    s.output_shapes = p.output_shapes;
    s.input_strides = p.input_strides;
    s.output_strides = p.output_strides;
    return s;
}

// The piece with every float operand stored as `t` (re-derived), or none when the
// chain does not derive at that dtype.
std::optional<cuda::KernelSpec> retyped(const cuda::KernelSpec &spec, DType t) {
    cuda::KernelSpec s = spec;
    for (OperandType &o : s.operands.at(0).operands)
        if (dtype_is_float(o.dtype)) o.dtype = t;
    auto d = OpLibrary::standard().derive("fused", s.params, s.operands);
    if (!d) return std::nullopt;
    s.derivation = std::move(d).value();
    return s;
}

// The pieces of the fused ops in `g` after fusion with `inner` (the pass asks
// about every candidate chain; only those of the ops it made are kept).
std::vector<FusedPiece> fused_pieces(const Graph &g, const FusionBackend *inner, int *ops) {
    RecordingBackend recorder(inner);
    FuseOptions options;
    options.backends = {&recorder};
    auto stage = fuse(g, options);
    if (!stage) qFatal("the fusion pass failed: %s", stage.error().c_str());
    std::set<std::string> made;
    for (const OpPtr &op : stage->graph.operations())
        if (op->kind == "fused")
            made.insert(op->params.get_string("members", "") + "|" + op->params.get_string("chain", ""));
    *ops += static_cast<int>(made.size());
    std::vector<FusedPiece> kept;
    for (const FusedPiece &p : recorder.pieces)
        if (made.count(p.params.get_string("members", "") + "|" + p.params.get_string("chain", ""))) kept.push_back(p);
    return kept;
}

// A fused op of one piece, the whole op, from its chain params and operand types.
cuda::KernelSpec whole_piece(const Params &params, const std::vector<OperandType> &operands) {
    const OpLibrary &lib = OpLibrary::standard();
    cuda::KernelSpec s;
    s.def = lib.find("fused");
    s.params = lib.with_defaults(*s.def, params);
    s.operands = {PortTypes{"x", operands}};
    auto d = lib.derive("fused", s.params, s.operands);
    if (!d) qFatal("the test's chain does not derive: %s", d.error().message.c_str());
    s.derivation = *d;
    s.index_range = d->signature.index_space;
    for (const OperandType &o : operands) s.input_shapes.push_back(o.shape);
    s.output_shapes = {d->outputs.at(0).operands.at(0).shape};
    return s;
}

Params chain_params(const std::string &chain, std::vector<std::int64_t> head, std::vector<std::int64_t> ports,
                    std::vector<std::int64_t> tail = {}) {
    Params p;
    p.set("chain", chain);
    p.set("head_operands", head);
    p.set("chain_ports", ports);
    if (!tail.empty()) p.set("tail_operands", tail);
    return p;
}

std::string first_difference(const std::string &expected, const std::string &actual) {
    std::istringstream e(expected), a(actual);
    std::string le, la;
    for (int line = 1;; ++line) {
        const bool he = static_cast<bool>(std::getline(e, le)), ha = static_cast<bool>(std::getline(a, la));
        if (!he && !ha) return "the texts differ in their final newline";
        if (le != la || he != ha)
            return "line " + std::to_string(line) + ":\n- expected " + (he ? le : "(end)") + "\n+ actual   " +
                   (ha ? la : "(end)") + "\n(the whole actual text:)\n" + actual;
    }
}

// sub(x, b) → gelu{tanh} → mul(s, v): x [4, 6], b [6] broadcast along rows, s [4, 1] along columns.
const char *kGoldenSource = R"(// ---- generated by tapestry (runtime/cuda/nvrtc.cpp) ----
// fused elementwise chain: sub(in0, in1) → gelu{approximate="tanh"} → mul(in2, v)
// inputs: in0 f32, in1 f32, in2 f32; output f32
namespace tapestry_generated {
namespace el = tapestry::cuda::element;

constexpr int kInputs = 3;
constexpr int kMaxRank = 8;

// The host's parameter block (nvrtc.cpp, elementwise_args): 8-byte words.
struct Args {
    const void *in[kInputs];
    void *out;
    long long elements;
    long long rank;
    long long shape[kMaxRank];
    long long out_stride[kMaxRank];
    long long in_stride[kInputs][kMaxRank];
};
static_assert(sizeof(Args) == 46 * 8, "the host's parameter block");

__device__ __forceinline__ float load_f32(const void *p, long long i) { return static_cast<const float *>(p)[i]; }
__device__ __forceinline__ float load_bf16(const void *p, long long i) {
    return el::bf16_to_float(static_cast<const unsigned short *>(p)[i]);
}
__device__ __forceinline__ float load_f16(const void *p, long long i) {
    return el::f16_to_float(static_cast<const unsigned short *>(p)[i]);
}
__device__ __forceinline__ void store_f32(void *p, long long i, float v) { static_cast<float *>(p)[i] = v; }
__device__ __forceinline__ void store_bf16(void *p, long long i, float v) {
    static_cast<unsigned short *>(p)[i] = el::float_to_bf16(v);
}
__device__ __forceinline__ void store_f16(void *p, long long i, float v) {
    static_cast<unsigned short *>(p)[i] = el::float_to_f16(v);
}

__device__ __forceinline__ float chain(float x0, float x1, float x2) {
    float v = el::sub(x0, x1);
    v = el::gelu(v, true);
    v = el::mul(x2, v);
    return v;
}

// y[i] = chain(inputs at i) over the output's points (row-major, last dim
// fastest); an input's stride is 0 along a dim it broadcasts.
template <typename Index>
__device__ __forceinline__ void run(const Args &a) {
    const Index n = static_cast<Index>(a.elements);
    const Index step = static_cast<Index>(blockDim.x) * static_cast<Index>(gridDim.x);
    for (Index i = static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + static_cast<Index>(threadIdx.x);
         i < n; i += step) {
        Index rest = i, out = 0, o[kInputs] = {};
#pragma unroll
        for (int d = kMaxRank - 1; d >= 0; --d) {
            if (d >= a.rank) continue;
            const Index extent = static_cast<Index>(a.shape[d]);
            const Index c = rest % extent;
            rest /= extent;
            out += c * static_cast<Index>(a.out_stride[d]);
#pragma unroll
            for (int k = 0; k < kInputs; ++k) o[k] += c * static_cast<Index>(a.in_stride[k][d]);
        }
        store_f32(a.out, out, chain(load_f32(a.in[0], o[0]), load_f32(a.in[1], o[1]), load_f32(a.in[2], o[2])));
    }
}

}  // namespace tapestry_generated

// Every view dense and 16-byte aligned (ElementArgs::dense): 8 elements a thread
// per step, 16-byte loads and stores.
namespace tapestry_generated {

__device__ __forceinline__ void load8_f32(const void *p, long long i, float (&v)[8]) {
    const float4 lo = static_cast<const float4 *>(p)[2 * i], hi = static_cast<const float4 *>(p)[2 * i + 1];
    v[0] = lo.x; v[1] = lo.y; v[2] = lo.z; v[3] = lo.w;
    v[4] = hi.x; v[5] = hi.y; v[6] = hi.z; v[7] = hi.w;
}
__device__ __forceinline__ void store8_f32(void *p, long long i, const float (&v)[8]) {
    static_cast<float4 *>(p)[2 * i] = float4{v[0], v[1], v[2], v[3]};
    static_cast<float4 *>(p)[2 * i + 1] = float4{v[4], v[5], v[6], v[7]};
}
__device__ __forceinline__ void load8_bf16(const void *p, long long i, float (&v)[8]) {
    const uint4 u = static_cast<const uint4 *>(p)[i];
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[2 * j] = el::bf16_to_float(static_cast<unsigned short>(w[j] & 0xffffu));
        v[2 * j + 1] = el::bf16_to_float(static_cast<unsigned short>(w[j] >> 16));
    }
}
__device__ __forceinline__ void store8_bf16(void *p, long long i, const float (&v)[8]) {
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
        w[j] = el::float_to_bf16(v[2 * j]) | static_cast<unsigned>(el::float_to_bf16(v[2 * j + 1])) << 16;
    static_cast<uint4 *>(p)[i] = uint4{w[0], w[1], w[2], w[3]};
}
__device__ __forceinline__ void load8_f16(const void *p, long long i, float (&v)[8]) {
    const uint4 u = static_cast<const uint4 *>(p)[i];
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[2 * j] = el::f16_to_float(static_cast<unsigned short>(w[j] & 0xffffu));
        v[2 * j + 1] = el::f16_to_float(static_cast<unsigned short>(w[j] >> 16));
    }
}
__device__ __forceinline__ void store8_f16(void *p, long long i, const float (&v)[8]) {
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
        w[j] = el::float_to_f16(v[2 * j]) | static_cast<unsigned>(el::float_to_f16(v[2 * j + 1])) << 16;
    static_cast<uint4 *>(p)[i] = uint4{w[0], w[1], w[2], w[3]};
}

__device__ __forceinline__ void run_dense(const Args &a) {
    const long long n = a.elements, packs = n / 8;
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long step = static_cast<long long>(blockDim.x) * gridDim.x;
    for (long long q = first; q < packs; q += step) {
        float x0[8];
        load8_f32(a.in[0], q, x0);
        float x1[8];
        load8_f32(a.in[1], q, x1);
        float x2[8];
        load8_f32(a.in[2], q, x2);
        float y[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) y[j] = chain(x0[j], x1[j], x2[j]);
        store8_f32(a.out, q, y);
    }
    for (long long i = packs * 8 + first; i < n; i += step)
        store_f32(a.out, i, chain(load_f32(a.in[0], i), load_f32(a.in[1], i), load_f32(a.in[2], i)));
}

}  // namespace tapestry_generated

extern "C" __global__ void tapestry_elementwise_i32(tapestry_generated::Args a) { tapestry_generated::run<int>(a); }
extern "C" __global__ void tapestry_elementwise_i64(tapestry_generated::Args a) { tapestry_generated::run<long long>(a); }
extern "C" __global__ void tapestry_elementwise_dense(tapestry_generated::Args a) { tapestry_generated::run_dense(a); }
)";

cuda::KernelSpec golden_piece() {
    return whole_piece(chain_params("sub;gelu{approximate=\"tanh\"};mul", {1, 1}, {-1, 1}),
                       {OperandType{DType::f32, ZPoint{4, 6}}, OperandType{DType::f32, ZPoint{6}},
                        OperandType{DType::f32, ZPoint{4, 1}}});
}

std::string words_text(const std::vector<std::int64_t> &w, size_t from, size_t count) {
    std::string s;
    for (size_t i = from; i < from + count && i < w.size(); ++i) s += (i > from ? " " : "") + std::to_string(w[i]);
    return s;
}

}  // namespace

class TestCudaNvrtc : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void golden_elementwise_source();
    void golden_launch_arguments();
    void golden_row_kernel();
    void product_heads_leave_the_epilogues_cublaslt_lacks();
    void every_fused_op_compiles();
    // Error tests: each refusal as a user (or the integrator) reads it.
    void refusals_data();
    void refusals();
    void compile_errors_carry_nvrtc_log();
};

void TestCudaNvrtc::initTestCase() {
    qInfo("NVRTC %s", cuda::nvrtc_version().c_str());
}

void TestCudaNvrtc::golden_elementwise_source() {
    auto kernels = cuda::fused_generated_kernels(golden_piece());
    QVERIFY2(kernels, kernels ? "" : kernels.error().c_str());
    QCOMPARE(kernels->size(), size_t(1));
    const std::string &source = kernels->front().source;
    QVERIFY(source.rfind(cuda::element_math_source(), 0) == 0);  // the element math first, verbatim
    const std::string generated = cuda::generated_part(source);
    QVERIFY2(generated == kGoldenSource, first_difference(kGoldenSource, generated).c_str());
    QCOMPARE(kernels->front().note,
             std::string("NVRTC elementwise: sub(in0, in1) → gelu{approximate=\"tanh\"} → mul(in2, v) over 24 "
                         "elements, 32-bit indices"));
    QCOMPARE(kernels->front().entries,
             (std::vector<std::string>{"tapestry_elementwise_i32", "tapestry_elementwise_i64",
                                       "tapestry_elementwise_dense"}));
}

void TestCudaNvrtc::golden_launch_arguments() {
    // x [4, 6] inside a [4, 8] buffer (row stride 8), b [6] broadcast over rows,
    // s [4, 1] over columns; y [4, 6] dense. Nothing merges: 2 dims.
    const std::vector<cuda::ViewShape> in{{ZPoint{4, 6}, {8, 1}}, {ZPoint{6}, {1}}, {ZPoint{4, 1}, {1, 1}}};
    auto a = cuda::elementwise_args(in, cuda::ViewShape{ZPoint{4, 6}, {6, 1}});
    QVERIFY2(a, a ? "" : a.error().c_str());
    QCOMPARE(a->words.size(), size_t(46));
    QCOMPARE(words_text(a->words, 0, 4), std::string("0 0 0 0"));  // pointers, set per launch
    QCOMPARE(words_text(a->words, 4, 2), std::string("24 2"));     // elements, rank
    QCOMPARE(words_text(a->words, 6, 2), std::string("4 6"));      // shape
    QCOMPARE(words_text(a->words, 14, 2), std::string("6 1"));     // y's strides
    QCOMPARE(words_text(a->words, 22, 2), std::string("8 1"));     // x
    QCOMPARE(words_text(a->words, 30, 2), std::string("0 1"));     // b: broadcast along rows
    QCOMPARE(words_text(a->words, 38, 2), std::string("1 0"));     // s: broadcast along columns
    QVERIFY(a->narrow);
    QVERIFY(!a->dense);  // strided and broadcast views: the indexed kernels
    QCOMPARE(a->blocks, 1u);
    // Dense views of one shape merge into one dim.
    auto dense = cuda::elementwise_args({{ZPoint{2, 3, 4}, {}}}, cuda::ViewShape{ZPoint{2, 3, 4}, {}});
    QVERIFY(dense);
    QCOMPARE(words_text(dense->words, 2, 3), std::string("24 1 24"));
    QVERIFY(dense->dense);  // tapestry_elementwise_dense when the pointers are 16-byte aligned
    QCOMPARE(dense->dense_blocks, 1u);
    // A row kernel over [2, 3, 5] normalizing dims 1…2: 2 rows of 15, cached.
    auto rows = cuda::row_args({{ZPoint{2, 3, 5}, {}}}, cuda::ViewShape{ZPoint{2, 3, 5}, {}}, 1, 2);
    QVERIFY(rows);
    QCOMPARE(rows->rows, std::int64_t(2));
    QCOMPARE(rows->row_length, std::int64_t(15));
    QCOMPARE(rows->shared_bytes, std::size_t(60));
    QCOMPARE(rows->threads, 32u);
}

void TestCudaNvrtc::golden_row_kernel() {
    // mul(x, s) → layernorm with gamma and beta, bf16 storage.
    const ZPoint x{3, 8};
    auto kernels = cuda::fused_generated_kernels(
        whole_piece(chain_params("mul;layernorm{epsilon=1e-05}", {1, 1}, {-1}, {1, 1}),
                    {OperandType{DType::bf16, x}, OperandType{DType::bf16, ZPoint{8}},
                     OperandType{DType::bf16, ZPoint{8}}, OperandType{DType::bf16, ZPoint{8}}}));
    QVERIFY2(kernels, kernels ? "" : kernels.error().c_str());
    QCOMPARE(kernels->size(), size_t(1));
    const std::string source = cuda::generated_part(kernels->front().source);
    for (const char *line :
         {"// fused chain with a layernorm tail: mul(in0, in1)",
          "// inputs: in0 bf16, in1 bf16, in2 bf16, in3 bf16; output bf16",
          "__device__ __forceinline__ float chain(float x0, float x1) {\n"
          "    float v = el::mul(x0, x1);\n"
          "    return v;\n}",
          "    return chain(load_bf16(a.in[0], o[0]), load_bf16(a.in[1], o[1]));",
          "        const float mean = block_sum(total, scratch) / static_cast<float>(n);",
          "            squares += (v - mean) * (v - mean);",
          "        const float inv = 1.0f / sqrtf(block_sum(squares, scratch) / static_cast<float>(n) + "
          "9.99999975e-06f);",
          "            float y = (v - mean) * inv;\n"
          "            y *= load_bf16(a.in[2], o[2]);\n"
          "            y += load_bf16(a.in[3], o[3]);\n"
          "            store_bf16(a.out, out0 + out, y);",
          "extern \"C\" __global__ void tapestry_rows(tapestry_generated::Args a) { tapestry_generated::rows(a); }"})
        QVERIFY2(source.find(line) != std::string::npos,
                 (std::string("missing:\n") + line + "\nin:\n" + source).c_str());
    QCOMPARE(kernels->front().note, std::string("NVRTC rows: mul(in0, in1) → layernorm over 3 rows of 8 (cached)"));
}

void TestCudaNvrtc::product_heads_leave_the_epilogues_cublaslt_lacks() {
    const OperandType x{DType::bf16, ZPoint{16, 32}}, w{DType::bf16, ZPoint{32, 64}}, b{DType::bf16, ZPoint{64}};
    // linear(bias) → gelu{tanh}: all in cuBLASLt (GELU_BIAS); the list holds only the
    // fallback for a refusal.
    auto all_lt = cuda::fused_generated_kernels(
        whole_piece(chain_params("linear;gelu{approximate=\"tanh\"}", {1, 1, 1}, {-1}), {x, w, b}));
    QVERIFY2(all_lt, all_lt ? "" : all_lt.error().c_str());
    QCOMPARE(all_lt->size(), size_t(1));
    QCOMPARE(all_lt->front().note,
             std::string("NVRTC elementwise: in0 → gelu{approximate=\"tanh\"} over 1024 elements, "
                         "32-bit indices (when cuBLASLt refuses the product)"));
    // matmul → add(bias row) → gelu (erf form) → add(residual): cuBLASLt takes the
    // bias; the erf GELU and the residual add are generated, in place on y.
    const OperandType residual{DType::bf16, ZPoint{16, 64}};
    auto rest = cuda::fused_generated_kernels(
        whole_piece(chain_params("matmul;add;gelu;add", {1, 1}, {0, -1, 1}), {x, w, b, residual}));
    QVERIFY2(rest, rest ? "" : rest.error().c_str());
    QCOMPARE(rest->size(), size_t(2));
    QCOMPARE(rest->at(0).note,
             std::string("NVRTC elementwise: in0 → gelu{approximate=\"none\"} → add(in1, v) over 1024 "
                         "elements, 32-bit indices"));
    QCOMPARE(rest->at(1).note,
             std::string("NVRTC elementwise: in0 → add(v, in1) → gelu{approximate=\"none\"} → add(in2, v) "
                         "over 1024 elements, 32-bit indices (when cuBLASLt refuses the product)"));
    // linear(bias) → add(residual): cuBLASLt adds the residual as its C operand
    // (D = x·w + bias + r, one pass over y); only the fallback is generated.
    auto residual_c = cuda::fused_generated_kernels(
        whole_piece(chain_params("linear;add", {1, 1, 1}, {0}), {x, w, b, residual}));
    QVERIFY2(residual_c, residual_c ? "" : residual_c.error().c_str());
    QCOMPARE(residual_c->size(), size_t(1));
    QCOMPARE(residual_c->front().note,
             std::string("NVRTC elementwise: in0 → add(v, in1) over 1024 elements, 32-bit indices (when cuBLASLt "
                         "refuses the product)"));
    // linear → softmax: the product, then the row kernel on its output.
    auto tail = cuda::fused_generated_kernels(whole_piece(chain_params("linear;softmax", {1, 1, 0}, {-1}), {x, w}));
    QVERIFY2(tail, tail ? "" : tail.error().c_str());
    QCOMPARE(tail->front().note, std::string("NVRTC rows: in0 → softmax over 16 rows of 64 (cached)"));
    // conv2d → relu → sigmoid: cuDNN applies the relu, sigmoid is generated.
    auto conv = cuda::fused_generated_kernels(
        whole_piece(chain_params("conv2d;relu;sigmoid", {1, 1, 0}, {-1, -1}),
                    {OperandType{DType::f32, ZPoint{1, 2, 5, 5}}, OperandType{DType::f32, ZPoint{3, 2, 3, 3}}}));
    QVERIFY2(conv, conv ? "" : conv.error().c_str());
    QCOMPARE(conv->size(), size_t(1));
    QCOMPARE(conv->front().note, std::string("NVRTC elementwise: in0 → sigmoid over 27 elements, 32-bit indices"));
}

void TestCudaNvrtc::every_fused_op_compiles() {
    const auto started = std::chrono::steady_clock::now();
    // The pieces: every example project, fused for the CPU (as `tapestry passes
    // --pipeline fuse` does) and for a backend taking every chain; and 30 random
    // graphs with a fixed seed, likewise.
    std::vector<std::pair<std::string, FusedPiece>> pieces;
    int ops = 0;
    auto add_graph = [&](const std::string &name, const Graph &g) {
        for (const FusionBackend *inner : {&cpu::fusion_backend(), static_cast<const FusionBackend *>(nullptr)})
            for (FusedPiece &p : fused_pieces(g, inner, &ops)) pieces.emplace_back(name, std::move(p));
    };
    for (const char *name : {"mlp", "mlp_bf16", "convnet", "gpt2_block", "attention"})
        add_graph(name, test::example_graph(name));
    std::mt19937 rng(20240907u);
    const testing::Pick pick = [&rng](Coord lo, Coord hi) { return std::uniform_int_distribution<Coord>(lo, hi)(rng); };
    for (int k = 0; k < 40; ++k) {
        testing::GraphBuilder builder(pick);
        add_graph("random graph " + std::to_string(k), builder.build());
    }

    // And a catalogue the examples lack: every elementwise kind, casts, each tail
    // with and without its operands, a product head feeding a tail.
    std::vector<std::pair<std::string, cuda::KernelSpec>> catalogue;
    const OperandType x{DType::f32, ZPoint{4, 6}}, row{DType::f32, ZPoint{6}}, column{DType::f32, ZPoint{4, 1}};
    catalogue.emplace_back(
        "every unary kind",
        whole_piece(chain_params("relu;sigmoid;tanh;exp;log;neg;abs;erf;sqrt;reciprocal;softplus;softsign;hard_swish;"
                                 "gelu;gelu{approximate=\"tanh\"};leaky_relu{alpha=0.1};elu{alpha=0.5};selu;"
                                 "hard_sigmoid;clip{min=-1.0,max=1.0};clip;pow{exponent=3.0}",
                                 {1}, std::vector<std::int64_t>(21, -1)),
                    {x}));
    catalogue.emplace_back("every binary kind",
                           whole_piece(chain_params("add;sub;mul;div;max;min", {1, 1}, {0, 1, 0, 1, 0}),
                                       {x, row, x, column, OperandType{DType::f32, ZPoint{1, 6}}, row, x}));
    catalogue.emplace_back(
        "casts",
        whole_piece(chain_params("neg;cast{to=\"bf16\"};cast{to=\"f16\"};cast{to=\"f32\"}", {1}, {-1, -1, -1}), {x}));
    catalogue.emplace_back("rmsnorm with gamma",
                           whole_piece(chain_params("mul;rmsnorm", {1, 1}, {-1}, {1}), {x, column, row}));
    catalogue.emplace_back("layernorm alone",
                           whole_piece(chain_params("sub;layernorm{axis=0}", {1, 1}, {-1}, {0, 0}), {x, row}));
    catalogue.emplace_back("linear, bias add, rmsnorm",
                           whole_piece(chain_params("linear;add;relu;rmsnorm", {1, 1, 0}, {1, -1, -1}, {0}),
                                       {x, OperandType{DType::f32, ZPoint{6, 8}}, OperandType{DType::f32, ZPoint{8}}}));

    // Their kernels at each float dtype, deduplicated by source text.
    std::map<std::string, std::string> sources;  // source → the first piece that made it
    std::set<std::string> chains;
    int specs = 0, skipped = 0;
    std::vector<std::pair<std::string, cuda::KernelSpec>> all = catalogue;
    for (const auto &[name, piece] : pieces) all.emplace_back(name, spec_of(piece));
    for (const auto &[name, base] : all) {
        chains.insert(base.params.get_string("chain", ""));
        for (DType t : {DType::f32, DType::bf16, DType::f16}) {
            auto spec = retyped(base, t);
            if (!spec) {
                ++skipped;
                continue;
            }
            ++specs;
            const std::string what = name + ": fused " + base.params.get_string("chain", "") + " at " +
                                     std::string(dtype_name(t)) + " over " + base.index_range.to_string();
            auto kernels = cuda::fused_generated_kernels(*spec);
            QVERIFY2(kernels, (what + ": " + (kernels ? "" : kernels.error())).c_str());
            for (const cuda::GeneratedKernel &k : *kernels) sources.emplace(k.source, what + " — " + k.note);
        }
    }
    // The property says nothing unless the inputs hold fused ops of each shape:
    // every head family, and tails after elementwise and product heads.
    QVERIFY2(ops >= 35, qPrintable(QString("only %1 fused ops").arg(ops)));
    for (const char *shape :
         {"^(linear|matmul);[^;]*$", "^conv2d", "^(relu|sigmoid|tanh|gelu|add|sub|mul)[^;]*;",
          "^(add|sub|mul|tanh|relu|gelu)[^;]*;.*(softmax|layernorm)", "^linear;.*(softmax|layernorm)"}) {
        const QRegularExpression re(shape);
        QVERIFY2(
            std::any_of(pieces.begin(), pieces.end(),
                        [&](const auto &p) {
                            return re.match(QString::fromStdString(p.second.params.get_string("chain", ""))).hasMatch();
                        }),
            shape);
    }

    int compiled = 0;
    for (const auto &[source, what] : sources)
        for (int arch : {80, 90}) {
            auto cubin = cuda::compile_cubin(source, arch);
            QVERIFY2(cubin, (what + " for sm_" + std::to_string(arch) + ": " + (cubin ? "" : cubin.error())).c_str());
            QVERIFY(!cubin->empty());
            ++compiled;
        }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    qInfo(
        "%d fused ops (%zu pieces) and %zu catalogue chains (%zu distinct chains) → %d specs at f32/bf16/f16 (%d did "
        "not derive) → %zu distinct "
        "kernel sources → %d NVRTC compiles (sm_80, sm_90) in %.1f s",
        ops, pieces.size(), catalogue.size(), chains.size(), specs, skipped, sources.size(), compiled, seconds);
}

void TestCudaNvrtc::refusals_data() {
    QTest::addColumn<QString>("chain");
    QTest::addColumn<QString>("expected");
    QTest::newRow("cast to an integer") << "relu;cast{to=\"i32\"}"
                                        << "fused kernel: generated elementwise kernel: step 1: cast: a fused chain "
                                           "computes in f32 and casts to f32, bf16 or f16 only, not i32";
    QTest::newRow("a shard splitting the softmax axis")
        << "relu;softmax{axis=1}"
        << "fused kernel: this piece splits the softmax's normalized axis 1 (3 of 6)";
}

void TestCudaNvrtc::refusals() {
    QFETCH(QString, chain);
    QFETCH(QString, expected);
    cuda::KernelSpec spec =
        whole_piece(chain_params(chain.toStdString(), {1}, {-1}), {OperandType{DType::f32, ZPoint{4, 6}}});
    if (chain.contains("softmax")) {
        spec.index_range = ZRange(ZPoint{0, 0}, ZPoint{4, 3});
        spec.input_shapes = {ZPoint{4, 3}};
        spec.output_shapes = {ZPoint{4, 3}};
    }
    auto kernels = cuda::fused_generated_kernels(spec);
    QVERIFY(!kernels);
    QCOMPARE(QString::fromStdString(kernels.error()), expected);
}

void TestCudaNvrtc::compile_errors_carry_nvrtc_log() {
    auto cubin = cuda::compile_cubin("__global__ void k() { undeclared_name = 1; }", 90);
    QVERIFY(!cubin);
    QVERIFY2(cubin.error().rfind("NVRTC: compiling for sm_90 failed (NVRTC_ERROR_COMPILATION):\n", 0) == 0,
             cubin.error().c_str());
    QVERIFY2(cubin.error().find("undeclared_name") != std::string::npos, cubin.error().c_str());
}

QTEST_GUILESS_MAIN(TestCudaNvrtc)
#include "test_cuda_nvrtc.moc"
