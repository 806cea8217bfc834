// The studio's main window (DESIGN.md §9). It assembles: one GraphDocument (the
// one owner of the graph), the canvas, and one controller per dock — editing
// (palette, history), inspector and issues, run and outputs, stages and shard map,
// plan, launch, optimize — plus the controllers of files and of the session; then the menus, the tool
// bar, the status bar and the window's settings. It keeps no state of its own
// about the graph: a new dock is a new controller, not more MainWindow.
#pragma once

#include <QMainWindow>
#include <QString>

namespace tapestry::views {
class GraphDocument;
class GraphScene;
class GraphView;
}  // namespace tapestry::views

class QLabel;
class QProgressBar;

namespace tapestry::studio {

class CanvasController;
class EditingController;
class InspectorController;
class LaunchController;
class OptimizeController;
class PlanController;
class ProjectController;
class RunController;
class SessionController;
class StagesController;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    views::GraphDocument *document() const { return doc_; }
    CanvasController *canvas() const { return canvas_; }
    EditingController *editing() const { return editing_; }
    InspectorController *inspection() const { return inspection_; }
    RunController *runs() const { return runs_; }
    StagesController *stages() const { return stages_; }
    PlanController *plans() const { return plan_; }
    LaunchController *launches() const { return launch_; }
    OptimizeController *optimizer() const { return optimize_; }
    ProjectController *project() const { return project_; }
    SessionController *sessions() const { return session_; }
    // The canvas's scene and view (the widgets most tests drive).
    views::GraphScene *scene() const;
    views::GraphView *view() const;

    // Opens a project file (asynchronously; see ProjectController::projectLoaded).
    void openProject(const QString &path);  // a *.plan.json goes to the Plan dock (openPlan)
    // Shows a plan file in the Plan dock (PlanController::openPlan).
    void openPlan(const QString &path);
    // Opens a session file (created if missing) and shows its last project, or
    // puts the default example in a new session. "" or the reason it was refused.
    QString openSession(const QString &path, bool show_last_project = true);
    // The default session file under the user's data directory, and the session
    // the studio used last (if it still exists), else the default one.
    static QString defaultSessionPath();
    static QString lastSessionPath();
    // Loading, laying out or saving a file is under way (the busy indicator shows).
    bool isBusy() const { return busy_; }
    void setDarkTheme(bool dark);

    // After the first layout (or a failed load), grab the window to `path` and quit.
    void setScreenshotPath(const QString &path) { screenshot_path_ = path; }
    // Select (and centre) this node once the project is laid out.
    void setPreselectedNode(const QString &id) { preselect_ = id; }

signals:
    void busyChanged(bool busy);

protected:
    void closeEvent(QCloseEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dragMoveEvent(QDragMoveEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void createControllers();
    void placeDocks();
    void createFileMenu();
    void createEditMenu();
    void createRunMenu();
    void createViewAndHelpMenus();
    void createToolBar();
    void createStatusBar();
    void connectControllers();
    void applyDefaultDockSizes();
    void fitRunDock();
    void giveOutputsRoom();
    void restoreSettings();
    void saveSettings() const;
    bool save();  // File ▸ Save: into the session, or Save As without one
    void exportCanvasDialog(const QString &format);
    void onLayoutReady(bool again);
    void updateBusy();
    void updateTitle();
    void updateCounts();
    void updateFileActions();
    void finishStartup();

    views::GraphDocument *doc_ = nullptr;
    CanvasController *canvas_ = nullptr;
    EditingController *editing_ = nullptr;
    InspectorController *inspection_ = nullptr;
    RunController *runs_ = nullptr;
    StagesController *stages_ = nullptr;
    PlanController *plan_ = nullptr;
    LaunchController *launch_ = nullptr;
    OptimizeController *optimize_ = nullptr;
    ProjectController *project_ = nullptr;
    SessionController *session_ = nullptr;

    QAction *open_action_ = nullptr;
    QAction *reload_action_ = nullptr;
    QAction *save_as_action_ = nullptr;
    QAction *export_svg_action_ = nullptr;
    QAction *export_png_action_ = nullptr;
    QAction *dark_action_ = nullptr;
    QProgressBar *busy_indicator_ = nullptr;
    QLabel *counts_label_ = nullptr;
    bool busy_ = false;
    bool startup_done_ = false;
    bool outputs_sized_ = false;  // the Outputs dock got its room for the first results
    QString screenshot_path_;
    QString preselect_;
};

}  // namespace tapestry::studio
