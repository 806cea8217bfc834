// The Stages and Shard Map docks (issue 5, DESIGN.md §5, §9): the pass pipeline
// run off the GUI thread with Cancel, stepping through the stages on the canvas
// (GraphDocument holds the stages and the one shown; the canvas follows), applying
// a stage as one undo step, collapsing and expanding sharded operations, comparing
// two stages, and the stages kept in the session.
//
// The canvas shows the selected stage; it is editable only while that stage's
// graph is the document's graph (stage 0 right after a run, or the stage last
// applied), read-only otherwise. Any edit of the document brings the canvas back
// to the document. Apply is refused when the document was edited after the run.
#pragma once

#include <QObject>
#include <QString>
#include <vector>

#include "passes/stage.h"
#include "views/graph_document.h"

class QAction;
class QComboBox;
class QDialog;
class QDockWidget;
class QStatusBar;
class QWidget;

namespace tapestry::views {
class PipelineWorker;
class ShardMapWidget;
class StageCompareView;
class StageTimeline;
struct PipelineOutcome;
}  // namespace tapestry::views

namespace tapestry::studio {

class CanvasController;
class SessionController;

class StagesController : public QObject {
    Q_OBJECT
public:
    StagesController(views::GraphDocument *doc, CanvasController *canvas, SessionController *session,
                     QStatusBar *status, QWidget *window);
    ~StagesController() override;

    views::StageTimeline *timeline() const { return timeline_; }
    views::ShardMapWidget *shardMap() const { return shard_map_; }
    views::StageCompareView *compareView() const { return compare_view_; }
    QDockWidget *stagesDock() const { return stages_dock_; }
    QDockWidget *shardMapDock() const { return shard_map_dock_; }

    QAction *nextStageAction() const { return next_stage_action_; }
    QAction *previousStageAction() const { return previous_stage_action_; }
    QAction *applyStageAction() const { return apply_stage_action_; }
    QAction *toggleShardsAction() const { return toggle_shards_action_; }
    QAction *expandAllShardsAction() const { return expand_all_action_; }
    QAction *runPipelineAction() const { return run_pipeline_action_; }

    // Runs the dock's pipeline on the document's graph off the GUI thread; false
    // when its fields are wrong (the error shows under them), nothing is open or a
    // pipeline is running. See pipelineFinished.
    bool startPipeline();
    // The window is idle at once; the worker stops at its next polling point.
    void cancelPipeline();
    bool isPipelineRunning() const;
    // Shows stage k on the canvas, coloured against stage k-1; false if there is none.
    bool showStage(int k);
    int shownStage() const { return doc_->shownStage(); }  // -1: the document, no stage
    void stepStage(int delta);
    // Makes stage k the document's graph as one undo step; "" or why not.
    QString applyStage(int k);
    // Opens (or reuses) the compare window on stages `left` and `right`; null if
    // either does not exist.
    QDialog *compareStages(int left, int right);
    // Lists the last pipeline of the document's session project again (once per
    // project, when the document is one of its stages).
    void restoreStages();

signals:
    // A pipeline ended: ok, or failed / cancelled (the dock says which).
    void pipelineFinished(bool ok);
    void stageShown(int stage);
    // The stages of a run were written to the session ("" or the error).
    void stagesSaved(const QString &error);
    // The last pipeline's stages were listed again from the session.
    void stagesRestored(int count);

private:
    void createDocks(QWidget *window);
    void createActions();
    void onDocumentChanged(views::GraphDocument::Changes what);
    void onPipelineFinished(quint64 job, const views::PipelineOutcome &outcome);
    void updateActions();
    void announceStage(int k);  // the status line of the stage shown, and stageShown
    void saveStages(const std::vector<Stage> &stages, const QString &options);

    views::GraphDocument *doc_;
    CanvasController *canvas_;
    SessionController *session_;
    QStatusBar *status_;
    QWidget *window_;
    views::StageTimeline *timeline_ = nullptr;
    QDockWidget *stages_dock_ = nullptr;
    views::PipelineWorker *pipeline_ = nullptr;
    views::ShardMapWidget *shard_map_ = nullptr;
    QDockWidget *shard_map_dock_ = nullptr;
    QDialog *compare_dialog_ = nullptr;
    views::StageCompareView *compare_view_ = nullptr;
    QComboBox *compare_left_ = nullptr;
    QComboBox *compare_right_ = nullptr;
    QAction *next_stage_action_ = nullptr;
    QAction *previous_stage_action_ = nullptr;
    QAction *apply_stage_action_ = nullptr;
    QAction *toggle_shards_action_ = nullptr;
    QAction *expand_all_action_ = nullptr;
    QAction *run_pipeline_action_ = nullptr;
    bool syncing_ = false;      // the list's selection is being set to the shown stage
    qint64 restored_for_ = -1;  // the project whose stored stages were looked up
};

}  // namespace tapestry::studio
