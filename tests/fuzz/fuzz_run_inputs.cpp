// libFuzzer target for the executor's input loading — what `tapestry run
// --inputs DIR` does with a folder of .npy files: any bytes as the input x.npy
// of a small graph must be read (read_inputs_dir) and run, or refused with a
// message; never a crash, sanitizer report, check failure or an allocation the
// file does not justify (-malloc_limit_mb in tests/fuzz/CMakeLists.txt). The
// graph takes x in f32 [4, 8] and in bf16 [2, 3, 4], so the dtype fallback is
// on the path too.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "io/project_file.h"
#include "io/tensor_values.h"
#include "ops/library.h"
#include "runtime/cpu/executor.h"

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "fuzz_run_inputs: %s\n%s\n", what, detail.c_str());
    std::abort();
}

struct Case {
    tapestry::Graph graph;
    std::unique_ptr<tapestry::cpu::Program> program;
};

Case make_case(const char *dtype, const char *shape) {
    const std::string text = std::string("{\"format\": \"tapestry-project\", \"version\": 1, \"tensors\": [") +
                             "{\"id\": \"x\", \"dtype\": \"" + dtype + "\", \"shape\": " + shape +
                             ", \"role\": \"input\"}, {\"id\": \"y\", \"dtype\": \"" + dtype + "\", \"shape\": " + shape +
                             ", \"role\": \"output\"}], \"operations\": [{\"id\": \"r\", \"kind\": \"relu\", "
                             "\"inputs\": {\"x\": \"x\"}, \"outputs\": {\"y\": \"y\"}}]}";
    tapestry::LoadResult loaded = tapestry::parse_project(text, "fuzz");
    if (!loaded.ok()) fail("the fuzz graph does not load", text);
    tapestry::cpu::CpuOptions options;
    options.threads = 1;
    auto program = tapestry::cpu::Program::compile(loaded.graph, tapestry::OpLibrary::standard(), options);
    if (!program) fail("the fuzz graph does not compile", program.error());
    return Case{std::move(loaded.graph), std::move(program).value()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace tapestry;
    static Case cases[] = {make_case("f32", "[4, 8]"), make_case("bf16", "[2, 3, 4]")};
    static const fs::path dir = "fuzz_run_inputs_" + std::to_string(::getpid());
    static const bool made = fs::create_directories(dir) || fs::is_directory(dir);
    if (!made) fail("cannot make the inputs folder", dir.string());
    {
        std::ofstream out(dir / "x.npy", std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
    }
    for (Case &c : cases) {
        auto inputs = read_inputs_dir(c.graph, dir);
        if (!inputs) {
            if (inputs.error().empty()) fail("an error without a message", "");
            continue;
        }
        auto result = c.program->run(*inputs);
        if (!result) fail("a read input does not run", result.error());
        if (result->outputs.size() != 1) fail("the run returned no output", "");
    }
    return 0;
}
