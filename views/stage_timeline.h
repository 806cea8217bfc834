// The Stages dock (issue 5, DESIGN.md §9): a pipeline editor row (passes, shard
// specs with their errors shown under the field, a Numeric check box, Run / Cancel
// and progress), the list of stages — number, pass, summary, certificate badge —
// with the selected stage's text and certificate below, and the step / apply
// buttons. The widget holds the stages; the main window runs the pipeline and
// shows the chosen stage on the canvas.
#pragma once

#include <QHash>
#include <QString>
#include <QWidget>
#include <string>
#include <vector>

#include "graph/delta.h"
#include "graph/graph.h"
#include "passes/stage.h"
#include "views/graph_diff.h"
#include "views/graph_scene.h"

class QCheckBox;
class QCompleter;
class QStringListModel;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QToolButton;
class QTreeWidget;

namespace tapestry::views {

// The JSON kept with a stage in the session (store::StageRecord).
std::string certificateToJson(const Certificate &certificate);
Certificate certificateFromJson(const std::string &json);  // an empty certificate when unreadable
std::string diffToJson(const GraphDelta &diff);

class StageTimeline : public QWidget {
    Q_OBJECT
public:
    explicit StageTimeline(QWidget *parent = nullptr);

    // The graph the specs are checked against; the field's example, tooltip and
    // completions name its operations.
    void setGraph(const Graph &graph);
    // The completer offering the graph's operation ids while an id is typed.
    QCompleter *specsCompleter() const { return completer_; }

    QString passesText() const;
    QString specsText() const;
    bool numeric() const;
    void setPasses(const QString &text);
    void setSpecs(const QString &text);
    void setNumeric(bool on);
    // Checks the passes and specs; shows the error under the field and returns
    // it, or "" when the pipeline can run.
    QString validate();
    QString errorText() const;

    void setStages(std::vector<Stage> stages, const QString &origin = {});
    void clearStages();
    const std::vector<Stage> &stages() const { return stages_; }
    int stageCount() const { return static_cast<int>(stages_.size()); }
    int currentStage() const { return current_; }
    // Selects stage `k` (emits currentStageChanged when it changes); false when out of range.
    bool setCurrentStage(int k);

    void setRunning(bool running);
    bool running() const { return running_; }
    void setProgress(int done, int total, const QString &phase);
    // A line under the list: the last run's result or why it failed.
    void showMessage(const QString &text, bool error = false);
    QString message() const;
    // Marks the stage whose graph the document holds ("in the editor"), -1 for none.
    void setAppliedStage(int k);

    QTreeWidget *list() const { return list_; }
    QPushButton *runButton() const { return run_button_; }
    QPushButton *cancelButton() const { return cancel_button_; }
    QPushButton *applyButton() const { return apply_button_; }
    QPushButton *compareButton() const { return compare_button_; }
    QLineEdit *specsEdit() const { return specs_edit_; }
    QCheckBox *numericBox() const { return numeric_box_; }
    QPlainTextEdit *details() const { return details_; }

signals:
    void runRequested();
    void cancelRequested();
    void currentStageChanged(int stage);
    void applyRequested(int stage);
    // "Compare…": the selected stage against the one before it (or stage 1 for stage 0).
    void compareRequested(int left, int right);

private:
    void showDetails();
    void offerOperations();                           // completions for the word being typed
    void insertOperation(const QString &completion);  // it replaces that word
    void updateButtons();

    QLineEdit *passes_edit_ = nullptr;
    QLineEdit *specs_edit_ = nullptr;
    QCompleter *completer_ = nullptr;
    QStringListModel *op_model_ = nullptr;
    QLabel *error_label_ = nullptr;
    QCheckBox *numeric_box_ = nullptr;
    QPushButton *run_button_ = nullptr;
    QPushButton *cancel_button_ = nullptr;
    QProgressBar *progress_ = nullptr;
    QLabel *phase_label_ = nullptr;
    QTreeWidget *list_ = nullptr;
    QLabel *message_label_ = nullptr;
    QPlainTextEdit *details_ = nullptr;
    QToolButton *previous_button_ = nullptr;
    QToolButton *next_button_ = nullptr;
    QPushButton *apply_button_ = nullptr;
    QPushButton *compare_button_ = nullptr;

    Graph graph_;
    std::vector<Stage> stages_;
    int current_ = -1;
    int applied_ = -1;
    bool running_ = false;
    bool specs_touched_ = false;  // the user typed in the specs (an empty field is then an error)
};

}  // namespace tapestry::views
