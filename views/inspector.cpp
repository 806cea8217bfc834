#include "views/inspector.h"

#include <QLabel>
#include <QLocale>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>
#include <cmath>

#include "graph/resolve.h"
#include "ops/library.h"
#include "views/graph_scene.h"

namespace tapestry::views {

namespace {

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}
QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}
QString esc(const std::string &s) {
    return qs(s).toHtmlEscaped();
}
QString esc(const QString &s) {
    return s.toHtmlEscaped();
}

// Counts with digit grouping ("2,097,152"), independent of the user's locale so
// that copied numbers read the same everywhere.
QLocale numbers() {
    QLocale l(QLocale::English, QLocale::UnitedStates);
    l.setNumberOptions(QLocale::DefaultNumberOptions);
    return l;
}

const char *kMono = "font-family:'DejaVu Sans Mono',monospace;";

QString shapeText(const ZPoint &shape) {
    QStringList dims;
    for (Coord c : shape.coords()) dims << QString::number(c);
    return QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QString mono(const QString &text) {
    return QStringLiteral("<span style=\"%1\">%2</span>").arg(kMono, text);
}

QString nodeLink(const std::string &id) {
    const QString href = QStringLiteral("node:") + QString::fromLatin1(QUrl::toPercentEncoding(qs(id)));
    return QStringLiteral("<a href=\"%1\" style=\"color:#1d4ed8;text-decoration:none\">%2</a>").arg(href, esc(id));
}

QString flopsText(double flops) {
    const char *units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
    int u = 0;
    while (flops >= 1000 && u < 5) {
        flops /= 1000;
        ++u;
    }
    return QStringLiteral("%1 %2").arg(QLocale::c().toString(flops, 'g', u ? 4 : 12), QLatin1String(units[u]));
}

QString bytesText(double bytes) {
    return QLocale::c().formattedDataSize(static_cast<qint64>(std::llround(bytes)), 2, QLocale::DataSizeIecFormat);
}

QString section(const QString &title) {
    return QStringLiteral("<p style=\"margin-top:16px;margin-bottom:4px;color:#334155;font-weight:600;\">%1</p>")
        .arg(esc(title));
}

// A two-column key/value table.
class Fields {
public:
    void add(const QString &key, const QString &value_html) {
        rows_ += QStringLiteral("<tr><td style=\"color:#64748b;padding-right:12px\">%1</td><td>%2</td></tr>")
                     .arg(esc(key), value_html);
    }
    QString html() const { return QStringLiteral("<table cellspacing=0 cellpadding=2>%1</table>").arg(rows_); }

private:
    QString rows_;
};

QString severityColor(Severity s) {
    switch (s) {
        case Severity::error: return QStringLiteral("#b91c1c");
        case Severity::warning: return QStringLiteral("#b45309");
        case Severity::info: return QStringLiteral("#1d4ed8");
    }
    return QStringLiteral("#000");
}

QString issueBox(const Issue &issue) {
    const QString color = severityColor(issue.severity);
    QString where = issue.json_path.empty() ? QString() : QStringLiteral("<br/>%1").arg(mono(esc(issue.json_path)));
    return QStringLiteral(
               "<table width=\"100%\" cellspacing=0 cellpadding=5 style=\"margin:3px 0\">"
               "<tr><td style=\"background:%1;\" width=4></td>"
               "<td style=\"background:#fef7f7;\"><b style=\"color:%1\">%2</b> "
               "<span style=\"color:#64748b\">%3</span><br/>%4%5</td></tr></table>")
        .arg(color, esc(std::string(severity_name(issue.severity))), esc(issue.code), esc(issue.message), where);
}

QString issuesFor(const std::vector<Issue> &issues, const std::string &id, const std::vector<std::string> &also) {
    QString html;
    for (const Issue &i : issues) {
        const bool mine = i.node == id || std::find(also.begin(), also.end(), i.node) != also.end();
        if (mine) html += issueBox(i);
    }
    return html;
}

QString selectionText(const TensorSelection &s) {
    return nodeLink(s.tensor.value) + mono(esc(s.range.to_string()));
}

// [A | b | window] as a small bordered matrix: one row per tensor dimension,
// one column per index dimension, then the offset and the window.
QString projectionMatrix(const IndexProjection &p) {
    const ZMatrix &a = p.map().matrix();
    auto cell = [](const QString &text, bool strong, const QString &bg) {
        return QStringLiteral("<td align=right style=\"padding:1px 6px;background:%1;color:%2\">%3</td>")
            .arg(bg, strong ? QStringLiteral("#0f172a") : QStringLiteral("#a0aec0"), text);
    };
    auto rule = [] { return QStringLiteral("<td style=\"background:#94a3b8\" width=1></td>"); };
    QString head = QStringLiteral("<tr><td></td>");
    for (int c = 0; c < a.cols(); ++c)
        head += QStringLiteral("<td align=right style=\"padding:0 6px;color:#94a3b8\">i%1</td>").arg(c);
    head += QStringLiteral(
        "<td></td><td align=right style=\"padding:0 6px;color:#94a3b8\">b</td><td></td>"
        "<td align=right style=\"padding:0 6px;color:#94a3b8\">window</td></tr>");
    QString rows;
    for (int r = 0; r < a.rows(); ++r) {
        rows += QStringLiteral("<tr><td style=\"color:#94a3b8;padding-right:4px\">d%1</td>").arg(r);
        for (int c = 0; c < a.cols(); ++c) rows += cell(QString::number(a.at(r, c)), a.at(r, c) != 0, "#f1f5f9");
        rows += rule();
        rows += cell(QString::number(p.map().offset()[r]), p.map().offset()[r] != 0, "#eef2ff");
        rows += rule();
        rows += cell(QString::number(p.window()[r]), p.window()[r] != 1, "#ecfdf5");
        rows += QStringLiteral("</tr>");
    }
    return QStringLiteral("<table cellspacing=0 cellpadding=0 style=\"%1\">%2%3</table>").arg(kMono, head, rows);
}

QString portLabel(const std::string &port, size_t operand, size_t count) {
    return count > 1 ? QStringLiteral("%1[%2]").arg(qs(port)).arg(operand) : qs(port);
}

QString operationHtml(const Graph &g, const std::vector<Issue> &issues, const Operation &op) {
    const OpLibrary &lib = OpLibrary::standard();
    const OpDef *def = lib.find(op.kind);
    const QString category = def ? qs(def->category()) : QStringLiteral("unknown kind");
    const QColor color = categoryColor(def ? qs(def->category()) : QString());

    QString html;
    html += QStringLiteral(
                "<p style=\"margin:0\"><span style=\"background:%1;color:white;font-weight:bold\">"
                "&nbsp;%2&nbsp;</span>&nbsp; <span style=\"color:#64748b\">%3 · operation <b>%4</b>"
                "</span></p>")
                .arg(color.name(), esc(op.kind), esc(category), esc(op.id.value));
    if (def)
        html += QStringLiteral("<p style=\"color:#475569;margin:6px 0\">%1</p>").arg(esc(std::string(def->summary())));

    std::vector<std::string> shard_ids;
    for (const Shard &s : op.shards) shard_ids.push_back(s.id.value);
    html += issuesFor(issues, op.id.value, shard_ids);

    // Parameters: the library's, with defaults marked; then any it does not know.
    html += section(QStringLiteral("Parameters"));
    {
        QString rows;
        std::vector<std::string> known;
        if (def) {
            for (const ParamSpec &spec : def->params()) {
                known.push_back(spec.name);
                const ParamValue *given = op.params.find(spec.name);
                QString value, note;
                if (given) {
                    value = mono(esc(param_to_string(*given)));
                } else if (spec.required) {
                    value = QStringLiteral("<span style=\"color:#b91c1c\">missing</span>");
                } else {
                    value = mono(esc(param_to_string(spec.default_value)));
                    note = QStringLiteral("<span style=\"color:#94a3b8\"><i>default</i></span>");
                }
                rows += QStringLiteral(
                            "<tr><td style=\"padding-right:10px\"><b>%1</b></td><td style=\"padding-right:10px\">%2"
                            "</td><td style=\"padding-right:10px\">%3</td><td style=\"color:#64748b\">%4</td></tr>")
                            .arg(esc(spec.name), value, note, esc(spec.doc));
            }
        }
        for (const auto &[name, value] : op.params.values()) {
            if (std::find(known.begin(), known.end(), name) != known.end()) continue;
            rows += QStringLiteral(
                        "<tr><td><b>%1</b></td><td>%2</td><td colspan=2 style=\"color:#b45309\">"
                        "not a parameter of %3</td></tr>")
                        .arg(esc(name), mono(esc(param_to_string(value))), esc(op.kind));
        }
        html += rows.isEmpty() ? QStringLiteral("<p style=\"color:#94a3b8;margin:0\">none</p>")
                               : QStringLiteral("<table cellspacing=0 cellpadding=2>%1</table>").arg(rows);
    }

    // Selections.
    auto bindings = [&](const QString &title, const std::vector<PortBinding> &ports) {
        html += section(title);
        QString rows;
        for (const PortBinding &b : ports) {
            for (size_t i = 0; i < b.selections.size(); ++i) {
                const TensorSelection &s = b.selections[i];
                const Tensor *t = g.find_tensor(s.tensor);
                const QString type =
                    t ? QStringLiteral("%1 %2").arg(qs(std::string(dtype_name(t->dtype))), shapeText(s.range.shape()))
                      : QStringLiteral("<span style=\"color:#b91c1c\">unknown tensor</span>");
                rows += QStringLiteral(
                            "<tr><td style=\"padding-right:10px\"><b>%1</b></td><td style=\"padding-right:10px\">"
                            "%2</td><td>%3</td></tr>")
                            .arg(esc(portLabel(b.name, i, b.selections.size())), selectionText(s), mono(type));
            }
        }
        html += rows.isEmpty() ? QStringLiteral("<p style=\"color:#94a3b8;margin:0\">none</p>")
                               : QStringLiteral("<table cellspacing=0 cellpadding=2>%1</table>").arg(rows);
    };
    bindings(QStringLiteral("Inputs"), op.inputs);
    bindings(QStringLiteral("Outputs"), op.outputs);

    // Index space, cost and projections come from the library's derivation.
    auto types = operand_types(g, op);
    auto absolute = resolve(g, op, lib);
    html += section(QStringLiteral("Index space"));
    if (!absolute) {
        html += QStringLiteral(
                    "<p style=\"color:#b91c1c;margin:0\">Cannot derive the index space and projections: "
                    "%1 <span style=\"%2color:#64748b\">(%3)</span></p>")
                    .arg(esc(absolute.error().message), QLatin1String(kMono), esc(absolute.error().field));
        if (op.index_space)
            html += QStringLiteral("<p>stated by the file: %1</p>").arg(mono(esc(op.index_space->to_string())));
        return html;
    }
    const Signature &sig = absolute->signature;
    {
        Fields f;
        f.add(QStringLiteral("range"), mono(esc(sig.index_space.to_string())));
        f.add(QStringLiteral("shape"), mono(shapeText(sig.index_space.shape())));
        f.add(QStringLiteral("points"), numbers().toString(static_cast<qlonglong>(sig.index_space.size())));
        if (op.index_space && !(*op.index_space == sig.index_space))
            f.add(QStringLiteral("stated"),
                  QStringLiteral("<span style=\"color:#b91c1c\">%1 (differs from the library)</span>")
                      .arg(mono(esc(op.index_space->to_string()))));
        html += f.html();
    }

    html += section(QStringLiteral("Projections  [A | b | window]"));
    auto projections = [&](const std::vector<PortProjections> &ports, const std::vector<PortBinding> &bound,
                           const QString &direction) {
        for (const PortProjections &pp : ports) {
            const PortBinding *b = nullptr;
            for (const PortBinding &pb : bound)
                if (pb.name == pp.port) b = &pb;
            for (size_t i = 0; i < pp.operands.size(); ++i) {
                const OperandProjection &p = pp.operands[i];
                QString target;
                if (b && i < b->selections.size()) target = nodeLink(b->selections[i].tensor.value);
                html +=
                    QStringLiteral(
                        "<p style=\"margin:8px 0 2px 0\"><b>%1</b> <span style=\"color:#64748b\">%2</span> %3%4</p>")
                        .arg(esc(portLabel(pp.port, i, pp.operands.size())), direction, target,
                             p.clipped ? QStringLiteral(" <span style=\"color:#b45309\">clipped</span>") : QString());
                html += projectionMatrix(p.projection);
                html += QStringLiteral("<p style=\"margin:2px 0;color:#475569\">%1</p>")
                            .arg(mono(esc(p.projection.to_string())));
            }
        }
    };
    projections(sig.inputs, op.inputs, QStringLiteral("reads"));
    projections(sig.outputs, op.outputs, QStringLiteral("writes"));

    if (def && types) {
        auto relative = lib.derive(op.kind, op.params, *types);
        if (relative) {
            const OpCost c = lib.cost(*def, op.params, *relative, *types, relative->signature.index_space);
            html += section(QStringLiteral("Cost"));
            Fields f;
            f.add(QStringLiteral("FLOPs"), flopsText(c.flops));
            f.add(QStringLiteral("bytes read"), bytesText(c.bytes_read));
            f.add(QStringLiteral("bytes written"), bytesText(c.bytes_written));
            const double moved = c.bytes_read + c.bytes_written;
            if (moved > 0)
                f.add(QStringLiteral("intensity"),
                      QStringLiteral("%1 FLOP/byte").arg(QLocale::c().toString(c.flops / moved, 'f', 2)));
            html += f.html();
        }
    }

    html += section(QStringLiteral("Shards (%1)").arg(op.shards.size()));
    if (op.shards.empty()) {
        html += QStringLiteral(
            "<p style=\"color:#94a3b8;margin:0\">not sharded: one application over the whole index space</p>");
    } else {
        QString rows;
        for (const Shard &s : op.shards) {
            const ShardSelections sel = derive_shard_selections(g, op, sig, s.index);
            QStringList parts;
            auto add = [&](const std::vector<PortBinding> &ports, const char *arrow) {
                for (const PortBinding &pb : ports)
                    for (const TensorSelection &ts : pb.selections)
                        parts << QStringLiteral("%1&nbsp;%2%3")
                                     .arg(QString::fromUtf8(arrow), esc(ts.tensor.value),
                                          esc(ts.range.to_string()).replace(QLatin1Char(' '), QLatin1String("&nbsp;")));
            };
            add(sel.inputs, "←");
            add(sel.outputs, "→");
            rows += QStringLiteral(
                        "<tr><td style=\"padding-right:10px\"><b>%1</b></td><td style=\"padding-right:10px\">%2</td>"
                        "<td style=\"padding-right:10px\">%3</td><td style=\"color:#64748b\">%4 points</td></tr>"
                        "<tr><td></td><td colspan=3 style=\"color:#475569;padding-bottom:6px\">%5</td></tr>")
                        .arg(esc(s.id.value),
                             mono(esc(s.index.to_string()).replace(QLatin1Char(' '), QLatin1String("&nbsp;"))),
                             s.device.empty() ? QStringLiteral("<span style=\"color:#94a3b8\">unplaced</span>")
                                              : esc(s.device),
                             numbers().toString(static_cast<qlonglong>(s.index.size())),
                             mono(parts.join(QStringLiteral(" "))));
        }
        html += QStringLiteral("<table cellspacing=0 cellpadding=2>%1</table>").arg(rows);
    }
    return html;
}

QString tensorHtml(const Graph &g, const std::vector<Issue> &issues, const Tensor &t) {
    QString html;
    html += QStringLiteral(
                "<p style=\"margin:0\"><span style=\"background:%1;color:white;font-weight:bold\">"
                "&nbsp;%2&nbsp;</span>&nbsp; <span style=\"color:#64748b\">tensor <b>%3</b></span></p>")
                .arg(roleColor(t.role).name(), esc(std::string(role_name(t.role))), esc(t.id.value));
    html += issuesFor(issues, t.id.value, {});
    html += section(QStringLiteral("Tensor"));
    Fields f;
    f.add(QStringLiteral("id"), mono(esc(t.id.value)));
    f.add(QStringLiteral("name"), esc(t.name));
    f.add(QStringLiteral("dtype"), mono(esc(std::string(dtype_name(t.dtype)))));
    f.add(QStringLiteral("role"), esc(std::string(role_name(t.role))));
    f.add(QStringLiteral("range"), mono(esc(t.range.to_string())));
    f.add(QStringLiteral("shape"), mono(shapeText(t.shape())));
    f.add(QStringLiteral("elements"), numbers().toString(static_cast<qlonglong>(t.range.size())));
    f.add(QStringLiteral("bytes"),
          QStringLiteral("%1 (%2)").arg(bytesText(static_cast<double>(t.bytes())),
                                        numbers().toString(static_cast<qlonglong>(t.bytes()))));
    if (t.data) f.add(QStringLiteral("data"), mono(esc(*t.data)));
    html += f.html();

    auto links = [&](const std::vector<OpId> &ops) {
        if (ops.empty()) return QStringLiteral("<span style=\"color:#94a3b8\">none</span>");
        QStringList parts;
        for (const OpId &id : ops) {
            const Operation *op = g.find_op(id);
            parts << nodeLink(id.value) +
                         (op ? QStringLiteral(" <span style=\"color:#64748b\">(%1)</span>").arg(esc(op->kind))
                             : QString());
        }
        return parts.join(QStringLiteral(", "));
    };
    html += section(QStringLiteral("Connections"));
    Fields c;
    c.add(QStringLiteral("producers"), links(g.producers(t.id)));
    c.add(QStringLiteral("consumers"), links(g.consumers(t.id)));
    html += c.html();
    return html;
}

}  // namespace

Inspector::Inspector(QWidget *parent) : QWidget(parent) {
    setObjectName(QStringLiteral("inspector"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    title_ = new QLabel(this);
    title_->setObjectName(QStringLiteral("inspectorTitle"));
    title_->setTextFormat(Qt::PlainText);
    title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    browser_ = new QTextBrowser(this);
    browser_->setObjectName(QStringLiteral("inspectorBrowser"));
    browser_->setOpenLinks(false);
    browser_->setFrameShape(QFrame::NoFrame);
    browser_->document()->setDocumentMargin(10);
    layout->addWidget(title_);
    layout->addWidget(browser_, 1);
    connect(browser_, &QTextBrowser::anchorClicked, this, [this](const QUrl &url) {
        const QString text = url.toString(QUrl::FullyEncoded);
        if (text.startsWith(QLatin1String("node:")))
            emit nodeActivated(QUrl::fromPercentEncoding(text.mid(5).toUtf8()));
    });
    render();
}

void Inspector::setGraph(const Graph &graph, const std::vector<Issue> &issues, const QString &source_name,
                         bool rerender) {
    graph_ = graph;
    issues_ = issues;
    source_name_ = source_name;
    has_graph_ = true;
    if (rerender) render();
}

void Inspector::clearGraph() {
    graph_ = Graph();
    issues_.clear();
    source_name_.clear();
    has_graph_ = false;
    shown_.clear();
    render();
}

void Inspector::showNode(const QString &id) {
    shown_ = id;
    render();
}

QString Inspector::plainText() const {
    return title_->text() + QLatin1Char('\n') + browser_->toPlainText();
}

QString Inspector::nodeHtml(const Graph &graph, const std::vector<Issue> &issues, const QString &id) {
    const std::string key = id.toStdString();
    if (const Operation *op = graph.find_op(OpId(key))) return operationHtml(graph, issues, *op);
    if (const Tensor *t = graph.find_tensor(TensorId(key))) return tensorHtml(graph, issues, *t);
    return QStringLiteral("<p>No node <b>%1</b> in this graph.</p>").arg(esc(id));
}

QString Inspector::graphHtml(const Graph &graph, const std::vector<Issue> &issues, const QString &source_name) {
    QString html;
    if (!graph.description.empty())
        html += QStringLiteral("<p style=\"color:#475569;margin:0 0 6px 0\">%1</p>").arg(esc(graph.description));
    Fields f;
    f.add(QStringLiteral("file"), esc(source_name));
    f.add(QStringLiteral("tensors"), QString::number(graph.tensors().size()));
    f.add(QStringLiteral("operations"), QString::number(graph.operations().size()));
    size_t shards = 0;
    double bytes = 0;
    for (const OpPtr &op : graph.operations()) shards += op->shards.size();
    for (const TensorPtr &t : graph.tensors()) bytes += static_cast<double>(t->bytes());
    f.add(QStringLiteral("shards"), QString::number(shards));
    f.add(QStringLiteral("tensor bytes"), bytesText(bytes));
    int errors = 0, warnings = 0;
    for (const Issue &i : issues) {
        if (i.severity == Severity::error)
            ++errors;
        else if (i.severity == Severity::warning)
            ++warnings;
    }
    f.add(QStringLiteral("issues"), errors + warnings == 0
                                        ? QStringLiteral("<span style=\"color:#15803d\">valid</span>")
                                        : QStringLiteral("<span style=\"color:%1\">%2 errors, %3 warnings</span>")
                                              .arg(errors ? QStringLiteral("#b91c1c") : QStringLiteral("#b45309"))
                                              .arg(errors)
                                              .arg(warnings));
    html += f.html();
    html += QStringLiteral(
        "<p style=\"color:#94a3b8;margin-top:14px\">Select a tensor or an operation on the canvas "
        "to inspect its shapes, index space and projections.</p>");
    return html;
}

void Inspector::render() {
    if (!has_graph_) {
        title_->setText(tr("Inspector"));
        browser_->setHtml(
            QStringLiteral("<p style=\"color:#94a3b8\">Open a project (File ▸ Open…) or drop a "
                           "<tt>.tapestry.json</tt> file on the window.</p>"));
        return;
    }
    if (shown_.isEmpty()) {
        title_->setText(graph_.name.empty() ? tr("Graph") : qs(graph_.name));
        browser_->setHtml(graphHtml(graph_, issues_, source_name_));
        return;
    }
    const std::string key = shown_.toStdString();
    QString name = shown_;
    if (const Operation *op = graph_.find_op(OpId(key)))
        name = qs(op->name.empty() ? op->id.value : op->name);
    else if (const Tensor *t = graph_.find_tensor(TensorId(key)))
        name = qs(t->name.empty() ? t->id.value : t->name);
    title_->setText(name);
    browser_->setHtml(nodeHtml(graph_, issues_, shown_));
}

}  // namespace tapestry::views
