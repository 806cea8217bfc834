// Issue 14, classes 1 and 2: sizes never wrap (common/checked_size.h), and a graph
// whose tensors exceed the memory budget is refused by `run`, `verify` and the
// engine's check before anything is allocated, with the largest tensors named.
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "cli_run.h"
#include "common/checked_size.h"
#include "graph/tensor.h"
#include "io/project_file.h"
#include "ops/library.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/memory_budget.h"

using namespace tapestry;

namespace {

// A relu of x [n, m] into y, f32.
QByteArray relu_project(const QString &n, const QString &m) {
    return QStringLiteral("{\"format\": \"tapestry-project\", \"version\": 1, \"name\": \"big\", \"tensors\": ["
                          "{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [%1, %2], \"role\": \"input\"},"
                          "{\"id\": \"y\", \"dtype\": \"f32\", \"shape\": [%1, %2], \"role\": \"output\"}],"
                          "\"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"inputs\": {\"x\": \"x\"},"
                          " \"outputs\": {\"y\": \"y\"}}]}")
        .arg(n, m)
        .toUtf8();
}

}  // namespace

class TestSizeLimits : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString cli_;

    QString write(const QString &name, const QByteArray &text) {
        const QString path = dir_.filePath(name);
        return test::write_bytes(path, text) ? path : QString();
    }

    test::CliResult run(const QStringList &args) { return test::run_cli(cli_, args); }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        cli_ = qEnvironmentVariable("TAPESTRY_CLI");
    }

    // ---- class 1: size arithmetic ----------------------------------------------

    void products_saturate_instead_of_wrapping() {
        const Coord big = Coord{1} << 32;
        QCOMPARE(ZPoint({big, big}).product(), kSizeSaturated);  // 2^64 used to wrap to 0
        QCOMPARE(ZPoint({big, -big}).product(), std::numeric_limits<Coord>::min());
        QCOMPARE(ZPoint({Coord{1} << 31, Coord{1} << 31}).product(), kMaxElements);  // the limit itself is exact
        QCOMPARE(ZRange::of_shape(ZPoint({big, big, 0})).size(), Coord{0});
        QCOMPARE(ZRange::of_shape(ZPoint({big, big})).size(), kSizeSaturated);
        QCOMPARE(checked_mul(Coord{1} << 62, 2), std::optional<std::int64_t>());
        QCOMPARE(checked_add(kSizeSaturated, 1), std::optional<std::int64_t>());
        QCOMPARE(size_add(kSizeSaturated - 1, 5), kSizeSaturated);
    }

    void tensor_bytes_saturate() {
        Tensor t;
        t.dtype = DType::f32;
        t.range = ZRange::of_shape(ZPoint({Coord{1} << 31, Coord{1} << 31}));  // 2^62 elements: valid
        QCOMPARE(t.bytes(), kSizeSaturated);  // 2^64 bytes used to show as "0 B"
        QCOMPARE(byte_text(t.bytes()), std::string("more than 8 EiB"));
        t.range = ZRange::of_shape(ZPoint({1024, 1024}));
        QCOMPARE(t.bytes(), std::int64_t{4} << 20);
        QCOMPARE(byte_text(t.bytes()), std::string("4.0 MiB"));
    }

    // The loader's limit: 2^62 elements is valid, one dim more is a validation
    // error with its JSON path.
    void element_count_past_the_limit_is_a_validation_error() {
        const LoadResult ok = parse_project(relu_project("2147483648", "2147483648").toStdString(), "big.json");
        QVERIFY(ok.ok());
        const LoadResult bad = parse_project(relu_project("4294967296", "4294967296").toStdString(), "bigger.json");
        QVERIFY(!bad.ok());
        QCOMPARE(bad.issues.front().json_path, std::string("$.tensors[0].shape"));
        QVERIFY2(bad.issues.front().message.find("hold more than 2^62 elements") != std::string::npos,
                 bad.issues.front().message.c_str());
    }

    void show_prints_a_saturated_size_as_such() {
        if (cli_.isEmpty()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString file = write("huge.tapestry.json", relu_project("2147483648", "2147483648"));
        const test::CliResult r = run({"show", file});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.count("more than 8 EiB") >= 2, qPrintable(r.out));
        QVERIFY(!r.out.contains(" 0 B"));
    }

    // ---- class 2: the memory budget --------------------------------------------

    void need_counts_every_tensor_and_the_oracle() {
        const LoadResult loaded = parse_project(relu_project("1024", "256").toStdString(), "mid.json");
        QVERIFY(loaded.ok());
        const cpu::MemoryNeed run = cpu::memory_need(loaded.graph, false);
        QCOMPARE(run.bytes, std::int64_t{2} << 20);  // x and y, 1 MiB each
        const cpu::MemoryNeed verify = cpu::memory_need(loaded.graph, true);
        // + 8 bytes an element of each in the oracle, + the second run's y
        QCOMPARE(verify.bytes, (std::int64_t{2} << 20) + (std::int64_t{4} << 20) + (std::int64_t{1} << 20));
        QCOMPARE(verify.largest.front().first, std::string("y"));
        QVERIFY(cpu::check_memory(loaded.graph, false, std::int64_t{2} << 20).has_value());
        auto refused = cpu::check_memory(loaded.graph, false, (std::int64_t{2} << 20) - 1);
        QVERIFY(!refused);
        QCOMPARE(refused.error(), std::string("not enough memory to run: its tensors need 2.0 MiB (largest: 'x' 1.0 MiB, "
                                              "'y' 1.0 MiB) but the memory limit is 2.0 MiB; nothing was allocated"));
    }

    // The engine on its own (no budget in front): compiling a graph whose
    // intermediate needs 2^64 bytes is an error, never a wrapped arena or a null one.
    void compile_refuses_an_arena_it_cannot_allocate() {
        const QByteArray text =
            "{\"format\": \"tapestry-project\", \"version\": 1, \"tensors\": ["
            "{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [2147483648, 2147483648], \"role\": \"input\"},"
            "{\"id\": \"h\", \"dtype\": \"f32\", \"shape\": [2147483648, 2147483648], \"role\": \"intermediate\"},"
            "{\"id\": \"y\", \"dtype\": \"f32\", \"shape\": [2147483648, 2147483648], \"role\": \"output\"}],"
            "\"operations\": [{\"id\": \"a\", \"kind\": \"relu\", \"inputs\": {\"x\": \"x\"}, \"outputs\": {\"y\": \"h\"}},"
            "{\"id\": \"b\", \"kind\": \"tanh\", \"inputs\": {\"x\": \"h\"}, \"outputs\": {\"y\": \"y\"}}]}";
        const LoadResult loaded = parse_project(text.toStdString(), "huge");
        QVERIFY(loaded.ok());
        cpu::CpuOptions options;
        options.fuse_epilogues = false;  // keep h in the arena
        options.tile_bytes = 0;
        auto program = cpu::Program::compile(loaded.graph, OpLibrary::standard(), options);
        QVERIFY(!program);
        QVERIFY2(!program.error().empty(), "an error without a message");
    }

    void byte_sizes_parse() {
        QCOMPARE(cpu::parse_byte_size("8G").value(), std::int64_t{8} << 30);
        QCOMPARE(cpu::parse_byte_size("512M").value(), std::int64_t{512} << 20);
        QCOMPARE(cpu::parse_byte_size("1.5GiB").value(), std::int64_t{3} << 29);
        QCOMPARE(cpu::parse_byte_size("4096").value(), std::int64_t{4096});
        for (const char *bad : {"", "x", "1x", "-1G", "0", "1e30", "nan"})
            QVERIFY2(!cpu::parse_byte_size(bad), bad);
    }

    void run_and_verify_refuse_a_graph_larger_than_memory_data() {
        QTest::addColumn<QString>("command");
        QTest::newRow("run") << "run";
        QTest::newRow("verify") << "verify";
    }
    void run_and_verify_refuse_a_graph_larger_than_memory() {
        QFETCH(QString, command);
        if (cli_.isEmpty()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString file = write("huge.tapestry.json", relu_project("2147483648", "2147483648"));
        const test::CliResult r = run({command, file});
        QCOMPARE(r.code, 1);  // used to be SIGSEGV (run) or std::bad_alloc (134)
        QVERIFY2(r.err.startsWith("tapestry: " + file + ": not enough memory to " + command +
                                  ": its tensors need more than 8 EiB (largest: 'x' more than 8 EiB, 'y' more than 8 "
                                  "EiB) but this machine has "),
                 qPrintable(r.err));
        QVERIFY2(r.err.endsWith(" available; nothing was allocated"), qPrintable(r.err));
        QVERIFY2(r.ms < 10000, qPrintable(QString::number(r.ms)));
    }

    void memory_limit_option() {
        if (cli_.isEmpty()) QSKIP("TAPESTRY_CLI is not set (ctest sets it)");
        const QString file = write("mid.tapestry.json", relu_project("4096", "4096"));
        test::CliResult r = run({"run", file, "--memory-limit", "100M"});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, "tapestry: " + file +
                            ": not enough memory to run: its tensors need 128.0 MiB (largest: 'x' 64.0 MiB, 'y' 64.0 "
                            "MiB) but the memory limit is 100.0 MiB; nothing was allocated");
        r = run({"verify", file, "--memory-limit", "400M"});  // 128 MiB + 256 MiB of doubles + 64 MiB
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("not enough memory to verify: its tensors need 448.0 MiB"), qPrintable(r.err));
        r = run({"run", file, "--memory-limit", "1G"});
        QCOMPARE(r.code, 0);
        r = run({"run", file, "--memory-limit", "1x"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--memory-limit: '1x' is not a size in bytes (e.g. 8G, 512M, 1.5GiB)"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestSizeLimits)
#include "test_size_limits.moc"
