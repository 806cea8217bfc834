// A small, fast histogram: one painted bar per bin over [lo, hi], the range and
// the tallest count on the axes, the bin under the mouse in a tooltip, and the
// NaN/Inf counts (which no bin holds) in the corner.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

namespace tapestry::views {

class HistogramWidget : public QWidget {
    Q_OBJECT
public:
    explicit HistogramWidget(QWidget *parent = nullptr);

    // Replaces the data (no accumulation): `bins` counts over equal bins of [lo, hi].
    void setData(std::vector<std::int64_t> bins, double lo, double hi, std::int64_t nan_count = 0,
                 std::int64_t inf_count = 0);
    void clear();

    const std::vector<std::int64_t> &bins() const { return bins_; }
    double low() const { return lo_; }
    double high() const { return hi_; }
    // The bin under widget x, or -1.
    int binAt(int x) const;

    QSize sizeHint() const override { return {360, 150}; }
    QSize minimumSizeHint() const override { return {160, 90}; }

protected:
    void paintEvent(QPaintEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;

private:
    QRect plotRect() const;

    std::vector<std::int64_t> bins_;
    double lo_ = 0, hi_ = 0;
    std::int64_t nan_ = 0, inf_ = 0;
};

}  // namespace tapestry::views
