// The CUDA element math (runtime/cuda/element_math.h), compiled for the host: every
// function against the op library's double-precision reference kernel of its kind
// over a grid of values with the edge cases (signed zeros, subnormals, ±1e-8,
// magnitudes up to FLT_MAX, ±inf, NaN), and the bf16/f16 conversions against the
// CPU kernels' (runtime/cpu/float_formats.h) on all 65536 bit patterns and on every
// float that rounds differently (each value, its neighbours, each tie).
//
// The f32 tolerance of a unary function f at x is
//     ulps · 2^-23 · (|f(x)| + |x f'(x)|)  +  2^-50 |x|  +  FLT_MIN
// - ulps: the CUDA math library's documented bound of the calls the function makes
//   (expf 2, tanhf 2, erff 2, erfcf 4, powf 4, logf/log1pf/expm1f 1; + - * / sqrt
//   correctly rounded) plus one per f32 rounding around them;
// - |x f'(x)| (the condition number times |f|, by a central difference of the
//   oracle): a relative f32 rounding inside the function acts like one of x, so a
//   correct f32 implementation errs by ulps times the condition number, not better;
// - 2^-50 |x|: the oracle's own error where its forms cancel in double (1 + erf,
//   1 + tanh of gelu at x ≪ 0 give 0 where the true value is ~1e-23);
// - FLT_MIN: results below the normal f32 range carry no relative accuracy.
// Exact kinds (relu, neg, abs, sqrt, reciprocal, clip, binary arithmetic, max, min)
// must equal the reference rounded to f32 bit for bit: one IEEE rounding in f32
// equals double then f32 for + − × ÷ √ (53 ≥ 2·24 + 2).
#include <QtTest/QtTest>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "op_check.h"
#include "runtime/cpu/float_formats.h"
#include "runtime/cuda/element_math.h"

using namespace tapestry;
namespace em = tapestry::cuda::element;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- the oracle ------------------------------------------------------------------------

// The op library's reference kernel of `kind` (params without defaults: the library
// fills them) on 1-D operands, one vector per input port in port order.
std::vector<double> oracle(const std::string &kind, const Params &params,
                           const std::vector<std::vector<double>> &operands, std::string &error) {
    const OpDef *def = OpLibrary::standard().find(kind);
    if (!def) {
        error = "unknown kind " + kind;
        return {};
    }
    const auto n = static_cast<Coord>(operands.at(0).size());
    testing::OpCase c{kind, kind, params, {}};
    const auto ports = def->input_ports();
    for (size_t i = 0; i < operands.size(); ++i) c.inputs.push_back(testing::port(ports.at(i).name, {n}));
    auto run = testing::prepare(c, 1);
    if (!run) {
        error = run.error();
        return {};
    }
    for (size_t i = 0; i < operands.size(); ++i) run->inputs[i][0].data = operands[i];
    auto outs = run->outputs;
    testing::run_reference(*run, ZRange::of_shape(ZPoint(std::vector<Coord>{n})), outs);
    return outs[0][0].data;
}

// ---- value grids -----------------------------------------------------------------------

std::vector<double> unary_grid() {
    std::vector<double> g{0.0, -0.0, kInf, -kInf, kNaN};
    for (double m : {1e-40,
                     static_cast<double>(FLT_MIN),
                     1e-30,
                     1e-8,
                     1e-4,
                     0.1,
                     0.5,
                     1.0,
                     1.5,
                     2.0,
                     2.5,
                     3.0,
                     5.0,
                     6.0,
                     10.0,
                     15.0,
                     20.0,
                     30.0,
                     50.0,
                     80.0,
                     88.0,
                     89.0,
                     100.0,
                     1e4,
                     1e10,
                     1e13,
                     1e20,
                     1e30,
                     static_cast<double>(FLT_MAX)}) {
        g.push_back(m);
        g.push_back(-m);
    }
    for (int k = -4; k <= 4; ++k) g.push_back(1.0 + k * 0x1p-23);  // log and pow around 1
    for (int i = 0; i <= 4000; ++i) g.push_back(static_cast<float>(-12.0 + 24.0 * i / 4000));
    for (int i = 0; i <= 300; ++i) {
        const double m = std::pow(10.0, -30.0 + 60.0 * i / 300);
        g.push_back(static_cast<float>(m));
        g.push_back(static_cast<float>(-m));
    }
    for (double &v : g) v = static_cast<float>(v);  // every grid value is an f32
    return g;
}

// Pairs (a, b) of f32 values: every pair of the specials and some random ones.
std::pair<std::vector<double>, std::vector<double>> binary_grid() {
    std::vector<double> s{0.0,
                          -0.0,
                          kInf,
                          -kInf,
                          kNaN,
                          1e-40,
                          -1e-40,
                          1e-8,
                          -1e-8,
                          0.1,
                          -0.1,
                          0.5,
                          1.0,
                          -1.0,
                          3.0,
                          -3.0,
                          1e10,
                          -1e10,
                          3e38,
                          -3e38,
                          static_cast<double>(FLT_MAX),
                          static_cast<double>(FLT_MIN)};
    std::vector<double> a, b;
    for (double x : s)
        for (double y : s) {
            a.push_back(static_cast<float>(x));
            b.push_back(static_cast<float>(y));
        }
    std::mt19937_64 rng(18);
    std::uniform_real_distribution<double> u(-10, 10), e(-40, 40);
    for (int i = 0; i < 20000; ++i) {
        const bool scaled = i % 2 == 1;
        a.push_back(static_cast<float>(scaled ? u(rng) * std::pow(10.0, e(rng)) : u(rng)));
        b.push_back(static_cast<float>(scaled ? u(rng) * std::pow(10.0, e(rng)) : u(rng)));
    }
    return {a, b};
}

// ---- comparison ----------------------------------------------------------------------

struct Comparison {
    int failures = 0;
    double worst = 0;  // largest error / tolerance seen
    QString first;     // the first few failures
    void fail(const QString &what) {
        if (++failures <= 5) first += what + "\n";
    }
};

QString num(double v) {
    return QString::number(v, 'g', 10);
}

bool same_bits(float a, float b) {
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

// One result against its reference: `exact` asks for the reference rounded to f32
// bit for bit (NaN for NaN); else the tolerance of the file comment.
void compare(Comparison &c, const QString &at, float got, double ref, bool exact, double tolerance) {
    const float ref32 = static_cast<float>(ref);
    if (std::isnan(ref) || std::isnan(got)) {
        if (!(std::isnan(ref) && std::isnan(got))) c.fail(at + ": got " + num(got) + ", reference " + num(ref));
        return;
    }
    if (exact) {
        if (!same_bits(got, ref32)) c.fail(at + ": got " + num(got) + ", reference " + num(ref32) + " (exact)");
        return;
    }
    if (std::isinf(ref32) || std::isinf(got)) {
        if (got != ref32) c.fail(at + ": got " + num(got) + ", reference " + num(ref));
        return;
    }
    const double err = std::fabs(static_cast<double>(got) - ref);
    c.worst = std::max(c.worst, err / tolerance);
    if (err > tolerance)
        c.fail(at + ": got " + num(got) + ", reference " + num(ref) + ", error " + num(err) + " > " + num(tolerance));
}

// ---- unary rows ----------------------------------------------------------------------

struct UnaryRow {
    std::string kind;
    Params params;    // as a user gives them (the oracle fills defaults)
    double ulps = 0;  // 0: exact
    std::function<float(float)> f;
    double exponent = 0;  // pow: the exponent, whose f32 rounding the tolerance adds
};

Comparison check_unary(const UnaryRow &row) {
    Comparison c;
    const std::vector<double> xs = unary_grid();
    constexpr double h = 0x1p-20;
    std::vector<double> up(xs), down(xs);
    for (size_t i = 0; i < xs.size(); ++i) {
        up[i] = xs[i] * (1 + h);
        down[i] = xs[i] * (1 - h);
    }
    std::string error;
    const auto ref = oracle(row.kind, row.params, {xs}, error);
    const auto ref_up = oracle(row.kind, row.params, {up}, error);
    const auto ref_down = oracle(row.kind, row.params, {down}, error);
    if (ref.size() != xs.size() || ref_up.size() != xs.size() || ref_down.size() != xs.size()) {
        c.fail(QString::fromStdString("oracle: " + error));
        return c;
    }
    const double exponent_error = std::fabs(row.exponent - static_cast<float>(row.exponent));
    for (size_t i = 0; i < xs.size(); ++i) {
        const double x = xs[i];
        const float got = row.f(static_cast<float>(x));
        double slope = std::fabs(ref_up[i] - ref_down[i]) / (2 * h);  // |x f'(x)|
        if (!std::isfinite(slope)) slope = 0;
        double tolerance = row.ulps * 0x1p-23 * (std::fabs(ref[i]) + slope) + 0x1p-50 * std::fabs(x) + FLT_MIN;
        if (exponent_error > 0 && std::isfinite(ref[i]) && x != 0)
            tolerance += 2 * std::fabs(ref[i] * std::log(std::fabs(x))) * exponent_error;
        compare(c, QString::fromStdString(row.kind) + "(" + num(x) + ")", got, ref[i], row.ulps == 0, tolerance);
    }
    return c;
}

std::vector<UnaryRow> unary_rows() {
    using P = Params;
    auto a = [](const char *name, double v) { return P{{name, v}}; };
    std::vector<UnaryRow> rows{
        {"relu", {}, 0, [](float x) { return em::relu(x); }},
        {"gelu", {}, 8, [](float x) { return em::gelu(x); }},
        {"gelu", P{{"approximate", std::string("none")}}, 8, [](float x) { return em::gelu(x, false); }},
        {"gelu", P{{"approximate", std::string("tanh")}}, 8, [](float x) { return em::gelu(x, true); }},
        {"sigmoid", {}, 4, [](float x) { return em::sigmoid(x); }},
        {"tanh", {}, 2, [](float x) { return em::tanh(x); }},
        {"exp", {}, 2, [](float x) { return em::exp(x); }},
        {"log", {}, 1, [](float x) { return em::log(x); }},
        {"neg", {}, 0, [](float x) { return em::neg(x); }},
        {"abs", {}, 0, [](float x) { return em::abs(x); }},
        {"erf", {}, 2, [](float x) { return em::erf(x); }},
        {"sqrt", {}, 0, [](float x) { return em::sqrt(x); }},
        {"reciprocal", {}, 0, [](float x) { return em::reciprocal(x); }},
        {"softplus", {}, 4, [](float x) { return em::softplus(x); }},
        {"softsign", {}, 2, [](float x) { return em::softsign(x); }},
        {"hard_swish", {}, 2, [](float x) { return em::hard_swish(x); }},
        {"leaky_relu", {}, 1, [](float x) { return em::leaky_relu(x); }},
        {"leaky_relu", a("alpha", 0.5), 0, [](float x) { return em::leaky_relu(x, 0.5f); }},
        {"leaky_relu", a("alpha", 0.3), 1, [](float x) { return em::leaky_relu(x, 0.3f); }},
        {"elu", {}, 2, [](float x) { return em::elu(x); }},
        {"elu", a("alpha", 0.7), 2, [](float x) { return em::elu(x, 0.7f); }},
        {"selu", {}, 3, [](float x) { return em::selu(x); }},
        {"selu", P{{"alpha", 1.5}, {"gamma", 2.0}}, 3, [](float x) { return em::selu(x, 1.5f, 2.0f); }},
        {"hard_sigmoid", {}, 2, [](float x) { return em::hard_sigmoid(x); }},
        {"hard_sigmoid", P{{"alpha", 0.5}, {"beta", 0.25}}, 2,
         [](float x) { return em::hard_sigmoid(x, 0.5f, 0.25f); }},
        {"clip", {}, 0, [](float x) { return em::clip(x); }},
        {"clip", P{{"min", -1.0}, {"max", 2.5}}, 0, [](float x) { return em::clip(x, -1.0f, 2.5f); }},
        {"clip", a("min", 0.0), 0, [](float x) { return em::clip(x, 0.0f); }},
        {"clip", a("max", 6.0), 0, [](float x) { return em::clip(x, -FLT_MAX, 6.0f); }},
        // The cuda factories pass an absent bound as ±inf: also none.
        {"clip", a("max", 6.0), 0, [](float x) { return em::clip(x, -INFINITY, 6.0f); }},
    };
    for (double e : {2.0, 3.0, 0.5, -1.0, 1.5, -2.5, 0.1}) {
        UnaryRow r{"pow", a("exponent", e), 4, [e](float x) { return em::pow(x, static_cast<float>(e)); }};
        r.exponent = e;
        rows.push_back(std::move(r));
    }
    return rows;
}

QString row_name(const UnaryRow &r) {
    QString name = QString::fromStdString(r.kind);
    for (const auto &[k, v] : r.params.values()) name += " " + QString::fromStdString(k + "=" + param_to_string(v));
    return name;
}

}  // namespace

Q_DECLARE_METATYPE(UnaryRow)

class TestCudaElementMath : public QObject {
    Q_OBJECT

private slots:
    void unary_functions_match_the_oracle_data() {
        QTest::addColumn<UnaryRow>("row");
        int i = 0;
        for (const UnaryRow &r : unary_rows()) QTest::newRow(qPrintable(QString::number(i++) + " " + row_name(r))) << r;
    }
    void unary_functions_match_the_oracle() {
        QFETCH(UnaryRow, row);
        const Comparison c = check_unary(row);
        QVERIFY2(c.failures == 0, qPrintable(QString::number(c.failures) + " values out of tolerance:\n" + c.first));
        if (row.ulps > 0) qDebug("worst error: %.3f of the tolerance", c.worst);
    }

    void every_elementwise_kind_has_a_function() {
        std::set<std::string> kinds;
        for (const UnaryRow &r : unary_rows()) kinds.insert(r.kind);
        for (const char *k : {"add", "sub", "mul", "div", "max", "min"}) kinds.insert(k);
        int checked = 0;
        for (const OpDef *def : OpLibrary::standard().all()) {
            const std::string kind(def->kind());
            if (def->category() != "elementwise" || kind == "cast") continue;
            QVERIFY2(kinds.count(kind), qPrintable(QString::fromStdString(kind) + " has no row here"));
            ++checked;
        }
        QCOMPARE(checked, 26);
    }

    void binary_functions_match_the_oracle_data() {
        QTest::addColumn<QString>("kind");
        for (const char *k : {"add", "sub", "mul", "div", "max", "min"}) QTest::newRow(k) << QString(k);
    }
    void binary_functions_match_the_oracle() {
        QFETCH(QString, kind);
        const std::map<QString, std::function<float(float, float)>> functions{
            {"add", em::add}, {"sub", em::sub}, {"mul", em::mul}, {"div", em::div}, {"max", em::max}, {"min", em::min}};
        const auto &f = functions.at(kind);
        const auto [a, b] = binary_grid();
        std::string error;
        const auto ref = oracle(kind.toStdString(), {}, {a, b}, error);
        QVERIFY2(ref.size() == a.size(), error.c_str());
        Comparison c;
        for (size_t i = 0; i < a.size(); ++i)
            compare(c, kind + "(" + num(a[i]) + ", " + num(b[i]) + ")",
                    f(static_cast<float>(a[i]), static_cast<float>(b[i])), ref[i], true, 0);
        QVERIFY2(c.failures == 0, qPrintable(QString::number(c.failures) + " results differ:\n" + c.first));
    }

    // max and min propagate NaN and keep std::max/std::min's choice among signed zeros
    // (the CPU kernels'), which the oracle's double values cannot show.
    void max_min_nan_and_signed_zeros() {
        QVERIFY(std::isnan(em::max(NAN, 1.0f)) && std::isnan(em::max(1.0f, NAN)));
        QVERIFY(std::isnan(em::min(NAN, 1.0f)) && std::isnan(em::min(1.0f, NAN)));
        QVERIFY(same_bits(em::max(-0.0f, 0.0f), std::max(-0.0f, 0.0f)));
        QVERIFY(same_bits(em::max(0.0f, -0.0f), std::max(0.0f, -0.0f)));
        QVERIFY(same_bits(em::min(-0.0f, 0.0f), std::min(-0.0f, 0.0f)));
        QVERIFY(same_bits(em::min(0.0f, -0.0f), std::min(0.0f, -0.0f)));
        QVERIFY(same_bits(em::relu(-0.0f), 0.0f));
        QCOMPARE(em::relu(NAN), 0.0f);
        QVERIFY(std::isnan(em::clip(NAN, -1.0f, 1.0f)) && std::isnan(em::hard_sigmoid(NAN)));
    }

    // The tolerance is tight enough to see a function that is slightly wrong: the
    // naive erf form of gelu (cancellation at x ≪ 0), a selu alpha cut to 6 digits,
    // a gelu tanh constant off in its fourth digit.
    void the_check_catches_slightly_wrong_functions() {
        const UnaryRow wrong[] = {
            {"gelu", {}, 8, [](float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }},
            {"selu", {}, 3, [](float x) { return em::selu(x, 1.67326f); }},
            {"gelu", Params{{"approximate", std::string("tanh")}}, 8,
             [](float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.0447f * x * x * x))); }},
        };
        for (const UnaryRow &r : wrong) QVERIFY2(check_unary(r).failures > 0, qPrintable(row_name(r)));
    }

    // ---- 16-bit storage ----------------------------------------------------------------

    void widening_equals_the_cpu_for_every_pattern() {
        for (std::uint32_t h = 0; h <= 0xffff; ++h) {
            const auto s = static_cast<std::uint16_t>(h);
            QVERIFY2(same_bits(em::bf16_to_float(s), cpu::bf16_to_float(s)),
                     qPrintable("bf16 " + QString::number(h, 16)));
            QVERIFY2(same_bits(em::f16_to_float(s), cpu::f16_to_float(s)), qPrintable("f16 " + QString::number(h, 16)));
        }
    }

    // Rounding to bf16 and f16: every 16-bit value widened, its f32 neighbours, every
    // tie between two neighbouring 16-bit values and the ties' neighbours, NaN
    // payloads, and every 251st f32 bit pattern.
    void rounding_equals_the_cpu() {
        std::vector<float> fs;
        auto around = [&](float v) {
            fs.push_back(v);
            float lo = v, hi = v;
            for (int k = 0; k < 2; ++k) {
                lo = std::nextafter(lo, -INFINITY);
                hi = std::nextafter(hi, INFINITY);
                fs.push_back(lo);
                fs.push_back(hi);
            }
        };
        for (std::uint32_t h = 0; h <= 0xffff; ++h)
            for (auto widen : {cpu::bf16_to_float, cpu::f16_to_float}) {
                const float v = widen(static_cast<std::uint16_t>(h));
                const float next = widen(static_cast<std::uint16_t>((h + 1) & 0xffff));
                around(v);
                if (std::isfinite(v) && std::isfinite(next) && std::signbit(v) == std::signbit(next))
                    around(static_cast<float>((static_cast<double>(v) + next) / 2));  // the tie, exact in f32
            }
        around(65520.0f);                           // f16: the tie with the overflow
        around(std::bit_cast<float>(0x7f7f8000u));  // bf16: the tie with the overflow
        for (std::uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0xffc00001u, 0xff800001u, 0x7fa5a5a5u})
            fs.push_back(std::bit_cast<float>(nan));
        for (std::uint64_t u = 0; u <= 0xffffffffu; u += 251)
            fs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
        for (float f : fs) {
            if (em::float_to_bf16(f) != cpu::float_to_bf16(f))
                QFAIL(qPrintable("bf16 of " + QString::number(std::bit_cast<std::uint32_t>(f), 16)));
            if (em::float_to_f16(f) != cpu::float_to_f16(f))
                QFAIL(qPrintable("f16 of " + QString::number(std::bit_cast<std::uint32_t>(f), 16)));
        }
        QVERIFY(fs.size() > 17'000'000);
    }

    // The formats themselves, so that a fault shared with the CPU header shows too.
    void rounding_anchors_data() {
        QTest::addColumn<float>("value");
        QTest::addColumn<int>("f16");
        QTest::addColumn<int>("bf16");
        QTest::newRow("one") << 1.0f << 0x3c00 << 0x3f80;
        QTest::newRow("-2") << -2.0f << 0xc000 << 0xc000;
        QTest::newRow("f16 max") << 65504.0f << 0x7bff << 0x4780;
        QTest::newRow("f16 just below the overflow tie") << std::nextafter(65520.0f, 0.0f) << 0x7bff << 0x4780;
        QTest::newRow("f16 overflow tie") << 65520.0f << 0x7c00 << 0x4780;
        QTest::newRow("smallest f16 subnormal") << 0x1p-24f << 0x0001 << 0x3380;
        QTest::newRow("half of it: tie to even 0") << 0x1p-25f << 0x0000 << 0x3300;
        QTest::newRow("three halves: tie to even 2") << 0x3p-25f << 0x0002 << 0x33c0;
        QTest::newRow("bf16 tie to even down") << (1.0f + 0x1p-8f) << 0x3c04 << 0x3f80;
        QTest::newRow("bf16 tie to even up") << (1.0f + 0x3p-8f) << 0x3c0c << 0x3f82;
        QTest::newRow("FLT_MAX") << FLT_MAX << 0x7c00 << 0x7f80;
        QTest::newRow("-inf") << -INFINITY << 0xfc00 << 0xff80;
        QTest::newRow("NaN") << NAN << 0x7e00 << 0x7fc0;
    }
    void rounding_anchors() {
        QFETCH(float, value);
        QFETCH(int, f16);
        QFETCH(int, bf16);
        QCOMPARE(static_cast<int>(em::float_to_f16(value)), f16);
        QCOMPARE(static_cast<int>(em::float_to_bf16(value)), bf16);
        if (!std::isnan(value)) {
            // Widening back gives the rounded value (or ±inf), which rounds to itself.
            QCOMPARE(static_cast<int>(em::float_to_f16(em::f16_to_float(static_cast<std::uint16_t>(f16)))), f16);
            QCOMPARE(static_cast<int>(em::float_to_bf16(em::bf16_to_float(static_cast<std::uint16_t>(bf16)))), bf16);
        }
    }
};

QTEST_GUILESS_MAIN(TestCudaElementMath)
#include "test_cuda_element_math.moc"
