// Imports an ONNX model off the GUI thread (io/onnx_import.h) and validates the
// graph, for File ▸ Import ONNX…. Before importing it lists the model's symbolic
// input dimensions (dim_param names) so that the window can ask for the values
// that were not given; the result arrives through a queued signal.
#pragma once

#include <QHash>
#include <QMap>
#include <QObject>
#include <QPointF>
#include <QSet>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/issue.h"
#include "store/session.h"

namespace tapestry::views {

struct OnnxImportOutcome {
    QString path;
    bool ok = false;
    Graph graph;
    std::vector<Issue> validation_issues;
    QString error;                     // why the model was refused (empty when ok)
    QStringList unsupported;           // "OpType (node name)" entries of a refused model
    QStringList missing_dims;          // symbolic dimensions that need a value; nothing was imported
    QMap<QString, qint64> dim_values;  // the values used
    qint64 elapsed_ms = 0;
    // With a session: the arrangement the project this model continues keeps
    // (views::arrangementOfFile: its latest version is this import's graph), else empty.
    QHash<QString, QPointF> positions;
    QSet<QString> pinned;
};

// The dim_param names of a serialized ModelProto's graph inputs (initializers
// excluded), in order of appearance; nullopt when the bytes are not a readable
// protobuf (the importer then says what is wrong).
std::optional<QStringList> onnx_input_dim_params(std::string_view model_bytes);

// Synchronous form of a job.
OnnxImportOutcome import_onnx_model(const QString &path, const QMap<QString, qint64> &dim_values);

class OnnxImportWorker : public QObject {
    Q_OBJECT
public:
    explicit OnnxImportWorker(QObject *parent = nullptr);
    // Starts importing; a running import is superseded (its result dropped). With
    // `session`, the node arrangement it keeps for the model comes too.
    quint64 start(const QString &path, const QMap<QString, qint64> &dim_values = {},
                  std::shared_ptr<store::Session> session = nullptr);
    void cancel();
    bool isRunning() const { return running_; }

signals:
    void finished(quint64 job, const tapestry::views::OnnxImportOutcome &outcome);

private:
    quint64 job_ = 0;
    bool running_ = false;
};

}  // namespace tapestry::views

Q_DECLARE_METATYPE(tapestry::views::OnnxImportOutcome)
