#include "views/plan_gantt.h"

#include <QFontMetricsF>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "common/checked_size.h"

namespace tapestry::views {

namespace {

constexpr int kLegend = 18;          // the legend's band above the ticks
constexpr int kAxis = kLegend + 22;  // legend and tick labels, fixed at the top
constexpr int kGutter = 96;          // device names and lane labels, fixed at the left
constexpr int kLane = 15;
constexpr int kLaneGap = 3;
constexpr int kRowPad = 5;
constexpr int kRow = 2 * kLane + kLaneGap + 2 * kRowPad;
constexpr double kMaxContentPixels = 1 << 30;  // the scroll bar's range is an int
constexpr double kHitGrace = 2.0;              // pixels around a thin bar that still hit it
constexpr int kMeasuredHeight = 5;             // the strip of a lane the measured bars take

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// 1, 2 or 5 × 10^k: the tick spacing nearest above `raw` seconds.
double niceStep(double raw) {
    const double decade = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * decade >= raw) return m * decade;
    return 10 * decade;
}

// A tick label in the unit the spacing calls for ("250 µs", "1.5 ms").
QString tickText(double seconds, double step) {
    struct Unit {
        double scale;
        const char *name;
    };
    static const Unit units[] = {{1e-9, "ns"}, {1e-6, "µs"}, {1e-3, "ms"}, {1.0, "s"}};
    const Unit *u = &units[0];
    for (const Unit &c : units)
        if (step >= c.scale) u = &c;
    const double in_unit = step / u->scale;
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(in_unit) + 1e-9)));
    return QStringLiteral("%1 %2").arg(seconds / u->scale, 0, 'f', decimals).arg(QString::fromUtf8(u->name));
}

QString secondsText(double s) {
    return qs(plan::seconds_text(s));
}

}  // namespace

QColor deviceColour(int device) {
    static const QColor first[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                   QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48),
                                   QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7), QColor(0x9c, 0x75, 0x5f),
                                   QColor(0x79, 0x70, 0x6e)};
    constexpr int n = static_cast<int>(std::size(first));
    if (device >= 0 && device < n) return first[device];
    const double hue = std::fmod(static_cast<double>(device) * 137.508, 360.0);
    return QColor::fromHsv(static_cast<int>(hue), device % 2 ? 150 : 200, device % 3 ? 215 : 180);
}

QColor stepKindColour(plan::StepKind kind) {
    switch (kind) {
        case plan::StepKind::kernel: return QColor(0x3b, 0x82, 0xf6);
        case plan::StepKind::copy: return QColor(0xf5, 0x9e, 0x0b);
        case plan::StepKind::send_recv: return QColor(0xa8, 0x55, 0xf7);
        case plan::StepKind::collective: return QColor(0x14, 0xb8, 0xa6);
    }
    return Qt::gray;
}

QString stepKindTitle(plan::StepKind kind) {
    switch (kind) {
        case plan::StepKind::kernel: return PlanGantt::tr("kernel");
        case plan::StepKind::copy: return PlanGantt::tr("copy");
        case plan::StepKind::send_recv: return PlanGantt::tr("send/recv");
        case plan::StepKind::collective: return PlanGantt::tr("collective");
    }
    return {};
}

PlanGantt::PlanGantt(QWidget *parent) : QAbstractScrollArea(parent) {
    setObjectName(QStringLiteral("planGantt"));
    viewport()->setMouseTracking(true);
    viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
    setFocusPolicy(Qt::StrongFocus);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setMinimumSize(240, kAxis + kRow + 20);
}

// ---- the plan --------------------------------------------------------------------

void PlanGantt::setPlan(std::shared_ptr<const plan::PlanResult> result) {
    result_ = std::move(result);
    rows_.clear();
    selected_ = hovered_ = -1;
    makespan_ = 0;
    measured_end_ = 0;
    measured_count_ = 0;
    measured_start_.clear();
    measured_finish_.clear();
    if (result_) {
        const plan::Plan &p = result_->plan;
        const plan::Prediction &pred = result_->prediction;
        rows_.resize(p.devices.size());
        makespan_ = pred.makespan;
        for (size_t d = 0; d < p.devices.size(); ++d) {
            for (int s : p.devices[d].steps) {
                if (s < 0 || static_cast<size_t>(s) >= p.steps.size() || static_cast<size_t>(s) >= pred.steps.size())
                    continue;
                const plan::StepTime &t = pred.steps[static_cast<size_t>(s)];
                const int lane = p.steps[static_cast<size_t>(s)].stream == plan::Stream::compute ? 0 : 1;
                rows_[d].lanes[static_cast<size_t>(lane)].bars.push_back(Bar{t.start, t.end, s});
                makespan_ = std::max(makespan_, t.end);
            }
            for (Lane &lane : rows_[d].lanes) sortLane(lane.bars, lane.reach);
        }
    }
    fitted_ = true;
    fit();
}

int PlanGantt::barCount(int device, plan::Stream lane) const {
    if (device < 0 || device >= rowCount()) return 0;
    return static_cast<int>(
        rows_[static_cast<size_t>(device)].lanes[lane == plan::Stream::compute ? 0 : 1].bars.size());
}

int PlanGantt::barStep(int device, plan::Stream lane, int index) const {
    if (index < 0 || index >= barCount(device, lane)) return -1;
    return rows_[static_cast<size_t>(device)]
        .lanes[lane == plan::Stream::compute ? 0 : 1]
        .bars[static_cast<size_t>(index)]
        .step;
}

QRect PlanGantt::barRect(int device, plan::Stream lane, int index) const {
    if (index < 0 || index >= barCount(device, lane)) return {};
    const int l = lane == plan::Stream::compute ? 0 : 1;
    const Bar &b = rows_[static_cast<size_t>(device)].lanes[static_cast<size_t>(l)].bars[static_cast<size_t>(index)];
    return barRectOf(b, predictedRect(laneRect(device, l)));
}

QRect PlanGantt::barRectOf(const Bar &b, const QRectF &part) const {
    const double x0 = xAt(b.start), x1 = std::max(xAt(b.end), x0 + 1);
    return QRectF(x0, part.top(), x1 - x0, part.height()).toAlignedRect();
}

void PlanGantt::sortLane(std::vector<Bar> &bars, std::vector<double> &reach) {
    std::stable_sort(bars.begin(), bars.end(), [](const Bar &a, const Bar &b) { return a.start < b.start; });
    reach.resize(bars.size());
    double latest = -1;
    for (size_t i = 0; i < bars.size(); ++i) reach[i] = latest = std::max(latest, bars[i].end);
}

// ---- measurements ----------------------------------------------------------------

void PlanGantt::setMeasured(const std::vector<launch::MeasuredStep> &steps) {
    measured_end_ = 0;
    measured_count_ = 0;
    measured_start_.clear();
    measured_finish_.clear();
    for (Row &row : rows_)
        for (Lane &lane : row.lanes) {
            lane.measured.clear();
            lane.measured_reach.clear();
        }
    if (result_) {
        const size_t n = result_->plan.steps.size();
        measured_start_.assign(n, -1.0);
        measured_finish_.assign(n, -1.0);
        for (const launch::MeasuredStep &m : steps) {
            if (m.step < 0 || static_cast<size_t>(m.step) >= n) continue;
            measured_start_[static_cast<size_t>(m.step)] = m.start;
            measured_finish_[static_cast<size_t>(m.step)] = m.end;
            measured_end_ = std::max(measured_end_, m.end);
            ++measured_count_;
        }
        // A measured bar goes wherever the step's predicted bar is (a transfer or a
        // collective is in the lane of every device it holds).
        for (Row &row : rows_)
            for (Lane &lane : row.lanes) {
                for (const Bar &b : lane.bars) {
                    const auto s = static_cast<size_t>(b.step);
                    if (measured_start_[s] >= 0)
                        lane.measured.push_back(Bar{measured_start_[s], measured_finish_[s], b.step});
                }
                sortLane(lane.measured, lane.measured_reach);
            }
    }
    fitted_ = true;
    fit();
}

int PlanGantt::measuredBarCount(int device, plan::Stream lane) const {
    if (device < 0 || device >= rowCount()) return 0;
    return static_cast<int>(
        rows_[static_cast<size_t>(device)].lanes[lane == plan::Stream::compute ? 0 : 1].measured.size());
}

int PlanGantt::measuredBarStep(int device, plan::Stream lane, int index) const {
    if (index < 0 || index >= measuredBarCount(device, lane)) return -1;
    return rows_[static_cast<size_t>(device)]
        .lanes[lane == plan::Stream::compute ? 0 : 1]
        .measured[static_cast<size_t>(index)]
        .step;
}

QRect PlanGantt::measuredBarRect(int device, plan::Stream lane, int index) const {
    if (index < 0 || index >= measuredBarCount(device, lane)) return {};
    const int l = lane == plan::Stream::compute ? 0 : 1;
    const Bar &b =
        rows_[static_cast<size_t>(device)].lanes[static_cast<size_t>(l)].measured[static_cast<size_t>(index)];
    return barRectOf(b, measuredRect(laneRect(device, l)));
}

QRectF PlanGantt::predictedRect(const QRectF &lane) const {
    if (!hasMeasured()) return lane;
    return QRectF(lane.left(), lane.top(), lane.width(), lane.height() - kMeasuredHeight - 1);
}

QRectF PlanGantt::measuredRect(const QRectF &lane) const {
    return QRectF(lane.left(), lane.bottom() - kMeasuredHeight, lane.width(), kMeasuredHeight);
}

QRect PlanGantt::plotRect() const {
    return QRect(plotLeft(), kAxis, plotWidth(), std::max(0, viewport()->height() - kAxis));
}

int PlanGantt::stepAt(const QPoint &pos) const {
    if (!plotRect().contains(pos) || rows_.empty()) return -1;
    const int row = (pos.y() - kAxis + verticalScrollBar()->value()) / kRow;
    if (row < 0 || row >= rowCount()) return -1;
    for (int l = 0; l < 2; ++l) {
        const QRectF r = laneRect(row, l);
        if (pos.y() < r.top() || pos.y() > r.bottom()) continue;
        const Lane &lane = rows_[static_cast<size_t>(row)].lanes[static_cast<size_t>(l)];
        const double t = timeAt(pos.x()), grace = kHitGrace / pixels_per_second_;
        if (hasMeasured() && pos.y() >= measuredRect(r).top())
            return nearestBar(lane.measured, lane.measured_reach, t, grace);
        return nearestBar(lane.bars, lane.reach, t, grace);
    }
    return -1;
}

int PlanGantt::nearestBar(const std::vector<Bar> &bars, const std::vector<double> &reach, double t, double grace) {
    auto first = std::lower_bound(reach.begin(), reach.end(), t - grace);
    int best = -1;
    double best_distance = grace;
    for (auto i = static_cast<size_t>(first - reach.begin()); i < bars.size(); ++i) {
        const Bar &b = bars[i];
        if (b.start > t + grace) break;
        const double distance = t < b.start ? b.start - t : t > b.end ? t - b.end : 0.0;
        if (distance <= best_distance) {
            best_distance = distance;
            best = b.step;
            if (distance == 0) break;
        }
    }
    return best;
}

QString PlanGantt::stepToolTip(int step) const {
    if (!result_ || step < 0 || static_cast<size_t>(step) >= result_->plan.steps.size()) return {};
    const plan::Plan &p = result_->plan;
    const plan::Step &s = p.steps[static_cast<size_t>(step)];
    auto device = [&p](int d) {
        return d >= 0 && static_cast<size_t>(d) < p.devices.size() ? qs(p.devices[static_cast<size_t>(d)].name)
                                                                   : QString::number(d);
    };
    QString html = QStringLiteral("<b>%1</b>").arg(qs(s.op).toHtmlEscaped());
    if (!s.shard.empty()) html += tr(" · shard %1").arg(qs(s.shard).toHtmlEscaped());
    QString kind = stepKindTitle(s.kind);
    if (s.kind == plan::StepKind::kernel && !s.op_kind.empty()) kind += QStringLiteral(" (%1)").arg(qs(s.op_kind));
    if (s.kind == plan::StepKind::collective) kind += QStringLiteral(" %1 (%2)").arg(qs(s.collective), qs(s.algorithm));
    html += QStringLiteral("<br/>") + tr("step %1 · %2").arg(step).arg(kind.toHtmlEscaped());
    if (s.kind == plan::StepKind::send_recv) {
        html += QStringLiteral("<br/>") + tr("%1 → %2").arg(device(s.device), device(s.peer));
    } else if (s.kind == plan::StepKind::collective) {
        QStringList names;
        for (int d : s.participants) names << device(d);
        if (names.size() > 8) names = names.mid(0, 8) << QStringLiteral("…");
        html += QStringLiteral("<br/>") + tr("over %1").arg(names.join(QStringLiteral(", ")));
    } else {
        html += QStringLiteral("<br/>") + tr("on %1").arg(device(s.device));
    }
    if (s.crosses_nodes) html += tr(" · crosses nodes");
    const plan::StepTime &t = result_->prediction.steps[static_cast<size_t>(step)];
    html += QStringLiteral("<br/>") +
            tr("predicted %1 (%2 → %3)").arg(secondsText(s.predicted), secondsText(t.start), secondsText(t.end));
    if (static_cast<size_t>(step) < measured_start_.size() && measured_start_[static_cast<size_t>(step)] >= 0) {
        const double m0 = measured_start_[static_cast<size_t>(step)], m1 = measured_finish_[static_cast<size_t>(step)];
        html += QStringLiteral("<br/>") +
                tr("measured %1 (%2 → %3)").arg(secondsText(m1 - m0), secondsText(m0), secondsText(m1));
    }
    html += QStringLiteral("<br/>") + tr("%1 %2").arg(qs(byte_text(static_cast<std::int64_t>(s.bytes))),
                                                      s.kind == plan::StepKind::kernel || s.kind == plan::StepKind::copy
                                                          ? tr("read + written")
                                                          : tr("moved"));
    if (s.flops > 0) html += tr(" · %1 GFLOP").arg(s.flops / 1e9, 0, 'g', 3);
    return html;
}

void PlanGantt::setSelectedStep(int step) {
    if (selected_ == step) return;
    selected_ = step;
    viewport()->update();
}

// ---- the time axis ---------------------------------------------------------------

int PlanGantt::plotLeft() const {
    return kGutter;
}

int PlanGantt::plotWidth() const {
    return std::max(1, viewport()->width() - kGutter - 8);
}

double PlanGantt::timeAt(double x) const {
    return (x - plotLeft() + horizontalScrollBar()->value()) / pixels_per_second_;
}

double PlanGantt::xAt(double seconds) const {
    return plotLeft() + seconds * pixels_per_second_ - horizontalScrollBar()->value();
}

double PlanGantt::visibleStart() const {
    return timeAt(plotLeft());
}

double PlanGantt::visibleEnd() const {
    return timeAt(plotLeft() + plotWidth());
}

double PlanGantt::fitPixelsPerSecond() const {
    if (extent() <= 0) return 1.0;
    // w / (w / e) rounds below e for about one extent in sixteen: lower the scale
    // by an ulp until the fitted view reaches the whole extent (the measured end
    // is its last point, and a test checks it is in view).
    double pps = plotWidth() / extent();
    while (pps > 0 && plotWidth() / pps < extent()) pps = std::nextafter(pps, 0.0);
    return pps;
}

void PlanGantt::setPixelsPerSecond(double pps) {
    const double low = fitPixelsPerSecond();
    const double high = extent() > 0 ? std::max(low, kMaxContentPixels / extent()) : low;
    pixels_per_second_ = std::clamp(pps, low, high);
}

void PlanGantt::fit() {
    fitted_ = true;
    setPixelsPerSecond(fitPixelsPerSecond());
    updateScrollBars();
    horizontalScrollBar()->setValue(0);
    viewport()->update();
}

void PlanGantt::zoomBy(double factor, double anchor) {
    if (extent() <= 0) return;
    const double t = timeAt(anchor);
    setPixelsPerSecond(pixels_per_second_ * factor);
    fitted_ = pixels_per_second_ <= fitPixelsPerSecond();
    updateScrollBars();
    horizontalScrollBar()->setValue(static_cast<int>(std::lround(t * pixels_per_second_ - (anchor - plotLeft()))));
    viewport()->update();
}

void PlanGantt::updateScrollBars() {
    const int content = static_cast<int>(std::ceil(extent() * pixels_per_second_));
    horizontalScrollBar()->setRange(0, std::max(0, content - plotWidth()));
    horizontalScrollBar()->setPageStep(plotWidth());
    horizontalScrollBar()->setSingleStep(std::max(1, plotWidth() / 20));
    const int rows = rowCount() * kRow;
    const int room = std::max(0, viewport()->height() - kAxis);
    verticalScrollBar()->setRange(0, std::max(0, rows - room));
    verticalScrollBar()->setPageStep(room);
    verticalScrollBar()->setSingleStep(kRow);
}

QRectF PlanGantt::laneRect(int row, int lane) const {
    const double top = kAxis + row * kRow - verticalScrollBar()->value() + kRowPad + lane * (kLane + kLaneGap);
    return QRectF(plotLeft(), top, plotWidth(), kLane);
}

// ---- painting --------------------------------------------------------------------

void PlanGantt::paintEvent(QPaintEvent *event) {
    QPainter p(viewport());
    const QRect dirty = event->rect();
    p.fillRect(dirty, palette().base());
    if (!result_) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(viewport()->rect(), Qt::AlignCenter, tr("Plan the graph to see its steps on each device"));
        return;
    }
    paintRows(p, dirty);
    paintGutter(p, dirty);
    paintAxis(p);
}

void PlanGantt::paintRows(QPainter &p, const QRect &dirty) const {
    const int scroll = verticalScrollBar()->value();
    const int first = std::max(0, (dirty.top() - kAxis + scroll) / kRow);
    const int last = std::min(rowCount() - 1, (dirty.bottom() - kAxis + scroll) / kRow);
    const QColor alternate = palette().color(QPalette::AlternateBase);
    const QRect plot(plotLeft(), kAxis, plotWidth() + 8, viewport()->height() - kAxis);
    p.save();
    p.setClipRect(plot.intersected(dirty));
    for (int r = first; r <= last; ++r) {
        const int top = kAxis + r * kRow - scroll;
        if (r % 2) p.fillRect(QRect(0, top, viewport()->width(), kRow), alternate);
        for (int l = 0; l < 2; ++l) {
            const QRectF lane = laneRect(r, l);
            p.fillRect(lane, QColor(128, 128, 128, 22));
            paintLane(p, rows_[static_cast<size_t>(r)].lanes[static_cast<size_t>(l)], lane);
        }
    }
    p.restore();
}

void PlanGantt::paintLane(QPainter &p, const Lane &lane, const QRectF &rect) const {
    paintBars(p, lane.bars, lane.reach, predictedRect(rect), false);
    if (hasMeasured()) paintBars(p, lane.measured, lane.measured_reach, measuredRect(rect), true);
}

void PlanGantt::paintBars(QPainter &p, const std::vector<Bar> &bars, const std::vector<double> &reach,
                          const QRectF &rect, bool measured) const {
    const double t0 = visibleStart(), t1 = visibleEnd() + 8 / pixels_per_second_;
    const auto first = static_cast<size_t>(std::lower_bound(reach.begin(), reach.end(), t0) - reach.begin());
    const QFontMetricsF metrics(font());
    int last_pixel = std::numeric_limits<int>::min();
    for (size_t i = first; i < bars.size() && bars[i].start <= t1; ++i) {
        const Bar &b = bars[i];
        const plan::Step &s = result_->plan.steps[static_cast<size_t>(b.step)];
        const double x0 = xAt(b.start), x1 = xAt(b.end);
        // A measured bar: the kind's colour, dark, so that it reads as a second series.
        QColor fill = measured ? stepKindColour(s.kind).darker(175) : stepKindColour(s.kind);
        if (b.step == hovered_) fill = fill.lighter(125);
        if (x1 - x0 < 1.0) {
            // Thinner than a pixel: one pixel column per run of such bars.
            const int pixel = static_cast<int>(std::floor(x0));
            if (pixel == last_pixel && b.step != selected_) continue;
            last_pixel = pixel;
            p.fillRect(QRectF(pixel, rect.top(), 1, rect.height()), fill);
        } else {
            const QRectF bar(x0, rect.top(), x1 - x0, rect.height());
            p.fillRect(bar, fill);
            if (bar.width() >= 4 && !measured) {
                p.setPen(QPen(fill.darker(135), 1));
                p.drawRect(bar.adjusted(0.5, 0.5, -0.5, -0.5));
            }
            if (bar.width() > 36 && bar.height() >= 12) {
                p.setPen(Qt::white);
                const QRectF text = bar.adjusted(4, 0, -3, 0).intersected(rect.adjusted(4, 0, 0, 0));
                const QString label =
                    metrics.elidedText(qs(s.shard.empty() ? s.op : s.shard), Qt::ElideRight, text.width());
                p.drawText(text, Qt::AlignVCenter | Qt::AlignLeft, label);
            }
            last_pixel = static_cast<int>(std::floor(x1));
        }
        if (b.step == selected_) {
            p.setPen(QPen(palette().color(QPalette::Text), 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRectF(x0 - 1, rect.top() - 1, std::max(x1 - x0, 1.0) + 2, rect.height() + 2));
        }
    }
}

void PlanGantt::paintGutter(QPainter &p, const QRect &dirty) const {
    const int scroll = verticalScrollBar()->value();
    p.save();
    p.setClipRect(QRect(0, kAxis, kGutter, viewport()->height() - kAxis).intersected(dirty));
    p.fillRect(QRect(0, kAxis, kGutter, viewport()->height() - kAxis), palette().window());
    QFont bold = font();
    bold.setBold(true);
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() - 1.5));
    const int first = std::max(0, (dirty.top() - kAxis + scroll) / kRow);
    const int last = std::min(rowCount() - 1, (dirty.bottom() - kAxis + scroll) / kRow);
    for (int r = first; r <= last; ++r) {
        const int top = kAxis + r * kRow - scroll;
        p.fillRect(QRect(0, top + 3, 5, kRow - 6), deviceColour(r));
        p.setPen(palette().color(QPalette::WindowText));
        p.setFont(bold);
        p.drawText(QRect(10, top, 40, kRow), Qt::AlignVCenter | Qt::AlignLeft,
                   qs(result_->plan.devices[static_cast<size_t>(r)].name));
        p.setFont(small);
        p.setPen(palette().color(QPalette::PlaceholderText));
        for (int l = 0; l < 2; ++l) {
            const QRectF lane = laneRect(r, l);
            p.drawText(QRectF(48, lane.top(), kGutter - 52, lane.height()), Qt::AlignVCenter | Qt::AlignRight,
                       l == 0 ? tr("compute") : tr("comm."));
        }
    }
    p.setPen(palette().color(QPalette::Mid));
    p.drawLine(kGutter - 1, kAxis, kGutter - 1, viewport()->height());
    p.restore();
}

void PlanGantt::paintAxis(QPainter &p) const {
    p.save();
    p.fillRect(QRect(0, 0, viewport()->width(), kAxis), palette().window());
    // The legend: one swatch per step kind, and what the times are.
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() - 1));
    p.setFont(small);
    const QFontMetrics metrics(small);
    int x = 8;
    for (plan::StepKind k :
         {plan::StepKind::kernel, plan::StepKind::copy, plan::StepKind::send_recv, plan::StepKind::collective}) {
        p.fillRect(QRect(x, 5, 10, 10), stepKindColour(k));
        x += 14;
        p.setPen(palette().color(QPalette::WindowText));
        const QString name = stepKindTitle(k);
        p.drawText(QRect(x, 0, metrics.horizontalAdvance(name) + 2, kLegend), Qt::AlignVCenter, name);
        x += metrics.horizontalAdvance(name) + 14;
    }
    QString what = tr("predicted time · makespan %1").arg(secondsText(makespan_));
    if (hasMeasured()) {
        // The measured bars' swatch: a dark strip under a predicted bar, as the lanes draw them.
        p.fillRect(QRect(x, 5, 10, 6), stepKindColour(plan::StepKind::kernel));
        p.fillRect(QRect(x, 12, 10, 3), stepKindColour(plan::StepKind::kernel).darker(175));
        x += 14;
        p.setPen(palette().color(QPalette::WindowText));
        const QString name = tr("measured");
        p.drawText(QRect(x, 0, metrics.horizontalAdvance(name) + 2, kLegend), Qt::AlignVCenter, name);
        x += metrics.horizontalAdvance(name) + 14;
        what = tr("predicted %1 · measured %2").arg(secondsText(makespan_), secondsText(measured_end_));
    }
    p.setPen(palette().color(QPalette::PlaceholderText));
    const QRect room(x, 0, viewport()->width() - x - 8, kLegend);
    p.drawText(room, Qt::AlignVCenter | Qt::AlignRight, metrics.elidedText(what, Qt::ElideLeft, room.width()));
    // Ticks every 1, 2 or 5 × 10^k seconds, about 90 pixels apart.
    const double step = niceStep(90.0 / pixels_per_second_);
    const double t0 = visibleStart(), t1 = visibleEnd();
    p.setClipRect(QRect(plotLeft() - 30, 0, viewport()->width() - plotLeft() + 30, viewport()->height()));
    for (double t = std::ceil(t0 / step) * step; t <= t1 + step * 1e-6; t += step) {
        const double tx = xAt(t);
        p.setPen(QColor(128, 128, 128, 45));
        p.drawLine(QPointF(tx, kAxis), QPointF(tx, viewport()->height()));
        p.setPen(palette().color(QPalette::Mid));
        p.drawLine(QPointF(tx, kAxis - 5), QPointF(tx, kAxis));
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRectF(tx - 45, kLegend, 90, kAxis - kLegend - 5), Qt::AlignCenter, tickText(t, step));
    }
    p.setClipping(false);
    p.setPen(palette().color(QPalette::Mid));
    p.drawLine(0, kAxis - 1, viewport()->width(), kAxis - 1);
    p.restore();
}

// ---- interaction -----------------------------------------------------------------

void PlanGantt::resizeEvent(QResizeEvent *event) {
    QAbstractScrollArea::resizeEvent(event);
    if (fitted_)
        fit();
    else
        updateScrollBars();
}

void PlanGantt::scrollContentsBy(int, int) {
    viewport()->update();
}

void PlanGantt::wheelEvent(QWheelEvent *event) {
    if (!result_) return;
    const QPoint delta = event->angleDelta();
    if (event->modifiers() & Qt::ShiftModifier) {
        verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y() - delta.x());
    } else if (delta.y() != 0) {
        zoomBy(std::pow(1.0015, delta.y()), event->position().x());
    } else {
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
    }
    event->accept();
}

void PlanGantt::mousePressEvent(QMouseEvent *event) {
    if (event->button() != Qt::LeftButton) return QAbstractScrollArea::mousePressEvent(event);
    const int step = stepAt(event->position().toPoint());
    setSelectedStep(step);
    if (step >= 0) emit barClicked(qs(result_->plan.steps[static_cast<size_t>(step)].op), step);
    event->accept();
}

void PlanGantt::mouseDoubleClickEvent(QMouseEvent *event) {
    if (stepAt(event->position().toPoint()) < 0) fit();
    event->accept();
}

void PlanGantt::mouseMoveEvent(QMouseEvent *event) {
    const int step = stepAt(event->position().toPoint());
    if (step != hovered_) {
        hovered_ = step;
        viewport()->setCursor(step >= 0 ? Qt::PointingHandCursor : Qt::ArrowCursor);
        viewport()->update();
    }
    QAbstractScrollArea::mouseMoveEvent(event);
}

void PlanGantt::leaveEvent(QEvent *event) {
    if (hovered_ >= 0) {
        hovered_ = -1;
        viewport()->update();
    }
    QAbstractScrollArea::leaveEvent(event);
}

void PlanGantt::keyPressEvent(QKeyEvent *event) {
    const double centre = plotLeft() + plotWidth() / 2.0;
    switch (event->key()) {
        case Qt::Key_Plus:
        case Qt::Key_Equal: zoomBy(1.5, centre); break;
        case Qt::Key_Minus: zoomBy(1 / 1.5, centre); break;
        case Qt::Key_F:
        case Qt::Key_Home: fit(); break;
        default: QAbstractScrollArea::keyPressEvent(event); return;
    }
    event->accept();
}

bool PlanGantt::viewportEvent(QEvent *event) {
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const int step = stepAt(help->pos());
        if (step >= 0)
            QToolTip::showText(help->globalPos(), stepToolTip(step), viewport());
        else
            QToolTip::hideText();
        return true;
    }
    return QAbstractScrollArea::viewportEvent(event);
}

}  // namespace tapestry::views
