#include "views/palette.h"

#include <QKeyEvent>
#include <QLineEdit>
#include <QMimeData>
#include <QPainter>
#include <QPixmap>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <map>

#include "graph/params.h"
#include "ops/library.h"
#include "views/graph_scene.h"

namespace tapestry::views {

namespace {

constexpr int kSearchRole = Qt::UserRole + 2;  // lower-cased "kind category summary"

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QIcon swatch(const QColor &color) {
    QPixmap pm(12, 12);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(color.darker(125), 1));
    p.setBrush(color);
    p.drawRoundedRect(QRectF(0.5, 0.5, 11, 11), 3, 3);
    return QIcon(pm);
}

QString defaultText(const ParamSpec &spec) {
    if (spec.required) return QStringLiteral("required");
    const std::string text = param_to_string(spec.default_value);
    return QStringLiteral("default %1").arg(qs(text).toHtmlEscaped());
}

QString portLine(const PortSpec &port) {
    QString flags;
    if (port.optional) flags += QStringLiteral(" (optional)");
    if (port.variadic) flags += QStringLiteral(" (one or more)");
    QString line = QStringLiteral("<code>%1</code>%2").arg(qs(port.name).toHtmlEscaped(), flags);
    if (!port.doc.empty()) line += QStringLiteral(" — ") + qs(port.doc).toHtmlEscaped();
    return line;
}

// The drag source: carries the entry of the dragged leaf in the palette mime type.
class PaletteTree : public QTreeWidget {
public:
    using QTreeWidget::QTreeWidget;

protected:
    QStringList mimeTypes() const override { return {QString::fromLatin1(OpPalette::kMimeType)}; }
    QMimeData *mimeData(const QList<QTreeWidgetItem *> &items) const override {
        for (QTreeWidgetItem *item : items) {
            const QString entry = item->data(0, OpPalette::kEntryRole).toString();
            if (!entry.isEmpty()) return OpPalette::mimeDataFor(entry);
        }
        return nullptr;
    }
    Qt::DropActions supportedDropActions() const override { return Qt::CopyAction; }
};

}  // namespace

OpPalette::OpPalette(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("opPalette"));
    search_ = new QLineEdit(this);
    search_->setObjectName(QStringLiteral("paletteSearch"));
    search_->setPlaceholderText(tr("Search operations (Ctrl+Shift+P)"));
    search_->setClearButtonEnabled(true);
    search_->installEventFilter(this);

    tree_ = new PaletteTree(this);
    tree_->setObjectName(QStringLiteral("paletteTree"));
    tree_->setHeaderHidden(true);
    tree_->setColumnCount(1);
    tree_->setRootIsDecorated(true);
    tree_->setUniformRowHeights(true);
    tree_->setSelectionMode(QAbstractItemView::SingleSelection);
    tree_->setDragEnabled(true);
    tree_->setDragDropMode(QAbstractItemView::DragOnly);
    tree_->setDefaultDropAction(Qt::CopyAction);
    tree_->setExpandsOnDoubleClick(true);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    layout->addWidget(search_);
    layout->addWidget(tree_, 1);

    populate();

    connect(search_, &QLineEdit::textChanged, this, &OpPalette::applyFilter);
    connect(search_, &QLineEdit::returnPressed, this, [this] {
        const QString first = firstMatch();
        if (!first.isEmpty()) emit activated(first);
    });
    // Enter on a leaf, and double-click (QAbstractItemView emits activated for both).
    connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem *item) { activateItem(item); });
}

QMimeData *OpPalette::mimeDataFor(const QString &entry) {
    auto *mime = new QMimeData;
    mime->setData(QString::fromLatin1(kMimeType), entry.toUtf8());
    mime->setText(entry);
    return mime;
}

QString OpPalette::entryFromMimeData(const QMimeData *mime) {
    if (!mime || !mime->hasFormat(QString::fromLatin1(kMimeType))) return {};
    return QString::fromUtf8(mime->data(QString::fromLatin1(kMimeType)));
}

QString OpPalette::toolTipFor(const OpDef &def) {
    QString tip =
        QStringLiteral("<b>%1</b> <span style='color:#64748b'>(%2)</span><br/>%3")
            .arg(qs(def.kind()).toHtmlEscaped(), qs(def.category()).toHtmlEscaped(), qs(def.summary()).toHtmlEscaped());
    QStringList inputs, outputs, params;
    for (const PortSpec &p : def.input_ports()) inputs << portLine(p);
    for (const PortSpec &p : def.output_ports()) outputs << portLine(p);
    for (const ParamSpec &p : def.params()) {
        QString line = QStringLiteral("<code>%1</code>: %2, %3")
                           .arg(qs(p.name).toHtmlEscaped(), qs(param_kind_name(p.kind)), defaultText(p));
        if (!p.choices.empty()) {
            QStringList choices;
            for (const std::string &c : p.choices) choices << qs(c).toHtmlEscaped();
            line += QStringLiteral(" (one of %1)").arg(choices.join(QStringLiteral(", ")));
        }
        if (!p.doc.empty()) line += QStringLiteral(" — ") + qs(p.doc).toHtmlEscaped();
        params << line;
    }
    auto section = [](const QString &title, const QStringList &lines) {
        if (lines.isEmpty()) return QString();
        return QStringLiteral("<br/><b>%1</b><br/>&nbsp;&nbsp;").arg(title) +
               lines.join(QStringLiteral("<br/>&nbsp;&nbsp;"));
    };
    tip += section(tr("Inputs"), inputs);
    tip += section(tr("Outputs"), outputs);
    tip += section(tr("Parameters"), params);
    return tip;
}

void OpPalette::populate() {
    tree_->clear();
    auto addLeaf = [](QTreeWidgetItem *group, const QString &entry, const QString &label, const QString &search,
                      const QString &tip, const QColor &color) {
        auto *leaf = new QTreeWidgetItem(group, {label});
        leaf->setData(0, kEntryRole, entry);
        leaf->setData(0, kSearchRole, search.toLower());
        leaf->setToolTip(0, tip);
        leaf->setIcon(0, swatch(color));
        leaf->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
    };
    auto addGroup = [this](const QString &title, const QColor &color) {
        auto *group = new QTreeWidgetItem(tree_, {title});
        group->setIcon(0, swatch(color));
        group->setFlags(Qt::ItemIsEnabled);  // neither selectable nor draggable
        QFont f = group->font(0);
        f.setBold(true);
        group->setFont(0, f);
        return group;
    };

    // Tensors first: users create inputs and parameters from the palette too.
    QTreeWidgetItem *tensors = addGroup(tr("Tensor"), roleColor(TensorRole::input));
    addLeaf(tensors, QString::fromLatin1(kTensorInput), QStringLiteral("input"),
            QStringLiteral("input tensor activations data fed to the graph"),
            tr("<b>input</b> <span style='color:#64748b'>(tensor)</span><br/>A tensor fed to the graph "
               "(activations, ids). Set its dtype and shape in the inspector."),
            roleColor(TensorRole::input));
    addLeaf(tensors, QString::fromLatin1(kTensorParameter), QStringLiteral("parameter"),
            QStringLiteral("parameter tensor weights learned"),
            tr("<b>parameter</b> <span style='color:#64748b'>(tensor)</span><br/>A learned tensor "
               "(weights, biases, scales). Set its dtype and shape in the inspector."),
            roleColor(TensorRole::parameter));

    // Categories in order of first appearance over the kinds sorted by name would
    // scatter related groups; order them by name, kinds by name inside.
    // A `fused` operation is what the fuse pass makes of a chain of members (its
    // params describe them); drawn from the palette it would have no chain, so it is
    // not offered there. Fused ops in a graph show and edit like any other.
    std::map<QString, std::vector<const OpDef *>> by_category;
    for (const OpDef *def : OpLibrary::standard().all())
        if (def->kind() != "fused") by_category[qs(def->category())].push_back(def);
    for (const auto &[category, defs] : by_category) {
        const QColor color = categoryColor(category);
        QTreeWidgetItem *group = addGroup(category, color);
        for (const OpDef *def : defs) {
            const QString kind = qs(def->kind());
            addLeaf(group, kind, kind, kind + QLatin1Char(' ') + category + QLatin1Char(' ') + qs(def->summary()),
                    toolTipFor(*def), color);
        }
    }
    tree_->expandAll();
}

void OpPalette::applyFilter(const QString &text) {
    const QStringList words = text.toLower().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
        QTreeWidgetItem *group = tree_->topLevelItem(g);
        int shown = 0;
        for (int i = 0; i < group->childCount(); ++i) {
            QTreeWidgetItem *leaf = group->child(i);
            const QString haystack = leaf->data(0, kSearchRole).toString();
            bool match = true;
            for (const QString &w : words) match = match && haystack.contains(w);
            leaf->setHidden(!match);
            shown += match ? 1 : 0;
        }
        group->setHidden(shown == 0);
        if (shown > 0 && !words.isEmpty()) group->setExpanded(true);
    }
    // Keep the current item on a visible leaf so that Enter in the tree activates a match.
    const QString first = firstMatch();
    if (QTreeWidgetItem *cur = tree_->currentItem();
        cur && (cur->isHidden() || (cur->parent() && cur->parent()->isHidden())))
        tree_->setCurrentItem(nullptr);
    if (!words.isEmpty() && !first.isEmpty()) {
        for (QTreeWidgetItemIterator it(tree_); *it; ++it)
            if ((*it)->data(0, kEntryRole).toString() == first) {
                tree_->setCurrentItem(*it);
                tree_->scrollToItem(*it);
                break;
            }
    }
}

QString OpPalette::filterText() const {
    return search_->text();
}

void OpPalette::setFilterText(const QString &text) {
    search_->setText(text);
}

QStringList OpPalette::visibleEntries() const {
    QStringList out;
    for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
        const QTreeWidgetItem *group = tree_->topLevelItem(g);
        if (group->isHidden()) continue;
        for (int i = 0; i < group->childCount(); ++i)
            if (!group->child(i)->isHidden()) out << group->child(i)->data(0, kEntryRole).toString();
    }
    return out;
}

// The best visible match: the entry named exactly what was typed, else the first
// whose name starts with it, else the first shown ("relu" picks relu, not
// leaky_relu, which comes before it).
QString OpPalette::firstMatch() const {
    const QStringList entries = visibleEntries();
    if (entries.isEmpty()) return QString();
    const QString typed = search_->text().trimmed().toLower();
    if (!typed.isEmpty()) {
        for (const QString &e : entries)
            if (e.toLower() == typed) return e;
        for (const QString &e : entries)
            if (e.toLower().startsWith(typed)) return e;
    }
    return entries.front();
}

void OpPalette::focusSearch() {
    search_->setFocus(Qt::ShortcutFocusReason);
    search_->selectAll();
}

bool OpPalette::eventFilter(QObject *watched, QEvent *event) {
    if (watched == search_ && event->type() == QEvent::KeyPress) {
        const auto *key = static_cast<QKeyEvent *>(event);
        if (key->key() == Qt::Key_Down) {
            tree_->setFocus(Qt::TabFocusReason);
            if (!tree_->currentItem() || tree_->currentItem()->isHidden()) {
                const QString first = firstMatch();
                for (QTreeWidgetItemIterator it(tree_); *it; ++it)
                    if (!first.isEmpty() && (*it)->data(0, kEntryRole).toString() == first) {
                        tree_->setCurrentItem(*it);
                        break;
                    }
            }
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void OpPalette::activateItem(QTreeWidgetItem *item) {
    if (!item) return;
    const QString entry = item->data(0, kEntryRole).toString();
    if (!entry.isEmpty()) emit activated(entry);
}

}  // namespace tapestry::views
