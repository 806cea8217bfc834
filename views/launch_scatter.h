// The Launch dock's scatter of step times (docs/launch.md, "Accuracy"): a point
// per measured step at (predicted, measured) seconds on log–log axes (Qt Charts),
// coloured by the step's kind, with the diagonal where the two agree; its title
// gives the median relative error and Kendall's τ (launch/accuracy.h) of the
// pairs. Every axis says which figure is a prediction and which a measurement.
#pragma once

#include <QString>
#include <QWidget>
#include <array>
#include <vector>

#include "launch/launch.h"
#include "plan/plan.h"

class QChart;
class QChartView;
class QLabel;
class QLineSeries;
class QLogValueAxis;
class QScatterSeries;

namespace tapestry::views {

class LaunchScatter : public QWidget {
    Q_OBJECT
public:
    explicit LaunchScatter(QWidget *parent = nullptr);

    // Shows the steps of a launch of `plan` (their kinds colour the points); steps
    // whose predicted or measured time is not positive have no place on a log axis
    // and are counted in the note instead. An empty list clears.
    void setSteps(const plan::Plan &plan, const std::vector<launch::MeasuredStep> &steps);
    void clear();

    // ---- what is drawn (tests read these) -----------------------------------------
    int pointCount() const;  // points over every kind's series
    int pointCount(plan::StepKind kind) const;
    int omitted() const { return omitted_; }  // steps without a place on the axes
    double medianRelativeError() const { return median_error_; }
    double kendallTau() const { return tau_; }
    QString titleText() const;  // the chart's title: the two figures
    QChartView *chartView() const { return view_; }

private:
    void fitAxes(double low, double high);

    QChart *chart_ = nullptr;
    QChartView *view_ = nullptr;
    QLabel *note_ = nullptr;
    std::array<QScatterSeries *, 4> series_{};  // kernel, copy, send/recv, collective
    QLineSeries *diagonal_ = nullptr;
    QLogValueAxis *x_axis_ = nullptr;
    QLogValueAxis *y_axis_ = nullptr;
    int omitted_ = 0;
    double median_error_ = 0;
    double tau_ = 0;
};

}  // namespace tapestry::views
