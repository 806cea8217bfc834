// The studio's main window (DESIGN.md §9): the graph canvas in the centre, the
// inspector and the issues as docks, File/View/Help menus, a status bar that says
// what is happening. Loading, validation and layout run off the GUI thread; a new
// load cancels the previous one.
#pragma once

#include <QMainWindow>
#include <QString>
#include <QStringList>

#include "views/project_loader.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;

namespace tapestry {
struct Layout;
}

namespace tapestry::views {
class GraphScene;
class GraphView;
class Inspector;
class IssuesPanel;
class LayoutWorker;
}  // namespace tapestry::views

namespace tapestry::studio {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    // Opens a project file (asynchronously; see projectLoaded / layoutReady).
    void openProject(const QString &path);
    void reload();
    // Starts on the default example project; says so clearly if there is none.
    void openDefaultProject();

    // After the first layout (or a failed load), grab the window to `path` and quit.
    void setScreenshotPath(const QString &path) { screenshot_path_ = path; }
    // Select (and centre) this node once the project is laid out.
    void setPreselectedNode(const QString &id) { preselect_ = id; }

    // Selects and centres a node on the canvas, and marks it with a halo when
    // `mark`; false if it is not drawn.
    bool revealNode(const QString &id, bool mark = true);

    QString currentPath() const { return path_; }
    bool isBusy() const { return busy_; }
    QStringList recentFiles() const { return recent_; }

    views::GraphScene *scene() const { return scene_; }
    views::GraphView *view() const { return view_; }
    views::Inspector *inspector() const { return inspector_; }
    views::IssuesPanel *issuesPanel() const { return issues_; }
    QAction *fitAction() const { return fit_action_; }
    QAction *zoomInAction() const { return zoom_in_action_; }
    QAction *zoomOutAction() const { return zoom_out_action_; }
    QAction *resetZoomAction() const { return reset_zoom_action_; }

    // Writes the laid-out canvas to an image (".png") or vector drawing (".svg").
    // Returns an error message or "".
    QString exportCanvas(const QString &path);

signals:
    void projectLoaded(bool opened);
    void layoutReady();
    void busyChanged(bool busy);

protected:
    void closeEvent(QCloseEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dragMoveEvent(QDragMoveEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void createActions();
    void createDocks();
    void createStatusBar();
    void restoreSettings();
    void saveSettings() const;

    void onProjectLoaded(quint64 job, const views::LoadedProject &project);
    void onLayoutFinished(quint64 job, const tapestry::Layout &layout);
    void onLayoutFailed(quint64 job, const QString &message);
    void onIssueActivated(int index, const QString &node);
    void onNodeSelected(const QString &id);

    void openDialog();
    void exportDialog(const QString &format);
    void about();
    void addRecent(const QString &path);
    void rebuildRecentMenu();
    void setBusy(bool busy, const QString &message = {});
    void updateTitle();
    void updateCounts();
    void finishStartup();
    void takeScreenshot();

    views::GraphScene *scene_ = nullptr;
    views::GraphView *view_ = nullptr;
    views::Inspector *inspector_ = nullptr;
    views::IssuesPanel *issues_ = nullptr;
    views::ProjectLoader *loader_ = nullptr;
    views::LayoutWorker *layout_ = nullptr;
    QDockWidget *inspector_dock_ = nullptr;
    QDockWidget *issues_dock_ = nullptr;

    QAction *open_action_ = nullptr;
    QAction *reload_action_ = nullptr;
    QAction *export_svg_action_ = nullptr;
    QAction *export_png_action_ = nullptr;
    QAction *fit_action_ = nullptr;
    QAction *zoom_in_action_ = nullptr;
    QAction *zoom_out_action_ = nullptr;
    QAction *reset_zoom_action_ = nullptr;
    QMenu *recent_menu_ = nullptr;

    QProgressBar *busy_indicator_ = nullptr;
    QLabel *counts_label_ = nullptr;
    QLabel *zoom_label_ = nullptr;

    QString path_;          // the project shown (or being opened)
    QString display_name_;  // its file name
    views::LoadedProject project_;
    QStringList recent_;
    bool busy_ = false;
    bool startup_done_ = false;
    QString screenshot_path_;
    QString preselect_;
    qint64 load_ms_ = 0;
};

}  // namespace tapestry::studio
