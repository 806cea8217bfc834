// NodeEditor: the inspector's editing form for the selected node (DESIGN.md §9,
// issue 4) — a tensor's name, dtype, shape and role, or an operation's name and
// one row per op-library parameter. It edits nothing itself: it emits requests
// that the window runs through GraphDocument::edit (one undo step each), and is
// refreshed with setGraph() after every edit, undo and redo.
#pragma once

#include <QHash>
#include <QString>
#include <QWidget>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "graph/params.h"
#include "index/zpoint.h"
#include "ops/op_def.h"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;

namespace tapestry {
class OpLibrary;
}

namespace tapestry::views {

class NodeEditor : public QWidget {
    Q_OBJECT
public:
    // Parameter rows follow `library`'s ParamSpecs (it must outlive the editor).
    explicit NodeEditor(QWidget *parent = nullptr);
    explicit NodeEditor(const OpLibrary &library, QWidget *parent = nullptr);

    // The graph after an edit, undo or redo: keeps the shown node and refreshes its
    // fields from `graph` (a node that is gone hides the form). Emits nothing.
    void setGraph(const Graph &graph);
    // Shows a tensor or operation of the current graph; "" or an unknown id hides
    // the fields and shows a short hint. Clears the error label. Emits nothing.
    void showNode(const QString &id);
    // The id whose form is shown ("" when none is).
    QString shownNode() const { return shown_; }

    // A red, word-wrapped line under the form (an edit's refusal, bad text); ""
    // clears it. Cleared too when a request is emitted and by showNode().
    void showError(const QString &message);
    QString errorText() const;

    // Shape text as the form accepts it: "512, 1024", "[512, 1024]", "512x1024",
    // "512 1024"; "" is a scalar. Dimensions are whole numbers ≥ 0. On bad text
    // returns nullopt and, when `error` is given, says why.
    static std::optional<ZPoint> parseShape(const QString &text, QString *error = nullptr);
    // "512, 1024" ("" for a scalar): the form tensorTypeRequested uses.
    static QString shapeText(const ZPoint &shape);
    // An int list as typed: "1, 2", "[1, 2]", "1 2"; "[]" is the empty list.
    static std::optional<std::vector<std::int64_t>> parseIntList(const QString &text, QString *error = nullptr);
    // How a parameter value is written in the form: 3, 0.001, true, tanh, "1, 2" ([] when empty).
    static QString valueText(const ParamValue &value);

signals:
    void renameRequested(const QString &id, const QString &name);
    // `dtype` is a dtype name ("f32"), `shape_text` as shapeText() writes it.
    void tensorTypeRequested(const QString &id, const QString &dtype, const QString &shape_text);
    // "input" or "parameter".
    void roleRequested(const QString &id, const QString &role);
    // The operation's full new parameter set: the graph's parameters with one
    // changed, added (a value typed) or removed (a field cleared: default applies).
    void paramsRequested(const QString &id, const tapestry::Params &params);

private:
    struct ParamRow {
        ParamSpec spec;
        QLabel *label = nullptr;
        QLineEdit *line = nullptr;   // integer, number, free string, int list
        QComboBox *combo = nullptr;  // string with choices
        QCheckBox *check = nullptr;  // boolean
    };

    void buildForm();
    void rebuildParamRows(const std::string &kind);
    void refresh();  // fields from graph_ for shown_, no emission
    void refreshTensor(const Tensor &t);
    void refreshOperation(const Operation &op);
    QString displayName(const std::string &id) const;

    void commitName();
    void commitDtype();
    void commitShape();
    void commitRole();
    void commitParam(int row);
    // Reads a row's widget: the value to set, nullopt to unset; false on bad text.
    bool readParam(const ParamRow &row, std::optional<ParamValue> *value, QString *error) const;
    // False when `field` already emitted `text` since the last refresh (Enter then
    // focus loss must not ask twice).
    bool firstRequest(const QString &field, const QString &text);
    bool ready() const;

    const OpLibrary &library_;
    Graph graph_;
    QString shown_;
    std::string rows_kind_;  // the op kind the parameter rows were built for
    bool refreshing_ = false;
    bool local_error_ = false;  // the error label shows bad text, not a refusal
    QHash<QString, QString> requested_;

    QLabel *hint_ = nullptr;
    QWidget *fields_ = nullptr;
    QLineEdit *name_ = nullptr;
    QFormLayout *form_ = nullptr;
    QComboBox *dtype_ = nullptr;
    QLineEdit *shape_ = nullptr;
    QComboBox *role_ = nullptr;
    QLabel *kind_ = nullptr;
    std::vector<ParamRow> rows_;
    QLabel *error_ = nullptr;
};

}  // namespace tapestry::views
