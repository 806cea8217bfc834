// What kind of Tapestry file a path holds, by its contents where it has a format
// field (project, plan, front and target files are JSON objects naming their
// format) and by its name otherwise (sessions, ONNX models). For the studio's
// open paths: a file given to the wrong one is offered to the right one.
#pragma once

#include <QString>

namespace tapestry::views {

enum class FileKind { unknown, project, plan, front, target, session, onnx };

// Reads the file (call it off the GUI thread: a plan may be large). A session is
// known by its SQLite header as well as by *.tapestry-session; an ONNX model only
// by *.onnx (protobuf has no magic).
FileKind kindOfFile(const QString &path);
// "a project file", "a plan file", …, "" for unknown.
QString fileKindText(FileKind kind);

}  // namespace tapestry::views
