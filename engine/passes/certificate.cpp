// Certificates. The structural checks reuse validate() where it already decides
// the question (index-space coverage, op-level output injectivity) and add what it
// does not: disjoint shard writes and dataflow completeness, both per element with
// ISL. The numeric check is the caller's (CertifyOptions::numeric).
#include "passes/certificate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "graph/resolve.h"
#include "graph/validate.h"
#include "index/index_set.h"

namespace tapestry {
namespace {

const std::set<std::string> kCoverageCodes = {"shard-overlap", "shard-gap", "shard-outside-index-space",
                                              "shard-coverage"};
const std::set<std::string> kInjectivityCodes = {"non-injective-output"};

void fail(CertificateCheck &c, std::string finding, std::string node) { c.fail(std::move(finding), std::move(node)); }

// The elements an index range touches through one operand projection, exactly.
IndexSet touched(const OperandProjection &p, const ZRange &index, const ZRange &operand_range) {
    if (index.empty()) return IndexSet(operand_range.rank());
    IndexSet s = IndexSet::of_range(index).image(p.projection);
    if (p.clipped) s = s.intersect(IndexSet::of_range(operand_range));
    return s;
}

std::string elements_text(const IndexSet &s) {
    const std::int64_t n = s.count();
    std::string box = s.bounding_box().to_string();
    return box + " (" + std::to_string(n) + (n == 1 ? " element)" : " elements)");
}

// One writer of a tensor: an unsharded op or one shard, and the elements it writes.
struct Write {
    std::string op;
    std::string writer;  // shard id, or the op id when unsharded
    IndexSet elements;
};

struct Resolved {
    const Operation *op;
    Signature signature;
};

// The index ranges an op runs: its shards, or its whole index space.
std::vector<std::pair<std::string, ZRange>> pieces(const Resolved &r) {
    std::vector<std::pair<std::string, ZRange>> out;
    if (r.op->shards.empty()) {
        out.emplace_back(r.op->id.value, r.signature.index_space);
    } else {
        for (const Shard &s : r.op->shards)  // a shard of the wrong rank is a structure finding
            if (s.index.rank() == r.signature.index_space.rank()) out.emplace_back(s.id.value, s.index);
    }
    return out;
}

// Every (port, operand) of one side with its projection and selection.
template <typename F>
void for_each_operand(const std::vector<PortBinding> &bindings, const std::vector<PortProjections> &projections,
                      F &&f) {
    for (const PortBinding &b : bindings) {
        const PortProjections *pp = nullptr;
        for (const PortProjections &c : projections)
            if (c.port == b.name) pp = &c;
        if (!pp) continue;
        for (size_t i = 0; i < b.selections.size() && i < pp->operands.size(); ++i) f(b.selections[i], pp->operands[i]);
    }
}

CertificateCheck check_structure(const std::vector<Issue> &issues) {
    CertificateCheck c{"structure", true, "validate() reports no errors", {}, {}};
    for (const Issue &i : issues)
        if (i.severity == Severity::error && !kCoverageCodes.count(i.code) && !kInjectivityCodes.count(i.code))
            fail(c, format_issue(i), i.node);
    return c;
}

CertificateCheck check_coverage(const std::vector<Issue> &issues, const Graph &g) {
    size_t sharded = 0;
    for (const OpPtr &op : g.operations()) sharded += op->shards.empty() ? 0 : 1;
    CertificateCheck c{"coverage",
                       true,
                       "the shards of " + std::to_string(sharded) +
                           (sharded == 1 ? " sharded operation" : " sharded operations") +
                           " partition their index spaces exactly",
                       {},
                       {}};
    for (const Issue &i : issues)
        if (i.severity == Severity::error && kCoverageCodes.count(i.code)) fail(c, format_issue(i), i.node);
    return c;
}

CertificateCheck check_injectivity(const std::vector<Issue> &issues, const std::vector<Resolved> &ops) {
    CertificateCheck c{"injectivity", true, "no output element is written twice by one operation", {}, {}};
    for (const Issue &i : issues)
        if (i.severity == Severity::error && kInjectivityCodes.count(i.code)) fail(c, format_issue(i), i.node);
    for (const Resolved &r : ops) {
        if (r.op->shards.size() < 2) continue;
        for_each_operand(r.op->outputs, r.signature.outputs,
                         [&](const TensorSelection &sel, const OperandProjection &p) {
                             std::vector<IndexSet> sets;
                             IndexSet all(sel.range.rank());
                             std::int64_t total = 0;
                             for (const Shard &s : r.op->shards) {
                                 if (s.index.rank() != r.signature.index_space.rank()) return;
                                 sets.push_back(touched(p, s.index, sel.range));
                                 total += sets.back().count();
                                 all = all.unite(sets.back());
                             }
                             if (total == all.count()) return;
                             for (size_t a = 0; a < sets.size(); ++a)
                                 for (size_t b = a + 1; b < sets.size(); ++b) {
                                     IndexSet both = sets[a].intersect(sets[b]);
                                     if (both.empty()) continue;
                                     fail(c,
                                          "shards '" + r.op->shards[a].id.value + "' and '" + r.op->shards[b].id.value +
                                              "' of '" + r.op->id.value + "' both write " + sel.tensor.value +
                                              " elements " + elements_text(both),
                                          r.op->id.value);
                                     return;  // one witness per output is enough
                                 }
                         });
    }
    return c;
}

CertificateCheck check_dataflow(const Graph &g, const std::vector<Resolved> &ops) {
    CertificateCheck c{
        "dataflow",
        true,
        "every element read of an intermediate or output tensor is written by exactly one producer shard",
        {},
        {}};
    std::unordered_map<TensorId, std::vector<Write>> writes;
    std::unordered_map<TensorId, std::vector<std::pair<std::string, IndexSet>>> reads;
    for (const Resolved &r : ops) {
        const auto parts = pieces(r);
        for_each_operand(
            r.op->outputs, r.signature.outputs, [&](const TensorSelection &sel, const OperandProjection &p) {
                for (const auto &[writer, index] : parts)
                    writes[sel.tensor].push_back(Write{r.op->id.value, writer, touched(p, index, sel.range)});
            });
        for_each_operand(r.op->inputs, r.signature.inputs, [&](const TensorSelection &sel, const OperandProjection &p) {
            IndexSet all(sel.range.rank());
            for (const auto &piece : parts) all = all.unite(touched(p, piece.second, sel.range));
            reads[sel.tensor].emplace_back(r.op->id.value, std::move(all));
        });
    }
    for (const TensorPtr &t : g.tensors()) {
        if (t->role == TensorRole::input || t->role == TensorRole::parameter) continue;
        const int rank = t->range.rank();
        IndexSet written(rank);
        std::int64_t total = 0;
        auto wit = writes.find(t->id);
        const std::vector<Write> none;
        const std::vector<Write> &ws = wit == writes.end() ? none : wit->second;
        for (const Write &w : ws) {
            total += w.elements.count();
            written = written.unite(w.elements);
        }
        if (total != written.count()) {
            bool reported = false;
            for (size_t a = 0; a < ws.size() && !reported; ++a)
                for (size_t b = a + 1; b < ws.size() && !reported; ++b) {
                    IndexSet both = ws[a].elements.intersect(ws[b].elements);
                    if (both.empty()) continue;
                    fail(c,
                         "'" + ws[a].writer + "' and '" + ws[b].writer + "' both write " + t->id.value + " elements " +
                             elements_text(both),
                         ws[b].op);
                    reported = true;
                }
        }
        auto rit = reads.find(t->id);
        if (rit != reads.end())
            for (const auto &[reader, elements] : rit->second) {
                IndexSet missing = elements.subtract(written);
                if (missing.empty()) continue;
                std::string producers;
                std::set<std::string> seen;
                for (const Write &w : ws)
                    if (seen.insert(w.op).second) producers += (producers.empty() ? "" : ", ") + ("'" + w.op + "'");
                fail(c,
                     "'" + reader + "' reads " + t->id.value + " elements " + elements_text(missing) +
                         " that no producer shard writes" +
                         (producers.empty() ? "" : " (producers: " + producers + ")"),
                     reader);
            }
        if (t->role == TensorRole::output) {
            IndexSet missing = IndexSet::of_range(t->range).subtract(written);
            if (!missing.empty())
                fail(c, "output '" + t->id.value + "' elements " + elements_text(missing) + " are never written",
                     t->id.value);
        }
    }
    return c;
}

}  // namespace

void CertificateCheck::fail(std::string finding, std::string node) {
    if (pass) message = finding;
    pass = false;
    findings.push_back(std::move(finding));
    nodes.push_back(std::move(node));
}

bool Certificate::pass() const {
    if (checks.empty()) return false;
    return std::all_of(checks.begin(), checks.end(), [](const CertificateCheck &c) { return c.pass; });
}

const CertificateCheck *Certificate::find(const std::string &name) const {
    for (const CertificateCheck &c : checks)
        if (c.name == name) return &c;
    return nullptr;
}

std::string Certificate::badge() const {
    if (checks.empty()) return "not certified";
    std::string passed, failed;
    for (const CertificateCheck &c : checks) {
        std::string &list = c.pass ? passed : failed;
        list += (list.empty() ? "" : ", ") + c.name;
        if (!c.pass)
            list += " (" + std::to_string(c.findings.size()) + (c.findings.size() == 1 ? " finding)" : " findings)");
    }
    return failed.empty() ? "PASS " + passed : "FAIL " + failed;
}

std::string Certificate::text() const {
    std::string out = "certificate: " + badge() + "\n";
    for (const CertificateCheck &c : checks) {
        out += std::string("  ") + (c.pass ? "pass " : "FAIL ") + c.name + ": " + (c.pass ? c.message : "") +
               (c.pass ? "" : std::to_string(c.findings.size()) + (c.findings.size() == 1 ? " finding" : " findings")) +
               "\n";
        if (!c.pass)
            for (const std::string &f : c.findings) out += "    - " + f + "\n";
    }
    return out;
}

Certificate certify(const Graph &original, const Graph &stage, const CertifyOptions &options) {
    const OpLibrary &lib = options.library ? *options.library : OpLibrary::standard();
    Certificate cert;
    const std::vector<Issue> issues = validate(stage, lib);
    std::vector<Resolved> ops;
    for (const OpPtr &op : stage.operations()) {
        auto d = resolve(stage, *op, lib);
        if (d) ops.push_back(Resolved{op.get(), d->signature});
    }
    cert.checks.push_back(check_structure(issues));
    cert.checks.push_back(check_coverage(issues, stage));
    cert.checks.push_back(check_injectivity(issues, ops));
    cert.checks.push_back(check_dataflow(stage, ops));
    if (options.numeric) cert.checks.push_back(options.numeric(original, stage));
    return cert;
}

}  // namespace tapestry
