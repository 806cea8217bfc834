// NumPy .npy reading and writing (format described in numpy/lib/format.py).
// The header is a Python dict literal; it is parsed here by a small recursive-
// descent reader that accepts exactly the subset NumPy writes (and hand-written
// variants of it: any key order, either quote, trailing commas, extra spaces),
// never evaluates anything, and reports the first problem with its offset.
// Every size a file states is checked against the bytes actually present before
// anything is allocated, with overflow-safe arithmetic.
#include "io/npy.h"

#include "common/checked_size.h"
#include "io/atomic_file.h"
#include "io/bounded_file.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace tapestry {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp copies little-endian file data as is; a big-endian host needs byte swapping here");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr int kMaxRank = 32;                     // as the project format
constexpr Coord kMaxDimension = Coord{1} << 40;  // as the project format (kMaxCoordinate)
// NumPy writes headers of a few hundred bytes (its reader refuses over 10,000 by
// default); a longer one is not worth reading before its data.
constexpr std::uint64_t kMaxHeaderBytes = 1 * kMiB;

// A Python literal from the header: only what a .npy header may hold.
struct PyValue {
    enum class Kind { string, boolean, integer, tuple, list, other } kind = Kind::other;
    std::string text;            // string
    bool flag = false;           // boolean
    bool overflow = false;       // integer beyond 2^62
    bool negative = false;       // integer
    Coord number = 0;            // integer magnitude (when !overflow)
    std::string literal;         // integer as written
    std::vector<PyValue> items;  // tuple (of integers only)
};

std::string py_quoted(std::string_view s) {
    std::string out = "'";
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u >= 0x7f || c == '\'' || c == '\\') {
            static const char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    return out + "'";
}

class HeaderParser {
public:
    explicit HeaderParser(std::string_view text) : text_(text) {}

    // Parses the whole header; returns the (key, value) pairs in file order.
    std::optional<std::vector<std::pair<std::string, PyValue>>> parse_dict() {
        skip_space();
        if (!take('{')) return fail("expected '{' at the start of the header");
        std::vector<std::pair<std::string, PyValue>> entries;
        skip_space();
        while (!take('}')) {
            if (at_end()) return fail("the dictionary is not closed with '}'");
            const size_t key_at = pos_;
            auto key = parse_string();
            if (!key) {
                if (error_.empty()) fail_at(key_at, "expected a quoted key");
                return std::nullopt;
            }
            skip_space();
            if (!take(':')) return fail("expected ':' after the key " + py_quoted(*key));
            skip_space();
            auto value = parse_value();
            if (!value) return std::nullopt;
            for (const auto &[k, v] : entries)
                if (k == *key) return fail_at(key_at, "the key " + py_quoted(*key) + " appears twice");
            entries.emplace_back(std::move(*key), std::move(*value));
            skip_space();
            if (take(',')) {
                skip_space();
                continue;
            }
            if (!take('}')) return fail("expected ',' or '}' after the value of " + py_quoted(entries.back().first));
            break;
        }
        skip_space();
        if (!at_end()) return fail("unexpected text after the dictionary");
        return entries;
    }

    const std::string &error() const { return error_; }

private:
    std::string_view text_;
    size_t pos_ = 0;
    std::string error_;

    bool at_end() const { return pos_ >= text_.size(); }
    bool take(char c) {
        if (at_end() || text_[pos_] != c) return false;
        ++pos_;
        return true;
    }
    void skip_space() {
        while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }
    std::nullopt_t fail(const std::string &what) { return fail_at(pos_, what); }
    std::nullopt_t fail_at(size_t at, const std::string &what) {
        if (error_.empty()) {
            error_ = what + " (at header offset " + std::to_string(at) + ")";
        }
        return std::nullopt;
    }

    std::optional<std::string> parse_string() {
        if (at_end() || (text_[pos_] != '\'' && text_[pos_] != '"')) return std::nullopt;
        const char quote = text_[pos_];
        const size_t start = pos_++;
        std::string s;
        while (!at_end() && text_[pos_] != quote) {
            if (text_[pos_] == '\\') {
                ++pos_;
                if (at_end()) break;
            }
            s += text_[pos_++];
        }
        if (!take(quote)) {
            fail_at(start, "the string starting here is not closed");
            return std::nullopt;
        }
        return s;
    }

    static bool is_word(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }

    std::optional<PyValue> parse_integer() {
        PyValue v;
        v.kind = PyValue::Kind::integer;
        const size_t start = pos_;
        if (take('-'))
            v.negative = true;
        else
            take('+');
        if (at_end() || !(text_[pos_] >= '0' && text_[pos_] <= '9')) return fail_at(start, "expected a number");
        while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const Coord digit = text_[pos_++] - '0';
            if (v.number > (kMaxElements - digit) / 10)
                v.overflow = true;
            else
                v.number = v.number * 10 + digit;
        }
        take('L');  // Python 2 long, as very old NumPy wrote
        if (!at_end() && (is_word(text_[pos_]) || text_[pos_] == '.')) return fail_at(start, "expected an integer");
        v.literal = std::string(text_.substr(start, pos_ - start));
        return v;
    }

    std::optional<PyValue> parse_value() {
        if (at_end()) return fail("the header ends where a value is expected");
        const char c = text_[pos_];
        if (c == '\'' || c == '"') {
            auto s = parse_string();
            if (!s) return std::nullopt;
            PyValue v;
            v.kind = PyValue::Kind::string;
            v.text = std::move(*s);
            return v;
        }
        if (c == '(') return parse_tuple();
        if (c == '[') {
            // A structured dtype's descr is a list of fields; it is only recognised
            // (skipped by bracket depth) to be refused with a clear message.
            int depth = 0;
            const size_t start = pos_;
            for (; !at_end(); ++pos_) {
                if (text_[pos_] == '[') ++depth;
                if (text_[pos_] == ']' && --depth == 0) break;
            }
            if (!take(']')) return fail_at(start, "the list starting here is not closed");
            PyValue v;
            v.kind = PyValue::Kind::list;
            return v;
        }
        if ((c >= '0' && c <= '9') || c == '-' || c == '+') return parse_integer();
        if (is_word(c)) {
            const size_t start = pos_;
            while (!at_end() && is_word(text_[pos_])) ++pos_;
            const std::string_view word = text_.substr(start, pos_ - start);
            PyValue v;
            if (word == "True" || word == "False") {
                v.kind = PyValue::Kind::boolean;
                v.flag = word == "True";
            } else {
                v.kind = PyValue::Kind::other;
                v.literal = std::string(word);
            }
            return v;
        }
        return fail("unexpected character " + py_quoted(std::string_view(&text_[pos_], 1)));
    }

    // (), (3,), (2, 3), (2, 3,) — integers only.
    std::optional<PyValue> parse_tuple() {
        const size_t start = pos_;
        take('(');
        PyValue v;
        v.kind = PyValue::Kind::tuple;
        skip_space();
        bool comma_after_last = false;
        while (!take(')')) {
            if (at_end()) return fail_at(start, "the tuple starting here is not closed");
            if (!v.items.empty() && !comma_after_last) return fail("expected ',' or ')' in the shape tuple");
            if (at_end() || !((text_[pos_] >= '0' && text_[pos_] <= '9') || text_[pos_] == '-' || text_[pos_] == '+'))
                return fail("expected an integer in the shape tuple");
            auto item = parse_integer();
            if (!item) return std::nullopt;
            v.items.push_back(std::move(*item));
            if (v.items.size() > static_cast<size_t>(kMaxRank))
                return fail_at(start, "the shape has more than " + std::to_string(kMaxRank) + " dimensions");
            skip_space();
            comma_after_last = take(',');
            skip_space();
        }
        // Python: (3) is the integer 3, not a tuple.
        if (v.items.size() == 1 && !comma_after_last) {
            PyValue integer = v.items[0];
            integer.kind = PyValue::Kind::integer;
            return integer;
        }
        return v;
    }
};

struct DTypeInfo {
    DType dtype;
    int file_bytes;  // item size in the file
    bool from_f64 = false;
};

// descr → dtype; or an error message.
Expected<DTypeInfo, std::string> dtype_of_descr(const std::string &descr, bool allow_f64_to_f32) {
    if (descr == "<f4") return DTypeInfo{DType::f32, 4};
    if (descr == "<f2") return DTypeInfo{DType::f16, 2};
    if (descr == "<i4") return DTypeInfo{DType::i32, 4};
    if (descr == "<i8") return DTypeInfo{DType::i64, 8};
    if (descr == "|b1" || descr == "<b1") return DTypeInfo{DType::boolean, 1};
    if (descr == "<f8") {
        if (!allow_f64_to_f32) return unexpected(std::string("float64 data ('<f8') is accepted for f32 tensors only"));
        return DTypeInfo{DType::f32, 8, true};
    }
    static const std::string supported = " (supported: <f4, <f2, <f8, <i4, <i8, |b1)";
    if (descr.size() >= 2 && descr[0] == '>' && descr != ">b1" && descr != ">i1" && descr != ">u1")
        return unexpected("big-endian data (" + py_quoted(descr) +
                          ") is not supported; save little-endian data, e.g. " + "arr.astype(" +
                          py_quoted("<" + descr.substr(1)) + ")");
    if (descr == "|O" || descr == "<O" || descr == ">O" || descr == "O")
        return unexpected(std::string("object arrays ('|O') are not supported"));
    return unexpected("unsupported dtype " + py_quoted(descr) + supported);
}

std::string shape_text(const std::vector<Coord> &shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) s += ",";
    return s + ")";
}

std::uint32_t read_le(std::string_view bytes, size_t at, int width) {
    std::uint32_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
    return v;
}

std::string descr_of(DType t) {
    switch (t) {
        case DType::f32: return "<f4";
        case DType::bf16: return "<f4";  // NumPy has no bfloat16: widened exactly
        case DType::f16: return "<f2";
        case DType::i32: return "<i4";
        case DType::i64: return "<i8";
        case DType::boolean: return "|b1";
    }
    return "?";
}

// What a .npy header says: enough to know the data's size before reading it.
struct NpyHeader {
    DTypeInfo info;
    std::vector<Coord> extents;
    Coord elements = 1;
    std::string descr;
    size_t data_offset = 0;  // the data start here
};

// Parses the magic, version and header dict at the start of `bytes`, a prefix
// of a file of `total_size` bytes (the whole file when parsing from memory).
Expected<NpyHeader, std::string> parse_header(std::string_view bytes, std::uint64_t total_size,
                                              bool allow_f64_to_f32) {
    if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
        return unexpected(std::string("not a .npy file: it does not start with the magic string \\x93NUMPY"));
    if (bytes.size() < kMagic.size() + 2)
        return unexpected("truncated .npy header: the file ends after " + std::to_string(bytes.size()) + " bytes");
    const int major = static_cast<unsigned char>(bytes[6]);
    const int minor = static_cast<unsigned char>(bytes[7]);
    if (major < 1 || major > 3 || minor != 0)
        return unexpected("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                          " (this build reads 1.0, 2.0 and 3.0)");
    const int length_width = major == 1 ? 2 : 4;
    const size_t prefix = kMagic.size() + 2 + static_cast<size_t>(length_width);
    if (bytes.size() < prefix)
        return unexpected("truncated .npy header: the file ends after " + std::to_string(bytes.size()) + " bytes");
    const std::uint32_t header_length = read_le(bytes, kMagic.size() + 2, length_width);
    if (header_length > total_size - prefix)
        return unexpected("truncated .npy header: the header is " + std::to_string(header_length) + " bytes but only " +
                          std::to_string(total_size - prefix) + " follow");
    if (header_length > bytes.size() - prefix)
        return unexpected("the .npy header is " + std::to_string(header_length) + " bytes, larger than the " +
                          byte_limit_text(kMaxHeaderBytes) + " limit for a header (NumPy writes a few hundred)");
    const std::string_view header = bytes.substr(prefix, header_length);

    HeaderParser parser(header);
    auto entries = parser.parse_dict();
    if (!entries) {
        return unexpected("bad .npy header: " + parser.error());
    }
    const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
    for (const auto &[key, value] : *entries) {
        if (key == "descr")
            descr = &value;
        else if (key == "fortran_order")
            fortran = &value;
        else if (key == "shape")
            shape = &value;
        else
            return unexpected("bad .npy header: unexpected key " + py_quoted(key) +
                              " (expected descr, fortran_order, shape)");
    }
    for (const auto &[value, name] :
         {std::pair{descr, "descr"}, std::pair{fortran, "fortran_order"}, std::pair{shape, "shape"}})
        if (value == nullptr) return unexpected(std::string("bad .npy header: missing key '") + name + "'");
    if (descr->kind == PyValue::Kind::list)
        return unexpected(std::string("structured dtypes (record arrays) are not supported"));
    if (descr->kind != PyValue::Kind::string)
        return unexpected(std::string("bad .npy header: 'descr' must be a string"));
    if (fortran->kind != PyValue::Kind::boolean)
        return unexpected(std::string("bad .npy header: 'fortran_order' must be True or False"));
    if (shape->kind != PyValue::Kind::tuple) {
        if (shape->kind == PyValue::Kind::integer)
            return unexpected("bad .npy header: 'shape' must be a tuple; a one-dimensional shape is written (" +
                              shape->literal + ",)");
        return unexpected(std::string("bad .npy header: 'shape' must be a tuple of integers"));
    }

    auto info = dtype_of_descr(descr->text, allow_f64_to_f32);
    if (!info) return unexpected(info.error());

    std::vector<Coord> extents;
    for (const PyValue &item : shape->items) {
        if (item.negative && (item.overflow || item.number != 0))
            return unexpected("bad .npy header: dimension " + item.literal + " of the shape is negative");
        if (item.overflow || item.number > kMaxDimension)
            return unexpected("dimension " + item.literal +
                              " of the shape exceeds the limit 2^40 = " + std::to_string(kMaxDimension));
        extents.push_back(item.number);
    }
    Coord elements = 1;
    for (Coord e : extents) {
        elements = size_mul(elements, e);
        if (elements > kMaxElements)
            return unexpected("shape " + shape_text(extents) + " holds more than 2^62 elements");
    }

    if (fortran->flag) {
        // Fortran and C order agree when at most one dimension exceeds 1.
        int long_dims = 0;
        for (Coord e : extents) long_dims += e > 1 ? 1 : 0;
        if (long_dims > 1)
            return unexpected(std::string("Fortran-order arrays are not supported (fortran_order: True); ") +
                              "save a C-ordered array, e.g. np.ascontiguousarray(arr)");
    }

    return NpyHeader{*info, std::move(extents), elements, descr->text, prefix + header_length};
}

// Why `data_bytes` bytes of data do not fit the header's shape and dtype, or "".
std::string data_size_mismatch(const NpyHeader &h, std::uint64_t data_bytes) {
    // elements ≤ 2^62 and file_bytes ≤ 8: compare without forming a product that
    // could overflow; the caller allocates only after this.
    const auto item_bytes = static_cast<std::uint64_t>(h.info.file_bytes);
    const bool short_data = static_cast<std::uint64_t>(h.elements) > data_bytes / item_bytes;
    if (!short_data && static_cast<std::uint64_t>(h.elements) * item_bytes == data_bytes) return "";
    __extension__ using Wide = unsigned __int128;
    const Wide needed = static_cast<Wide>(h.elements) * item_bytes;
    std::string needed_text;
    for (Wide n = needed; needed_text.empty() || n > 0; n /= 10)
        needed_text.insert(needed_text.begin(), static_cast<char>('0' + static_cast<int>(n % 10)));
    return "the data is " + std::to_string(data_bytes) + " bytes but shape " + shape_text(h.extents) + " of " +
           py_quoted(h.descr) + " needs " + needed_text + " bytes" +
           (short_data ? " (the file is truncated)" : " (extra bytes after the array)");
}

// The tensor of a header and its data, whose size data_size_mismatch accepted.
TensorData decode(const NpyHeader &h, std::string_view data) {
    const DTypeInfo *info = &h.info;
    const Coord elements = h.elements;
    TensorData t(info->dtype, ZPoint(h.extents));
    if (info->from_f64) {
        for (Coord i = 0; i < elements; ++i) {
            double d;
            std::memcpy(&d, data.data() + static_cast<size_t>(i) * 8, 8);
            const float f = static_cast<float>(d);
            std::memcpy(t.bytes.data() + static_cast<size_t>(i) * 4, &f, 4);
        }
    } else if (!data.empty()) {
        std::memcpy(t.bytes.data(), data.data(), data.size());
    }
    if (info->dtype == DType::boolean)  // any non-zero byte is True, as NumPy reads it
        for (std::byte &b : t.bytes) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
    return t;
}

Expected<TensorData, std::string> parse(std::string_view bytes, bool allow_f64_to_f32) {
    auto header = parse_header(bytes, bytes.size(), allow_f64_to_f32);
    if (!header) return unexpected(header.error());
    const std::string_view data = bytes.substr(header->data_offset);
    if (std::string why = data_size_mismatch(*header, data.size()); !why.empty()) return unexpected(std::move(why));
    return decode(*header, data);
}

// The file's header, then its size against what the header declares, and only
// then its data: a file that is not what it says costs no more than its header.
Expected<TensorData, std::string> read_file(const std::filesystem::path &path, bool allow_f64_to_f32) {
    auto file = RegularFile::open(path, "a .npy file");
    if (!file) return unexpected(file.error());
    // The longest prefix (magic, version, 4-byte length) and the largest header accepted.
    auto head = file->read(0, kMagic.size() + 6 + kMaxHeaderBytes);
    if (!head) return unexpected(head.error());
    const std::uint64_t size = std::max<std::uint64_t>(file->size(), head->size());
    auto header = parse_header(*head, size, allow_f64_to_f32);
    if (!header) return unexpected(header.error());
    const std::uint64_t data_bytes = size - header->data_offset;
    if (std::string why = data_size_mismatch(*header, data_bytes); !why.empty()) return unexpected(std::move(why));
    std::string_view data;
    std::string rest;
    if (data_bytes <= head->size() - header->data_offset) {
        data = std::string_view(*head).substr(header->data_offset, static_cast<size_t>(data_bytes));
    } else {
        // One byte more than declared tells a file that changed since its size was taken.
        auto read = file->read(header->data_offset, data_bytes + 1);
        if (!read) return unexpected(read.error());
        rest = std::move(read).value();
        if (std::string why = data_size_mismatch(*header, rest.size()); !why.empty())
            return unexpected(why + " (the file changed while it was read)");
        data = rest;
    }
    return decode(*header, data);
}

}  // namespace

Expected<TensorData, std::string> parse_npy(std::string_view bytes, bool allow_f64_to_f32) {
    try {
        return parse(bytes, allow_f64_to_f32);
    } catch (const std::exception &e) {  // only allocation failure can get here
        return unexpected(std::string("cannot read the .npy data: ") + e.what());
    }
}

Expected<TensorData, std::string> read_npy(const std::filesystem::path &path, bool allow_f64_to_f32) {
    const std::string name = path.string();
    try {
        auto t = read_file(path, allow_f64_to_f32);
        if (!t) return unexpected(name + ": " + t.error());
        return t;
    } catch (const std::exception &e) {  // only allocation failure can get here
        return unexpected(name + ": cannot read: " + e.what());
    }
}

std::string to_npy(const TensorData &t) {
    std::string dict = "{'descr': '" + descr_of(t.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape_text(t.shape.to_vector()) + ", }";
    // NumPy pads the header with spaces so that the data starts at a multiple of 64.
    size_t prefix = kMagic.size() + 2 + 2;
    size_t total = prefix + dict.size() + 1;
    int major = 1;
    if ((total + 63) / 64 * 64 - prefix > 65535) {
        major = 2;
        prefix = kMagic.size() + 2 + 4;
        total = prefix + dict.size() + 1;
    }
    const size_t padded = (total + 63) / 64 * 64;
    dict.append(padded - total, ' ');
    dict += '\n';
    const size_t header_length = dict.size();

    std::string out(kMagic);
    out += static_cast<char>(major);
    out += '\0';
    for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((header_length >> (8 * i)) & 0xff);
    out += dict;
    if (t.dtype == DType::bf16) {
        // bfloat16 is the upper half of a float32: widening is exact.
        out.reserve(out.size() + static_cast<size_t>(t.element_count()) * 4);
        for (std::int64_t i = 0; i < t.element_count(); ++i) {
            const float f = static_cast<float>(t.get(i));
            char raw[4];
            std::memcpy(raw, &f, 4);
            out.append(raw, 4);
        }
    } else if (t.dtype == DType::boolean) {
        for (std::byte b : t.bytes) out += b != std::byte{0} ? '\1' : '\0';
    } else {
        out.append(reinterpret_cast<const char *>(t.bytes.data()), t.bytes.size());
    }
    return out;
}

std::string write_npy(const TensorData &t, const std::filesystem::path &path) {
    try {
        return write_file_atomically(path, to_npy(t));
    } catch (const std::exception &e) {  // e.g. out of memory while serialising
        return path.string() + ": cannot write: " + e.what();
    }
}

}  // namespace tapestry
