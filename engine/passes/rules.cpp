// The standard rewrites. Each `apply` reads the matched node's operands and their
// types, checks what the pattern needs (sub-patterns are looked up among the nodes of
// the child classes), and builds the replacement through EGraph::add_op, which derives
// every new node's type: a replacement the library refuses is simply not applied.
#include "passes/rules.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "common/check.h"

namespace tapestry {

namespace {

using Inputs = std::vector<std::pair<std::string, ClassId>>;

// Adds nodes until one is refused; after that `ok` is false and results are junk.
struct Builder {
    EGraph &g;
    bool ok = true;
    ClassId op(const std::string &kind, const Params &params, const Inputs &inputs) {
        if (!ok) return 0;
        auto r = g.add_op(kind, params, inputs);
        if (!r) {
            ok = false;
            return 0;
        }
        return *r;
    }
};

std::vector<ENode> nodes_of(const EGraph &g, ClassId c, const std::string &kind) {
    std::vector<ENode> out;
    for (const ENode &n : g.eclass(c).nodes)
        if (n.kind == kind) out.push_back(n);
    return out;
}

// A one-element constant [1] of `dtype` (broadcasts against anything).
ClassId scalar(EGraph &g, DType dtype, double value) {
    auto data = std::make_shared<TensorData>(dtype, ZPoint{1});
    data->set(0, value);
    return g.add_constant(std::move(data), value);
}

std::vector<std::int64_t> ints(const ENode &n, const std::string &name) {
    return n.params.get_ints(name, {});
}

int rank_of(const EGraph &g, ClassId c) { return g.type(c).shape.rank(); }

// The tail axes [axis, rank) a normalization normalizes, or empty when axis is bad.
std::vector<std::int64_t> tail_axes(std::int64_t axis, int rank) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return {};
    std::vector<std::int64_t> axes;
    for (std::int64_t a = axis; a < rank; ++a) axes.push_back(a);
    return axes;
}

// An explicit permutation: [] reverses, negative entries count from the end.
std::vector<std::int64_t> explicit_perm(std::vector<std::int64_t> perm, int rank) {
    if (perm.empty()) {
        for (int k = rank - 1; k >= 0; --k) perm.push_back(k);
    }
    for (auto &p : perm)
        if (p < 0) p += rank;
    return perm;
}

bool is_identity(const std::vector<std::int64_t> &perm) {
    for (size_t k = 0; k < perm.size(); ++k)
        if (perm[k] != static_cast<std::int64_t>(k)) return false;
    return true;
}

ClassId must(const ClassId *c) {
    TAPESTRY_CHECK(c != nullptr, "rules: a matched node lacks a required port");
    return *c;
}

// ---- linear ----

std::vector<ClassId> linear_split(EGraph &g, ClassId, const ENode &n) {
    Builder b{g};
    ClassId mm = b.op("matmul", {}, {{"a", must(n.child("x"))}, {"b", must(n.child("w"))}});
    ClassId out = mm;
    if (const ClassId *bias = n.child("bias")) out = b.op("add", {}, {{"a", mm}, {"b", *bias}});
    if (!b.ok) return {};
    return {out};
}

std::vector<ClassId> linear_fuse(EGraph &g, ClassId root, const ENode &n) {
    std::vector<ClassId> out;
    const ClassId a = must(n.child("a")), bias = must(n.child("b"));
    for (auto [lhs, rhs] : {std::pair{a, bias}, std::pair{bias, a}}) {
        if (rank_of(g, rhs) != 1) continue;
        for (const ENode &mm : nodes_of(g, lhs, "matmul")) {
            const ClassId x = must(mm.child("a")), w = must(mm.child("b"));
            if (rank_of(g, w) != 2 || g.type(w).shape[1] != g.type(rhs).shape[0]) continue;
            Builder b{g};
            ClassId lin = b.op("linear", {}, {{"x", x}, {"w", w}, {"bias", rhs}});
            if (b.ok && g.type(lin) == g.type(root)) out.push_back(lin);
        }
    }
    return out;
}

// ---- attention ----

std::vector<ClassId> attention_expand(EGraph &g, ClassId, const ENode &n) {
    const ClassId q = must(n.child("q")), k = must(n.child("k")), v = must(n.child("v"));
    const ClassId *mask = n.child("mask");
    const OperandType qt = g.type(q), kt = g.type(k), vt = g.type(v);
    if (qt.shape.rank() != 3 || kt.shape.rank() != 3 || vt.shape.rank() != 3) return {};
    const std::int64_t heads = n.params.get_int("heads", 1);
    if (heads <= 0 || qt.shape[2] % heads != 0 || vt.shape[2] % heads != 0) return {};
    const std::int64_t batch = qt.shape[0], sq = qt.shape[1], sk = kt.shape[1];
    const std::int64_t e = qt.shape[2] / heads, ev = vt.shape[2] / heads;
    const double scale = n.params.get_float("scale", 0.0);
    // An explicit scale multiplies by a constant, which must hold it exactly in the
    // dtype; the default 1/√E divides by √E computed from the exact integer E instead.
    if (scale != 0.0) {
        TensorData probe(qt.dtype, ZPoint{1});
        probe.set(0, scale);
        if (probe.get(0) != scale) return {};
    }
    Builder b{g};
    const std::vector<std::int64_t> to_heads{0, 2, 1, 3};
    ClassId qh = b.op("transpose", {{"perm", to_heads}},
                      {{"x", b.op("reshape", {{"shape", std::vector<std::int64_t>{batch, sq, heads, e}}}, {{"x", q}})}});
    ClassId kh = b.op("transpose", {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}},
                      {{"x", b.op("reshape", {{"shape", std::vector<std::int64_t>{batch, sk, heads, e}}}, {{"x", k}})}});
    ClassId s = b.op("matmul", {}, {{"a", qh}, {"b", kh}});
    if (scale == 0.0) {
        ClassId root_e = b.op("sqrt", {}, {{"x", scalar(g, qt.dtype, static_cast<double>(e))}});
        s = b.op("div", {}, {{"a", s}, {"b", root_e}});
    } else {
        s = b.op("mul", {}, {{"a", s}, {"b", scalar(g, qt.dtype, scale)}});
    }
    if (mask) s = b.op("add", {}, {{"a", s}, {"b", *mask}});
    if (n.params.get_bool("causal", false)) {
        auto data = std::make_shared<TensorData>(qt.dtype, ZPoint{sq, sk});
        TensorData hidden(qt.dtype, ZPoint{1});  // −∞ in the dtype, copied bytewise
        hidden.set(0, -std::numeric_limits<double>::infinity());
        const size_t width = hidden.bytes.size();
        for (std::int64_t i = 0; i < sq; ++i)
            for (std::int64_t j = i + 1; j < sk; ++j)
                std::memcpy(data->bytes.data() + static_cast<size_t>(i * sk + j) * width, hidden.bytes.data(), width);
        s = b.op("add", {}, {{"a", s}, {"b", g.add_constant(std::move(data))}});
    }
    ClassId p = b.op("softmax", {{"axis", std::int64_t{-1}}}, {{"x", s}});
    ClassId vh = b.op("transpose", {{"perm", to_heads}},
                      {{"x", b.op("reshape", {{"shape", std::vector<std::int64_t>{batch, sk, heads, ev}}}, {{"x", v}})}});
    ClassId o = b.op("matmul", {}, {{"a", p}, {"b", vh}});
    ClassId y = b.op("reshape", {{"shape", std::vector<std::int64_t>{batch, sq, heads * ev}}},
                     {{"x", b.op("transpose", {{"perm", to_heads}}, {{"x", o}})}});
    if (!b.ok) return {};
    return {y};
}

// ---- layernorm / rmsnorm ----

Params mean_params(const std::vector<std::int64_t> &axes) {
    return Params{{"axes", axes}, {"keepdims", true}};
}

std::vector<ClassId> layernorm_expand(EGraph &g, ClassId, const ENode &n) {
    const ClassId x = must(n.child("x"));
    const auto axes = tail_axes(n.params.get_int("axis", -1), rank_of(g, x));
    if (axes.empty()) return {};
    Builder b{g};
    ClassId mean = b.op("reduce_mean", mean_params(axes), {{"x", x}});
    ClassId d = b.op("sub", {}, {{"a", x}, {"b", mean}});
    ClassId var = b.op("reduce_mean", mean_params(axes), {{"x", b.op("mul", {}, {{"a", d}, {"b", d}})}});
    const double eps = n.params.get_float("epsilon", 1e-5);
    ClassId root = b.op("sqrt", {}, {{"x", b.op("add", {}, {{"a", var}, {"b", scalar(g, g.type(x).dtype, eps)}})}});
    ClassId y = b.op("div", {}, {{"a", d}, {"b", root}});
    if (const ClassId *gamma = n.child("gamma")) y = b.op("mul", {}, {{"a", y}, {"b", *gamma}});
    if (const ClassId *beta = n.child("beta")) y = b.op("add", {}, {{"a", y}, {"b", *beta}});
    if (!b.ok) return {};
    return {y};
}

std::vector<ClassId> rmsnorm_expand(EGraph &g, ClassId, const ENode &n) {
    const ClassId x = must(n.child("x"));
    const auto axes = tail_axes(n.params.get_int("axis", -1), rank_of(g, x));
    if (axes.empty()) return {};
    Builder b{g};
    ClassId ms = b.op("reduce_mean", mean_params(axes), {{"x", b.op("mul", {}, {{"a", x}, {"b", x}})}});
    const double eps = n.params.get_float("epsilon", 1e-6);
    ClassId root = b.op("sqrt", {}, {{"x", b.op("add", {}, {{"a", ms}, {"b", scalar(g, g.type(x).dtype, eps)}})}});
    ClassId y = b.op("div", {}, {{"a", x}, {"b", root}});
    if (const ClassId *gamma = n.child("gamma")) y = b.op("mul", {}, {{"a", y}, {"b", *gamma}});
    if (!b.ok) return {};
    return {y};
}

// Binary children in both orders (the e-graph may hold either, via commutativity).
std::vector<std::pair<ClassId, ClassId>> both_orders(const ENode &n) {
    const ClassId a = must(n.child("a")), b = must(n.child("b"));
    if (a == b) return {{a, b}};
    return {{a, b}, {b, a}};
}

bool is_mean_over(const ENode &m, const std::vector<std::int64_t> &axes) {
    return m.params.get_bool("keepdims", true) && m.params.get_ints("axes", {}) == axes;
}

// The axis parameter that normalizes `axes` (the tail [a, rank) of a rank-r tensor).
std::int64_t axis_param(const std::vector<std::int64_t> &axes, int rank) {
    return axes.front() - rank;  // negative, as written by users: -1 for the last axis
}

struct Normalized {
    ClassId x;
    std::vector<std::int64_t> axes;
    double epsilon;
};

// Classes `c` that are d / sqrt(reduce_mean(d·d) + ε) with d = x − reduce_mean(x) (layer)
// or x / sqrt(reduce_mean(x·x) + ε) (rms), over tail axes.
std::vector<Normalized> normalized(const EGraph &g, ClassId c, bool rms) {
    std::vector<Normalized> out;
    for (const ENode &div : nodes_of(g, c, "div")) {
        const ClassId num = must(div.child("a")), den = must(div.child("b"));
        for (const ENode &sq : nodes_of(g, den, "sqrt")) {
            for (const ENode &plus : nodes_of(g, must(sq.child("x")), "add")) {
                for (auto [v, e] : both_orders(plus)) {
                    const auto eps = g.scalar_constant(e);
                    if (!eps || g.type(e).shape.product() != 1) continue;
                    for (const ENode &mean_sq : nodes_of(g, v, "reduce_mean")) {
                        for (const ENode &square : nodes_of(g, must(mean_sq.child("x")), "mul")) {
                            if (g.find(must(square.child("a"))) != g.find(must(square.child("b")))) continue;
                            if (g.find(must(square.child("a"))) != g.find(num)) continue;
                            const auto axes = mean_sq.params.get_ints("axes", {});
                            if (!is_mean_over(mean_sq, axes)) continue;
                            if (rms) {
                                if (tail_axes(axes.empty() ? 0 : axes.front(), rank_of(g, num)) != axes) continue;
                                out.push_back(Normalized{num, axes, *eps});
                                continue;
                            }
                            for (const ENode &sub : nodes_of(g, num, "sub")) {
                                const ClassId x = must(sub.child("a"));
                                if (tail_axes(axes.empty() ? 0 : axes.front(), rank_of(g, x)) != axes) continue;
                                for (const ENode &mean : nodes_of(g, must(sub.child("b")), "reduce_mean"))
                                    if (g.find(must(mean.child("x"))) == g.find(x) && is_mean_over(mean, axes))
                                        out.push_back(Normalized{x, axes, *eps});
                            }
                        }
                    }
                }
            }
        }
    }
    return out;
}

ClassId fused_norm(Builder &b, bool rms, const Normalized &m, const ClassId *gamma, const ClassId *beta) {
    Params p{{"axis", axis_param(m.axes, rank_of(b.g, m.x))}, {"epsilon", m.epsilon}};
    Inputs in{{"x", m.x}};
    if (gamma) in.emplace_back("gamma", *gamma);
    if (beta) in.emplace_back("beta", *beta);
    return b.op(rms ? "rmsnorm" : "layernorm", p, in);
}

// Roots: div (no γ), mul(·, γ), and for layernorm add(mul(·, γ), β).
std::vector<ClassId> norm_fuse(EGraph &g, ClassId root, const ENode &n, bool rms) {
    std::vector<ClassId> out;
    auto keep = [&](Builder &b, ClassId c) {
        if (b.ok && g.type(c) == g.type(root)) out.push_back(c);
    };
    auto with_gamma = [&](ClassId c, auto &&emit) {
        for (const ENode &mul : nodes_of(g, c, "mul"))
            for (auto [core, gamma] : both_orders(mul))
                for (const Normalized &m : normalized(g, core, rms)) emit(m, gamma);
    };
    if (n.kind == "div") {
        // The node itself is the core: rebuild its match from its class.
        for (const Normalized &m : normalized(g, root, rms)) {
            Builder b{g};
            keep(b, fused_norm(b, rms, m, nullptr, nullptr));
        }
    } else if (n.kind == "mul") {
        for (auto [core, gamma] : both_orders(n))
            for (const Normalized &m : normalized(g, core, rms)) {
                Builder b{g};
                keep(b, fused_norm(b, rms, m, &gamma, nullptr));
            }
    } else if (n.kind == "add" && !rms) {
        for (const auto &operands : both_orders(n)) {
            const ClassId scaled = operands.first, beta = operands.second;  // named: lambdas capture them
            with_gamma(scaled, [&](const Normalized &m, ClassId gamma) {
                Builder b{g};
                keep(b, fused_norm(b, rms, m, &gamma, &beta));
            });
            for (const Normalized &m : normalized(g, scaled, rms)) {  // β without γ
                Builder b{g};
                keep(b, fused_norm(b, rms, m, nullptr, &beta));
            }
        }
    }
    return out;
}

// ---- index rewrites ----

std::vector<ClassId> transpose_transpose(EGraph &g, ClassId root, const ENode &n) {
    const ClassId t = must(n.child("x"));
    const auto outer = explicit_perm(ints(n, "perm"), rank_of(g, t));
    if (is_identity(outer)) return {t};
    std::vector<ClassId> out;
    for (const ENode &inner : nodes_of(g, t, "transpose")) {
        const ClassId x = must(inner.child("x"));
        const auto p = explicit_perm(ints(inner, "perm"), rank_of(g, x));
        // t[i] = x[j] with j[p[k]] = i[k]; y[i] = t[l] with l[outer[k]] = i[k],
        // so y reads x at j[p[outer[k]]] = i[k]: the composed perm is p∘outer.
        std::vector<std::int64_t> composed;
        for (std::int64_t k : outer) composed.push_back(p.at(static_cast<size_t>(k)));
        if (is_identity(composed)) {
            if (g.type(x) == g.type(root)) out.push_back(x);
            continue;
        }
        Builder b{g};
        ClassId y = b.op("transpose", {{"perm", composed}}, {{"x", x}});
        if (b.ok && g.type(y) == g.type(root)) out.push_back(y);
    }
    return out;
}

std::vector<ClassId> reshape_reshape(EGraph &g, ClassId root, const ENode &n) {
    const ClassId t = must(n.child("x"));
    const ZPoint shape = g.type(root).shape;
    if (g.type(t).shape == shape) return {t};
    std::vector<ClassId> out;
    for (const ENode &inner : nodes_of(g, t, "reshape")) {
        const ClassId x = must(inner.child("x"));
        if (g.type(x).shape == shape) {
            out.push_back(x);
            continue;
        }
        Builder b{g};
        ClassId y = b.op("reshape", {{"shape", shape.to_vector()}}, {{"x", x}});
        if (b.ok && g.type(y) == g.type(root)) out.push_back(y);
    }
    return out;
}

// ---- contraction split ----

// matmul(a, b) ⇒ reduce_sum(partial_matmul(a, b, parts), axes [0]): the contraction's
// monoid split (DESIGN.md §3), with `parts` blocks of k, so sharding can split k.
std::vector<ClassId> matmul_ksplit(EGraph &g, ClassId root, const ENode &n, std::int64_t parts) {
    const ClassId a = must(n.child("a"));
    const ZPoint &as = g.type(a).shape;
    if (as.rank() < 2 || as[as.rank() - 1] < parts) return {};
    Builder b{g};
    ClassId partial = b.op("partial_matmul", {{"parts", parts}}, {{"a", a}, {"b", must(n.child("b"))}});
    ClassId y = b.op("reduce_sum", {{"axes", std::vector<std::int64_t>{0}}, {"keepdims", false}}, {{"x", partial}});
    if (!b.ok || g.type(y) != g.type(root)) return {};
    return {y};
}

// ---- elementwise algebra ----

std::vector<ClassId> commute(EGraph &g, ClassId root, const ENode &n) {
    Builder b{g};
    ClassId y = b.op(n.kind, {}, {{"a", must(n.child("b"))}, {"b", must(n.child("a"))}});
    if (!b.ok || g.type(y) != g.type(root)) return {};
    return {y};
}

std::vector<ClassId> associate(EGraph &g, ClassId root, const ENode &n) {
    std::vector<ClassId> out;
    const ClassId lhs = must(n.child("a")), rhs = must(n.child("b"));
    // (a ∘ b) ∘ c ⇒ a ∘ (b ∘ c)
    for (const ENode &inner : nodes_of(g, lhs, n.kind)) {
        Builder b{g};
        ClassId bc = b.op(n.kind, {}, {{"a", must(inner.child("b"))}, {"b", rhs}});
        ClassId y = b.op(n.kind, {}, {{"a", must(inner.child("a"))}, {"b", bc}});
        if (b.ok && g.type(y) == g.type(root)) out.push_back(y);
    }
    // a ∘ (b ∘ c) ⇒ (a ∘ b) ∘ c
    for (const ENode &inner : nodes_of(g, rhs, n.kind)) {
        Builder b{g};
        ClassId ab = b.op(n.kind, {}, {{"a", lhs}, {"b", must(inner.child("a"))}});
        ClassId y = b.op(n.kind, {}, {{"a", ab}, {"b", must(inner.child("b"))}});
        if (b.ok && g.type(y) == g.type(root)) out.push_back(y);
    }
    return out;
}

// The fused inverse of attention-expand:
//   reshape(transpose(matmul(softmax(S), heads(v)), [0,2,1,3]), [B, Sq, H·Ev])
//   S = matmul(heads(q), heads(k)ᵀ) / √E  (or · s)  [+ m]
// ⇒ attention(q, k, v, mask = m, heads = H, scale = 0 (1/√E) or s, causal = false).
// A causal-mask constant the expansion added is an additive mask like any other, so
// it folds in as `mask` (attention without `causal` plus that mask computes the same
// softmax). Two masks (a user mask and a causal one) are left expanded.
std::vector<ClassId> attention_fuse(EGraph &g, ClassId root, const ENode &n) {
    std::vector<ClassId> out;
    const OperandType yt = g.type(root);
    if (yt.shape.rank() != 3) return out;
    const std::vector<std::int64_t> to_heads{0, 2, 1, 3};
    // heads(x) = transpose(reshape(x, [B, S, H, D]), perm): each (x, its shape) found.
    auto heads_of = [&](ClassId c, const std::vector<std::int64_t> &perm) {
        std::vector<std::pair<ClassId, std::vector<std::int64_t>>> found;
        for (const ENode &t : nodes_of(g, c, "transpose")) {
            if (explicit_perm(ints(t, "perm"), 4) != perm) continue;
            for (const ENode &r : nodes_of(g, must(t.child("x")), "reshape")) {
                const ClassId x = must(r.child("x"));
                const ZPoint &xs = g.type(x).shape;
                const ZPoint &rs = g.type(must(t.child("x"))).shape;
                if (xs.rank() == 3 && rs.rank() == 4 && rs[0] == xs[0] && rs[1] == xs[1] && rs[2] * rs[3] == xs[2])
                    found.push_back({x, {rs[0], rs[1], rs[2], rs[3]}});
            }
        }
        return found;
    };
    for (const ENode &t_out : nodes_of(g, must(n.child("x")), "transpose")) {
        if (explicit_perm(ints(t_out, "perm"), 4) != to_heads) continue;
        for (const ENode &pv : nodes_of(g, must(t_out.child("x")), "matmul")) {
            const ClassId probs = must(pv.child("a"));
            for (const auto &[v, vs] : heads_of(must(pv.child("b")), to_heads)) {
                const std::int64_t batch = vs[0], sk = vs[1], heads = vs[2], ev = vs[3];
                for (const ENode &sm : nodes_of(g, probs, "softmax")) {
                    const std::int64_t axis = sm.params.get_int("axis", -1);
                    if (axis != -1 && axis != 3) continue;
                    const ClassId scores = must(sm.child("x"));
                    // [+ mask]: (scaled scores, mask or none)
                    std::vector<std::pair<ClassId, std::optional<ClassId>>> cores{{scores, std::nullopt}};
                    for (const ENode &plus : nodes_of(g, scores, "add"))
                        for (auto [a, m] : both_orders(plus)) {
                            const ZPoint &ms = g.type(m).shape;
                            if (ms.rank() == 2) cores.push_back({a, m});
                        }
                    for (const auto &[scaled, mask] : cores) {
                        // / √E with E the exact head width, or · s.
                        struct Unscaled {
                            ClassId scores;
                            std::optional<double> root_of;  // divided by √root_of (the default scale)
                            double scale = 0;               // else multiplied by this
                        };
                        std::vector<Unscaled> unscaled;
                        for (const ENode &dv : nodes_of(g, scaled, "div"))
                            for (const ENode &sq : nodes_of(g, must(dv.child("b")), "sqrt"))
                                if (auto e = g.scalar_constant(must(sq.child("x"))))
                                    unscaled.push_back({must(dv.child("a")), *e, 0.0});
                        for (const ENode &ml : nodes_of(g, scaled, "mul"))
                            for (auto [a, c] : both_orders(ml))
                                if (auto f = g.scalar_constant(c); f && *f != 0.0)
                                    unscaled.push_back({a, std::nullopt, *f});
                        for (const Unscaled &u : unscaled)
                            for (const ENode &mm : nodes_of(g, u.scores, "matmul"))
                                for (const auto &[q, qs] : heads_of(must(mm.child("a")), to_heads))
                                    for (const auto &[k, ks] : heads_of(must(mm.child("b")), {0, 2, 3, 1})) {
                                        const std::int64_t e = qs[3];
                                        if (qs[0] != batch || ks[0] != batch || qs[2] != heads || ks[2] != heads ||
                                            ks[3] != e || ks[1] != sk)
                                            continue;
                                        if (u.root_of && *u.root_of != static_cast<double>(e)) continue;
                                        if (yt.shape[0] != batch || yt.shape[1] != qs[1] || yt.shape[2] != heads * ev)
                                            continue;
                                        if (mask && (g.type(*mask).shape[0] != qs[1] || g.type(*mask).shape[1] != sk))
                                            continue;
                                        Params params{{"heads", heads}};
                                        if (!u.root_of) params.set("scale", u.scale);
                                        std::vector<std::pair<std::string, ClassId>> ins{{"q", q}, {"k", k}, {"v", v}};
                                        if (mask) ins.push_back({"mask", *mask});
                                        Builder b{g};
                                        ClassId fused = b.op("attention", params, ins);
                                        if (b.ok && g.type(fused) == yt) out.push_back(fused);
                                    }
                    }
                }
            }
        }
    }
    return out;
}

Rewrite rule(std::string name, std::string pattern, std::string replacement, std::string cost, Rewrite::Direction d,
             std::string root, std::function<std::vector<ClassId>(EGraph &, ClassId, const ENode &)> apply) {
    return Rewrite{std::move(name), std::move(pattern), std::move(replacement), std::move(cost), d, std::move(root),
                   std::move(apply)};
}

}  // namespace

std::vector<Rewrite> standard_rewrites(const OpLibrary &library) {
    using D = Rewrite::Direction;
    std::vector<Rewrite> r;
    r.push_back(rule("linear-split", "linear(x, w, b)", "add(matmul(x, w), b)",
                     "same FLOPs; one more op and the matmul's output written and read once more", D::expand,
                     "linear", linear_split));
    r.push_back(rule("linear-fuse", "add(matmul(x, w), b)", "linear(x, w, b)",
                     "saves the matmul's intermediate and one op (bias as an epilogue)", D::fuse, "add", linear_fuse));
    r.push_back(rule("attention-expand", "attention(q, k, v, mask?)",
                     "reshape(transpose(matmul(softmax(matmul(heads(q), heads(k)ᵀ) / √E [· s] + mask + causal), heads(v))))",
                     "same order of FLOPs; materializes the [B,H,Sq,Sk] scores and probabilities", D::expand,
                     "attention", attention_expand));
    r.push_back(rule("attention-fuse",
                     "reshape(transpose(matmul(softmax(matmul(heads(q), heads(k)ᵀ) / √E [· s] [+ m]), heads(v))))",
                     "attention(q, k, v, mask = m)",
                     "removes the [B,H,Sq,Sk] scores and probabilities and eight reshapes/transposes", D::fuse,
                     "reshape", attention_fuse));
    r.push_back(rule("layernorm-expand", "layernorm(x, γ, β)",
                     "add(mul(div(sub(x, m), sqrt(add(reduce_mean(mul(d, d)), ε))), γ), β), m = reduce_mean(x)",
                     "≈2× the FLOPs of the fused kernel and five full-size intermediates", D::expand, "layernorm",
                     layernorm_expand));
    for (const char *root : {"add", "mul", "div"})
        r.push_back(rule("layernorm-fuse", "add(mul(div(sub(x, m), sqrt(add(reduce_mean(mul(d, d)), ε))), γ), β)",
                         "layernorm(x, γ, β)", "removes the intermediates of the expansion", D::fuse, root,
                         [](EGraph &g, ClassId c, const ENode &n) { return norm_fuse(g, c, n, false); }));
    r.push_back(rule("rmsnorm-expand", "rmsnorm(x, γ)", "mul(div(x, sqrt(add(reduce_mean(mul(x, x)), ε))), γ)",
                     "≈2× the FLOPs of the fused kernel and three full-size intermediates", D::expand, "rmsnorm",
                     rmsnorm_expand));
    for (const char *root : {"mul", "div"})
        r.push_back(rule("rmsnorm-fuse", "mul(div(x, sqrt(add(reduce_mean(mul(x, x)), ε))), γ)", "rmsnorm(x, γ)",
                         "removes the intermediates of the expansion", D::fuse, root,
                         [](EGraph &g, ClassId c, const ENode &n) { return norm_fuse(g, c, n, true); }));
    r.push_back(rule("transpose-transpose", "transpose(transpose(x, p), q)", "transpose(x, p∘q) (identity: x)",
                     "removes a copy of the tensor", D::neutral, "transpose", transpose_transpose));
    r.push_back(rule("reshape-reshape", "reshape(reshape(x, s), t)", "reshape(x, t) (x's own shape: x)",
                     "removes a copy of the tensor", D::neutral, "reshape", reshape_reshape));
    for (const char *kind : {"add", "mul"}) {
        const std::string k = kind;
        r.push_back(rule(k + "-assoc", k + "(" + k + "(a, b), c)", k + "(a, " + k + "(b, c))",
                         "same FLOPs; the intermediate may change size under broadcasting", D::neutral, k, associate));
        r.push_back(rule(k + "-comm", k + "(a, b)", k + "(b, a)", "none", D::neutral, k, commute));
    }
    // matmul ⇒ partial_matmul + reduce_sum needs the partial_matmul kind: left out of a
    // library without it.
    if (library.find("partial_matmul"))
        r.push_back(rule("matmul-ksplit", "matmul(a, b)", "reduce_sum(partial_matmul(a, b, parts=2), axes=[0])",
                         "same multiply-adds plus m·n adds; 2× the output bytes in partial products; k becomes "
                         "an index dim that sharding can split",
                         D::expand, "matmul",
                         [](EGraph &g, ClassId c, const ENode &n) { return matmul_ksplit(g, c, n, 2); }));
    return r;
}

std::vector<std::string> default_rewrite_names() {
    return {"attention-expand", "layernorm-expand", "rmsnorm-expand", "transpose-transpose", "reshape-reshape"};
}

Expected<std::vector<Rewrite>, std::string> rewrites_by_name(const std::vector<std::string> &names,
                                                             const OpLibrary &library) {
    const std::vector<Rewrite> all = standard_rewrites(library);
    std::vector<Rewrite> out;
    for (const std::string &name : names) {
        bool found = false;
        for (const Rewrite &r : all)
            if (r.name == name) {
                out.push_back(r);
                found = true;
            }
        if (!found) {
            std::vector<std::string> known;
            for (const Rewrite &r : all)
                if (std::find(known.begin(), known.end(), r.name) == known.end()) known.push_back(r.name);
            std::string list;
            for (const std::string &k : known) list += (list.empty() ? "" : ", ") + k;
            return unexpected("unknown rule '" + name + "' (rules: " + list + ")");
        }
    }
    return out;
}

}  // namespace tapestry
