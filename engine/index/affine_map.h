// AffineMap x ↦ A·x + b over the integers. A is out × in: row = tensor dim,
// column = index dim (DESIGN.md §3).
#pragma once

#include <string>
#include <vector>

#include "index/zpoint.h"

namespace tapestry {

class ZMatrix {
public:
    ZMatrix() = default;
    ZMatrix(int rows, int cols) : rows_(rows), cols_(cols), data_(static_cast<size_t>(rows * cols), 0) {}
    ZMatrix(std::initializer_list<std::initializer_list<Coord>> rows);
    static ZMatrix from_rows(const std::vector<std::vector<Coord>> &rows, int cols);
    static ZMatrix identity(int n);

    int rows() const { return rows_; }
    int cols() const { return cols_; }
    Coord at(int r, int c) const { return data_[static_cast<size_t>(r * cols_ + c)]; }
    Coord &at(int r, int c) { return data_[static_cast<size_t>(r * cols_ + c)]; }
    std::vector<Coord> row(int r) const;
    std::vector<std::vector<Coord>> to_rows() const;

    ZPoint operator*(const ZPoint &x) const;
    friend bool operator==(const ZMatrix &, const ZMatrix &) = default;

private:
    int rows_ = 0;
    int cols_ = 0;
    std::vector<Coord> data_;
};

class AffineMap {
public:
    AffineMap() = default;
    AffineMap(ZMatrix a, ZPoint b);  // requires a.rows() == b.rank()
    static AffineMap identity(int n) { return AffineMap(ZMatrix::identity(n), ZPoint::zeros(n)); }

    const ZMatrix &matrix() const { return a_; }
    const ZPoint &offset() const { return b_; }
    int in_rank() const { return a_.cols(); }
    int out_rank() const { return a_.rows(); }

    ZPoint apply(const ZPoint &x) const;
    AffineMap translated(const ZPoint &delta) const { return AffineMap(a_, b_ + delta); }

    friend bool operator==(const AffineMap &, const AffineMap &) = default;

private:
    ZMatrix a_;
    ZPoint b_;
};

}  // namespace tapestry
