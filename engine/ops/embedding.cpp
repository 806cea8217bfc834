// Embedding lookup: y[i…, d] = table[ids[i…], d] (docs/ops.md). Which table rows
// are read depends on the ids, so the table projection covers all rows and the
// read pattern is data-dependent. gather generalises it to any axis of any-rank
// data (ONNX Gather): negative indices count from the end of the axis.
#include <cmath>
#include <limits>

#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {

namespace {

using namespace op_util;

class EmbeddingOp final : public OpDef {
public:
    std::string_view kind() const override { return "embedding"; }
    std::string_view category() const override { return "embedding"; }
    std::string_view summary() const override { return "Look up rows of a table by integer ids"; }
    std::vector<PortSpec> input_ports() const override {
        return {{"ids", "row ids (i32 or i64), any shape; ids outside [0, V) give NaN rows"},
                {"table", "embedding table [V, D]"}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "[*ids.shape, D], dtype of table"}}; }
    std::vector<ParamSpec> params() const override { return {}; }

    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &inputs) const override {
        const OperandType &ids = *find_operand(inputs, "ids");
        const OperandType &table = *find_operand(inputs, "table");
        if (ids.dtype != DType::i32 && ids.dtype != DType::i64)
            return unexpected(
                derivation_error("dtype-mismatch", input_field("ids"),
                                 "embedding: ids must be i32 or i64, got " + std::string(dtype_name(ids.dtype))));
        if (auto e = require_float("embedding", "table", table)) return unexpected(*e);
        if (table.shape.rank() != 2)
            return unexpected(
                derivation_error("rank-mismatch", input_field("table"),
                                 "embedding: table must have rank 2 [V, D], got " + shape_string(table.shape)));
        if (table.shape[0] < 1)
            return unexpected(derivation_error("shape-mismatch", input_field("table"),
                                               "embedding: table " + shape_string(table.shape) + " has no rows"));
        const int r = ids.shape.rank();
        std::vector<Coord> dims = ids.shape.to_vector();
        dims.push_back(table.shape[1]);
        const ZPoint y_shape(dims);
        ProjectionBuilder pids(r + 1);
        for (int d = 0; d < r; ++d) pids.follow(d);
        ProjectionBuilder ptable(r + 1);
        ptable.fixed(table.shape[0]).follow(r);
        return single_output(table.dtype, y_shape, ZRange::of_shape(y_shape),
                             {port_projection("ids", pids.build()), port_projection("table", ptable.build())});
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 0; }
    ReadPattern read_pattern(const Params &) const override { return ReadPattern::data_dependent; }

    void reference(const RefContext &ctx) const override {
        const ZPoint &ids_shape = ctx.input_shape(0);
        const Coord rows = ctx.input_shape(1)[0];
        const int r = ids_shape.rank();
        ZPoint at = ZPoint::zeros(r);
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            for (int d = 0; d < r; ++d) at[d] = i[d];
            const double id = ctx.read(0, at);
            // An id is data, not a parameter: a bad one cannot be refused at
            // derivation. Clamping would hide it; a NaN row makes it visible.
            double v = std::numeric_limits<double>::quiet_NaN();
            if (id >= 0 && id < static_cast<double>(rows) && id == std::floor(id))
                v = ctx.read(1, ZPoint{static_cast<Coord>(id), i[r]});
            ctx.write(0, i, v);
        });
    }
};

// gather: y[p…, i…, q…] = data[p…, idx(indices[i…]), q…] along `axis`, where
// idx(k) = k, or k + data.shape[axis] for negative k (ONNX Gather).
class GatherOp final : public OpDef {
public:
    std::string_view kind() const override { return "gather"; }
    std::string_view category() const override { return "embedding"; }
    std::string_view summary() const override { return "Take slices of data along an axis by integer indices"; }
    std::vector<PortSpec> input_ports() const override {
        return {{"data", "the tensor to take from (any dtype), rank ≥ 1"},
                {"indices", "positions along axis (i32 or i64), any shape; negative ones count from the end, "
                            "ones outside [−n, n) give NaN"}};
    }
    std::vector<PortSpec> output_ports() const override {
        return {{"y", "data.shape[:axis] + indices.shape + data.shape[axis+1:], dtype of data"}};
    }
    std::vector<ParamSpec> params() const override { return {int_param("axis", 0, "the axis of data indexed")}; }

    Expected<Derivation, DerivationError> derive(const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override {
        const OperandType &data = *find_operand(inputs, "data");
        const OperandType &indices = *find_operand(inputs, "indices");
        if (indices.dtype != DType::i32 && indices.dtype != DType::i64)
            return unexpected(
                derivation_error("dtype-mismatch", input_field("indices"),
                                 "gather: indices must be i32 or i64, got " + std::string(dtype_name(indices.dtype))));
        if (auto e = require_min_rank("gather", "data", data, 1)) return unexpected(*e);
        auto axis = checked_axis("gather", "axis", params.get_int("axis", 0), data.shape.rank(), "data");
        if (!axis) return unexpected(axis.error());
        if (data.shape[*axis] < 1)
            return unexpected(derivation_error("shape-mismatch", input_field("data"),
                                               "gather: data " + shape_string(data.shape) + " has no elements along axis " +
                                                   std::to_string(*axis)));
        const int a = *axis, r = indices.shape.rank(), rank = data.shape.rank() - 1 + r;
        std::vector<Coord> dims(data.shape.coords().begin(), data.shape.coords().begin() + a);
        dims.insert(dims.end(), indices.shape.coords().begin(), indices.shape.coords().end());
        dims.insert(dims.end(), data.shape.coords().begin() + a + 1, data.shape.coords().end());
        const ZPoint y_shape(dims);
        ProjectionBuilder pdata(rank);
        for (int d = 0; d < data.shape.rank(); ++d)
            if (d < a) pdata.follow(d);
            else if (d == a) pdata.fixed(data.shape[a]);
            else pdata.follow(d - 1 + r);
        ProjectionBuilder pidx(rank);
        for (int d = 0; d < r; ++d) pidx.follow(a + d);
        return single_output(data.dtype, y_shape, ZRange::of_shape(y_shape),
                             {port_projection("data", pdata.build()), port_projection("indices", pidx.build())});
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 0; }
    ReadPattern read_pattern(const Params &) const override { return ReadPattern::data_dependent; }

    void reference(const RefContext &ctx) const override {
        const ZPoint &data_shape = ctx.input_shape(0);
        const int a = *normalize_axis(ctx.params.get_int("axis", 0), data_shape.rank());
        const int r = ctx.input_shape(1).rank();
        const Coord n = data_shape[a];
        ZPoint at_index = ZPoint::zeros(r), at_data = ZPoint::zeros(data_shape.rank());
        ctx.index_range.for_each_point([&](const ZPoint &i) {
            for (int d = 0; d < r; ++d) at_index[d] = i[a + d];
            double k = ctx.read(1, at_index);
            if (k < 0) k += static_cast<double>(n);
            // As for embedding: a bad index is data, so it gives NaN instead of a clamped read.
            double v = std::numeric_limits<double>::quiet_NaN();
            if (k >= 0 && k < static_cast<double>(n) && k == std::floor(k)) {
                for (int d = 0; d < data_shape.rank(); ++d)
                    at_data[d] = d < a ? i[d] : d == a ? static_cast<Coord>(k) : i[d - 1 + r];
                v = ctx.read(0, at_data);
            }
            ctx.write(0, i, v);
        });
    }
};

}  // namespace

void register_embedding_ops(OpLibrary &lib) {
    lib.add(std::make_unique<EmbeddingOp>());
    lib.add(std::make_unique<GatherOp>());
}

}  // namespace tapestry
