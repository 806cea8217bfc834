// The Plan dock's memory chart (issue 15, docs/cost-model.md): the predicted bytes
// alive on a device over the plan's makespan — resident parameters, inputs and
// outputs, plus the arena buffers alive at each instant — as a step line per
// device (Qt Charts), a dashed line at the target's memory capacity and the peak
// marked. A selector shows one device or all of them (the highest peaks when
// there are many).
#pragma once

#include <QPointF>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

#include "plan/planner.h"

class QChart;
class QChartView;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace tapestry::views {

class MemoryChart : public QWidget {
    Q_OBJECT
public:
    static constexpr int kAllDevices = -1;
    // "All devices" draws at most this many curves: the highest peaks, in device order.
    static constexpr int kMaxCurves = 12;

    explicit MemoryChart(QWidget *parent = nullptr);

    // Shows a plan's memory over time against `capacity_bytes` (a device's memory);
    // null clears. Keeps the device chosen when the new plan has it.
    void setPlan(std::shared_ptr<const plan::PlanResult> result, double capacity_bytes);
    void clear() { setPlan(nullptr, 0); }

    // One device's curve, or kAllDevices.
    void showDevice(int device);
    int shownDevice() const { return device_; }
    // The devices whose curves are drawn.
    const std::vector<int> &devicesDrawn() const { return drawn_; }
    // The highest point of a device's curve as drawn, in bytes; -1 when not drawn.
    std::int64_t drawnPeak(int device) const;
    // The peak marker: (seconds, bytes) of the highest peak drawn, and its device (-1: none).
    QPointF peakMarker() const;
    int peakMarkerDevice() const { return marker_device_; }
    // The capacity line, in bytes (0: none).
    double capacityLine() const;
    // Whether the value axis reaches the capacity (else it fits the curves).
    bool fullScale() const;
    void setFullScale(bool on);

    QComboBox *deviceSelector() const { return selector_; }
    QChartView *chartView() const { return view_; }
    QChart *chart() const { return chart_; }

private:
    void rebuild();
    std::vector<int> devicesToDraw() const;
    void addCurve(int device);
    void addCapacityLine();
    void addPeakMarker();
    void updateAxes();

    std::shared_ptr<const plan::PlanResult> result_;
    double capacity_ = 0;
    int device_ = kAllDevices;
    std::vector<int> drawn_;
    std::vector<QLineSeries *> curves_;  // parallel to drawn_
    QLineSeries *capacity_series_ = nullptr;
    QScatterSeries *peak_series_ = nullptr;
    int marker_device_ = -1;
    double time_scale_ = 1e3;              // seconds → the x axis's unit
    double byte_scale_ = 1.0 / (1 << 20);  // bytes → the y axis's unit (a power of two: exact)
    QChart *chart_ = nullptr;
    QChartView *view_ = nullptr;
    QValueAxis *x_axis_ = nullptr;
    QValueAxis *y_axis_ = nullptr;
    QComboBox *selector_ = nullptr;
    QCheckBox *full_scale_ = nullptr;
    QLabel *note_ = nullptr;
    QString devices_note_;  // which devices "all devices" draws, when not all
};

}  // namespace tapestry::views
