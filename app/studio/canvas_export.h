// Exporting what the canvas shows (DESIGN.md §10): the whole graph or the
// selection as an SVG drawing, a PNG image at a chosen scale, Graphviz DOT source
// or a project JSON file (values beside it) — and the File ▸ Export… dialog.
#pragma once

#include <QString>

class QWidget;

namespace tapestry {
class Graph;
}

namespace tapestry::views {
class GraphScene;
}

namespace tapestry::studio {

struct ExportRequest {
    QString path;
    QString format;  // "svg", "png", "dot" or "json"
    bool selection_only = false;
    double scale = 2.0;  // PNG pixels per canvas unit
    bool dark = false;   // the canvas colours of the dark theme
    QString title;       // an SVG's title and description
};

// Writes the export; "" or why it could not. The selection survives an image
// export (its rings are not drawn).
QString exportCanvas(views::GraphScene &scene, const Graph &graph, const ExportRequest &request);

// File ▸ Export…: asks for the format, the scope and the PNG scale, then a file
// name (based on `base_name`), and exports; a failure is shown in a message box.
// Returns the status line to show ("" when the user cancelled).
QString exportWithDialog(QWidget *parent, views::GraphScene &scene, const Graph &graph, const QString &base_name,
                         bool dark);

}  // namespace tapestry::studio
