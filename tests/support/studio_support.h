// What the studio's GUI suites share: the example projects, opening one in a
// real MainWindow and waiting for its layout, exporting the canvas, and saving a
// docs screenshot when TAPESTRY_SCREENSHOT_DIR (or TAPESTRY_DOC_SHOTS) names a folder.
#pragma once

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QSignalSpy>
#include <QString>
#include <QStyleFactory>
#include <QTest>

#include "app/studio/canvas_controller.h"
#include "app/studio/canvas_export.h"
#include "app/studio/editing_controller.h"
#include "app/studio/inspector_controller.h"
#include "app/studio/main_window.h"
#include "app/studio/project_controller.h"
#include "app/studio/run_controller.h"
#include "app/studio/session_controller.h"
#include "app/studio/stages_controller.h"
#include "views/graph_document.h"
#include "views/graph_view.h"
#include "views/project_locator.h"
#include "views/studio_resources.h"

namespace tapestry::studio::testing {

inline constexpr int kLayoutTimeoutMs = 30000;

// The source tree: TAPESTRY_SOURCE_DIR (CTest sets it), else where the example
// project was found.
inline QString sourceDir() {
    const QString env = qEnvironmentVariable("TAPESTRY_SOURCE_DIR");
    if (!env.isEmpty()) return env;
    const QString mlp = views::findExampleProject();
    return mlp.isEmpty() ? QString() : QFileInfo(mlp).dir().absoluteFilePath(QStringLiteral(".."));
}

inline QString examplePath(const QString &name) {
    return QDir(sourceDir()).filePath(QStringLiteral("projects/%1.tapestry.json").arg(name));
}

// Opens `path` in `w` and waits for its first layout.
inline bool openAndWait(MainWindow &w, const QString &path) {
    QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
    w.openProject(path);
    return ready.wait(kLayoutTimeoutMs) || ready.count() > 0;
}

// Opens the session at `path` in `w` (a new one starts on the MLP example, saved
// into it) and waits until its project is laid out and, when new, saved.
inline bool openSessionAndWait(MainWindow &w, const QString &path, int timeout_ms = 120000) {
    const bool fresh = !QFileInfo::exists(path);
    QSignalSpy ready(w.canvas(), &CanvasController::layoutReady);
    QSignalSpy saved(w.sessions(), &SessionController::saved);
    if (!w.openSession(path).isEmpty()) return false;
    if (ready.count() == 0 && !ready.wait(timeout_ms)) return false;
    return !fresh || saved.count() > 0 || saved.wait(timeout_ms);
}

// Exports the window's canvas as File ▸ Export… does; "" or the error.
inline QString exportTo(MainWindow &w, const QString &path, const QString &format, bool selection_only,
                        double scale = 2.0) {
    ExportRequest r;
    r.path = path;
    r.format = format;
    r.selection_only = selection_only;
    r.scale = scale;
    r.dark = w.view()->isDark();
    r.title = w.document()->source().name;
    return exportCanvas(*w.scene(), w.document()->graph(), r);
}

// Where the docs screenshots go: TAPESTRY_SCREENSHOT_DIR (or the older
// TAPESTRY_DOC_SHOTS); "" when neither is set.
inline QString screenshotDir() {
    const QString dir = qEnvironmentVariable("TAPESTRY_SCREENSHOT_DIR");
    return dir.isEmpty() ? qEnvironmentVariable("TAPESTRY_DOC_SHOTS") : dir;
}

// When screenshots are taken, the suite looks as the application does (its
// style and style sheet, as app/studio/main.cpp sets them).
inline void lookLikeTheStudioForScreenshots() {
    if (screenshotDir().isEmpty()) return;
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    views::initResources();
    qApp->setStyleSheet(views::studioStyleSheet());
}

// With TAPESTRY_SCREENSHOT_DIR (or TAPESTRY_DOC_SHOTS) set, saves the widget
// there as `name` (the screenshots of docs/user-guide.md); does nothing otherwise.
inline void screenshot(QWidget &w, const QString &name) {
    const QString dir = screenshotDir();
    if (dir.isEmpty()) return;
    QTest::qWait(100);  // let the window paint
    QVERIFY(w.grab().save(QDir(dir).filePath(name)));
}

}  // namespace tapestry::studio::testing
