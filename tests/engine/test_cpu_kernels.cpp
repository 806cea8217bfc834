// The CPU kernels of the normalization, convolution and data families against the
// op library's double-precision reference kernels: on the whole index space and
// on random uneven sub-ranges (shards), through strided views of the selections
// (tests/support/kernel_check.h); and every row of the op table in every floating
// dtype its op accepts, on whatever instruction set oneDNN runs here (a native
// kernel or the bf16/f16 → f32 fallback, cpu::make_kernel).
#include <QtTest/QtTest>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "kernel_check.h"
#include "op_cases.h"
#include "ops/op_util.h"
#include "runtime/cpu/conv_winograd.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel.h"

using namespace tapestry;
using tapestry::test::KernelCase;

Q_DECLARE_METATYPE(tapestry::test::KernelCase)

namespace {

using Ints = std::vector<std::int64_t>;

struct Row {
    std::string name;
    KernelCase c;
    int shards = 3;  // random sub-ranges checked besides the whole space
};

KernelCase make_case(std::string kind, Params params, std::vector<std::pair<std::string, std::vector<ZPoint>>> inputs) {
    KernelCase c;
    c.kind = std::move(kind);
    c.params = std::move(params);
    c.inputs = std::move(inputs);
    return c;
}

std::pair<std::string, std::vector<ZPoint>> in(std::string port, ZPoint shape) {
    return {std::move(port), {std::move(shape)}};
}

// The whole-op index space of a case.
ZRange index_space(const KernelCase &c) {
    const OpLibrary &lib = OpLibrary::standard();
    std::vector<PortTypes> ports;
    for (const PortSpec &p : lib.find(c.kind)->input_ports())
        for (const auto &[name, shapes] : c.inputs)
            if (name == p.name) {
                PortTypes t{name, {}};
                auto given = c.data.find(name);
                for (size_t i = 0; i < shapes.size(); ++i)
                    t.operands.push_back({given != c.data.end() ? given->second[i].dtype : c.dtype, shapes[i]});
                ports.push_back(t);
            }
    auto d = lib.derive(c.kind, c.params, ports);
    TAPESTRY_CHECK(d.has_value(), "test case does not derive");
    return d->signature.index_space;
}

// A random non-empty sub-range: per dim a random [a, b).
ZRange random_subrange(const ZRange &space, std::mt19937_64 &rng) {
    ZPoint lo = space.start(), hi = space.end();
    for (int d = 0; d < space.rank(); ++d) {
        const Coord n = space.extent(d);
        if (n <= 1) continue;
        std::uniform_int_distribution<Coord> u(0, n - 1);
        Coord a = u(rng), b = u(rng);
        if (a > b) std::swap(a, b);
        lo[d] = space.start()[d] + a;
        hi[d] = space.start()[d] + b + 1;
    }
    return ZRange(lo, hi);
}

// Contiguous pieces of one dim, uneven (e.g. conv output rows with halos).
std::vector<ZRange> uneven_split(const ZRange &space, int dim, const std::vector<Coord> &cuts) {
    return space.split_at(dim, cuts);
}

TensorData ids_tensor(DType t, ZPoint shape, std::vector<std::int64_t> values) {
    TensorData d(t, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i) d.set(static_cast<std::int64_t>(i), static_cast<double>(values[i]));
    return d;
}

cpu::Epilogue unary(std::string kind, Params p = {}) {
    cpu::Epilogue e;
    e.kind = std::move(kind);
    const OpLibrary &lib = OpLibrary::standard();
    e.params = lib.with_defaults(*lib.find(e.kind), p);
    return e;
}

cpu::Epilogue binary(std::string kind, int extra, IndexProjection projection) {
    cpu::Epilogue e;
    e.kind = std::move(kind);
    e.extra_input = extra;
    e.projection = OperandProjection{std::move(projection), false};
    return e;
}

// The y projection of a case (epilogue operands shaped like y follow it).
IndexProjection y_projection(const KernelCase &c) {
    const OpLibrary &lib = OpLibrary::standard();
    std::vector<PortTypes> ports;
    for (const PortSpec &p : lib.find(c.kind)->input_ports())
        for (const auto &[name, shapes] : c.inputs)
            if (name == p.name) ports.push_back({name, {OperandType{c.dtype, shapes[0]}}});
    return lib.derive(c.kind, c.params, ports)->signature.outputs.at(0).operands.at(0).projection;
}

std::vector<Row> normalization_rows() {
    std::vector<Row> rows;
    rows.push_back({"softmax/last", make_case("softmax", {}, {in("x", {6, 33})})});
    rows.push_back({"softmax/axis0", make_case("softmax", {{"axis", std::int64_t{0}}}, {in("x", {7, 5})})});
    rows.push_back({"softmax/middle", make_case("softmax", {{"axis", std::int64_t{1}}}, {in("x", {3, 9, 4})})});
    {
        KernelCase c = make_case("softmax", {}, {in("x", {16, 40})});
        c.threads = 2;
        rows.push_back({"softmax/threads", c});
    }
    rows.push_back({"layernorm/last+gamma+beta",
                    make_case("layernorm", {}, {in("x", {5, 24}), in("gamma", {24}), in("beta", {24})})});
    rows.push_back({"layernorm/two axes", make_case("layernorm", {{"axis", std::int64_t{1}}},
                                                    {in("x", {3, 4, 6}), in("gamma", {4, 6}), in("beta", {4, 6})})});
    rows.push_back({"layernorm/plain", make_case("layernorm", {{"epsilon", 1e-3}}, {in("x", {4, 3, 17})})});
    rows.push_back({"layernorm/gamma only", make_case("layernorm", {}, {in("x", {9, 10}), in("gamma", {10})})});
    rows.push_back({"layernorm/axis0", make_case("layernorm", {{"axis", std::int64_t{0}}}, {in("x", {3, 5})})});
    rows.push_back({"rmsnorm/last+gamma", make_case("rmsnorm", {}, {in("x", {7, 20}), in("gamma", {20})})});
    rows.push_back({"rmsnorm/two axes", make_case("rmsnorm", {{"axis", std::int64_t{-2}}}, {in("x", {2, 5, 8})})});
    {
        KernelCase c = make_case("rmsnorm", {}, {in("x", {32, 64}), in("gamma", {64})});
        c.threads = 2;
        rows.push_back({"rmsnorm/threads", c});
    }
    rows.push_back({"batchnorm/nchw", make_case("batchnorm", {},
                                                {in("x", {2, 3, 4, 5}), in("scale", {3}), in("bias", {3}),
                                                 in("mean", {3}), in("var", {3})})});
    rows.push_back({"batchnorm/rank2",
                    make_case("batchnorm", {{"epsilon", 1e-3}},
                              {in("x", {6, 4}), in("scale", {4}), in("bias", {4}), in("mean", {4}), in("var", {4})})});
    for (Row &r : rows)
        if (r.c.kind == "batchnorm")
            r.c.data["var"] = {test::random_tensor(DType::f32, ZPoint{r.c.inputs[0].second[0][1]}, 77, 0.1, 2.0)};
    return rows;
}

std::vector<Row> convolution_rows() {
    std::vector<Row> rows;
    rows.push_back({"conv2d/basic+bias",
                    make_case("conv2d", {}, {in("x", {2, 3, 8, 8}), in("w", {4, 3, 3, 3}), in("bias", {4})})});
    rows.push_back({"conv2d/stride2 pad1", make_case("conv2d", {{"stride", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}},
                                                     {in("x", {1, 3, 9, 7}), in("w", {5, 3, 3, 3})})});
    rows.push_back(
        {"conv2d/asymmetric pad", make_case("conv2d", {{"stride", Ints{2, 1}}, {"padding", Ints{2, 0, 1, 3}}},
                                            {in("x", {1, 2, 10, 6}), in("w", {3, 2, 4, 2}), in("bias", {3})})});
    rows.push_back(
        {"conv2d/dilation2 pad2", make_case("conv2d", {{"dilation", Ints{2, 2}}, {"padding", Ints{2, 2, 2, 2}}},
                                            {in("x", {1, 2, 9, 9}), in("w", {3, 2, 3, 3}), in("bias", {3})})});
    rows.push_back({"conv2d/groups2", make_case("conv2d", {{"groups", std::int64_t{2}}, {"padding", Ints{1, 1, 1, 1}}},
                                                {in("x", {2, 4, 7, 7}), in("w", {6, 2, 3, 3}), in("bias", {6})})});
    rows.push_back({"conv2d/depthwise", make_case("conv2d", {{"groups", std::int64_t{4}}, {"stride", Ints{2, 2}}},
                                                  {in("x", {1, 4, 8, 8}), in("w", {8, 1, 3, 3})})});
    rows.push_back(
        {"conv2d/padding only rows", make_case("conv2d", {{"padding", Ints{3, 3, 3, 3}}},
                                               {in("x", {1, 2, 3, 3}), in("w", {2, 2, 1, 1}), in("bias", {2})})});
    {
        KernelCase c =
            make_case("conv2d", {{"padding", Ints{1, 1, 1, 1}}}, {in("x", {2, 8, 12, 12}), in("w", {8, 8, 3, 3})});
        c.threads = 2;
        rows.push_back({"conv2d/threads", c});
    }
    rows.push_back(
        {"max_pool2d/pad",
         make_case("max_pool2d", {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}},
                   {in("x", {2, 3, 9, 8})})});
    rows.push_back(
        {"max_pool2d/default stride", make_case("max_pool2d", {{"kernel", Ints{2, 2}}}, {in("x", {1, 2, 8, 6})})});
    rows.push_back(
        {"avg_pool2d/exclude pad",
         make_case("avg_pool2d", {{"kernel", Ints{3, 2}}, {"stride", Ints{1, 2}}, {"padding", Ints{1, 1, 2, 0}}},
                   {in("x", {1, 3, 7, 8})})});
    rows.push_back({"avg_pool2d/include pad", make_case("avg_pool2d",
                                                        {{"kernel", Ints{3, 3}},
                                                         {"stride", Ints{2, 2}},
                                                         {"padding", Ints{1, 1, 1, 1}},
                                                         {"count_include_pad", true}},
                                                        {in("x", {2, 2, 9, 9})})});
    // The window is the whole plane: the global mean kernel, not oneDNN pooling.
    rows.push_back({"avg_pool2d/global", make_case("avg_pool2d", {{"kernel", Ints{5, 4}}}, {in("x", {2, 3, 5, 4})})});
    return rows;
}

std::vector<Row> data_rows() {
    std::vector<Row> rows;
    for (const char *kind : {"reduce_sum", "reduce_mean", "reduce_max"}) {
        const std::string k = kind;
        rows.push_back({k + "/axis1 keep", make_case(k, {{"axes", Ints{1}}}, {in("x", {4, 6, 5})})});
        rows.push_back(
            {k + "/axes02 drop", make_case(k, {{"axes", Ints{0, -1}}, {"keepdims", false}}, {in("x", {3, 4, 7})})});
        rows.push_back({k + "/all drop", make_case(k, {{"axes", Ints{0, 1}}, {"keepdims", false}}, {in("x", {5, 6})})});
        // Regression: reducing only extent-1 axes reduces nothing, which oneDNN refuses.
        rows.push_back({k + "/extent-1 axes to scalar",
                        make_case(k, {{"axes", Ints{0, 1, 2}}, {"keepdims", false}}, {in("x", {1, 1, 1})})});
    }
    rows.push_back({"transpose/201", make_case("transpose", {{"perm", Ints{2, 0, 1}}}, {in("x", {3, 4, 5})})});
    rows.push_back({"transpose/reverse", make_case("transpose", {}, {in("x", {6, 7})})});
    rows.push_back({"transpose/0213", make_case("transpose", {{"perm", Ints{0, 2, 1, 3}}}, {in("x", {2, 3, 4, 5})})});
    {
        KernelCase c = make_case("transpose", {{"perm", Ints{1, 0}}}, {in("x", {5, 3})});
        c.dtype = DType::i64;
        // Integer outputs cannot hold the harness's NaN "untouched" marker: whole space only.
        rows.push_back({"transpose/i64", c, 0});
    }
    rows.push_back({"reshape/merge split", make_case("reshape", {{"shape", Ints{8, 3}}}, {in("x", {4, 6})})});
    rows.push_back({"reshape/split", make_case("reshape", {{"shape", Ints{2, 3}}}, {in("x", {6})})});
    rows.push_back({"reshape/no refinement", make_case("reshape", {{"shape", Ints{3, 2}}}, {in("x", {2, 3})})});
    rows.push_back({"reshape/merge", make_case("reshape", {{"shape", Ints{-1, 4}}}, {in("x", {2, 3, 4})})});
    rows.push_back({"reshape/unit dims", make_case("reshape", {{"shape", Ints{1, 5, 1, 4}}}, {in("x", {5, 4, 1})})});
    rows.push_back(
        {"concat/three axis1", make_case("concat", {{"axis", std::int64_t{1}}},
                                         {{"inputs", {ZPoint{3, 2, 4}, ZPoint{3, 5, 4}, ZPoint{3, 1, 4}}}})});
    rows.push_back({"concat/three axis0", make_case("concat", {{"axis", std::int64_t{0}}},
                                                    {{"inputs", {ZPoint{2, 5}, ZPoint{4, 5}, ZPoint{1, 5}}}})});
    rows.push_back({"slice/reverse", make_case("slice",
                                               {{"starts", Ints{-1}},
                                                {"ends", Ints{std::numeric_limits<std::int64_t>::min()}},
                                                {"steps", Ints{-1}}},
                                               {in("x", {7, 3})})});
    rows.push_back({"slice/step -2 axis1",
                    make_case("slice", {{"starts", Ints{8}}, {"ends", Ints{0}}, {"axes", Ints{1}}, {"steps", Ints{-2}}},
                              {in("x", {4, 10})})});
    rows.push_back({"slice/steps 2 and 3",
                    make_case("slice", {{"starts", Ints{1, 0}}, {"ends", Ints{7, 9}}, {"steps", Ints{2, 3}}},
                              {in("x", {8, 9, 2})})});
    // Regression: x[:, 0:5:2] of 2×5×3 reads rows 0, 2, 4 — strides 15, 6, 1 over
    // 2×3×3, which do not nest (3 rows of stride 6 span 18 > 15): oneDNN refused
    // to describe them, although no two elements share an address.
    rows.push_back({"slice/steps that do not nest",
                    make_case("slice", {{"starts", Ints{0}}, {"ends", Ints{5}}, {"axes", Ints{1}}, {"steps", Ints{2}}},
                              {in("x", {2, 5, 3})})});
    rows.push_back({"slice/plain", make_case("slice", {{"starts", Ints{1}}, {"ends", Ints{-1}}, {"axes", Ints{-1}}},
                                             {in("x", {3, 4, 6})})});
    {
        KernelCase c = make_case("embedding", {}, {in("ids", {2, 5}), in("table", {6, 7})});
        c.data["ids"] = {ids_tensor(DType::i64, ZPoint{2, 5}, {0, 5, 3, -1, 6, 2, 2, 1, 4, 100})};
        rows.push_back({"embedding/i64 with bad ids", c});
    }
    {
        KernelCase c = make_case("embedding", {}, {in("ids", {4}), in("table", {3, 16})});
        c.data["ids"] = {ids_tensor(DType::i32, ZPoint{4}, {2, 0, 1, 2})};
        rows.push_back({"embedding/i32", c});
    }
    if (OpLibrary::standard().find("gather")) {
        KernelCase c = make_case("gather", {{"axis", std::int64_t{1}}}, {in("data", {3, 5, 4}), in("indices", {2, 3})});
        c.data["indices"] = {ids_tensor(DType::i64, ZPoint{2, 3}, {0, -1, 4, 7, 2, -6})};
        rows.push_back({"gather/axis1 negative", c});
        KernelCase c0 = make_case("gather", {}, {in("data", {6, 3}), in("indices", {4})});
        c0.data["indices"] = {ids_tensor(DType::i32, ZPoint{4}, {5, 0, 0, 3})};
        rows.push_back({"gather/axis0", c0});
    }
    rows.push_back({"attention/plain", make_case("attention", {{"heads", std::int64_t{2}}},
                                                 {in("q", {2, 5, 8}), in("k", {2, 5, 8}), in("v", {2, 5, 6})})});
    rows.push_back({"attention/mask sq!=sk",
                    make_case("attention", {{"heads", std::int64_t{3}}, {"scale", 0.3}},
                              {in("q", {2, 4, 6}), in("k", {2, 7, 6}), in("v", {2, 7, 9}), in("mask", {4, 7})})});
    rows.push_back({"attention/causal", make_case("attention", {{"heads", std::int64_t{2}}, {"causal", true}},
                                                  {in("q", {1, 6, 8}), in("k", {1, 6, 8}), in("v", {1, 6, 4})})});
    rows.push_back({"attention/causal sq<sk mask",
                    make_case("attention", {{"heads", std::int64_t{1}}, {"causal", true}},
                              {in("q", {2, 3, 4}), in("k", {2, 5, 4}), in("v", {2, 5, 3}), in("mask", {3, 5})})});
    {
        KernelCase c = make_case("attention", {{"heads", std::int64_t{4}}, {"causal", true}},
                                 {in("q", {3, 16, 32}), in("k", {3, 16, 32}), in("v", {3, 16, 32})});
        c.threads = 2;
        rows.push_back({"attention/threads", c});
    }
    return rows;
}

void add_rows(const std::vector<Row> &rows) {
    QTest::addColumn<int>("index");
    for (size_t i = 0; i < rows.size(); ++i) QTest::newRow(rows[i].name.c_str()) << static_cast<int>(i);
}

// Checks a row on its whole index space and on `shards` random sub-ranges.
void check_row(const Row &row) {
    const ZRange space = index_space(row.c);
    std::vector<ZRange> ranges{space};
    std::mt19937_64 rng(std::hash<std::string>{}(row.name));
    for (int s = 0; s < row.shards; ++s) ranges.push_back(random_subrange(space, rng));
    for (const ZRange &r : ranges) {
        KernelCase c = row.c;
        c.index_range = r;
        const test::KernelCheckResult res = test::check_kernel(c);
        QVERIFY2(res.ok, (row.name + " on " + r.to_string() + ": " + res.message).c_str());
        QVERIFY(res.compared > 0);
    }
}

// An op-table row (tests/support/op_cases.h) with its floating operands retyped
// to `dtype`, as a kernel case; integer and bool operands keep their type and get
// values in [0, int_bound). nullopt when the op library refuses that dtype.
std::optional<KernelCase> retyped(const testing::OpCase &row, DType dtype) {
    std::vector<PortTypes> types = row.inputs;
    for (PortTypes &p : types)
        for (OperandType &o : p.operands)
            if (dtype_is_float(o.dtype)) o.dtype = dtype;
    if (!OpLibrary::standard().derive(row.kind, row.params, types)) return std::nullopt;
    KernelCase c;
    c.kind = row.kind;
    c.params = row.params;
    c.dtype = dtype;
    c.lo = row.lo;
    c.hi = row.hi;
    std::uint64_t seed = 7;
    for (const PortTypes &p : types) {
        std::vector<ZPoint> shapes;
        for (const OperandType &o : p.operands) {
            shapes.push_back(o.shape);
            if (!dtype_is_float(o.dtype))
                c.data[p.port].push_back(
                    test::random_tensor(o.dtype, o.shape, seed++, 0.0, static_cast<double>(row.int_bound)));
        }
        c.inputs.emplace_back(p.port, std::move(shapes));
    }
    // One rounding of the result to the dtype (half an ulp; a whole one when the
    // f32 result sits on a rounding boundary), plus f32's own error.
    switch (dtype) {
        case DType::bf16: c.rtol = 1e-2; c.atol = 1e-3; break;
        case DType::f16: c.rtol = 2e-3; c.atol = 1e-3; break;
        default: c.rtol = 1e-4; c.atol = 1e-4; break;
    }
    return c;
}

}  // namespace

class TestCpuKernels : public QObject {
    Q_OBJECT

private slots:
    // oneDNN 2.6 ends the process (a division by zero) creating a matmul whose M or
    // K reaches 2^32; every matmul kernel asks matmul_size_refusal first. Only the
    // descriptors are made here: nothing of that size is allocated.
    void matmulsTooLargeForOneDnnAreRefusedByName() {
        using dims = dnnl::memory::dims;
        const auto f32 = dnnl::memory::data_type::f32;
        const auto ab = dnnl::memory::format_tag::ab;
        const std::int64_t most = std::numeric_limits<std::int32_t>::max();
        QVERIFY(!cpu::matmul_size_refusal(dnnl::memory::desc(dims{most, 64}, f32, ab),
                                          dnnl::memory::desc(dims{64, 64}, f32, ab)));
        const auto rows = cpu::matmul_size_refusal(dnnl::memory::desc(dims{std::int64_t{1} << 32, 64}, f32, ab),
                                                   dnnl::memory::desc(dims{64, 64}, f32, ab));
        QVERIFY(rows);
        QCOMPARE(*rows, std::string("the matmul's source has 4294967296 elements along a dimension: "
                                    "oneDNN's matmul takes at most 2147483647 (2^31 − 1)"));
        const auto contraction = cpu::matmul_size_refusal(dnnl::memory::desc(dims{64, std::int64_t{1} << 32}, f32, ab),
                                                          dnnl::memory::desc(dims{std::int64_t{1} << 32, 64}, f32, ab));
        QVERIFY(contraction && contraction->find("4294967296") != std::string::npos);
    }

    void every_family_kind_has_a_kernel() {
        for (const char *kind :
             {"softmax", "layernorm", "rmsnorm", "conv2d", "max_pool2d", "avg_pool2d", "reduce_sum", "reduce_mean",
              "reduce_max", "transpose", "reshape", "concat", "slice", "embedding", "attention"})
            QVERIFY2(cpu::find_kernel(kind) != nullptr, kind);
        for (const char *kind : {"batchnorm", "gather"})
            if (OpLibrary::standard().find(kind)) QVERIFY2(cpu::find_kernel(kind) != nullptr, kind);
    }

    // Every dtype the op library accepts runs on this CPU, whatever its instruction
    // set: each row of the op table in f32, bf16 and f16 (where the op takes them),
    // on the whole index space, against the double oracle at the dtype's tolerance.
    // Where oneDNN or our loops have no kernel for a 16-bit float, make_kernel's
    // f32 fallback runs and says why, naming the instruction set.
    void every_kind_runs_in_every_float_dtype() {
        const cpu::CpuIsa &isa = cpu::cpu_isa();
        qInfo("oneDNN ISA: %s (native bf16: %s)", isa.name.c_str(), isa.native_bf16 ? "yes" : "no");
        std::map<DType, std::set<std::string>> kinds_run;
        std::map<DType, int> ran, fell_back;
        std::string failures;
        for (const testing::OpCase &row : testing::all_op_cases())
            for (const DType dtype : {DType::f32, DType::bf16, DType::f16}) {
                const auto c = retyped(row, dtype);
                if (!c) continue;  // the op does not take this dtype
                const auto r = test::check_kernel(*c);
                const std::string where = row.name + " in " + std::string(dtype_name(dtype));
                if (!r.ok) {
                    failures += "\n  " + where + ": " + r.message;
                    continue;
                }
                ++ran[dtype];
                kinds_run[dtype].insert(row.kind);
                if (!r.fallback.empty()) {
                    ++fell_back[dtype];
                    if (r.fallback.find(isa.name) == std::string::npos)
                        failures += "\n  " + where + ": the fallback does not name the ISA: " + r.fallback;
                }
                if (dtype == DType::f32 && !r.fallback.empty())
                    failures += "\n  " + where + ": an f32 kernel fell back: " + r.fallback;
            }
        QVERIFY2(failures.empty(), failures.c_str());
        for (const DType dtype : {DType::f32, DType::bf16, DType::f16})
            qInfo("%s: %d rows of %zu kinds ran, %d through the f32 fallback", std::string(dtype_name(dtype)).c_str(),
                  ran[dtype], kinds_run[dtype].size(), fell_back[dtype]);
        // Not vacuous: every kind that runs in f32 on floats runs in bf16 and f16 too,
        // except the ones whose rows all use integer operands only (gather of ids).
        for (const DType dtype : {DType::bf16, DType::f16})
            for (const char *k : {"matmul", "linear", "conv2d", "softmax", "layernorm", "rmsnorm", "attention",
                                         "reduce_sum", "max_pool2d", "gelu", "add", "fused", "embedding"})
                QVERIFY2(kinds_run[dtype].count(k), (std::string(k) + " did not run in " + std::string(dtype_name(dtype))).c_str());
    }

    void normalization_data() { add_rows(normalization_rows()); }
    void normalization() {
        QFETCH(int, index);
        check_row(normalization_rows()[static_cast<size_t>(index)]);
    }

    void convolution_data() { add_rows(convolution_rows()); }
    void convolution() {
        QFETCH(int, index);
        check_row(convolution_rows()[static_cast<size_t>(index)]);
    }

    void data_movement_data() { add_rows(data_rows()); }
    void data_movement() {
        QFETCH(int, index);
        check_row(data_rows()[static_cast<size_t>(index)]);
    }

    // Output rows split unevenly: every shard gets its halo and its own padding.
    void conv_row_shards_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("variant");
        QTest::newRow("conv2d stride2 pad") << "conv2d" << 0;
        QTest::newRow("conv2d dilated pad") << "conv2d" << 1;
        QTest::newRow("conv2d grouped") << "conv2d" << 2;
        QTest::newRow("max_pool2d pad") << "max_pool2d" << 0;
        QTest::newRow("avg_pool2d pad exclude") << "avg_pool2d" << 0;
        QTest::newRow("avg_pool2d pad include") << "avg_pool2d" << 1;
    }
    void conv_row_shards() {
        QFETCH(QString, kind);
        QFETCH(int, variant);
        KernelCase c;
        if (kind == "conv2d") {
            if (variant == 0)
                c = make_case("conv2d", {{"stride", Ints{2, 2}}, {"padding", Ints{1, 2, 2, 1}}},
                              {in("x", {1, 3, 13, 11}), in("w", {4, 3, 3, 3}), in("bias", {4})});
            else if (variant == 1)
                c = make_case("conv2d", {{"dilation", Ints{2, 3}}, {"padding", Ints{3, 3, 3, 3}}},
                              {in("x", {1, 2, 10, 10}), in("w", {2, 2, 3, 3})});
            else
                c = make_case("conv2d", {{"groups", std::int64_t{3}}, {"padding", Ints{1, 1, 1, 1}}},
                              {in("x", {1, 6, 9, 9}), in("w", {6, 2, 3, 3}), in("bias", {6})});
        } else {
            c = make_case(kind.toStdString(),
                          {{"kernel", Ints{3, 3}},
                           {"stride", Ints{2, 1}},
                           {"padding", Ints{1, 1, 2, 1}},
                           {"count_include_pad", variant == 1}},
                          {in("x", {2, 2, 12, 7})});
            if (kind == "max_pool2d") c.params.erase("count_include_pad");
        }
        const ZRange space = index_space(c);
        const int row_dim = space.rank() - 2, col_dim = space.rank() - 1;
        const Coord p = space.extent(row_dim);
        std::vector<ZRange> pieces = uneven_split(space, row_dim, {1, std::max<Coord>(2, p / 2), p - 1});
        for (const ZRange &rows : std::vector<ZRange>(pieces))
            for (const ZRange &r : rows.split(col_dim, 2)) pieces.push_back(r);
        for (const ZRange &r : pieces) {
            c.index_range = r;
            const auto res = test::check_kernel(c);
            QVERIFY2(res.ok, (r.to_string() + ": " + res.message).c_str());
        }
    }

    // A grouped conv shard spanning groups with part of their filters writes y
    // with holes; the kernel must leave the holes alone.
    void conv_grouped_shard_with_holes() {
        KernelCase c = make_case("conv2d", {{"groups", std::int64_t{3}}},
                                 {in("x", {2, 6, 5, 5}), in("w", {9, 2, 3, 3}), in("bias", {9})});
        // Index [N, G, K/G, P, Q]: groups 0..2, filters 1..2 of 3 in each.
        c.index_range = ZRange(ZPoint{0, 0, 1, 0, 0}, ZPoint{2, 3, 3, 3, 3});
        const auto res = test::check_kernel(c);
        QVERIFY2(res.ok, res.message.c_str());
        QCOMPARE(res.compared,
                 std::int64_t{2 * 8 * 3 * 3});  // filters 1..8 of the box; the holes are compared too (left NaN)
    }

    // Output rows whose windows lie wholly in the padding read an empty selection:
    // the result is the bias (and the epilogues), not skipped work.
    void conv_shard_reading_only_padding() {
        KernelCase c = make_case("conv2d", {{"padding", Ints{3, 3, 3, 3}}},
                                 {in("x", {1, 2, 3, 3}), in("w", {2, 2, 1, 1}), in("bias", {2})});
        for (const ZRange &r : {ZRange(ZPoint{0, 0, 0, 2}, ZPoint{1, 2, 2, 7}), ZRange(ZPoint{0, 0, 0, 0}, ZPoint{1, 2, 9, 2}),
                                ZRange(ZPoint{0, 1, 7, 7}, ZPoint{1, 2, 9, 9})}) {
            c.index_range = r;
            c.epilogues = {unary("relu")};
            const auto res = test::check_kernel(c);
            QVERIFY2(res.ok, (r.to_string() + ": " + res.message).c_str());
            QVERIFY(res.compared > 0);
        }
    }

    void conv_epilogues_data() {
        QTest::addColumn<int>("variant");
        QTest::newRow("relu") << 0;
        QTest::newRow("residual add") << 1;
        QTest::newRow("per-channel mul then gelu") << 2;
        QTest::newRow("grouped residual add, sharded") << 3;
        QTest::newRow("row shard, residual add then relu") << 4;
    }
    void conv_epilogues() {
        QFETCH(int, variant);
        KernelCase c = make_case("conv2d", {{"padding", Ints{1, 1, 1, 1}}},
                                 {in("x", {2, 3, 6, 6}), in("w", {4, 3, 3, 3}), in("bias", {4})});
        if (variant == 3)
            c = make_case("conv2d", {{"groups", std::int64_t{2}}, {"padding", Ints{1, 1, 1, 1}}},
                          {in("x", {2, 4, 6, 6}), in("w", {6, 2, 3, 3})});
        const IndexProjection py = y_projection(c);
        const ZPoint y_shape{2, variant == 3 ? 6 : 4, 6, 6};
        switch (variant) {
            case 0: c.epilogues = {unary("relu")}; break;
            case 1:
            case 4:
                c.epilogues = {binary("add", 0, py)};
                c.epilogue_shapes = {y_shape};
                if (variant == 4) {
                    c.epilogues.push_back(unary("relu"));
                    c.index_range = ZRange(ZPoint{0, 1, 2, 0}, ZPoint{2, 4, 5, 6});
                }
                break;
            case 2:
                c.epilogues = {binary("mul", 0, op_util::broadcast_projection(ZPoint{4, 1, 1}, y_shape)),
                               unary("gelu")};
                c.epilogue_shapes = {ZPoint{4, 1, 1}};
                break;
            case 3:
                c.epilogues = {binary("add", 0, py)};
                c.epilogue_shapes = {y_shape};
                c.index_range = ZRange(ZPoint{0, 0, 1, 1, 0}, ZPoint{2, 2, 3, 5, 6});  // both groups, filters 1..2
                break;
        }
        const auto res = test::check_kernel(c);
        QVERIFY2(res.ok, res.message.c_str());
    }

    void conv_refuses_epilogue_it_cannot_map() {
        KernelCase c = make_case("conv2d", {}, {in("x", {1, 2, 5, 5}), in("w", {3, 2, 3, 3})});
        // An operand read at twice the output row: no destination dim follows it.
        const ZMatrix a{{0, 1, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 1}};
        c.epilogues = {binary("add", 0, IndexProjection(AffineMap(a, ZPoint::zeros(3)), ZPoint::filled(3, 1)))};
        c.epilogue_shapes = {ZPoint{3, 5, 3}};
        const auto res = test::check_kernel(c);
        QVERIFY(!res.ok);
        QVERIFY2(res.message.find("cannot fuse") != std::string::npos, res.message.c_str());
        QVERIFY(!cpu::find_kernel("softmax")->can_fuse(cpu::KernelSpec{}, unary("relu")));
    }

    // Softmax and norms sharded along a normalized axis read whole rows and write
    // only their part.
    // bf16 where oneDNN has it (whole rows for softmax; the row loop is f32 only).
    void bf16_kernels_data() {
        QTest::addColumn<int>("variant");
        QTest::newRow("conv2d") << 0;
        QTest::newRow("softmax") << 1;
        QTest::newRow("max_pool2d") << 2;
        QTest::newRow("reduce_sum") << 3;
        QTest::newRow("layernorm") << 4;
    }
    void bf16_kernels() {
        QFETCH(int, variant);
        KernelCase c;
        ZRange shard;
        switch (variant) {
            case 0:
                c = make_case("conv2d", {{"padding", Ints{1, 1, 1, 1}}, {"stride", Ints{2, 1}}},
                              {in("x", {2, 3, 7, 6}), in("w", {4, 3, 3, 3}), in("bias", {4})});
                shard = ZRange(ZPoint{0, 1, 1, 0}, ZPoint{2, 3, 3, 6});
                break;
            case 1:
                c = make_case("softmax", {}, {in("x", {5, 24})});
                shard = ZRange(ZPoint{1, 0}, ZPoint{4, 24});
                break;
            case 2:
                c = make_case("max_pool2d", {{"kernel", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}},
                              {in("x", {1, 2, 7, 7})});
                shard = ZRange(ZPoint{0, 0, 1, 0}, ZPoint{1, 2, 3, 4});
                break;
            case 3:
                c = make_case("reduce_sum", {{"axes", Ints{1}}}, {in("x", {4, 16, 3})});
                shard = ZRange(ZPoint{1, 0, 1}, ZPoint{3, 1, 3});
                break;
            default:
                c = make_case("layernorm", {}, {in("x", {4, 32})});
                shard = ZRange(ZPoint{1, 0}, ZPoint{3, 32});
                break;
        }
        c.dtype = DType::bf16;
        c.rtol = 1e-2;
        c.atol = 2e-3;
        for (const std::optional<ZRange> &r : {std::optional<ZRange>{}, std::optional<ZRange>{shard}}) {
            c.index_range = r;
            const auto res = test::check_kernel(c);
            QVERIFY2(res.ok, res.message.c_str());
            qInfo("%s on %s: %s", c.kind.c_str(), cpu::cpu_isa().name.c_str(),
                  res.fallback.empty() ? "native bf16 kernel" : res.fallback.c_str());
        }
    }

    // Our Winograd F(4×4, 3×3) convolution (the conv2d kernel below AVX-512, run
    // here directly whatever the ISA): against the oracle on output sizes that are
    // not multiples of 4, asymmetric padding, no padding, shards with local
    // padding and a slice of the filters, unary epilogues, two threads, and more
    // tiles than one block holds (a shorter last block).
    void winograd_matches_the_oracle_data() {
        QTest::addColumn<KernelCase>("c");
        auto conv = [](Ints padding, ZPoint x, ZPoint w, bool bias) {
            std::vector<std::pair<std::string, std::vector<ZPoint>>> ins{in("x", x), in("w", w)};
            if (bias) ins.push_back(in("bias", ZPoint{w[0]}));
            KernelCase c = make_case("conv2d", {{"padding", padding}}, ins);
            c.rtol = 1e-4;
            c.atol = 1e-4;
            return c;
        };
        QTest::newRow("pad 1, 9x11 output") << conv({1, 1, 1, 1}, {2, 16, 9, 11}, {32, 16, 3, 3}, true);
        QTest::newRow("no padding") << conv({0, 0, 0, 0}, {1, 24, 10, 7}, {16, 24, 3, 3}, false);
        QTest::newRow("asymmetric padding") << conv({2, 0, 1, 1}, {1, 16, 8, 8}, {16, 16, 3, 3}, true);
        {
            KernelCase c = conv({1, 1, 1, 1}, {2, 16, 12, 12}, {40, 16, 3, 3}, true);
            c.index_range = ZRange(ZPoint{1, 8, 3, 0}, ZPoint{2, 24, 10, 7});
            QTest::newRow("shard: filters 8-24, rows 3-10, left border") << c;
            KernelCase d = conv({1, 1, 1, 1}, {2, 16, 12, 12}, {16, 16, 3, 3}, false);
            d.index_range = ZRange(ZPoint{0, 0, 9, 5}, ZPoint{2, 16, 12, 12});
            QTest::newRow("shard: bottom right corner") << d;
        }
        {
            KernelCase c = conv({1, 1, 1, 1}, {1, 16, 10, 10}, {16, 16, 3, 3}, true);
            c.epilogues = {unary("relu")};
            QTest::newRow("relu epilogue") << c;
            KernelCase g = conv({1, 1, 1, 1}, {1, 16, 10, 10}, {16, 16, 3, 3}, true);
            g.epilogues = {unary("gelu", Params{{"approximate", std::string("tanh")}}), unary("neg")};
            QTest::newRow("gelu then neg epilogues") << g;
        }
        {
            KernelCase c = conv({1, 1, 1, 1}, {3, 16, 40, 40}, {16, 16, 3, 3}, true);
            c.threads = 2;
            QTest::newRow("300 tiles in two blocks, two threads") << c;
        }
    }
    void winograd_matches_the_oracle() {
        QFETCH(KernelCase, c);
        cpu::KernelFactory winograd = *cpu::find_kernel("conv2d");
        winograd.make = cpu::make_winograd_conv;
        c.factory = &winograd;
        const auto r = test::check_kernel(c);
        QVERIFY2(r.ok, r.message.c_str());
        QVERIFY(r.compared > 0);
        QVERIFY2(r.fallback.empty(), r.fallback.c_str());
    }

    // What it does not take, it says (the conv2d kernel then runs direct).
    void winograd_refusals_data() {
        QTest::addColumn<KernelCase>("c");
        QTest::addColumn<QString>("why");
        QTest::newRow("stride 2") << make_case("conv2d", {{"stride", Ints{2, 2}}}, {in("x", {1, 16, 8, 8}), in("w", {16, 16, 3, 3})})
                                  << "the stride is not 1";
        QTest::newRow("5x5") << make_case("conv2d", {}, {in("x", {1, 16, 8, 8}), in("w", {16, 16, 5, 5})})
                             << "the window is not 3×3";
        QTest::newRow("3 channels") << make_case("conv2d", {}, {in("x", {1, 3, 8, 8}), in("w", {16, 3, 3, 3})})
                                    << "fewer than 16 input or output channels";
        QTest::newRow("groups") << make_case("conv2d", {{"groups", std::int64_t{2}}},
                                             {in("x", {1, 32, 8, 8}), in("w", {32, 16, 3, 3})})
                                << "grouped convolutions run direct";
    }
    void winograd_refusals() {
        QFETCH(KernelCase, c);
        QFETCH(QString, why);
        cpu::KernelFactory winograd = *cpu::find_kernel("conv2d");
        winograd.make = cpu::make_winograd_conv;
        c.factory = &winograd;
        const auto r = test::check_kernel(c);
        QVERIFY(!r.ok);
        QVERIFY2(QString::fromStdString(r.message).contains(why), r.message.c_str());
    }

    // The row loop states what it lacks instead of computing garbage; make_kernel
    // then runs it in f32 behind the bf16 conversion and says so.
    void row_loop_refuses_bf16_and_make_kernel_falls_back() {
        const OpLibrary &lib = OpLibrary::standard();
        std::vector<PortTypes> ports{{"x", {OperandType{DType::bf16, ZPoint{3, 8}}}}};
        auto d = lib.derive("rmsnorm", {}, ports);
        QVERIFY(d.has_value());
        cpu::KernelSpec spec;
        spec.def = lib.find("rmsnorm");
        spec.params = lib.with_defaults(*spec.def, {});
        spec.derivation = *d;
        spec.operands = ports;
        spec.index_range = d->signature.index_space;
        spec.input_shapes = {ZPoint{3, 8}};
        spec.output_shapes = {ZPoint{3, 8}};
        auto k = cpu::find_kernel("rmsnorm")->make(spec);
        QVERIFY(!k.has_value());
        QCOMPARE(QString::fromStdString(k.error()), QString("rmsnorm: the CPU row kernel supports f32 only, got bf16"));
        auto made = cpu::make_kernel(*cpu::find_kernel("rmsnorm"), spec);
        QVERIFY2(made.has_value(), made ? "" : made.error().c_str());
        QCOMPARE(QString::fromStdString(made->fallback),
                 QString("bf16 computed in f32 (on %1 there is no native kernel: rmsnorm: the CPU row kernel supports "
                         "f32 only, got bf16)")
                     .arg(QString::fromStdString(cpu::cpu_isa().name)));
    }

    void normalized_axis_shards() {
        KernelCase s = make_case("softmax", {}, {in("x", {4, 12})});
        s.index_range = ZRange(ZPoint{1, 3}, ZPoint{3, 8});
        auto r = test::check_kernel(s);
        QVERIFY2(r.ok, r.message.c_str());
        KernelCase l = make_case("layernorm", {{"axis", std::int64_t{1}}},
                                 {in("x", {3, 4, 5}), in("gamma", {4, 5}), in("beta", {4, 5})});
        l.index_range = ZRange(ZPoint{0, 1, 2}, ZPoint{2, 3, 5});
        r = test::check_kernel(l);
        QVERIFY2(r.ok, r.message.c_str());
        KernelCase m = make_case("rmsnorm", {}, {in("x", {3, 9}), in("gamma", {9})});
        m.index_range = ZRange(ZPoint{0, 4}, ZPoint{3, 9});
        r = test::check_kernel(m);
        QVERIFY2(r.ok, r.message.c_str());
        // A layer norm over its last dim split along it (a GPT layer norm by
        // features, as the search picks it): whole rows read, a contiguous part
        // written (the row loop's second fast path), with and without gamma/beta,
        // on parts of every size up to one element.
        for (const auto &[lo, hi] : {std::pair{0, 37}, std::pair{37, 74}, std::pair{70, 74}, std::pair{5, 6}}) {
            KernelCase n = make_case("layernorm", {}, {in("x", {2, 3, 74}), in("gamma", {74}), in("beta", {74})});
            n.index_range = ZRange(ZPoint{0, 1, lo}, ZPoint{2, 3, hi});
            r = test::check_kernel(n);
            QVERIFY2(r.ok, r.message.c_str());
            KernelCase plain = make_case("layernorm", {}, {in("x", {2, 3, 74})});
            plain.index_range = n.index_range;
            r = test::check_kernel(plain);
            QVERIFY2(r.ok, r.message.c_str());
            KernelCase sm = make_case("softmax", {}, {in("x", {3, 74})});
            sm.index_range = ZRange(ZPoint{0, lo}, ZPoint{3, hi});
            r = test::check_kernel(sm);
            QVERIFY2(r.ok, r.message.c_str());
        }
    }

    // A binary op on a window of wider rows (a residual add split along its
    // features, as the search picks it): strided views, which go through the
    // vectorized row loop rather than oneDNN's reference code; with a broadcast
    // operand too, and in bf16.
    void binary_shards_of_wider_rows() {
        for (const auto &[lo, hi] : {std::pair{0, 48}, std::pair{48, 96}, std::pair{7, 8}}) {
            for (const char *kind : {"add", "sub", "mul"}) {
                KernelCase c = make_case(kind, {}, {in("a", {2, 5, 96}), in("b", {2, 5, 96})});
                c.index_range = ZRange(ZPoint{0, 1, lo}, ZPoint{2, 5, hi});
                auto r = test::check_kernel(c);
                QVERIFY2(r.ok, (std::string(kind) + ": " + r.message).c_str());
            }
            KernelCase bias = make_case("add", {}, {in("a", {3, 96}), in("b", {96})});
            bias.index_range = ZRange(ZPoint{0, lo}, ZPoint{3, hi});
            auto r = test::check_kernel(bias);
            QVERIFY2(r.ok, r.message.c_str());
            KernelCase half = make_case("add", {}, {in("a", {2, 5, 96}), in("b", {2, 5, 96})});
            half.index_range = ZRange(ZPoint{0, 0, lo}, ZPoint{2, 5, hi});
            half.dtype = DType::bf16;
            half.rtol = 1e-2;
            half.atol = 2e-3;
            r = test::check_kernel(half);
            QVERIFY2(r.ok, r.message.c_str());
        }
    }

    // Attention sharded on each of B, H, Sq and Ev, and across heads with part of Ev (holes in y).
    void attention_shards_data() {
        QTest::addColumn<int>("b0");
        QTest::addColumn<int>("b1");
        QTest::addColumn<int>("h0");
        QTest::addColumn<int>("h1");
        QTest::addColumn<int>("s0");
        QTest::addColumn<int>("s1");
        QTest::addColumn<int>("e0");
        QTest::addColumn<int>("e1");
        QTest::newRow("batch") << 1 << 2 << 0 << 3 << 0 << 6 << 0 << 4;
        QTest::newRow("head") << 0 << 2 << 2 << 3 << 0 << 6 << 0 << 4;
        QTest::newRow("queries") << 0 << 2 << 0 << 3 << 2 << 5 << 0 << 4;
        QTest::newRow("ev") << 0 << 2 << 1 << 2 << 0 << 6 << 1 << 3;
        QTest::newRow("heads with part of ev") << 0 << 1 << 0 << 3 << 3 << 6 << 2 << 4;
    }
    void attention_shards() {
        QFETCH(int, b0);
        QFETCH(int, b1);
        QFETCH(int, h0);
        QFETCH(int, h1);
        QFETCH(int, s0);
        QFETCH(int, s1);
        QFETCH(int, e0);
        QFETCH(int, e1);
        for (bool causal : {false, true}) {
            KernelCase c = make_case("attention", {{"heads", std::int64_t{3}}, {"causal", causal}},
                                     {in("q", {2, 6, 6}), in("k", {2, 8, 6}), in("v", {2, 8, 12}), in("mask", {6, 8})});
            c.index_range = ZRange(ZPoint{b0, h0, s0, e0}, ZPoint{b1, h1, s1, e1});
            c.threads = 2;
            const auto res = test::check_kernel(c);
            QVERIFY2(res.ok, res.message.c_str());
        }
    }

    // A kernel built once runs again on new data with the same result as a fresh check.
    void kernels_are_reusable() {
        const OpLibrary &lib = OpLibrary::standard();
        const OpDef *def = lib.find("transpose");
        std::vector<PortTypes> ports{{"x", {OperandType{DType::f32, ZPoint{3, 4}}}}};
        auto d = lib.derive("transpose", {}, ports);
        QVERIFY(d.has_value());
        cpu::KernelSpec spec;
        spec.def = def;
        spec.params = lib.with_defaults(*def, {});
        spec.derivation = *d;
        spec.operands = ports;
        spec.index_range = d->signature.index_space;
        spec.input_shapes = {ZPoint{3, 4}};
        spec.output_shapes = {ZPoint{4, 3}};
        auto k = cpu::find_kernel("transpose")->make(spec);
        QVERIFY(k.has_value());
        for (int round = 0; round < 2; ++round) {
            TensorData x = test::random_tensor(DType::f32, ZPoint{3, 4}, 10 + static_cast<std::uint64_t>(round));
            TensorData y(DType::f32, ZPoint{4, 3});
            std::vector<cpu::View> ins{test::view_of(x, ZRange::of_shape(x.shape))};
            std::vector<cpu::View> outs{test::view_of(y, ZRange::of_shape(y.shape))};
            (*k)->run(ins, outs);
            for (Coord i = 0; i < 3; ++i)
                for (Coord j = 0; j < 4; ++j) QCOMPARE(y.get(j * 3 + i), x.get(i * 4 + j));
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"
