// libFuzzer target for the ONNX importer (engine/io/onnx_import.h): any bytes
// given as a model file must come back as a graph or an error message — never a
// crash, hang, sanitizer report, check failure, or an allocation the file does
// not justify (-malloc_limit_mb in tests/fuzz/CMakeLists.txt) — and an imported
// graph must validate without crashing and survive serialise → parse.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "graph/validate.h"
#include "io/onnx_import.h"
#include "io/project_file.h"
#include "ops/library.h"

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "fuzz_onnx_import: %s\n%s\n", what, detail.c_str());
    std::abort();
}

// The importer reads a file: one per process, rewritten for every input.
const std::string &model_path() {
    static const std::string path = "fuzz_onnx_import_" + std::to_string(::getpid()) + ".onnx";
    return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace tapestry;
    {
        std::ofstream out(model_path(), std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
    }
    OnnxImportOptions options;
    options.dim_values = {{"batch", 2}, {"N", 2}, {"seq", 3}};
    // A few bytes may ask for a large folded constant (a ConstantOfShape): the
    // bound is the importer's; a small one keeps each input fast.
    options.max_made_values = std::int64_t{1} << 16;
    auto g = import_onnx(model_path(), options);
    if (!g) {
        if (g.error().message.empty()) fail("an error without a message", "");
        return 0;
    }
    (void)validate(*g, OpLibrary::standard());
    const std::string text = serialize_project(*g);
    LoadResult again = parse_project(text, "fuzz");
    if (!again.ok()) fail("an imported graph does not read back", text.substr(0, 2000));
    return 0;
}
