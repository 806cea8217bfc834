// Convolution geometry per shard (see conv_geometry.h).
#include "runtime/cpu/conv_geometry.h"

namespace tapestry::cpu {

LocalPadding local_padding(const OperandProjection &px, const ZRange &index_range, const ZPoint &x_shape, int dim) {
    const ZRange image = px.projection.image(index_range);
    const ZRange clipped = image.intersect(ZRange::of_shape(x_shape));
    LocalPadding p;
    p.extent = clipped.extent(dim);
    if (p.extent <= 0) {
        p.extent = 0;
        p.before = 0;
        p.after = image.extent(dim);
    } else {
        p.before = clipped.start()[dim] - image.start()[dim];
        p.after = image.end()[dim] - clipped.end()[dim];
    }
    return p;
}

ConvPlan conv_plan(const KernelSpec &spec) {
    ConvPlan c;
    const ZPoint &xs = spec.operands.at(0).operands.at(0).shape;
    const ZPoint &ws = spec.operands.at(1).operands.at(0).shape;
    c.groups = spec.params.get_int("groups", 1);
    c.grouped = c.groups > 1;
    c.cg = ws[1];
    c.kg = ws[0] / c.groups;
    const ZRange &r = spec.index_range;
    if (c.grouped) {
        c.g_local = r.extent(1);
        c.k_local = r.extent(2);
    } else {
        c.g_local = 1;
        c.k_local = r.extent(1);
    }
    c.one_grouped_primitive = c.grouped && c.g_local > 1 && c.k_local == c.kg;
    c.loops = (c.grouped && c.g_local > 1 && !c.one_grouped_primitive) ? static_cast<int>(c.g_local) : 1;
    const OperandProjection &px = *spec.derivation.signature.input("x", 0);
    c.ph = local_padding(px, r, xs, 2);
    c.pw = local_padding(px, r, xs, 3);
    const auto stride = spec.params.get_ints("stride", {1, 1});
    const auto dilation = spec.params.get_ints("dilation", {1, 1});
    c.stride_h = stride.at(0);
    c.stride_w = stride.at(1);
    c.dil_h = dilation.at(0);
    c.dil_w = dilation.at(1);
    return c;
}

}  // namespace tapestry::cpu
