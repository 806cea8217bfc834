// Data movement: `move`, the explicit node the sharding pass inserts where a
// consumer's shards read elements that other producer shards wrote. It copies its
// input; its `collective` parameter names what the copy becomes once shards sit on
// different devices (send/recv, all-gather, reduce-scatter, all-reduce, or a
// local copy). Identity projection: shard it like any elementwise op.
#include <memory>

#include "ops/library.h"
#include "ops/op_util.h"

namespace tapestry {
namespace {

using namespace op_util;

class MoveOp final : public OpDef {
public:
    std::string_view kind() const override { return "move"; }
    std::string_view category() const override { return "data movement"; }
    std::string_view summary() const override {
        return "copy x to y; the collective it becomes across devices is a parameter";
    }
    std::vector<PortSpec> input_ports() const override {
        return {{"x", "the tensor to move (any dtype)", false, false}};
    }
    std::vector<PortSpec> output_ports() const override { return {{"y", "a copy of x", false, false}}; }
    std::vector<ParamSpec> params() const override {
        ParamSpec collective = required_param(
            "collective", ParamKind::string,
            "what the copy becomes across devices: send_recv, all_gather, reduce_scatter, all_reduce or copy");
        collective.choices = {"send_recv", "all_gather", "reduce_scatter", "all_reduce", "copy"};
        return {collective};
    }

    Expected<Derivation, DerivationError> derive(const Params &, const std::vector<PortTypes> &inputs) const override {
        const OperandType &x = *find_operand(inputs, "x");
        return single_output(x.dtype, x.shape, ZRange::of_shape(x.shape),
                             {port_projection("x", IndexProjection::identity(x.shape.rank()))});
    }

    double flops_per_point(const Params &, const Derivation &) const override { return 0; }

    void reference(const RefContext &ctx) const override {
        const IndexProjection &px = input_projection(ctx.derivation, "x");
        const IndexProjection &py = output_projection(ctx.derivation);
        if (ctx.fast()) return map_elements<1>(ctx, {&px}, py, [](double x) { return x; });
        ctx.index_range.for_each_point(
            [&](const ZPoint &i) { ctx.write(0, py.map().apply(i), ctx.read(0, px.map().apply(i))); });
    }
};

}  // namespace

void register_data_movement_ops(OpLibrary &lib) {
    lib.add(std::make_unique<MoveOp>());
}

}  // namespace tapestry
