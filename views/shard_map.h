// The tensor shard map (issue 5, DESIGN.md §9): a tensor's index grid — a 2-D
// slice of it for rank > 2, a single row for rank 1 — coloured by which shard of
// its producer writes each region, or by which shard of a chosen consumer reads
// it, with regions read by more than one shard (halos, replicated reads) hatched
// and counted. Regions come from the engine (passes/shard_regions.h); the widget
// draws boxes scaled to its size, never elements, so any tensor size is cheap.
//
// Embedding: create it, call setGraph() with a stage's graph and setTensor() with
// a tensor id (e.g. from the canvas selection); everything else is the user's.
#pragma once

#include <QColor>
#include <QList>
#include <QString>
#include <QWidget>
#include <optional>

#include "graph/graph.h"
#include "passes/shard_regions.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QTableWidget;
class QToolButton;
class QHBoxLayout;

namespace tapestry::views {

class ShardMapWidget;

// The drawing area: the slice's grid scaled to fit, axes with the region
// boundaries, and a tooltip (updated as the mouse moves) naming the tensor
// coordinates under the cursor and every shard writing or reading that element.
class ShardMapCanvas : public QWidget {
public:
    explicit ShardMapCanvas(ShardMapWidget *owner);
    QSize sizeHint() const override { return {420, 260}; }
    QSize minimumSizeHint() const override { return {160, 100}; }
    // Where the slice's grid is drawn (widget coordinates); empty without a tensor.
    QRectF gridRect() const;

protected:
    void paintEvent(QPaintEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;

private:
    ShardMapWidget *owner_;
};

class ShardMapWidget : public QWidget {
    Q_OBJECT
public:
    enum class Mode { writes, reads };

    // One region as drawn in the current slice: rows [row0, row1) × columns
    // [col0, col1) of the slice (a rank-1 tensor has the one row [0, 1)).
    struct SliceBox {
        int region = -1;  // index into map().regions; -1 for a shared (hatched) box
        Coord row0 = 0, row1 = 1, col0 = 0, col1 = 1;
        friend bool operator==(const SliceBox &, const SliceBox &) = default;
    };

    explicit ShardMapWidget(QWidget *parent = nullptr);

    // The graph whose tensors the map shows (a copy sharing nodes is kept). The
    // tensor, mode, consumer and slice stay when the graph still has them.
    void setGraph(const Graph &graph);
    const Graph &graph() const { return graph_; }
    // The tensor to show ("" shows nothing). The slice shows the dims its shards
    // split (a 4-way split of dim 0 shows dim 0), else the last two dims.
    void setTensor(const QString &tensor_id);
    // The dims along which the regions shown cut the tensor, in order.
    QList<int> splitDims() const;
    QString tensor() const { return tensor_; }

    // Colour by the producer's shards (writes) or by a consumer's shards (reads).
    void setMode(Mode mode);
    Mode mode() const { return mode_; }
    // Operations reading the tensor, in graph order; the one whose reads are shown.
    QStringList consumers() const { return consumers_; }
    void setConsumer(const QString &op_id);  // also switches to reads
    QString consumer() const { return consumer_; }

    // The displayed dims: rows and columns of the slice (rowDim() is -1 for a
    // rank-1 tensor, both -1 for rank 0). They must differ; setting one to the
    // other's dim swaps them.
    void setSliceDims(int row_dim, int col_dim);
    int rowDim() const { return row_dim_; }
    int colDim() const { return col_dim_; }
    // The coordinate at which a dim that is not displayed is fixed (clamped to the
    // tensor's range); the tensor's start by default.
    void setFixedIndex(int dim, Coord value);
    Coord fixedIndex(int dim) const;

    // The engine's regions for the current tensor and mode (empty without a tensor).
    const TensorShardMap &map() const { return map_; }
    // The regions and shared boxes that meet the current slice, projected onto it.
    QList<SliceBox> sliceBoxes() const;
    QList<SliceBox> sliceSharedBoxes() const;
    // The slice's extent: rows × columns (1 × n for rank 1).
    Coord sliceRows() const;
    Coord sliceCols() const;
    // The colour a region is drawn in (one per shard).
    QColor regionColor(int region) const;

    // The line under the map: who writes/reads, counts, "not sharded", the halo.
    QString summaryText() const;
    // "halo: 3×(8×3×2×32) — 4,608 elements read by more than one shard"; "" if none.
    QString sharedText() const;
    // Legend rows: "fc1/0 · y · [0:128, 0:4096] · 524,288 elements".
    QStringList legendLines() const;
    // The error when the tensor's regions could not be derived ("" when fine).
    QString errorText() const { return error_; }

    // The full tensor point under a canvas position (nullopt outside the grid), and
    // the tooltip for it: the point and every shard writing/reading it.
    std::optional<ZPoint> pointAt(const QPointF &canvas_pos) const;
    QPointF canvasPosOf(Coord row, Coord col) const;  // centre of that cell
    QString describePoint(const ZPoint &point) const;
    ShardMapCanvas *canvas() const { return canvas_; }

signals:
    // The tensor, mode, consumer or slice changed (the map was recomputed).
    void mapChanged();

private:
    friend class ShardMapCanvas;
    void rebuild();          // recompute the map and refresh every control
    void showSplitDims();    // the slice onto the split dims, when it hides them
    void refreshControls();  // combos and spin boxes from the state
    void refreshLegend();
    QString shapeText(const ZRange &r) const;

    Graph graph_;
    QString tensor_;
    Mode mode_ = Mode::writes;
    QString consumer_;
    QStringList consumers_;
    int row_dim_ = -1, col_dim_ = -1;
    std::vector<Coord> fixed_;
    TensorShardMap map_;
    QString error_;
    QList<QColor> label_colors_;  // per map_.labels() entry
    std::vector<int> region_label_;

    QLabel *title_ = nullptr;
    QToolButton *writes_button_ = nullptr;
    QToolButton *reads_button_ = nullptr;
    QComboBox *consumer_box_ = nullptr;
    QWidget *slice_bar_ = nullptr;
    QHBoxLayout *slice_layout_ = nullptr;
    QComboBox *row_box_ = nullptr;
    QComboBox *col_box_ = nullptr;
    QList<QSpinBox *> fixed_spins_;
    QList<QLabel *> fixed_labels_;
    ShardMapCanvas *canvas_ = nullptr;
    QLabel *summary_ = nullptr;
    QTableWidget *legend_ = nullptr;
    bool updating_ = false;
};

}  // namespace tapestry::views
