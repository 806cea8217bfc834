// The canvas find bar (DESIGN.md §9, issue 4 "finding your way in big graphs"):
// searches a GraphScene's nodes by id, name, op kind or tensor dtype/shape, steps
// through the matches (operations first, exact matches first, then reading
// order), and selects all of them ("select all of this kind" = scope Op kind +
// Select all).
#pragma once

#include <QPointer>
#include <QStringList>
#include <QWidget>

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QToolButton;

namespace tapestry::views {

class GraphScene;

// What a search looks at.
enum class FindScope {
    all,      // id, name, op kind, tensor dtype and shape
    name,     // id and name of tensors and operations
    op_kind,  // the kind of operations ("linear")
    tensor,   // tensors only: id, name, dtype and shape ("f32", "[512, 1024]")
};

// Ids of the drawn nodes matching `text` (case-insensitive substring) within
// `scope`, best first: operations before tensors, and an exact match of an id or
// name (or kind) before a prefix before any other; ties in reading order, top to
// bottom, then left to right by item position. Empty text matches nothing.
QStringList find_nodes(const GraphScene &scene, const QString &text, FindScope scope);

class FindBar : public QWidget {
    Q_OBJECT
public:
    explicit FindBar(QWidget *parent = nullptr);
    explicit FindBar(GraphScene *scene, QWidget *parent = nullptr);

    void setScene(GraphScene *scene);
    GraphScene *scene() const { return scene_; }

    QString text() const;
    void setText(const QString &text);
    FindScope scope() const;
    void setScope(FindScope scope);

    // Node ids of the current matches in reading order, and the one Next/Previous
    // last went to (-1 before the first step).
    const QStringList &matches() const { return matches_; }
    int currentIndex() const { return current_; }
    QString currentMatch() const { return current_ >= 0 ? matches_.value(current_) : QString(); }
    // "3 of 4", "4 matches", "No matches" or "" (no text).
    QString statusText() const;
    // True while the text finds nothing (the line edit shows an error tint).
    bool hasNoMatches() const;

    QLineEdit *lineEdit() const { return edit_; }
    QComboBox *scopeBox() const { return scope_box_; }
    QLabel *statusLabel() const { return status_; }
    QToolButton *previousButton() const { return previous_; }
    QToolButton *nextButton() const { return next_; }
    QPushButton *selectAllButton() const { return select_all_; }

    // Ready-made actions for the Edit menu: Find (Ctrl+F, shows and focuses the
    // bar), Find Next (F3) and Find Previous (Shift+F3), window-wide. The bar does
    // not add them to any widget itself (a window with its own Find actions would
    // get ambiguous shortcuts): add them to the main window or a menu. Inside the
    // bar, Enter / Shift+Enter (and F3 / Shift+F3 when no action takes them) step.
    QAction *findAction() const { return find_action_; }
    QAction *findNextAction() const { return find_next_action_; }
    QAction *findPreviousAction() const { return find_previous_action_; }

public slots:
    // Shows the bar, focuses the text and selects it.
    void activate();
    // Hides the bar (Esc) and emits closed().
    void dismiss();
    // Runs the search again: the scene's graph changed. Keeps the current match
    // when it still matches.
    void refresh();
    void findNext();
    void findPrevious();
    // Selects every match in the scene.
    void selectAllMatches();

signals:
    // Next/Previous moved to this node (already selected): centre it in the view.
    void revealRequested(const QString &node_id);
    // Select all selected these nodes: the window may fit them into view.
    void matchesSelected(const QStringList &node_ids);
    // The bar was dismissed; the canvas may take the focus back.
    void closed();

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;

private:
    void search();
    void step(int delta);
    void updateStatus();

    QPointer<GraphScene> scene_;
    QLineEdit *edit_ = nullptr;
    QComboBox *scope_box_ = nullptr;
    QLabel *status_ = nullptr;
    QToolButton *previous_ = nullptr;
    QToolButton *next_ = nullptr;
    QPushButton *select_all_ = nullptr;
    QToolButton *close_ = nullptr;
    QAction *find_action_ = nullptr;
    QAction *find_next_action_ = nullptr;
    QAction *find_previous_action_ = nullptr;

    QStringList matches_;
    int current_ = -1;
};

}  // namespace tapestry::views
