#include "canvas_export.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QImage>
#include <QMessageBox>
#include <QPainter>
#include <QScopeGuard>
#include <QSvgGenerator>

#include "dock.h"
#include "edit/editor.h"
#include "io/atomic_file.h"
#include "io/graphviz.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "views/graph_scene.h"

namespace tapestry::studio {

namespace {

QString exportText(const Graph &graph, const QStringList &selected, const ExportRequest &r) {
    Graph g = graph;
    if (r.selection_only) {
        std::vector<std::string> ids;
        for (const QString &id : selected) ids.push_back(id.toStdString());
        g = edit::extract(graph, ids);
    }
    if (r.format == QLatin1String("json"))
        return QString::fromStdString(save_project_with_values(g, r.path.toStdString()));
    return QString::fromStdString(write_file_atomically(r.path.toStdString(), to_dot(g, OpLibrary::standard())));
}

QString exportSvg(views::GraphScene &scene, const QRectF &source, const QColor &background, const ExportRequest &r) {
    QSvgGenerator svg;
    svg.setFileName(r.path);
    svg.setSize(source.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
    svg.setTitle(r.title);
    svg.setDescription(QObject::tr("Tapestry Studio export of %1").arg(r.title));
    QPainter painter;
    if (!painter.begin(&svg)) return QObject::tr("cannot write %1").arg(r.path);
    painter.fillRect(QRectF(QPointF(0, 0), source.size()), background);
    scene.render(&painter, QRectF(QPointF(0, 0), source.size()), source);
    painter.end();
    return QFileInfo(r.path).size() > 0 ? QString() : QObject::tr("cannot write %1").arg(r.path);
}

QString exportPng(views::GraphScene &scene, const QRectF &source, const QColor &background, const ExportRequest &r) {
    if (!(r.scale > 0) || r.scale > 8) return QObject::tr("the scale must be between 0 and 8, not %1").arg(r.scale);
    const QSizeF pixels = source.size() * r.scale;
    if (pixels.width() * pixels.height() > 400e6)
        return QObject::tr("the drawing is too large for an image at this scale; export SVG instead");
    QImage image(pixels.toSize(), QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return QObject::tr("the drawing is too large for an image; export SVG instead");
    image.fill(background);
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    scene.render(&painter, QRectF(QPointF(0, 0), pixels), source);
    painter.end();
    return image.save(r.path) ? QString() : QObject::tr("cannot write %1").arg(r.path);
}

}  // namespace

QString exportCanvas(views::GraphScene &scene, const Graph &graph, const ExportRequest &r) {
    const QStringList selected = scene.selectedNodeIds();
    if (r.selection_only && selected.isEmpty()) return QObject::tr("nothing is selected");
    if (r.format == QLatin1String("dot") || r.format == QLatin1String("json")) return exportText(graph, selected, r);
    if (r.format != QLatin1String("svg") && r.format != QLatin1String("png"))
        return QObject::tr("unknown export format '%1'").arg(r.format);
    if (!scene.hasLayout()) return QObject::tr("nothing is laid out yet");
    QRectF source;
    if (r.selection_only) {
        for (const QString &id : selected)
            if (views::NodeItem *n = scene.nodeItem(id)) source |= n->sceneBoundingRect();
    } else {
        source = scene.graphBounds();
    }
    source = source.adjusted(-24, -24, 24, 24);
    const QColor background = r.dark ? QColor(0x14, 0x18, 0x1e) : QColor(0xf3, 0xf5, 0xf8);
    // Selection rings are not part of a drawing.
    scene.selectNodes({});
    auto restore = qScopeGuard([&] { scene.selectNodes(selected); });
    return r.format == QLatin1String("svg") ? exportSvg(scene, source, background, r)
                                            : exportPng(scene, source, background, r);
}

QString exportWithDialog(QWidget *parent, views::GraphScene &scene, const Graph &graph, const QString &base_name,
                         bool dark) {
    QDialog dialog(parent);
    dialog.setObjectName(QStringLiteral("exportDialog"));
    dialog.setWindowTitle(QObject::tr("Export"));
    auto *form = new QFormLayout(&dialog);
    auto *format = new QComboBox(&dialog);
    format->addItem(QObject::tr("SVG drawing"), QStringLiteral("svg"));
    format->addItem(QObject::tr("PNG image"), QStringLiteral("png"));
    format->addItem(QObject::tr("Graphviz DOT"), QStringLiteral("dot"));
    format->addItem(QObject::tr("Project JSON"), QStringLiteral("json"));
    const int selected = static_cast<int>(scene.selectedNodeIds().size());
    auto *scope = new QComboBox(&dialog);
    scope->addItem(QObject::tr("Whole graph"));
    scope->addItem(QObject::tr("Selection (%1)").arg(countText(selected, QObject::tr("node"), QObject::tr("nodes"))));
    scope->setCurrentIndex(selected == 0 ? 0 : 1);
    scope->setEnabled(selected > 0);
    auto *scale = new QDoubleSpinBox(&dialog);
    scale->setRange(0.25, 8.0);
    scale->setSingleStep(0.5);
    scale->setValue(2.0);
    scale->setSuffix(QStringLiteral(" ×"));
    scale->setEnabled(false);
    form->addRow(QObject::tr("&Format:"), format);
    form->addRow(QObject::tr("&What:"), scope);
    form->addRow(QObject::tr("PNG &scale:"), scale);
    QObject::connect(format, &QComboBox::currentIndexChanged, scale,
                     [=] { scale->setEnabled(format->currentData().toString() == QLatin1String("png")); });
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() != QDialog::Accepted) return {};
    ExportRequest r;
    r.format = format->currentData().toString();
    r.selection_only = scope->currentIndex() == 1;
    r.scale = scale->value();
    r.dark = dark;
    r.title = base_name;
    QString base = base_name.isEmpty() ? QStringLiteral("graph") : QFileInfo(base_name).completeBaseName();
    base.remove(QLatin1String(".tapestry"));
    const QString suffix =
        r.format == QLatin1String("json") ? QStringLiteral(".tapestry.json") : QLatin1Char('.') + r.format;
    r.path = QFileDialog::getSaveFileName(parent, QObject::tr("Export"), QDir::home().filePath(base + suffix));
    if (r.path.isEmpty()) return {};
    if (!r.path.endsWith(suffix, Qt::CaseInsensitive)) r.path += suffix;
    const QString error = exportCanvas(scene, graph, r);
    if (error.isEmpty()) return QObject::tr("Exported %1").arg(r.path);
    QMessageBox::warning(parent, QObject::tr("Export failed"), QObject::tr("Could not export: %1").arg(error));
    return {};
}

}  // namespace tapestry::studio
