// File ▸ Session Projects… (docs/user-guide.md "Sessions"): every project the open
// session keeps — its name, editor versions, when it was last saved, the plans and
// search runs kept with it, and the file it was opened from — to open one, rename
// it (in place, F2) or delete it (Delete, after asking). The session is read and
// written off the GUI thread: a save in flight holds it, and deleting a large
// project takes a moment; the window never waits. The project the window shows
// cannot be deleted from here (open another first). A view only: the main window
// opens a project when `openRequested` asks.
#pragma once

#include <QDialog>
#include <QString>
#include <functional>
#include <memory>
#include <vector>

#include "store/session.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace tapestry::studio {

// One project as the list shows it.
struct SessionProjectRow {
    qint64 id = 0;
    QString name;
    int versions = 0;
    QString updated_at;  // ISO 8601 UTC, as the session keeps it
    int plans = 0;
    int searches = 0;
    QString file;  // the file the studio opened it from, "" when none
};

// The session's projects, oldest first; an error names what could not be read.
struct SessionProjectListing {
    std::vector<SessionProjectRow> rows;
    QString error;
};
SessionProjectListing listSessionProjects(store::Session &session);

class SessionProjectsDialog : public QDialog {
    Q_OBJECT
public:
    // `open_project`: the project the window shows (0: none), marked and kept from deletion.
    SessionProjectsDialog(std::shared_ptr<store::Session> session, qint64 open_project, QWidget *parent = nullptr);
    ~SessionProjectsDialog() override;

    // Reads the list again (in the background; `listed` when it is shown); `note`,
    // what was just done, is shown meanwhile and then before the count.
    void refresh(const QString &note = {});
    void setOpenProject(qint64 project);

    // The row's project id, 0 for none.
    static qint64 projectOf(const QTreeWidgetItem *item);

    // ---- the widgets (the GUI suites drive them) -----------------------------------
    QTreeWidget *list() const { return list_; }
    QLineEdit *filterEdit() const { return filter_; }
    QPushButton *openButton() const { return open_; }
    QPushButton *renameButton() const { return rename_; }
    QPushButton *deleteButton() const { return delete_; }
    QLabel *statusLabel() const { return status_; }
    bool isBusy() const { return busy_; }

signals:
    void openRequested(qint64 project);
    void renamed(qint64 project, const QString &name);
    void deleted(qint64 project);
    void listed();                    // the list was read again and shown
    void failed(const QString &why);  // a rename or delete the session refused (also shown)

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void showListing(const SessionProjectListing &listing);
    void applyFilter();
    void updateButtons();
    void openCurrent();
    void askDelete();
    void onItemChanged(QTreeWidgetItem *item, int column);
    // Runs `write` on a worker; its answer ("" or the error) comes back on the GUI thread.
    void runWrite(std::function<QString(store::Session &)> write, std::function<void(const QString &)> done);

    std::shared_ptr<store::Session> session_;
    qint64 open_project_ = 0;
    bool busy_ = false;
    bool filling_ = false;  // the list is being filled: item changes are not renames
    quint64 generation_ = 0;
    QString note_;  // for the listing on its way
    QTreeWidget *list_ = nullptr;
    QLineEdit *filter_ = nullptr;
    QPushButton *open_ = nullptr;
    QPushButton *rename_ = nullptr;
    QPushButton *delete_ = nullptr;
    QLabel *status_ = nullptr;
};

}  // namespace tapestry::studio
