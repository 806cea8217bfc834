// Embedding lookup: y[i…, d] = table[ids[i…], d] (docs/ops.md). Which table rows
// are read depends on the ids, so the table projection covers all rows and the
// read pattern is data-dependent.
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
        std::vector<Coord> dims = ids.shape.coords();
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

}  // namespace

void register_embedding_ops(OpLibrary &lib) {
    lib.add(std::make_unique<EmbeddingOp>());
}

}  // namespace tapestry
