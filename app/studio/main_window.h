// The studio's main window (DESIGN.md §9): the graph canvas in the centre, the
// inspector, issues, run and outputs as docks, File/Run/View/Help menus, a status
// bar that says what is happening. Loading, ONNX import, validation, layout, runs
// and verification run off the GUI thread; a new load cancels the previous one,
// and a run can be cancelled at any step.
#pragma once

#include <QMainWindow>
#include <QMap>
#include <QString>
#include <QStringList>

#include "views/onnx_import_worker.h"
#include "views/project_loader.h"
#include "views/run_worker.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QToolButton;

namespace tapestry {
struct Layout;
}

namespace tapestry::views {
class GraphScene;
class GraphView;
class Inspector;
class IssuesPanel;
class LayoutWorker;
class OutputsPanel;
class RunPanel;
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
    // Imports an ONNX model (asynchronously; see importFinished). Symbolic input
    // dimensions without a value in `dim_values` are asked for in a dialog, then
    // the import is retried; a refused model is explained in a message box.
    void importOnnx(const QString &path, const QMap<QString, qint64> &dim_values = {});
    // Saves the graph shown as a project (values beside it or embedded; see
    // io/tensor_values.h), off the GUI thread; see projectSaved. The saved file
    // becomes the window's document.
    void saveProjectAs(const QString &path);

    // Runs or verifies the graph shown with the Run panel's settings; false when
    // nothing is open or a run is already going. Results arrive in the Outputs dock.
    bool startRun(views::RunMode mode);
    void cancelRun();
    bool isRunning() const;
    // Writes the last run's outputs as <name>.npy into `dir` (see outputsSaved).
    void saveOutputs(const QString &dir);

    // After the first layout (or a failed load), grab the window to `path` and quit.
    void setScreenshotPath(const QString &path) { screenshot_path_ = path; }
    // Select (and centre) this node once the project is laid out.
    void setPreselectedNode(const QString &id) { preselect_ = id; }

    // Selects and centres a node on the canvas, and marks it with a halo when
    // `mark`; false if it is not drawn.
    bool revealNode(const QString &id, bool mark = true);

    QString currentPath() const { return path_; }
    QString displayName() const { return display_name_; }
    bool isImported() const { return imported_; }
    const Graph &graph() const { return project_.graph; }
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
    QAction *importOnnxAction() const { return import_onnx_action_; }
    QAction *saveAsAction() const { return save_as_action_; }
    QAction *runAction() const { return run_action_; }
    QAction *verifyAction() const { return verify_action_; }
    QAction *cancelRunAction() const { return cancel_run_action_; }
    QAction *saveOutputsAction() const { return save_outputs_action_; }
    views::RunPanel *runPanel() const { return run_panel_; }
    views::OutputsPanel *outputsPanel() const { return outputs_; }
    views::RunWorker *runWorker() const { return run_worker_; }
    // The last finished run or verification (cancelled and failed ones included).
    const views::RunOutcome &lastOutcome() const { return last_outcome_; }

    // Writes the laid-out canvas to an image (".png") or vector drawing (".svg").
    // Returns an error message or "".
    QString exportCanvas(const QString &path);

signals:
    void projectLoaded(bool opened);
    void layoutReady();
    void busyChanged(bool busy);
    // A run or verification ended: ok, failed or cancelled (see lastOutcome()).
    void runFinished(bool ok);
    // An ONNX import ended; `ok` false when it was refused or abandoned.
    void importFinished(bool ok);
    void projectSaved(const QString &path, const QString &error);
    void outputsSaved(const QString &dir, const QString &error);

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
    void showProject(const views::LoadedProject &project);
    void onImportFinished(quint64 job, const views::OnnxImportOutcome &outcome);
    void askDimensions(const QString &path, const QStringList &names, const QMap<QString, qint64> &known);
    void onRunProgress(quint64 job, int done, int total, const QString &phase);
    void onRunFinished(quint64 job, const views::RunOutcome &outcome);
    void showRunError(const QString &message);
    void updateRunActions();

    void openDialog();
    void openAny(const QString &path);  // a project, or an ONNX model to import
    void importDialog();
    void saveAsDialog();
    void saveOutputsDialog();
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
    views::OnnxImportWorker *import_ = nullptr;
    views::RunWorker *run_worker_ = nullptr;
    views::RunPanel *run_panel_ = nullptr;
    views::OutputsPanel *outputs_ = nullptr;
    QDockWidget *run_dock_ = nullptr;
    QDockWidget *outputs_dock_ = nullptr;

    QAction *open_action_ = nullptr;
    QAction *reload_action_ = nullptr;
    QAction *export_svg_action_ = nullptr;
    QAction *export_png_action_ = nullptr;
    QAction *fit_action_ = nullptr;
    QAction *zoom_in_action_ = nullptr;
    QAction *zoom_out_action_ = nullptr;
    QAction *reset_zoom_action_ = nullptr;
    QAction *import_onnx_action_ = nullptr;
    QAction *save_as_action_ = nullptr;
    QAction *run_action_ = nullptr;
    QAction *verify_action_ = nullptr;
    QAction *cancel_run_action_ = nullptr;
    QAction *save_outputs_action_ = nullptr;
    QAction *use_shards_action_ = nullptr;
    QMenu *recent_menu_ = nullptr;

    QProgressBar *busy_indicator_ = nullptr;
    QLabel *counts_label_ = nullptr;
    QLabel *zoom_label_ = nullptr;
    QProgressBar *run_progress_ = nullptr;
    QToolButton *run_cancel_button_ = nullptr;

    QString path_;          // the project shown (or being opened)
    QString display_name_;  // its file name
    views::LoadedProject project_;
    bool imported_ = false;              // the graph came from an ONNX model (path_)
    QMap<QString, qint64> import_dims_;  // the dimension values it was imported with
    views::RunOutcome last_outcome_;
    bool run_error_shown_ = false;  // the issues dock shows a run error
    QStringList recent_;
    bool busy_ = false;
    bool startup_done_ = false;
    QString screenshot_path_;
    QString preselect_;
    qint64 load_ms_ = 0;
};

}  // namespace tapestry::studio
