#include "views/launch_scatter.h"

#include <QLabel>
#include <QList>
#include <QPointF>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <algorithm>
#include <cmath>

#include "launch/accuracy.h"
#include "views/plan_gantt.h"

namespace tapestry::views {

namespace {

constexpr plan::StepKind kKinds[] = {plan::StepKind::kernel, plan::StepKind::copy, plan::StepKind::send_recv,
                                     plan::StepKind::collective};

int kindIndex(plan::StepKind kind) {
    return static_cast<int>(kind);
}

}  // namespace

LaunchScatter::LaunchScatter(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("launchScatter"));
    auto *column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(2);

    chart_ = new QChart;
    chart_->setMargins(QMargins(4, 4, 4, 4));
    chart_->setBackgroundRoundness(0);
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() - 1));
    QFont title = font();
    title.setBold(true);
    chart_->setTitleFont(title);
    chart_->legend()->setAlignment(Qt::AlignBottom);
    chart_->legend()->setFont(small);
    x_axis_ = new QLogValueAxis(chart_);
    y_axis_ = new QLogValueAxis(chart_);
    for (QLogValueAxis *axis : {x_axis_, y_axis_}) {
        axis->setBase(10);
        axis->setLabelFormat(QStringLiteral("%.0e"));
        axis->setLabelsFont(small);
        axis->setTitleFont(small);
        axis->setMinorTickCount(-1);
    }
    x_axis_->setTitleText(tr("predicted step time (s) — prediction"));
    y_axis_->setTitleText(tr("measured step time (s) — measured"));
    chart_->addAxis(x_axis_, Qt::AlignBottom);
    chart_->addAxis(y_axis_, Qt::AlignLeft);

    diagonal_ = new QLineSeries(chart_);
    diagonal_->setName(tr("measured = predicted"));
    QPen dashed(palette().color(QPalette::Mid), 1, Qt::DashLine);
    diagonal_->setPen(dashed);
    chart_->addSeries(diagonal_);
    diagonal_->attachAxis(x_axis_);
    diagonal_->attachAxis(y_axis_);
    // Named in the note below the chart: the legend keeps to the step kinds.
    for (QLegendMarker *marker : chart_->legend()->markers(diagonal_)) marker->setVisible(false);
    for (plan::StepKind kind : kKinds) {
        auto *s = new QScatterSeries(chart_);
        s->setName(stepKindTitle(kind));
        s->setMarkerSize(7);
        s->setColor(stepKindColour(kind));
        s->setBorderColor(stepKindColour(kind).darker(140));
        chart_->addSeries(s);
        s->attachAxis(x_axis_);
        s->attachAxis(y_axis_);
        series_[static_cast<size_t>(kindIndex(kind))] = s;
    }
    view_ = new QChartView(chart_, this);
    view_->setObjectName(QStringLiteral("launchScatterView"));
    view_->setRenderHint(QPainter::Antialiasing);
    view_->setMinimumSize(260, 180);
    column->addWidget(view_, 1);
    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("launchScatterNote"));
    note_->setWordWrap(true);
    note_->setForegroundRole(QPalette::PlaceholderText);
    column->addWidget(note_);
    clear();
}

void LaunchScatter::clear() {
    for (QScatterSeries *s : series_) s->clear();
    diagonal_->clear();
    omitted_ = 0;
    median_error_ = tau_ = 0;
    chart_->setTitle(tr("Launch a plan to compare its predicted and measured step times"));
    note_->clear();
    fitAxes(1e-6, 1e-3);
}

void LaunchScatter::setSteps(const plan::Plan &plan, const std::vector<launch::MeasuredStep> &steps) {
    if (steps.empty()) return clear();
    std::array<QList<QPointF>, 4> points;
    std::vector<double> predicted, measured;
    omitted_ = 0;
    for (const launch::MeasuredStep &m : steps) {
        const double took = m.end - m.start;
        if (m.step < 0 || static_cast<size_t>(m.step) >= plan.steps.size() || m.predicted <= 0 || took <= 0) {
            ++omitted_;
            continue;
        }
        points[static_cast<size_t>(kindIndex(plan.steps[static_cast<size_t>(m.step)].kind))].append(
            QPointF(m.predicted, took));
        predicted.push_back(m.predicted);
        measured.push_back(took);
    }
    // One replace per series: appending point by point redraws per point.
    for (size_t k = 0; k < series_.size(); ++k) series_[k]->replace(points[k]);
    median_error_ = launch::median_relative_error(predicted, measured);
    tau_ = launch::kendall_tau(predicted, measured);
    double low = 1e-6, high = 1e-3;
    if (!predicted.empty()) {
        low = std::min(*std::min_element(predicted.begin(), predicted.end()),
                       *std::min_element(measured.begin(), measured.end()));
        high = std::max(*std::max_element(predicted.begin(), predicted.end()),
                        *std::max_element(measured.begin(), measured.end()));
    }
    fitAxes(low, high);
    diagonal_->replace({QPointF(x_axis_->min(), x_axis_->min()), QPointF(x_axis_->max(), x_axis_->max())});
    chart_->setTitle(tr("Median relative error %1 % · Kendall τ %2")
                         .arg(100 * median_error_, 0, 'f', median_error_ < 0.1 ? 1 : 0)
                         .arg(tau_, 0, 'f', 2));
    note_->setText((predicted.size() == 1 ? tr("1 step, a point") : tr("%1 steps, each a point").arg(predicted.size())) +
                   tr(" at (predicted, measured) time; dashed: measured = predicted") +
                   (omitted_ > 0 ? tr("; %n without a positive time, not drawn", nullptr, omitted_) : QString()));
}

void LaunchScatter::fitAxes(double low, double high) {
    // Whole decades, the same on both axes, so that the diagonal is the diagonal.
    const double from = std::pow(10.0, std::floor(std::log10(low)));
    double to = std::pow(10.0, std::ceil(std::log10(high)));
    if (to <= from) to = from * 10;
    x_axis_->setRange(from, to);
    y_axis_->setRange(from, to);
}

int LaunchScatter::pointCount() const {
    int n = 0;
    for (const QScatterSeries *s : series_) n += static_cast<int>(s->count());
    return n;
}

int LaunchScatter::pointCount(plan::StepKind kind) const {
    return static_cast<int>(series_[static_cast<size_t>(kindIndex(kind))]->count());
}

QString LaunchScatter::titleText() const {
    return chart_->title();
}

}  // namespace tapestry::views
