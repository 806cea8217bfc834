// libFuzzer target for the .npy reader: any bytes given to parse_npy must come
// back as a value or an error message — never a crash, hang, sanitizer report,
// check failure or an allocation larger than the input justifies — and whatever
// is read must survive to_npy → parse_npy unchanged (tests/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "io/npy.h"

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "fuzz_npy_reader: %s\n%s\n", what, detail.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace tapestry;
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    for (bool allow_f64 : {true, false}) {
        const auto t = parse_npy(bytes, allow_f64);
        if (!t) {
            if (t.error().empty()) fail("an error without a message", "");
            continue;
        }
        const size_t expected = static_cast<size_t>(t->element_count()) * static_cast<size_t>(dtype_bytes(t->dtype));
        if (t->bytes.size() != expected) fail("byte count does not match the shape", t->shape.to_string());
        // What is read is no larger than the input (f64 is narrowed, others copied).
        if (t->bytes.size() > size) fail("more bytes read than given", std::to_string(t->bytes.size()));
        const auto again = parse_npy(to_npy(*t));
        if (!again) fail("written file does not read back", again.error());
        if (!(*again == *t)) fail("round trip changed the values", t->shape.to_string());
    }
    return 0;
}
