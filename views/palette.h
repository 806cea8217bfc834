// The operation palette of the studio (DESIGN.md §9): every kind of the standard
// op library grouped by category, plus the two tensor entries users create, with
// a search box; entries are dragged onto the canvas or activated by double-click
// or Enter.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

class QLineEdit;
class QMimeData;
class QTreeWidget;
class QTreeWidgetItem;

namespace tapestry {
class OpDef;
}

namespace tapestry::views {

class OpPalette : public QWidget {
    Q_OBJECT
public:
    // Mime type of a palette drag; its data is the entry (UTF-8).
    static constexpr const char *kMimeType = "application/x-tapestry-palette";
    // The two tensor entries; every other entry is an op-library kind.
    static constexpr const char *kTensorInput = "tensor:input";
    static constexpr const char *kTensorParameter = "tensor:parameter";
    // Item data role holding an entry (leaf items only).
    static constexpr int kEntryRole = Qt::UserRole + 1;

    explicit OpPalette(QWidget *parent = nullptr);

    // The drag payload for an entry ("linear", "tensor:input"); the caller owns it.
    static QMimeData *mimeDataFor(const QString &entry);
    // The entry a drop carries, or "" when the mime data is not a palette drag.
    static QString entryFromMimeData(const QMimeData *mime);
    // Rich-text tooltip of a kind: summary, category, ports and parameters.
    static QString toolTipFor(const OpDef &def);

    QLineEdit *searchBox() const { return search_; }
    QTreeWidget *tree() const { return tree_; }

    QString filterText() const;
    void setFilterText(const QString &text);
    // Entries shown under the current filter, in display order.
    QStringList visibleEntries() const;
    // The first entry shown ("" when the filter hides everything).
    QString firstMatch() const;

public slots:
    // Focuses the search box and selects its text. The window owns the Ctrl+Shift+P
    // shortcut the placeholder names (a second one here would make it ambiguous).
    void focusSearch();

protected:
    // Down in the search box moves into the list.
    bool eventFilter(QObject *watched, QEvent *event) override;

signals:
    // An entry was double-clicked, or Enter was pressed on it or in the search box.
    void activated(const QString &entry);

private:
    void populate();
    void applyFilter(const QString &text);
    void activateItem(QTreeWidgetItem *item);

    QLineEdit *search_ = nullptr;
    QTreeWidget *tree_ = nullptr;
};

}  // namespace tapestry::views
