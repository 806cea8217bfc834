// Certificates: the proof that a stage computes what the original graph computes
// (DESIGN.md §5, issue 5). Named checks — structure, coverage, injectivity,
// dataflow and, on request, a randomized numeric run on the CPU executor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/library.h"

namespace tapestry {

struct CertifyOptions {
    // Run the stage and the original on the CPU executor with the same random
    // inputs and compare every output (slow on big graphs: off by default).
    bool numeric = false;
    std::uint64_t seed = 1;
    // An output passes when |stage - original| <= atol·scale + rtol·|original| for
    // every element, scale = max(1, max |original|) (as cpu::verify does); for a
    // bf16/f16 output atol and rtol are at least cpu::dtype_tolerance_floor's.
    double atol = 1e-4;
    double rtol = 1e-3;
    int threads = 2;
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
