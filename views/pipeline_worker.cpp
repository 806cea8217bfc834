#include "views/pipeline_worker.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QRegularExpression>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>

#include "graph/validate.h"
#include "ops/library.h"
#include "passes/certificate.h"
#include "passes/pipeline_builder.h"
#include "passes/shard.h"
#include "runtime/cpu/fusion_backend.h"
#include "verify/numeric_check.h"

namespace tapestry::views {

namespace {

// Edits turning `a` into `b`: insertions, deletions, substitutions and swaps of
// two neighbours ("gleu" is one edit from "gelu").
size_t editDistance(const std::string &a, const std::string &b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// "; did you mean 'fc1'?" for the operations nearest a mistyped id (up to three,
// within a third of its length), or "".
QString didYouMean(const std::string &typed, const Graph &graph) {
    const size_t limit = std::max<size_t>(1, typed.size() / 3);
    size_t nearest = limit + 1;
    QStringList names;
    for (const OpPtr &op : graph.operations()) {
        const size_t d = editDistance(typed, op->id.value);
        if (d > limit || d > nearest) continue;
        if (d < nearest) names.clear();
        nearest = d;
        names << QStringLiteral("'%1'").arg(QString::fromStdString(op->id.value));
    }
    if (names.isEmpty()) return {};
    if (names.size() > 3) names = names.mid(0, 3) << QStringLiteral("…");
    const QString list = names.size() == 1 ? names.front()
                                           : names.mid(0, names.size() - 1).join(QStringLiteral(", ")) +
                                                 QStringLiteral(" or ") + names.back();
    return QStringLiteral("; did you mean %1?").arg(list);
}

std::vector<std::string> splitSpecs(const QString &text) {
    std::vector<std::string> out;
    for (const QString &part : text.split(QRegularExpression(QStringLiteral("[\\s,;]+")), Qt::SkipEmptyParts))
        out.push_back(part.toStdString());
    return out;
}

}  // namespace

PipelineWorker::PipelineWorker(QObject *parent) : QObject(parent) {
    qRegisterMetaType<tapestry::views::PipelineOutcome>();
    // One job at a time on a thread of its own, like the run worker: a numeric
    // certificate never starves the loader and layout of the global pool.
    pool_.setMaxThreadCount(1);
}

PipelineWorker::~PipelineWorker() {
    if (cancel_) cancel_->store(true);
    pool_.waitForDone();
}

QStringList PipelineWorker::knownPasses() {
    QStringList out;
    for (const std::string &name : known_passes()) out << QString::fromStdString(name);
    return out;
}

QString PipelineWorker::parsePasses(const QString &text, QStringList *out) {
    QStringList names;
    for (const QString &part : text.split(QRegularExpression(QStringLiteral("[\\s,;]+")), Qt::SkipEmptyParts)) {
        const QString name = part.toLower();
        if (!knownPasses().contains(name))
            return tr("unknown pass '%1' (known: %2)").arg(part, knownPasses().join(QStringLiteral(", ")));
        names << name;
    }
    // Worded as the engine's pipeline builder words it (passes/pipeline_builder.h), so
    // the dock and `tapestry passes` say the same thing.
    if (names.isEmpty())
        return tr("the pipeline names no pass (known: %1)").arg(knownPasses().join(QStringLiteral(", ")));
    if (out) *out = names;
    return {};
}

QString PipelineWorker::checkSpecs(const QString &specs, const Graph &graph, const QStringList &passes) {
    const std::vector<std::string> parts = splitSpecs(specs);
    if (parts.empty())
        return passes.contains(QLatin1String("shard"))
                   ? tr("the shard pass needs at least one shard spec (op:dim=parts, e.g. fc1:0=4)")
                   : QString();
    auto parsed = parse_shard_options(parts);
    if (!parsed) return QString::fromStdString(parsed.error());
    for (const ShardSpec &spec : parsed->specs)
        if (!graph.find_op(spec.op))
            return QStringLiteral("shard spec '%1': unknown operation '%2'%3")
                .arg(QString::fromStdString(spec.text), QString::fromStdString(spec.op.value),
                     didYouMean(spec.op.value, graph));
    return {};
}

PipelineOutcome PipelineWorker::execute(const PipelineRequest &request, const std::function<bool()> &cancelled,
                                        const std::function<void(int, int, const QString &)> &phase) {
    PipelineOutcome out;
    QElapsedTimer clock;
    clock.start();
    out.options = request.passes.join(QStringLiteral(", "));
    if (!request.shard_specs.trimmed().isEmpty())
        out.options += QStringLiteral(" · ") + request.shard_specs.simplified();
    if (request.numeric) out.options += QStringLiteral(" · numeric");
    auto stopped = [&] {
        if (cancelled && cancelled()) {
            out.cancelled = true;
            out.stages.clear();
            return true;
        }
        return false;
    };
    const int passes = static_cast<int>(request.passes.size());
    // Steps: stage 0's certificate, then per pass the pass, its certificate and,
    // when asked, its numeric run.
    const int total = 1 + passes * (request.numeric ? 3 : 2);
    int done = 0;
    auto report = [&](const QString &what) {
        if (phase) phase(done, total, what);
    };
    try {
        CertifyOptions structural;
        verify::NumericCheckOptions numeric_options;
        numeric_options.seed = request.seed;
        numeric_options.threads = request.threads;
        CertifyOptions numeric = structural;
        numeric.numeric = verify::numeric_check(numeric_options);

        if (stopped()) return out;
        // As Pipeline::run: the passes rewrite a valid graph only.
        if (auto valid = require_valid(request.graph, OpLibrary::standard()); !valid) {
            out.error = QString::fromStdString(valid.error());
            return out;
        }
        std::vector<Stage> stages;
        stages.push_back(original_stage(request.graph));
        report(tr("certifying stage 0"));
        // Stage 0 is the original itself: its numeric check would compare the
        // graph with itself, so it gets the structural checks only.
        stages.back().certificate = certify(request.graph, request.graph, structural);
        ++done;
        for (int k = 0; k < passes; ++k) {
            const QString name = request.passes[k];
            if (stopped()) return out;
            report(tr("pass %1/%2: %3").arg(k + 1).arg(passes).arg(name));
            PipelineSettings settings;
            settings.shard_specs = splitSpecs(request.shard_specs);
            settings.fusion_backends = {&cpu::fusion_backend()};
            auto pass = make_pass(name.toStdString(), settings);
            if (!pass) {
                out.error = tr("pass %1 (%2): %3").arg(k + 1).arg(name, QString::fromStdString(pass.error()));
                return out;
            }
            Expected<Stage, std::string> stage = (*pass)(stages.back().graph);
            if (!stage) {
                out.error = tr("pass %1 (%2): %3").arg(k + 1).arg(name, QString::fromStdString(stage.error()));
                return out;
            }
            Stage s = std::move(stage).value();
            if (s.pass.empty()) s.pass = name.toStdString();
            ++done;
            if (stopped()) return out;
            report(tr("certifying stage %1").arg(k + 1));
            s.certificate = certify(request.graph, s.graph, structural);
            ++done;
            if (request.numeric) {
                if (stopped()) return out;
                report(tr("numeric check of stage %1").arg(k + 1));
                const Certificate run = certify(request.graph, s.graph, numeric);
                if (const CertificateCheck *c = run.find("numeric")) s.certificate.checks.push_back(*c);
                ++done;
            }
            stages.push_back(std::move(s));
        }
        if (stopped()) return out;
        out.stages = std::move(stages);
        out.ok = true;
    } catch (const std::exception &e) {
        out.ok = false;
        out.stages.clear();
        out.error = tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    }
    out.milliseconds = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    return out;
}

quint64 PipelineWorker::start(PipelineRequest request) {
    if (running_) return 0;
    const quint64 job = ++job_;
    running_ = true;
    auto flag = std::make_shared<std::atomic_bool>(false);
    cancel_ = flag;
    auto forward = [this, job](int done, int total, const QString &what) {
        QMetaObject::invokeMethod(
            this, [this, job, done, total, what] { emit progress(job, done, total, what); }, Qt::QueuedConnection);
    };
    auto *watcher = new QFutureWatcher<PipelineOutcome>(this);
    connect(watcher, &QFutureWatcher<PipelineOutcome>::finished, this, [this, watcher, job] {
        watcher->deleteLater();
        if (job != job_ || !running_) return;  // cancelled (already reported) or superseded
        PipelineOutcome outcome = watcher->result();
        outcome.job = job;
        running_ = false;
        cancel_.reset();
        emit finished(job, outcome);
    });
    watcher->setFuture(QtConcurrent::run(&pool_, [request = std::move(request), flag, forward] {
        return execute(
            request, [flag] { return flag->load(std::memory_order_relaxed); }, forward);
    }));
    return job;
}

void PipelineWorker::cancel() {
    if (!running_) return;
    if (cancel_) cancel_->store(true);
    cancel_.reset();
    running_ = false;
    PipelineOutcome outcome;
    outcome.job = job_;
    outcome.cancelled = true;
    emit finished(job_, outcome);
}

}  // namespace tapestry::views
