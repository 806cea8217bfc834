// ZMatrix and AffineMap (see affine_map.h), with saturating arithmetic.
#include "index/affine_map.h"

#include <sstream>

#include "common/check.h"
#include "index/saturating.h"

namespace tapestry {

ZMatrix::ZMatrix(std::initializer_list<std::initializer_list<Coord>> rows) {
    rows_ = static_cast<int>(rows.size());
    cols_ = rows_ ? static_cast<int>(rows.begin()->size()) : 0;
    for (const auto &r : rows) {
        TAPESTRY_CHECK(static_cast<int>(r.size()) == cols_, "ZMatrix: ragged rows");
        data_.insert(data_.end(), r.begin(), r.end());
    }
}

ZMatrix ZMatrix::from_rows(const std::vector<std::vector<Coord>> &rows, int cols) {
    ZMatrix m(static_cast<int>(rows.size()), cols);
    for (int r = 0; r < m.rows(); ++r) {
        TAPESTRY_CHECK(static_cast<int>(rows[static_cast<size_t>(r)].size()) == cols, "ZMatrix: ragged rows");
        for (int c = 0; c < cols; ++c) m.at(r, c) = rows[static_cast<size_t>(r)][static_cast<size_t>(c)];
    }
    return m;
}

ZMatrix ZMatrix::identity(int n) {
    ZMatrix m(n, n);
    for (int i = 0; i < n; ++i) m.at(i, i) = 1;
    return m;
}

std::vector<Coord> ZMatrix::row(int r) const {
    return std::vector<Coord>(data_.begin() + r * cols_, data_.begin() + (r + 1) * cols_);
}

std::vector<std::vector<Coord>> ZMatrix::to_rows() const {
    std::vector<std::vector<Coord>> out;
    for (int r = 0; r < rows_; ++r) out.push_back(row(r));
    return out;
}

ZPoint ZMatrix::operator*(const ZPoint &x) const {
    TAPESTRY_CHECK(x.rank() == cols_, "ZMatrix * ZPoint: rank mismatch");
    ZPoint y = ZPoint::zeros(rows_);
    for (int r = 0; r < rows_; ++r) {
        Coord acc = 0;
        for (int c = 0; c < cols_; ++c) acc = saturating::add(acc, saturating::mul(at(r, c), x[c]));
        y[r] = acc;
    }
    return y;
}

AffineMap::AffineMap(ZMatrix a, ZPoint b) : a_(std::move(a)), b_(std::move(b)) {
    TAPESTRY_CHECK(a_.rows() == b_.rank(), "AffineMap: offset rank must equal matrix rows");
}

ZPoint AffineMap::apply(const ZPoint &x) const {
    ZPoint y = a_ * x;
    for (int r = 0; r < y.rank(); ++r) y[r] = saturating::add(y[r], b_[r]);
    return y;
}

}  // namespace tapestry
