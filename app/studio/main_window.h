// The studio's main window (DESIGN.md §9): the graph canvas in the centre, the
// inspector, issues, run and outputs as docks, File/Run/View/Help menus, a status
// bar that says what is happening. Loading, ONNX import, validation, layout, runs
// and verification run off the GUI thread; a new load cancels the previous one,
// and a run can be cancelled at any step.
#pragma once

#include <QFuture>
#include <QHash>
#include <QMainWindow>
#include <QMap>
#include <QPair>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <memory>

#include "edit/editor.h"
#include "passes/stage.h"
#include "store/session.h"
#include "views/graph_scene.h"
#include "views/onnx_import_worker.h"
#include "views/project_loader.h"
#include "views/run_worker.h"

class QAction;
class QComboBox;
class QDialog;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QToolButton;

class QUndoView;
class QTimer;

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
class GraphDocument;
class OpPalette;
class Minimap;
class FindBar;
class NodeEditor;
class RunPanel;
class StageTimeline;
class StageCompareView;
class ShardMapWidget;
class PipelineWorker;
struct PipelineOutcome;
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

    // ---- editing (main_window_edit.cpp) -------------------------------------
    views::GraphDocument *document() const { return doc_; }
    views::OpPalette *palette() const { return palette_; }
    views::FindBar *findBar() const { return find_bar_; }
    views::Minimap *minimap() const { return minimap_; }
    views::NodeEditor *nodeEditor() const { return node_editor_; }
    // Starts an empty graph named "untitled" (a new project in the session).
    void newProject();
    // Adds an operation of `kind` centred at a scene point; returns its id or "".
    QString addOperationAt(const QString &kind, const QPointF &scene_pos);
    // Adds a tensor centred at a scene point; returns its id or "" (see lastEditError()).
    QString addTensorAt(const edit::TensorSpec &spec, const QPointF &scene_pos);
    // Asks for a tensor's name, dtype and shape (a dialog), then adds it there.
    void newTensorDialog(TensorRole role, const QPointF &scene_pos);
    // Connects an output (a tensor's value or an operation's output port) to an
    // operation's input port; "" or the reason it was refused (also shown).
    QString connectPorts(const views::PortRef &from, const views::PortRef &to);
    // Runs an edit as one undo step; "" or why it was refused (shown in the status bar).
    QString applyEdit(const QString &text, const std::function<edit::EditResult(edit::Editor &)> &fn,
                      const QHash<QString, QPointF> &place = {});
    QString lastEditError() const { return last_edit_error_; }
    void copySelection();
    void cutSelection();
    void pasteClipboard();
    void duplicateSelection();
    void deleteSelection();
    void relayout();
    void zoomToSelection();
    void setDarkTheme(bool dark);
    bool isModified() const;

    // ---- sessions (main_window_edit.cpp) ------------------------------------
    // Opens a session file (created if missing) and shows its last project, or
    // puts the default example in a new session. "" or the reason it was refused.
    QString openSession(const QString &path, bool show_last_project = true);
    QString sessionPath() const;
    store::Session *session() const { return session_.get(); }
    qint64 projectId() const { return project_id_; }
    // Saves the graph into the session now, off the GUI thread (kind "save" or
    // "autosave"); see sessionSaved.
    void saveToSession(bool autosave);
    // The default session file under the user's data directory.
    static QString defaultSessionPath();
    // The session the studio used last (if it still exists), else the default one.
    static QString lastSessionPath();
    QAction *undoAction() const { return undo_action_; }
    QAction *redoAction() const { return redo_action_; }
    QAction *deleteAction() const { return delete_action_; }
    QAction *findAction() const { return find_action_; }

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
    // Exports the canvas or the selection: format "svg", "png" (at `scale` pixels
    // per canvas unit), "dot" (Graphviz source) or "json" (a project file, values
    // beside it as the project format says). Returns an error message or "".
    QString exportTo(const QString &path, const QString &format, bool selection_only, double scale = 2.0);
    void exportSelectionDialog();

    // ---- stages (main_window_stages.cpp) ------------------------------------
    views::StageTimeline *stageTimeline() const { return stages_; }
    QDockWidget *stagesDock() const { return stages_dock_; }
    // Runs the Stages dock's pipeline on the document's graph off the GUI thread;
    // false when its fields are wrong (the error shows under them), nothing is
    // open or a pipeline is running. See pipelineFinished.
    bool startPipeline();
    // The window is idle at once; the worker stops at its next polling point.
    void cancelPipeline();
    bool isPipelineRunning() const;
    // Shows stage k on the canvas, coloured against stage k-1; false if there is none.
    bool showStage(int k);
    int shownStage() const { return shown_stage_; }  // -1: the document, no stage
    void stepStage(int delta);
    // Makes stage k the document's graph as one undo step; "" or why not.
    QString applyStage(int k);
    QAction *nextStageAction() const { return next_stage_action_; }
    QAction *previousStageAction() const { return previous_stage_action_; }
    QAction *toggleShardsAction() const { return toggle_shards_action_; }
    QAction *expandAllShardsAction() const { return expand_all_action_; }
    // Opens (or reuses) the compare window on stages `left` and `right`; null if
    // either does not exist.
    QDialog *compareStages(int left, int right);
    views::StageCompareView *stageCompareView() const { return compare_view_; }
    views::ShardMapWidget *shardMap() const { return shard_map_; }
    QDockWidget *shardMapDock() const { return shard_map_dock_; }

signals:
    void projectLoaded(bool opened);
    void layoutReady();
    void busyChanged(bool busy);
    // A run or verification ended: ok, failed or cancelled (see lastOutcome()).
    void runFinished(bool ok);
    // An ONNX import ended; `ok` false when it was refused or abandoned.
    void importFinished(bool ok);
    void projectSaved(const QString &path, const QString &error);
    // A save into the session finished ("" or the error).
    void sessionSaved(const QString &error);
    // The graph changed through an edit, an undo or a redo.
    void graphEdited();
    void outputsSaved(const QString &dir, const QString &error);
    // A pipeline ended: ok, or failed / cancelled (the dock says which).
    void pipelineFinished(bool ok);
    void stageShown(int stage);
    // The stages of a run were written to the session ("" or the error).
    void stagesSaved(const QString &error);
    // The last pipeline's stages were listed again from the session.
    void stagesRestored(int count);

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
    void createEditing();
    void onDocumentEdited(const QStringList &touched, const QHash<QString, QPointF> &place);
    void onPaletteActivated(const QString &entry, const QPointF &scene_pos);
    void scheduleAutosave();
    void showProjectInSession(qint64 project_id);
    void refreshAfterEdit();
    void updateEditActions();
    void selectNeighbours(bool upstream);
    // One save into the session (creating the project when `project` is 0); runs
    // on a worker for autosave and on the GUI thread only when closing.
    static QPair<qint64, QString> saveSnapshot(store::Session &session, qint64 project, const Graph &graph,
                                               const store::Placements &placements, const QString &name, bool autosave);
    static store::Placements placementsOf(const QHash<QString, QPointF> &pos, const QSet<QString> &pinned,
                                          const Graph &g);
    void applyDefaultDockSizes();
    void createStages();
    void updateStageActions();
    void onPipelineFinished(quint64 job, const views::PipelineOutcome &outcome);
    void syncCanvas(const Graph &g, const std::vector<Issue> &issues);
    void afterDocumentEdit();
    void saveStages(const std::vector<Stage> &stages, const QString &options);
    void restoreStages();

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

    views::GraphDocument *doc_ = nullptr;
    views::OpPalette *palette_ = nullptr;
    views::Minimap *minimap_ = nullptr;
    views::FindBar *find_bar_ = nullptr;
    views::NodeEditor *node_editor_ = nullptr;
    QUndoView *undo_view_ = nullptr;
    QDockWidget *palette_dock_ = nullptr;
    QDockWidget *minimap_dock_ = nullptr;
    QDockWidget *history_dock_ = nullptr;
    QAction *undo_action_ = nullptr;
    QAction *redo_action_ = nullptr;
    QAction *cut_action_ = nullptr;
    QAction *copy_action_ = nullptr;
    QAction *paste_action_ = nullptr;
    QAction *duplicate_action_ = nullptr;
    QAction *delete_action_ = nullptr;
    QAction *select_all_action_ = nullptr;
    QAction *find_action_ = nullptr;
    QAction *relayout_action_ = nullptr;
    QAction *pin_action_ = nullptr;
    QAction *new_action_ = nullptr;
    QAction *save_action_ = nullptr;
    QAction *open_session_action_ = nullptr;
    QAction *dark_action_ = nullptr;
    QString last_edit_error_;
    std::shared_ptr<store::Session> session_;
    qint64 project_id_ = 0;
    QTimer *autosave_timer_ = nullptr;
    bool save_in_flight_ = false;
    QFuture<QPair<qint64, QString>> save_future_;
    bool save_again_ = false;
    QLabel *save_label_ = nullptr;
    QToolButton *cancel_layout_button_ = nullptr;
    bool relayout_pending_ = false;
    QHash<QString, QPointF> session_placements_;  // positions saved with the session's project
    QStringList pinned_from_session_;

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

    views::StageTimeline *stages_ = nullptr;
    QDockWidget *stages_dock_ = nullptr;
    views::PipelineWorker *pipeline_ = nullptr;
    QAction *next_stage_action_ = nullptr;
    QAction *previous_stage_action_ = nullptr;
    QAction *apply_stage_action_ = nullptr;
    QAction *toggle_shards_action_ = nullptr;
    QAction *expand_all_action_ = nullptr;
    QAction *run_pipeline_action_ = nullptr;
    int shown_stage_ = -1;          // the stage the canvas shows (-1: none)
    bool canvas_on_stage_ = false;  // the canvas shows a stage that is not the document's graph
    bool syncing_stage_ = false;
    qint64 stages_restored_for_ = -1;  // the project whose stored stages were looked up
    views::ShardMapWidget *shard_map_ = nullptr;
    QDockWidget *shard_map_dock_ = nullptr;
    QDialog *compare_dialog_ = nullptr;
    views::StageCompareView *compare_view_ = nullptr;
    QComboBox *compare_left_ = nullptr;
    QComboBox *compare_right_ = nullptr;
};

}  // namespace tapestry::studio
