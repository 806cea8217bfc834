// The project file format (engine/io/project_file.h, docs/formats.md): the
// examples load, validate and round-trip byte for byte; hand-built graphs with
// negative origins, signatures and shard selections round-trip; and every
// malformed file gives exactly one clear error naming the place.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/validate.h"
#include "io/project_file.h"
#include "ops/library.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

fs::path source_dir() {
    const QByteArray env = qgetenv("TAPESTRY_SOURCE_DIR");
    if (!env.isEmpty()) return fs::path(env.toStdString());
    return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string read_file(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

QString issues_text(const std::vector<Issue> &issues) {
    QStringList lines;
    for (const Issue &i : issues) lines << QString::fromStdString(format_issue(i));
    return lines.join('\n');
}

std::vector<Issue> errors_of(const std::vector<Issue> &issues) {
    std::vector<Issue> out;
    for (const Issue &i : issues)
        if (i.severity == Severity::error) out.push_back(i);
    return out;
}

// Empty when equal; otherwise the first difference.
QString graph_difference(const Graph &a, const Graph &b) {
    if (a.name != b.name) return "name";
    if (a.description != b.description) return "description";
    if (a.tensors().size() != b.tensors().size()) return "tensor count";
    if (a.operations().size() != b.operations().size()) return "operation count";
    for (size_t i = 0; i < a.tensors().size(); ++i)
        if (!(*a.tensors()[i] == *b.tensors()[i])) return "tensor " + QString::fromStdString(a.tensors()[i]->id.value);
    for (size_t i = 0; i < a.operations().size(); ++i)
        if (!(*a.operations()[i] == *b.operations()[i]))
            return "operation " + QString::fromStdString(a.operations()[i]->id.value);
    return {};
}

TensorSelection sel(const std::string &id, ZRange r) { return {TensorId(id), std::move(r)}; }

OperandProjection proj(std::initializer_list<std::initializer_list<Coord>> rows, int cols, ZPoint offset,
                       ZPoint window, bool clipped = false) {
    std::vector<std::vector<Coord>> r;
    for (const auto &row : rows) r.emplace_back(row);
    return {IndexProjection(AffineMap(ZMatrix::from_rows(r, cols), std::move(offset)), std::move(window)), clipped};
}

// A graph using every field: negative origins, a rank-0 tensor, all parameter
// types, explicit signatures (one whose index space differs from the op's, one
// with no op index space, an empty matrix for a rank-0 operand), shards with and
// without stated selections, variadic and empty ports, a dangling reference.
Graph hand_built_graph() {
    Graph g;
    g.name = "hand built";
    g.description = "negative origins, signatures, shards — and \"quotes\"";
    g.put_tensor(Tensor{TensorId("a"), "a", DType::bf16, ZRange({-4, 2}, {4, 10}), TensorRole::input, std::nullopt, nullptr});
    g.put_tensor(Tensor{TensorId("b"), "B matrix", DType::f16, ZRange::of_shape({8, 8}), TensorRole::parameter,
                        std::string("weights/b.npy"), nullptr});
    g.put_tensor(Tensor{TensorId("s"), "", DType::f32, ZRange(), TensorRole::intermediate, std::string(), nullptr});
    g.put_tensor(Tensor{TensorId("ids"), "token ids", DType::i64, ZRange::of_shape({0, 3}), TensorRole::input, {}, nullptr});
    g.put_tensor(Tensor{TensorId("flags"), "flags", DType::boolean, ZRange({-1}, {-1}), TensorRole::input, {}, nullptr});
    g.put_tensor(Tensor{TensorId("out"), "out", DType::i32, ZRange({-8, -8}, {0, 0}), TensorRole::output, {}, nullptr});

    Operation mm;
    mm.id = OpId("mm");
    mm.name = "matrix product";
    mm.kind = "matmul";
    mm.params = Params{{"flag", true},
                       {"count", std::int64_t{-3}},
                       {"scale", 0.125},
                       {"whole", 2.0},
                       {"tiny", 1e-300},
                       {"mode", std::string("tanh \u00e9")},
                       {"axes", std::vector<std::int64_t>{0, -1, 1099511627776}},
                       {"none", std::vector<std::int64_t>{}}};
    mm.inputs = {PortBinding{"a", {sel("a", ZRange({-4, 2}, {4, 10}))}},
                 PortBinding{"b", {sel("b", ZRange({0, 0}, {8, 4})), sel("b", ZRange({0, 4}, {8, 8}))}},
                 PortBinding{"empty", {}}};
    mm.outputs = {PortBinding{"y", {sel("out", ZRange({-8, -8}, {0, 0}))}}};
    mm.index_space = ZRange({-8, -8, 0}, {0, 0, 1});
    Signature sig;
    sig.index_space = ZRange({-8, -8}, {0, 0});  // differs from the op's: both are kept
    sig.inputs = {PortProjections{"a", {proj({{1, 0}, {0, 0}}, 2, {4, 2}, {1, 8})}},
                  PortProjections{"b", {proj({{0, 0}, {0, -1}}, 2, {0, -1048576}, {8, 1}, true),
                                        proj({{0, 0}, {0, 1048576}}, 2, {0, 0}, {8, 1})}},
                  PortProjections{"s", {proj({}, 2, {}, {})}}};
    sig.outputs = {PortProjections{"y", {proj({{1, 0}, {0, 1}}, 2, {0, 0}, {1, 1})}}};
    mm.signature = sig;
    Shard s0{ShardId("mm/left"), ZRange({-8, -8, 0}, {0, -4, 1}), "gpu0",
             {PortBinding{"a", {sel("a", ZRange({-4, 2}, {4, 10}))}}},
             {PortBinding{"y", {sel("out", ZRange({-8, -8}, {0, -4}))}}}};
    Shard s1{ShardId("mm/right"), ZRange({-8, -4, 0}, {0, 0, 1}), "", {}, {}};
    mm.shards = {s0, s1};
    g.put_op(mm);

    Operation dangling;
    dangling.id = OpId("dangling");
    dangling.name = "dangling";
    dangling.kind = "not_a_kind";
    dangling.inputs = {PortBinding{"x", {sel("ghost", ZRange()), sel("ghost2", ZRange({1}, {5}))}}};
    dangling.outputs = {PortBinding{"y", {sel("s", ZRange())}}};
    Signature rank0;
    rank0.index_space = ZRange();
    rank0.inputs = {PortProjections{"x", {proj({{}}, 0, {0}, {1})}}};
    dangling.signature = rank0;  // no op index space: the signature states its own
    g.put_op(dangling);
    return g;
}

struct MalformedCase {
    const char *file;  // tests/data/malformed/<file>.tapestry.json
    const char *code;
    const char *path;
    const char *message;
};

// One row per file in tests/data/malformed: its single error, exactly as a user sees it.
const std::vector<MalformedCase> &malformed_cases() {
    static const std::vector<MalformedCase> cases = {
        {"truncated", "json-syntax", "",
            "truncated.tapestry.json:6:45: syntax error while parsing value - unexpected end of input; expected '[', "
            "'{', or a literal"},
        {"not_json", "json-syntax", "",
            "not_json.tapestry.json:1:1: syntax error while parsing value - invalid literal"},
        {"empty", "json-syntax", "", "empty.tapestry.json: the file is empty"},
        {"root_not_object", "schema", "$", "root_not_object.tapestry.json: $: expected a JSON object, got an array"},
        {"wrong_format", "schema", "$.format",
            "wrong_format.tapestry.json: $.format: the string \"tapestry-plan\" does not name a Tapestry project "
            "(expected \"tapestry-project\")"},
        {"newer_version", "unsupported-version", "$.version",
            "newer_version.tapestry.json: $.version: written by a newer Tapestry (format version 7); this build "
            "reads version 1"},
        {"missing_tensors", "schema", "$", "missing_tensors.tapestry.json: $: missing required field \"tensors\""},
        {"shape_is_string", "schema", "$.tensors[1].shape",
            "shape_is_string.tapestry.json: $.tensors[1].shape: expected an array of integers, got the string "
            "\"4x8\""},
        {"missing_dtype", "schema", "$.tensors[1]",
            "missing_dtype.tapestry.json: $.tensors[1]: missing required field \"dtype\""},
        {"unknown_dtype", "bad-dtype", "$.tensors[1].dtype",
            "unknown_dtype.tapestry.json: $.tensors[1].dtype: unknown dtype \"f64\" (expected one of f32, f16, "
            "bf16, i32, i64, bool)"},
        {"unknown_role", "bad-role", "$.tensors[1].role",
            "unknown_role.tapestry.json: $.tensors[1].role: unknown role \"weights\" (expected one of input, "
            "parameter, intermediate, output)"},
        {"negative_dimension", "bad-dimension", "$.tensors[2].shape[1]",
            "negative_dimension.tapestry.json: $.tensors[2].shape[1]: dimension -4 is negative"},
        {"huge_dimension", "bad-dimension", "$.tensors[0].shape[1]",
            "huge_dimension.tapestry.json: $.tensors[0].shape[1]: dimension 1000000000000000 exceeds the limit "
            "2^40 = 1099511627776"},
        {"element_count_overflow", "bad-dimension", "$.tensors[0].shape",
            "element_count_overflow.tapestry.json: $.tensors[0].shape: extents [1099511627776, 1099511627776, 16] "
            "hold more than 2^62 elements"},
        {"duplicate_id", "duplicate-id", "$.operations[0].id",
            "duplicate_id.tapestry.json: $.operations[0].id: id \"x\" is already used by the tensor at "
            "$.tensors[0]"},
        {"duplicate_key", "duplicate-key", "$.tensors[0]",
            "duplicate_key.tapestry.json: $.tensors[0]: duplicate key \"shape\" (the first one is used)"},
        {"range_end_below_start", "bad-range", "$.tensors[0].range.end[1]",
            "range_end_below_start.tapestry.json: $.tensors[0].range.end[1]: end 2 is below start 8"},
        {"range_rank_mismatch", "bad-range", "$.operations[0].inputs.x[0].range",
            "range_rank_mismatch.tapestry.json: $.operations[0].inputs.x[0].range: start has rank 2 but end has "
            "rank 1"},
        {"ragged_matrix", "bad-matrix", "$.operations[0].signature.inputs.x[0].matrix[1]",
            "ragged_matrix.tapestry.json: $.operations[0].signature.inputs.x[0].matrix[1]: the matrix is ragged: "
            "row 1 has 3 entries but row 0 has 2"},
        {"matrix_entry_too_large", "bad-matrix", "$.operations[0].signature.inputs.x[0].matrix[1][1]",
            "matrix_entry_too_large.tapestry.json: $.operations[0].signature.inputs.x[0].matrix[1][1]: entry "
            "2000000 exceeds the limit ±2^20 = 1048576"},
        {"matrix_width_mismatch", "bad-matrix", "$.operations[0].signature.inputs.x[0].matrix",
            "matrix_width_mismatch.tapestry.json: $.operations[0].signature.inputs.x[0].matrix: rows have 3 "
            "entries but the index space has rank 2"},
        {"param_null", "schema", "$.operations[0].params.approximate",
            "param_null.tapestry.json: $.operations[0].params.approximate: null is not a parameter value (a bool, "
            "integer, float, string or list of integers)"},
        {"param_float_list", "schema", "$.operations[0].params.kernel[1]",
            "param_float_list.tapestry.json: $.operations[0].params.kernel[1]: a list parameter holds integers "
            "only, got the number 2.5"},
        {"deep_nesting", "json-syntax", "", "deep_nesting.tapestry.json:5:268: nesting deeper than 256 levels"},
    };
    return cases;
}

}  // namespace

class TestProjectFile : public QObject {
    Q_OBJECT

private slots:
    void examples_data() {
        QTest::addColumn<QString>("file");
        for (const char *name : {"mlp", "gpt2_block", "convnet", "attention"})
            QTest::newRow(name) << QString("%1.tapestry.json").arg(name);
    }

    // Every example loads without a single issue, is in canonical saved form, and
    // round-trips: load → save → load gives the same graph and the same text.
    void examples() {
        QFETCH(QString, file);
        const fs::path path = source_dir() / "projects" / file.toStdString();
        const LoadResult loaded = load_project(path);
        QVERIFY2(loaded.issues.empty(), qPrintable(issues_text(loaded.issues)));
        QVERIFY(loaded.graph.operations().size() >= 3);
        const std::string text = serialize_project(loaded.graph);
        QCOMPARE(text, read_file(path));
        const LoadResult again = parse_project(text, file.toStdString());
        QVERIFY2(again.issues.empty(), qPrintable(issues_text(again.issues)));
        QVERIFY2(graph_difference(loaded.graph, again.graph).isEmpty(),
                 qPrintable(graph_difference(loaded.graph, again.graph)));
        QCOMPARE(serialize_project(again.graph), text);
    }

    void examples_validate_data() { examples_data(); }
    void examples_validate() {
        QFETCH(QString, file);
        const LoadResult loaded = load_project(source_dir() / "projects" / file.toStdString());
        QVERIFY(loaded.ok());
        const std::vector<Issue> issues = validate(loaded.graph, OpLibrary::standard());
        QVERIFY2(issues.empty(), qPrintable(issues_text(issues)));
    }

    // The complete example of docs/formats.md loads without issues and validates.
    void documented_example() {
        const std::string doc = read_file(source_dir() / "docs" / "formats.md");
        const size_t start = doc.find("```json\n");
        QVERIFY(start != std::string::npos);
        const size_t end = doc.find("```", start + 8);
        const LoadResult r = parse_project(doc.substr(start + 8, end - start - 8), "formats.md");
        QVERIFY2(r.issues.empty(), qPrintable(issues_text(r.issues)));
        QCOMPARE(r.graph.find_tensor(TensorId("x"))->range, ZRange({-2, 0}, {2, 8}));
        QCOMPARE(r.graph.find_op(OpId("fc"))->shards.size(), size_t{2});
        const std::vector<Issue> issues = validate(r.graph, OpLibrary::standard());
        QVERIFY2(issues.empty(), qPrintable(issues_text(issues)));
    }

    void example_contents() {
        const LoadResult mlp = load_project(source_dir() / "projects" / "mlp.tapestry.json");
        QVERIFY(mlp.ok());
        const Operation *fc1 = mlp.graph.find_op(OpId("fc1"));
        QVERIFY(fc1 != nullptr);
        QCOMPARE(fc1->kind, std::string("linear"));
        QCOMPARE(fc1->inputs.size(), size_t{3});
        QCOMPARE(fc1->inputs[0].name, std::string("x"));  // file order, not alphabetical
        QCOMPARE(fc1->inputs[0].selections[0].range, ZRange::of_shape({512, 1024}));  // bare id = whole tensor
        QCOMPARE(fc1->shards.size(), size_t{4});
        QCOMPARE(fc1->shards[3].index, ZRange({384, 0}, {512, 4096}));
        QCOMPARE(fc1->shards[3].device, std::string("gpu3"));
        QCOMPARE(fc1->shards[3].inputs[0].selections[0].range, ZRange({384, 0}, {512, 1024}));
        QVERIFY(fc1->signature.has_value());
        QCOMPARE(fc1->signature->index_space, ZRange::of_shape({512, 4096}));
        QCOMPARE(fc1->signature->input("w", 0)->projection.window(), ZPoint({1024, 1}));
        QCOMPARE(mlp.graph.find_tensor(TensorId("w1"))->name, std::string("fc1.weight"));

        const LoadResult gpt2 = load_project(source_dir() / "projects" / "gpt2_block.tapestry.json");
        QVERIFY(gpt2.ok());
        const Operation *attention = gpt2.graph.find_op(OpId("attention"));
        QVERIFY(attention != nullptr);
        QCOMPARE(attention->params.get_int("heads", 0), std::int64_t{12});
        QCOMPARE(attention->params.get_bool("causal", false), true);
        const ParamValue *eps = gpt2.graph.find_op(OpId("ln_1"))->params.find("epsilon");
        QVERIFY(eps != nullptr && std::holds_alternative<double>(*eps));
        QCOMPARE(gpt2.graph.find_op(OpId("split_k"))->params.get_ints("starts", {}), std::vector<std::int64_t>{768});
    }

    void hand_built_round_trip() {
        const Graph g = hand_built_graph();
        const std::string text = serialize_project(g);
        const LoadResult loaded = parse_project(text, "hand.tapestry.json");
        QVERIFY2(loaded.issues.empty(), qPrintable(issues_text(loaded.issues)));
        QVERIFY2(graph_difference(g, loaded.graph).isEmpty(), qPrintable(graph_difference(g, loaded.graph)));
        QCOMPARE(serialize_project(loaded.graph), text);
        // Shapes at the origin, ranges elsewhere; whole-tensor selections as bare ids.
        QVERIFY(text.find("\"range\": {\"start\": [-4, 2], \"end\": [4, 10]}") != std::string::npos);
        QVERIFY(text.find("\"shape\": [8, 8]") != std::string::npos);
        QVERIFY(text.find("\"a\": \"a\"") != std::string::npos);
        QVERIFY(text.find("\"whole\": 2.0") != std::string::npos);
        QVERIFY(text.find("\"name\": \"\"") != std::string::npos);
        QVERIFY(text.rfind("\n}\n") == text.size() - 3);
    }

    void save_and_load_file() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const fs::path path = fs::path(dir.path().toStdString()) / "hand.tapestry.json";
        const Graph g = hand_built_graph();
        QCOMPARE(save_project(g, path), std::string());
        QVERIFY(!fs::exists(fs::path(path.string() + ".tmp")));
        LoadResult loaded = load_project(path);
        QVERIFY2(loaded.issues.empty(), qPrintable(issues_text(loaded.issues)));
        QVERIFY(graph_difference(g, loaded.graph).isEmpty());
        // Saving again replaces the file.
        Graph smaller;
        smaller.name = "smaller";
        QCOMPARE(save_project(smaller, path), std::string());
        loaded = load_project(path);
        QVERIFY(loaded.ok());
        QCOMPARE(loaded.graph.name, std::string("smaller"));
        QCOMPARE(loaded.graph.node_count(), size_t{0});

        const fs::path nowhere = fs::path(dir.path().toStdString()) / "missing-dir" / "x.tapestry.json";
        const std::string error = save_project(g, nowhere);
        QVERIFY(error.rfind(nowhere.string() + ": cannot write ", 0) == 0);
        QVERIFY(!fs::exists(nowhere));
    }

    void load_missing_file_and_directory() {
        QTemporaryDir dir;
        const fs::path missing = fs::path(dir.path().toStdString()) / "nope.tapestry.json";
        LoadResult r = load_project(missing);
        QCOMPARE(errors_of(r.issues).size(), size_t{1});
        QCOMPARE(r.issues[0].code, std::string("io"));
        QCOMPARE(r.issues[0].message, missing.string() + ": cannot open: No such file or directory");
        QCOMPARE(r.graph.node_count(), size_t{0});

        r = load_project(fs::path(dir.path().toStdString()));
        QCOMPARE(errors_of(r.issues).size(), size_t{1});
        QCOMPARE(r.issues[0].code, std::string("io"));
        QCOMPARE(r.issues[0].message, dir.path().toStdString() + ": is a directory, not a project file");
    }

    // ---- error tests: each bad input, the exact message a user sees -------------

    void malformed_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("message");
        for (const MalformedCase &c : malformed_cases())
            QTest::newRow(c.file) << QString(c.file) << QString(c.code) << QString(c.path)
                                  << QString::fromUtf8(c.message);
    }

    void malformed() {
        QFETCH(QString, file);
        QFETCH(QString, code);
        QFETCH(QString, path);
        QFETCH(QString, message);
        const std::string name = file.toStdString() + ".tapestry.json";
        const fs::path full = source_dir() / "tests" / "data" / "malformed" / name;
        QVERIFY2(fs::exists(full), full.c_str());
        const LoadResult r = parse_project(read_file(full), name);
        const std::vector<Issue> errors = errors_of(r.issues);
        QVERIFY2(errors.size() == 1, qPrintable(issues_text(r.issues)));
        QVERIFY(!r.ok());
        QCOMPARE(QString::fromStdString(errors[0].code), code);
        QCOMPARE(QString::fromStdString(errors[0].json_path), path);
        QCOMPARE(QString::fromStdString(errors[0].message), message);
        // load_project names the file by the path it was given.
        const LoadResult from_disk = load_project(full);
        QCOMPARE(errors_of(from_disk.issues).size(), size_t{1});
        QVERIFY(errors_of(from_disk.issues)[0].message.rfind(full.string() + (path.isEmpty() ? "" : ": "), 0) == 0);
    }

    // Every file in tests/data/malformed has a row (none is silently untested), and every row a file.
    void malformed_table_covers_directory() {
        QStringList files, rows;
        for (const auto &entry : fs::directory_iterator(source_dir() / "tests" / "data" / "malformed"))
            files << QString::fromStdString(entry.path().filename().string());
        for (const MalformedCase &c : malformed_cases()) rows << QString(c.file) + ".tapestry.json";
        files.sort();
        rows.sort();
        QCOMPARE(files, rows);
    }

    void deeply_nested_10mb() {
        const size_t depth = 5 * 1024 * 1024;
        std::string text(depth, '[');
        text.append(depth, ']');
        const LoadResult r = parse_project(text, "deep.json");
        QCOMPARE(r.issues.size(), size_t{1});
        QCOMPARE(r.issues[0].message, std::string("deep.json:1:257: nesting deeper than 256 levels"));
        // Brackets inside strings do not count as nesting.
        const std::string in_string =
            "{\"format\": \"tapestry-project\", \"version\": 1, \"name\": \"" + std::string(100000, '[') +
            "\", \"tensors\": [], \"operations\": []}";
        const LoadResult ok = parse_project(in_string, "strings.json");
        QVERIFY2(ok.issues.empty(), qPrintable(issues_text(ok.issues)));
        QCOMPARE(ok.graph.name.size(), size_t{100000});
        // Nesting up to the limit is fine.
        const std::string nested = "{\"format\": \"tapestry-project\", \"version\": 1, \"layout\": " +
                                   std::string(255, '[') + std::string(255, ']') +
                                   ", \"tensors\": [], \"operations\": []}";
        const LoadResult at_limit = parse_project(nested, "limit.json");
        QCOMPARE(at_limit.issues.size(), size_t{1});  // layout must be an object: a schema error, not a crash
        QCOMPARE(at_limit.issues[0].code, std::string("schema"));
    }

    void syntax_positions_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("missing comma") << "{\n  \"format\": \"tapestry-project\"\n  \"version\": 1\n}"
                                       << "f:3:3: syntax error while parsing object - unexpected string literal; "
                                          "expected '}'";
        QTest::newRow("trailing comma") << "{\"a\": [1, 2,]}"
                                        << "f:1:13: syntax error while parsing value - unexpected ']'; expected "
                                           "'[', '{', or a literal";
        QTest::newRow("column counts characters")
            << QString::fromUtf8("{\"näme\": x}")
            << "f:1:10: syntax error while parsing value - invalid literal";
        QTest::newRow("trailing garbage") << "{}\n{}"
                                          << "f:2:1: syntax error while parsing value - unexpected '{'; expected "
                                             "end of input";
        QTest::newRow("whitespace only") << " \n\t " << "f: the file is empty";
    }

    void syntax_positions() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        const LoadResult r = parse_project(text.toStdString(), "f");
        QCOMPARE(r.issues.size(), size_t{1});
        QCOMPARE(r.issues[0].code, std::string("json-syntax"));
        QCOMPARE(QString::fromStdString(r.issues[0].message), message);
    }

    void other_errors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("message");
        const QString head = "{\"format\": \"tapestry-project\", \"version\": 1, ";
        const QString x = "{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [4, 8], \"role\": \"input\"}";
        QTest::newRow("version 0") << "{\"format\": \"tapestry-project\", \"version\": 0}" << "unsupported-version"
                                   << "p: $.version: format version 0 does not exist; this build reads version 1";
        QTest::newRow("version string") << "{\"format\": \"tapestry-project\", \"version\": \"1\"}" << "schema"
                                        << "p: $.version: expected an integer, got the string \"1\"";
        QTest::newRow("missing format") << "{\"version\": 1}" << "schema"
                                        << "p: $: missing required field \"format\"";
        QTest::newRow("shape and range")
            << head + "\"tensors\": [{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [1], \"range\": {\"start\": [0], \"end\": [1]}, \"role\": \"input\"}], \"operations\": []}"
            << "schema" << "p: $.tensors[0]: give either \"shape\" or \"range\", not both";
        QTest::newRow("empty id") << head + "\"tensors\": [{\"id\": \"\", \"dtype\": \"f32\", \"shape\": [1], \"role\": \"input\"}], \"operations\": []}"
                                  << "schema" << "p: $.tensors[0].id: an id must not be empty";
        QTest::newRow("fractional dimension")
            << head + "\"tensors\": [{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [2.5], \"role\": \"input\"}], \"operations\": []}"
            << "schema" << "p: $.tensors[0].shape[0]: expected an integer, got the number 2.5";
        QTest::newRow("coordinate beyond limit")
            << head + "\"tensors\": [{\"id\": \"x\", \"dtype\": \"f32\", \"range\": {\"start\": [-2000000000000], \"end\": [0]}, \"role\": \"input\"}], \"operations\": []}"
            << "bad-dimension"
            << "p: $.tensors[0].range.start[0]: coordinate -2000000000000 exceeds the limit ±2^40 = 1099511627776";
        QTest::newRow("integer beyond 64 bits")
            << head + "\"tensors\": [{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [18446744073709551615], \"role\": \"input\"}], \"operations\": []}"
            << "bad-dimension"
            << "p: $.tensors[0].shape[0]: dimension 18446744073709551615 exceeds the limit 2^40 = 1099511627776";
        QTest::newRow("too many dimensions")
            << head + "\"tensors\": [{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [" + QString("1, ").repeated(32) +
                   "1], \"role\": \"input\"}], \"operations\": []}"
            << "bad-dimension" << "p: $.tensors[0].shape: 33 dimensions exceed the limit of 32";
        QTest::newRow("duplicate shard id")
            << head + "\"tensors\": [" + x + "], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"inputs\": {\"x\": \"x\"}, \"outputs\": {\"y\": \"x\"}, \"shards\": [{\"id\": \"s\", \"index\": {\"start\": [0], \"end\": [1]}}, {\"id\": \"s\", \"index\": {\"start\": [1], \"end\": [2]}}]}]}"
            << "duplicate-id" << "p: $.operations[0].shards[1].id: shard id \"s\" is already used by the shard at $.operations[0].shards[0]";
        QTest::newRow("signature without index space")
            << head + "\"tensors\": [" + x + "], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"inputs\": {\"x\": \"x\"}, \"outputs\": {\"y\": \"x\"}, \"signature\": {\"inputs\": {}, \"outputs\": {}}}]}"
            << "schema" << "p: $.operations[0].signature: missing required field \"index_space\" (the operation states no index_space)";
        QTest::newRow("window rank")
            << head + "\"tensors\": [" + x + "], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"inputs\": {\"x\": \"x\"}, \"outputs\": {\"y\": \"x\"}, \"index_space\": {\"start\": [0], \"end\": [4]}, \"signature\": {\"inputs\": {\"x\": {\"matrix\": [[1], [0]], \"offset\": [0, 0], \"window\": [1]}}, \"outputs\": {}}}]}"
            << "bad-matrix" << "p: $.operations[0].signature.inputs.x.window: window has 1 entries but the matrix has 2 rows";
        QTest::newRow("negative window")
            << head + "\"tensors\": [" + x + "], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"inputs\": {\"x\": \"x\"}, \"outputs\": {\"y\": \"x\"}, \"index_space\": {\"start\": [0], \"end\": [4]}, \"signature\": {\"inputs\": {\"x\": [{\"matrix\": [[1]], \"offset\": [0], \"window\": [-1]}]}, \"outputs\": {}}}]}"
            << "bad-matrix" << "p: $.operations[0].signature.inputs.x[0].window[0]: window extent -1 is negative";
        QTest::newRow("selection of wrong type")
            << head + "\"tensors\": [" + x + "], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"inputs\": {\"x\": 3}, \"outputs\": {\"y\": \"x\"}}]}"
            << "schema" << "p: $.operations[0].inputs.x: expected a tensor id or {\"tensor\": id, \"range\": {...}}, got the number 3";
        QTest::newRow("param object")
            << head + "\"tensors\": [], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"params\": {\"odd name\": {}}, \"inputs\": {}, \"outputs\": {}}]}"
            << "schema" << "p: $.operations[0].params[\"odd name\"]: an object is not a parameter value (a bool, integer, float, string or list of integers)";
        QTest::newRow("param too large")
            << head + "\"tensors\": [], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"params\": {\"n\": 9223372036854775808}, \"inputs\": {}, \"outputs\": {}}]}"
            << "schema" << "p: $.operations[0].params.n: integer 9223372036854775808 does not fit in 64 bits";
        QTest::newRow("param float overflow")
            << head + "\"tensors\": [], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", \"params\": {\"f\": 1e999}, \"inputs\": {}, \"outputs\": {}}]}"
            << "json-syntax" << "p:1:120: number overflow parsing '1e999'";
        QTest::newRow("layout not an object") << head + "\"layout\": [], \"tensors\": [], \"operations\": []}"
                                              << "schema" << "p: $.layout: expected an object, got an array";
    }

    void other_errors() {
        QFETCH(QString, text);
        QFETCH(QString, code);
        QFETCH(QString, message);
        const LoadResult r = parse_project(text.toStdString(), "p");
        const std::vector<Issue> errors = errors_of(r.issues);
        QVERIFY2(errors.size() == 1, qPrintable(issues_text(r.issues)));
        QCOMPARE(QString::fromStdString(errors[0].code), code);
        QCOMPARE(QString::fromStdString(errors[0].message), message);
    }

    void error_names_node() {
        const LoadResult r = parse_project(
            "{\"format\": \"tapestry-project\", \"version\": 1, \"tensors\": [{\"id\": \"w\", \"dtype\": \"f32\", \"shape\": [-1], \"role\": \"parameter\"}], \"operations\": [{\"id\": \"fc\", \"kind\": \"linear\", \"inputs\": {\"x\": [\"w\", {\"tensor\": 5}]}, \"outputs\": {}}]}",
            "n");
        QCOMPARE(r.issues.size(), size_t{2});
        QCOMPARE(r.issues[0].node, std::string("w"));
        QCOMPARE(r.issues[1].node, std::string("fc"));
        QCOMPARE(r.issues[1].json_path, std::string("$.operations[0].inputs.x[1].tensor"));
        // What could be read is kept: neither the bad tensor nor the bad op.
        QCOMPARE(r.graph.node_count(), size_t{0});
    }

    void unknown_fields_warn() {
        const LoadResult r = parse_project(
            "{\"format\": \"tapestry-project\", \"version\": 1, \"author\": \"me\", \"tensors\": [{\"id\": \"x\", \"dtype\": \"f32\", \"shape\": [2], \"role\": \"input\", \"colour\": \"red\"}], \"operations\": [], \"layout\": {\"x\": {\"x\": 10.5, \"y\": -3, \"pinned\": true}}}",
            "u");
        QVERIFY(r.ok());
        QCOMPARE(r.issues.size(), size_t{2});
        QCOMPARE(r.issues[0].severity, Severity::warning);
        QCOMPARE(r.issues[0].code, std::string("unknown-field"));
        QCOMPARE(r.issues[0].message,
                 std::string("u: $.author: unknown field \"author\" ignored (it is not kept when the project is saved)"));
        QCOMPARE(r.issues[1].json_path, std::string("$.tensors[0].colour"));
        QCOMPARE(r.issues[1].node, std::string("x"));
        QCOMPARE(r.graph.node_count(), size_t{1});
        QVERIFY(serialize_project(r.graph).find("colour") == std::string::npos);
    }

    void many_problems_are_summarized() {
        std::string text = "{\"format\": \"tapestry-project\", \"version\": 1, \"operations\": [], \"tensors\": [";
        for (int i = 0; i < 1500; ++i)
            text += (i ? ", " : "") + std::string("{\"id\": \"t") + std::to_string(i) +
                    "\", \"dtype\": \"f32\", \"shape\": [-1], \"role\": \"input\", \"extra\": 0}";
        text += "]}";
        const LoadResult r = parse_project(text, "many");
        QCOMPARE(r.issues.size(), size_t{1001});
        QCOMPARE(r.issues[0].code, std::string("unknown-field"));
        QCOMPARE(r.issues[1].code, std::string("bad-dimension"));
        QCOMPARE(r.issues.back().code, std::string("too-many-issues"));
        QCOMPARE(r.issues.back().severity, Severity::error);
        QCOMPARE(r.issues.back().message, std::string("many: 1000 more errors and 1000 more warnings not listed"));
    }

    void params_map_to_values() {
        const LoadResult r = parse_project(
            "{\"format\": \"tapestry-project\", \"version\": 1, \"tensors\": [], \"operations\": [{\"id\": \"o\", \"kind\": \"k\", \"params\": {\"b\": false, \"i\": 3, \"neg\": -7, \"f\": 0.5, \"whole\": 2.0, \"e\": 1e3, \"s\": \"tanh\", \"l\": [1, -2, 3], \"empty\": []}, \"inputs\": {}, \"outputs\": {}}]}",
            "p");
        QVERIFY2(r.issues.empty(), qPrintable(issues_text(r.issues)));
        const Params &p = r.graph.find_op(OpId("o"))->params;
        QCOMPARE(p.values().size(), size_t{9});
        QVERIFY(std::get<bool>(*p.find("b")) == false);
        QCOMPARE(std::get<std::int64_t>(*p.find("i")), std::int64_t{3});
        QCOMPARE(std::get<std::int64_t>(*p.find("neg")), std::int64_t{-7});
        QCOMPARE(std::get<double>(*p.find("f")), 0.5);
        QCOMPARE(std::get<double>(*p.find("whole")), 2.0);  // written as a float: stays a float
        QCOMPARE(std::get<double>(*p.find("e")), 1000.0);
        QCOMPARE(std::get<std::string>(*p.find("s")), std::string("tanh"));
        QCOMPARE(std::get<std::vector<std::int64_t>>(*p.find("l")), (std::vector<std::int64_t>{1, -2, 3}));
        QVERIFY(std::get<std::vector<std::int64_t>>(*p.find("empty")).empty());
    }

    void selections_resolve() {
        const LoadResult r = parse_project(
            "{\"format\": \"tapestry-project\", \"version\": 1, \"tensors\": [{\"id\": \"t\", \"dtype\": \"f32\", \"range\": {\"start\": [-2, 0], \"end\": [2, 3]}, \"role\": \"input\"}], \"operations\": [{\"id\": \"o\", \"kind\": \"k\", \"inputs\": {\"a\": \"t\", \"b\": {\"tensor\": \"t\"}, \"c\": {\"tensor\": \"t\", \"range\": {\"start\": [0, 0], \"end\": [1, 1]}}, \"d\": \"missing\", \"e\": []}, \"outputs\": {}}]}",
            "s");
        QVERIFY2(r.issues.empty(), qPrintable(issues_text(r.issues)));
        const Operation *o = r.graph.find_op(OpId("o"));
        QCOMPARE(o->inputs.size(), size_t{5});
        QCOMPARE(o->inputs[0].selections[0].range, ZRange({-2, 0}, {2, 3}));
        QCOMPARE(o->inputs[1].selections[0].range, ZRange({-2, 0}, {2, 3}));
        QCOMPARE(o->inputs[2].selections[0].range, ZRange({0, 0}, {1, 1}));
        QCOMPARE(o->inputs[3].selections[0].tensor, TensorId("missing"));  // validate() reports it
        QCOMPARE(o->inputs[3].selections[0].range, ZRange());
        QVERIFY(o->inputs[4].selections.empty());
        QCOMPARE(o->shards.size(), size_t{0});
    }

    void shard_defaults() {
        const LoadResult r = parse_project(
            "{\"format\": \"tapestry-project\", \"version\": 1, \"tensors\": [], \"operations\": [{\"id\": \"o\", \"kind\": \"k\", \"inputs\": {}, \"outputs\": {}, \"shards\": [{\"index\": {\"start\": [0], \"end\": [2]}}, {\"index\": {\"start\": [2], \"end\": [4]}, \"device\": \"cpu1\"}]}]}",
            "s");
        QVERIFY2(r.issues.empty(), qPrintable(issues_text(r.issues)));
        const Operation *o = r.graph.find_op(OpId("o"));
        QCOMPARE(o->shards[0].id, ShardId("o/0"));
        QCOMPARE(o->shards[1].id, ShardId("o/1"));
        QCOMPARE(o->shards[0].device, std::string());
        QCOMPARE(o->shards[1].device, std::string("cpu1"));
    }
};

QTEST_GUILESS_MAIN(TestProjectFile)
#include "test_project_file.moc"
