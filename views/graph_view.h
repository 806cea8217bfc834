// The graph canvas widget: a QGraphicsView over a GraphScene with the navigation
// a user expects — wheel zoom around the cursor, pan by dragging empty space,
// the middle button or Space+drag, rubber-band selection with Shift, fit, zoom
// in/out/reset (DESIGN.md §9).
#pragma once

#include <QGraphicsView>
#include <QPixmap>

namespace tapestry::views {

class GraphView : public QGraphicsView {
    Q_OBJECT
public:
    static constexpr double kMinScale = 0.05;
    static constexpr double kMaxScale = 8.0;
    static constexpr double kZoomStep = 1.25;
    // The least zoom at which the nodes' labels read comfortably: Fit and Find go
    // no lower (a graph taller than that shows its top; pan for the rest).
    static constexpr double kReadableScale = 0.5;

    explicit GraphView(QWidget *parent = nullptr);

    double zoom() const;  // current scale factor (1.0 = 100 %)
    // Centres on a scene rectangle, zooming in to kReadableScale first when the
    // canvas is smaller than that (a readable zoom is kept as it is).
    void focusOn(const QRectF &scene_rect);
    // A line shown in the middle of an empty canvas ("Loading…", an error).
    void setPlaceholderText(const QString &text);
    QString placeholderText() const { return placeholder_; }
    // The canvas colours of the dark theme (nodes keep their own colours).
    void setDark(bool dark);
    bool isDark() const { return dark_; }

public slots:
    // Fits the whole graph, but never below kReadableScale (nor above 100 %).
    void fitToGraph();
    // Fits the graph if it stays readable at `min_scale` or more; otherwise shows
    // its top at `min_scale` (a freshly opened tall graph starts where it starts).
    void showGraph(double min_scale = 0.7);
    void zoomIn();
    void zoomOut();
    void resetZoom();

signals:
    void zoomChanged(double factor);
    // An entry of the operation palette was dropped on the canvas.
    void paletteDropped(const QString &entry, const QPointF &scene_pos);

protected:
    void wheelEvent(QWheelEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void keyReleaseEvent(QKeyEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dragMoveEvent(QDragMoveEvent *event) override;
    void dropEvent(QDropEvent *event) override;
    void drawBackground(QPainter *painter, const QRectF &rect) override;
    void drawForeground(QPainter *painter, const QRectF &rect) override;

private:
    void scaleBy(double factor);
    void setScaleClamped(double scale);
    QRectF graphRect() const;

    bool space_held_ = false;
    bool middle_panning_ = false;
    QPoint last_pan_pos_;
    QString placeholder_;
    bool dark_ = false;
    QPixmap grid_tile_;  // one grid dot, at the current zoom
    bool grid_tile_dark_ = false;
};

}  // namespace tapestry::views
