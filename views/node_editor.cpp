#include "views/node_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <cmath>

#include "graph/dtype.h"
#include "ops/library.h"

namespace tapestry::views {

namespace {

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

std::string ss(const QString &s) {
    return s.toUtf8().toStdString();
}

// Strips one pair of surrounding brackets: "[1, 2]" and "(1, 2)" read like "1, 2".
QString unbracketed(const QString &text, bool *had_brackets = nullptr) {
    QString t = text.trimmed();
    const bool brackets =
        t.size() >= 2 && ((t.front() == '[' && t.back() == ']') || (t.front() == '(' && t.back() == ')'));
    if (brackets) t = t.mid(1, t.size() - 2).trimmed();
    if (had_brackets) *had_brackets = brackets;
    return t;
}

// Splits on commas and on runs of blanks ("1, 2", "1 2", "1,2"); an empty piece
// between two commas is kept so that "1,,2" is refused, not read as "1, 2".
QStringList pieces(const QString &text, const QRegularExpression &separator) {
    QStringList out = text.split(separator);
    for (QString &p : out) p = p.trimmed();
    return out;
}

bool parseWhole(const QString &piece, std::int64_t *out) {
    bool ok = false;
    const qlonglong v = piece.toLongLong(&ok);
    if (!ok) return false;
    *out = static_cast<std::int64_t>(v);
    return true;
}

std::optional<std::vector<std::int64_t>> parseList(const QString &text, const QRegularExpression &separator,
                                                   bool allow_negative, QString *error) {
    auto fail = [&](const QString &why) -> std::optional<std::vector<std::int64_t>> {
        if (error) *error = why;
        return std::nullopt;
    };
    const QString body = unbracketed(text);
    std::vector<std::int64_t> values;
    if (body.isEmpty()) return values;
    for (const QString &piece : pieces(body, separator)) {
        if (piece.isEmpty()) return fail(QStringLiteral("'%1' has an empty entry").arg(text.trimmed()));
        std::int64_t v = 0;
        if (!parseWhole(piece, &v)) return fail(QStringLiteral("'%1' is not a whole number").arg(piece));
        if (!allow_negative && v < 0) return fail(QStringLiteral("%1 is negative").arg(piece));
        if (v > kMaxCoordinate || v < -kMaxCoordinate)
            return fail(QStringLiteral("%1 is too large (at most %2)").arg(piece).arg(kMaxCoordinate));
        values.push_back(v);
    }
    return values;
}

QString listText(const std::vector<std::int64_t> &values) {
    if (values.empty()) return QStringLiteral("[]");
    QStringList parts;
    for (std::int64_t v : values) parts << QString::number(v);
    return parts.join(QStringLiteral(", "));
}

bool isSourceRole(TensorRole r) {
    return r == TensorRole::input || r == TensorRole::parameter;
}

// The value a parameter has in the graph, as a number, for comparing a typed
// float with a stored int.
std::optional<double> asNumber(const ParamValue &v) {
    if (auto *d = std::get_if<double>(&v)) return *d;
    if (auto *i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    return std::nullopt;
}

}  // namespace

NodeEditor::NodeEditor(QWidget *parent) : NodeEditor(OpLibrary::standard(), parent) {}

NodeEditor::NodeEditor(const OpLibrary &library, QWidget *parent) : QWidget(parent), library_(library) {
    buildForm();
    refresh();
}

void NodeEditor::buildForm() {
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->setSpacing(4);

    hint_ = new QLabel(tr("Select a tensor or an operation to edit it."), this);
    hint_->setObjectName(QStringLiteral("nodeEditorHint"));
    hint_->setWordWrap(true);
    hint_->setEnabled(false);  // drawn greyed: a hint, not content
    outer->addWidget(hint_);

    fields_ = new QWidget(this);
    fields_->setObjectName(QStringLiteral("nodeEditorFields"));
    form_ = new QFormLayout(fields_);
    form_->setContentsMargins(0, 0, 0, 0);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    outer->addWidget(fields_);

    name_ = new QLineEdit(fields_);
    name_->setObjectName(QStringLiteral("nodeName"));
    name_->setToolTip(tr("Display name of the node (its id stays); Enter applies"));
    form_->addRow(tr("Name"), name_);
    connect(name_, &QLineEdit::editingFinished, this, &NodeEditor::commitName);

    dtype_ = new QComboBox(fields_);
    dtype_->setObjectName(QStringLiteral("tensorDtype"));
    for (DType t : kAllDTypes) dtype_->addItem(qs(dtype_name(t)));
    form_->addRow(tr("DType"), dtype_);
    connect(dtype_, &QComboBox::activated, this, [this](int) { commitDtype(); });

    shape_ = new QLineEdit(fields_);
    shape_->setObjectName(QStringLiteral("tensorShape"));
    shape_->setPlaceholderText(tr("scalar"));
    form_->addRow(tr("Shape"), shape_);
    connect(shape_, &QLineEdit::editingFinished, this, &NodeEditor::commitShape);

    role_ = new QComboBox(fields_);
    role_->setObjectName(QStringLiteral("tensorRole"));
    role_->addItem(qs(role_name(TensorRole::input)));
    role_->addItem(qs(role_name(TensorRole::parameter)));
    form_->addRow(tr("Role"), role_);
    connect(role_, &QComboBox::activated, this, [this](int) { commitRole(); });

    kind_ = new QLabel(fields_);
    kind_->setObjectName(QStringLiteral("opKind"));
    kind_->setTextFormat(Qt::PlainText);
    kind_->setWordWrap(true);
    kind_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form_->addRow(tr("Kind"), kind_);

    error_ = new QLabel(this);
    error_->setObjectName(QStringLiteral("nodeEditorError"));
    error_->setTextFormat(Qt::PlainText);
    error_->setWordWrap(true);
    error_->setStyleSheet(QStringLiteral("color: #d32f2f;"));
    error_->setVisible(false);
    outer->addWidget(error_);
    outer->addStretch(1);
}

// ---- showing -------------------------------------------------------------------

void NodeEditor::setGraph(const Graph &graph) {
    graph_ = graph;
    refresh();
}

void NodeEditor::showNode(const QString &id) {
    const bool other = id != shown_;
    shown_ = id;
    if (other) showError({});
    refresh();
}

void NodeEditor::refresh() {
    // Hiding a focused line edit makes it lose focus, which emits editingFinished:
    // the guard keeps a refresh from asking for anything.
    refreshing_ = true;
    requested_.clear();
    const std::string id = ss(shown_);
    const Tensor *t = shown_.isEmpty() ? nullptr : graph_.find_tensor(TensorId(id));
    const Operation *op = shown_.isEmpty() || t ? nullptr : graph_.find_op(OpId(id));
    if (!t && !op) {
        if (!shown_.isEmpty())
            hint_->setText(tr("No node '%1' in this graph.").arg(shown_));
        else
            hint_->setText(tr("Select a tensor or an operation to edit it."));
        shown_.clear();
        fields_->setVisible(false);
        hint_->setVisible(true);
        refreshing_ = false;
        return;
    }
    hint_->setVisible(false);
    for (QWidget *w : {static_cast<QWidget *>(dtype_), static_cast<QWidget *>(shape_), static_cast<QWidget *>(role_)})
        form_->setRowVisible(w, t != nullptr);
    form_->setRowVisible(kind_, op != nullptr);
    if (t) {
        rebuildParamRows({});
        refreshTensor(*t);
    } else {
        rebuildParamRows(op->kind);
        refreshOperation(*op);
    }
    fields_->setVisible(true);
    refreshing_ = false;
}

QString NodeEditor::displayName(const std::string &id) const {
    if (const Tensor *t = graph_.find_tensor(TensorId(id))) return qs(t->name.empty() ? id : t->name);
    if (const Operation *op = graph_.find_op(OpId(id))) return qs(op->name.empty() ? id : op->name);
    return qs(id);
}

void NodeEditor::refreshTensor(const Tensor &t) {
    name_->setText(qs(t.name));
    name_->setPlaceholderText(qs(t.id.str()));

    const std::vector<OpId> producers = graph_.producers(t.id);
    const bool produced = !producers.empty();
    dtype_->setCurrentIndex(dtype_->findText(qs(dtype_name(t.dtype))));
    shape_->setText(shapeText(t.shape()));

    // input/parameter are the roles a user picks; a computed tensor shows the one
    // it has (intermediate/output) as a third, read-only entry.
    while (role_->count() > 2) role_->removeItem(2);
    if (!isSourceRole(t.role)) role_->addItem(qs(role_name(t.role)));
    role_->setCurrentIndex(role_->findText(qs(role_name(t.role))));

    QString inferred;
    if (produced) {
        QStringList names;
        for (const OpId &p : producers) names << displayName(p.str());
        inferred = tr("Inferred from %1: change that operation's inputs").arg(names.join(QStringLiteral(", ")));
    }
    dtype_->setEnabled(!produced);
    shape_->setEnabled(!produced);
    role_->setEnabled(!produced);
    dtype_->setToolTip(produced ? inferred : tr("Element type"));
    shape_->setToolTip(produced ? inferred
                                : tr("Sizes of the dimensions, e.g. \"512, 1024\" (empty: a scalar); Enter applies"));
    role_->setToolTip(produced ? inferred : tr("input: fed at run time; parameter: a weight of the model"));
}

void NodeEditor::rebuildParamRows(const std::string &kind) {
    if (kind == rows_kind_) return;
    // The rows may be rebuilt from inside one of their own signals (an edit's
    // setGraph), so the widgets are detached now and deleted later.
    for (int r = form_->rowCount() - 1; r >= 0; --r) {
        QWidget *field =
            form_->itemAt(r, QFormLayout::FieldRole) ? form_->itemAt(r, QFormLayout::FieldRole)->widget() : nullptr;
        if (!field || !field->objectName().startsWith(QStringLiteral("param_"))) continue;
        const QFormLayout::TakeRowResult taken = form_->takeRow(r);
        for (QLayoutItem *item : {taken.labelItem, taken.fieldItem}) {
            if (!item) continue;
            if (QWidget *w = item->widget()) {
                w->hide();
                w->setParent(nullptr);
                w->deleteLater();
            }
            delete item;
        }
    }
    rows_.clear();
    rows_kind_ = kind;
    const OpDef *def = kind.empty() ? nullptr : library_.find(kind);
    if (!def) return;

    for (const ParamSpec &spec : def->params()) {
        ParamRow row;
        row.spec = spec;
        const int index = static_cast<int>(rows_.size());
        const QString name = qs(spec.name);
        const QString dflt = valueText(spec.default_value);
        QString tip = qs(spec.doc);
        tip += spec.required ? tr("\nRequired.") : tr("\nDefault: %1").arg(dflt);
        QWidget *field = nullptr;
        switch (spec.kind) {
            case ParamKind::boolean:
                row.check = new QCheckBox(fields_);
                // Not stretched across the row: a click beside the box is no toggle.
                row.check->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
                connect(row.check, &QCheckBox::clicked, this, [this, index](bool) { commitParam(index); });
                field = row.check;
                break;
            case ParamKind::string:
                if (!spec.choices.empty()) {
                    row.combo = new QComboBox(fields_);
                    if (!spec.required) row.combo->addItem(tr("(default: %1)").arg(dflt));
                    for (const std::string &c : spec.choices) row.combo->addItem(qs(c), qs(c));
                    if (spec.required) row.combo->setPlaceholderText(tr("required"));
                    connect(row.combo, &QComboBox::activated, this, [this, index](int) { commitParam(index); });
                    field = row.combo;
                    break;
                }
                [[fallthrough]];
            case ParamKind::integer:
            case ParamKind::number:
            case ParamKind::int_list:
                row.line = new QLineEdit(fields_);
                row.line->setPlaceholderText(spec.required ? tr("required") : tr("default: %1").arg(dflt));
                row.line->setClearButtonEnabled(!spec.required);
                connect(row.line, &QLineEdit::editingFinished, this, [this, index] { commitParam(index); });
                field = row.line;
                break;
        }
        field->setObjectName(QStringLiteral("param_") + name);
        field->setToolTip(tip);
        row.label = new QLabel(name, fields_);
        row.label->setToolTip(tip);
        form_->addRow(row.label, field);
        rows_.push_back(row);
    }
}

void NodeEditor::refreshOperation(const Operation &op) {
    name_->setText(qs(op.name));
    name_->setPlaceholderText(qs(op.id.str()));
    const OpDef *def = library_.find(op.kind);
    kind_->setText(def ? qs(op.kind) + QStringLiteral(" — ") + qs(def->summary())
                       : tr("%1 (not in the operation library)").arg(qs(op.kind)));
    for (ParamRow &row : rows_) {
        const ParamValue *set = op.params.find(row.spec.name);
        if (row.check) {
            const ParamValue &v = set ? *set : row.spec.default_value;
            const bool *b = std::get_if<bool>(&v);
            row.check->setChecked(b && *b);
        } else if (row.combo) {
            int index = row.spec.required ? -1 : 0;
            if (set) {
                if (const auto *s = std::get_if<std::string>(set)) index = row.combo->findData(qs(*s));
                // A value outside the choices (validation reports it) is shown as it is.
                if (index < 0) {
                    row.combo->addItem(valueText(*set), valueText(*set));
                    index = row.combo->count() - 1;
                }
            }
            row.combo->setCurrentIndex(index);
        } else if (row.line) {
            row.line->setText(set ? valueText(*set) : QString());
        }
    }
}

// ---- errors ----------------------------------------------------------------------

void NodeEditor::showError(const QString &message) {
    local_error_ = false;
    error_->setText(message);
    error_->setVisible(!message.isEmpty());
}

QString NodeEditor::errorText() const {
    return error_->text();
}

// ---- requests --------------------------------------------------------------------

bool NodeEditor::ready() const {
    return !refreshing_ && !shown_.isEmpty();
}

bool NodeEditor::firstRequest(const QString &field, const QString &text) {
    auto it = requested_.constFind(field);
    if (it != requested_.constEnd() && *it == text) return false;
    requested_.insert(field, text);
    showError({});
    return true;
}

void NodeEditor::commitName() {
    if (!ready()) return;
    const std::string id = ss(shown_);
    const Tensor *t = graph_.find_tensor(TensorId(id));
    const Operation *op = t ? nullptr : graph_.find_op(OpId(id));
    if (!t && !op) return;
    const QString current = qs(t ? t->name : op->name);
    const QString text = name_->text().trimmed();
    if (text == current) {
        if (local_error_) showError({});
        return;
    }
    if (text.isEmpty()) {
        showError(tr("%1: a name cannot be empty").arg(shown_));
        local_error_ = true;
        return;
    }
    if (firstRequest(QStringLiteral("name"), text)) emit renameRequested(shown_, text);
}

void NodeEditor::commitDtype() {
    if (!ready()) return;
    const Tensor *t = graph_.find_tensor(TensorId(ss(shown_)));
    if (!t) return;
    const QString dtype = dtype_->currentText();
    if (dtype == qs(dtype_name(t->dtype))) return;
    const QString shape = shapeText(t->shape());
    if (firstRequest(QStringLiteral("type"), dtype + '|' + shape)) emit tensorTypeRequested(shown_, dtype, shape);
}

void NodeEditor::commitShape() {
    if (!ready()) return;
    const Tensor *t = graph_.find_tensor(TensorId(ss(shown_)));
    if (!t) return;
    QString why;
    const std::optional<ZPoint> shape = parseShape(shape_->text(), &why);
    if (!shape) {
        showError(tr("%1: shape: %2 (write it like \"512, 1024\")").arg(displayName(t->id.str()), why));
        local_error_ = true;
        return;
    }
    if (*shape == t->shape()) {
        if (local_error_) showError({});
        return;
    }
    const QString dtype = qs(dtype_name(t->dtype));
    const QString text = shapeText(*shape);
    if (firstRequest(QStringLiteral("type"), dtype + '|' + text)) emit tensorTypeRequested(shown_, dtype, text);
}

void NodeEditor::commitRole() {
    if (!ready()) return;
    const Tensor *t = graph_.find_tensor(TensorId(ss(shown_)));
    if (!t) return;
    const QString role = role_->currentText();
    // The third entry (intermediate/output) only shows what the tensor is.
    const std::optional<TensorRole> picked = parse_role(ss(role));
    if (!picked || !isSourceRole(*picked) || role == qs(role_name(t->role))) return;
    if (firstRequest(QStringLiteral("role"), role)) emit roleRequested(shown_, role);
}

bool NodeEditor::readParam(const ParamRow &row, std::optional<ParamValue> *value, QString *error) const {
    const ParamSpec &spec = row.spec;
    if (row.check) {
        *value = ParamValue{row.check->isChecked()};
        return true;
    }
    if (row.combo) {
        const int i = row.combo->currentIndex();
        if (i < 0 || (!spec.required && i == 0))
            *value = std::nullopt;
        else
            *value = ParamValue{ss(row.combo->itemData(i).toString())};
        return true;
    }
    const QString text = row.line->text().trimmed();
    if (text.isEmpty()) {
        *value = std::nullopt;
        return true;
    }
    switch (spec.kind) {
        case ParamKind::integer: {
            std::int64_t v = 0;
            if (!parseWhole(text, &v)) {
                *error = tr("'%1' is not a whole number").arg(text);
                return false;
            }
            *value = ParamValue{v};
            return true;
        }
        case ParamKind::number: {
            bool ok = false;
            const double v = QLocale::c().toDouble(text, &ok);
            if (!ok || !std::isfinite(v)) {
                *error = tr("'%1' is not a number").arg(text);
                return false;
            }
            *value = ParamValue{v};
            return true;
        }
        case ParamKind::int_list: {
            auto list = parseIntList(text, error);
            if (!list) return false;
            *value = ParamValue{*list};
            return true;
        }
        case ParamKind::string:
        case ParamKind::boolean: *value = ParamValue{ss(text)}; return true;
    }
    return false;
}

void NodeEditor::commitParam(int index) {
    if (!ready() || index < 0 || index >= static_cast<int>(rows_.size())) return;
    const Operation *op = graph_.find_op(OpId(ss(shown_)));
    if (!op) return;
    const ParamRow &row = rows_[static_cast<size_t>(index)];
    const std::string &name = row.spec.name;
    std::optional<ParamValue> value;
    QString why;
    if (!readParam(row, &value, &why)) {
        showError(tr("%1: %2: %3").arg(displayName(op->id.str()), qs(name), why));
        local_error_ = true;
        return;
    }
    Params next = op->params;
    const ParamValue *old = op->params.find(name);
    if (!value) {
        next.erase(name);
    } else {
        // 2 typed over a stored 2.0 (or the reverse) is no change.
        const bool same_number = old && row.spec.kind == ParamKind::number && asNumber(*old) == asNumber(*value);
        if (!same_number) next.set(name, *value);
    }
    if (next == op->params) {
        if (local_error_) showError({});
        return;
    }
    const QString text = value ? valueText(*value) : QStringLiteral("<unset>");
    if (firstRequest(QStringLiteral("param_") + qs(name), text)) emit paramsRequested(shown_, next);
}

// ---- text forms ----------------------------------------------------------------

std::optional<ZPoint> NodeEditor::parseShape(const QString &text, QString *error) {
    static const QRegularExpression separator(QStringLiteral("\\s*[,x×X]\\s*|\\s+"));
    auto dims = parseList(text, separator, /*allow_negative=*/false, error);
    if (!dims) return std::nullopt;
    return ZPoint(std::vector<Coord>(dims->begin(), dims->end()));
}

QString NodeEditor::shapeText(const ZPoint &shape) {
    QStringList parts;
    for (Coord c : shape.coords()) parts << QString::number(c);
    return parts.join(QStringLiteral(", "));
}

std::optional<std::vector<std::int64_t>> NodeEditor::parseIntList(const QString &text, QString *error) {
    static const QRegularExpression separator(QStringLiteral("\\s*,\\s*|\\s+"));
    return parseList(text, separator, /*allow_negative=*/true, error);
}

QString NodeEditor::valueText(const ParamValue &value) {
    return std::visit(
        [](const auto &v) -> QString {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>)
                return v ? QStringLiteral("true") : QStringLiteral("false");
            else if constexpr (std::is_same_v<T, std::int64_t>)
                return QString::number(v);
            else if constexpr (std::is_same_v<T, double>)
                return QString::number(v, 'g', QLocale::FloatingPointShortest);
            else if constexpr (std::is_same_v<T, std::string>)
                return qs(v);
            else
                return listText(v);
        },
        value);
}

}  // namespace tapestry::views
