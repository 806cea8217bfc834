// The canvas minimap (DESIGN.md §9): the whole graph of the main view's
// GraphScene scaled to fit, with the main view's visible rectangle drawn as a
// translucent frame; clicking or dragging in it centres the main view there.
#pragma once

#include <QGraphicsView>
#include <QImage>
#include <QPointer>
#include <QTimer>

namespace tapestry::views {

class GraphScene;

class Minimap : public QGraphicsView {
    Q_OBJECT
public:
    // Follows `main_view`: its scene (adopted on construction and whenever the
    // main view shows another one), its scroll bars and its zoom.
    Minimap(QGraphicsView *main_view, QWidget *parent = nullptr);

    QGraphicsView *mainView() const { return main_view_; }
    // The main view's visible scene rectangle: the frame the minimap draws.
    QRectF frameRect() const;
    // The scene rectangle the minimap fits into its viewport.
    QRectF overviewRect() const { return sceneRect(); }
    // How many times the overview image was regenerated (tests, benchmarks).
    int renderCount() const { return render_count_; }

    // Draws an overview of `scene`'s nodes and edges: the scene rectangle `source`
    // onto an image of `size` — boxes filled with their kind's colour and
    // straight edges, no text. Cheap for big graphs: one fill per node and one
    // line per edge (this is what the minimap caches).
    static QImage renderOverview(const GraphScene &scene, const QRectF &source, const QSize &size,
                                 qreal device_pixel_ratio = 1.0);

    QSize sizeHint() const override { return {240, 160}; }

public slots:
    // The main view scrolled or zoomed: move the frame (cheap; no re-render).
    void viewChanged();
    // The scene changed (items, selection, layout): re-render the overview soon.
    void sceneChanged();
    // Re-fits the overview to the scene's graph and re-renders now.
    void refit();

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void adoptScene();
    void centreMainViewAt(const QPoint &minimap_pos);
    void regenerate();

    QPointer<QGraphicsView> main_view_;
    QPointer<GraphScene> followed_;
    QImage overview_;
    bool dirty_ = true;
    bool frame_only_paint_ = false;  // the next paint was asked for by viewChanged()
    bool dragging_ = false;
    int render_count_ = 0;
    QTimer rerender_;
};

}  // namespace tapestry::views
