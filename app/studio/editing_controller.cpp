#include "editing_controller.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFormLayout>
#include <QGraphicsView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QStatusBar>
#include <QToolTip>
#include <QUndoStack>
#include <QUndoView>

#include "canvas_controller.h"
#include "dock.h"
#include "io/project_file.h"
#include "views/graph_document.h"
#include "views/graph_view.h"
#include "views/node_editor.h"
#include "views/palette.h"

namespace tapestry::studio {

namespace {

constexpr const char *kFragmentMime = "application/x-tapestry-fragment+json";

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

// About the box a new operation of `kind` gets (GraphScene::defaultBox's estimate
// for "kind" over "kind_2"), to find it a free spot before it exists.
QSizeF newOperationSize(const QString &kind) {
    const double w = std::max(54.0, static_cast<double>(kind.size() + 2) * 6.2 + 20.0) * views::kSceneScale;
    return {w, 40.0 * views::kSceneScale};
}

}  // namespace

EditingController::EditingController(views::GraphDocument *doc, CanvasController *canvas, QStatusBar *status,
                                     QWidget *window)
    : QObject(window), doc_(doc), canvas_(canvas), status_(status), window_(window) {
    palette_ = new views::OpPalette(window);
    palette_dock_ = makeDock(tr("Palette"), "paletteDock", palette_, window);
    undo_view_ = new QUndoView(doc_->undoStack(), window);
    undo_view_->setEmptyLabel(tr("<opened>"));
    history_dock_ = makeDock(tr("History"), "historyDock", undo_view_, window);
    createActions();

    views::GraphScene *scene = canvas_->scene();
    connect(scene, &views::GraphScene::connectRequested, this,
            [this](const views::PortRef &from, const views::PortRef &to) { connectPorts(from, to); });
    connect(scene, &views::GraphScene::connectionDropped, this, [this](const views::PortRef &, const QPointF &) {
        status_->showMessage(tr("Drop the connection on an operation's input port (the dots on its top edge)"), 5000);
    });
    connect(scene, &QGraphicsScene::selectionChanged, this, &EditingController::updateActions);
    connect(palette_, &views::OpPalette::activated, this,
            [this](const QString &entry) { onPaletteActivated(entry, canvas_->viewCentre()); });
    connect(canvas_->view(), &views::GraphView::paletteDropped, this, &EditingController::onPaletteActivated);
    updateActions();
}

void EditingController::createActions() {
    undo_action_ = doc_->undoStack()->createUndoAction(this, tr("&Undo"));
    undo_action_->setShortcut(QKeySequence::Undo);
    redo_action_ = doc_->undoStack()->createRedoAction(this, tr("&Redo"));
    redo_action_->setShortcuts({QKeySequence(tr("Ctrl+Y")), QKeySequence(tr("Ctrl+Shift+Z"))});
    auto make = [this](const QString &text, const QKeySequence &key, void (EditingController::*slot)()) {
        auto *a = new QAction(text, this);
        a->setShortcut(key);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    cut_action_ = make(tr("Cu&t"), QKeySequence::Cut, &EditingController::cutSelection);
    copy_action_ = make(tr("&Copy"), QKeySequence::Copy, &EditingController::copySelection);
    paste_action_ = make(tr("&Paste"), QKeySequence::Paste, &EditingController::pasteClipboard);
    duplicate_action_ = make(tr("&Duplicate"), QKeySequence(tr("Ctrl+D")), &EditingController::duplicateSelection);
    delete_action_ = make(tr("De&lete"), QKeySequence::Delete, &EditingController::deleteSelection);
    delete_action_->setShortcuts({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)});
    pin_action_ = make(tr("&Pin Position"), QKeySequence(tr("Ctrl+P")), &EditingController::togglePins);
    select_all_action_ = new QAction(tr("Select &All"), this);
    select_all_action_->setShortcut(QKeySequence::SelectAll);
    connect(select_all_action_, &QAction::triggered, this, [this] {
        QStringList all;
        for (views::NodeItem *n : canvas_->scene()->nodeItems()) all << n->nodeId();
        canvas_->scene()->selectNodes(all);
    });
    palette_search_action_ = new QAction(tr("Search Operations"), this);
    palette_search_action_->setShortcut(QKeySequence(tr("Ctrl+Shift+P")));
    connect(palette_search_action_, &QAction::triggered, this, [this] {
        palette_dock_->show();
        palette_dock_->raise();
        palette_->focusSearch();
    });
}

void EditingController::updateActions() {
    const bool has_selection = !canvas_->scene()->selectedItems().isEmpty();
    for (QAction *a : {cut_action_, copy_action_, duplicate_action_, delete_action_, pin_action_})
        a->setEnabled(has_selection);
}

void EditingController::togglePins() {
    const QStringList ids = canvas_->scene()->selectedNodeIds();
    bool all_pinned = !ids.isEmpty();
    for (const QString &id : ids) all_pinned &= doc_->pinned().contains(id);
    doc_->setPinned(ids, !all_pinned);
    status_->showMessage(all_pinned ? tr("Unpinned %1").arg(countText(ids.size(), tr("node"), tr("nodes")))
                                    : tr("Pinned %1: a re-layout keeps them where they are")
                                          .arg(countText(ids.size(), tr("node"), tr("nodes"))),
                         5000);
}

void EditingController::ensureDocument() {
    if (!doc_->isOpen() && new_document_) new_document_();
}

// ---- edits ---------------------------------------------------------------------

QString EditingController::applyEdit(const QString &text, const std::function<edit::EditResult(edit::Editor &)> &fn,
                                     const QHash<QString, QPointF> &place) {
    const QString why = doc_->edit(text, fn, place);
    last_edit_error_ = why;
    if (!why.isEmpty()) {
        status_->showMessage(tr("%1 refused: %2").arg(text, why), 10000);
        return why;
    }
    if (!doc_->lastNotes().isEmpty()) status_->showMessage(doc_->lastNotes().join(QStringLiteral("; ")), 10000);
    return {};
}

QString EditingController::addOperationAt(const QString &kind, const QPointF &scene_pos) {
    const QPointF spot = canvas_->freeSpotNear(scene_pos, newOperationSize(kind));
    QString id;
    const QString why = applyEdit(tr("Add %1").arg(kind), [&](edit::Editor &e) -> edit::EditResult {
        auto r = e.add_operation(kind.toStdString());
        if (!r) return unexpected(r.error());
        id = qs(r->value);
        return edit::Done{};
    });
    if (!why.isEmpty()) return {};
    doc_->placeNodes({{id, spot}});  // the edit knows the id only now
    canvas_->scene()->selectNode(id);
    return id;
}

QString EditingController::addTensorAt(const edit::TensorSpec &spec, const QPointF &scene_pos) {
    const QPointF spot = canvas_->freeSpotNear(scene_pos, newOperationSize(qs(spec.name)));
    QString id;
    const QString why = applyEdit(tr("Add tensor %1").arg(qs(spec.name)), [&](edit::Editor &e) -> edit::EditResult {
        auto r = e.add_tensor(spec);
        if (!r) return unexpected(r.error());
        id = qs(r->value);
        return edit::Done{};
    });
    if (!why.isEmpty()) return {};
    doc_->placeNodes({{id, spot}});
    canvas_->scene()->selectNode(id);
    return id;
}

void EditingController::newTensorDialog(TensorRole role, const QPointF &scene_pos) {
    auto *dialog = new QDialog(window_);
    dialog->setObjectName(QStringLiteral("newTensorDialog"));
    dialog->setWindowTitle(role == TensorRole::parameter ? tr("New Parameter") : tr("New Input"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    auto *form = new QFormLayout(dialog);
    auto *name = new QLineEdit(role == TensorRole::parameter ? QStringLiteral("w") : QStringLiteral("x"), dialog);
    name->setObjectName(QStringLiteral("tensorName"));
    auto *dtype = new QComboBox(dialog);
    dtype->setObjectName(QStringLiteral("tensorDtype"));
    for (const char *d : {"f32", "f16", "bf16", "i32", "i64", "bool"}) dtype->addItem(QString::fromLatin1(d));
    auto *shape = new QLineEdit(QStringLiteral("64, 64"), dialog);
    shape->setObjectName(QStringLiteral("tensorShape"));
    shape->setPlaceholderText(tr("e.g. 512, 1024"));
    auto *error = new QLabel(dialog);
    error->setObjectName(QStringLiteral("tensorError"));
    error->setStyleSheet(QStringLiteral("color: #dc2626"));
    form->addRow(tr("&Name:"), name);
    form->addRow(tr("&Type:"), dtype);
    form->addRow(tr("&Shape:"), shape);
    form->addRow(error);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    connect(buttons, &QDialogButtonBox::accepted, dialog, [=, this] {
        const auto dims = views::NodeEditor::parseShape(shape->text());
        if (!dims) {
            error->setText(tr("The shape is a list of non-negative integers, such as 512, 1024."));
            return;
        }
        if (name->text().trimmed().isEmpty()) {
            error->setText(tr("The tensor needs a name."));
            return;
        }
        edit::TensorSpec spec;
        spec.name = name->text().trimmed().toStdString();
        spec.dtype = parse_dtype(dtype->currentText().toStdString()).value_or(DType::f32);
        spec.shape = *dims;
        spec.role = role;
        if (addTensorAt(spec, scene_pos).isEmpty()) {
            error->setText(last_edit_error_);
            return;
        }
        dialog->accept();
    });
    dialog->open();
}

void EditingController::onPaletteActivated(const QString &entry, const QPointF &scene_pos) {
    ensureDocument();
    if (entry == QLatin1String(views::OpPalette::kTensorInput))
        newTensorDialog(TensorRole::input, scene_pos);
    else if (entry == QLatin1String(views::OpPalette::kTensorParameter))
        newTensorDialog(TensorRole::parameter, scene_pos);
    else
        addOperationAt(entry, scene_pos);
}

QString EditingController::connectPorts(const views::PortRef &from, const views::PortRef &to) {
    const Graph &g = doc_->graph();
    QString why;
    if (to.output || !g.find_op(OpId(to.node.toStdString()))) {
        why = tr("connect to an operation's input port: a tensor's value comes from the operation that computes it");
    } else if (!from.output) {
        why = tr("start the connection at an output: a tensor's bottom dot or an operation's output port");
    } else {
        const OpId target(to.node.toStdString());
        const std::string port = to.port.toStdString();
        const QString text = tr("Connect %1 → %2.%3")
                                 .arg(from.port.isEmpty() ? from.node : from.node + "." + from.port, to.node, to.port);
        why = applyEdit(text, [&](edit::Editor &e) {
            if (g.find_tensor(TensorId(from.node.toStdString())))
                return e.connect(TensorId(from.node.toStdString()), target, port);
            return e.connect_output(OpId(from.node.toStdString()), from.port.toStdString(), target, port);
        });
        if (why.isEmpty()) {
            status_->showMessage(tr("Connected %1 to %2.%3").arg(from.node, to.node, to.port), 4000);
            return {};
        }
    }
    last_edit_error_ = why;
    status_->showMessage(tr("Connection refused: %1").arg(why), 12000);
    views::GraphView *view = canvas_->view();
    const QPointF at = canvas_->scene()->portScenePos(to);
    QToolTip::showText(view->viewport()->mapToGlobal(view->mapFromScene(at)),
                       tr("<b>Connection refused</b><br/>%1").arg(why.toHtmlEscaped()), view);
    return why;
}

// ---- the clipboard -------------------------------------------------------------

void EditingController::copySelection() {
    const QStringList ids = canvas_->scene()->selectedNodeIds();
    if (ids.isEmpty()) return;
    std::vector<std::string> wanted;
    for (const QString &id : ids) wanted.push_back(id.toStdString());
    const Graph fragment = edit::extract(doc_->graph(), wanted);
    QJsonObject where;
    const QHash<QString, QPointF> pos = canvas_->scene()->positions();
    auto keep = [&](const std::string &id) {
        if (pos.contains(qs(id))) where.insert(qs(id), QJsonArray{pos.value(qs(id)).x(), pos.value(qs(id)).y()});
    };
    for (const TensorPtr &t : fragment.tensors()) keep(t->id.value);
    for (const OpPtr &op : fragment.operations()) keep(op->id.value);
    const QString project = QString::fromStdString(serialize_project(fragment));
    QJsonObject clip;
    clip.insert(QStringLiteral("project"), project);
    clip.insert(QStringLiteral("positions"), where);
    auto *mime = new QMimeData;
    mime->setData(QString::fromLatin1(kFragmentMime), QJsonDocument(clip).toJson(QJsonDocument::Compact));
    mime->setText(project);
    QGuiApplication::clipboard()->setMimeData(mime);
    status_->showMessage(tr("Copied %1").arg(countText(static_cast<qint64>(fragment.node_count()), tr("node"), tr("nodes"))), 4000);
}

void EditingController::cutSelection() {
    copySelection();
    deleteSelection();
}

void EditingController::pasteClipboard() {
    const QMimeData *mime = QGuiApplication::clipboard()->mimeData();
    if (!mime) return;
    QJsonObject where;
    std::string text;
    if (mime->hasFormat(QString::fromLatin1(kFragmentMime))) {
        const QJsonObject clip = QJsonDocument::fromJson(mime->data(QString::fromLatin1(kFragmentMime))).object();
        text = clip.value(QStringLiteral("project")).toString().toStdString();
        where = clip.value(QStringLiteral("positions")).toObject();
    } else if (mime->hasText()) {
        text = mime->text().toStdString();  // project JSON pasted as text
    }
    if (text.empty()) {
        status_->showMessage(tr("Nothing to paste: the clipboard holds no graph"), 5000);
        return;
    }
    LoadResult parsed = parse_project(text, "clipboard");
    if (!parsed.ok()) {
        status_->showMessage(
            tr("Cannot paste: %1").arg(qs(parsed.issues.empty() ? "not a graph" : parsed.issues.front().message)),
            8000);
        return;
    }
    ensureDocument();
    std::map<std::string, std::string> ids;
    const QString why = applyEdit(tr("Paste %1").arg(countText(static_cast<qint64>(parsed.graph.node_count()), tr("node"), tr("nodes"))),
                                  [&](edit::Editor &e) -> edit::EditResult {
                                      auto r = e.paste(parsed.graph);
                                      if (!r) return unexpected(r.error());
                                      ids = *r;
                                      return edit::Done{};
                                  });
    if (!why.isEmpty()) return;
    // Keep the copied arrangement, offset so the copy does not hide the original.
    QHash<QString, QPointF> pos;
    const QPointF offset(40, 40);
    for (const auto &[old_id, new_id] : ids) {
        const QJsonArray p = where.value(qs(old_id)).toArray();
        if (p.size() == 2) pos.insert(qs(new_id), QPointF(p[0].toDouble(), p[1].toDouble()) + offset);
    }
    doc_->placeNodes(pos);
    QStringList selected;
    for (const auto &[old_id, new_id] : ids) selected << qs(new_id);
    canvas_->scene()->selectNodes(selected);
}

void EditingController::duplicateSelection() {
    copySelection();
    pasteClipboard();
}

void EditingController::deleteSelection() {
    const QStringList ids = canvas_->scene()->selectedNodeIds();
    if (ids.isEmpty()) return;
    std::vector<std::string> doomed;
    for (const QString &id : ids) doomed.push_back(id.toStdString());
    applyEdit(ids.size() == 1 ? tr("Delete %1").arg(ids.front())
                              : tr("Delete %n nodes", nullptr, static_cast<int>(ids.size())),
              [&](edit::Editor &e) { return e.remove(doomed); });
}

}  // namespace tapestry::studio
