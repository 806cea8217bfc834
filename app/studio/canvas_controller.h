// The canvas in the middle of the studio window (DESIGN.md §9): the GraphScene
// drawing the graph the document shows — it follows GraphDocument::changed and
// redraws only the nodes a change names — the GraphView with fit, zoom and
// navigation, the find bar above it, the Overview dock (minimap), and the
// Graphviz layout, run off the GUI thread with a Cancel button in the status bar.
#pragma once

#include <QHash>
#include <QObject>
#include <QPointF>
#include <QString>

#include "views/graph_document.h"

class QAction;
class QDockWidget;
class QLabel;
class QStatusBar;
class QToolButton;
class QWidget;

namespace tapestry {
struct Layout;
}

namespace tapestry::views {
class FindBar;
class GraphScene;
class GraphView;
class LayoutWorker;
class Minimap;
}  // namespace tapestry::views

namespace tapestry::studio {

class CanvasController : public QObject {
    Q_OBJECT
public:
    CanvasController(views::GraphDocument *doc, QStatusBar *status, QWidget *window);
    ~CanvasController() override;

    views::GraphScene *scene() const { return scene_; }
    views::GraphView *view() const { return view_; }
    views::FindBar *findBar() const { return find_bar_; }
    views::Minimap *minimap() const { return minimap_; }
    // The find bar above the view: the window's central widget.
    QWidget *centre() const { return centre_; }
    QDockWidget *overviewDock() const { return overview_dock_; }
    QLabel *zoomLabel() const { return zoom_label_; }  // for the status bar

    // View ▸ and Edit ▸ actions of the canvas.
    QAction *fitAction() const { return fit_action_; }
    QAction *zoomInAction() const { return zoom_in_action_; }
    QAction *zoomOutAction() const { return zoom_out_action_; }
    QAction *resetZoomAction() const { return reset_zoom_action_; }
    QAction *zoomToSelectionAction() const { return zoom_to_selection_action_; }
    QAction *relayoutAction() const { return relayout_action_; }
    QAction *findAction() const { return find_action_; }
    QAction *findNextAction() const { return find_next_action_; }
    QAction *findPreviousAction() const { return find_previous_action_; }
    QAction *producersAction() const { return producers_action_; }
    QAction *consumersAction() const { return consumers_action_; }

    // Lays the shown graph out again; pinned nodes stay where they are.
    void relayout();
    bool isLayingOut() const { return laying_out_; }
    // Selects and centres a node (a shard's issue goes to its operation), marking
    // it with a halo when `mark`; false if it is not drawn.
    bool revealNode(const QString &id, bool mark = true);
    void zoomToSelection();
    // Selects the producers (upstream) or consumers of the selection and shows them.
    void selectNeighbours(bool upstream);
    // The centre of a free spot for a node of `size` near `scene_pos`: the point
    // itself when nothing is drawn there, else the nearest free one around it.
    QPointF freeSpotNear(const QPointF &scene_pos, const QSizeF &size) const;
    // The middle of what the view shows (where a palette entry lands).
    QPointF viewCentre() const;

signals:
    // A layout arrived and was drawn (`again`: a re-layout, not the first of a document).
    void layoutReady(bool again);
    void layoutFailed(const QString &message);
    // The layout started or ended (the window's busy indicator).
    void busyChanged();

private:
    void createActions();
    void onDocumentChanged(views::GraphDocument::Changes what, const QStringList &ids,
                           const QHash<QString, QPointF> &place);
    void showNewDocument();
    void startLayout(bool again);
    void setLayingOut(bool on, const QString &message = {});
    void onLayoutFinished(quint64 job, const Layout &layout);
    void onLayoutFailed(quint64 job, const QString &message);
    void updatePlaceholder();

    views::GraphDocument *doc_;
    QStatusBar *status_;
    views::GraphScene *scene_ = nullptr;
    views::GraphView *view_ = nullptr;
    views::FindBar *find_bar_ = nullptr;
    views::Minimap *minimap_ = nullptr;
    views::LayoutWorker *layout_ = nullptr;
    QWidget *centre_ = nullptr;
    QDockWidget *overview_dock_ = nullptr;
    QToolButton *cancel_layout_button_ = nullptr;
    QLabel *zoom_label_ = nullptr;
    QAction *fit_action_ = nullptr;
    QAction *zoom_in_action_ = nullptr;
    QAction *zoom_out_action_ = nullptr;
    QAction *reset_zoom_action_ = nullptr;
    QAction *zoom_to_selection_action_ = nullptr;
    QAction *relayout_action_ = nullptr;
    QAction *find_action_ = nullptr;
    QAction *find_next_action_ = nullptr;
    QAction *find_previous_action_ = nullptr;
    QAction *producers_action_ = nullptr;
    QAction *consumers_action_ = nullptr;
    bool laying_out_ = false;
    bool relayout_ = false;  // the running layout is a re-layout (keeps pins), not a document's first
};

}  // namespace tapestry::studio
