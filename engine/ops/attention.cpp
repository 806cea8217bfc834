// Multi-head scaled dot-product attention (docs/ops.md): a composite block op,
// y = softmax(q·kᵀ·scale + mask) · v per batch and head, which the substitution
// pass expands into matmul, scale, softmax, matmul.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "ops/library.h"
#include "ops/op_util.h"
#include "ops/ref_product.h"

namespace tapestry {

namespace {

using namespace op_util;

struct AttentionDims {
    Coord b = 0, sq = 0, sk = 0, heads = 1, e = 1, ev = 1;
};

// The scale actually used: the parameter, or 1/√E where it is 0 (the default).
double effective_scale(const Params &params, Coord e) {
    const double s = params.get_float("scale", 0.0);
    return s != 0.0 ? s : 1.0 / std::sqrt(static_cast<double>(e));
}

// Turns a row of dot products q·k_j into softmax weights, in place: score =
// dot·scale (+ mask_j), −∞ for a key the causal mask hides (j > s), then
// exp(score − max) / Σ. Shared by the naive loop and the fast path, so both do
// the same operations in the same order.
void softmax_weights(std::span<double> row, Coord s, const double *mask, double scale, bool causal) {
    const double inf = std::numeric_limits<double>::infinity();
    double mx = -inf;
    for (size_t j = 0; j < row.size(); ++j) {
        double score = row[j] * scale;
        if (mask) score += mask[j];
        if (causal && static_cast<Coord>(j) > s) score = -inf;
        row[j] = score;
        mx = std::max(mx, score);
    }
    // A row with every key hidden has no softmax: 0/0 = NaN, as in the frameworks.
    double sum = 0;
    for (double &x : row) sum += x = std::exp(x - mx);
    for (double &x : row) x /= sum;
}

// Score rows held at once by the fast path: query rows are taken in blocks of at
// most this many scores (2 MiB).
constexpr Coord kScoreElements = Coord{1} << 18;

// The fast path of attention (RefContext::fast): per batch and head of the index
// range, blocks of query rows as two blocked products — the scores q·kᵀ, then
// the weights times v for the range's columns — with softmax_weights between.
void attention_fast(const RefContext &ctx, Coord heads, bool causal) {
    const ZPoint &qs = ctx.input_shape(0), &vs = ctx.input_shape(2);
    const Coord e_dim = qs[2] / heads, ev_dim = vs[2] / heads, sk = vs[1];
    const double scale = effective_scale(ctx.params, e_dim);
    const ZRange &range = ctx.index_range;
    const Coord e0 = range.start()[3], columns = range.extent(3);
    const Coord block = std::max<Coord>(1, kScoreElements / sk);
    std::vector<double> scores;
    for_each_block(range, 2, [&](const ZPoint &corner) {
        const Coord b = corner[0], h = corner[1];
        const double *q = ctx.input(0).data.data() + b * qs[1] * qs[2] + h * e_dim;
        const double *k = ctx.input(1).data.data() + b * sk * qs[2] + h * e_dim;
        const double *v = ctx.input(2).data.data() + b * sk * vs[2] + h * ev_dim + e0;
        double *y = ctx.output(0).data.data() + b * qs[1] * vs[2] + h * ev_dim + e0;
        for (Coord s0 = range.start()[2]; s0 < range.end()[2]; s0 += block) {
            const Coord rows = std::min(block, range.end()[2] - s0);
            scores.assign(static_cast<size_t>(rows * sk), 0.0);
            accumulate_product(rows, sk, e_dim, {q + s0 * qs[2], qs[2], 1}, {k, 1, qs[2]}, {scores.data(), sk, 1});
            for (Coord r = 0; r < rows; ++r) {
                const double *mask = ctx.has_input(3) ? ctx.input(3).data.data() + (s0 + r) * sk : nullptr;
                softmax_weights(std::span(scores).subspan(static_cast<size_t>(r * sk), static_cast<size_t>(sk)), s0 + r,
                                mask, scale, causal);
                std::fill_n(y + (s0 + r) * vs[2], columns, 0.0);
            }
            accumulate_product(rows, columns, sk, {scores.data(), sk, 1}, {v, vs[2], 1}, {y + s0 * vs[2], vs[2], 1});
        }
    });
}

class AttentionOp final : public OpDef {
public:
    std::string_view kind() const override { return "attention"; }
    std::string_view category() const override { return "attention"; }
    std::string_view summary() const override { return "Multi-head attention: softmax(q·kᵀ·scale + mask)·v per head"; }
    std::vector<PortSpec> input_ports() const override {
        return {{"q", "queries [B, Sq, H·E]"},
                {"k", "keys [B, Sk, H·E]"},
                {"v", "values [B, Sk, H·Ev]"},
                {"mask", "additive mask [Sq, Sk] (−inf hides a key)", true}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "[B, Sq, H·Ev], head h in columns h·Ev…"}}; }
    std::vector<ParamSpec> params() const override {
        return {required_param("heads", ParamKind::integer, "number of heads H; divides the feature dims"),
                float_param("scale", 0.0, "score scale; 0 (the default) means 1/√E"),
                bool_param("causal", false,
                           "hide keys after the query: query s sees keys j ≤ s (top-left aligned, as PyTorch)")};
    }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &q = *find_operand(inputs, "q");
        const OperandType &k = *find_operand(inputs, "k");
        const OperandType &v = *find_operand(inputs, "v");
        const OperandType *mask = find_operand(inputs, "mask");
        if (auto e = require_float("attention", "q", q)) return unexpected(*e);
        for (const auto &[name, t] : {std::pair<const char *, const OperandType *>{"k", &k}, {"v", &v}, {"mask", mask}})
            if (t)
                if (auto e = require_same_dtype("attention", name, *t, "q", q.dtype)) return unexpected(*e);
        for (const auto &[name, t] : {std::pair<const char *, const OperandType *>{"q", &q}, {"k", &k}, {"v", &v}})
            if (t->shape.rank() != 3)
                return unexpected(derivation_error("rank-mismatch", input_field(name),
                                                   std::string("attention: ") + name +
                                                       " must have rank 3 [B, S, H·E], got " + shape_string(t->shape)));
        const Coord heads = params.get_int("heads", 1);
        if (heads < 1)
            return unexpected(derivation_error("bad-param", param_field("heads"),
                                               "attention: heads must be at least 1, got " + std::to_string(heads)));
        AttentionDims dm{q.shape[0], q.shape[1], k.shape[1], heads, 0, 0};
        if (q.shape[2] % heads != 0 || q.shape[2] == 0)
            return unexpected(derivation_error("bad-param", param_field("heads"),
                                               "attention: heads " + std::to_string(heads) + " does not divide the " +
                                                   std::to_string(q.shape[2]) + " features of q into non-empty heads"));
        dm.e = q.shape[2] / heads;
        if (k.shape[0] != dm.b || k.shape[2] != q.shape[2])
            return unexpected(derivation_error("shape-mismatch", input_field("k"),
                                               "attention: k " + shape_string(k.shape) + " must be [" +
                                                   std::to_string(dm.b) + ", Sk, " + std::to_string(q.shape[2]) +
                                                   "] to match q " + shape_string(q.shape)));
        if (dm.sk < 1)
            return unexpected(derivation_error("shape-mismatch", input_field("k"),
                                               "attention: k " + shape_string(k.shape) + " has no key positions"));
        if (v.shape[0] != dm.b || v.shape[1] != dm.sk)
            return unexpected(derivation_error("shape-mismatch", input_field("v"),
                                               "attention: v " + shape_string(v.shape) + " must be [" +
                                                   std::to_string(dm.b) + ", " + std::to_string(dm.sk) +
                                                   ", H·Ev] to match k " + shape_string(k.shape)));
        if (v.shape[2] % heads != 0 || v.shape[2] == 0)
            return unexpected(derivation_error("shape-mismatch", input_field("v"),
                                               "attention: heads " + std::to_string(heads) + " does not divide the " +
                                                   std::to_string(v.shape[2]) + " features of v into non-empty heads"));
        dm.ev = v.shape[2] / heads;
        if (mask && mask->shape != ZPoint{dm.sq, dm.sk})
            return unexpected(derivation_error(mask->shape.rank() == 2 ? "shape-mismatch" : "rank-mismatch",
                                               input_field("mask"),
                                               "attention: mask must be [Sq, Sk] = [" + std::to_string(dm.sq) + ", " +
                                                   std::to_string(dm.sk) + "], got " + shape_string(mask->shape)));

        // Index [B, H, Sq, Ev]; y[b, s, h·Ev + e].
        ProjectionBuilder pq(4), pk(4), pv(4), py(4);
        pq.follow(0).follow(2).scaled(1, dm.e, 0, dm.e);
        pk.follow(0).fixed(dm.sk).scaled(1, dm.e, 0, dm.e);
        pv.follow(0).fixed(dm.sk).row({0, dm.ev, 0, 1});
        py.follow(0).follow(2).row({0, dm.ev, 0, 1});
        std::vector<PortProjections> ins{port_projection("q", pq.build()), port_projection("k", pk.build()),
                                         port_projection("v", pv.build())};
        if (mask) ins.push_back(port_projection("mask", ProjectionBuilder(4).follow(2).fixed(dm.sk).build()));
        const ZPoint y_shape{dm.b, dm.sq, v.shape[2]};
        return single_output(q.dtype, y_shape, ZRange::of_shape(ZPoint{dm.b, heads, dm.sq, dm.ev}), std::move(ins),
                             py.build());
    }

    // The score row of one (b, h, s) is shared by its Ev output points, so its
    // cost is spread over them: per row Sk·(2E dot product + 1 scale [+ 1 mask]
    // + 5 softmax: max, subtract, exp, sum, divide), and per point 2·Sk for its
    // column of p·v. Per point: 2·Sk + Sk·(2E + 6 [+ 1]) / Ev. (A kernel whose
    // shard splits Ev recomputes the scores; that is the shard's choice.)
    double flops_per_point(const Params &, const Derivation &d) const override {
        const OperandProjection *q = d.signature.input("q", 0);
        const OperandProjection *k = d.signature.input("k", 0);
        const OperandProjection *v = d.signature.input("v", 0);
        if (!q || !k || !v) return 0;
        const double e = static_cast<double>(q->projection.window()[2]);
        const double sk = static_cast<double>(k->projection.window()[1]);
        const double ev = static_cast<double>(v->projection.map().matrix().at(2, 1));
        const double per_score = 2 * e + 6 + (d.signature.input("mask", 0) ? 1 : 0);
        return 2 * sk + sk * per_score / ev;
    }
    bool composite() const override { return true; }
    // With several heads, v is read (and y written) through the row [0 Ev 0 1]:
    // a sub-range that splits e across more than one head leaves holes.
    ReadPattern read_pattern(const Params &params) const override {
        return params.get_int("heads", 1) > 1 ? ReadPattern::strided : ReadPattern::dense;
    }

    void reference(const RefContext &ctx) const override {
        const ZPoint &qs = ctx.input_shape(0), &ks = ctx.input_shape(1), &vs = ctx.input_shape(2);
        const Coord heads = ctx.params.get_int("heads", 1);
        const Coord e_dim = qs[2] / heads, ev_dim = vs[2] / heads, sk = ks[1];
        const double scale = effective_scale(ctx.params, e_dim);
        const bool causal = ctx.params.get_bool("causal", false);
        const bool has_mask = ctx.has_input(3);
        if (ctx.fast()) return attention_fast(ctx, heads, causal);

        // Softmax weights of the current (b, h, s); recomputed when it changes
        // (the last index dim e varies fastest, so once per row of points).
        std::vector<double> p(static_cast<size_t>(sk)), mask(has_mask ? static_cast<size_t>(sk) : 0);
        ZPoint row{-1, -1, -1};
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            const Coord b = i[0], h = i[1], s = i[2], e = i[3];
            if (ZPoint{b, h, s} != row) {
                row = ZPoint{b, h, s};
                for (Coord j = 0; j < sk; ++j) {
                    double dot = 0;
                    for (Coord c = 0; c < e_dim; ++c)
                        dot += ctx.read(0, ZPoint{b, s, h * e_dim + c}) * ctx.read(1, ZPoint{b, j, h * e_dim + c});
                    p[static_cast<size_t>(j)] = dot;
                    if (has_mask) mask[static_cast<size_t>(j)] = ctx.read(3, ZPoint{s, j});
                }
                softmax_weights(p, s, has_mask ? mask.data() : nullptr, scale, causal);
            }
            double acc = 0;
            for (Coord j = 0; j < sk; ++j) acc += p[static_cast<size_t>(j)] * ctx.read(2, ZPoint{b, j, h * ev_dim + e});
            ctx.write(0, ZPoint{b, s, h * ev_dim + e}, acc);
        });
    }
};

}  // namespace

void register_attention_ops(OpLibrary &lib) {
    lib.add(std::make_unique<AttentionOp>());
}

}  // namespace tapestry
