// Certificates: the proof that a stage computes what the original graph computes
// (DESIGN.md §5, issue 5). Named checks — structure, coverage, injectivity,
// dataflow and, on request, a numeric one. The passes know no runtime: the
// numeric check is given to them by a layer above (verify/numeric_check.h runs
// the CPU executor and the double-precision oracle).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/library.h"

namespace tapestry {

struct CertificateCheck;

// Runs `stage` and `original` on the same inputs and compares their outputs,
// as a certificate check named "numeric" (verify::numeric_check makes one).
using NumericCheck = std::function<CertificateCheck(const Graph &original, const Graph &stage)>;

struct CertifyOptions {
    // The numeric check (slow on big graphs: none by default).
    NumericCheck numeric;
    const OpLibrary *library = nullptr;  // null: OpLibrary::standard()
};

// One named check. `findings` holds every failure, each a sentence naming the
// node at fault; `message` is the first finding, or what was checked on a pass.
struct CertificateCheck {
    std::string name;  // "structure", "coverage", "injectivity", "dataflow", "numeric"
    bool pass = true;
    std::string message;
    std::vector<std::string> findings;
    std::vector<std::string> nodes;  // ids of the nodes at fault, in finding order

    // Records a failure: the first finding becomes the message.
    void fail(std::string finding, std::string node);
};

struct Certificate {
    std::vector<CertificateCheck> checks;

    bool certified() const { return !checks.empty(); }  // false: certify() was not run
    bool pass() const;                                  // every check passed (and there is one)
    const CertificateCheck *find(const std::string &name) const;
    // "certified: structure ✓ coverage ✓ …" in ASCII: "PASS structure, coverage, …" or
    // "FAIL dataflow (1 finding)" — one line for the studio badge.
    std::string badge() const;
    // The badge line, then one line per check: "  pass structure: …" / "  FAIL coverage: …",
    // each finding of a failed check indented below it.
    std::string text() const;
};

// Certifies `stage` against `original`. Never fails: problems are failed checks.
Certificate certify(const Graph &original, const Graph &stage, const CertifyOptions &options = {});

}  // namespace tapestry
