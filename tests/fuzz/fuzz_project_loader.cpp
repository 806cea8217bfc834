// libFuzzer target for the project loader: any bytes given to parse_project must
// come back as issues — never a crash, hang, sanitizer report or check failure —
// and whatever loads must survive serialize → parse unchanged (tests/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "io/project_file.h"

namespace {

bool same_graph(const tapestry::Graph &a, const tapestry::Graph &b) {
    if (a.name != b.name || a.description != b.description) return false;
    if (a.tensors().size() != b.tensors().size() || a.operations().size() != b.operations().size()) return false;
    for (size_t i = 0; i < a.tensors().size(); ++i)
        if (!(*a.tensors()[i] == *b.tensors()[i])) return false;
    for (size_t i = 0; i < a.operations().size(); ++i)
        if (!(*a.operations()[i] == *b.operations()[i])) return false;
    return true;
}

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "fuzz_project_loader: %s\n%s\n", what, detail.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace tapestry;
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    const LoadResult loaded = parse_project(text, "fuzz.tapestry.json");
    for (const Issue &issue : loaded.issues) {
        if (issue.message.rfind("fuzz.tapestry.json", 0) != 0) fail("message does not name the file", issue.message);
        if (issue.code.empty()) fail("issue without a code", issue.message);
    }
    if (!loaded.ok()) return 0;

    const std::string saved = serialize_project(loaded.graph);
    const LoadResult again = parse_project(saved, "saved.tapestry.json");
    if (!again.issues.empty()) fail("the saved text does not load cleanly", format_issue(again.issues[0]) + "\n" + saved);
    if (!same_graph(loaded.graph, again.graph)) fail("load(save(g)) != g", saved);
    if (serialize_project(again.graph) != saved) fail("saving is not stable", saved);
    return 0;
}
