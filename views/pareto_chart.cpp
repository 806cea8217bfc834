#include "views/pareto_chart.h"

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QRubberBand>
#include <QSignalBlocker>
#include <QSvgGenerator>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>
#include <set>

#include "common/checked_size.h"
#include "plan/planner.h"
#include "views/flow_layout.h"

namespace tapestry::views {

namespace {

constexpr int kHitRadius = 8;                       // pixels around a point that hover and click reach
constexpr int kGridColumns = 160, kGridRows = 100;  // the thinning grid over the visible ranges
constexpr double kConstraintReach = 3.0;            // a constraint within 3× the data stretches the axis to it

// Low (good) to high (costly): every objective is minimised.
const QColor kBinColours[ParetoChart::kColourBins] = {QColor(0x1d, 0x4e, 0xd8), QColor(0x08, 0x91, 0xb2),
                                                      QColor(0x16, 0xa3, 0x4a), QColor(0xd9, 0x77, 0x06),
                                                      QColor(0xdc, 0x26, 0x26)};
const QColor kOffFront(0x94, 0xa3, 0xb8, 120);
const QColor kInfeasible(0xf8, 0x71, 0x71, 120);
const QColor kInk(0x11, 0x18, 0x27);
const QColor kConstraint(0xdc, 0x26, 0x26);


// The unit an axis of figure `o` reads best in at `largest`: (figure → axis factor, unit).
std::pair<double, QString> axisUnit(search::Objective o, double largest) {
    switch (o) {
        case search::Objective::time:
            if (largest >= 1) return {1.0, QStringLiteral("s")};
            if (largest >= 1e-3) return {1e3, QStringLiteral("ms")};
            if (largest >= 1e-6) return {1e6, QStringLiteral("µs")};
            return {1e9, QStringLiteral("ns")};
        case search::Objective::memory:
        case search::Objective::communication: {
            const char *names[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
            int k = 0;
            double scale = 1;
            while (k < 4 && largest >= 1024 * scale) {
                scale *= 1024;
                ++k;
            }
            return {1 / scale, QString::fromLatin1(names[k])};
        }
        case search::Objective::devices: return {1.0, QString()};
        case search::Objective::energy:
            if (largest >= 1) return {1.0, QStringLiteral("J")};
            if (largest >= 1e-3) return {1e3, QStringLiteral("mJ")};
            return {1e6, QStringLiteral("µJ")};
    }
    return {1.0, QString()};
}

QScatterSeries *scatter(const QString &name, const QColor &fill, double size, const QColor &border = Qt::transparent) {
    auto *s = new QScatterSeries;
    s->setName(name);
    s->setMarkerSize(size);
    s->setColor(fill);
    s->setBorderColor(border);
    return s;
}

QLineSeries *line(const QString &name, const QColor &colour, double width, Qt::PenStyle style) {
    auto *s = new QLineSeries;
    s->setName(name);
    QPen pen(colour, width, style);
    pen.setCosmetic(true);
    s->setPen(pen);
    return s;
}

// The key's name of colour bin `b`: its value ("4", "84.5 MiB") or its range.
QString binName(search::Objective o, bool by_value, const std::vector<double> &levels, double lo, double hi, int b) {
    if (by_value)
        return b < static_cast<int>(levels.size()) ? figureText(o, levels[static_cast<size_t>(b)]) : QString();
    const double step = (hi - lo) / ParetoChart::kColourBins;
    return ParetoChart::tr("%1–%2").arg(figureText(o, lo + step * b), figureText(o, lo + step * (b + 1)));
}

// A coloured glyph of the key.
QString swatch(const QColor &colour, const QString &glyph) {
    return QStringLiteral("<span style=\"color:%1\">%2</span>").arg(colour.name(QColor::HexRgb), glyph);
}

}  // namespace

QString figureText(search::Objective o, double value) {
    return QString::fromStdString(search::figure_text(o, value));
}

QString objectiveTitle(search::Objective o) {
    switch (o) {
        case search::Objective::time: return ParetoChart::tr("step time");
        case search::Objective::memory: return ParetoChart::tr("peak memory per device");
        case search::Objective::devices: return ParetoChart::tr("devices");
        case search::Objective::communication: return ParetoChart::tr("communication");
        case search::Objective::energy: return ParetoChart::tr("energy per step");
    }
    return {};
}

// ---- the view: clicks, hover, rubber-band zoom ------------------------------------------------

class ParetoChart::View : public QChartView {
public:
    View(QChart *chart, ParetoChart *owner) : QChartView(chart, owner), owner_(owner) {
        setRubberBand(QChartView::RectangleRubberBand);
        setMouseTracking(true);
        setRenderHint(QPainter::Antialiasing);
    }

protected:
    void mousePressEvent(QMouseEvent *event) override {
        press_ = event->pos();
        QChartView::mousePressEvent(event);
    }
    void mouseMoveEvent(QMouseEvent *event) override {
        if (event->buttons() == Qt::NoButton) owner_->onViewHovered(event->pos(), event->globalPosition().toPoint());
        QChartView::mouseMoveEvent(event);
    }
    void mouseReleaseEvent(QMouseEvent *event) override {
        if (event->button() == Qt::LeftButton && (event->pos() - press_).manhattanLength() < 4) {
            // A click, not a drag: it selects; the rubber band it opened goes.
            if (auto *band = findChild<QRubberBand *>()) band->hide();
            owner_->onViewClicked(event->pos(), event->modifiers());
            event->accept();
            return;
        }
        if (event->button() == Qt::RightButton) {
            owner_->resetZoom();
            event->accept();
            return;
        }
        const bool zoom = event->button() == Qt::LeftButton;
        QChartView::mouseReleaseEvent(event);
        if (zoom) owner_->afterZoom();
    }
    void mouseDoubleClickEvent(QMouseEvent *event) override {
        owner_->resetZoom();
        event->accept();
    }

private:
    ParetoChart *owner_;
    QPoint press_;
};

// ---- construction ------------------------------------------------------------------------------

ParetoChart::ParetoChart(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("paretoChart"));
    auto *column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(2);
    createControls();
    // The axis choices wrap when the chart is narrow (the dock beside another).
    auto *row = new FlowLayout(nullptr, 10, 2);
    for (const auto &[label, box] : {std::pair{tr("X"), x_box_}, {tr("Y"), y_box_}, {tr("Colour"), colour_box_}}) {
        auto *group = new QWidget(this);
        auto *line = new QHBoxLayout(group);
        line->setContentsMargins(0, 0, 0, 0);
        line->setSpacing(4);
        line->addWidget(new QLabel(label, group));
        line->addWidget(box);
        row->addWidget(group);
    }
    column->addLayout(row);
    key_ = new QLabel(this);
    key_->setObjectName(QStringLiteral("paretoKey"));
    key_->setTextFormat(Qt::RichText);
    key_->setWordWrap(true);
    key_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    column->addWidget(key_);

    chart_ = new QChart;
    chart_->setMargins(QMargins(4, 4, 4, 4));
    chart_->setBackgroundRoundness(0);
    chart_->legend()->hide();  // the key above the chart says it in less room
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() - 1));
    x_axis_ = new QValueAxis(chart_);
    y_axis_ = new QValueAxis(chart_);
    for (QValueAxis *axis : {x_axis_, y_axis_}) {
        axis->setLabelsFont(small);
        axis->setTitleFont(small);
        axis->setTickCount(6);
        axis->setLabelFormat(QStringLiteral("%.4g"));
        // A rubber-band zoom changes the ranges: the thinning follows what is visible.
        connect(axis, &QValueAxis::rangeChanged, this, [this] {
            if (zoomed_) scheduleRedraw();
        });
    }
    chart_->addAxis(x_axis_, Qt::AlignBottom);
    chart_->addAxis(y_axis_, Qt::AlignLeft);
    createSeries();
    view_ = new View(chart_, this);
    view_->setObjectName(QStringLiteral("paretoChartView"));
    view_->setMinimumSize(320, 200);
    view_->setToolTip(
        tr("Drag to zoom; right click or double click to reset. Click a point to open its plan, "
           "Ctrl+click a second one to compare."));
    column->addWidget(view_, 1);
    reset({search::Objective::time, search::Objective::memory, search::Objective::devices});
}

void ParetoChart::createControls() {
    x_box_ = new QComboBox(this);
    x_box_->setObjectName(QStringLiteral("paretoX"));
    y_box_ = new QComboBox(this);
    y_box_->setObjectName(QStringLiteral("paretoY"));
    colour_box_ = new QComboBox(this);
    colour_box_->setObjectName(QStringLiteral("paretoColour"));
    colour_box_->addItem(tr("none"), -1);
    for (search::Objective o : search::all_objectives())
        for (QComboBox *box : {x_box_, y_box_, colour_box_}) box->addItem(objectiveTitle(o), static_cast<int>(o));
    for (QComboBox *box : {x_box_, y_box_, colour_box_}) {
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(9);
        connect(box, &QComboBox::activated, this, &ParetoChart::onAxisChosen);
    }
}

void ParetoChart::createSeries() {
    off_front_ = scatter(tr("dominated"), kOffFront, 6);
    infeasible_ = scatter(tr("over a constraint"), kInfeasible, 6);
    front_line_ = line(tr("front"), QColor(0x1e, 0x3a, 0x8a), 1.5, Qt::SolidLine);
    for (int b = 0; b < kColourBins; ++b) front_bins_.push_back(scatter(QString(), kBinColours[b], 10, Qt::white));
    memory_cap_ = line(tr("memory cap"), kConstraint, 1.5, Qt::DashLine);
    max_time_ = line(tr("max step time"), kConstraint, 1.5, Qt::DotLine);
    for (int b = 0; b < 4; ++b) {
        QScatterSeries *s = scatter(tr("hand baselines"), Qt::white, 11, kInk);
        s->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
        s->setPointLabelsVisible(true);
        s->setPointLabelsColor(kInk);
        s->setPointLabelsClipping(false);
        baseline_series_.push_back(s);
    }
    selected_a_ = scatter(QStringLiteral("A"), Qt::transparent, 20, kInk);
    selected_b_ = scatter(QStringLiteral("B"), Qt::transparent, 20, kInk);
    for (QScatterSeries *s : {selected_a_, selected_b_}) {
        QPen pen(kInk, 2);
        s->setPen(pen);
        s->setPointLabelsVisible(true);
        s->setPointLabelsFormat(s->name());
        s->setPointLabelsColor(kInk);
    }
    std::vector<QXYSeries *> all{off_front_, infeasible_, front_line_, memory_cap_, max_time_};
    all.insert(all.end(), front_bins_.begin(), front_bins_.end());
    all.insert(all.end(), baseline_series_.begin(), baseline_series_.end());
    all.insert(all.end(), {selected_a_, selected_b_});
    for (QXYSeries *s : all) {
        chart_->addSeries(s);
        s->attachAxis(x_axis_);
        s->attachAxis(y_axis_);
    }
}

// ---- data ---------------------------------------------------------------------------------------

void ParetoChart::reset(const std::vector<search::Objective> &objectives) {
    points_.clear();
    index_of_.clear();
    front_.clear();
    baselines_.clear();
    selection_.clear();
    drawn_.clear();
    zoomed_ = false;
    const search::Objective x = objectives.empty() ? search::Objective::time : objectives[0];
    search::Objective y = objectives.size() > 1 ? objectives[1] : search::Objective::memory;
    if (y == x) y = x == search::Objective::time ? search::Objective::memory : search::Objective::time;
    std::optional<search::Objective> colour;
    if (objectives.size() > 2) colour = objectives[2];
    setAxes(x, y, colour);
}

void ParetoChart::addPoints(const std::vector<ParetoPoint> &points) {
    for (const ParetoPoint &p : points) {
        if (index_of_.contains(p.key)) continue;
        index_of_.insert(p.key, static_cast<int>(points_.size()));
        points_.push_back(p);
    }
    if (!points.empty()) scheduleRedraw();
}

void ParetoChart::setFront(const QStringList &keys) {
    front_.clear();
    for (const QString &k : keys)
        if (index_of_.contains(k)) front_ << k;
    scheduleRedraw();
}

void ParetoChart::setBaselines(const std::vector<BaselinePoint> &baselines) {
    baselines_ = baselines;
    scheduleRedraw();
}

void ParetoChart::setConstraints(const search::Constraints &constraints) {
    constraints_ = constraints;
    scheduleRedraw();
}

void ParetoChart::setAxes(search::Objective x, search::Objective y, std::optional<search::Objective> colour) {
    x_ = x;
    y_ = y;
    colour_ = colour;
    const QSignalBlocker bx(x_box_), by(y_box_), bc(colour_box_);
    x_box_->setCurrentIndex(x_box_->findData(static_cast<int>(x)));
    y_box_->setCurrentIndex(y_box_->findData(static_cast<int>(y)));
    colour_box_->setCurrentIndex(colour_box_->findData(colour ? static_cast<int>(*colour) : -1));
    zoomed_ = false;
    scheduleRedraw();
}

void ParetoChart::onAxisChosen() {
    const int colour = colour_box_->currentData().toInt();
    setAxes(static_cast<search::Objective>(x_box_->currentData().toInt()),
            static_cast<search::Objective>(y_box_->currentData().toInt()),
            colour < 0 ? std::nullopt : std::optional<search::Objective>(static_cast<search::Objective>(colour)));
}

const ParetoPoint *ParetoChart::point(const QString &key) const {
    const auto it = index_of_.constFind(key);
    return it == index_of_.cend() ? nullptr : &points_[static_cast<size_t>(*it)];
}

std::vector<const ParetoPoint *> ParetoChart::frontPoints() const {
    std::vector<const ParetoPoint *> out;
    for (const QString &k : front_) out.push_back(point(k));
    return out;
}

// ---- selection ----------------------------------------------------------------------------------

bool ParetoChart::selectPoint(const QString &key, bool add) {
    if (!point(key)) return false;
    if (!add) selection_.clear();
    selection_.removeAll(key);
    selection_ << key;
    while (selection_.size() > 2) selection_.removeFirst();
    drawSelection();
    emit selectionChanged(selection_);
    return true;
}

void ParetoChart::clearSelection() {
    selection_.clear();
    drawSelection();
    emit selectionChanged(selection_);
}

QString ParetoChart::toolTipFor(const QString &key) const {
    const ParetoPoint *p = point(key);
    if (!p) return {};
    const search::Figures &f = p->figures;
    QString text = p->brief() + QLatin1Char('\n');
    text += tr("step time %1 · peak memory %2 · %3 device(s) · communication %4")
                .arg(figureText(search::Objective::time, f.makespan), figureText(search::Objective::memory, f.peak))
                .arg(f.devices)
                .arg(figureText(search::Objective::communication, f.comm_bytes));
    text += QLatin1Char('\n') + tr("predictions of the cost model, not measurements");
    text += QLatin1Char('\n') + (front_.contains(key) ? tr("on the front") : tr("dominated")) +
            tr(" · generation %1, made by %2").arg(p->generation).arg(p->mutator);
    if (f.violation > 0)
        text += QLatin1Char('\n') + tr("over a constraint: %1").arg(QString::fromStdString(f.violated));
    return text;
}

// ---- drawing ------------------------------------------------------------------------------------

void ParetoChart::scheduleRedraw() {
    if (redraw_pending_) return;
    redraw_pending_ = true;
    QTimer::singleShot(0, this, &ParetoChart::redrawNow);
}

void ParetoChart::redrawNow() {
    if (!redraw_pending_) return;
    redraw_pending_ = false;
    redraw();
}

void ParetoChart::redraw() {
    if (!zoomed_) fitAxes();
    drawn_.clear();
    drawFront();
    drawOffFront();
    drawBaselines();
    drawConstraints();
    drawSelection();
    updateKey();
}

QPointF ParetoChart::valueOf(const search::Figures &f) const {
    return {search::figure_of(f, x_) * x_scale_, search::figure_of(f, y_) * y_scale_};
}

void ParetoChart::updateKey() {
    QStringList key;
    QStringList bins;
    for (QScatterSeries *s : front_bins_)
        if (s->count() > 0) bins << swatch(s->color(), QStringLiteral("●")) + QLatin1Char(' ') + s->name();
    if (!bins.isEmpty())
        key << (colour_ ? tr("front by %1: ").arg(objectiveTitle(*colour_)) : QString()) +
                   bins.join(QStringLiteral("&nbsp; "));
    // An entry of the key: a glyph and its words, never broken between lines.
    auto entry = [](const QColor &colour, const QString &glyph, const QString &words) {
        return swatch(colour, glyph) + QStringLiteral("&nbsp;") +
               QString(words).replace(QLatin1Char(' '), QStringLiteral("&nbsp;"));
    };
    if (front_line_->count() > 1) key << entry(front_line_->color(), QStringLiteral("━"), tr("staircase"));
    if (off_front_->count() > 0) key << entry(kOffFront, QStringLiteral("●"), tr("dominated"));
    if (infeasible_->count() > 0) key << entry(kInfeasible, QStringLiteral("●"), tr("over a constraint"));
    if (baseline_series_.front()->count() > 0) key << entry(kInk, QStringLiteral("□"), tr("hand baselines"));
    key << constraint_keys_;
    key_->setText(key.join(QStringLiteral(" &nbsp;·&nbsp; ")) +
                  QStringLiteral(" &nbsp;·&nbsp; <span style=\"color:#6b7280\">%1</span>").arg(note_.toHtmlEscaped()));
}

void ParetoChart::fitAxes() {
    double max_x = 0, max_y = 0;
    auto grow = [&](const search::Figures &f) {
        max_x = std::max(max_x, search::figure_of(f, x_));
        max_y = std::max(max_y, search::figure_of(f, y_));
    };
    for (const ParetoPoint &p : points_) grow(p.figures);
    for (const BaselinePoint &b : baselines_)
        if (b.refused.isEmpty()) grow(b.figures);
    // A constraint near the data stretches its axis so that its line shows.
    auto reach = [](double &largest, double limit) {
        if (limit > 0 && (largest == 0 || limit <= kConstraintReach * largest)) largest = std::max(largest, limit);
    };
    for (auto [figure, largest] : {std::pair{x_, &max_x}, std::pair{y_, &max_y}}) {
        if (figure == search::Objective::memory) reach(*largest, constraints_.memory_cap);
        if (figure == search::Objective::time) reach(*largest, constraints_.max_time);
    }
    const auto [xs, x_unit] = axisUnit(x_, max_x);
    const auto [ys, y_unit] = axisUnit(y_, max_y);
    x_scale_ = xs;
    y_scale_ = ys;
    auto title = [](search::Objective o, const QString &unit) {
        const QString what = objectiveTitle(o);
        return unit.isEmpty() ? what : tr("%1 (%2, predicted)").arg(what, unit);
    };
    x_axis_->setTitleText(title(x_, x_unit));
    y_axis_->setTitleText(title(y_, y_unit));
    auto top = [](search::Objective o, double largest, double scale) {
        if (o == search::Objective::devices) return std::max(1.0, largest) + 0.5;
        return largest > 0 ? largest * scale * 1.08 : 1.0;
    };
    x_axis_->setRange(0, top(x_, max_x, xs));
    y_axis_->setRange(0, top(y_, max_y, ys));
    for (auto [axis, figure] : {std::pair{x_axis_, x_}, std::pair{y_axis_, y_}}) {
        if (figure == search::Objective::devices) {
            axis->setLabelFormat(QStringLiteral("%.0f"));
            axis->setTickCount(static_cast<int>(std::min(9.0, axis->max() + 0.5)) + 1);
        } else {
            axis->setLabelFormat(QStringLiteral("%.4g"));
            axis->setTickCount(6);
            axis->applyNiceNumbers();  // ticks at 0, 0.2, 0.4 … rather than 0, 0.6821 …
        }
    }
}

void ParetoChart::drawFront() {
    // The front's points by the colour figure: one bin per value when there are few
    // values, else equal ranges.
    std::vector<int> members;
    for (const QString &k : front_) members.push_back(index_of_.value(k));
    std::vector<double> values;
    for (int i : members) values.push_back(colour_ ? search::figure_of(points_[static_cast<size_t>(i)].figures, *colour_) : 0);
    const std::set<double> distinct(values.begin(), values.end());
    const double lo = distinct.empty() ? 0 : *distinct.begin(), hi = distinct.empty() ? 0 : *distinct.rbegin();
    const bool by_value = static_cast<int>(distinct.size()) <= kColourBins;
    const std::vector<double> levels(distinct.begin(), distinct.end());
    auto bin_of = [&](double v) {
        if (!colour_) return 0;
        if (by_value) return static_cast<int>(std::lower_bound(levels.begin(), levels.end(), v) - levels.begin());
        return std::min(kColourBins - 1, static_cast<int>((v - lo) / (hi - lo) * kColourBins));
    };
    std::vector<QList<QPointF>> bins(kColourBins);
    for (size_t m = 0; m < members.size(); ++m) {
        bins[static_cast<size_t>(bin_of(values[m]))] << valueOf(points_[static_cast<size_t>(members[m])].figures);
        drawn_.push_back(members[m]);
    }
    for (int b = 0; b < kColourBins; ++b) {
        QScatterSeries *s = front_bins_[static_cast<size_t>(b)];
        s->replace(bins[static_cast<size_t>(b)]);
        s->setName(colour_ ? binName(*colour_, by_value, levels, lo, hi, b) : tr("front"));
    }
    // The staircase of the front points that no other beats on both axes shown.
    std::vector<QPointF> shown;
    for (int i : members) shown.push_back(valueOf(points_[static_cast<size_t>(i)].figures));
    std::sort(shown.begin(), shown.end(),
              [](const QPointF &a, const QPointF &b) { return a.x() < b.x() || (a.x() == b.x() && a.y() < b.y()); });
    QList<QPointF> steps;
    double best_y = std::numeric_limits<double>::infinity();
    for (const QPointF &p : shown) {
        if (p.y() >= best_y) continue;
        if (!steps.isEmpty()) steps << QPointF(p.x(), best_y);
        steps << p;
        best_y = p.y();
    }
    front_line_->replace(steps);
}

void ParetoChart::drawOffFront() {
    // Off the front: every point while there are few; else the first of each cell
    // of a grid over the visible ranges (zooming in shows more of them).
    std::vector<int> off;
    const std::set<QString> on(front_.begin(), front_.end());
    for (int i = 0; i < static_cast<int>(points_.size()); ++i)
        if (!on.count(points_[static_cast<size_t>(i)].key)) off.push_back(i);
    std::vector<int> kept;
    if (static_cast<int>(off.size()) <= kMaxOffFrontDrawn) {
        kept = off;
    } else {
        const double x0 = x_axis_->min(), y0 = y_axis_->min();
        const double dx = (x_axis_->max() - x0) / kGridColumns, dy = (y_axis_->max() - y0) / kGridRows;
        std::set<std::pair<int, int>> taken;
        for (int i : off) {
            const QPointF v = valueOf(points_[static_cast<size_t>(i)].figures);
            const double cx = (v.x() - x0) / dx, cy = (v.y() - y0) / dy;
            if (cx < 0 || cy < 0 || cx >= kGridColumns || cy >= kGridRows) continue;  // out of view
            if (taken.insert({static_cast<int>(cx), static_cast<int>(cy)}).second) kept.push_back(i);
        }
        if (static_cast<int>(kept.size()) > kMaxOffFrontDrawn) {
            std::vector<int> every;
            const double step = static_cast<double>(kept.size()) / kMaxOffFrontDrawn;
            for (int k = 0; k < kMaxOffFrontDrawn; ++k) every.push_back(kept[static_cast<size_t>(k * step)]);
            kept.swap(every);
        }
    }
    QList<QPointF> feasible, over;
    for (int i : kept) {
        const search::Figures &f = points_[static_cast<size_t>(i)].figures;
        (f.violation > 0 ? over : feasible) << valueOf(f);
        drawn_.push_back(i);
    }
    off_front_->replace(feasible);
    infeasible_->replace(over);
    QString note = tr("%1 plans · front %2").arg(points_.size()).arg(front_.size());
    if (kept.size() < off.size()) note += tr(" · %1 of %2 other plans drawn").arg(kept.size()).arg(off.size());
    note_ = note;
}

void ParetoChart::drawBaselines() {
    for (size_t b = 0; b < baseline_series_.size(); ++b) {
        QScatterSeries *s = baseline_series_[b];
        QList<QPointF> at;
        if (b < baselines_.size() && baselines_[b].refused.isEmpty()) {
            at << valueOf(baselines_[b].figures);
            s->setPointLabelsFormat(baselines_[b].name);
        }
        s->replace(at);
    }
}

void ParetoChart::drawConstraints() {
    // A line across the whole axis (and beyond, so that zooming keeps it).
    const double x_span = x_axis_->max() - x_axis_->min(), y_span = y_axis_->max() - y_axis_->min();
    auto draw = [&](QLineSeries *s, search::Objective figure, double limit, const QString &name) {
        QList<QPointF> at;
        if (limit > 0 && figure == x_)
            at = {QPointF(limit * x_scale_, y_axis_->min() - y_span),
                  QPointF(limit * x_scale_, y_axis_->max() + y_span)};
        else if (limit > 0 && figure == y_)
            at = {QPointF(x_axis_->min() - x_span, limit * y_scale_),
                  QPointF(x_axis_->max() + x_span, limit * y_scale_)};
        s->replace(at);
        s->setName(name.arg(figureText(figure, limit)));
        // A limit beyond the axis (the target's 80 GB over plans of 100 MiB) is said, not drawn.
        const QValueAxis *axis = figure == x_ ? x_axis_ : y_axis_;
        const double v = limit * (figure == x_ ? x_scale_ : y_scale_);
        const bool visible = !at.isEmpty() && v >= axis->min() && v <= axis->max();
        if (visible)
            constraint_keys_ << swatch(kConstraint, QStringLiteral("┅")) + QStringLiteral("&nbsp;") +
                                    s->name().replace(QLatin1Char(' '), QStringLiteral("&nbsp;"));
        if (!at.isEmpty() && !visible) note_ += tr(" · %1: off the chart").arg(s->name());
    };
    constraint_keys_.clear();
    draw(memory_cap_, search::Objective::memory, constraints_.memory_cap, tr("memory cap %1"));
    draw(max_time_, search::Objective::time, constraints_.max_time, tr("max step time %1"));
}

void ParetoChart::drawSelection() {
    for (int k = 0; k < 2; ++k) {
        QScatterSeries *s = k == 0 ? selected_a_ : selected_b_;
        QList<QPointF> at;
        if (k < selection_.size())
            if (const ParetoPoint *p = point(selection_[k])) at << valueOf(p->figures);
        s->replace(at);
    }
    // One selection needs no letter; two are A and B (as Compare names them).
    selected_a_->setPointLabelsVisible(selection_.size() == 2);
}

// ---- hit tests, zoom, export ----------------------------------------------------------------------

QPoint ParetoChart::viewPosition(const QString &key) {
    redrawNow();
    const ParetoPoint *p = point(key);
    if (!p) return {};
    const QPointF in_chart = chart_->mapToPosition(valueOf(p->figures), off_front_);
    return view_->mapFromScene(chart_->mapToScene(in_chart));
}

QString ParetoChart::keyAt(const QPoint &view_position) {
    redrawNow();
    QString best;
    double best_distance = kHitRadius;
    // Front points were drawn first: on a tie the front's point wins.
    for (int i : drawn_) {
        const ParetoPoint &p = points_[static_cast<size_t>(i)];
        const QPointF in_chart = chart_->mapToPosition(valueOf(p.figures), off_front_);
        const QPointF at = view_->mapFromScene(chart_->mapToScene(in_chart));
        const double d = std::hypot(at.x() - view_position.x(), at.y() - view_position.y());
        if (d < best_distance) {
            best_distance = d;
            best = p.key;
        }
    }
    return best;
}

void ParetoChart::onViewClicked(const QPoint &position, Qt::KeyboardModifiers modifiers) {
    const QString key = keyAt(position);
    if (key.isEmpty()) return;
    const bool add = modifiers & (Qt::ControlModifier | Qt::ShiftModifier);
    selectPoint(key, add);
    emit pointClicked(key, add);
}

void ParetoChart::onViewHovered(const QPoint &position, const QPoint &global) {
    const QString key = keyAt(position);
    if (!key.isEmpty()) {
        QToolTip::showText(global, toolTipFor(key), view_);
        return;
    }
    for (const BaselinePoint &b : baselines_) {
        if (!b.refused.isEmpty()) continue;
        const QPointF at =
            view_->mapFromScene(chart_->mapToScene(chart_->mapToPosition(valueOf(b.figures), off_front_)));
        if (std::hypot(at.x() - position.x(), at.y() - position.y()) >= kHitRadius) continue;
        QToolTip::showText(global,
                           tr("%1 (hand baseline)\nstep time %2 · peak memory %3 · %4 device(s)\n"
                              "predictions of the cost model, not measurements")
                               .arg(b.name, figureText(search::Objective::time, b.figures.makespan),
                                    figureText(search::Objective::memory, b.figures.peak))
                               .arg(b.figures.devices),
                           view_);
        return;
    }
    QToolTip::hideText();
}

void ParetoChart::zoomTo(const QRectF &plot_rect) {
    redrawNow();
    chart_->zoomIn(plot_rect);
    afterZoom();
}

void ParetoChart::afterZoom() {
    zoomed_ = true;
    // Round ticks again, and no negative figures: every figure is ≥ 0.
    for (QValueAxis *axis : {x_axis_, y_axis_}) {
        if (axis->min() < 0) axis->setMin(0);
        if (axis->labelFormat() != QLatin1String("%.0f")) axis->applyNiceNumbers();
    }
}

void ParetoChart::resetZoom() {
    zoomed_ = false;
    chart_->zoomReset();
    redraw_pending_ = true;
    redrawNow();
}

QChartView *ParetoChart::chartView() const {
    return view_;
}

int ParetoChart::frontPointsDrawn() const {
    int n = 0;
    for (QScatterSeries *s : front_bins_) n += static_cast<int>(s->count());
    return n;
}

int ParetoChart::offFrontDrawn() const {
    return static_cast<int>(off_front_->count() + infeasible_->count());
}

QString ParetoChart::savePng(const QString &path) {
    redrawNow();
    const QPixmap image = view_->grab();
    if (image.isNull() || !image.save(path, "PNG")) return tr("could not write %1").arg(path);
    return {};
}

QString ParetoChart::saveSvg(const QString &path) {
    redrawNow();
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(view_->size());
    svg.setViewBox(QRect(QPoint(0, 0), view_->size()));
    svg.setTitle(tr("Pareto front"));
    svg.setDescription(tr("Plans of a Tapestry search; every figure a prediction of the cost model"));
    QPainter painter;
    if (!painter.begin(&svg)) return tr("could not write %1").arg(path);
    view_->render(&painter);
    painter.end();
    if (QFileInfo(path).size() == 0) return tr("could not write %1").arg(path);
    return {};
}

}  // namespace tapestry::views
