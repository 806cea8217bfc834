// libFuzzer target for plan files (docs/plans.md): any bytes given to parse_plan
// must come back as a plan or a message naming the file and field — never a
// crash, hang or sanitizer report — and a plan that reads must survive
// plan_json → parse_plan unchanged, and be certified and simulated without
// failing (a wrong plan is a failed check, not a crash) (tests/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "plan/certify.h"
#include "plan/plan_file.h"
#include "plan/simulate.h"

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "fuzz_plan_file: %s\n%s\n", what, detail.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace tapestry;
    const std::string text(reinterpret_cast<const char *>(data), size);
    auto p = plan::parse_plan(text, "fuzz.plan.json");
    if (!p) {
        if (p.error().rfind("fuzz.plan.json: ", 0) != 0) fail("an error that does not name the file", p.error());
        return 0;
    }
    const std::string once = plan::plan_json(*p);
    auto again = plan::parse_plan(once, "again.plan.json");
    if (!again) fail("a written plan does not read back", again.error());
    if (plan::plan_json(*again) != once) fail("the round trip changed the plan", once.substr(0, 200));
    const Certificate c = plan::certify_plan(*p);
    if (c.checks.empty()) fail("the certificate ran no check", "");
    const plan::Prediction pr = plan::simulate(*p);
    if (pr.devices.size() != p->devices.size()) fail("the simulation lost a device", "");
    return 0;
}
