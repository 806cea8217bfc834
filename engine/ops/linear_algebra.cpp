// Linear algebra: batched matmul with broadcast batch dims, and linear
// (x·W + bias). Both contract one dimension that is not in the index space: it is
// a window of the projections, and its monoid is `sum` (DESIGN.md §3).
// partial_matmul is a matmul whose contraction is split into blocks, the block an
// index dim: the first half of the monoid split (passes/monoid_split.h).
#include <algorithm>
#include <memory>

#include "ops/library.h"
#include "ops/op_util.h"
#include "ops/ref_product.h"

namespace tapestry {
namespace {

using namespace op_util;

// The fast path of the three contractions (RefContext::fast): y[i] = Σ_k a·b
// over the index range as one blocked product per point of the dims before the
// last two, which are its rows (absent in a rank-1 space: one row) and columns.
// Input ports 0 and 1 are a and b, contracted along their tensor dims `ka` and
// `kb`; depth_at(corner) is the number of k summed by that block's points,
// starting where the projections put them.
template <typename Depth>
void contract_fast(const RefContext &ctx, int ka, int kb, Depth &&depth_at) {
    const IndexProjection &pa = ctx.derivation.signature.inputs.at(0).operands.at(0).projection;
    const IndexProjection &pb = ctx.derivation.signature.inputs.at(1).operands.at(0).projection;
    const ZRange &range = ctx.index_range;
    const int m_dim = range.rank() - 2, n_dim = range.rank() - 1;
    const FlatOffset fa(pa, ctx.input_shape(0)), fb(pb, ctx.input_shape(1));
    const FlatOffset fy(output_projection(ctx.derivation), ctx.output(0).range.end());
    const Coord a_k = row_major_strides(ctx.input_shape(0))[static_cast<size_t>(ka)];
    const Coord b_k = row_major_strides(ctx.input_shape(1))[static_cast<size_t>(kb)];
    const Coord rows = m_dim >= 0 ? range.extent(m_dim) : 1, cols = range.extent(n_dim);
    for_each_block(range, 2, [&](const ZPoint &corner) {
        const MatrixView y{ctx.output(0).data.data() + fy.at(corner), fy.step(m_dim), fy.step(n_dim)};
        for (Coord r = 0; r < rows; ++r)
            for (Coord c = 0; c < cols; ++c) y.data[r * y.row_stride + c * y.col_stride] = 0.0;
        accumulate_product(rows, cols, depth_at(corner),
                           {ctx.input(0).data.data() + fa.at(corner), fa.step(m_dim), a_k},
                           {ctx.input(1).data.data() + fb.at(corner), b_k, fb.step(n_dim)}, y);
    });
}

class MatmulOp : public OpDef {
public:
    std::string_view kind() const override { return "matmul"; }
    std::string_view category() const override { return "linear algebra"; }
    std::string_view summary() const override { return "batched matrix product y[…, m, n] = Σ_k a[…, m, k]·b[…, k, n]"; }
    std::vector<PortSpec> input_ports() const override {
        return {{"a", "[*batch_a, m, k]", false, false}, {"b", "[*batch_b, k, n]", false, false}};
    }
    std::vector<PortSpec> output_ports() const override {
        return {{"y", "[*broadcast(batch_a, batch_b), m, n]", false, false}};
    }
    std::vector<ParamSpec> params() const override { return {}; }

    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &inputs) const override {
        const OperandType &a = *find_operand(inputs, "a");
        const OperandType &b = *find_operand(inputs, "b");
        for (const auto &[port, t] : {std::pair<const char *, const OperandType *>{"a", &a}, {"b", &b}})
            if (t->shape.rank() < 2)
                return unexpected(derivation_error(
                    "rank-mismatch", input_field(port),
                    std::string("matmul: ") + port + " must have rank at least 2, got rank " +
                        std::to_string(t->shape.rank()) + " " + shape_string(t->shape) +
                        " (a 1-D operand is not promoted; reshape it to a matrix)"));
        if (auto e = require_float("matmul", "a", a)) return unexpected(*e);
        if (auto e = require_same_dtype("matmul", "b", b, "a", a.dtype)) return unexpected(*e);

        const int ra = a.shape.rank(), rb = b.shape.rank();
        const Coord m = a.shape[ra - 2], k = a.shape[ra - 1], kb = b.shape[rb - 2], n = b.shape[rb - 1];
        if (kb != k)
            return unexpected(derivation_error("shape-mismatch", input_field("b"),
                                               "matmul: b has " + std::to_string(kb) + " rows but a has " +
                                                   std::to_string(k) + " columns"));
        const ZPoint batch_a(std::vector<Coord>(a.shape.coords().begin(), a.shape.coords().end() - 2));
        const ZPoint batch_b(std::vector<Coord>(b.shape.coords().begin(), b.shape.coords().end() - 2));
        std::optional<ZPoint> batch = broadcast_shapes(batch_a, batch_b);
        if (!batch)
            return unexpected(derivation_error("shape-mismatch", input_field("b"),
                                               "matmul: batch dims " + shape_string(batch_b) + " of b do not broadcast with " +
                                                   shape_string(batch_a) + " of a"));
        const int nb = batch->rank();
        std::vector<Coord> out = batch->to_vector();
        out.push_back(m);
        out.push_back(n);
        const ZPoint y(out);

        auto batch_rows = [&](ProjectionBuilder &builder, const ZPoint &own) {
            const IndexProjection p = broadcast_projection(own, *batch);
            for (int r = 0; r < own.rank(); ++r) {
                std::vector<Coord> row = p.map().matrix().row(r);
                row.resize(static_cast<size_t>(nb + 2), 0);
                builder.row(row);
            }
        };
        ProjectionBuilder pa(nb + 2), pb(nb + 2);
        batch_rows(pa, batch_a);
        pa.follow(nb).fixed(k);
        batch_rows(pb, batch_b);
        pb.fixed(k).follow(nb + 1);
        return single_output(a.dtype, y, ZRange::of_shape(y),
                             {port_projection("a", pa.build()), port_projection("b", pb.build())});
    }

    // One multiply-add per k.
    double flops_per_point(const Params &, const Derivation &d) const override {
        const IndexProjection &pa = input_projection(d, "a");
        return 2.0 * static_cast<double>(pa.window()[pa.tensor_rank() - 1]);
    }
    std::optional<ReductionMonoid> monoid(const Params &) const override { return sum_monoid(); }

    void reference(const RefContext &ctx) const override {
        const IndexProjection &pa = input_projection(ctx.derivation, "a");
        const IndexProjection &pb = input_projection(ctx.derivation, "b");
        const IndexProjection &py = output_projection(ctx.derivation);
        const int ka = pa.tensor_rank() - 1, kb = pb.tensor_rank() - 2;
        const Coord k_extent = pa.window()[ka];
        if (ctx.fast()) return contract_fast(ctx, ka, kb, [&](const ZPoint &) { return k_extent; });
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            ZPoint ea = pa.map().apply(i), eb = pb.map().apply(i);
            double sum = 0;
            for (Coord k = 0; k < k_extent; ++k) {
                sum += ctx.read(0, ea) * ctx.read(1, eb);
                ++ea[ka];
                ++eb[kb];
            }
            ctx.write(0, py.map().apply(i), sum);
        });
    }
};

class LinearOp : public OpDef {
public:
    std::string_view kind() const override { return "linear"; }
    std::string_view category() const override { return "linear algebra"; }
    std::string_view summary() const override { return "fully connected layer y[…, o] = Σ_f x[…, f]·w[f, o] + bias[o]"; }
    std::vector<PortSpec> input_ports() const override {
        return {{"x", "[*batch, in]", false, false},
                {"w", "[in, out]", false, false},
                {"bias", "[out], optional", true, false}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "[*batch, out]", false, false}}; }
    std::vector<ParamSpec> params() const override { return {}; }

    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        const OperandType &w = *find_operand(inputs, "w");
        const OperandType *bias = find_operand(inputs, "bias");
        if (auto e = require_min_rank("linear", "x", x, 1)) return unexpected(*e);
        if (w.shape.rank() != 2)
            return unexpected(derivation_error("rank-mismatch", input_field("w"),
                                               "linear: w must have rank 2 [in, out], got rank " +
                                                   std::to_string(w.shape.rank()) + " " + shape_string(w.shape)));
        if (bias && bias->shape.rank() != 1)
            return unexpected(derivation_error("rank-mismatch", input_field("bias"),
                                               "linear: bias must have rank 1 [out], got rank " +
                                                   std::to_string(bias->shape.rank()) + " " +
                                                   shape_string(bias->shape)));
        if (auto e = require_float("linear", "x", x)) return unexpected(*e);
        if (auto e = require_same_dtype("linear", "w", w, "x", x.dtype)) return unexpected(*e);
        if (bias)
            if (auto e = require_same_dtype("linear", "bias", *bias, "x", x.dtype)) return unexpected(*e);

        const int nb = x.shape.rank() - 1;
        const Coord in = x.shape[nb], out = w.shape[1];
        if (w.shape[0] != in)
            return unexpected(derivation_error("shape-mismatch", input_field("w"),
                                               "linear: w has " + std::to_string(w.shape[0]) + " rows but x has " +
                                                   std::to_string(in) + " features"));
        if (bias && bias->shape[0] != out)
            return unexpected(derivation_error("shape-mismatch", input_field("bias"),
                                               "linear: bias has " + std::to_string(bias->shape[0]) +
                                                   " elements but w has " + std::to_string(out) + " columns"));
        std::vector<Coord> ys(x.shape.coords().begin(), x.shape.coords().end() - 1);
        ys.push_back(out);
        const ZPoint y(ys);

        ProjectionBuilder px(nb + 1), pw(nb + 1);
        for (int d = 0; d < nb; ++d) px.follow(d);
        px.fixed(in);
        pw.fixed(in).follow(nb);
        std::vector<PortProjections> ins{port_projection("x", px.build()), port_projection("w", pw.build())};
        if (bias) ins.push_back(port_projection("bias", ProjectionBuilder(nb + 1).follow(nb).build()));
        return single_output(x.dtype, y, ZRange::of_shape(y), std::move(ins));
    }

    // One multiply-add per input feature, plus the bias add.
    double flops_per_point(const Params &, const Derivation &d) const override {
        const IndexProjection &px = input_projection(d, "x");
        const bool has_bias = d.signature.input("bias", 0) != nullptr;
        return 2.0 * static_cast<double>(px.window()[px.tensor_rank() - 1]) + (has_bias ? 1.0 : 0.0);
    }
    std::optional<ReductionMonoid> monoid(const Params &) const override { return sum_monoid(); }

    void reference(const RefContext &ctx) const override {
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &pw = input_projection(ctx.derivation, "w");
        const IndexProjection &py = output_projection(ctx.derivation);
        const bool has_bias = ctx.has_input(2);
        const int fx = px.tensor_rank() - 1;
        const Coord features = px.window()[fx];
        if (ctx.fast()) {
            contract_fast(ctx, fx, 0, [&](const ZPoint &) { return features; });
            if (has_bias) add_bias(ctx);
            return;
        }
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            ZPoint ex = px.map().apply(i), ew = pw.map().apply(i);
            double sum = 0;
            for (Coord f = 0; f < features; ++f) {
                sum += ctx.read(0, ex) * ctx.read(1, ew);
                ++ex[fx];
                ++ew[0];
            }
            if (has_bias) sum += ctx.read(2, input_projection(ctx.derivation, "bias").map().apply(i));
            ctx.write(0, py.map().apply(i), sum);
        });
    }

private:
    // y += bias over the index range, after the sums (as the naive loop adds it).
    static void add_bias(const RefContext &ctx) {
        const FlatOffset fb(input_projection(ctx.derivation, "bias"), ctx.input_shape(2));
        const FlatOffset fy(output_projection(ctx.derivation), ctx.output(0).range.end());
        const int last = ctx.index_range.rank() - 1;
        const double *bias = ctx.input(2).data.data();
        double *y = ctx.output(0).data.data();
        for_each_row(ctx.index_range, [&](const ZPoint &start, Coord length) {
            const double *b = bias + fb.at(start);
            double *row = y + fy.at(start);
            for (Coord j = 0; j < length; ++j) row[j * fy.step(last)] += b[j * fb.step(last)];
        });
    }
};

// The contraction of a matmul split into `parts` blocks: y[p] = a[…, pB:(p+1)B] ·
// b[…, pB:(p+1)B, :] with B = ceil(k / parts), the last block clipped. The block
// index p is an index dim (the first), so the partial products shard like any
// other dim; a reduce_sum over axis 0 of y gives the matmul (DESIGN.md §3: the
// monoid split of a contraction).
class PartialMatmulOp : public OpDef {
public:
    std::string_view kind() const override { return "partial_matmul"; }
    std::string_view category() const override { return "linear algebra"; }
    std::string_view summary() const override {
        return "partial products of a matmul over blocks of k: y[p, …, m, n] = Σ_{k in block p} a[…, m, k]·b[…, k, n]";
    }
    std::vector<PortSpec> input_ports() const override {
        return {{"a", "[*batch_a, m, k]", false, false}, {"b", "[*batch_b, k, n]", false, false}};
    }
    std::vector<PortSpec> output_ports() const override {
        return {{"y", "[parts, *broadcast(batch_a, batch_b), m, n]", false, false}};
    }
    std::vector<ParamSpec> params() const override {
        return {required_param("parts", ParamKind::integer,
                               "number of blocks k is split into: blocks of ceil(k / parts), the last one clipped; "
                               "every block must be non-empty")};
    }

    // The block size of a contraction of extent k split into `parts` blocks.
    static Coord block_size(Coord k, std::int64_t parts) { return (k + parts - 1) / parts; }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &a = *find_operand(inputs, "a");
        const OperandType &b = *find_operand(inputs, "b");
        for (const auto &[port, t] : {std::pair<const char *, const OperandType *>{"a", &a}, {"b", &b}})
            if (t->shape.rank() < 2)
                return unexpected(derivation_error("rank-mismatch", input_field(port),
                                                   std::string("partial_matmul: ") + port +
                                                       " must have rank at least 2, got rank " +
                                                       std::to_string(t->shape.rank()) + " " + shape_string(t->shape)));
        if (auto e = require_float("partial_matmul", "a", a)) return unexpected(*e);
        if (auto e = require_same_dtype("partial_matmul", "b", b, "a", a.dtype)) return unexpected(*e);

        const int ra = a.shape.rank(), rb = b.shape.rank();
        const Coord m = a.shape[ra - 2], k = a.shape[ra - 1], kb = b.shape[rb - 2], n = b.shape[rb - 1];
        if (kb != k)
            return unexpected(derivation_error("shape-mismatch", input_field("b"),
                                               "partial_matmul: b has " + std::to_string(kb) + " rows but a has " +
                                                   std::to_string(k) + " columns"));
        const std::int64_t parts = params.get_int("parts", 0);
        if (parts < 1 || parts > k)
            return unexpected(derivation_error("bad-param", param_field("parts"),
                                               "partial_matmul: parts " + std::to_string(parts) +
                                                   " must be between 1 and k = " + std::to_string(k)));
        const Coord block = block_size(k, parts);
        if ((parts - 1) * block >= k)
            return unexpected(derivation_error(
                "bad-param", param_field("parts"),
                "partial_matmul: k = " + std::to_string(k) + " does not split into " + std::to_string(parts) +
                    " non-empty blocks of equal size (blocks of " + std::to_string(block) + " cover it in " +
                    std::to_string((k + block - 1) / block) + ")"));
        const ZPoint batch_a(std::vector<Coord>(a.shape.coords().begin(), a.shape.coords().end() - 2));
        const ZPoint batch_b(std::vector<Coord>(b.shape.coords().begin(), b.shape.coords().end() - 2));
        std::optional<ZPoint> batch = broadcast_shapes(batch_a, batch_b);
        if (!batch)
            return unexpected(derivation_error("shape-mismatch", input_field("b"),
                                               "partial_matmul: batch dims " + shape_string(batch_b) +
                                                   " of b do not broadcast with " + shape_string(batch_a) + " of a"));
        const int nb = batch->rank();
        std::vector<Coord> out{parts};
        out.insert(out.end(), batch->coords().begin(), batch->coords().end());
        out.push_back(m);
        out.push_back(n);
        const ZPoint y(out);

        // Index dims: p, then batch (shifted by one), m, n.
        auto batch_rows = [&](ProjectionBuilder &builder, const ZPoint &own) {
            const IndexProjection p = broadcast_projection(own, *batch);
            for (int r = 0; r < own.rank(); ++r) {
                std::vector<Coord> row{0};
                const std::vector<Coord> rest = p.map().matrix().row(r);
                row.insert(row.end(), rest.begin(), rest.end());
                row.resize(static_cast<size_t>(nb + 3), 0);
                builder.row(row);
            }
        };
        ProjectionBuilder pa(nb + 3), pb(nb + 3);
        batch_rows(pa, batch_a);
        pa.follow(nb + 1).scaled(0, block, 0, block);
        batch_rows(pb, batch_b);
        pb.scaled(0, block, 0, block).follow(nb + 2);
        return single_output(a.dtype, y, ZRange::of_shape(y),
                             {port_projection("a", pa.build(), true), port_projection("b", pb.build(), true)});
    }

    // One multiply-add per k of a block: 2·B (the derivation keeps the block, not k,
    // so the clipped last block counts as a full one).
    double flops_per_point(const Params &, const Derivation &d) const override {
        const IndexProjection &pa = input_projection(d, "a");
        return 2.0 * static_cast<double>(pa.window()[pa.tensor_rank() - 1]);
    }
    std::optional<ReductionMonoid> monoid(const Params &) const override { return sum_monoid(); }

    void reference(const RefContext &ctx) const override {
        const IndexProjection &pa = input_projection(ctx.derivation, "a");
        const IndexProjection &pb = input_projection(ctx.derivation, "b");
        const IndexProjection &py = output_projection(ctx.derivation);
        const int ka = pa.tensor_rank() - 1, kb = pb.tensor_rank() - 2;
        const Coord k_total = ctx.input_shape(0)[ka];
        const Coord block = pa.window()[ka];
        if (ctx.fast())
            return contract_fast(ctx, ka, kb, [&](const ZPoint &corner) {
                return std::min(block, k_total - pa.map().apply(corner)[ka]);  // the last block is clipped
            });
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            ZPoint ea = pa.map().apply(i), eb = pb.map().apply(i);
            const Coord end = std::min(ea[ka] + block, k_total);  // the last block is clipped
            double sum = 0;
            for (Coord k = ea[ka]; k < end; ++k) {
                sum += ctx.read(0, ea) * ctx.read(1, eb);
                ++ea[ka];
                ++eb[kb];
            }
            ctx.write(0, py.map().apply(i), sum);
        });
    }
};

}  // namespace

void register_linear_algebra_ops(OpLibrary &lib) {
    lib.add(std::make_unique<MatmulOp>());
    lib.add(std::make_unique<LinearOp>());
    lib.add(std::make_unique<PartialMatmulOp>());
}

}  // namespace tapestry
