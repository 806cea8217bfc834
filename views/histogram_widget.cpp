#include "views/histogram_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace tapestry::views {

namespace {
QString number(double v) {
    return QString::number(v, 'g', 4);
}
}  // namespace

HistogramWidget::HistogramWidget(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("histogram"));
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void HistogramWidget::setData(std::vector<std::int64_t> bins, double lo, double hi, std::int64_t nan_count,
                              std::int64_t inf_count) {
    bins_ = std::move(bins);
    lo_ = lo;
    hi_ = hi;
    nan_ = nan_count;
    inf_ = inf_count;
    update();
}

void HistogramWidget::clear() {
    setData({}, 0, 0);
}

QRect HistogramWidget::plotRect() const {
    const int label = fontMetrics().height();
    return rect().adjusted(10, label + 8, -10, -(label + 8));
}

int HistogramWidget::binAt(int x) const {
    const QRect plot = plotRect();
    if (bins_.empty() || x < plot.left() || x > plot.right()) return -1;
    const int b =
        static_cast<int>(static_cast<double>(x - plot.left()) / plot.width() * static_cast<double>(bins_.size()));
    return std::clamp(b, 0, static_cast<int>(bins_.size()) - 1);
}

void HistogramWidget::paintEvent(QPaintEvent *) {
    QPainter p(this);
    p.fillRect(rect(), QColor(0xff, 0xff, 0xff));
    const QRect plot = plotRect();
    const QColor axis(0xcb, 0xd5, 0xe1), text(0x47, 0x55, 0x69);
    p.setPen(text);
    if (bins_.empty()) {
        p.drawText(rect(), Qt::AlignCenter, nan_ + inf_ > 0 ? tr("No finite values") : tr("No data"));
        return;
    }
    const std::int64_t tallest = std::max<std::int64_t>(1, *std::max_element(bins_.begin(), bins_.end()));
    const double step = static_cast<double>(plot.width()) / static_cast<double>(bins_.size());
    const QColor bar(0x3b, 0x82, 0xf6), edge(0x25, 0x63, 0xeb);
    for (size_t i = 0; i < bins_.size(); ++i) {
        if (bins_[i] == 0) continue;
        const double h = static_cast<double>(bins_[i]) / static_cast<double>(tallest) * plot.height();
        // At least a pixel, so that a lone value is visible next to a tall bin.
        const QRectF r(plot.left() + step * static_cast<double>(i), plot.bottom() - std::max(h, 1.0),
                       std::max(step - (step > 4 ? 1.0 : 0.0), 1.0), std::max(h, 1.0));
        p.fillRect(r, bar);
        if (step > 6) {
            p.setPen(edge);
            p.drawLine(r.topLeft(), r.topRight());
        }
    }
    p.setPen(axis);
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    // Zero, when inside the range, is the line a reader looks for first.
    if (lo_ < 0 && hi_ > 0) {
        const double x = plot.left() + (0 - lo_) / (hi_ - lo_) * plot.width();
        p.setPen(QPen(QColor(0x94, 0xa3, 0xb8), 1, Qt::DashLine));
        p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    }
    p.setPen(text);
    const int label = fontMetrics().height();
    const QRect below(plot.left(), plot.bottom() + 4, plot.width(), label);
    p.drawText(below, Qt::AlignLeft | Qt::AlignTop, number(lo_));
    p.drawText(below, Qt::AlignRight | Qt::AlignTop, number(hi_));
    if (lo_ < 0 && hi_ > 0) p.drawText(below, Qt::AlignHCenter | Qt::AlignTop, QStringLiteral("0"));
    const QRect above(plot.left(), 4, plot.width(), label);
    p.drawText(above, Qt::AlignLeft | Qt::AlignVCenter, tr("max bin %1").arg(tallest));
    if (nan_ + inf_ > 0) {
        p.setPen(QColor(0xb9, 0x1c, 0x1c));
        p.drawText(above, Qt::AlignRight | Qt::AlignVCenter, tr("NaN %1 · Inf %2").arg(nan_).arg(inf_));
    }
}

void HistogramWidget::mouseMoveEvent(QMouseEvent *event) {
    const int b = binAt(event->position().toPoint().x());
    if (b < 0) {
        QToolTip::hideText();
        return;
    }
    const double width = (hi_ - lo_) / static_cast<double>(bins_.size());
    const double from = lo_ + width * b;
    QToolTip::showText(
        event->globalPosition().toPoint(),
        tr("[%1, %2): %3 values").arg(number(from), number(from + width)).arg(bins_[static_cast<size_t>(b)]), this);
}

}  // namespace tapestry::views
