#include "views/memory_chart.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

#include "common/checked_size.h"
#include "views/plan_gantt.h"

namespace tapestry::views {

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

QString bytesText(double bytes) {
    return qs(byte_text(static_cast<std::int64_t>(bytes)));
}

// The unit a time axis reads best in: (seconds → unit factor, name).
std::pair<double, QString> timeUnit(double seconds) {
    if (seconds >= 1) return {1.0, QStringLiteral("s")};
    if (seconds >= 1e-3) return {1e3, QStringLiteral("ms")};
    if (seconds >= 1e-6) return {1e6, QStringLiteral("µs")};
    return {1e9, QStringLiteral("ns")};
}

// A power-of-two byte unit, so that the values drawn are the bytes scaled exactly.
std::pair<double, QString> byteUnit(double bytes) {
    if (bytes >= double(1ull << 30)) return {1.0 / double(1ull << 30), QStringLiteral("GiB")};
    if (bytes >= double(1ull << 20)) return {1.0 / double(1ull << 20), QStringLiteral("MiB")};
    if (bytes >= 1024) return {1.0 / 1024, QStringLiteral("KiB")};
    return {1.0, QStringLiteral("bytes")};
}

}  // namespace

MemoryChart::MemoryChart(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("memoryChart"));
    auto *column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(2);
    auto *row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Memory of"), this));
    selector_ = new QComboBox(this);
    selector_->setObjectName(QStringLiteral("memoryDevice"));
    selector_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    row->addWidget(selector_);
    full_scale_ = new QCheckBox(tr("Scale to capacity"), this);
    full_scale_->setObjectName(QStringLiteral("memoryFullScale"));
    full_scale_->setToolTip(tr("Let the memory axis reach the device's capacity"));
    row->addWidget(full_scale_);
    row->addStretch(1);
    column->addLayout(row);
    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("memoryNote"));
    note_->setWordWrap(true);
    note_->setForegroundRole(QPalette::PlaceholderText);
    column->addWidget(note_);

    chart_ = new QChart;
    chart_->setMargins(QMargins(4, 4, 4, 4));
    chart_->setBackgroundRoundness(0);
    chart_->legend()->setAlignment(Qt::AlignBottom);
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() - 1));
    chart_->legend()->setFont(small);
    x_axis_ = new QValueAxis(chart_);
    y_axis_ = new QValueAxis(chart_);
    for (QValueAxis *axis : {x_axis_, y_axis_}) {
        axis->setLabelsFont(small);
        axis->setTitleFont(small);
        axis->setTickCount(6);
    }
    y_axis_->setLabelFormat(QStringLiteral("%.4g"));
    x_axis_->setLabelFormat(QStringLiteral("%.4g"));
    chart_->addAxis(x_axis_, Qt::AlignBottom);
    chart_->addAxis(y_axis_, Qt::AlignLeft);
    view_ = new QChartView(chart_, this);
    view_->setObjectName(QStringLiteral("memoryChartView"));
    view_->setRenderHint(QPainter::Antialiasing);
    view_->setMinimumSize(240, 150);
    column->addWidget(view_, 1);

    connect(selector_, &QComboBox::activated, this,
            [this](int index) { showDevice(selector_->itemData(index).toInt()); });
    connect(full_scale_, &QCheckBox::toggled, this, [this] { updateAxes(); });
    rebuild();
}

void MemoryChart::setPlan(std::shared_ptr<const plan::PlanResult> result, double capacity_bytes) {
    result_ = std::move(result);
    capacity_ = capacity_bytes;
    const int devices = result_ ? static_cast<int>(result_->plan.devices.size()) : 0;
    if (device_ >= devices) device_ = kAllDevices;
    {
        const QSignalBlocker block(selector_);
        selector_->clear();
        selector_->addItem(tr("all devices"), kAllDevices);
        for (int d = 0; d < devices; ++d) selector_->addItem(qs(result_->plan.devices[static_cast<size_t>(d)].name), d);
        selector_->setCurrentIndex(selector_->findData(device_));
        selector_->setEnabled(devices > 0);
    }
    // Far below the capacity, the curves get the axis; near it, the capacity does.
    const bool near = result_ && capacity_ > 0 && static_cast<double>(result_->prediction.peak) >= 0.25 * capacity_;
    const QSignalBlocker block(full_scale_);
    full_scale_->setChecked(near);
    full_scale_->setEnabled(result_ && capacity_ > 0);
    rebuild();
}

void MemoryChart::showDevice(int device) {
    if (!result_ || device < kAllDevices || device >= static_cast<int>(result_->plan.devices.size()))
        device = kAllDevices;
    device_ = device;
    {
        const QSignalBlocker block(selector_);
        selector_->setCurrentIndex(selector_->findData(device_));
    }
    rebuild();
}

std::vector<int> MemoryChart::devicesToDraw() const {
    std::vector<int> out;
    if (!result_) return out;
    const auto &loads = result_->prediction.devices;
    const int n = static_cast<int>(loads.size());
    if (device_ != kAllDevices) return {device_};
    for (int d = 0; d < n; ++d) out.push_back(d);
    if (n <= kMaxCurves) return out;
    // The highest peaks (the peak device among them), drawn in device order.
    std::stable_sort(out.begin(), out.end(), [&loads](int a, int b) {
        return loads[static_cast<size_t>(a)].peak > loads[static_cast<size_t>(b)].peak;
    });
    out.resize(kMaxCurves);
    std::sort(out.begin(), out.end());
    return out;
}

void MemoryChart::rebuild() {
    chart_->removeAllSeries();  // deletes them
    curves_.clear();
    capacity_series_ = nullptr;
    peak_series_ = nullptr;
    marker_device_ = -1;
    drawn_ = devicesToDraw();
    devices_note_.clear();
    if (!result_) {
        updateAxes();
        return;
    }
    const plan::Prediction &pred = result_->prediction;
    time_scale_ = timeUnit(pred.makespan).first;
    std::int64_t top = 0;
    for (int d : drawn_) {
        const std::int64_t peak = pred.devices[static_cast<size_t>(d)].peak;
        if (marker_device_ < 0 || peak > top) {
            top = peak;
            marker_device_ = d;
        }
    }
    byte_scale_ = byteUnit(std::max(static_cast<double>(top), full_scale_->isChecked() ? capacity_ : 0.0)).first;
    for (int d : drawn_) addCurve(d);
    if (capacity_ > 0) addCapacityLine();
    if (marker_device_ >= 0) addPeakMarker();
    for (QAbstractSeries *s : chart_->series()) {
        s->attachAxis(x_axis_);
        s->attachAxis(y_axis_);
    }
    if (device_ == kAllDevices && drawn_.size() < pred.devices.size())
        devices_note_ = tr("The %1 devices with the highest peaks of %2.").arg(drawn_.size()).arg(pred.devices.size());
    updateAxes();
}

void MemoryChart::addCurve(int device) {
    const plan::Prediction &pred = result_->prediction;
    const plan::DeviceLoad &load = pred.devices[static_cast<size_t>(device)];
    // A step line: each (time, bytes) holds until the next change, to the makespan.
    QList<QPointF> points;
    points.reserve(static_cast<qsizetype>(load.memory.size() * 2 + 1));
    for (size_t i = 0; i < load.memory.size(); ++i) {
        const double x = load.memory[i].first * time_scale_;
        const double y = static_cast<double>(load.memory[i].second) * byte_scale_;
        if (i > 0) points.append(QPointF(x, points.back().y()));
        points.append(QPointF(x, y));
    }
    if (!points.isEmpty()) points.append(QPointF(pred.makespan * time_scale_, points.back().y()));
    auto *curve = new QLineSeries;
    curve->setName(qs(result_->plan.devices[static_cast<size_t>(device)].name));
    curve->setPen(QPen(deviceColour(device), 2));
    curve->replace(points);  // one call: appending point by point redraws per point
    chart_->addSeries(curve);
    curves_.push_back(curve);
}

void MemoryChart::addCapacityLine() {
    const double makespan = result_->prediction.makespan;
    capacity_series_ = new QLineSeries;
    capacity_series_->setName(tr("capacity %1").arg(bytesText(capacity_)));
    capacity_series_->setPen(QPen(QColor(0xdc, 0x26, 0x26), 1.5, Qt::DashLine));
    capacity_series_->replace(
        {QPointF(0, capacity_ * byte_scale_), QPointF(makespan * time_scale_, capacity_ * byte_scale_)});
    chart_->addSeries(capacity_series_);
}

void MemoryChart::addPeakMarker() {
    // At the first instant the device holds its peak.
    const plan::DeviceLoad &load = result_->prediction.devices[static_cast<size_t>(marker_device_)];
    double at = 0;
    for (const auto &[t, bytes] : load.memory)
        if (bytes == load.peak) {
            at = t;
            break;
        }
    peak_series_ = new QScatterSeries;
    peak_series_->setName(tr("peak %1 on %2")
                              .arg(bytesText(static_cast<double>(load.peak)),
                                   qs(result_->plan.devices[static_cast<size_t>(marker_device_)].name)));
    peak_series_->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    peak_series_->setMarkerSize(10);
    peak_series_->setColor(QColor(0xdc, 0x26, 0x26));
    peak_series_->setBorderColor(Qt::white);
    peak_series_->replace({QPointF(at * time_scale_, static_cast<double>(load.peak) * byte_scale_)});
    chart_->addSeries(peak_series_);
}

void MemoryChart::updateAxes() {
    if (!result_) {
        x_axis_->setRange(0, 1);
        y_axis_->setRange(0, 1);
        x_axis_->setTitleText(QString());
        y_axis_->setTitleText(QString());
        note_->setText(tr("Plan the graph to see each device's memory over time."));
        return;
    }
    const plan::Prediction &pred = result_->prediction;
    const bool full = full_scale_->isChecked() && capacity_ > 0;
    double top = 0;
    for (int d : drawn_) top = std::max(top, static_cast<double>(pred.devices[static_cast<size_t>(d)].peak));
    const auto [scale, unit] = byteUnit(std::max(top, full ? capacity_ : 0.0));
    if (scale != byte_scale_) return rebuild();  // the unit changed: the curves are drawn again in it
    const double axis_bytes = full ? std::max(capacity_, top) * 1.05 : std::max(top * 1.15, 1.0);
    y_axis_->setRange(0, axis_bytes * byte_scale_);
    y_axis_->applyNiceNumbers();
    y_axis_->setTitleText(tr("bytes alive (%1)").arg(unit));
    x_axis_->setRange(0, std::max(pred.makespan * time_scale_, 1e-9));
    x_axis_->applyNiceNumbers();
    x_axis_->setTitleText(tr("time (%1, prediction)").arg(timeUnit(pred.makespan).second));
    QStringList note;
    if (!devices_note_.isEmpty()) note << devices_note_;
    if (capacity_ > axis_bytes)
        note << tr("The capacity (%1) is above the scale: the peak uses %2 % of it.")
                    .arg(bytesText(capacity_))
                    .arg(100.0 * top / capacity_, 0, 'f', top < 0.01 * capacity_ ? 2 : 1);
    note_->setText(note.join(QLatin1Char(' ')));
    note_->setVisible(!note.isEmpty());
    if (capacity_series_) capacity_series_->setVisible(capacity_ <= axis_bytes);
}

std::int64_t MemoryChart::drawnPeak(int device) const {
    for (size_t i = 0; i < drawn_.size(); ++i) {
        if (drawn_[i] != device) continue;
        double top = 0;
        for (const QPointF &pt : curves_[i]->points()) top = std::max(top, pt.y());
        return std::llround(top / byte_scale_);
    }
    return -1;
}

QPointF MemoryChart::peakMarker() const {
    if (!peak_series_ || peak_series_->count() == 0) return {};
    const QPointF pt = peak_series_->at(0);
    return QPointF(pt.x() / time_scale_, pt.y() / byte_scale_);
}

double MemoryChart::capacityLine() const {
    return capacity_series_ && capacity_series_->count() > 0 ? capacity_series_->at(0).y() / byte_scale_ : 0.0;
}

bool MemoryChart::fullScale() const {
    return full_scale_->isChecked();
}

void MemoryChart::setFullScale(bool on) {
    full_scale_->setChecked(on);
}

}  // namespace tapestry::views
