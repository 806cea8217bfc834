#include "views/onnx_import_worker.h"

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QSet>
#include <QtConcurrent/QtConcurrentRun>
#include <cstdint>
#include <exception>

#include "graph/validate.h"
#include "io/bounded_file.h"
#include "io/onnx_import.h"
#include "ops/library.h"
#include "views/session_versions.h"

namespace tapestry::views {

namespace {

// A minimal reader of the protobuf wire format: enough to walk ModelProto →
// GraphProto → inputs → shapes without the ONNX library (the studio does not link
// it; the engine's importer does the real work). Length-delimited fields that are
// not needed — weights above all — are skipped, never copied.
class Wire {
public:
    explicit Wire(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
    bool done() const { return p_ >= end_; }
    bool ok() const { return ok_; }

    // Reads the next field's tag; false at the end or on bad bytes.
    bool next(std::uint32_t &field, std::uint32_t &type) {
        if (done() || !ok_) return false;
        std::uint64_t tag = 0;
        if (!varint(tag)) return false;
        field = static_cast<std::uint32_t>(tag >> 3);
        type = static_cast<std::uint32_t>(tag & 7);
        return field != 0 || fail();
    }
    bool varint(std::uint64_t &v) {
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p_ >= end_) return fail();
            const auto byte = static_cast<std::uint8_t>(*p_++);
            v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return true;
        }
        return fail();
    }
    bool bytes(std::string_view &out) {
        std::uint64_t n = 0;
        if (!varint(n)) return false;
        if (n > static_cast<std::uint64_t>(end_ - p_)) return fail();
        out = std::string_view(p_, static_cast<size_t>(n));
        p_ += n;
        return true;
    }
    bool skip(std::uint32_t type) {
        std::uint64_t v = 0;
        std::string_view s;
        switch (type) {
            case 0: return varint(v);
            case 1: return advance(8);
            case 2: return bytes(s);
            case 5: return advance(4);
            default: return fail();  // groups (3, 4) are not used by ONNX
        }
    }

private:
    bool advance(std::ptrdiff_t n) {
        if (end_ - p_ < n) return fail();
        p_ += n;
        return true;
    }
    bool fail() {
        ok_ = false;
        return false;
    }
    const char *p_;
    const char *end_;
    bool ok_ = true;
};

// Calls `visit` on every length-delimited field numbered `wanted`, in order.
template <typename Visit>
bool forEach(std::string_view message, std::uint32_t wanted, Visit visit) {
    Wire w(message);
    std::uint32_t field = 0, type = 0;
    while (w.next(field, type)) {
        if (field == wanted && type == 2) {
            std::string_view sub;
            if (!w.bytes(sub)) return false;
            if (!visit(sub)) return false;
        } else if (!w.skip(type)) {
            return false;
        }
    }
    return w.ok();
}

bool stringField(std::string_view message, std::uint32_t wanted, QString &out) {
    return forEach(message, wanted, [&](std::string_view s) {
        out = QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
        return true;
    });
}

}  // namespace

std::optional<QStringList> onnx_input_dim_params(std::string_view model_bytes) {
    // ModelProto.graph = 7; GraphProto.initializer = 5, .input = 11;
    // ValueInfoProto.name = 1, .type = 2; TypeProto.tensor_type = 1;
    // TypeProto.Tensor.shape = 2; TensorShapeProto.dim = 1; Dimension.dim_param = 2.
    std::string_view graph;
    bool has_graph = false;
    if (!forEach(model_bytes, 7,
                 [&](std::string_view g) {
                     graph = g;
                     has_graph = true;
                     return true;
                 }) ||
        !has_graph)
        return std::nullopt;
    QSet<QString> initializers;
    if (!forEach(graph, 5, [&](std::string_view tensor) {
            QString name;
            if (!stringField(tensor, 8, name)) return false;
            initializers.insert(name);
            return true;
        }))
        return std::nullopt;
    QStringList names;
    const bool ok = forEach(graph, 11, [&](std::string_view value_info) {
        QString input;
        if (!stringField(value_info, 1, input)) return false;
        if (initializers.contains(input)) return true;
        return forEach(value_info, 2, [&](std::string_view type) {
            return forEach(type, 1, [&](std::string_view tensor_type) {
                return forEach(tensor_type, 2, [&](std::string_view shape) {
                    return forEach(shape, 1, [&](std::string_view dim) {
                        QString param;
                        if (!stringField(dim, 2, param)) return false;
                        if (!param.isEmpty() && !names.contains(param)) names << param;
                        return true;
                    });
                });
            });
        });
    });
    if (!ok) return std::nullopt;
    return names;
}

OnnxImportOutcome import_onnx_model(const QString &path, const QMap<QString, qint64> &dim_values) {
    OnnxImportOutcome out;
    out.path = path;
    out.dim_values = dim_values;
    QElapsedTimer timer;
    timer.start();
    try {
        OnnxImportOptions options;
        QFile file(path);
        // Not a FIFO or device: opening one could block this worker; import_onnx
        // below refuses it by name.
        const bool regular = regular_file_refusal(path.toStdString(), "an ONNX model").empty();
        if (regular && file.open(QIODevice::ReadOnly)) {
            // Mapped, not read: a model's weights may be hundreds of megabytes.
            const qint64 size = file.size();
            const uchar *mapped = size > 0 ? file.map(0, size) : nullptr;
            const std::optional<QStringList> params =
                mapped ? onnx_input_dim_params(
                             std::string_view(reinterpret_cast<const char *>(mapped), static_cast<size_t>(size)))
                       : std::nullopt;
            if (params) {
                for (const QString &name : *params) {
                    if (!dim_values.contains(name))
                        out.missing_dims << name;
                    else
                        options.dim_values.emplace_back(name.toStdString(), dim_values.value(name));
                }
                if (!out.missing_dims.isEmpty()) {
                    out.error = QObject::tr("%1 has symbolic input dimensions without values: %2")
                                    .arg(QFileInfo(path).fileName(), out.missing_dims.join(QStringLiteral(", ")));
                    out.elapsed_ms = timer.elapsed();
                    return out;
                }
            }
        }
        if (options.dim_values.empty())
            for (auto it = dim_values.begin(); it != dim_values.end(); ++it)
                options.dim_values.emplace_back(it.key().toStdString(), it.value());

        auto imported = import_onnx(std::filesystem::path(path.toStdString()), options);
        if (!imported) {
            out.error = QString::fromStdString(imported.error().message);
            for (const std::string &u : imported.error().unsupported) out.unsupported << QString::fromStdString(u);
        } else {
            out.graph = std::move(*imported);
            out.validation_issues = validate(out.graph, OpLibrary::standard());
            out.ok = true;
        }
    } catch (const std::exception &e) {
        out.ok = false;
        out.graph = Graph();
        out.error = QObject::tr("internal error while importing: %1").arg(QString::fromUtf8(e.what()));
    }
    out.elapsed_ms = timer.elapsed();
    return out;
}

OnnxImportWorker::OnnxImportWorker(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::views::OnnxImportOutcome>();
}

quint64 OnnxImportWorker::start(const QString &path, const QMap<QString, qint64> &dim_values,
                                std::shared_ptr<store::Session> session) {
    const quint64 job = ++job_;
    running_ = true;
    auto *watcher = new QFutureWatcher<OnnxImportOutcome>(this);
    connect(watcher, &QFutureWatcher<OnnxImportOutcome>::finished, this, [this, watcher, job] {
        watcher->deleteLater();
        if (job != job_ || !running_) return;  // superseded
        running_ = false;
        emit finished(job, watcher->result());
    });
    watcher->setFuture(QtConcurrent::run([path, dim_values, session] {
        OnnxImportOutcome out = import_onnx_model(path, dim_values);
        if (session && out.ok) {
            FileArrangement kept = arrangementOfFile(*session, path, out.graph);
            out.positions = std::move(kept.positions);
            out.pinned = std::move(kept.pinned);
        }
        return out;
    }));
    return job;
}

void OnnxImportWorker::cancel() {
    ++job_;
    running_ = false;
}

}  // namespace tapestry::views
