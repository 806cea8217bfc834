// The Plan dock's Gantt chart (issue 15, docs/plans.md): one row per device of a
// plan, each with a compute lane and a communication lane, and a bar per step at
// its predicted start and end, coloured by the step's kind. Hovering a bar names
// its step; clicking one emits its operation; the wheel zooms the time axis about
// the pointer (Shift+wheel scrolls the rows) and Fit (or a double-click) shows the
// whole makespan. Only the bars in view are painted, bars thinner than a pixel
// merged per pixel, so plans of tens of thousands of steps stay responsive.
// After a launch (the Launch dock) each lane also shows the measured steps: a
// thin dark bar under the predicted one, at the step's measured start and end.
#pragma once

#include <QAbstractScrollArea>
#include <QColor>
#include <QRect>
#include <QString>
#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "launch/launch.h"
#include "plan/planner.h"

namespace tapestry::views {

// The colour of device d of a plan, shared by the Gantt, the memory chart, the
// device table and the canvas's device colouring: ten distinct colours, then hues
// spread by the golden angle.
QColor deviceColour(int device);
// The colour of a step kind's bars (kernel, copy, send/recv, collective).
QColor stepKindColour(plan::StepKind kind);
// "kernel", "copy", "send/recv", "collective": as the legend and tooltips say it.
QString stepKindTitle(plan::StepKind kind);

class PlanGantt : public QAbstractScrollArea {
    Q_OBJECT
public:
    explicit PlanGantt(QWidget *parent = nullptr);

    // Shows a plan's steps at their predicted times (fitted); null clears.
    void setPlan(std::shared_ptr<const plan::PlanResult> result);
    void clear() { setPlan(nullptr); }
    bool hasPlan() const { return result_ != nullptr; }

    // ---- what is drawn (tests and the dock read these) ---------------------------
    int rowCount() const { return static_cast<int>(rows_.size()); }  // one per device
    int barCount(int device, plan::Stream lane) const;
    // The step of the index-th bar of a lane (bars in order of start).
    int barStep(int device, plan::Stream lane, int index) const;
    // Where that bar is drawn, in viewport coordinates (at least a pixel wide; may
    // lie outside the viewport when zoomed or scrolled away).
    QRect barRect(int device, plan::Stream lane, int index) const;
    // Where the bars are drawn (right of the device names, below the time axis), in
    // viewport coordinates.
    QRect plotRect() const;
    // The step whose bar is under a viewport point (a couple of pixels' grace), or -1.
    int stepAt(const QPoint &pos) const;
    // The hover text of a step: op, shard, kind, device(s), predicted time (and
    // measured time, after setMeasured), bytes.
    QString stepToolTip(int step) const;

    // ---- what a launch measured (the Launch dock) ---------------------------------
    // Draws each measured step (seconds since the launch started) as a thin bar in
    // the lanes its predicted bar is in, below it; the predicted bars then take the
    // upper part of the lane and the time axis spans both. Steps the plan does not
    // have are ignored; an empty list (or a new plan) removes the measured bars.
    void setMeasured(const std::vector<launch::MeasuredStep> &steps);
    bool hasMeasured() const { return measured_count_ > 0; }
    int measuredBarCount(int device, plan::Stream lane) const;
    int measuredBarStep(int device, plan::Stream lane, int index) const;
    // Where a measured bar is drawn, in viewport coordinates (at least a pixel wide).
    QRect measuredBarRect(int device, plan::Stream lane, int index) const;
    double measuredEnd() const { return measured_end_; }  // the last measured step's end

    // ---- the time axis ------------------------------------------------------------
    // The whole makespan in view.
    void fit();
    // Zooms the time axis by `factor` keeping the time under viewport x `anchor` in place.
    void zoomBy(double factor, double anchor);
    double visibleStart() const;  // seconds at the plot's left edge
    double visibleEnd() const;    // and at its right edge
    double pixelsPerSecond() const { return pixels_per_second_; }

    // The step drawn highlighted (a clicked bar; -1: none).
    int selectedStep() const { return selected_; }
    void setSelectedStep(int step);

signals:
    // A bar was clicked: the step and the graph operation it comes from.
    void barClicked(const QString &op, int step);

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void leaveEvent(QEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    bool viewportEvent(QEvent *event) override;
    void scrollContentsBy(int dx, int dy) override;

private:
    struct Bar {
        double start = 0, end = 0;
        int step = -1;
    };
    // Bars in order of start; reach[i] is the latest end among bars 0..i, so the
    // first bar that may show after time t is found by binary search even where
    // bars of a lane overlap.
    struct Lane {
        std::vector<Bar> bars;
        std::vector<double> reach;
        std::vector<Bar> measured;  // the same, for the steps as a launch measured them
        std::vector<double> measured_reach;
    };
    struct Row {
        std::array<Lane, 2> lanes;  // compute, communication
    };

    int plotLeft() const;
    int plotWidth() const;
    double timeAt(double x) const;
    double xAt(double seconds) const;
    QRectF laneRect(int row, int lane) const;  // full width of the plot, viewport coordinates
    // The parts of a lane the predicted and the measured bars take (all of it for the
    // predicted bars while nothing is measured).
    QRectF predictedRect(const QRectF &lane) const;
    QRectF measuredRect(const QRectF &lane) const;
    double extent() const { return std::max(makespan_, measured_end_); }  // what the time axis spans
    static void sortLane(std::vector<Bar> &bars, std::vector<double> &reach);
    static int nearestBar(const std::vector<Bar> &bars, const std::vector<double> &reach, double t, double grace);
    QRect barRectOf(const Bar &b, const QRectF &part) const;
    void updateScrollBars();
    void setPixelsPerSecond(double pps);
    double fitPixelsPerSecond() const;
    void paintAxis(QPainter &p) const;
    void paintRows(QPainter &p, const QRect &dirty) const;
    void paintLane(QPainter &p, const Lane &lane, const QRectF &rect) const;
    void paintBars(QPainter &p, const std::vector<Bar> &bars, const std::vector<double> &reach, const QRectF &rect,
                   bool measured) const;
    void paintGutter(QPainter &p, const QRect &dirty) const;

    std::shared_ptr<const plan::PlanResult> result_;
    std::vector<Row> rows_;
    double makespan_ = 0;
    double measured_end_ = 0;
    int measured_count_ = 0;
    std::vector<double> measured_start_, measured_finish_;  // per plan step; start < 0: not measured
    double pixels_per_second_ = 1;
    bool fitted_ = true;  // keeps fitting as the widget resizes, until the user zooms
    int selected_ = -1;
    int hovered_ = -1;
};

}  // namespace tapestry::views
