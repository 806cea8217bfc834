#include "session_projects_dialog.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "dock.h"
#include "views/session_versions.h"

namespace tapestry::studio {

namespace {

enum Column { kName, kVersions, kUpdated, kPlans, kSearches, kFile, kColumns };
constexpr int kSessionNameRole = Qt::UserRole + 1;  // kName: the name as the session has it

// Sorts "Last saved" by the time the session keeps (the text shows minutes only).
class ProjectItem : public QTreeWidgetItem {
public:
    using QTreeWidgetItem::QTreeWidgetItem;
    bool operator<(const QTreeWidgetItem &other) const override {
        const int column = treeWidget() ? treeWidget()->sortColumn() : kName;
        if (column == kUpdated)
            return data(kUpdated, Qt::UserRole).toString() < other.data(kUpdated, Qt::UserRole).toString();
        return QTreeWidgetItem::operator<(other);
    }
};

QString qs(const std::string &s) {
    return QString::fromStdString(s);
}

}  // namespace

SessionProjectListing listSessionProjects(store::Session &session) {
    SessionProjectListing out;
    auto projects = session.projects();
    if (!projects) {
        out.error = qs(projects.error().message);
        return out;
    }
    for (const store::ProjectInfo &p : *projects) {
        SessionProjectRow row;
        row.id = p.id;
        row.name = qs(p.name);
        row.versions = p.version_count;
        row.updated_at = qs(p.updated_at);
        // Counts a session of an older schema cannot give stay 0; a read that fails says so.
        if (auto plans = session.plans(p.id))
            row.plans = static_cast<int>(plans->size());
        else if (out.error.isEmpty())
            out.error = qs(plans.error().message);
        if (auto runs = session.search_runs(p.id))
            row.searches = static_cast<int>(runs->size());
        else if (out.error.isEmpty())
            out.error = qs(runs.error().message);
        row.file = views::fileOfProject(session, p.id);
        out.rows.push_back(std::move(row));
    }
    return out;
}

SessionProjectsDialog::SessionProjectsDialog(std::shared_ptr<store::Session> session, qint64 open_project,
                                             QWidget *parent)
    : QDialog(parent), session_(std::move(session)), open_project_(open_project) {
    setObjectName(QStringLiteral("sessionProjectsDialog"));
    setWindowTitle(tr("Session Projects — %1").arg(QFileInfo(qs(session_->path().string())).fileName()));
    resize(920, 420);

    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("projectFilter"));
    filter_->setPlaceholderText(tr("Filter by name or file"));
    filter_->setClearButtonEnabled(true);
    connect(filter_, &QLineEdit::textChanged, this, [this] { applyFilter(); });

    list_ = new QTreeWidget(this);
    list_->setObjectName(QStringLiteral("projectList"));
    list_->setColumnCount(kColumns);
    list_->setHeaderLabels({tr("Project"), tr("Versions"), tr("Last saved"), tr("Plans"), tr("Searches"), tr("File")});
    list_->setRootIsDecorated(false);
    list_->setUniformRowHeights(true);
    list_->setSortingEnabled(true);
    list_->sortByColumn(kUpdated, Qt::DescendingOrder);
    // Only the name is edited, and only on F2 or Rename: a click selects, a double click opens.
    list_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    list_->header()->setSectionResizeMode(kName, QHeaderView::Interactive);
    for (int c : {kVersions, kUpdated, kPlans, kSearches})
        list_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    list_->setTextElideMode(Qt::ElideMiddle);  // a long path keeps its file name
    list_->header()->setStretchLastSection(true);
    list_->setColumnWidth(kName, 220);
    connect(list_, &QTreeWidget::itemSelectionChanged, this, [this] { updateButtons(); });
    connect(list_, &QTreeWidget::itemActivated, this, [this] { openCurrent(); });
    connect(list_, &QTreeWidget::itemChanged, this, &SessionProjectsDialog::onItemChanged);

    open_ = new QPushButton(tr("&Open"), this);
    open_->setObjectName(QStringLiteral("openProjectButton"));
    open_->setDefault(true);
    open_->setToolTip(tr("Show this project's latest version in the window (Enter)"));
    connect(open_, &QPushButton::clicked, this, [this] { openCurrent(); });
    rename_ = new QPushButton(tr("&Rename"), this);
    rename_->setObjectName(QStringLiteral("renameProjectButton"));
    rename_->setToolTip(tr("Rename the project in the session (F2)"));
    connect(rename_, &QPushButton::clicked, this, [this] {
        if (QTreeWidgetItem *item = list_->currentItem(); item && rename_->isEnabled()) list_->editItem(item, kName);
    });
    delete_ = new QPushButton(tr("&Delete…"), this);
    delete_->setObjectName(QStringLiteral("deleteProjectButton"));
    connect(delete_, &QPushButton::clicked, this, [this] { askDelete(); });
    // F2 and Delete act on the list's current row while the list has the focus
    // (in the filter, Delete deletes a character).
    list_->installEventFilter(this);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    buttons->addButton(open_, QDialogButtonBox::ActionRole);
    buttons->addButton(rename_, QDialogButtonBox::ActionRole);
    buttons->addButton(delete_, QDialogButtonBox::DestructiveRole);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("projectsStatus"));
    status_->setWordWrap(true);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(filter_);
    layout->addWidget(list_, 1);
    layout->addWidget(status_);
    layout->addWidget(buttons);
    updateButtons();
    refresh();
}

SessionProjectsDialog::~SessionProjectsDialog() = default;

qint64 SessionProjectsDialog::projectOf(const QTreeWidgetItem *item) {
    return item ? item->data(kName, Qt::UserRole).toLongLong() : 0;
}

void SessionProjectsDialog::setOpenProject(qint64 project) {
    open_project_ = project;
    refresh();
}

void SessionProjectsDialog::refresh(const QString &note) {
    busy_ = true;
    updateButtons();
    note_ = note;
    status_->setText(note.isEmpty() ? tr("Reading the session…") : note);
    const quint64 generation = ++generation_;
    auto *watcher = new QFutureWatcher<SessionProjectListing>(this);
    connect(watcher, &QFutureWatcher<SessionProjectListing>::finished, this, [this, watcher, generation] {
        watcher->deleteLater();
        if (generation != generation_) return;  // a later read is on its way
        busy_ = false;
        showListing(watcher->result());
        emit listed();
    });
    std::shared_ptr<store::Session> session = session_;
    watcher->setFuture(QtConcurrent::run([session] { return listSessionProjects(*session); }));
}

void SessionProjectsDialog::showListing(const SessionProjectListing &listing) {
    const qint64 keep = projectOf(list_->currentItem());
    filling_ = true;
    list_->setSortingEnabled(false);
    list_->clear();
    QTreeWidgetItem *current = nullptr;
    for (const SessionProjectRow &r : listing.rows) {
        auto *item = new ProjectItem(list_);
        item->setFlags(item->flags() | Qt::ItemIsEditable);
        item->setText(kName, r.name);
        item->setData(kName, kSessionNameRole, r.name);
        item->setData(kName, Qt::UserRole, r.id);
        item->setToolTip(kName, tr("Project %1 of the session").arg(r.id));
        item->setData(kVersions, Qt::DisplayRole, r.versions);
        item->setText(kUpdated, localTimeText(r.updated_at.toStdString()));
        item->setData(kUpdated, Qt::UserRole, r.updated_at);
        item->setData(kPlans, Qt::DisplayRole, r.plans);
        item->setData(kSearches, Qt::DisplayRole, r.searches);
        item->setText(kFile, r.file.isEmpty() ? QString() : QDir::toNativeSeparators(r.file));
        item->setToolTip(kFile, r.file);
        for (int c : {kVersions, kPlans, kSearches}) item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
        if (r.id == open_project_) {
            QFont bold = item->font(kName);
            bold.setBold(true);
            for (int c = 0; c < kColumns; ++c) item->setFont(c, bold);
            item->setToolTip(kName, tr("Project %1 of the session: the one the window shows").arg(r.id));
        }
        if (r.id == keep || (keep == 0 && r.id == open_project_)) current = item;
    }
    list_->setSortingEnabled(true);
    filling_ = false;
    if (!current && list_->topLevelItemCount() > 0) current = list_->topLevelItem(0);
    if (current) list_->setCurrentItem(current);
    applyFilter();
    if (!listing.error.isEmpty())
        status_->setText(tr("Not all of the session could be read: %1").arg(listing.error));
    else {
        const QString count = tr("%1 in %2").arg(
            countText(static_cast<qint64>(listing.rows.size()), tr("project"), tr("projects")),
            QFileInfo(qs(session_->path().string())).fileName());
        status_->setText(note_.isEmpty() ? count : tr("%1; %2").arg(note_, count));
    }
    note_.clear();
    updateButtons();
}

void SessionProjectsDialog::applyFilter() {
    const QString needle = filter_->text().trimmed();
    for (int i = 0; i < list_->topLevelItemCount(); ++i) {
        QTreeWidgetItem *item = list_->topLevelItem(i);
        const bool match = needle.isEmpty() || item->text(kName).contains(needle, Qt::CaseInsensitive) ||
                           item->text(kFile).contains(needle, Qt::CaseInsensitive);
        item->setHidden(!match);
    }
    if (QTreeWidgetItem *item = list_->currentItem(); item && item->isHidden()) list_->setCurrentItem(nullptr);
    updateButtons();
}

bool SessionProjectsDialog::eventFilter(QObject *watched, QEvent *event) {
    if (watched == list_ && event->type() == QEvent::KeyPress) {
        const auto *key = static_cast<QKeyEvent *>(event);
        if (key->key() == Qt::Key_F2 && key->modifiers() == Qt::NoModifier) {
            rename_->click();
            return true;
        }
        if (key->matches(QKeySequence::Delete)) {
            if (delete_->isEnabled()) askDelete();
            return true;
        }
    }
    return QDialog::eventFilter(watched, event);
}

void SessionProjectsDialog::updateButtons() {
    const QTreeWidgetItem *item = list_->currentItem();
    const qint64 id = item && !item->isHidden() ? projectOf(item) : 0;
    const bool writable = session_->mode() == store::OpenMode::read_write;
    open_->setEnabled(!busy_ && id != 0);
    rename_->setEnabled(!busy_ && id != 0 && writable);
    delete_->setEnabled(!busy_ && id != 0 && writable && id != open_project_);
    delete_->setToolTip(id != 0 && id == open_project_
                            ? tr("The window shows this project: open another one before deleting it")
                            : tr("Delete the project and all it keeps from the session (Delete)"));
}

void SessionProjectsDialog::openCurrent() {
    const qint64 id = projectOf(list_->currentItem());
    if (busy_ || id == 0) return;
    emit openRequested(id);
    accept();
}

void SessionProjectsDialog::askDelete() {
    QTreeWidgetItem *item = list_->currentItem();
    const qint64 id = projectOf(item);
    if (busy_ || id == 0 || id == open_project_) return;
    const QString name = item->text(kName);
    QStringList kept{countText(item->data(kVersions, Qt::DisplayRole).toInt(), tr("version"), tr("versions"))};
    if (const int plans = item->data(kPlans, Qt::DisplayRole).toInt(); plans > 0)
        kept << countText(plans, tr("plan"), tr("plans")) + tr(" with their launches");
    if (const int runs = item->data(kSearches, Qt::DisplayRole).toInt(); runs > 0)
        kept << countText(runs, tr("search run"), tr("search runs"));
    auto *box = new QMessageBox(QMessageBox::Warning, tr("Delete %1?").arg(name),
                                tr("Delete the project %1 from the session, with its %2?").arg(name, kept.join(", ")),
                                QMessageBox::Cancel, this);
    box->setObjectName(QStringLiteral("deleteProjectBox"));
    box->setInformativeText(tr("This cannot be undone. Files it was opened from or exported to are not touched."));
    QPushButton *yes = box->addButton(tr("Delete"), QMessageBox::DestructiveRole);
    box->setDefaultButton(QMessageBox::Cancel);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [this, box, yes, id, name] {
        if (box->clickedButton() != yes) return;
        status_->setText(tr("Deleting %1…").arg(name));
        runWrite(
            [id](store::Session &s) {
                auto done = s.delete_project(id);
                return done ? QString() : qs(done.error().message);
            },
            [this, id, name](const QString &error) {
                if (!error.isEmpty()) return;
                emit deleted(id);
                refresh(tr("Deleted %1").arg(name));
            });
    });
    box->open();
}

void SessionProjectsDialog::onItemChanged(QTreeWidgetItem *item, int column) {
    if (filling_ || column != kName) return;
    const qint64 id = projectOf(item);
    const QString name = item->text(kName).trimmed();
    if (id == 0) return;
    if (name.isEmpty()) {
        // Put the name back as it is in the session; nothing to read again.
        filling_ = true;
        item->setText(kName, item->data(kName, kSessionNameRole).toString());
        filling_ = false;
        status_->setText(tr("A project needs a name; it was not renamed"));
        return;
    }
    status_->setText(tr("Renaming…"));
    runWrite(
        [id, name](store::Session &s) {
            auto done = s.rename_project(id, name.toStdString());
            return done ? QString() : qs(done.error().message);
        },
        [this, id, name](const QString &error) {
            if (!error.isEmpty()) return;
            emit renamed(id, name);
            refresh(tr("Renamed to %1").arg(name));
        });
}

void SessionProjectsDialog::runWrite(std::function<QString(store::Session &)> write,
                                     std::function<void(const QString &)> done) {
    busy_ = true;
    updateButtons();
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, done = std::move(done)] {
        watcher->deleteLater();
        busy_ = false;
        const QString error = watcher->result();
        if (!error.isEmpty()) {
            emit failed(error);
            refresh(tr("The session refused: %1").arg(error));
        }
        done(error);
    });
    std::shared_ptr<store::Session> session = session_;
    watcher->setFuture(QtConcurrent::run([session, write = std::move(write)] { return write(*session); }));
}

}  // namespace tapestry::studio
