// GUI tests of the operation palette (label gui, offscreen): every op-library
// kind appears once under its category, plus the two tensor entries; the search
// box filters by kind, category and summary words; Enter and double-click
// activate an entry; a drag carries the entry in the palette mime type.
#include <QLineEdit>
#include <QMimeData>
#include <QSet>
#include <QSignalSpy>
#include <QTest>
#include <QTreeWidget>

#include "ops/library.h"
#include "views/palette.h"

using namespace tapestry;
using namespace tapestry::views;

namespace {

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QTreeWidgetItem *leafFor(QTreeWidget *tree, const QString &entry) {
    for (QTreeWidgetItemIterator it(tree); *it; ++it)
        if ((*it)->data(0, OpPalette::kEntryRole).toString() == entry) return *it;
    return nullptr;
}

}  // namespace

class TestPalette : public QObject {
    Q_OBJECT

private slots:
    void everyLibraryKindAppearsOnceUnderItsCategory();
    void tensorEntriesComeFirst();
    void tooltipsCarrySummaryPortsAndParams();
    void filterMatchesKindCategoryAndSummary_data();
    void filterMatchesKindCategoryAndSummary();
    void filterIsCaseInsensitiveAndClearingShowsAll();
    void enterInSearchActivatesFirstMatch();
    void enterWithNoMatchActivatesNothing();
    void doubleClickActivatesTheEntry();
    void mimeDataCarriesTheEntry_data();
    void mimeDataCarriesTheEntry();
    void dragFromTheTreeUsesThePaletteMimeType();
};

void TestPalette::everyLibraryKindAppearsOnceUnderItsCategory() {
    OpPalette palette;
    QTreeWidget *tree = palette.tree();
    QHash<QString, int> seen;
    for (int g = 0; g < tree->topLevelItemCount(); ++g) {
        QTreeWidgetItem *group = tree->topLevelItem(g);
        QVERIFY2(group->data(0, OpPalette::kEntryRole).toString().isEmpty(), "a category is not an entry");
        QVERIFY2(!(group->flags() & Qt::ItemIsDragEnabled), "a category cannot be dragged");
        QVERIFY(!group->icon(0).isNull());  // the category's colour swatch
        for (int i = 0; i < group->childCount(); ++i) {
            const QString entry = group->child(i)->data(0, OpPalette::kEntryRole).toString();
            ++seen[entry];
            if (entry.startsWith(QLatin1String("tensor:"))) {
                QCOMPARE(group->text(0), QStringLiteral("Tensor"));
                continue;
            }
            const OpDef *def = OpLibrary::standard().find(entry.toStdString());
            QVERIFY2(def, qPrintable(QStringLiteral("palette entry %1 is not a library kind").arg(entry)));
            QCOMPARE(group->text(0), qs(def->category()));
            QCOMPARE(group->child(i)->text(0), entry);
        }
    }
    // Every kind but `fused`, which only the fuse pass makes (it needs its chain).
    std::vector<const OpDef *> all;
    for (const OpDef *def : OpLibrary::standard().all())
        if (def->kind() != "fused") all.push_back(def);
    QCOMPARE(seen.value(QStringLiteral("fused")), 0);
    QCOMPARE(seen.size(), static_cast<qsizetype>(all.size()) + 2);
    for (const OpDef *def : all) QCOMPARE(seen.value(qs(def->kind())), 1);
    QCOMPARE(seen.value(QString::fromLatin1(OpPalette::kTensorInput)), 1);
    QCOMPARE(seen.value(QString::fromLatin1(OpPalette::kTensorParameter)), 1);
    QCOMPARE(palette.visibleEntries().size(), static_cast<qsizetype>(all.size()) + 2);
}

void TestPalette::tensorEntriesComeFirst() {
    OpPalette palette;
    const QStringList entries = palette.visibleEntries();
    QVERIFY(entries.size() > 2);
    QCOMPARE(entries.at(0), QString::fromLatin1(OpPalette::kTensorInput));
    QCOMPARE(entries.at(1), QString::fromLatin1(OpPalette::kTensorParameter));
    QCOMPARE(palette.tree()->topLevelItem(0)->text(0), QStringLiteral("Tensor"));
}

void TestPalette::tooltipsCarrySummaryPortsAndParams() {
    OpPalette palette;
    QTreeWidgetItem *linear = leafFor(palette.tree(), QStringLiteral("linear"));
    QVERIFY(linear);
    const QString tip = linear->toolTip(0);
    QVERIFY2(tip.contains(qs(OpLibrary::standard().find("linear")->summary()).toHtmlEscaped()), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("<code>bias</code> (optional)")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("<code>y</code>")), qPrintable(tip));
    const QString gelu = leafFor(palette.tree(), QStringLiteral("gelu"))->toolTip(0);
    QVERIFY2(gelu.contains(QStringLiteral("<code>approximate</code>: string, default &quot;none&quot;")),
             qPrintable(gelu));
    QVERIFY2(gelu.contains(QStringLiteral("one of none, tanh")), qPrintable(gelu));
    const QString pow = leafFor(palette.tree(), QStringLiteral("pow"))->toolTip(0);
    QVERIFY2(pow.contains(QStringLiteral("<code>exponent</code>: float, required")), qPrintable(pow));
}

void TestPalette::filterMatchesKindCategoryAndSummary_data() {
    QTest::addColumn<QString>("filter");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("norm: the normalization kinds")
        << QStringLiteral("norm")
        << QStringList{QStringLiteral("batchnorm"), QStringLiteral("layernorm"), QStringLiteral("rmsnorm")};
    QTest::newRow("category words") << QStringLiteral("linear algebra")
                                    << QStringList{QStringLiteral("matmul"), QStringLiteral("linear"), QStringLiteral("partial_matmul")};
    QTest::newRow("summary words") << QStringLiteral("NCHW window")
                                   << QStringList{QStringLiteral("avg_pool2d"), QStringLiteral("max_pool2d")};
    QTest::newRow("every word must match")
        << QStringLiteral("input tensor") << QStringList{QString::fromLatin1(OpPalette::kTensorInput)};
    QTest::newRow("summary words reach composites")
        << QStringLiteral("softmax") << QStringList{QStringLiteral("attention"), QStringLiteral("softmax")};
    QTest::newRow("nothing") << QStringLiteral("no-such-op") << QStringList{};
}

void TestPalette::filterMatchesKindCategoryAndSummary() {
    QFETCH(QString, filter);
    QFETCH(QStringList, expected);
    OpPalette palette;
    palette.setFilterText(filter);
    QStringList shown = palette.visibleEntries();
    shown.sort();
    expected.sort();
    QCOMPARE(shown, expected);
    // Hidden leaves are hidden in the tree, and so are groups left empty.
    for (int g = 0; g < palette.tree()->topLevelItemCount(); ++g) {
        QTreeWidgetItem *group = palette.tree()->topLevelItem(g);
        int visible = 0;
        for (int i = 0; i < group->childCount(); ++i) {
            const bool want = expected.contains(group->child(i)->data(0, OpPalette::kEntryRole).toString());
            QCOMPARE(group->child(i)->isHidden(), !want);
            visible += want ? 1 : 0;
        }
        QCOMPARE(group->isHidden(), visible == 0);
    }
}

void TestPalette::filterIsCaseInsensitiveAndClearingShowsAll() {
    OpPalette palette;
    const qsizetype all = palette.visibleEntries().size();
    palette.setFilterText(QStringLiteral("LayerNorm"));
    QCOMPARE(palette.visibleEntries(), QStringList{QStringLiteral("layernorm")});
    palette.searchBox()->clear();
    QCOMPARE(palette.visibleEntries().size(), all);
}

void TestPalette::enterInSearchActivatesFirstMatch() {
    OpPalette palette;
    palette.show();
    QVERIFY(QTest::qWaitForWindowExposed(&palette));
    QSignalSpy spy(&palette, &OpPalette::activated);
    palette.searchBox()->setFocus();
    QTest::keyClicks(palette.searchBox(), QStringLiteral("norm"));
    QCOMPARE(palette.firstMatch(), QStringLiteral("batchnorm"));
    QTest::keyClick(palette.searchBox(), Qt::Key_Return);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("batchnorm"));

    // Down moves into the list at the first match; Enter there activates it too.
    palette.searchBox()->clear();
    QTest::keyClicks(palette.searchBox(), QStringLiteral("relu"));
    QTest::keyClick(palette.searchBox(), Qt::Key_Down);
    QCOMPARE(palette.tree()->currentItem()->data(0, OpPalette::kEntryRole).toString(), QStringLiteral("relu"));
    QTest::keyClick(palette.tree(), Qt::Key_Return);
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.at(1).at(0).toString(), QStringLiteral("relu"));
}

void TestPalette::enterWithNoMatchActivatesNothing() {
    OpPalette palette;
    QSignalSpy spy(&palette, &OpPalette::activated);
    palette.setFilterText(QStringLiteral("zzz"));
    QTest::keyClick(palette.searchBox(), Qt::Key_Return);
    QCOMPARE(spy.count(), 0);
}

void TestPalette::doubleClickActivatesTheEntry() {
    OpPalette palette;
    palette.resize(300, 700);
    palette.show();
    QVERIFY(QTest::qWaitForWindowExposed(&palette));
    QSignalSpy spy(&palette, &OpPalette::activated);
    QTreeWidget *tree = palette.tree();
    QTreeWidgetItem *item = leafFor(tree, QStringLiteral("matmul"));
    QVERIFY(item);
    tree->scrollToItem(item);
    const QPoint at = tree->visualItemRect(item).center();
    QCOMPARE(tree->itemAt(at), item);
    // A real double-click: press and release, then the double-click event
    // (QTest::mouseDClick alone sends only the latter).
    QTest::mouseClick(tree->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(spy.count(), 0);  // a single click only selects
    QTest::mouseDClick(tree->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("matmul"));

    // A category row is not an entry: double-clicking it activates nothing.
    QTreeWidgetItem *group = item->parent();
    const QPoint group_at = tree->visualItemRect(group).center();
    QTest::mouseClick(tree->viewport(), Qt::LeftButton, Qt::NoModifier, group_at);
    QTest::mouseDClick(tree->viewport(), Qt::LeftButton, Qt::NoModifier, group_at);
    QCOMPARE(spy.count(), 1);
}

void TestPalette::mimeDataCarriesTheEntry_data() {
    QTest::addColumn<QString>("entry");
    QTest::newRow("op kind") << QStringLiteral("linear");
    QTest::newRow("input tensor") << QString::fromLatin1(OpPalette::kTensorInput);
    QTest::newRow("parameter tensor") << QString::fromLatin1(OpPalette::kTensorParameter);
}

void TestPalette::mimeDataCarriesTheEntry() {
    QFETCH(QString, entry);
    std::unique_ptr<QMimeData> mime(OpPalette::mimeDataFor(entry));
    QCOMPARE(QString::fromLatin1(OpPalette::kMimeType), QStringLiteral("application/x-tapestry-palette"));
    QVERIFY(mime->hasFormat(QStringLiteral("application/x-tapestry-palette")));
    QCOMPARE(mime->data(QStringLiteral("application/x-tapestry-palette")), entry.toUtf8());
    QCOMPARE(OpPalette::entryFromMimeData(mime.get()), entry);

    QMimeData foreign;
    foreign.setText(entry);
    QCOMPARE(OpPalette::entryFromMimeData(&foreign), QString());
}

void TestPalette::dragFromTheTreeUsesThePaletteMimeType() {
    // QDrag::exec blocks, so ask the tree's model for the drag payload the way
    // QAbstractItemView::startDrag does.
    OpPalette palette;
    QTreeWidget *tree = palette.tree();
    QTreeWidgetItem *item = leafFor(tree, QStringLiteral("softmax"));
    QVERIFY(item);
    QVERIFY(item->flags() & Qt::ItemIsDragEnabled);
    const QModelIndex index = tree->indexFromItem(item);
    QVERIFY(tree->model()->mimeTypes().contains(QString::fromLatin1(OpPalette::kMimeType)));
    std::unique_ptr<QMimeData> mime(tree->model()->mimeData({index}));
    QVERIFY(mime);
    QCOMPARE(OpPalette::entryFromMimeData(mime.get()), QStringLiteral("softmax"));
}

QTEST_MAIN(TestPalette)
#include "test_palette.moc"
