// GUI tests of the tensor shard map (views/shard_map.h; label gui, offscreen):
// the MLP's fc1 split four ways colours fc1.out in four row blocks with a legend
// of ranges and counts; a rank-4 tensor is shown as the 2-D slice the user
// picks; a conv2d split along H shows its input's halos hatched and counted
// exactly; an unsharded tensor is one colour, "not sharded"; tooltips name the
// shard and the coordinates under the cursor. With TAPESTRY_SCREENSHOT_DIR=DIR it
// saves docs/screenshots/studio-shard-map.png.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QHelpEvent>
#include <QImage>
#include <QSpinBox>
#include <QTest>
#include <QToolButton>
#include <QToolTip>

#include "io/project_file.h"
#include "passes/shard.h"
#include "studio_support.h"
#include "views/shard_map.h"

using namespace tapestry;
using namespace tapestry::views;

namespace {

Graph load(const char *name) {
    const QString path = qEnvironmentVariable("TAPESTRY_SOURCE_DIR") + "/projects/" + name + ".tapestry.json";
    LoadResult r = load_project(path.toStdString());
    TAPESTRY_CHECK(r.ok(), "example project does not load");
    return r.graph;
}

// `g` with op's stated shards dropped, sharded again by the pass.
Graph sharded(Graph g, const std::string &op, const std::string &spec) {
    Operation plain = *g.find_op(OpId(op));
    plain.shards.clear();
    g.put_op(std::move(plain));
    auto options = parse_shard_options({spec});
    TAPESTRY_CHECK(options.has_value(), "bad spec");
    // Exactly the split asked for: no propagation to neighbours, no move nodes.
    options->propagate = false;
    options->movement = false;
    auto stage = shard(g, *options);
    TAPESTRY_CHECK(stage.has_value(), "shard pass failed");
    return stage->graph;
}

QStringList rowsOf(const QList<ShardMapWidget::SliceBox> &boxes) {
    QStringList out;
    for (const auto &b : boxes) out << QString("%1:%2").arg(b.row0).arg(b.row1);
    return out;
}

int colourDistance(const QColor &a, const QColor &b) {
    return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
}

// Pixels of the canvas whose luminance is below `level`, inside `rect`.
int darkPixels(const QImage &img, const QRect &rect, int level) {
    int n = 0;
    for (int y = rect.top(); y <= rect.bottom(); ++y)
        for (int x = rect.left(); x <= rect.right(); ++x)
            if (qGray(img.pixel(x, y)) < level) ++n;
    return n;
}

}  // namespace

class TestShardMap : public QObject {
    Q_OBJECT

private slots:
    void init();
    void cleanup();

    void mlpFc1FourWayColoursFourRowBlocks();
    void tooltipNamesShardAndCoordinates();
    void rank4TensorShowsTheChosenSlice();
    void rank1TensorIsOneRow();
    void convSplitAlongHShowsHalosHatched();
    void unshardedTensorIsOneColour();
    void inputHasNoWriters();

private:
    ShardMapWidget *map_ = nullptr;
    QImage grab() const { return map_->canvas()->grab().toImage().convertToFormat(QImage::Format_RGB32); }
};

void TestShardMap::init() {
    map_ = new ShardMapWidget;
    map_->resize(720, 560);
    map_->show();
    QVERIFY(QTest::qWaitForWindowExposed(map_));
}

void TestShardMap::cleanup() {
    delete map_;
    map_ = nullptr;
}

void TestShardMap::mlpFc1FourWayColoursFourRowBlocks() {
    map_->setGraph(sharded(load("mlp"), "fc1", "fc1:0=4"));
    map_->setTensor("h1");
    QCOMPARE(map_->mode(), ShardMapWidget::Mode::writes);
    QCOMPARE(map_->rowDim(), 0);
    QCOMPARE(map_->colDim(), 1);
    const auto boxes = map_->sliceBoxes();
    QCOMPARE(rowsOf(boxes), QStringList({"0:128", "128:256", "256:384", "384:512"}));
    for (const auto &b : boxes) QCOMPARE(b.col1 - b.col0, Coord(4096));
    QCOMPARE(map_->legendLines(), QStringList({"fc1/0 · y · [0:128, 0:4096] · 524,288 elements",
                                               "fc1/1 · y · [128:256, 0:4096] · 524,288 elements",
                                               "fc1/2 · y · [256:384, 0:4096] · 524,288 elements",
                                               "fc1/3 · y · [384:512, 0:4096] · 524,288 elements"}));
    QCOMPARE(map_->summaryText(), QString("4 shards of fc1 write fc1.out: 2,097,152 of 2,097,152 elements, "
                                          "each exactly once"));
    QVERIFY(map_->sharedText().isEmpty());

    // Drawn: each block's centre shows its shard's colour, and the four differ.
    QCoreApplication::processEvents();
    const QImage img = grab();
    QList<QColor> seen;
    for (int k = 0; k < 4; ++k) {
        const QPoint at = map_->canvasPosOf(64 + 128 * k, 1024).toPoint();
        const QColor got = img.pixelColor(at);
        QVERIFY2(colourDistance(got, map_->regionColor(k)) < 40,
                 qPrintable(QString("shard %1: %2 vs %3").arg(k).arg(got.name(), map_->regionColor(k).name())));
        for (const QColor &c : seen) QVERIFY(colourDistance(c, got) > 60);
        seen << got;
    }
}

void TestShardMap::tooltipNamesShardAndCoordinates() {
    map_->setGraph(sharded(load("mlp"), "fc1", "fc1:0=4"));
    map_->setTensor("h1");
    const auto point = map_->pointAt(map_->canvasPosOf(300, 1000));
    QVERIFY(point.has_value());
    QCOMPARE(point->to_vector(), std::vector<Coord>({300, 1000}));
    QCOMPARE(map_->describePoint(*point), QString("fc1.out[300, 1000]\nfc1/2 writes it (y [256:384, 0:4096])"));
    QVERIFY(!map_->pointAt(QPointF(2, 2)).has_value());  // the margin, outside the grid
    // Moving the mouse over the map makes it the canvas's tooltip; off the grid, none.
    // (A pixel holds more than one row here: compare with the point under that pixel.)
    const QPoint pixel = map_->canvasPosOf(300, 1000).toPoint();
    QTest::mouseMove(map_->canvas(), pixel);
    const auto under = map_->pointAt(pixel);
    QVERIFY(under.has_value() && std::abs((*under)[0] - 300) <= 1);
    QCOMPARE(map_->canvas()->toolTip(), map_->describePoint(*under));
    QVERIFY(map_->canvas()->toolTip().contains("fc1/2 writes it"));
    QTest::mouseMove(map_->canvas(), QPoint(2, 2));
    QCOMPARE(map_->canvas()->toolTip(), QString());
}

void TestShardMap::rank4TensorShowsTheChosenSlice() {
    map_->setGraph(sharded(load("convnet"), "conv1", "conv1:2=4"));
    map_->setTensor("conv1_out");  // [8, 16, 32, 32]
    // The last two dims by default; the others fixed at 0 with a spin box each.
    QCOMPARE(map_->rowDim(), 2);
    QCOMPARE(map_->colDim(), 3);
    QCOMPARE(rowsOf(map_->sliceBoxes()), QStringList({"0:8", "8:16", "16:24", "24:32"}));
    const auto spins = map_->findChildren<QSpinBox *>();
    QCOMPARE(spins.size(), 2);
    QCOMPARE(spins[0]->property("dim").toInt(), 0);
    QCOMPARE(spins[1]->property("dim").toInt(), 1);

    // Rows = channels, columns = W: only the shard holding row H = 0 meets the slice.
    map_->setSliceDims(1, 3);
    QCOMPARE(map_->sliceRows(), Coord(16));
    QCOMPARE(map_->sliceCols(), Coord(32));
    auto boxes = map_->sliceBoxes();
    QCOMPARE(boxes.size(), 1);
    QCOMPARE(boxes[0].region, 0);
    QCOMPARE(rowsOf(boxes), QStringList({"0:16"}));
    // Moving the fixed H to 20 (through its spin box) shows conv1/2's part instead.
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);  // the old spin boxes
    QSpinBox *h = nullptr;
    for (QSpinBox *s : map_->findChildren<QSpinBox *>())
        if (s->property("dim").toInt() == 2) h = s;
    QVERIFY(h);
    QCOMPARE(map_->findChildren<QSpinBox *>().size(), 2);
    h->setValue(20);
    QCOMPARE(map_->fixedIndex(2), Coord(20));
    boxes = map_->sliceBoxes();
    QCOMPARE(boxes.size(), 1);
    QCOMPARE(QString::fromStdString(map_->map().regions[static_cast<size_t>(boxes[0].region)].label()),
             QString("conv1/2"));
    // The fixed index is clamped to the tensor.
    map_->setFixedIndex(2, 99);
    QCOMPARE(map_->fixedIndex(2), Coord(31));
    // Picking the column dim for the rows swaps the two.
    map_->setSliceDims(3, 3);
    QCOMPARE(map_->rowDim(), 3);
    QCOMPARE(map_->colDim(), 1);
    const auto point = map_->pointAt(map_->canvasPosOf(5, 7));
    QVERIFY(point.has_value());
    QCOMPARE(point->to_vector(), std::vector<Coord>({0, 7, 31, 5}));
}

void TestShardMap::rank1TensorIsOneRow() {
    map_->setGraph(sharded(load("mlp"), "fc1", "fc1:1=2"));
    map_->setTensor("b1");  // fc1.bias [4096], a parameter: read in two halves
    QCOMPARE(map_->rowDim(), -1);
    QCOMPARE(map_->colDim(), 0);
    QCOMPARE(map_->consumers(), QStringList({"fc1"}));
    map_->setConsumer("fc1");
    QCOMPARE(map_->mode(), ShardMapWidget::Mode::reads);
    QCOMPARE(map_->sliceRows(), Coord(1));
    const auto boxes = map_->sliceBoxes();
    QCOMPARE(boxes.size(), 2);
    QCOMPARE(boxes[0].col1, Coord(2048));
    QCOMPARE(boxes[1].col0, Coord(2048));
    QVERIFY(map_->summaryText().startsWith("2 shards of fc1 read fc1.bias: 4,096 of 4,096 elements"));
}

void TestShardMap::convSplitAlongHShowsHalosHatched() {
    map_->setGraph(sharded(load("convnet"), "conv1", "conv1:2=4"));
    map_->setTensor("x");  // images [8, 3, 32, 32], read by conv1 only
    QCOMPARE(map_->consumers(), QStringList({"conv1"}));
    // The Reads button picks the (only) consumer.
    for (QToolButton *b : map_->findChildren<QToolButton *>())
        if (b->text() == "Reads") b->click();
    QCOMPARE(map_->mode(), ShardMapWidget::Mode::reads);
    QCOMPARE(map_->consumer(), QString("conv1"));
    QCOMPARE(rowsOf(map_->sliceBoxes()), QStringList({"0:9", "7:17", "15:25", "23:32"}));
    QCOMPARE(rowsOf(map_->sliceSharedBoxes()), QStringList({"7:9", "15:17", "23:25"}));
    QCOMPARE(map_->sharedText(), QString("halo: 3×(8×3×2×32) — 4,608 elements read by more than one shard"));
    QVERIFY(map_->summaryText().contains("4 shards of conv1 read images: 24,576 of 24,576 elements"));
    QCOMPARE(map_->describePoint(ZPoint{0, 0, 8, 3}),
             QString("images[0, 0, 8, 3]\nconv1/0 reads it (x [0:8, 0:3, 0:9, 0:32])\n"
                     "conv1/1 reads it (x [0:8, 0:3, 7:17, 0:32])\nshared by 2 shards"));

    // The halo rows are hatched (dark hatch lines), the rows read once are not.
    QCoreApplication::processEvents();
    const QImage img = grab();
    auto band = [&](Coord row0, Coord row1) {
        // Columns 1–6: clear of the shard labels centred in each region.
        const QPointF a = map_->canvasPosOf(row0, 1), b = map_->canvasPosOf(row1 - 1, 6);
        return QRectF(a, b).toRect();
    };
    QVERIFY(darkPixels(img, band(7, 9), 110) > 20);
    QVERIFY(darkPixels(img, band(15, 17), 110) > 20);
    QCOMPARE(darkPixels(img, band(11, 13), 110), 0);

    // Back to writes: x is an input.
    map_->setMode(ShardMapWidget::Mode::writes);
    QVERIFY(map_->sliceBoxes().isEmpty());

    const QString shots = tapestry::studio::testing::screenshotDir();
    if (!shots.isEmpty()) {
        map_->setMode(ShardMapWidget::Mode::reads);
        map_->resize(760, 600);
        QTest::qWait(50);
        QVERIFY(map_->grab().save(QDir(shots).filePath("studio-shard-map.png")));
    }
}

void TestShardMap::unshardedTensorIsOneColour() {
    map_->setGraph(load("mlp"));
    map_->setTensor("h2");  // fc2.out, written by fc2, which is not sharded
    const auto boxes = map_->sliceBoxes();
    QCOMPARE(boxes.size(), 1);
    QCOMPARE(rowsOf(boxes), QStringList({"0:512"}));
    QCOMPARE(map_->summaryText(), QString("Written by fc2 — not sharded · 2,097,152 elements"));
    QCoreApplication::processEvents();
    const QImage img = grab();
    const QColor a = img.pixelColor(map_->canvasPosOf(10, 10).toPoint());
    const QColor b = img.pixelColor(map_->canvasPosOf(500, 4000).toPoint());
    QCOMPARE(a, b);
    QVERIFY(colourDistance(a, map_->regionColor(0)) < 40);
    // A graph update keeps the tensor; one without it clears the map.
    map_->setGraph(sharded(load("mlp"), "fc2", "fc2:0=2"));
    QCOMPARE(map_->tensor(), QString("h2"));
    QCOMPARE(map_->sliceBoxes().size(), 2);
    Graph without = load("mlp");
    without.remove_op(OpId("relu2"));
    without.remove_op(OpId("fc2"));
    without.remove_tensor(TensorId("h2"));
    map_->setGraph(without);
    QCOMPARE(map_->tensor(), QString());
    QVERIFY(map_->sliceBoxes().isEmpty());
}

void TestShardMap::inputHasNoWriters() {
    map_->setGraph(load("mlp"));
    map_->setTensor("w2");
    QCOMPARE(map_->summaryText(), QString("fc2.weight is a parameter: no operation writes it."));
    QVERIFY(map_->legendLines().isEmpty());
}

QTEST_MAIN(TestShardMap)
#include "test_shard_map.moc"
