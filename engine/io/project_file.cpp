// Loading and saving *.tapestry.json (docs/formats.md). The loader walks the JSON
// document by hand rather than through a schema library so that every problem
// becomes an Issue with a JSONPath, and so that nothing a file says can reach an
// invariant check of ZRange/AffineMap: every number is range-checked before a
// constructor sees it.
#include "io/project_file.h"

#include "common/checked_size.h"
#include "io/atomic_file.h"
#include "io/bounded_file.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace tapestry {
namespace {

// ordered_json keeps the file's key order, which is the order of ports.
using Json = nlohmann::ordered_json;

// A project file holds a graph and small embedded values; large values live in
// .npy files beside it. Parsing JSON takes several times the file's size.
constexpr std::uint64_t kMaxProjectFileBytes = 1 * kGiB;
constexpr size_t kMaxNestingDepth = 256;  // deeper documents are rejected before parsing
constexpr int kMaxRank = 32;              // NumPy's traditional limit
constexpr size_t kLineWidth = 120;
constexpr size_t kMaxIssues = 1000;  // issues listed one by one; the rest are counted  // the saver prints a value on one line when it fits

std::string json_quoted(std::string_view s) {
    return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// JSONPath member step: `.name` for identifier-like keys, `["odd key"]` otherwise.
std::string member_path(const std::string &base, std::string_view key) {
    bool simple = !key.empty() && !(key[0] >= '0' && key[0] <= '9');
    for (char c : key) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) simple = false;
    }
    if (simple) return base + "." + std::string(key);
    return base + "[" + json_quoted(key) + "]";
}

std::string index_path(const std::string &base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

// 1-based line and column (in characters, not bytes) of a byte offset.
std::pair<size_t, size_t> line_column(std::string_view text, size_t offset) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n') {
            ++line;
            column = 1;
        } else if ((c & 0xC0) != 0x80) {
            ++column;
        }
    }
    return {line, column};
}

// Offset of the first bracket nested deeper than kMaxNestingDepth, if any. Run
// before parsing so that no parser, destructor or printer ever meets such depth.
std::optional<size_t> find_excess_nesting(std::string_view text) {
    size_t depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxNestingDepth) return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return std::nullopt;
}

// SAX handler building an ordered_json document. Unlike nlohmann's own DOM
// builder it reports duplicate object keys (with their JSONPath) instead of
// silently keeping the last one, appends members in constant time (so objects
// with many keys load in linear time), and refuses excessive nesting.
class DocumentBuilder {
public:
    using number_integer_t = Json::number_integer_t;
    using number_unsigned_t = Json::number_unsigned_t;
    using number_float_t = Json::number_float_t;
    using string_t = Json::string_t;
    using binary_t = Json::binary_t;

    bool null() { return store(Json(nullptr)); }
    bool boolean(bool v) { return store(Json(v)); }
    bool number_integer(number_integer_t v) { return store(Json(v)); }
    bool number_unsigned(number_unsigned_t v) { return store(Json(v)); }
    bool number_float(number_float_t v, const string_t &) { return store(Json(v)); }
    bool string(string_t &v) { return store(Json(std::move(v))); }
    bool binary(binary_t &) { return store(Json()); }  // not produced by JSON text
    bool start_object(std::size_t) { return open(Json::object()); }
    bool start_array(std::size_t) { return open(Json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(string_t &k) {
        Frame &f = frames_.back();
        f.key = std::move(k);
        f.skip_value = false;
        if (f.container != nullptr && !f.keys.insert(f.key).second) {
            f.skip_value = true;  // the first occurrence wins; the duplicate is an error
            duplicate_keys.push_back({current_path(), f.key});
        }
        return true;
    }

    bool parse_error(std::size_t position, const std::string &, const Json::exception &ex) {
        error_position = position;
        error_text = ex.what();
        return false;
    }

    Json root;
    std::optional<size_t> error_position;  // nlohmann's count of characters read
    std::string error_text;
    std::vector<std::pair<std::string, std::string>> duplicate_keys;  // (object path, key)

private:
    struct Frame {
        Json *container;   // nullptr: inside a discarded duplicate
        std::string step;  // JSONPath step from the parent: "[3]", ".shape"
        std::string key;
        bool skip_value = false;
        std::unordered_set<std::string> keys;
    };

    bool store(Json &&v) {
        put(std::move(v));
        return true;
    }

    // Stores a value in the innermost container; returns where (nullptr if discarded).
    Json *put(Json &&v) {
        if (frames_.empty()) {
            root = std::move(v);
            return &root;
        }
        Frame &f = frames_.back();
        if (f.container == nullptr) return nullptr;
        if (f.container->is_array()) {
            auto &array = f.container->get_ref<Json::array_t &>();
            array.push_back(std::move(v));
            return &array.back();
        }
        if (f.skip_value) return nullptr;
        // ordered_map is a vector of pairs; appending directly skips its linear
        // duplicate search (duplicates were filtered in key()).
        auto &members = static_cast<std::vector<std::pair<const std::string, Json>> &>(
            f.container->get_ref<Json::object_t &>());
        members.emplace_back(f.key, std::move(v));
        return &members.back().second;
    }

    // Paths are assembled only when needed: storing a full path per container
    // would make wide documents at depth quadratic.
    std::string current_path() const {
        std::string path = "$";
        for (const Frame &f : frames_) path += f.step;
        return path;
    }

    std::string child_step() const {
        if (frames_.empty()) return "";
        const Frame &f = frames_.back();
        if (f.container != nullptr && f.container->is_array())
            return index_path("", f.container->get_ref<const Json::array_t &>().size());
        return member_path("", f.key);
    }

    bool open(Json &&v) {
        if (frames_.size() >= kMaxNestingDepth) return false;  // parse fails without a parse_error
        std::string step = child_step();
        Json *where = put(std::move(v));
        frames_.push_back(Frame{where, std::move(step), {}, false, {}});
        return true;
    }

    bool close() {
        frames_.pop_back();
        return true;
    }

    std::vector<Frame> frames_;
};

// "the string \"abc\"", "the number 2.5", "an array", … for type errors.
std::string describe(const Json &v) {
    switch (v.type()) {
        case Json::value_t::null: return "null";
        case Json::value_t::boolean: return v.get<bool>() ? "true" : "false";
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned: return "the number " + v.dump();
        case Json::value_t::number_float: {
            const double d = v.get<double>();
            if (!std::isfinite(d)) return "an out-of-range number";
            return "the number " + v.dump();
        }
        case Json::value_t::string: {
            std::string s = v.get_ref<const std::string &>();
            if (s.size() > 40) s = s.substr(0, 37) + "...";
            return "the string " + json_quoted(s);
        }
        case Json::value_t::array: return "an array";
        case Json::value_t::object: return "an object";
        default: return "a binary value";
    }
}

// A JSON number as an integer: exact integers, and floats with an integral value.
struct IntegerValue {
    bool is_integer = false;  // false: not a number, or a number with a fraction
    bool fits = false;        // representable as int64
    std::int64_t value = 0;
    std::string text;  // the value as a user would write it
};

IntegerValue integer_value(const Json &v) {
    IntegerValue r;
    if (v.is_number_integer() && !v.is_number_unsigned()) {
        r.is_integer = r.fits = true;
        r.value = v.get<std::int64_t>();
        r.text = std::to_string(r.value);
    } else if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        r.is_integer = true;
        r.fits = u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        r.value = r.fits ? static_cast<std::int64_t>(u) : 0;
        r.text = std::to_string(u);
    } else if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!std::isfinite(d)) {
            r.is_integer = true;
            r.text = d > 0 ? "infinity" : "-infinity";
        } else if (std::trunc(d) == d) {
            r.is_integer = true;
            r.fits = std::fabs(d) < 9.2e18;
            r.value = r.fits ? static_cast<std::int64_t>(d) : 0;
            r.text = r.fits ? std::to_string(r.value) : v.dump();
        }
    }
    return r;
}

// How a list of integers is checked: what one entry is called in messages, its
// bound, whether it may be negative, and the issue code for out-of-bound values.
struct IntRule {
    const char *noun;  // "dimension", "coordinate", "entry", …
    Coord limit;
    const char *limit_name;  // "2^40"
    bool non_negative;
    const char *code;
};

constexpr IntRule kDimension{"dimension", kMaxCoordinate, "2^40", true, "bad-dimension"};
constexpr IntRule kCoordinate{"coordinate", kMaxCoordinate, "2^40", false, "bad-dimension"};
constexpr IntRule kMatrixEntry{"entry", kMaxMatrixEntry, "2^20", false, "bad-matrix"};
constexpr IntRule kOffset{"offset", kMaxCoordinate, "2^40", false, "bad-matrix"};
constexpr IntRule kWindow{"window extent", kMaxCoordinate, "2^40", true, "bad-matrix"};

// True when the product of the non-zero entries stays within 2^62: then no
// prefix product (as ZRange::size() computes it) can overflow either.
bool element_count_fits(const ZPoint &extents) {
    Coord product = 1;
    for (Coord e : extents.coords()) {
        if (e == 0) continue;
        product = size_mul(product, e);
        if (product > kMaxElements) return false;
    }
    return true;
}

class Loader {
public:
    Loader(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

    LoadResult run() {
        LoadResult result;
        if (read()) result.graph = std::move(graph_);
        summarize_unlisted();
        result.issues = std::move(issues_);
        return result;
    }

private:
    std::string_view text_;
    std::string source_;
    Graph graph_;
    std::vector<Issue> issues_;
    std::unordered_map<std::string, std::string> node_paths_;   // id → "the tensor at $.tensors[0]"
    std::unordered_map<std::string, std::string> shard_paths_;  // shard id → its path
    size_t unlisted_errors_ = 0, unlisted_warnings_ = 0;  // beyond kMaxIssues

    // A file with a million bad entries gets a readable report, not a million lines.
    void summarize_unlisted() {
        if (unlisted_errors_ + unlisted_warnings_ == 0) return;
        Issue issue;
        issue.severity = unlisted_errors_ > 0 ? Severity::error : Severity::warning;
        issue.code = "too-many-issues";
        issue.message = source_ + ": " + std::to_string(unlisted_errors_) + " more errors and " +
                        std::to_string(unlisted_warnings_) + " more warnings not listed";
        issues_.push_back(std::move(issue));
    }

    void report(Severity severity, const char *code, const std::string &path, const std::string &node,
                const std::string &text) {
        if (issues_.size() >= kMaxIssues) {
            ++(severity == Severity::error ? unlisted_errors_ : unlisted_warnings_);
            return;
        }
        Issue issue;
        issue.severity = severity;
        issue.code = code;
        issue.json_path = path;
        issue.node = node;
        issue.message = source_ + ": " + (path.empty() ? "" : path + ": ") + text;
        issues_.push_back(std::move(issue));
    }
    void error(const char *code, const std::string &path, const std::string &node, const std::string &text) {
        report(Severity::error, code, path, node, text);
    }
    void type_error(const std::string &path, const std::string &node, const char *expected, const Json &got) {
        error("schema", path, node, std::string("expected ") + expected + ", got " + describe(got));
    }

    // ---- small readers: each reports its own problem and returns nullopt --------

    const Json *member(const Json &object, std::string_view key) const {
        auto it = object.find(std::string(key));
        return it == object.end() ? nullptr : &*it;
    }

    const Json *required(const Json &object, std::string_view key, const std::string &path, const std::string &node) {
        const Json *v = member(object, key);
        if (v == nullptr) error("schema", path, node, "missing required field " + json_quoted(key));
        return v;
    }

    void warn_unknown(const Json &object, const std::string &path, const std::string &node,
                      std::initializer_list<std::string_view> known) {
        for (auto it = object.begin(); it != object.end(); ++it) {
            bool found = false;
            for (std::string_view k : known) found = found || k == it.key();
            if (!found)
                report(Severity::warning, "unknown-field", member_path(path, it.key()), node,
                       "unknown field " + json_quoted(it.key()) + " ignored (it is not kept when the project is saved)");
        }
    }

    std::optional<std::string> string_of(const Json &v, const std::string &path, const std::string &node) {
        if (!v.is_string()) {
            type_error(path, node, "a string", v);
            return std::nullopt;
        }
        return v.get<std::string>();
    }

    // An id: a non-empty string.
    std::optional<std::string> id_of(const Json &v, const std::string &path, const std::string &node) {
        auto s = string_of(v, path, node);
        if (s && s->empty()) {
            error("schema", path, node, "an id must not be empty");
            return std::nullopt;
        }
        return s;
    }

    std::optional<Coord> int_of(const Json &v, const std::string &path, const std::string &node, const IntRule &rule) {
        const IntegerValue i = integer_value(v);
        if (!i.is_integer) {
            type_error(path, node, "an integer", v);
            return std::nullopt;
        }
        if (i.fits && rule.non_negative && i.value < 0) {
            error(rule.code, path, node, std::string(rule.noun) + " " + i.text + " is negative");
            return std::nullopt;
        }
        if (!i.fits || i.value > rule.limit || i.value < -rule.limit) {
            error(rule.code, path, node,
                  std::string(rule.noun) + " " + i.text + " exceeds the limit " + (rule.non_negative ? "" : "±") +
                      rule.limit_name + " = " + std::to_string(rule.limit));
            return std::nullopt;
        }
        return i.value;
    }

    std::optional<ZPoint> point_of(const Json &v, const std::string &path, const std::string &node,
                                   const IntRule &rule) {
        if (!v.is_array()) {
            type_error(path, node, "an array of integers", v);
            return std::nullopt;
        }
        if (v.size() > static_cast<size_t>(kMaxRank)) {
            error("bad-dimension", path, node,
                  std::to_string(v.size()) + " dimensions exceed the limit of " + std::to_string(kMaxRank));
            return std::nullopt;
        }
        std::vector<Coord> coords;
        bool ok = true;
        for (size_t i = 0; i < v.size(); ++i) {
            auto c = int_of(v[i], index_path(path, i), node, rule);
            ok = ok && c.has_value();
            coords.push_back(c.value_or(0));
        }
        if (!ok) return std::nullopt;
        return ZPoint(std::move(coords));
    }

    bool check_count(const ZPoint &extents, const std::string &path, const std::string &node) {
        if (element_count_fits(extents)) return true;
        error("bad-dimension", path, node, "extents " + extents.to_string() + " hold more than 2^62 elements");
        return false;
    }

    std::optional<ZRange> range_of(const Json &v, const std::string &path, const std::string &node) {
        if (!v.is_object()) {
            type_error(path, node, "a range {\"start\": [...], \"end\": [...]}", v);
            return std::nullopt;
        }
        const Json *start_json = required(v, "start", path, node);
        const Json *end_json = required(v, "end", path, node);
        warn_unknown(v, path, node, {"start", "end"});
        if (start_json == nullptr || end_json == nullptr) return std::nullopt;
        auto start = point_of(*start_json, path + ".start", node, kCoordinate);
        auto end = point_of(*end_json, path + ".end", node, kCoordinate);
        if (!start || !end) return std::nullopt;
        if (start->rank() != end->rank()) {
            error("bad-range", path, node,
                  "start has rank " + std::to_string(start->rank()) + " but end has rank " +
                      std::to_string(end->rank()));
            return std::nullopt;
        }
        bool ok = true;
        for (int d = 0; d < start->rank(); ++d) {
            if ((*end)[d] < (*start)[d]) {
                error("bad-range", index_path(path + ".end", static_cast<size_t>(d)), node,
                      "end " + std::to_string((*end)[d]) + " is below start " + std::to_string((*start)[d]));
                ok = false;
            }
        }
        if (!ok || !check_count(*end - *start, path, node)) return std::nullopt;
        return ZRange(*start, *end);
    }

    // ---- document ----------------------------------------------------------------

    bool read() {
        if (text_.find_first_not_of(" \t\r\n") == std::string_view::npos) {
            error("json-syntax", "", "", "the file is empty");
            return false;
        }
        if (auto deep = find_excess_nesting(text_)) {
            syntax_error(*deep, "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels");
            return false;
        }
        DocumentBuilder builder;
        const bool parsed = Json::sax_parse(text_, &builder, Json::input_format_t::json, true, false);
        if (!parsed) {
            if (builder.error_position) {
                const std::string what = syntax_description(builder.error_text);
                size_t offset = *builder.error_position == 0 ? 0 : *builder.error_position - 1;
                if ((what.find("unexpected ") != std::string::npos && what.find("end of input") == std::string::npos) ||
                    what.find("number overflow") != std::string::npos || what.find("invalid literal") != std::string::npos)
                    offset = token_start(offset);
                syntax_error(offset, what);
            } else {
                // Unreachable while the pre-scan agrees with the parser; kept as a guard.
                error("json-syntax", "", "", "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels");
            }
            return false;
        }
        for (const auto &[path, key] : builder.duplicate_keys)
            error("duplicate-key", path, "", "duplicate key " + json_quoted(key) + " (the first one is used)");
        return read_document(builder.root);
    }

    void syntax_error(size_t offset, const std::string &what) {
        const auto [line, column] = line_column(text_, offset);
        Issue issue;
        issue.code = "json-syntax";
        issue.message = source_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + what;
        issues_.push_back(std::move(issue));
    }

    // nlohmann's text is "[json.exception.parse_error.101] parse error at line 1,
    // column 5: syntax error while parsing …; last read: '…'". Keep the description:
    // the position is computed here, and "last read" can show stale characters.
    static std::string syntax_description(const std::string &what) {
        std::string s = what;
        if (s.rfind("[json.exception.", 0) == 0 && s.find("] ") != std::string::npos) s = s.substr(s.find("] ") + 2);
        if (s.rfind("parse error", 0) == 0) {
            const size_t at = s.find("column ");
            const size_t colon = at == std::string::npos ? std::string::npos : s.find(": ", at);
            if (colon != std::string::npos) s = s.substr(colon + 2);
        }
        if (const size_t last = s.find("; last read: "); last != std::string::npos) s.resize(last);
        return s;
    }

    // The parser notices an unexpected token after reading all of it; point at its
    // first character instead (a string's opening quote, a number's first digit).
    size_t token_start(size_t last) const {
        if (last >= text_.size()) return last;
        auto word = [](char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
                   c == '+' || c == '-';
        };
        size_t i = last;
        if (text_[i] == '"') {
            while (i > 0) {
                --i;
                if (text_[i] != '"') continue;
                size_t backslashes = 0;
                while (backslashes < i && text_[i - 1 - backslashes] == '\\') ++backslashes;
                if (backslashes % 2 == 0) return i;
            }
            return last;
        }
        while (i > 0 && word(text_[i]) && word(text_[i - 1])) --i;
        return i;
    }

    bool read_document(const Json &root) {
        if (!root.is_object()) {
            type_error("$", "", "a JSON object", root);
            return false;
        }
        const Json *format = required(root, "format", "$", "");
        if (format == nullptr) return false;
        if (!format->is_string()) {
            type_error("$.format", "", "the string \"tapestry-project\"", *format);
            return false;
        }
        if (format->get_ref<const std::string &>() != kProjectFormatName) {
            error("schema", "$.format", "",
                  describe(*format) + " does not name a Tapestry project (expected " + json_quoted(kProjectFormatName) +
                      ")");
            return false;
        }
        const Json *version_json = required(root, "version", "$", "");
        if (version_json == nullptr) return false;
        const IntegerValue version = integer_value(*version_json);
        if (!version.is_integer) {
            type_error("$.version", "", "an integer", *version_json);
            return false;
        }
        const std::string this_build = "; this build reads version " + std::to_string(kProjectFormatVersion);
        if (!version.fits || version.value > kProjectFormatVersion) {
            error("unsupported-version", "$.version", "",
                  "written by a newer Tapestry (format version " + version.text + ")" + this_build);
            return false;
        }
        if (version.value < 1) {
            error("unsupported-version", "$.version", "", "format version " + version.text + " does not exist" + this_build);
            return false;
        }
        warn_unknown(root, "$", "",
                     {"format", "version", "name", "description", "tensors", "operations", "layout"});

        if (const Json *name = member(root, "name")) graph_.name = string_of(*name, "$.name", "").value_or("");
        if (const Json *description = member(root, "description"))
            graph_.description = string_of(*description, "$.description", "").value_or("");
        // "layout" is reserved for the studio's node positions: checked, not kept (docs/formats.md).
        if (const Json *layout = member(root, "layout"); layout != nullptr && !layout->is_object())
            type_error("$.layout", "", "an object", *layout);
        const Json *tensors = required(root, "tensors", "$", "");
        const Json *operations = required(root, "operations", "$", "");
        if (tensors != nullptr) {
            if (!tensors->is_array()) {
                type_error("$.tensors", "", "an array", *tensors);
            } else {
                for (size_t i = 0; i < tensors->size(); ++i) read_tensor((*tensors)[i], index_path("$.tensors", i));
            }
        }
        if (operations != nullptr) {
            if (!operations->is_array()) {
                type_error("$.operations", "", "an array", *operations);
            } else {
                for (size_t i = 0; i < operations->size(); ++i)
                    read_operation((*operations)[i], index_path("$.operations", i));
            }
        }
        return true;
    }

    // Registers a node id; false (with an error) when it is taken.
    bool claim_id(const std::string &id, const std::string &path, const std::string &what) {
        auto [it, inserted] = node_paths_.emplace(id, "the " + what + " at " + path);
        if (!inserted) error("duplicate-id", path + ".id", id, "id " + json_quoted(id) + " is already used by " + it->second);
        return inserted;
    }

    void read_tensor(const Json &v, const std::string &path) {
        if (!v.is_object()) {
            type_error(path, "", "a tensor object", v);
            return;
        }
        Tensor t;
        bool ok = true;
        std::string node;
        if (const Json *id = required(v, "id", path, "")) {
            auto s = id_of(*id, path + ".id", "");
            ok = ok && s.has_value();
            node = s.value_or("");
        } else {
            ok = false;
        }
        warn_unknown(v, path, node, {"id", "name", "dtype", "shape", "range", "role", "data", "value"});
        t.id = TensorId(node);
        t.name = node;
        if (const Json *name = member(v, "name")) {
            auto s = string_of(*name, path + ".name", node);
            ok = ok && s.has_value();
            t.name = s.value_or(node);
        }
        if (const Json *dtype = required(v, "dtype", path, node)) {
            if (auto s = string_of(*dtype, path + ".dtype", node)) {
                if (auto d = parse_dtype(*s)) {
                    t.dtype = *d;
                } else {
                    error("bad-dtype", path + ".dtype", node,
                          "unknown dtype " + json_quoted(*s) + " (expected one of f32, f16, bf16, i32, i64, bool)");
                    ok = false;
                }
            } else {
                ok = false;
            }
        } else {
            ok = false;
        }
        const Json *shape = member(v, "shape");
        const Json *range = member(v, "range");
        if (shape != nullptr && range != nullptr) {
            error("schema", path, node, "give either \"shape\" or \"range\", not both");
            ok = false;
        } else if (shape != nullptr) {
            auto extents = point_of(*shape, path + ".shape", node, kDimension);
            if (extents && check_count(*extents, path + ".shape", node)) t.range = ZRange::of_shape(*extents);
            else ok = false;
        } else if (range != nullptr) {
            auto r = range_of(*range, path + ".range", node);
            ok = ok && r.has_value();
            if (r) t.range = *r;
        } else {
            error("schema", path, node, "missing required field \"shape\" (or \"range\")");
            ok = false;
        }
        if (const Json *role = required(v, "role", path, node)) {
            if (auto s = string_of(*role, path + ".role", node)) {
                if (auto r = parse_role(*s)) {
                    t.role = *r;
                } else {
                    error("bad-role", path + ".role", node,
                          "unknown role " + json_quoted(*s) + " (expected one of input, parameter, intermediate, output)");
                    ok = false;
                }
            } else {
                ok = false;
            }
        } else {
            ok = false;
        }
        if (const Json *data = member(v, "data")) {
            auto s = string_of(*data, path + ".data", node);
            ok = ok && s.has_value();
            if (s) t.data = *s;
        }
        if (const Json *value = member(v, "value")) {
            if (member(v, "data") != nullptr) {
                error("schema", path, node, "give either \"data\" or \"value\", not both");
                ok = false;
            } else if (ok) {  // the dtype and the shape are known
                t.value = value_of(*value, path + ".value", node, t);
                ok = t.value != nullptr;
            }
        }
        if (!node.empty() && !claim_id(node, path, "tensor")) ok = false;
        if (ok) graph_.put_tensor(std::move(t));
    }

    // An embedded value: a flat array of the tensor's elements in C order, each a
    // number that the dtype holds exactly enough (floats are rounded to the dtype,
    // integers must be integral and in range), or true/false for bool. The strings
    // "nan", "inf" and "-inf" stand for the floats JSON cannot write.
    std::shared_ptr<const TensorData> value_of(const Json &v, const std::string &path, const std::string &node,
                                               const Tensor &t) {
        if (!v.is_array()) {
            type_error(path, node, "a flat array of the tensor's elements in C order", v);
            return nullptr;
        }
        const Coord count = t.range.size();
        if (v.size() != static_cast<std::uint64_t>(count)) {
            error("bad-value", path, node,
                  "holds " + std::to_string(v.size()) + " elements but the tensor's shape " + t.shape().to_string() +
                      " has " + std::to_string(count));
            return nullptr;
        }
        auto data = std::make_shared<TensorData>(t.dtype, t.shape());
        bool ok = true;
        for (size_t i = 0; i < v.size(); ++i) ok = store_element(v[i], index_path(path, i), node, *data, i) && ok;
        if (!ok) return nullptr;
        return data;
    }

    bool store_element(const Json &e, const std::string &path, const std::string &node, TensorData &data, size_t i) {
        const auto at = static_cast<std::int64_t>(i);
        const std::string dtype_text(dtype_name(data.dtype));
        if (data.dtype == DType::boolean) {
            if (e.is_boolean()) {
                data.set(at, e.get<bool>() ? 1.0 : 0.0);
                return true;
            }
            type_error(path, node, "true or false (the tensor is bool)", e);
            return false;
        }
        if (dtype_is_float(data.dtype)) {
            double d = 0;
            if (e.is_string() && e.get_ref<const std::string &>() == "nan")
                d = std::numeric_limits<double>::quiet_NaN();
            else if (e.is_string() && e.get_ref<const std::string &>() == "inf")
                d = std::numeric_limits<double>::infinity();
            else if (e.is_string() && e.get_ref<const std::string &>() == "-inf")
                d = -std::numeric_limits<double>::infinity();
            else if (e.is_number())
                d = e.get<double>();
            else {
                type_error(path, node, "a number (or \"nan\", \"inf\", \"-inf\")", e);
                return false;
            }
            data.set(at, d);
            // A finite number that rounds to infinity does not fit the dtype.
            if (std::isfinite(d) && std::isinf(data.get(at))) {
                error("bad-value", path, node, describe(e) + " is out of range for " + dtype_text);
                return false;
            }
            return true;
        }
        if (!e.is_number()) {
            type_error(path, node,
                       data.dtype == DType::i32 ? "an integer (the tensor is i32)" : "an integer (the tensor is i64)",
                       e);
            return false;
        }
        const IntegerValue n = integer_value(e);
        if (!n.is_integer) {
            error("bad-value", path, node, describe(e) + " is not an integer (the tensor is " + dtype_text + ")");
            return false;
        }
        const bool fits = n.fits && (data.dtype == DType::i64 || (n.value >= std::numeric_limits<std::int32_t>::min() &&
                                                                  n.value <= std::numeric_limits<std::int32_t>::max()));
        if (!fits) {
            error("bad-value", path, node, describe(e) + " is out of range for " + dtype_text);
            return false;
        }
        // Stored directly: an int64 beyond 2^53 has no exact double.
        if (data.dtype == DType::i64)
            data.as<std::int64_t>()[i] = n.value;
        else
            data.as<std::int32_t>()[i] = static_cast<std::int32_t>(n.value);
        return true;
    }

    std::optional<ParamValue> param_of(const Json &v, const std::string &path, const std::string &node) {
        switch (v.type()) {
            case Json::value_t::boolean: return ParamValue(v.get<bool>());
            case Json::value_t::string: return ParamValue(v.get<std::string>());
            case Json::value_t::number_integer:
            case Json::value_t::number_unsigned: {
                const IntegerValue i = integer_value(v);
                if (!i.fits) {
                    error("schema", path, node, "integer " + i.text + " does not fit in 64 bits");
                    return std::nullopt;
                }
                return ParamValue(i.value);
            }
            case Json::value_t::number_float: {
                const double d = v.get<double>();
                if (!std::isfinite(d)) {
                    error("schema", path, node, "the number is out of range for a float");
                    return std::nullopt;
                }
                return ParamValue(d);
            }
            case Json::value_t::array: {
                std::vector<std::int64_t> list;
                for (size_t i = 0; i < v.size(); ++i) {
                    const Json &e = v[i];
                    const IntegerValue n = integer_value(e);
                    if (!(e.is_number_integer() && n.fits)) {
                        error("schema", index_path(path, i), node,
                              "a list parameter holds integers only, got " + describe(e));
                        return std::nullopt;
                    }
                    list.push_back(n.value);
                }
                return ParamValue(std::move(list));
            }
            default:
                error("schema", path, node,
                      describe(v) + " is not a parameter value (a bool, integer, float, string or list of integers)");
                return std::nullopt;
        }
    }

    // Whole-tensor selections take the tensor's range when the tensor is known;
    // a dangling reference keeps its id and an empty rank-0 range, for validate().
    ZRange whole(const std::string &tensor) const {
        const Tensor *t = graph_.find_tensor(TensorId(tensor));
        return t != nullptr ? t->range : ZRange();
    }

    std::optional<TensorSelection> selection_of(const Json &v, const std::string &path, const std::string &node) {
        if (v.is_string()) {
            const std::string &id = v.get_ref<const std::string &>();
            return TensorSelection{TensorId(id), whole(id)};
        }
        if (!v.is_object()) {
            type_error(path, node, "a tensor id or {\"tensor\": id, \"range\": {...}}", v);
            return std::nullopt;
        }
        const Json *tensor = required(v, "tensor", path, node);
        warn_unknown(v, path, node, {"tensor", "range"});
        if (tensor == nullptr) return std::nullopt;
        auto id = string_of(*tensor, path + ".tensor", node);
        if (!id) return std::nullopt;
        TensorSelection s{TensorId(*id), whole(*id)};
        if (const Json *range = member(v, "range")) {
            auto r = range_of(*range, path + ".range", node);
            if (!r) return std::nullopt;
            s.range = *r;
        }
        return s;
    }

    // {"port": selection | [selection, …], …}
    std::optional<std::vector<PortBinding>> ports_of(const Json &v, const std::string &path, const std::string &node) {
        if (!v.is_object()) {
            type_error(path, node, "an object mapping port names to tensor selections", v);
            return std::nullopt;
        }
        std::vector<PortBinding> ports;
        bool ok = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            PortBinding binding;
            binding.name = it.key();
            const std::string port_path = member_path(path, it.key());
            if (it->is_array()) {
                for (size_t i = 0; i < it->size(); ++i) {
                    auto s = selection_of((*it)[i], index_path(port_path, i), node);
                    ok = ok && s.has_value();
                    if (s) binding.selections.push_back(std::move(*s));
                }
            } else {
                auto s = selection_of(*it, port_path, node);
                ok = ok && s.has_value();
                if (s) binding.selections.push_back(std::move(*s));
            }
            ports.push_back(std::move(binding));
        }
        if (!ok) return std::nullopt;
        return ports;
    }

    std::optional<OperandProjection> projection_of(const Json &v, const std::string &path, const std::string &node,
                                                   int index_rank) {
        if (!v.is_object()) {
            type_error(path, node, "a projection {\"matrix\", \"offset\", \"window\"}", v);
            return std::nullopt;
        }
        const Json *matrix = required(v, "matrix", path, node);
        const Json *offset_json = required(v, "offset", path, node);
        const Json *window_json = required(v, "window", path, node);
        warn_unknown(v, path, node, {"matrix", "offset", "window", "clipped"});
        bool ok = matrix != nullptr && offset_json != nullptr && window_json != nullptr;
        OperandProjection p;
        if (const Json *clipped = member(v, "clipped")) {
            if (clipped->is_boolean()) {
                p.clipped = clipped->get<bool>();
            } else {
                type_error(path + ".clipped", node, "true or false", *clipped);
                ok = false;
            }
        }
        if (!ok) return std::nullopt;

        const std::string matrix_path = path + ".matrix";
        if (!matrix->is_array()) {
            type_error(matrix_path, node, "an array of rows", *matrix);
            return std::nullopt;
        }
        if (matrix->size() > static_cast<size_t>(kMaxRank)) {
            error("bad-matrix", matrix_path, node,
                  std::to_string(matrix->size()) + " rows exceed the limit of " + std::to_string(kMaxRank));
            return std::nullopt;
        }
        std::vector<std::vector<Coord>> rows;
        for (size_t r = 0; r < matrix->size(); ++r) {
            const Json &row = (*matrix)[r];
            const std::string row_path = index_path(matrix_path, r);
            if (!row.is_array()) {
                type_error(row_path, node, "an array of integers", row);
                return std::nullopt;
            }
            if (r > 0 && row.size() != rows[0].size()) {
                error("bad-matrix", row_path, node,
                      "the matrix is ragged: row " + std::to_string(r) + " has " + std::to_string(row.size()) +
                          " entries but row 0 has " + std::to_string(rows[0].size()));
                return std::nullopt;
            }
            std::vector<Coord> entries;
            for (size_t c = 0; c < row.size(); ++c) {
                auto e = int_of(row[c], index_path(row_path, c), node, kMatrixEntry);
                ok = ok && e.has_value();
                entries.push_back(e.value_or(0));
            }
            rows.push_back(std::move(entries));
        }
        if (!ok) return std::nullopt;
        if (!rows.empty() && rows[0].size() != static_cast<size_t>(index_rank)) {
            error("bad-matrix", matrix_path, node,
                  "rows have " + std::to_string(rows[0].size()) + " entries but the index space has rank " +
                      std::to_string(index_rank));
            return std::nullopt;
        }
        auto offset = point_of(*offset_json, path + ".offset", node, kOffset);
        auto window = point_of(*window_json, path + ".window", node, kWindow);
        if (!offset || !window) return std::nullopt;
        for (const auto &[what, point, at] : {std::tuple{"offset", &*offset, ".offset"},
                                               std::tuple{"window", &*window, ".window"}}) {
            if (point->rank() != static_cast<int>(rows.size())) {
                error("bad-matrix", path + at, node,
                      std::string(what) + " has " + std::to_string(point->rank()) + " entries but the matrix has " +
                          std::to_string(rows.size()) + " rows");
                ok = false;
            }
        }
        if (!ok) return std::nullopt;
        p.projection = IndexProjection(AffineMap(ZMatrix::from_rows(rows, index_rank), *offset), *window);
        return p;
    }

    std::optional<std::vector<PortProjections>> port_projections_of(const Json &v, const std::string &path,
                                                                    const std::string &node, int index_rank) {
        if (!v.is_object()) {
            type_error(path, node, "an object mapping port names to projections", v);
            return std::nullopt;
        }
        std::vector<PortProjections> ports;
        bool ok = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            PortProjections port;
            port.port = it.key();
            const std::string port_path = member_path(path, it.key());
            if (it->is_array()) {
                for (size_t i = 0; i < it->size(); ++i) {
                    auto p = projection_of((*it)[i], index_path(port_path, i), node, index_rank);
                    ok = ok && p.has_value();
                    if (p) port.operands.push_back(std::move(*p));
                }
            } else {
                auto p = projection_of(*it, port_path, node, index_rank);
                ok = ok && p.has_value();
                if (p) port.operands.push_back(std::move(*p));
            }
            ports.push_back(std::move(port));
        }
        if (!ok) return std::nullopt;
        return ports;
    }

    std::optional<Signature> signature_of(const Json &v, const std::string &path, const std::string &node,
                                          const std::optional<ZRange> &op_index_space, bool op_index_space_bad) {
        if (!v.is_object()) {
            type_error(path, node, "a signature object", v);
            return std::nullopt;
        }
        warn_unknown(v, path, node, {"index_space", "inputs", "outputs"});
        Signature sig;
        if (const Json *space = member(v, "index_space")) {
            auto r = range_of(*space, path + ".index_space", node);
            if (!r) return std::nullopt;
            sig.index_space = *r;
        } else if (op_index_space) {
            sig.index_space = *op_index_space;
        } else {
            if (!op_index_space_bad)
                error("schema", path, node,
                      "missing required field \"index_space\" (the operation states no index_space)");
            return std::nullopt;
        }
        const Json *inputs = required(v, "inputs", path, node);
        const Json *outputs = required(v, "outputs", path, node);
        if (inputs == nullptr || outputs == nullptr) return std::nullopt;
        auto in = port_projections_of(*inputs, path + ".inputs", node, sig.index_space.rank());
        auto out = port_projections_of(*outputs, path + ".outputs", node, sig.index_space.rank());
        if (!in || !out) return std::nullopt;
        sig.inputs = std::move(*in);
        sig.outputs = std::move(*out);
        return sig;
    }

    std::optional<Shard> shard_of(const Json &v, const std::string &path, const std::string &op_id, size_t position) {
        if (!v.is_object()) {
            type_error(path, op_id, "a shard object", v);
            return std::nullopt;
        }
        Shard shard;
        bool ok = true;
        std::string node = op_id + "/" + std::to_string(position);
        if (const Json *id = member(v, "id")) {
            auto s = id_of(*id, path + ".id", op_id);
            if (s) node = *s;
            else ok = false;
        }
        shard.id = ShardId(node);
        warn_unknown(v, path, node, {"id", "index", "device", "inputs", "outputs"});
        if (const Json *index = required(v, "index", path, node)) {
            auto r = range_of(*index, path + ".index", node);
            ok = ok && r.has_value();
            if (r) shard.index = *r;
        } else {
            ok = false;
        }
        if (const Json *device = member(v, "device")) {
            auto s = string_of(*device, path + ".device", node);
            ok = ok && s.has_value();
            shard.device = s.value_or("");
        }
        if (const Json *inputs = member(v, "inputs")) {
            auto p = ports_of(*inputs, path + ".inputs", node);
            ok = ok && p.has_value();
            if (p) shard.inputs = std::move(*p);
        }
        if (const Json *outputs = member(v, "outputs")) {
            auto p = ports_of(*outputs, path + ".outputs", node);
            ok = ok && p.has_value();
            if (p) shard.outputs = std::move(*p);
        }
        if (ok) {
            auto [it, inserted] = shard_paths_.emplace(node, path);
            if (!inserted) {
                error("duplicate-id", path + ".id", node,
                      "shard id " + json_quoted(node) + " is already used by the shard at " + it->second);
                ok = false;
            }
        }
        if (!ok) return std::nullopt;
        return shard;
    }

    void read_operation(const Json &v, const std::string &path) {
        if (!v.is_object()) {
            type_error(path, "", "an operation object", v);
            return;
        }
        Operation op;
        bool ok = true;
        std::string node;
        if (const Json *id = required(v, "id", path, "")) {
            auto s = id_of(*id, path + ".id", "");
            ok = ok && s.has_value();
            node = s.value_or("");
        } else {
            ok = false;
        }
        warn_unknown(v, path, node,
                     {"id", "name", "kind", "params", "inputs", "outputs", "index_space", "signature", "shards"});
        op.id = OpId(node);
        op.name = node;
        if (const Json *name = member(v, "name")) {
            auto s = string_of(*name, path + ".name", node);
            ok = ok && s.has_value();
            op.name = s.value_or(node);
        }
        if (const Json *kind = required(v, "kind", path, node)) {
            auto s = string_of(*kind, path + ".kind", node);
            ok = ok && s.has_value();
            op.kind = s.value_or("");
        } else {
            ok = false;
        }
        if (const Json *params = member(v, "params")) {
            if (!params->is_object()) {
                type_error(path + ".params", node, "an object", *params);
                ok = false;
            } else {
                for (auto it = params->begin(); it != params->end(); ++it) {
                    auto p = param_of(*it, member_path(path + ".params", it.key()), node);
                    ok = ok && p.has_value();
                    if (p) op.params.set(it.key(), std::move(*p));
                }
            }
        }
        for (const auto &[key, ports] : {std::pair{"inputs", &op.inputs}, std::pair{"outputs", &op.outputs}}) {
            if (const Json *j = required(v, key, path, node)) {
                auto p = ports_of(*j, path + "." + key, node);
                ok = ok && p.has_value();
                if (p) *ports = std::move(*p);
            } else {
                ok = false;
            }
        }
        bool index_space_bad = false;
        if (const Json *space = member(v, "index_space")) {
            op.index_space = range_of(*space, path + ".index_space", node);
            index_space_bad = !op.index_space.has_value();
            ok = ok && !index_space_bad;
        }
        if (const Json *sig = member(v, "signature")) {
            op.signature = signature_of(*sig, path + ".signature", node, op.index_space, index_space_bad);
            ok = ok && op.signature.has_value();
        }
        if (const Json *shards = member(v, "shards")) {
            if (!shards->is_array()) {
                type_error(path + ".shards", node, "an array", *shards);
                ok = false;
            } else {
                for (size_t i = 0; i < shards->size(); ++i) {
                    auto s = shard_of((*shards)[i], index_path(path + ".shards", i), node, i);
                    ok = ok && s.has_value();
                    if (s) op.shards.push_back(std::move(*s));
                }
            }
        }
        if (!node.empty() && !claim_id(node, path, "operation")) ok = false;
        if (ok) graph_.put_op(std::move(op));
    }
};

// ---- saving ------------------------------------------------------------------------

Json point_json(const ZPoint &p) { return Json(p.to_vector()); }

Json range_json(const ZRange &r) {
    Json j = Json::object();
    j["start"] = point_json(r.start());
    j["end"] = point_json(r.end());
    return j;
}

Json selection_json(const Graph &g, const TensorSelection &s) {
    const Tensor *t = g.find_tensor(s.tensor);
    if (s.range == (t != nullptr ? t->range : ZRange())) return Json(s.tensor.value);
    Json j = Json::object();
    j["tensor"] = s.tensor.value;
    j["range"] = range_json(s.range);
    return j;
}

Json ports_json(const Graph &g, const std::vector<PortBinding> &ports) {
    Json j = Json::object();
    for (const PortBinding &b : ports) {
        if (b.selections.size() == 1) {
            j[b.name] = selection_json(g, b.selections[0]);
        } else {
            Json list = Json::array();
            for (const TensorSelection &s : b.selections) list.push_back(selection_json(g, s));
            j[b.name] = std::move(list);
        }
    }
    return j;
}

Json param_json(const ParamValue &v) {
    return std::visit([](const auto &x) { return Json(x); }, v);
}

Json projections_json(const std::vector<PortProjections> &ports) {
    Json j = Json::object();
    for (const PortProjections &port : ports) {
        Json list = Json::array();
        for (const OperandProjection &p : port.operands) {
            Json e = Json::object();
            e["matrix"] = p.projection.map().matrix().to_rows();
            e["offset"] = point_json(p.projection.map().offset());
            e["window"] = point_json(p.projection.window());
            if (p.clipped) e["clipped"] = true;
            list.push_back(std::move(e));
        }
        j[port.port] = std::move(list);
    }
    return j;
}

// The shortest decimal that reads back as the same element of `dtype` (0.1 rather
// than 0.10000000149011612 for an f32), as a double for the printer.
Json float_json(double d, DType dtype) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    TensorData probe(dtype, ZPoint{});
    for (int precision = 1; precision <= 17; ++precision) {
        char buffer[64];
        const auto written = std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::general, precision);
        double candidate = 0;
        const auto read = std::from_chars(buffer, written.ptr, candidate);
        if (written.ec != std::errc() || read.ec != std::errc()) break;
        probe.set(0, candidate);
        if (probe.get(0) == d) return candidate;
    }
    return d;
}

Json value_json(const TensorData &value) {
    Json list = Json::array();
    const std::int64_t count = value.element_count();
    for (std::int64_t i = 0; i < count; ++i) {
        switch (value.dtype) {
            case DType::boolean: list.push_back(value.get(i) != 0); break;
            case DType::i32: list.push_back(value.as<std::int32_t>()[static_cast<size_t>(i)]); break;
            case DType::i64: list.push_back(value.as<std::int64_t>()[static_cast<size_t>(i)]); break;
            default: list.push_back(float_json(value.get(i), value.dtype)); break;
        }
    }
    return list;
}

Json tensor_json(const Tensor &t) {
    Json j = Json::object();
    j["id"] = t.id.value;
    if (t.name != t.id.value) j["name"] = t.name;
    j["dtype"] = std::string(dtype_name(t.dtype));
    bool at_origin = true;
    for (Coord c : t.range.start().coords()) at_origin = at_origin && c == 0;
    if (at_origin) j["shape"] = point_json(t.range.end());
    else j["range"] = range_json(t.range);
    j["role"] = std::string(role_name(t.role));
    if (t.data) j["data"] = *t.data;
    else if (t.value)
        j["value"] = value_json(*t.value);
    return j;
}

Json operation_json(const Graph &g, const Operation &op) {
    Json j = Json::object();
    j["id"] = op.id.value;
    if (op.name != op.id.value) j["name"] = op.name;
    j["kind"] = op.kind;
    if (!op.params.empty()) {
        Json params = Json::object();
        for (const auto &[name, value] : op.params.values()) params[name] = param_json(value);
        j["params"] = std::move(params);
    }
    j["inputs"] = ports_json(g, op.inputs);
    j["outputs"] = ports_json(g, op.outputs);
    if (op.index_space) j["index_space"] = range_json(*op.index_space);
    if (op.signature) {
        Json sig = Json::object();
        // The signature's index space is implied by the operation's when they agree.
        if (!op.index_space || *op.index_space != op.signature->index_space)
            sig["index_space"] = range_json(op.signature->index_space);
        sig["inputs"] = projections_json(op.signature->inputs);
        sig["outputs"] = projections_json(op.signature->outputs);
        j["signature"] = std::move(sig);
    }
    if (!op.shards.empty()) {
        Json shards = Json::array();
        for (const Shard &s : op.shards) {
            Json e = Json::object();
            e["id"] = s.id.value;
            e["index"] = range_json(s.index);
            if (!s.device.empty()) e["device"] = s.device;
            if (!s.inputs.empty()) e["inputs"] = ports_json(g, s.inputs);
            if (!s.outputs.empty()) e["outputs"] = ports_json(g, s.outputs);
            shards.push_back(std::move(e));
        }
        j["shards"] = std::move(shards);
    }
    return j;
}

std::string scalar_text(const Json &v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// One-line form with ", " and ": " separators; false once it grows past `budget`.
bool flat_text(const Json &v, std::string &out, size_t budget) {
    if (v.is_object() || v.is_array()) {
        const bool object = v.is_object();
        out += object ? '{' : '[';
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (!first) out += ", ";
            first = false;
            if (object) out += json_quoted(it.key()) + ": ";
            if (out.size() > budget || !flat_text(*it, out, budget)) return false;
        }
        out += object ? '}' : ']';
    } else {
        out += scalar_text(v);
    }
    return out.size() <= budget;
}

// Pretty printer: 2-space indent; a value fits on one line when it can (shapes,
// ranges, matrices, small tensors), except the document and its node lists.
// A long array of numbers (a tensor's embedded value) as several numbers a line.
void emit_packed(const Json &v, size_t indent, std::string &out) {
    const std::string pad(indent + 2, ' ');
    out += "[\n" + pad;
    size_t column = pad.size();
    bool first = true;
    for (const Json &e : v) {
        const std::string text = scalar_text(e);
        if (!first) {
            if (column + 2 + text.size() + 1 > kLineWidth) {
                out += ",\n" + pad;
                column = pad.size();
            } else {
                out += ", ";
                column += 2;
            }
        }
        first = false;
        out += text;
        column += text.size();
    }
    out += '\n' + std::string(indent, ' ') + ']';
}

void emit(const Json &v, size_t indent, size_t used, bool expand, std::string &out, bool pack = false) {
    if (!expand) {
        std::string flat;
        if (flat_text(v, flat, kLineWidth > used ? kLineWidth - used : 0)) {
            out += flat;
            return;
        }
    }
    if (pack && v.is_array() && !v.empty()) {
        bool scalars = true;
        for (const Json &e : v) scalars = scalars && !e.is_structured();
        if (scalars) {
            emit_packed(v, indent, out);
            return;
        }
    }
    if (!v.is_object() && !v.is_array()) {
        out += scalar_text(v);
        return;
    }
    if (v.empty()) {
        out += v.is_object() ? "{}" : "[]";
        return;
    }
    const bool object = v.is_object();
    const std::string pad(indent + 2, ' ');
    out += object ? "{\n" : "[\n";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ",\n";
        first = false;
        out += pad;
        std::string key = object ? json_quoted(it.key()) + ": " : "";
        out += key;
        const bool node_list = indent == 0 && object && (it.key() == "tensors" || it.key() == "operations");
        emit(*it, indent + 2, pad.size() + key.size() + 1, node_list, out, object && it.key() == "value");
    }
    out += '\n' + std::string(indent, ' ') + (object ? '}' : ']');
}

}  // namespace

LoadResult parse_project(std::string_view text, const std::string &source_name) {
    try {
        return Loader(text, source_name).run();
    } catch (const std::exception &e) {
        // Only resource exhaustion can get here (every value is checked before use).
        LoadResult result;
        Issue issue;
        issue.code = "io";
        issue.message = source_name + ": could not be read: " + e.what();
        result.issues.push_back(std::move(issue));
        return result;
    }
}

LoadResult load_project(const std::filesystem::path &path) {
    const std::string name = path.string();
    auto fail = [&](const std::string &why) {
        LoadResult result;
        Issue issue;
        issue.code = "io";
        issue.message = name + ": " + why;
        result.issues.push_back(std::move(issue));
        return result;
    };
    auto text = read_regular_file(path, kMaxProjectFileBytes, "a project file");
    if (!text) return fail(text.error());
    return parse_project(*text, name);
}

std::string serialize_project(const Graph &g) {
    Json doc = Json::object();
    doc["format"] = std::string(kProjectFormatName);
    doc["version"] = kProjectFormatVersion;
    doc["name"] = g.name;
    if (!g.description.empty()) doc["description"] = g.description;
    Json tensors = Json::array();
    for (const TensorPtr &t : g.tensors()) tensors.push_back(tensor_json(*t));
    doc["tensors"] = std::move(tensors);
    Json operations = Json::array();
    for (const OpPtr &op : g.operations()) operations.push_back(operation_json(g, *op));
    doc["operations"] = std::move(operations);
    std::string out;
    emit(doc, 0, 0, true, out);
    out += '\n';
    return out;
}

std::string save_project(const Graph &g, const std::filesystem::path &path) {
    try {
        return write_file_atomically(path, serialize_project(g));
    } catch (const std::exception &e) {  // e.g. out of memory while serialising
        return path.string() + ": cannot write: " + e.what();
    }
}

}  // namespace tapestry
