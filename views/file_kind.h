// What kind of Tapestry file a path holds, by its contents where it has a format
// field (project, plan, front and target files are JSON objects naming their
// format) and by its name otherwise (sessions, ONNX models). For the studio's
// open paths: a file given to the wrong one is offered to the right one.
#pragma once

#include <QString>
#include <cstdint>

namespace tapestry::views {

enum class FileKind { unknown, project, plan, front, target, session, onnx };

// The largest file read to find its kind: what the plan and project readers take
// (a larger one is none they would open).
inline constexpr std::uint64_t kMaxSniffedBytes = std::uint64_t{1} << 30;

// Reads the file (call it off the GUI thread: a plan may be large). A session is
// known by its SQLite header as well as by *.tapestry-session; an ONNX model only
// by *.onnx (protobuf has no magic). Anything but a regular file of at most
// kMaxSniffedBytes is unknown, unread (a FIFO, a device, a huge file).
FileKind kindOfFile(const QString &path);
// "a project file", "a plan file", …, "" for unknown.
QString fileKindText(FileKind kind);

}  // namespace tapestry::views
