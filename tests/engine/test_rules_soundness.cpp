// Soundness of every rewrite rule (engine/passes/rules.h): per rule, several seeded
// random small shapes; the rule's left side as a graph, the rule applied once at its
// root, the right side decoded to a graph; both run on the double-precision oracle
// (ops/evaluate.h) with the same inputs and compared within 1e-9 relative. Index
// rules are also checked exactly (composed element maps equal the rewritten one).
// The same checker must catch deliberately unsound rules.
#include <QtTest/QtTest>

#include <cmath>
#include <random>

#include "graph/validate.h"
#include "passes/rules.h"
#include "passes/substitute.h"
#include "substitute_support.h"

using namespace tapestry;
using tapestry::test::GraphBuilder;

namespace {

struct Verdict {
    bool matched = false;  // the rule applied at the root
    bool sound = false;    // the outputs agree
    std::string detail;
};

// Applies `rules` (one name, perhaps several root kinds) once at the op writing `y`.
Verdict check_rule(const std::vector<Rewrite> &rules, const Graph &lhs, std::uint64_t seed, Graph *rhs_out = nullptr) {
    const OpLibrary &lib = OpLibrary::standard();
    GraphEncoding enc = encode_graph(lhs, lib);
    EGraph &eg = enc.egraph;
    const TensorId y("y");
    const ClassId root = enc.class_of.at(y);
    const ENode node = eg.eclass(root).nodes.at(0);
    std::optional<ClassId> rhs;
    for (const Rewrite &r : rules)
        if (r.root_kind == node.kind && !rhs) {
            auto results = r.apply(eg, root, node);
            if (!results.empty()) rhs = results.front();
        }
    Verdict v;
    if (!rhs) {
        v.detail = "the rule does not match " + node.kind;
        return v;
    }
    v.matched = true;
    eg.rebuild();
    const Extraction ex = extract_greedy(eg, CostModel{});
    enc.class_of[y] = *rhs;  // decode the replacement instead of the original
    Graph rhs_graph = lhs;
    RecordingRewriter rw(rhs_graph);
    decode_graph(enc, ex, rw);
    if (rhs_out) *rhs_out = rhs_graph;
    for (const Issue &i : validate(rhs_graph, lib))
        if (i.severity == Severity::error) {
            v.detail = "the rewritten graph is invalid: " + i.message;
            return v;
        }
    auto a = evaluate_reference(lhs, test::oracle_inputs(lhs, lhs, seed), lib);
    auto b = evaluate_reference(rhs_graph, test::oracle_inputs(lhs, rhs_graph, seed), lib);
    if (!a || !b) {
        v.detail = "oracle: " + (a ? b.error() : a.error());
        return v;
    }
    const RefArray &ya = a->at(y), &yb = b->at(y);
    double scale = 1, worst = 0;
    for (double x : ya.data)
        if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < ya.data.size(); ++i) {
        const double p = ya.data[i], q = yb.data[i];
        if (std::isnan(p) && std::isnan(q)) continue;
        if (p == q) continue;  // equal infinities
        worst = std::max(worst, std::isfinite(p - q) ? std::abs(p - q) / scale : INFINITY);
    }
    v.sound = worst <= 1e-9;
    v.detail = "max relative error " + std::to_string(worst);
    return v;
}

std::vector<std::int64_t> random_perm(std::mt19937 &rng, int rank) {
    std::vector<std::int64_t> p(static_cast<size_t>(rank));
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), rng);
    return p;
}

Coord pick(std::mt19937 &rng, Coord lo, Coord hi) { return std::uniform_int_distribution<Coord>(lo, hi)(rng); }

ZPoint random_shape(std::mt19937 &rng, int rank, Coord lo = 1, Coord hi = 4) {
    std::vector<Coord> s;
    for (int i = 0; i < rank; ++i) s.push_back(pick(rng, lo, hi));
    return ZPoint(s);
}

// Shapes that are groupings of one factor list, so reshapes between them have a
// common refinement (affine projections).
std::vector<Coord> group(const std::vector<Coord> &factors, std::mt19937 &rng) {
    std::vector<Coord> out{factors.at(0)};
    for (size_t i = 1; i < factors.size(); ++i) {
        if (pick(rng, 0, 1)) out.back() *= factors[i];
        else out.push_back(factors[i]);
    }
    return out;
}

// The left side of `rule` on random shapes drawn from `seed`; the result is tensor "y".
Graph lhs_graph(const std::string &rule, std::uint64_t seed) {
    std::mt19937 rng(static_cast<unsigned>(seed * 7919 + 17));
    GraphBuilder b;
    const int variant = static_cast<int>(seed % 4);
    if (rule == "linear-split" || rule == "linear-fuse") {
        ZPoint xs = random_shape(rng, variant % 2 ? 3 : 2, 1, 4);
        const Coord in = xs[xs.rank() - 1], out = pick(rng, 1, 5);
        auto x = b.input("x", xs), w = b.input("w", {in, out}, TensorRole::parameter);
        auto bias = b.input("bias", {out}, TensorRole::parameter);
        if (rule == "linear-split") {
            if (variant < 2) b.op("y", "linear", {}, {{"x", x}, {"w", w}, {"bias", bias}}, true);
            else b.op("y", "linear", {}, {{"x", x}, {"w", w}}, true);
        } else {
            auto m = b.op("m", "matmul", {}, {{"a", x}, {"b", w}});
            if (variant < 2) b.op("y", "add", {}, {{"a", m}, {"b", bias}}, true);
            else b.op("y", "add", {}, {{"a", bias}, {"b", m}}, true);
        }
    } else if (rule == "attention-expand") {
        const Coord batch = pick(rng, 1, 2), sq = pick(rng, 1, 4), sk = pick(rng, 1, 4), h = pick(rng, 1, 3),
                    e = pick(rng, 1, 3), ev = pick(rng, 1, 3);
        auto q = b.input("q", {batch, sq, h * e}), k = b.input("k", {batch, sk, h * e}),
             v = b.input("v", {batch, sk, h * ev});
        Params p{{"heads", h}, {"causal", variant % 2 == 1}};
        if (variant == 2) p.set("scale", 0.5);
        std::vector<std::pair<std::string, TensorId>> in{{"q", q}, {"k", k}, {"v", v}};
        if (variant >= 2) in.emplace_back("mask", b.input("mask", {sq, sk}));
        b.op("y", "attention", p, in, true);
    } else if (rule == "attention-fuse") {
        // The left side is what attention-expand writes (with a mask, a causal mask or
        // an explicit scale; not both masks at once, which the rule leaves expanded).
        Graph attention = lhs_graph("attention-expand", seed % 4 == 3 ? seed + 1 : seed);
        SubstituteOptions o;
        o.rules = {"attention-expand"};
        auto expanded = substitute(attention, o);
        TAPESTRY_CHECK(expanded.has_value(), "attention-expand failed on the test graph");
        return expanded->graph;
    } else if (rule == "layernorm-expand" || rule == "rmsnorm-expand") {
        const bool rms = rule == "rmsnorm-expand";
        ZPoint xs = random_shape(rng, 2 + variant % 2, 2, 4);
        const Coord axis = variant == 3 ? -2 : -1;
        std::vector<Coord> norm;
        for (int d = xs.rank() + static_cast<int>(axis); d < xs.rank(); ++d) norm.push_back(xs[d]);
        auto x = b.input("x", xs);
        std::vector<std::pair<std::string, TensorId>> in{{"x", x}};
        if (variant != 1) in.emplace_back("gamma", b.input("gamma", ZPoint(norm), TensorRole::parameter));
        if (!rms && variant != 2) in.emplace_back("beta", b.input("beta", ZPoint(norm), TensorRole::parameter));
        b.op("y", rms ? "rmsnorm" : "layernorm", {{"axis", axis}, {"epsilon", rms ? 1e-6 : 1e-5}}, in, true);
    } else if (rule == "layernorm-fuse" || rule == "rmsnorm-fuse") {
        const bool rms = rule == "rmsnorm-fuse";
        ZPoint xs = random_shape(rng, 2 + variant % 2, 2, 4);
        auto x = b.input("x", xs);
        const std::vector<std::int64_t> axes{xs.rank() - 1};
        Params mean{{"axes", axes}, {"keepdims", true}};
        auto eps = b.scalar("eps", 1e-5);
        TensorId d = x, den;
        if (rms) {
            den = b.op("ms", "reduce_mean", mean, {{"x", b.op("sq", "mul", {}, {{"a", x}, {"b", x}})}});
        } else {
            d = b.op("d", "sub", {}, {{"a", x}, {"b", b.op("m", "reduce_mean", mean, {{"x", x}})}});
            den = b.op("var", "reduce_mean", mean, {{"x", b.op("sq", "mul", {}, {{"a", d}, {"b", d}})}});
        }
        auto s = b.op("s", "sqrt", {}, {{"x", b.op("ve", "add", {}, {{"a", den}, {"b", eps}})}});
        const bool gamma = variant != 1, beta = !rms && variant != 2;
        auto n = b.op(gamma || beta ? "n" : "y", "div", {}, {{"a", d}, {"b", s}}, !gamma && !beta);
        if (gamma) {
            auto gm = b.input("gamma", {xs[xs.rank() - 1]}, TensorRole::parameter);
            n = b.op(beta ? "ng" : "y", "mul", {}, variant == 3 ? std::vector<std::pair<std::string, TensorId>>{{"a", gm}, {"b", n}}
                                                             : std::vector<std::pair<std::string, TensorId>>{{"a", n}, {"b", gm}},
                     !beta);
        }
        if (beta) b.op("y", "add", {}, {{"a", n}, {"b", b.input("beta", {xs[xs.rank() - 1]}, TensorRole::parameter)}}, true);
    } else if (rule == "transpose-transpose") {
        const int rank = 2 + variant % 3;
        auto x = b.input("x", random_shape(rng, rank, 1, 4));
        const auto p = random_perm(rng, rank);
        std::vector<std::int64_t> q = random_perm(rng, rank);
        if (variant == 3) {  // the inverse: the pair is the identity
            for (int k = 0; k < rank; ++k) q[static_cast<size_t>(p[static_cast<size_t>(k)])] = k;
        }
        auto t = b.op("t", "transpose", {{"perm", p}}, {{"x", x}});
        b.op("y", "transpose", {{"perm", q}}, {{"x", t}}, true);
    } else if (rule == "reshape-reshape") {
        std::vector<Coord> factors;
        for (int i = 0, n = 2 + variant % 3; i < n; ++i) factors.push_back(pick(rng, 2, 3));
        const auto s0 = group(factors, rng), s1 = group(factors, rng);
        auto s2 = variant == 3 ? s0 : group(factors, rng);
        auto x = b.input("x", ZPoint(s0));
        auto t = b.op("t", "reshape", {{"shape", s1}}, {{"x", x}});
        b.op("y", "reshape", {{"shape", s2}}, {{"x", t}}, true);
    } else if (rule == "add-assoc" || rule == "mul-assoc" || rule == "add-comm" || rule == "mul-comm" ||
               rule == "sub-assoc") {
        const std::string kind = rule.substr(0, 3);
        ZPoint full = random_shape(rng, 2, 1, 4);
        ZPoint row{full[1]};
        auto a = b.input("a", full), bb = b.input("b", variant == 1 ? row : full), c = b.input("c", variant == 2 ? row : full);
        if (rule.ends_with("comm")) {
            b.op("y", kind, {}, {{"a", a}, {"b", bb}}, true);
        } else if (variant == 3 && rule != "sub-assoc") {  // a ∘ (b ∘ c): the other direction
            b.op("y", kind, {}, {{"a", a}, {"b", b.op("t", kind, {}, {{"a", bb}, {"b", c}})}}, true);
        } else {
            b.op("y", kind, {}, {{"a", b.op("t", kind, {}, {{"a", a}, {"b", bb}})}, {"b", c}}, true);
        }
    } else if (rule == "matmul-ksplit") {
        const Coord m = pick(rng, 1, 3), k = pick(rng, 2, 7), n = pick(rng, 1, 3);
        ZPoint as = variant % 2 ? ZPoint{pick(rng, 1, 3), m, k} : ZPoint{m, k};
        auto a = b.input("a", as), c = b.input("b", {k, n});
        b.op("y", "matmul", {}, {{"a", a}, {"b", c}}, true);
    } else if (rule == "matmul-comm") {
        const Coord n = pick(rng, 2, 4);
        auto a = b.input("a", {n, n}), c = b.input("b", {n, n});
        b.op("y", "matmul", {}, {{"a", a}, {"b", c}}, true);
    } else if (rule == "layernorm-expand-no-eps") {
        auto x = b.input("x", random_shape(rng, 2, 2, 4));
        b.op("y", "layernorm", {{"epsilon", 1e-5}}, {{"x", x}}, true);
    } else {
        TAPESTRY_CHECK(false, "lhs_graph: no left side for this rule");
    }
    return b.g;
}

// ---- deliberately unsound rules: the suite must report each ----

std::vector<Rewrite> unsound_rule(const std::string &name) {
    Rewrite r;
    r.name = name;
    if (name == "matmul-comm") {
        r.root_kind = "matmul";
        r.apply = [](EGraph &g, ClassId, const ENode &n) -> std::vector<ClassId> {
            auto y = g.add_op("matmul", {}, {{"a", *n.child("b")}, {"b", *n.child("a")}});
            return y ? std::vector<ClassId>{*y} : std::vector<ClassId>{};
        };
    } else if (name == "transpose-transpose-wrong") {
        r.root_kind = "transpose";
        r.apply = [](EGraph &g, ClassId, const ENode &n) -> std::vector<ClassId> {
            const auto q = n.params.get_ints("perm", {});
            for (const ENode &inner : g.eclass(*n.child("x")).nodes) {
                if (inner.kind != "transpose") continue;
                const auto p = inner.params.get_ints("perm", {});
                std::vector<std::int64_t> wrong;  // q∘p instead of p∘q
                for (std::int64_t k : p) wrong.push_back(q.at(static_cast<size_t>(k)));
                auto y = g.add_op("transpose", {{"perm", wrong}}, {{"x", *inner.child("x")}});
                if (y) return {*y};
            }
            return {};
        };
    } else if (name == "layernorm-expand-no-eps") {
        r.root_kind = "layernorm";
        r.apply = [](EGraph &g, ClassId, const ENode &n) -> std::vector<ClassId> {
            const ClassId x = *n.child("x");
            const std::int64_t last = g.type(x).shape.rank() - 1;
            Params mean{{"axes", std::vector<std::int64_t>{last}}, {"keepdims", true}};
            auto m = g.add_op("reduce_mean", mean, {{"x", x}});
            auto d = g.add_op("sub", {}, {{"a", x}, {"b", *m}});
            auto sq = g.add_op("mul", {}, {{"a", *d}, {"b", *d}});
            auto var = g.add_op("reduce_mean", mean, {{"x", *sq}});
            auto s = g.add_op("sqrt", {}, {{"x", *var}});  // ε forgotten
            auto y = g.add_op("div", {}, {{"a", *d}, {"b", *s}});
            return {*y};
        };
    } else if (name == "sub-assoc") {
        r.root_kind = "sub";
        r.apply = [](EGraph &g, ClassId, const ENode &n) -> std::vector<ClassId> {
            for (const ENode &inner : g.eclass(*n.child("a")).nodes) {
                if (inner.kind != "sub") continue;
                auto bc = g.add_op("sub", {}, {{"a", *inner.child("b")}, {"b", *n.child("b")}});
                auto y = g.add_op("sub", {}, {{"a", *inner.child("a")}, {"b", *bc}});
                if (bc && y) return {*y};
            }
            return {};
        };
    }
    return {r};
}

// ---- exact index checks ----

// Element map of a unit-window op from its library projections: output element → x element.
std::map<ZPoint, ZPoint> element_map(const Graph &g, const Operation &op) {
    const Tensor *x = g.find_tensor(op.inputs.at(0).selections.at(0).tensor);
    auto d = OpLibrary::standard().derive(op.kind, op.params, {PortTypes{"x", {OperandType{x->dtype, x->shape()}}}});
    TAPESTRY_CHECK(d.has_value(), "element_map: derive failed");
    const IndexProjection &px = d->signature.inputs.at(0).operands.at(0).projection;
    const IndexProjection &py = d->signature.outputs.at(0).operands.at(0).projection;
    std::map<ZPoint, ZPoint> out;
    d->signature.index_space.for_each_point([&](const ZPoint &i) {
        const ZRange rx = px.apply(i), ry = py.apply(i);
        TAPESTRY_CHECK(rx.size() == 1 && ry.size() == 1, "element_map: a projection with a window");
        out[ry.start()] = rx.start();
    });
    return out;
}

// The chain y ← t ← x composed, against the single rewritten op (or the identity).
bool exact_index_equal(const Graph &lhs, const Graph &rhs) {
    const Operation *outer = lhs.find_op(OpId("op_y")), *inner = lhs.find_op(OpId("op_t"));
    const auto m2 = element_map(lhs, *outer), m1 = element_map(lhs, *inner);
    std::map<ZPoint, ZPoint> composed;
    for (const auto &[y, t] : m2) composed[y] = m1.at(t);
    // The rewritten program: the op writing y (an identity copy when the pair cancels).
    const auto producers = rhs.producers(TensorId("y"));
    if (producers.size() != 1) return false;
    const Operation *op = rhs.find_op(producers[0]);
    if (op->input_tensors().at(0) != TensorId("x")) return false;
    const Tensor *x = rhs.find_tensor(TensorId("x")), *y = rhs.find_tensor(TensorId("y"));
    std::map<ZPoint, ZPoint> direct;
    if (op->kind == "reshape" && x->shape() == y->shape() && op->id.value.ends_with(".copy")) {
        y->range.for_each_point([&](const ZPoint &p) { direct[p] = p; });
    } else {
        direct = element_map(rhs, *op);
    }
    return composed == direct;
}

// Matrix check for transposes: P_inner · P_outer equals the rewritten P (or I).
bool transpose_matrices_compose(const Graph &lhs, const Graph &rhs) {
    auto proj = [](const Graph &g, const Operation &op) {
        const Tensor *x = g.find_tensor(op.input_tensors().at(0));
        auto d = OpLibrary::standard().derive(op.kind, op.params, {PortTypes{"x", {OperandType{x->dtype, x->shape()}}}});
        return d->signature.inputs.at(0).operands.at(0).projection.map();
    };
    const AffineMap p1 = proj(lhs, *lhs.find_op(OpId("op_t"))), p2 = proj(lhs, *lhs.find_op(OpId("op_y")));
    const int n = p1.in_rank();
    ZMatrix prod = ZMatrix::identity(n);
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
            Coord s = 0;
            for (int k = 0; k < n; ++k) s += p1.matrix().at(r, k) * p2.matrix().at(k, c);
            prod.at(r, c) = s;
        }
    const Operation *op = rhs.find_op(rhs.producers(TensorId("y")).at(0));
    if (op->kind == "reshape") return prod == ZMatrix::identity(n);  // the identity copy
    return prod == proj(rhs, *op).matrix() && proj(rhs, *op).offset() == ZPoint::zeros(n);
}

const int kShapesPerRule = 4;

}  // namespace

class TestRulesSoundness : public QObject {
    Q_OBJECT
private slots:
    void every_rule_is_listed();
    void sound_data();
    void sound();
    void index_rules_exact_data();
    void index_rules_exact();
    void unsound_rules_are_caught_data();
    void unsound_rules_are_caught();
    void unknown_rule_is_refused();
};

void TestRulesSoundness::every_rule_is_listed() {
    // Every standard rule has a row in sound_data (a rule without a proof is a defect).
    const std::set<std::string> proved{"linear-split",        "linear-fuse",     "attention-expand", "attention-fuse",
                                       "layernorm-expand",    "layernorm-fuse",  "rmsnorm-expand",
                                       "rmsnorm-fuse",        "transpose-transpose", "reshape-reshape",
                                       "add-assoc",           "mul-assoc",       "add-comm",
                                       "mul-comm",            "matmul-ksplit"};
    std::set<std::string> names;
    for (const Rewrite &r : standard_rewrites()) {
        names.insert(r.name);
        QVERIFY2(proved.count(r.name), r.name.c_str());
        QVERIFY(!r.pattern.empty() && !r.replacement.empty() && !r.cost_effect.empty());
    }
    QCOMPARE(names.size(), proved.size());
    QVERIFY(OpLibrary::standard().find("partial_matmul") && names.count("matmul-ksplit"));
}

void TestRulesSoundness::sound_data() {
    QTest::addColumn<QString>("rule");
    QTest::addColumn<int>("seed");
    for (const char *rule : {"linear-split", "linear-fuse", "attention-expand", "attention-fuse", "layernorm-expand",
                             "layernorm-fuse", "rmsnorm-expand", "rmsnorm-fuse", "transpose-transpose", "reshape-reshape", "add-assoc",
                             "mul-assoc", "add-comm", "mul-comm", "matmul-ksplit"})
        for (int s = 0; s < kShapesPerRule; ++s)
            QTest::newRow((std::string(rule) + "/" + std::to_string(s)).c_str()) << QString(rule) << s;
}

void TestRulesSoundness::sound() {
    QFETCH(QString, rule);
    QFETCH(int, seed);
    auto rules = rewrites_by_name({rule.toStdString()});
    QVERIFY(rules.has_value());
    const Graph lhs = lhs_graph(rule.toStdString(), static_cast<std::uint64_t>(seed));
    const Verdict v = check_rule(*rules, lhs, static_cast<std::uint64_t>(seed) + 1);
    QVERIFY2(v.matched, v.detail.c_str());
    QVERIFY2(v.sound, v.detail.c_str());
}

void TestRulesSoundness::index_rules_exact_data() {
    QTest::addColumn<QString>("rule");
    QTest::addColumn<int>("seed");
    for (const char *rule : {"transpose-transpose", "reshape-reshape"})
        for (int s = 0; s < kShapesPerRule; ++s)
            QTest::newRow((std::string(rule) + "/" + std::to_string(s)).c_str()) << QString(rule) << s;
}

void TestRulesSoundness::index_rules_exact() {
    QFETCH(QString, rule);
    QFETCH(int, seed);
    const Graph lhs = lhs_graph(rule.toStdString(), static_cast<std::uint64_t>(seed));
    Graph rhs;
    QVERIFY(check_rule(*rewrites_by_name({rule.toStdString()}), lhs, 1, &rhs).sound);
    QVERIFY(exact_index_equal(lhs, rhs));
    if (rule == "transpose-transpose") QVERIFY(transpose_matrices_compose(lhs, rhs));
}

void TestRulesSoundness::unsound_rules_are_caught_data() {
    QTest::addColumn<QString>("rule");
    for (const char *rule : {"matmul-comm", "transpose-transpose-wrong", "layernorm-expand-no-eps", "sub-assoc"})
        QTest::newRow(rule) << QString(rule);
}

void TestRulesSoundness::unsound_rules_are_caught() {
    // The same checker as `sound`, on seeded shapes where the rule's mistake shows
    // (the wrong transpose composition needs perms that do not commute: rank 3).
    QFETCH(QString, rule);
    const std::string name = rule.toStdString();
    const std::string shape_rule = name == "transpose-transpose-wrong" ? "transpose-transpose" : name;
    int caught = 0, tried = 0;
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
        const Graph lhs = lhs_graph(shape_rule, seed);
        const Verdict v = check_rule(unsound_rule(name), lhs, seed + 1);
        if (!v.matched) continue;
        ++tried;
        if (!v.sound) ++caught;
    }
    QVERIFY2(tried > 0, "the unsound rule never matched");
    QVERIFY2(caught > 0, ("not caught on any of " + std::to_string(tried) + " shapes").c_str());
    qInfo("%s: reported unsound on %d of %d shapes", name.c_str(), caught, tried);
}

void TestRulesSoundness::unknown_rule_is_refused() {
    auto r = rewrites_by_name({"linear-split", "matmul-commute"});
    QVERIFY(!r.has_value());
    QVERIFY2(r.error().starts_with("unknown rule 'matmul-commute' (rules: linear-split, linear-fuse,"), r.error().c_str());
}

QTEST_GUILESS_MAIN(TestRulesSoundness)
#include "test_rules_soundness.moc"
