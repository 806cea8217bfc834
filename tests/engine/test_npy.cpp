// Tensor values and .npy files (graph/tensor_data.h, io/npy.h): f16/bf16 rounding
// (exhaustively and against independent conversions), round trips of every dtype
// through .npy bytes and files, files written by NumPy (tests/data/npy, made by
// make_fixtures.py there) read and re-written byte for byte, and every malformed
// file refused with its exact message and without allocating what it claims.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "graph/tensor_data.h"
#include "io/npy.h"

using namespace tapestry;
namespace fs = std::filesystem;

namespace {

fs::path source_dir() {
    const QByteArray env = qgetenv("TAPESTRY_SOURCE_DIR");
    if (!env.isEmpty()) return fs::path(env.toStdString());
    return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

fs::path fixture(const std::string &name) {
    return source_dir() / "tests" / "data" / "npy" / name;
}

std::string read_file(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::uint16_t bits16(const TensorData &t, std::int64_t i) {
    return t.as<std::uint16_t>()[static_cast<size_t>(i)];
}

TensorData scalar(DType dtype, double v) {
    TensorData t(dtype, ZPoint{});
    t.set(0, v);
    return t;
}

TensorData filled(DType dtype, ZPoint shape, const std::vector<double> &values) {
    TensorData t(dtype, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<std::int64_t>(i), values[i]);
    return t;
}

// A .npy file from its parts: version byte, header text (padded as given), data.
std::string npy_bytes(const std::string &header, const std::string &data, int major = 1) {
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\0';
    const size_t n = header.size();
    for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
    return out + header + data;
}

std::string f32_header(const std::string &shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

QString error_of(const Expected<TensorData, std::string> &r) {
    return r ? QString("<no error>") : QString::fromStdString(r.error());
}

}  // namespace

class TestNpy : public QObject {
    Q_OBJECT

private slots:
    // ---- TensorData element conversion -------------------------------------------

    void half_rounding_data() {
        QTest::addColumn<double>("value");
        QTest::addColumn<int>("bits");
        QTest::newRow("one") << 1.0 << 0x3c00;
        QTest::newRow("minus two") << -2.0 << 0xc000;
        QTest::newRow("0.1") << 0.1 << 0x2e66;
        QTest::newRow("largest finite") << 65504.0 << 0x7bff;
        QTest::newRow("just below the overflow tie") << 65519.99 << 0x7bff;
        QTest::newRow("overflow tie rounds to even = inf") << 65520.0 << 0x7c00;
        QTest::newRow("far beyond range") << 1e10 << 0x7c00;
        QTest::newRow("minus infinity") << -std::numeric_limits<double>::infinity() << 0xfc00;
        QTest::newRow("negative zero") << -0.0 << 0x8000;
        QTest::newRow("smallest normal") << std::ldexp(1.0, -14) << 0x0400;
        QTest::newRow("largest subnormal") << std::ldexp(1023.0, -24) << 0x03ff;
        QTest::newRow("subnormal rounding up to normal") << std::ldexp(1023.75, -24) << 0x0400;
        QTest::newRow("smallest subnormal") << std::ldexp(1.0, -24) << 0x0001;
        QTest::newRow("half the smallest subnormal ties to zero") << std::ldexp(1.0, -25) << 0x0000;
        QTest::newRow("just above half the smallest subnormal") << std::ldexp(1.0000001, -25) << 0x0001;
        QTest::newRow("1.5 steps ties to 2") << std::ldexp(3.0, -25) << 0x0002;
        QTest::newRow("tie at 1 rounds down to even") << 1.0 + std::ldexp(1.0, -11) << 0x3c00;
        QTest::newRow("tie above odd rounds up to even") << 1.0 + std::ldexp(3.0, -11) << 0x3c02;
        QTest::newRow("tiny") << 1e-8 << 0x0000;
        QTest::newRow("-tiny keeps the sign") << -1e-8 << 0x8000;
    }
    void half_rounding() {
        QFETCH(double, value);
        QFETCH(int, bits);
        const TensorData t = scalar(DType::f16, value);
        QCOMPARE(int(bits16(t, 0)), bits);
    }

    void bfloat16_rounding_data() {
        QTest::addColumn<double>("value");
        QTest::addColumn<int>("bits");
        QTest::newRow("one") << 1.0 << 0x3f80;
        QTest::newRow("minus 2.5") << -2.5 << 0xc020;
        QTest::newRow("tie at 1 rounds to even") << 1.0 + std::ldexp(1.0, -8) << 0x3f80;
        QTest::newRow("tie above odd rounds up") << 1.0 + std::ldexp(3.0, -8) << 0x3f82;
        QTest::newRow("largest finite") << std::ldexp(255.0, 120) << 0x7f7f;
        QTest::newRow("beyond the overflow tie") << 3.4e38 << 0x7f80;
        QTest::newRow("smallest subnormal") << std::ldexp(1.0, -133) << 0x0001;
        QTest::newRow("smallest normal") << std::ldexp(1.0, -126) << 0x0080;
        // Rounding from double directly: via float first would give 0x3f80 here
        // (1 + 2^-8 + 2^-30 rounds to the float 1 + 2^-8, a tie, then to even).
        QTest::newRow("no double rounding") << 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30) << 0x3f81;
    }
    void bfloat16_rounding() {
        QFETCH(double, value);
        QFETCH(int, bits);
        QCOMPARE(int(bits16(scalar(DType::bf16, value), 0)), bits);
    }

    // Every non-NaN bit pattern decodes to a double that encodes back to itself,
    // and the decoded values are strictly increasing over the positive patterns.
    void narrow_floats_round_trip_exhaustively() {
        for (DType dtype : {DType::f16, DType::bf16}) {
            TensorData t(dtype, ZPoint{65536});
            auto raw = t.as<std::uint16_t>();
            for (std::uint32_t b = 0; b < 65536; ++b) raw[b] = static_cast<std::uint16_t>(b);
            TensorData back(dtype, ZPoint{65536});
            const std::uint32_t infinity = dtype == DType::f16 ? 0x7c00 : 0x7f80;
            double previous = -1;
            for (std::uint32_t b = 0; b < 65536; ++b) {
                const double v = t.get(b);
                const bool nan = (b & 0x7fff) > infinity;
                QCOMPARE(std::isnan(v), nan);
                if (nan) continue;
                back.set(b, v);
                if (back.as<std::uint16_t>()[b] != b)
                    QFAIL(qPrintable(QString("pattern %1 of %2 changed to %3")
                                         .arg(b, 0, 16)
                                         .arg(QString::fromStdString(std::string(dtype_name(dtype))))
                                         .arg(back.as<std::uint16_t>()[b], 0, 16)));
                if (b <= infinity) {
                    QVERIFY(v > previous || b == 0);
                    previous = v;
                }
            }
            QCOMPARE(t.get(infinity), std::numeric_limits<double>::infinity());
            QVERIFY(std::isnan(scalar(dtype, std::nan("")).get(0)));
        }
    }

    // bf16 agrees with the classic bit trick on the float value (which is exact
    // rounding when the input is a float), f16 with the compiler's _Float16.
    void narrow_floats_agree_with_independent_conversions() {
        std::mt19937_64 rng(7);
        TensorData bf(DType::bf16, ZPoint{1});
        for (int n = 0; n < 200000; ++n) {
            std::uint32_t fb = static_cast<std::uint32_t>(rng());
            float f;
            std::memcpy(&f, &fb, 4);
            if (std::isnan(f)) continue;
            const std::uint32_t expected = (fb + 0x7fff + ((fb >> 16) & 1)) >> 16;
            bf.set(0, f);
            if (bits16(bf, 0) != expected)
                QFAIL(qPrintable(QString("bf16 of float bits %1: %2, expected %3")
                                     .arg(fb, 0, 16)
                                     .arg(bits16(bf, 0), 0, 16)
                                     .arg(expected, 0, 16)));
        }
#if defined(__FLT16_MAX__) && !defined(__clang__)
        TensorData h(DType::f16, ZPoint{1});
        for (int n = 0; n < 200000; ++n) {
            // Doubles spread over the f16 range and beyond, with random low bits.
            const double v = std::ldexp(static_cast<double>(rng() >> 11), -53 + static_cast<int>(rng() % 44) - 26) *
                             ((rng() & 1) ? 1 : -1);
            const _Float16 reference = static_cast<_Float16>(v);
            std::uint16_t expected;
            std::memcpy(&expected, &reference, 2);
            h.set(0, v);
            if (bits16(h, 0) != expected)
                QFAIL(qPrintable(QString("f16 of %1: %2, expected %3")
                                     .arg(v, 0, 'g', 17)
                                     .arg(bits16(h, 0), 0, 16)
                                     .arg(expected, 0, 16)));
        }
#endif
    }

    void integer_and_bool_conversion_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<double>("value");
        QTest::addColumn<double>("stored");
        QTest::newRow("i32 truncates toward zero") << int(DType::i32) << 2.7 << 2.0;
        QTest::newRow("i32 negative truncates toward zero") << int(DType::i32) << -2.7 << -2.0;
        QTest::newRow("i32 saturates high") << int(DType::i32) << 1e20 << 2147483647.0;
        QTest::newRow("i32 saturates low") << int(DType::i32) << -1e20 << -2147483648.0;
        QTest::newRow("i32 NaN is zero") << int(DType::i32) << std::nan("") << 0.0;
        QTest::newRow("i64 at 2^53") << int(DType::i64) << 9007199254740992.0 << 9007199254740992.0;
        QTest::newRow("i64 saturates at 2^63") << int(DType::i64) << 9223372036854775808.0 << 9223372036854775807.0;
        QTest::newRow("i64 lowest") << int(DType::i64) << -9223372036854775808.0 << -9223372036854775808.0;
        QTest::newRow("bool nonzero") << int(DType::boolean) << 0.25 << 1.0;
        QTest::newRow("bool zero") << int(DType::boolean) << 0.0 << 0.0;
        QTest::newRow("bool negative zero") << int(DType::boolean) << -0.0 << 0.0;
        QTest::newRow("f32 rounds to nearest") << int(DType::f32) << 0.1 << double(0.1f);
        QTest::newRow("f32 overflow is inf") << int(DType::f32) << 1e39 << std::numeric_limits<double>::infinity();
    }
    void integer_and_bool_conversion() {
        QFETCH(int, dtype);
        QFETCH(double, value);
        QFETCH(double, stored);
        const TensorData t = scalar(static_cast<DType>(dtype), value);
        QCOMPARE(t.get(0), stored);
        if (static_cast<DType>(dtype) == DType::boolean) QCOMPARE(int(t.bytes[0]), int(stored));
    }

    void i64_keeps_all_bits() {
        TensorData t(DType::i64, ZPoint{1});
        t.as<std::int64_t>()[0] = (std::int64_t{1} << 62) + 1;
        QCOMPARE(t.get(0), std::ldexp(1.0, 62));  // the nearest double
        const TensorData back = *parse_npy(to_npy(t));
        QCOMPARE(back.as<std::int64_t>()[0], (std::int64_t{1} << 62) + 1);
    }

    // ---- round trips through .npy bytes -----------------------------------------

    void round_trip_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<QList<qlonglong>>("shape");
        const QList<QList<qlonglong>> shapes = {{}, {0}, {5}, {2, 3}, {0, 3}, {2, 1, 3}};
        for (DType d : kAllDTypes) {
            for (const auto &s : shapes) {
                QStringList dims;
                for (qlonglong e : s) dims << QString::number(e);
                QTest::newRow(qPrintable(
                    QString("%1 [%2]").arg(QString::fromStdString(std::string(dtype_name(d))), dims.join(','))))
                    << int(d) << s;
            }
        }
    }
    void round_trip() {
        QFETCH(int, dtype);
        QFETCH(QList<qlonglong>, shape);
        const DType d = static_cast<DType>(dtype);
        std::vector<Coord> extents(shape.begin(), shape.end());
        TensorData t(d, ZPoint(extents));
        for (std::int64_t i = 0; i < t.element_count(); ++i)
            t.set(i, d == DType::boolean ? double(i % 3 == 1)
                                         : (i % 2 ? -1.0 : 1.0) * (static_cast<double>(i) * 0.75 + 0.125));
        const std::string bytes = to_npy(t);
        QCOMPARE(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
        const size_t header_length = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        QCOMPARE((10 + header_length) % 64, size_t{0});  // data aligned as NumPy aligns it
        QCOMPARE(bytes[10 + header_length - 1], '\n');
        auto back = parse_npy(bytes);
        QVERIFY2(back.has_value(), qPrintable(error_of(back)));
        if (d == DType::bf16) {
            // NumPy has no bfloat16: written as float32, exactly.
            QCOMPARE(back->dtype, DType::f32);
            QCOMPARE(back->shape, t.shape);
            for (std::int64_t i = 0; i < t.element_count(); ++i) QCOMPARE(back->get(i), t.get(i));
        } else {
            QVERIFY(*back == t);
        }
    }

    void long_header_uses_version_2() {
        // 30000 dimensions of 1: a header beyond 65535 bytes (the reader would
        // refuse so many dimensions, so only the layout is checked).
        const TensorData t(DType::f32, ZPoint(std::vector<Coord>(30000, 1)));
        const std::string bytes = to_npy(t);
        QCOMPARE(int(bytes[6]), 2);
        std::uint32_t header_length = 0;
        for (int i = 3; i >= 0; --i) header_length = (header_length << 8) | static_cast<unsigned char>(bytes[8 + i]);
        QVERIFY(header_length > 65535);
        QCOMPARE((12 + header_length) % 64, std::uint32_t{0});
        QCOMPARE(bytes.size(), size_t{12} + header_length + 4);
        QCOMPARE(bytes.substr(12, 16), std::string("{'descr': '<f4',"));
    }

    // ---- files written by NumPy ---------------------------------------------------

    void numpy_files_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("dtype");
        QTest::addColumn<QList<qlonglong>>("shape");
        QTest::addColumn<QList<double>>("values");
        QTest::addColumn<bool>("rewrites_identically");
        QTest::newRow("f32") << "f32_2x3.npy" << int(DType::f32) << QList<qlonglong>{2, 3}
                             << QList<double>{-1, -0.5, 0, 0.5, 1, 1.5} << true;
        QTest::newRow("f16") << "f16_4.npy" << int(DType::f16) << QList<qlonglong>{4}
                             << QList<double>{1, -2.5, 65504, std::ldexp(1.0, -24)} << true;
        QTest::newRow("f64 narrowed") << "f64_3.npy" << int(DType::f32) << QList<qlonglong>{3}
                                      << QList<double>{double(0.1f), -2.5, double(1e30f)} << false;
        QTest::newRow("i32") << "i32_2x2.npy" << int(DType::i32) << QList<qlonglong>{2, 2}
                             << QList<double>{1, -2, 2147483647, -2147483648.0} << true;
        QTest::newRow("i64") << "i64_3.npy" << int(DType::i64) << QList<qlonglong>{3}
                             << QList<double>{0, -1, std::ldexp(1.0, 62)} << true;
        QTest::newRow("bool") << "bool_5.npy" << int(DType::boolean) << QList<qlonglong>{5}
                              << QList<double>{1, 0, 1, 1, 0} << true;
        QTest::newRow("0-d") << "scalar_f32.npy" << int(DType::f32) << QList<qlonglong>{} << QList<double>{3.25}
                             << true;
        QTest::newRow("empty") << "empty_0x3_f32.npy" << int(DType::f32) << QList<qlonglong>{0, 3} << QList<double>{}
                               << true;
        QTest::newRow("version 2.0") << "v2_i32.npy" << int(DType::i32) << QList<qlonglong>{4}
                                     << QList<double>{0, 1, 2, 3} << false;
        QTest::newRow("version 3.0") << "v3_f32.npy" << int(DType::f32) << QList<qlonglong>{2, 1}
                                     << QList<double>{1.5, -0.25} << false;
    }
    void numpy_files() {
        QFETCH(QString, file);
        QFETCH(int, dtype);
        QFETCH(QList<qlonglong>, shape);
        QFETCH(QList<double>, values);
        QFETCH(bool, rewrites_identically);
        auto t = read_npy(fixture(file.toStdString()));
        QVERIFY2(t.has_value(), qPrintable(error_of(t)));
        QCOMPARE(int(t->dtype), dtype);
        QCOMPARE(t->shape, ZPoint(std::vector<Coord>(shape.begin(), shape.end())));
        QCOMPARE(t->element_count(), qsizetype(values.size()));
        for (qsizetype i = 0; i < values.size(); ++i) QCOMPARE(t->get(i), values[i]);
        // Our writer produces NumPy's own bytes (same header text and padding).
        if (rewrites_identically) QCOMPARE(to_npy(*t), read_file(fixture(file.toStdString())));
    }

    void refuses_f64_when_asked() {
        QCOMPARE(error_of(read_npy(fixture("f64_3.npy"), false)),
                 QString::fromStdString(fixture("f64_3.npy").string()) +
                     ": float64 data ('<f8') is accepted for f32 tensors only");
    }

    // ---- malformed files: each with the exact message -------------------------------

    void malformed_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("message");
        auto row = [](const char *name, const std::string &bytes, const QString &message) {
            QTest::newRow(name) << QByteArray(bytes.data(), qsizetype(bytes.size())) << message;
        };
        const std::string six_floats(24, '\0');
        row("empty", "", "not a .npy file: it does not start with the magic string \\x93NUMPY");
        row("bad magic", "PK\x03\x04 not numpy at all",
            "not a .npy file: it does not start with the magic string \\x93NUMPY");
        row("magic only", "\x93NUMPY", "truncated .npy header: the file ends after 6 bytes");
        row("no header length", std::string("\x93NUMPY\x01\x00\x10", 9),
            "truncated .npy header: the file ends after 9 bytes");
        row("header longer than the file", std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 17),
            "truncated .npy header: the header is 118 bytes but only 7 follow");
        row("version 4.0", std::string("\x93NUMPY\x04\x00\x00\x00", 10),
            "unsupported .npy format version 4.0 (this build reads 1.0, 2.0 and 3.0)");
        row("version 1.1", std::string("\x93NUMPY\x01\x01\x00\x00", 10),
            "unsupported .npy format version 1.1 (this build reads 1.0, 2.0 and 3.0)");
        row("not a dict", npy_bytes("['descr']\n", ""),
            "bad .npy header: expected '{' at the start of the header (at header offset 0)");
        row("missing colon", npy_bytes("{'descr' '<f4'}\n", ""),
            "bad .npy header: expected ':' after the key 'descr' (at header offset 9)");
        row("unclosed string", npy_bytes("{'descr': '<f4, }\n", ""),
            "bad .npy header: the string starting here is not closed (at header offset 10)");
        row("unclosed dict", npy_bytes("{'descr': '<f4',   \n", ""),
            "bad .npy header: the dictionary is not closed with '}' (at header offset 20)");
        row("key not a string", npy_bytes("{descr: '<f4'}\n", ""),
            "bad .npy header: expected a quoted key (at header offset 1)");
        row("missing comma", npy_bytes("{'descr': '<f4' 'shape': ()}\n", ""),
            "bad .npy header: expected ',' or '}' after the value of 'descr' (at header offset 16)");
        row("text after the dict", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': ()} x\n", ""),
            "bad .npy header: unexpected text after the dictionary (at header offset 54)");
        row("duplicate key", npy_bytes("{'descr': '<f4', 'descr': '<f4'}\n", ""),
            "bad .npy header: the key 'descr' appears twice (at header offset 17)");
        row("unknown key", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}\n", ""),
            "bad .npy header: unexpected key 'extra' (expected descr, fortran_order, shape)");
        row("missing shape", npy_bytes("{'descr': '<f4', 'fortran_order': False}\n", ""),
            "bad .npy header: missing key 'shape'");
        row("missing descr", npy_bytes("{'fortran_order': False, 'shape': ()}\n", ""),
            "bad .npy header: missing key 'descr'");
        row("descr not a string", npy_bytes("{'descr': 4, 'fortran_order': False, 'shape': ()}\n", ""),
            "bad .npy header: 'descr' must be a string");
        row("fortran_order not a bool", npy_bytes("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}\n", ""),
            "bad .npy header: 'fortran_order' must be True or False");
        row("shape a list", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': [3]}\n", ""),
            "bad .npy header: 'shape' must be a tuple of integers");
        row("shape a parenthesised integer", npy_bytes(f32_header("(3)"), ""),
            "bad .npy header: 'shape' must be a tuple; a one-dimensional shape is written (3,)");
        row("shape with a float", npy_bytes(f32_header("(2.5,)"), ""),
            "bad .npy header: expected an integer (at header offset 51)");
        row("shape with a name", npy_bytes(f32_header("(n,)"), ""),
            "bad .npy header: expected an integer in the shape tuple (at header offset 51)");
        row("shape missing a comma", npy_bytes(f32_header("(2 3)"), ""),
            "bad .npy header: expected ',' or ')' in the shape tuple (at header offset 53)");
        row("negative dimension", npy_bytes(f32_header("(2, -3)"), ""),
            "bad .npy header: dimension -3 of the shape is negative");
        std::string rank33 = "(";
        for (int i = 0; i < 33; ++i) rank33 += "1, ";
        rank33 += ")";
        row("33 dimensions", npy_bytes(f32_header(rank33), ""),
            "bad .npy header: the shape has more than 32 dimensions (at header offset 50)");
        row("dimension beyond 2^40", npy_bytes(f32_header("(99999999999999999999999,)"), ""),
            "dimension 99999999999999999999999 of the shape exceeds the limit 2^40 = 1099511627776");
        row("element count overflow", npy_bytes(f32_header("(1099511627776, 1099511627776)"), ""),
            "shape (1099511627776, 1099511627776) holds more than 2^62 elements");
        // Huge but representable: refused from the file length, nothing allocated.
        row("huge shape, no data", npy_bytes(f32_header("(1099511627776, 1024)"), ""),
            "the data is 0 bytes but shape (1099511627776, 1024) of '<f4' needs 4503599627370496 bytes (the file is "
            "truncated)");
        row("2^62 int64 elements",
            npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1099511627776, 4194304)}", "abc"),
            "the data is 3 bytes but shape (1099511627776, 4194304) of '<i8' needs 36893488147419103232 bytes (the "
            "file is truncated)");
        row("short data", npy_bytes(f32_header("(2, 3)"), six_floats.substr(4)),
            "the data is 20 bytes but shape (2, 3) of '<f4' needs 24 bytes (the file is truncated)");
        row("extra data", npy_bytes(f32_header("(2, 3)"), six_floats + "xx"),
            "the data is 26 bytes but shape (2, 3) of '<f4' needs 24 bytes (extra bytes after the array)");
        row("unsupported descr", npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': ()}", "xx"),
            "unsupported dtype '<u2' (supported: <f4, <f2, <f8, <i4, <i8, |b1)");
        row("big-endian int", npy_bytes("{'descr': '>i8', 'fortran_order': False, 'shape': ()}", "xxxxxxxx"),
            "big-endian data ('>i8') is not supported; save little-endian data, e.g. arr.astype('<i8')");
        row("odd bytes in descr", npy_bytes("{'descr': '\x01\\'', 'fortran_order': False, 'shape': ()}", ""),
            "unsupported dtype '\\x01\\x27' (supported: <f4, <f2, <f8, <i4, <i8, |b1)");
    }
    void malformed() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, message);
        QCOMPARE(error_of(parse_npy(std::string_view(bytes.constData(), size_t(bytes.size())))), message);
    }

    void refused_numpy_files_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("message");
        QTest::newRow("fortran order")
            << "fortran_f32.npy"
            << "Fortran-order arrays are not supported (fortran_order: True); save a C-ordered "
               "array, e.g. np.ascontiguousarray(arr)";
        QTest::newRow("big-endian") << "bigendian_f32.npy"
                                    << "big-endian data ('>f4') is not supported; save little-endian data, e.g. "
                                       "arr.astype('<f4')";
        QTest::newRow("complex") << "complex_c8.npy"
                                 << "unsupported dtype '<c8' (supported: <f4, <f2, <f8, <i4, <i8, |b1)";
        QTest::newRow("structured") << "structured.npy"
                                    << "structured dtypes (record arrays) are not supported";
        QTest::newRow("object") << "object.npy"
                                << "object arrays ('|O') are not supported";
    }
    void refused_numpy_files() {
        QFETCH(QString, file);
        QFETCH(QString, message);
        const fs::path path = fixture(file.toStdString());
        QCOMPARE(error_of(read_npy(path)), QString::fromStdString(path.string()) + ": " + message);
    }

    // ---- header variants NumPy (or a hand) may write --------------------------------

    void header_variants_data() {
        QTest::addColumn<QString>("header");
        QTest::addColumn<QList<qlonglong>>("shape");
        QTest::newRow("keys in another order")
            << "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}" << QList<qlonglong>{2};
        QTest::newRow("double quotes, no trailing comma")
            << "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}" << QList<qlonglong>{2};
        QTest::newRow("spaces and newlines")
            << " {  'descr' :'<f4' ,\n'fortran_order':False,'shape':( 1 , 2 , ) , }  \n\n"
            << QList<qlonglong>{1, 2};
        QTest::newRow("Python 2 longs") << "{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }"
                                        << QList<qlonglong>{2};
        QTest::newRow("scalar") << "{'descr': '<f4', 'fortran_order': False, 'shape': (), }" << QList<qlonglong>{};
        QTest::newRow("Fortran order of a vector")
            << "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }" << QList<qlonglong>{2, 1};
        QTest::newRow("zero-size dimension beside a huge one")
            << "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776)}"
            << QList<qlonglong>{0, 1099511627776};
    }
    void header_variants() {
        QFETCH(QString, header);
        QFETCH(QList<qlonglong>, shape);
        Coord count = 1;
        for (qlonglong e : shape) count *= e;
        const std::string data(static_cast<size_t>(count) * 4, '\0');
        auto t = parse_npy(npy_bytes(header.toStdString(), data));
        QVERIFY2(t.has_value(), qPrintable(error_of(t)));
        QCOMPARE(t->shape, ZPoint(std::vector<Coord>(shape.begin(), shape.end())));
        // Versions 2.0 and 3.0 differ only in the width of the header length.
        auto v2 = parse_npy(npy_bytes(header.toStdString(), data, 2));
        QVERIFY2(v2.has_value(), qPrintable(error_of(v2)));
        QVERIFY(*v2 == *t);
    }

    void bool_bytes_are_normalised() {
        auto t = parse_npy(
            npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", std::string("\x00\x07\x01", 3)));
        QVERIFY(t.has_value());
        QCOMPARE(t->bytes, (std::vector<std::byte>{std::byte{0}, std::byte{1}, std::byte{1}}));
    }

    // ---- files ------------------------------------------------------------------------

    void write_and_read_files() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const fs::path path = fs::path(dir.path().toStdString()) / "x.npy";
        const TensorData t = filled(DType::f16, ZPoint{2, 2}, {0.5, -1, 2048, 1e-3});
        QCOMPARE(write_npy(t, path), std::string());
        QVERIFY(!fs::exists(fs::path(path.string() + ".tmp")));
        auto back = read_npy(path);
        QVERIFY(back.has_value());
        QVERIFY(*back == t);
        QCOMPARE(read_file(path), to_npy(t));

        const fs::path nowhere = fs::path(dir.path().toStdString()) / "missing" / "y.npy";
        QVERIFY(write_npy(t, nowhere).rfind(nowhere.string() + ": cannot write ", 0) == 0);
        QCOMPARE(error_of(read_npy(nowhere)),
                 QString::fromStdString(nowhere.string() + ": cannot open: No such file or directory"));
        QCOMPARE(error_of(read_npy(fs::path(dir.path().toStdString()))),
                 QString::fromStdString(dir.path().toStdString() + ": is a directory, not a .npy file"));
    }

    // Truncations and byte flips of valid files are refused or read, never crash;
    // whatever is read has exactly as many bytes as its shape says.
    void mutations_never_crash() {
        std::vector<std::string> seeds;
        for (const char *f : {"f32_2x3.npy", "f16_4.npy", "bool_5.npy", "v2_i32.npy", "scalar_f32.npy"})
            seeds.push_back(read_file(fixture(f)));
        std::mt19937_64 rng(11);
        int read = 0, refused = 0;
        for (int n = 0; n < 20000; ++n) {
            std::string bytes = seeds[rng() % seeds.size()];
            const int edits = 1 + static_cast<int>(rng() % 4);
            for (int e = 0; e < edits && !bytes.empty(); ++e) {
                const size_t at = rng() % bytes.size();
                switch (rng() % 3) {
                    case 0: bytes[at] = static_cast<char>(rng()); break;
                    case 1: bytes.resize(at); break;
                    default: bytes.insert(at, 1, "0123456789(),:'{} \n"[rng() % 19]); break;
                }
            }
            auto t = parse_npy(bytes);
            if (t) {
                ++read;
                QCOMPARE(t->bytes.size(), static_cast<size_t>(t->element_count() * dtype_bytes(t->dtype)));
            } else {
                ++refused;
                QVERIFY(!t.error().empty());
            }
        }
        QVERIFY(read > 0 && refused > 0);
    }
};

QTEST_GUILESS_MAIN(TestNpy)
#include "test_npy.moc"
