// IndexProjection: images of index ranges (see index_projection.h).
#include "index/index_projection.h"

#include <algorithm>
#include <sstream>

#include "common/check.h"
#include "index/saturating.h"

namespace tapestry {

IndexProjection::IndexProjection(AffineMap map, ZPoint window) : map_(std::move(map)), window_(std::move(window)) {
    TAPESTRY_CHECK(window_.rank() == map_.out_rank(), "IndexProjection: window rank must equal tensor rank");
}

ZRange IndexProjection::apply(const ZPoint &index_point) const {
    return ZRange::from_start_shape(map_.apply(index_point), window_);
}

ZRange IndexProjection::image(const ZRange &index_range) const {
    TAPESTRY_CHECK(index_range.rank() == index_rank(), "IndexProjection::image: index rank mismatch");
    const ZMatrix &a = map_.matrix();
    const int rows = a.rows();
    if (index_range.empty()) {
        ZPoint at = map_.apply(index_range.start());
        return ZRange(at, at);
    }
    // Each row is a sum of independent terms a_rc·x_c with x_c in [start_c, end_c-1];
    // the extreme corners are found term by term, which visits every corner implicitly.
    ZPoint lo = map_.offset(), hi = map_.offset();
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < a.cols(); ++c) {
            const Coord coef = a.at(r, c);
            const Coord x0 = saturating::mul(coef, index_range.start()[c]);
            const Coord x1 = saturating::mul(coef, index_range.end()[c] - 1);
            lo[r] = saturating::add(lo[r], std::min(x0, x1));
            hi[r] = saturating::add(hi[r], std::max(x0, x1));
        }
    }
    // A window entry <= 0 touches nothing along its dimension: that dimension of
    // the result is empty at `lo` (so the whole result is empty), not [lo, hi).
    ZPoint end = hi;
    for (int r = 0; r < rows; ++r) end[r] = saturating::add(end[r], window_[r]);
    for (int r = 0; r < rows; ++r)
        if (window_[r] <= 0) end[r] = lo[r];
    return ZRange(lo, end);
}

std::string IndexProjection::to_string() const {
    std::ostringstream s;
    s << '[';
    const ZMatrix &a = map_.matrix();
    for (int r = 0; r < a.rows(); ++r) {
        if (r) s << "; ";
        for (int c = 0; c < a.cols(); ++c) s << (c ? " " : "") << a.at(r, c);
        s << (a.cols() ? " | " : "| ") << map_.offset()[r] << " | " << window_[r];
    }
    s << ']';
    return s.str();
}

}  // namespace tapestry
