// The Optimize dock's live Pareto chart (docs/search.md, Qt Charts): every
// candidate evaluated, two of its figures on the axes (chosen in the combo boxes
// above the chart) and a third as colour. The front's points are coloured by the
// third figure and joined by a step line — the staircase of the front points no
// other front point beats on both axes shown; the points off the front are
// dimmed, and thinned to one per cell of a grid over the visible ranges when
// there are many. Dashed lines mark the memory cap and the maximum step time; the
// hand baselines are squares labelled with their names. Hovering a point shows
// its plan and figures (predictions); a click selects it (Ctrl+click a second one,
// for Compare); a drag zooms into a rectangle, a right click or a double click
// resets the zoom. Series are refilled with QXYSeries::replace, once per redraw,
// and redraws are coalesced: a stream of updates never queues more than one.
#pragma once

#include <QHash>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <optional>
#include <vector>

#include "search/evaluate.h"
#include "views/optimize_worker.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QScatterSeries;
class QValueAxis;
class QXYSeries;

namespace tapestry::views {

// A figure as the dock writes it: "418 µs", "84.5 MiB", "4".
QString figureText(search::Objective o, double value);
QString objectiveTitle(search::Objective o);  // "step time", "peak memory per device", …

class ParetoChart : public QWidget {
    Q_OBJECT
public:
    // Off-front points drawn at most (a grid thins the rest).
    static constexpr int kMaxOffFrontDrawn = 1500;
    static constexpr int kColourBins = 5;

    explicit ParetoChart(QWidget *parent = nullptr);

    // Empties the chart for a new run; `objectives` choose the axes (first two) and
    // the colour (the third, if any).
    void reset(const std::vector<search::Objective> &objectives);
    // Candidates with a plan, in evaluation order (keys not seen before).
    void addPoints(const std::vector<ParetoPoint> &points);
    // The front: the keys of points added (others are ignored).
    void setFront(const QStringList &keys);
    void setBaselines(const std::vector<BaselinePoint> &baselines);
    // The constraint lines (0: none).
    void setConstraints(const search::Constraints &constraints);
    // The figures on the axes and as colour (none: the front in one colour).
    void setAxes(search::Objective x, search::Objective y, std::optional<search::Objective> colour);
    search::Objective xFigure() const { return x_; }
    search::Objective yFigure() const { return y_; }
    std::optional<search::Objective> colourFigure() const { return colour_; }

    // Selects a point: alone, or (`add`) beside the one selected before (two at most;
    // the older goes). False when there is no point with that key.
    bool selectPoint(const QString &key, bool add = false);
    void clearSelection();
    QStringList selection() const { return selection_; }

    int pointCount() const { return static_cast<int>(points_.size()); }
    int frontCount() const { return static_cast<int>(front_.size()); }
    QStringList front() const { return front_; }
    const ParetoPoint *point(const QString &key) const;
    const std::vector<ParetoPoint> &points() const { return points_; }
    const std::vector<BaselinePoint> &baselines() const { return baselines_; }
    // The front's points in front order.
    std::vector<const ParetoPoint *> frontPoints() const;
    // What hovering the point shows.
    QString toolTipFor(const QString &key) const;
    // Where a point is drawn, in the chart view's coordinates; and the point drawn
    // nearest to a position (within a few pixels), "" for none. Redraws first.
    QPoint viewPosition(const QString &key);
    QString keyAt(const QPoint &view_position);

    // The series as drawn (after redrawNow): off-front points, the front's step
    // line, and the front's points (one series per colour bin).
    QScatterSeries *offFrontSeries() const { return off_front_; }
    QScatterSeries *infeasibleSeries() const { return infeasible_; }
    QLineSeries *frontLine() const { return front_line_; }
    std::vector<QScatterSeries *> frontSeries() const { return front_bins_; }
    int frontPointsDrawn() const;
    int offFrontDrawn() const;  // off-front points drawn (feasible and infeasible)
    QLineSeries *memoryCapLine() const { return memory_cap_; }
    QLineSeries *maxTimeLine() const { return max_time_; }

    bool isZoomed() const { return zoomed_; }
    void zoomTo(const QRectF &view_rect);  // as a rubber band drawn over it does
    void resetZoom();
    // Draws what changed now (updates otherwise wait for the event loop, once).
    void redrawNow();

    // The chart as an image, or as SVG (QSvgGenerator); "" or why not.
    QString savePng(const QString &path);
    QString saveSvg(const QString &path);

    QChartView *chartView() const;
    QChart *chart() const { return chart_; }
    QComboBox *xBox() const { return x_box_; }
    QComboBox *yBox() const { return y_box_; }
    QComboBox *colourBox() const { return colour_box_; }
    QLabel *keyLabel() const { return key_; }

signals:
    // A point was clicked (after the selection changed).
    void pointClicked(const QString &key, bool added);
    void selectionChanged(const QStringList &keys);

private:
    class View;
    void createControls();
    void createSeries();
    void onAxisChosen();
    void scheduleRedraw();
    void redraw();
    void fitAxes();
    void drawOffFront();
    void drawFront();
    void drawBaselines();
    void drawConstraints();
    void drawSelection();
    void updateKey();                                 // the key above the chart: the colours, lines and marks drawn
    QPointF valueOf(const search::Figures &f) const;  // in axis units
    void afterZoom();  // a rubber band (or zoomTo) zoomed: kept until reset, ticks rounded
    void onViewClicked(const QPoint &position, Qt::KeyboardModifiers modifiers);
    void onViewHovered(const QPoint &position, const QPoint &global);

    std::vector<ParetoPoint> points_;
    QHash<QString, int> index_of_;
    QStringList front_;
    std::vector<BaselinePoint> baselines_;
    search::Constraints constraints_;
    QStringList selection_;
    search::Objective x_ = search::Objective::time;
    search::Objective y_ = search::Objective::memory;
    std::optional<search::Objective> colour_ = search::Objective::devices;
    double x_scale_ = 1, y_scale_ = 1;  // figure → axis unit
    bool zoomed_ = false;
    bool redraw_pending_ = false;
    std::vector<int> drawn_;  // indices of points_ drawn (front and off-front), for hit tests

    QChart *chart_ = nullptr;
    View *view_ = nullptr;
    QValueAxis *x_axis_ = nullptr;
    QValueAxis *y_axis_ = nullptr;
    QScatterSeries *off_front_ = nullptr;
    QScatterSeries *infeasible_ = nullptr;
    QLineSeries *front_line_ = nullptr;
    std::vector<QScatterSeries *> front_bins_;
    std::vector<QScatterSeries *> baseline_series_;
    QLineSeries *memory_cap_ = nullptr;
    QLineSeries *max_time_ = nullptr;
    QScatterSeries *selected_a_ = nullptr;
    QScatterSeries *selected_b_ = nullptr;
    QComboBox *x_box_ = nullptr;
    QComboBox *y_box_ = nullptr;
    QComboBox *colour_box_ = nullptr;
    QLabel *key_ = nullptr;
    QString note_;                 // counts, thinning, constraints off the chart: said after the key
    QStringList constraint_keys_;  // the key's entries of the constraint lines in view
};

}  // namespace tapestry::views
