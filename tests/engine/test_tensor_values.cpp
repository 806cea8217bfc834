// Tensor values in projects and run directories (io/tensor_values.h, the
// `value` field of io/project_file.h, io/random_inputs.h): embedded values
// round-trip for every dtype and are refused with a clear message when wrong;
// .npy values beside a project load with dtype/shape checks and are saved under
// safe, unique file names; run input/output directories; seeded random inputs.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "io/npy.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

QString issues_text(const std::vector<Issue> &issues) {
    QStringList lines;
    for (const Issue &i : issues) lines << QString::fromStdString(format_issue(i));
    return lines.join('\n');
}

std::string read_file(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const fs::path &path, const std::string &text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

TensorData filled(DType dtype, ZPoint shape, const std::vector<double> &values) {
    TensorData t(dtype, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<std::int64_t>(i), values[i]);
    return t;
}

TensorData ramp(DType dtype, ZPoint shape) {
    TensorData t(dtype, std::move(shape));
    for (std::int64_t i = 0; i < t.element_count(); ++i) t.set(i, dtype == DType::boolean ? i % 2 : 0.5 * i - 3);
    return t;
}

Tensor tensor(const std::string &id, DType dtype, ZPoint shape, TensorRole role,
              std::shared_ptr<const TensorData> value = nullptr) {
    Tensor t;
    t.id = TensorId(id);
    t.name = id;
    t.dtype = dtype;
    t.range = ZRange::of_shape(shape);
    t.role = role;
    t.value = std::move(value);
    return t;
}

std::shared_ptr<const TensorData> shared(TensorData t) {
    return std::make_shared<const TensorData>(std::move(t));
}

TensorSelection whole(const Graph &g, const std::string &id) {
    return {TensorId(id), g.find_tensor(TensorId(id))->range};
}

void add_op(Graph &g, const std::string &id, const std::string &kind,
            const std::vector<std::pair<std::string, std::string>> &inputs, const std::string &output,
            Params params = {}) {
    Operation op;
    op.id = OpId(id);
    op.name = id;
    op.kind = kind;
    op.params = std::move(params);
    for (const auto &[port, t] : inputs) op.inputs.push_back({port, {whole(g, t)}});
    op.outputs.push_back({"y", {whole(g, output)}});
    g.put_op(std::move(op));
}

// A project with a tensor whose JSON is `tensor_json`, as the loader sees it.
std::string project_with(const std::string &tensor_json) {
    return R"({"format": "tapestry-project", "version": 1, "tensors": [)" + tensor_json + R"(], "operations": []})";
}

fs::path temp_path(const QTemporaryDir &dir) {
    return fs::path(dir.path().toStdString());
}

}  // namespace

class TestTensorValues : public QObject {
    Q_OBJECT

private slots:
    // ---- embedded values in project files ---------------------------------------------

    void embedded_values_round_trip() {
        Graph g;
        g.name = "values";
        for (DType d : kAllDTypes) {
            const std::string name(dtype_name(d));
            g.put_tensor(tensor("v_" + name, d, ZPoint{2, 3}, TensorRole::parameter, shared(ramp(d, ZPoint{2, 3}))));
            g.put_tensor(tensor("s_" + name, d, ZPoint{}, TensorRole::parameter, shared(ramp(d, ZPoint{}))));
            g.put_tensor(tensor("e_" + name, d, ZPoint{0, 4}, TensorRole::parameter, shared(ramp(d, ZPoint{0, 4}))));
        }
        TensorData special = filled(DType::f32, ZPoint{6},
                                    {std::nan(""), std::numeric_limits<double>::infinity(),
                                     -std::numeric_limits<double>::infinity(), 0.1, -0.0, 3.4028234663852886e38});
        g.put_tensor(tensor("special", DType::f32, ZPoint{6}, TensorRole::parameter, shared(special)));
        TensorData big(DType::i64, ZPoint{2});
        big.as<std::int64_t>()[0] = std::numeric_limits<std::int64_t>::max();
        big.as<std::int64_t>()[1] = 9007199254740993;  // 2^53 + 1: no double holds it
        g.put_tensor(tensor("big", DType::i64, ZPoint{2}, TensorRole::parameter, shared(big)));
        TensorData halves = filled(DType::f16, ZPoint{3}, {0.1, 65504, std::ldexp(1.0, -24)});
        g.put_tensor(tensor("halves", DType::f16, ZPoint{3}, TensorRole::parameter, shared(halves)));
        // A value with a data file is written as the file reference only.
        Tensor from_file =
            tensor("from_file", DType::f32, ZPoint{2}, TensorRole::parameter, shared(ramp(DType::f32, ZPoint{2})));
        from_file.data = "w.npy";
        g.put_tensor(from_file);

        const std::string text = serialize_project(g);
        const LoadResult loaded = parse_project(text, "values.tapestry.json");
        QVERIFY2(loaded.issues.empty(), qPrintable(issues_text(loaded.issues)));
        QCOMPARE(loaded.graph.tensors().size(), g.tensors().size());
        for (size_t i = 0; i + 1 < g.tensors().size(); ++i) {
            const Tensor &a = *g.tensors()[i];
            const Tensor &b = *loaded.graph.tensors()[i];
            QVERIFY2(b.value != nullptr, a.id.value.c_str());
            QCOMPARE(b.value->dtype, a.value->dtype);
            QCOMPARE(b.value->shape, a.value->shape);
            if (a.id.value == "special") {
                QVERIFY(std::isnan(b.value->get(0)));
                QVERIFY(b.value->get(4) == 0 && std::signbit(b.value->get(4)));
                for (std::int64_t k = 1; k < 6; ++k) QCOMPARE(b.value->get(k), a.value->get(k));
            } else {
                QVERIFY2(*b.value == *a.value, a.id.value.c_str());
            }
        }
        const Tensor &file_tensor = *loaded.graph.tensors().back();
        QCOMPARE(file_tensor.data, std::optional<std::string>("w.npy"));
        QVERIFY(file_tensor.value == nullptr);
        QCOMPARE(serialize_project(loaded.graph), text);  // stable
        // Readable numbers: the shortest text that reads back to the same element
        // (as NumPy prints them: 65504 in f16 is written 65500.0).
        QVERIFY2(text.find(R"("value": ["nan", "inf", "-inf", 0.1, -0.0, 3.4028235e+38])") != std::string::npos,
                 text.c_str());
        QVERIFY2(text.find(R"("value": [0.1, 65500.0, 6e-08])") != std::string::npos, text.c_str());
        QVERIFY(text.find(R"("value": [9223372036854775807, 9007199254740993])") != std::string::npos);
        QVERIFY(text.find(R"("value": [false, true, false, true, false, true])") != std::string::npos);
        QVERIFY(text.find(R"("id": "s_i32", "dtype": "i32", "shape": [], "role": "parameter", "value": [-3]})") !=
                std::string::npos);
        QVERIFY(text.find(R"("id": "e_f16", "dtype": "f16", "shape": [0, 4], "role": "parameter", "value": []})") !=
                std::string::npos);
    }

    void long_values_wrap_several_numbers_a_line() {
        Graph g;
        g.put_tensor(
            tensor("w", DType::f32, ZPoint{10, 20}, TensorRole::parameter, shared(ramp(DType::f32, ZPoint{10, 20}))));
        const std::string text = serialize_project(g);
        std::istringstream lines(text);
        std::string line;
        int value_lines = -1;  // lines between "value": [ and its ]
        while (std::getline(lines, line)) {
            QVERIFY2(line.size() <= 120, line.c_str());
            if (line.find("\"value\": [") != std::string::npos)
                value_lines = 0;
            else if (value_lines >= 0 && line.find(']') != std::string::npos)
                break;
            else if (value_lines >= 0)
                ++value_lines;
        }
        // 200 numbers, packed (not one a line), and the wrap follows the last that fits.
        QVERIFY2(value_lines >= 5 && value_lines <= 20, text.c_str());
        QVERIFY(text.find("      \"value\": [\n        -3.0, -2.5,") != std::string::npos);
        QVERIFY(text.find(", 7.0,\n        7.5, 8.0,") != std::string::npos);
        const LoadResult loaded = parse_project(text);
        QVERIFY(loaded.ok());
        QVERIFY(*loaded.graph.tensors()[0]->value == *g.tensors()[0]->value);
    }

    void embedded_value_conversion_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QList<double>>("values");
        QTest::newRow("f32 rounds")
            << R"({"id": "t", "dtype": "f32", "shape": [2], "role": "parameter", "value": [0.1, 1]})"
            << QList<double>{double(0.1f), 1.0};
        QTest::newRow("f16 rounds to even")
            << R"({"id": "t", "dtype": "f16", "shape": [1], "role": "parameter", "value": [1.00048828125]})"
            << QList<double>{1.0};
        QTest::newRow("integral floats for ints")
            << R"({"id": "t", "dtype": "i32", "shape": [2], "role": "input", "value": [2.0, -1e3]})"
            << QList<double>{2, -1000};
        QTest::newRow("0-d") << R"({"id": "t", "dtype": "bf16", "shape": [], "role": "parameter", "value": [-2.5]})"
                             << QList<double>{-2.5};
        QTest::newRow("range not at the origin")
            << R"({"id": "t", "dtype": "bool", "range": {"start": [-1], "end": [1]}, "role": "parameter", "value": [true, false]})"
            << QList<double>{1, 0};
    }
    void embedded_value_conversion() {
        QFETCH(QString, json);
        QFETCH(QList<double>, values);
        const LoadResult r = parse_project(project_with(json.toStdString()), "p.json");
        QVERIFY2(r.issues.empty(), qPrintable(issues_text(r.issues)));
        const Tensor &t = *r.graph.tensors()[0];
        QVERIFY(t.value != nullptr);
        QCOMPARE(t.value->dtype, t.dtype);
        QCOMPARE(t.value->shape, t.shape());
        QCOMPARE(t.value->element_count(), qsizetype(values.size()));
        for (qsizetype i = 0; i < values.size(); ++i) QCOMPARE(t.value->get(i), values[i]);
    }

    void embedded_value_errors_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");
        const QString head = R"({"id": "w", "dtype": "%1", "shape": %2, "role": "parameter", )";
        QTest::newRow("not an array") << head.arg("f32", "[2]") + R"("value": 3})"
                                      << "schema"
                                      << "p.json: $.tensors[0].value: expected a flat array of the tensor's elements "
                                         "in C order, got the number 3";
        QTest::newRow("too few") << head.arg("f32", "[2, 3]") + R"("value": [1, 2, 3, 4, 5]})"
                                 << "bad-value"
                                 << "p.json: $.tensors[0].value: holds 5 elements but the tensor's shape [2, 3] has 6";
        QTest::newRow("nested")
            << head.arg("f32", "[1, 1]") + R"("value": [[1]]})"
            << "schema"
            << "p.json: $.tensors[0].value[0]: expected a number (or \"nan\", \"inf\", \"-inf\"), got an array";
        QTest::newRow("a string") << head.arg("f16", "[1]") + R"("value": ["one"]})"
                                  << "schema"
                                  << "p.json: $.tensors[0].value[0]: expected a number (or \"nan\", \"inf\", "
                                     "\"-inf\"), got the string \"one\"";
        QTest::newRow("beyond f16") << head.arg("f16", "[2]") + R"("value": [1, 70000]})"
                                    << "bad-value"
                                    << "p.json: $.tensors[0].value[1]: the number 70000 is out of range for f16";
        QTest::newRow("beyond f32") << head.arg("f32", "[1]") + R"("value": [1e39]})"
                                    << "bad-value"
                                    << "p.json: $.tensors[0].value[0]: the number 1e+39 is out of range for f32";
        QTest::newRow("fraction for an int")
            << head.arg("i32", "[1]") + R"("value": [2.5]})"
            << "bad-value"
            << "p.json: $.tensors[0].value[0]: the number 2.5 is not an integer (the tensor is i32)";
        QTest::newRow("beyond i32") << head.arg("i32", "[1]") + R"("value": [3000000000]})"
                                    << "bad-value"
                                    << "p.json: $.tensors[0].value[0]: the number 3000000000 is out of range for i32";
        QTest::newRow("beyond i64")
            << head.arg("i64", "[1]") + R"("value": [18446744073709551615]})"
            << "bad-value"
            << "p.json: $.tensors[0].value[0]: the number 18446744073709551615 is out of range for i64";
        QTest::newRow("bool as number")
            << head.arg("bool", "[1]") + R"("value": [1]})"
            << "schema"
            << "p.json: $.tensors[0].value[0]: expected true or false (the tensor is bool), got the number 1";
        QTest::newRow("int as bool")
            << head.arg("i64", "[1]") + R"("value": [true]})"
            << "schema"
            << "p.json: $.tensors[0].value[0]: expected an integer (the tensor is i64), got true";
        QTest::newRow("data and value") << head.arg("f32", "[1]") + R"("data": "w.npy", "value": [1]})"
                                        << "schema"
                                        << "p.json: $.tensors[0]: give either \"data\" or \"value\", not both";
    }
    void embedded_value_errors() {
        QFETCH(QString, json);
        QFETCH(QString, code);
        QFETCH(QString, message);
        const LoadResult r = parse_project(project_with(json.toStdString()), "p.json");
        QCOMPARE(r.issues.size(), size_t{1});
        QCOMPARE(QString::fromStdString(r.issues[0].code), code);
        QCOMPARE(QString::fromStdString(r.issues[0].message), message);
        QCOMPARE(r.issues[0].node, std::string("w"));
        QVERIFY(r.graph.find_tensor(TensorId("w")) == nullptr);  // the tensor at fault is skipped
    }

    void value_of_a_bad_shape_is_not_checked() {
        // The shape's own error is the one reported; no second error about the value.
        const LoadResult r = parse_project(
            project_with(R"({"id": "w", "dtype": "f32", "shape": [-1], "role": "parameter", "value": [1]})"), "p.json");
        QCOMPARE(r.issues.size(), size_t{1});
        QCOMPARE(r.issues[0].code, std::string("bad-dimension"));
    }

    // ---- .npy values beside a project ---------------------------------------------------

    void load_values_beside_project() {
        QTemporaryDir dir;
        const fs::path root = temp_path(dir);
        fs::create_directories(root / "weights");
        QCOMPARE(write_npy(ramp(DType::f32, ZPoint{2, 3}), root / "weights" / "w.npy"), std::string());
        QCOMPARE(write_npy(ramp(DType::f16, ZPoint{3}), root / "b.npy"), std::string());
        // f64 data narrowed to an f32 tensor; f32 data rounded to a bf16 tensor.
        std::string f64 = to_npy(ramp(DType::i64, ZPoint{2}));
        f64.replace(f64.find("<i8"), 3, "<f8");
        const double halves[] = {0.1, -2.5};
        std::memcpy(f64.data() + f64.size() - 16, halves, 16);
        write_file(root / "d.npy", f64);
        QCOMPARE(write_npy(filled(DType::f32, ZPoint{2}, {1.00390625, 3}), root / "bf.npy"), std::string());

        Graph g;
        Tensor w = tensor("w", DType::f32, ZPoint{2, 3}, TensorRole::parameter);
        w.data = "weights/w.npy";
        Tensor b = tensor("b", DType::f16, ZPoint{3}, TensorRole::parameter);
        b.data = "b.npy";
        Tensor d = tensor("d", DType::f32, ZPoint{2}, TensorRole::parameter);
        d.data = (root / "d.npy").string();  // absolute: read only with the user's consent
        Tensor bf = tensor("bf", DType::bf16, ZPoint{2}, TensorRole::parameter);
        bf.data = "bf.npy";
        Tensor embedded =
            tensor("e", DType::f32, ZPoint{1}, TensorRole::parameter, shared(filled(DType::f32, ZPoint{1}, {7})));
        for (const Tensor &t : {w, b, d, bf, embedded}) g.put_tensor(t);
        const TensorPtr untouched = g.tensor_ptr(TensorId("e"));

        Graph refused = g;
        const std::vector<Issue> outside = load_tensor_values(refused, root);
        QCOMPARE(outside.size(), size_t{1});
        QCOMPARE(outside[0].code, std::string("data-outside-project"));
        QCOMPARE(outside[0].node, std::string("d"));
        const std::vector<Issue> issues = load_tensor_values(g, root, DataPathPolicy{true});
        QVERIFY2(issues.empty(), qPrintable(issues_text(issues)));
        QVERIFY(*g.find_tensor(TensorId("w"))->value == ramp(DType::f32, ZPoint{2, 3}));
        QVERIFY(*g.find_tensor(TensorId("b"))->value == ramp(DType::f16, ZPoint{3}));
        QVERIFY(*g.find_tensor(TensorId("d"))->value == filled(DType::f32, ZPoint{2}, {0.1, -2.5}));
        QVERIFY(*g.find_tensor(TensorId("bf"))->value == filled(DType::bf16, ZPoint{2}, {1.0, 3}));  // tie to even
        QCOMPARE(g.find_tensor(TensorId("w"))->data, std::optional<std::string>("weights/w.npy"));
        QVERIFY(g.tensor_ptr(TensorId("e")) == untouched);
    }

    void load_value_errors_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<QList<qlonglong>>("shape");
        QTest::addColumn<QString>("file");  // written as f32 [2, 3] unless "missing.npy" or "bad.npy"
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");  // %1: the project directory
        QTest::newRow("dtype mismatch")
            << int(DType::i32) << QList<qlonglong>{2, 3} << "w.npy"
            << "tensor-data-mismatch"
            << "$.tensors[1].data: tensor \"w\": %1/w.npy: the tensor is i32 [2, 3] but the file holds f32 [2, 3]";
        QTest::newRow("shape mismatch")
            << int(DType::f32) << QList<qlonglong>{3, 2} << "w.npy"
            << "tensor-data-mismatch"
            << "$.tensors[1].data: tensor \"w\": %1/w.npy: the tensor is f32 [3, 2] but the file holds f32 [2, 3]";
        QTest::newRow("missing file")
            << int(DType::f32) << QList<qlonglong>{2, 3} << "missing.npy"
            << "tensor-data"
            << "$.tensors[1].data: tensor \"w\": %1/missing.npy: cannot open: No such file or directory";
        QTest::newRow("not npy") << int(DType::f32) << QList<qlonglong>{2, 3} << "bad.npy"
                                 << "tensor-data"
                                 << "$.tensors[1].data: tensor \"w\": %1/bad.npy: not a .npy file: it does not start "
                                    "with the magic string \\x93NUMPY";
        QTest::newRow("f64 for f16")
            << int(DType::f16) << QList<qlonglong>{2} << "d.npy"
            << "tensor-data"
            << "$.tensors[1].data: tensor \"w\": %1/d.npy: float64 data ('<f8') is accepted for f32 tensors only";
    }
    void load_value_errors() {
        QFETCH(int, dtype);
        QFETCH(QList<qlonglong>, shape);
        QFETCH(QString, file);
        QFETCH(QString, code);
        QFETCH(QString, message);
        QTemporaryDir dir;
        const fs::path root = temp_path(dir);
        QCOMPARE(write_npy(ramp(DType::f32, ZPoint{2, 3}), root / "w.npy"), std::string());
        write_file(root / "bad.npy", "{\"not\": \"npy\"}");
        std::string f64 = to_npy(ramp(DType::i64, ZPoint{2}));
        f64.replace(f64.find("<i8"), 3, "<f8");
        write_file(root / "d.npy", f64);

        Graph g;
        g.put_tensor(tensor("x", DType::f32, ZPoint{2}, TensorRole::input));
        Tensor w = tensor("w", static_cast<DType>(dtype), ZPoint(std::vector<Coord>(shape.begin(), shape.end())),
                          TensorRole::parameter);
        w.data = file.toStdString();
        g.put_tensor(w);
        const std::vector<Issue> issues = load_tensor_values(g, root);
        QCOMPARE(issues.size(), size_t{1});
        QCOMPARE(QString::fromStdString(issues[0].code), code);
        QCOMPARE(issues[0].node, std::string("w"));
        QCOMPARE(issues[0].json_path, std::string("$.tensors[1].data"));
        QCOMPARE(QString::fromStdString(issues[0].message), message.arg(QString::fromStdString(root.string())));
        QVERIFY(g.find_tensor(TensorId("w"))->value == nullptr);
    }

    void save_with_values_splits_big_and_small() {
        QTemporaryDir dir;
        const fs::path root = temp_path(dir);
        Graph g;
        g.name = "mixed";
        // Ids that are not file names: a '/', spaces, a clash after sanitising,
        // a clash by case only, a leading dot.
        const std::vector<std::string> ids = {"layer1/w", "layer1_w", "my weights", "W", "w", "..", "small"};
        for (const std::string &id : ids) {
            const ZPoint shape = id == "small" ? ZPoint{2, 2} : ZPoint{8, 9};
            g.put_tensor(tensor(id, DType::f32, shape, TensorRole::parameter, shared(ramp(DType::f32, shape))));
        }
        g.put_tensor(tensor("x", DType::f32, ZPoint{8}, TensorRole::input));
        const fs::path path = root / "mixed.tapestry.json";
        QCOMPARE(save_project_with_values(g, path, 4), std::string());

        LoadResult loaded = load_project(path);
        QVERIFY2(loaded.ok(), qPrintable(issues_text(loaded.issues)));
        std::map<std::string, std::optional<std::string>> data;
        for (const TensorPtr &t : loaded.graph.tensors()) data[t->id.value] = t->data;
        QCOMPARE(data["layer1/w"], std::optional<std::string>("mixed.data/layer1_w.npy"));
        QCOMPARE(data["layer1_w"], std::optional<std::string>("mixed.data/layer1_w_2.npy"));
        QCOMPARE(data["my weights"], std::optional<std::string>("mixed.data/my_weights.npy"));
        QCOMPARE(data["W"], std::optional<std::string>("mixed.data/W.npy"));
        QCOMPARE(data["w"], std::optional<std::string>("mixed.data/w_2.npy"));
        QCOMPARE(data[".."], std::optional<std::string>("mixed.data/_...npy"));
        QCOMPARE(data["small"], std::nullopt);  // embedded
        QVERIFY(loaded.graph.find_tensor(TensorId("small"))->value != nullptr);
        QVERIFY(loaded.graph.find_tensor(TensorId("x"))->value == nullptr);
        std::set<std::string> files;
        for (const auto &entry : fs::directory_iterator(root / "mixed.data"))
            files.insert(entry.path().filename().string());
        QCOMPARE(files.size(), size_t{6});

        const std::vector<Issue> issues = load_tensor_values(loaded.graph, path.parent_path());
        QVERIFY2(issues.empty(), qPrintable(issues_text(issues)));
        for (const TensorPtr &t : g.tensors()) {
            const Tensor *back = loaded.graph.find_tensor(t->id);
            QVERIFY(back != nullptr);
            QCOMPARE(back->value == nullptr, t->value == nullptr);
            if (t->value) QVERIFY2(*back->value == *t->value, t->id.value.c_str());
        }

        // Saving the loaded project again writes the same text.
        const std::string first = read_file(path);
        QCOMPARE(save_project_with_values(loaded.graph, path, 4), std::string());
        QCOMPARE(read_file(path), first);
    }

    void save_with_values_bf16_and_errors() {
        QTemporaryDir dir;
        const fs::path root = temp_path(dir);
        Graph g;
        g.put_tensor(
            tensor("h", DType::bf16, ZPoint{100}, TensorRole::parameter, shared(ramp(DType::bf16, ZPoint{100}))));
        const fs::path path = root / "net.json";
        QCOMPARE(save_project_with_values(g, path), std::string());
        QVERIFY(fs::exists(root / "net.data" / "h.npy"));
        LoadResult loaded = load_project(path);
        QVERIFY(loaded.ok());
        QVERIFY(load_tensor_values(loaded.graph, root).empty());
        QVERIFY(*loaded.graph.tensors()[0]->value == *g.tensors()[0]->value);

        write_file(root / "blocked.data", "a file where the folder should be");
        const std::string error = save_project_with_values(g, root / "blocked.tapestry.json");
        QVERIFY2(error.rfind((root / "blocked.tapestry.json").string() + ": cannot create " +
                                 (root / "blocked.data").string() + ": ",
                             0) == 0,
                 error.c_str());
        QVERIFY(!fs::exists(root / "blocked.tapestry.json"));
    }

    // ---- run directories -----------------------------------------------------------------

    void inputs_and_outputs_directories() {
        QTemporaryDir dir;
        const fs::path root = temp_path(dir);
        Graph g;
        Tensor x = tensor("x", DType::f32, ZPoint{2, 2}, TensorRole::input);
        x.name = "input:0";  // ONNX-style name: the file is input_0.npy
        g.put_tensor(x);
        g.put_tensor(tensor("ids", DType::i64, ZPoint{3}, TensorRole::input));
        g.put_tensor(tensor("w", DType::f32, ZPoint{2}, TensorRole::parameter));  // optional: no value
        g.put_tensor(tensor("b", DType::f32, ZPoint{2}, TensorRole::parameter, shared(ramp(DType::f32, ZPoint{2}))));
        Tensor y = tensor("y", DType::f32, ZPoint{2, 2}, TensorRole::output);
        y.name = "out/logits";
        g.put_tensor(y);

        const fs::path in = root / "in";
        fs::create_directories(in);
        // Missing inputs are listed by name and file.
        auto r = read_inputs_dir(g, in);
        QVERIFY(!r.has_value());
        QCOMPARE(r.error(), in.string() + ": missing inputs \"input:0\" (input_0.npy), \"ids\" (ids.npy)");

        QCOMPARE(write_npy(ramp(DType::f32, ZPoint{2, 2}), in / "input_0.npy"), std::string());
        QCOMPARE(write_npy(ramp(DType::i64, ZPoint{3}), in / "ids.npy"), std::string());  // by id: same here
        write_file(in / "notes.txt", "extra files are ignored");
        QCOMPARE(write_npy(ramp(DType::f32, ZPoint{5}), in / "unrelated.npy"), std::string());
        r = read_inputs_dir(g, in);
        QVERIFY2(r.has_value(), r.has_value() ? "" : r.error().c_str());
        QCOMPARE(r->size(), size_t{2});
        QVERIFY(r->at(TensorId("x")) == ramp(DType::f32, ZPoint{2, 2}));
        QVERIFY(r->at(TensorId("ids")) == ramp(DType::i64, ZPoint{3}));

        // A parameter without a value is read when its file is there.
        QCOMPARE(write_npy(ramp(DType::f32, ZPoint{2}), in / "w.npy"), std::string());
        r = read_inputs_dir(g, in);
        QVERIFY(r.has_value());
        QCOMPARE(r->size(), size_t{3});

        // Falling back to the id; a mismatched file is an error naming it.
        fs::rename(in / "input_0.npy", in / "x.npy");
        QCOMPARE(write_npy(ramp(DType::i32, ZPoint{3}), in / "ids.npy"), std::string());
        r = read_inputs_dir(g, in);
        QVERIFY(!r.has_value());
        QCOMPARE(r.error(),
                 (in / "ids.npy").string() + ": tensor \"ids\": the tensor is i64 [3] but the file holds i32 [3]");

        QCOMPARE(read_inputs_dir(g, root / "nope").error(), (root / "nope").string() + ": is not a directory");

        // Outputs by name, sanitised; values of unknown tensors by id.
        const fs::path out = root / "out" / "deeper";
        std::map<TensorId, TensorData> values;
        values.emplace(TensorId("y"), ramp(DType::f32, ZPoint{2, 2}));
        values.emplace(TensorId("x"), ramp(DType::f32, ZPoint{2, 2}));
        values.emplace(TensorId("gone/1"), ramp(DType::bf16, ZPoint{1}));
        QCOMPARE(write_outputs_dir(g, values, out), std::string());
        std::set<std::string> files;
        for (const auto &entry : fs::directory_iterator(out)) files.insert(entry.path().filename().string());
        QCOMPARE(files, (std::set<std::string>{"out_logits.npy", "input_0.npy", "gone_1.npy"}));
        QVERIFY(*read_npy(out / "out_logits.npy") == ramp(DType::f32, ZPoint{2, 2}));
        // What write_outputs_dir writes, read_inputs_dir reads back.
        Graph only_x;
        only_x.put_tensor(x);
        auto again = read_inputs_dir(only_x, out);
        QVERIFY(again.has_value());
        QVERIFY(again->at(TensorId("x")) == ramp(DType::f32, ZPoint{2, 2}));
    }

    void duplicate_names_use_ids() {
        QTemporaryDir dir;
        const fs::path root = temp_path(dir);
        Graph g;
        Tensor a = tensor("a", DType::f32, ZPoint{1}, TensorRole::input);
        Tensor b = tensor("b", DType::f32, ZPoint{1}, TensorRole::input);
        a.name = b.name = "same";
        g.put_tensor(a);
        g.put_tensor(b);
        std::map<TensorId, TensorData> values;
        values.emplace(TensorId("a"), filled(DType::f32, ZPoint{1}, {1}));
        values.emplace(TensorId("b"), filled(DType::f32, ZPoint{1}, {2}));
        QCOMPARE(write_outputs_dir(g, values, root), std::string());
        QVERIFY(fs::exists(root / "a.npy") && fs::exists(root / "b.npy") && !fs::exists(root / "same.npy"));
        auto r = read_inputs_dir(g, root);
        QVERIFY(r.has_value());
        QCOMPARE(r->at(TensorId("b")).get(0), 2.0);
    }

    // ---- random inputs ---------------------------------------------------------------------

    void random_inputs() {
        Graph g;
        g.put_tensor(tensor("x", DType::f32, ZPoint{64, 64}, TensorRole::input));
        g.put_tensor(tensor("h", DType::f16, ZPoint{4096}, TensorRole::input));
        g.put_tensor(tensor("ids", DType::i64, ZPoint{2, 500}, TensorRole::input));
        g.put_tensor(tensor("flat_ids", DType::i64, ZPoint{1000}, TensorRole::intermediate));
        g.put_tensor(
            tensor("table", DType::f32, ZPoint{5, 4}, TensorRole::parameter, shared(ramp(DType::f32, ZPoint{5, 4}))));
        g.put_tensor(tensor("emb", DType::f32, ZPoint{1000, 4}, TensorRole::output));
        g.put_tensor(tensor("counts", DType::i32, ZPoint{1000}, TensorRole::input));
        g.put_tensor(tensor("mask", DType::boolean, ZPoint{2000}, TensorRole::input));
        g.put_tensor(tensor("w", DType::bf16, ZPoint{300}, TensorRole::parameter));  // no value: random too
        g.put_tensor(tensor("y", DType::f32, ZPoint{64, 64}, TensorRole::output));
        add_op(g, "flatten", "reshape", {{"x", "ids"}}, "flat_ids", Params{{"shape", std::vector<std::int64_t>{1000}}});
        add_op(g, "lookup", "embedding", {{"ids", "flat_ids"}, {"table", "table"}}, "emb");

        const auto values = make_random_inputs(g, 42);
        QCOMPARE(values.size(), size_t{6});
        for (const char *absent : {"flat_ids", "table", "emb", "y"}) QVERIFY(values.count(TensorId(absent)) == 0);

        auto range_of = [&](const char *id) {
            const TensorData &t = values.at(TensorId(id));
            double lo = INFINITY, hi = -INFINITY, sum = 0;
            for (std::int64_t i = 0; i < t.element_count(); ++i) {
                lo = std::min(lo, t.get(i));
                hi = std::max(hi, t.get(i));
                sum += t.get(i);
            }
            return std::tuple{lo, hi, sum / static_cast<double>(t.element_count())};
        };
        for (const char *id : {"x", "h", "w"}) {
            const auto [lo, hi, mean] = range_of(id);
            QVERIFY2(lo >= -1 && hi < 1, id);
            QVERIFY2(lo < -0.9 && hi > 0.9 && std::abs(mean) < 0.1, id);  // spread over the interval
        }
        {
            const auto [lo, hi, mean] = range_of("ids");  // rows of the table, through the reshape
            QCOMPARE(lo, 0.0);
            QCOMPARE(hi, 4.0);
            Q_UNUSED(mean);
        }
        {
            const auto [lo, hi, mean] = range_of("counts");
            QCOMPARE(lo, 0.0);
            QCOMPARE(hi, 7.0);
            QVERIFY(std::abs(mean - 3.5) < 0.3);
        }
        {
            const auto [lo, hi, mean] = range_of("mask");
            QCOMPARE(lo, 0.0);
            QCOMPARE(hi, 1.0);
            QVERIFY(std::abs(mean - 0.5) < 0.05);
        }
        QCOMPARE(values.at(TensorId("x")).dtype, DType::f32);
        QCOMPARE(values.at(TensorId("ids")).shape, (ZPoint{2, 500}));

        // Deterministic per seed; another seed gives other numbers.
        const auto again = make_random_inputs(g, 42);
        QVERIFY(again == values);
        const auto other = make_random_inputs(g, 43);
        QVERIFY(!(other.at(TensorId("x")) == values.at(TensorId("x"))));
        // A tensor's values depend on its id and the seed, not on the rest of the graph.
        Graph lone;
        lone.put_tensor(tensor("x", DType::f32, ZPoint{64, 64}, TensorRole::input));
        QVERIFY(make_random_inputs(lone, 42).at(TensorId("x")) == values.at(TensorId("x")));
    }

    // The numbers themselves are fixed (std::mt19937_64 is specified to the bit,
    // the mapping to values is ours): the same on every platform and release.
    void random_inputs_are_pinned() {
        Graph g;
        g.put_tensor(tensor("x", DType::f32, ZPoint{3}, TensorRole::input));
        g.put_tensor(tensor("n", DType::i32, ZPoint{4}, TensorRole::input));
        g.put_tensor(tensor("b", DType::boolean, ZPoint{8}, TensorRole::input));
        const auto v = make_random_inputs(g, 1);
        const TensorData &x = v.at(TensorId("x"));
        QString bools;
        for (std::int64_t i = 0; i < 8; ++i) bools += v.at(TensorId("b")).get(i) != 0 ? '1' : '0';
        QCOMPARE(x.get(0), -0.081061176955699921);
        QCOMPARE(x.get(1), 0.26079866290092468);
        QCOMPARE(x.get(2), 0.31701329350471497);
        const auto n = v.at(TensorId("n")).as<std::int32_t>();
        QCOMPARE(std::vector<std::int32_t>(n.begin(), n.end()), (std::vector<std::int32_t>{2, 6, 1, 3}));
        QCOMPARE(bools, QString("00001010"));
    }

    void gather_indices_use_the_axis() {
        Graph g;
        g.put_tensor(
            tensor("data", DType::f32, ZPoint{3, 6}, TensorRole::parameter, shared(ramp(DType::f32, ZPoint{3, 6}))));
        g.put_tensor(tensor("idx", DType::i32, ZPoint{400}, TensorRole::input));
        g.put_tensor(tensor("y", DType::f32, ZPoint{3, 400}, TensorRole::output));
        // ids cast from i64 to i32 on the way to an embedding of 3 rows.
        g.put_tensor(tensor("wide", DType::i64, ZPoint{400}, TensorRole::input));
        g.put_tensor(tensor("narrow", DType::i32, ZPoint{400}, TensorRole::intermediate));
        g.put_tensor(
            tensor("table", DType::f32, ZPoint{3, 2}, TensorRole::parameter, shared(ramp(DType::f32, ZPoint{3, 2}))));
        g.put_tensor(tensor("e", DType::f32, ZPoint{400, 2}, TensorRole::output));
        add_op(g, "g", "gather", {{"data", "data"}, {"indices", "idx"}}, "y", Params{{"axis", std::int64_t{-1}}});
        add_op(g, "c", "cast", {{"x", "wide"}}, "narrow", Params{{"to", std::string("i32")}});
        add_op(g, "lookup", "embedding", {{"ids", "narrow"}, {"table", "table"}}, "e");
        const auto values = make_random_inputs(g, 5);
        auto distinct = [&](const char *id) {
            const TensorData &t = values.at(TensorId(id));
            std::set<double> seen;
            for (std::int64_t i = 0; i < t.element_count(); ++i) seen.insert(t.get(i));
            return seen;
        };
        QCOMPARE(distinct("idx"), (std::set<double>{0, 1, 2, 3, 4, 5}));  // axis -1 of [3, 6]
        QCOMPARE(distinct("wide"), (std::set<double>{0, 1, 2}));
    }
};

QTEST_GUILESS_MAIN(TestTensorValues)
#include "test_tensor_values.moc"
