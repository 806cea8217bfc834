// libFuzzer target for hardware target files (docs/targets.md): any bytes given to
// parse_target must come back as a target or a message naming the file and the
// JSON path — never a crash — and a target that reads must survive target_json →
// parse_target unchanged, and serve the cost model (tests/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cost/model.h"
#include "cost/target.h"

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "fuzz_target_file: %s\n%s\n", what, detail.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace tapestry;
    const std::string text(reinterpret_cast<const char *>(data), size);
    auto t = cost::parse_target(text, "fuzz.json");
    if (!t) {
        if (t.error().rfind("fuzz.json: ", 0) != 0) fail("an error that does not name the file", t.error());
        return 0;
    }
    const std::string once = cost::target_json(*t);
    auto again = cost::parse_target(once, "again.json");
    if (!again) fail("a written target does not read back", again.error());
    if (cost::target_json(*again) != once) fail("the round trip changed the target", once.substr(0, 200));
    if (!t->missing_figures().empty()) return 0;
    auto shape = cost::cluster_shape(*t, 4, 0);
    if (!shape) return 0;
    const cost::Model m(*t, *shape);
    const double s = m.kernel_seconds(cost::KernelWork{cost::KernelClass::gemm, DType::bf16, 1e9, 1e6});
    if (!(s >= 0)) fail("a negative or NaN kernel time", std::to_string(s));
    (void)m.collective_seconds(cost::Collective::all_reduce, 1e6, {0, 1, 2, 3});
    return 0;
}
