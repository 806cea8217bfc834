// Happens-before is reachability in the dependency DAG, kept as one ancestor
// bitset per step (plans of the certified examples are small; a 20 000-step plan
// needs 50 MB and is refused with a finding rather than allocated).
#include "plan/certify.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "index/index_set.h"

namespace tapestry::plan {
namespace {

constexpr size_t kMaxSteps = 20000;

class Order {
public:
    explicit Order(const Plan &plan) : n_(plan.steps.size()), words_((n_ + 63) / 64), bits_(n_ * words_, 0) {
        for (size_t i = 0; i < n_; ++i)
            for (int d : plan.steps[i].deps) {
                if (d < 0 || static_cast<size_t>(d) >= i) continue;  // reported by the schedule check
                std::uint64_t *row = &bits_[i * words_];
                const std::uint64_t *anc = &bits_[static_cast<size_t>(d) * words_];
                for (size_t w = 0; w < words_; ++w) row[w] |= anc[w];
                row[static_cast<size_t>(d) / 64] |= std::uint64_t{1} << (static_cast<size_t>(d) % 64);
            }
    }
    // a happens before b.
    bool before(int a, int b) const {
        if (a == b) return false;
        return (bits_[static_cast<size_t>(b) * words_ + static_cast<size_t>(a) / 64] >> (static_cast<size_t>(a) % 64)) & 1;
    }
    bool ordered(int a, int b) const { return before(a, b) || before(b, a); }

private:
    size_t n_, words_;
    std::vector<std::uint64_t> bits_;
};

// Whether two boxes have one shape (a transfer's source and destination may sit at
// different coordinates of different tensors).
bool same_extents(const ZRange &a, const ZRange &b) {
    if (a.rank() != b.rank()) return false;
    for (int d = 0; d < a.rank(); ++d)
        if (a.extent(d) != b.extent(d)) return false;
    return true;
}

std::string step_name(const Plan &plan, int i) {
    const Step &s = plan.steps[static_cast<size_t>(i)];
    std::string out = "step " + std::to_string(i) + " (" + step_kind_name(s.kind) + " " + s.op;
    if (!s.shard.empty()) out += " " + s.shard;
    if (!s.collective.empty() && s.kind != StepKind::send_recv) out += " " + s.collective;
    return out + ")";
}

std::string buffer_name(const Plan &plan, int b) {
    const Buffer &buf = plan.buffers[static_cast<size_t>(b)];
    return "buffer " + std::to_string(b) + " (" + buf.tensor.value + " on " +
           plan.devices[static_cast<size_t>(buf.device)].name + ")";
}

struct Write {
    int step;
    ZRange box;
};

}  // namespace

Certificate certify_plan(const Plan &plan) {
    Certificate cert;
    CertificateCheck schedule{"schedule", true, "", {}, {}};
    CertificateCheck dataflow{"dataflow", true, "", {}, {}};
    CertificateCheck races{"races", true, "", {}, {}};
    CertificateCheck arena{"arena", true, "", {}, {}};
    CertificateCheck collectives{"collectives", true, "", {}, {}};
    CertificateCheck outputs{"outputs", true, "", {}, {}};
    const int nsteps = static_cast<int>(plan.steps.size());
    const int nbuf = static_cast<int>(plan.buffers.size());
    const int ndev = static_cast<int>(plan.devices.size());
    if (plan.steps.size() > kMaxSteps) {
        schedule.fail("the plan has " + std::to_string(plan.steps.size()) + " steps; the certificate checks at most " +
                          std::to_string(kMaxSteps),
                      "");
        cert.checks = {schedule};
        return cert;
    }

    // ---- schedule ----
    bool regions_ok = true;
    for (int i = 0; i < nsteps; ++i) {
        const Step &s = plan.steps[static_cast<size_t>(i)];
        for (int d : s.deps)
            if (d < 0 || d >= i) schedule.fail(step_name(plan, i) + " depends on step " + std::to_string(d) + ", which does not come before it", s.op);
        const bool comm = s.kind == StepKind::send_recv || s.kind == StepKind::collective;
        if ((s.stream == Stream::communication) != comm)
            schedule.fail(step_name(plan, i) + " runs on the wrong stream", s.op);
        if (s.kind == StepKind::collective) {
            std::vector<int> p = s.participants;
            std::sort(p.begin(), p.end());
            if (p.size() < 2 || std::adjacent_find(p.begin(), p.end()) != p.end() || p.front() < 0 || p.back() >= ndev)
                schedule.fail(step_name(plan, i) + " needs two or more distinct devices of the plan", s.op);
        } else if (s.device < 0 || s.device >= ndev || (s.kind == StepKind::send_recv && (s.peer < 0 || s.peer >= ndev))) {
            schedule.fail(step_name(plan, i) + " names a device the plan lacks", s.op);
            regions_ok = false;
            continue;
        }
        auto check_region = [&](const Region &r, bool write) {
            if (r.buffer < 0 || r.buffer >= nbuf) {
                schedule.fail(step_name(plan, i) + " touches buffer " + std::to_string(r.buffer) + ", which the plan lacks", s.op);
                regions_ok = false;
                return;
            }
            const Buffer &b = plan.buffers[static_cast<size_t>(r.buffer)];
            if (r.box.rank() != b.region.rank() || !b.region.contains(r.box))
                schedule.fail(step_name(plan, i) + " touches " + r.box.to_string() + " outside " + buffer_name(plan, r.buffer) +
                                  " " + b.region.to_string(), s.op);
            bool right = false;
            switch (s.kind) {
                case StepKind::kernel:
                case StepKind::copy: right = b.device == s.device; break;
                case StepKind::send_recv: right = b.device == (write ? s.peer : s.device); break;
                case StepKind::collective:
                    right = std::find(s.participants.begin(), s.participants.end(), b.device) != s.participants.end();
                    break;
            }
            if (!right)
                schedule.fail(step_name(plan, i) + (write ? " writes " : " reads ") + buffer_name(plan, r.buffer) +
                                  (s.kind == StepKind::collective ? ", a device that is not one of its participants"
                                                                  : ", on the wrong device"), s.op);
            if (write && (b.kind == BufferKind::parameter || b.kind == BufferKind::input))
                schedule.fail(step_name(plan, i) + " writes " + buffer_name(plan, r.buffer) + ", which holds a " +
                                  buffer_kind_name(b.kind), s.op);
        };
        for (const Region &r : s.reads) check_region(r, false);
        for (const Region &r : s.writes) check_region(r, true);
    }
    if (!regions_ok) {
        cert.checks = {schedule};
        return cert;
    }
    const Order order(plan);

    // Writes and accesses per buffer.
    std::vector<std::vector<Write>> writes(static_cast<size_t>(nbuf));
    std::vector<std::vector<int>> access(static_cast<size_t>(nbuf));
    for (int i = 0; i < nsteps; ++i) {
        const Step &s = plan.steps[static_cast<size_t>(i)];
        for (const Region &r : s.writes) writes[static_cast<size_t>(r.buffer)].push_back(Write{i, r.box});
        for (const Region &r : s.reads) access[static_cast<size_t>(r.buffer)].push_back(i);
        for (const Region &r : s.writes) access[static_cast<size_t>(r.buffer)].push_back(i);
    }

    // ---- dataflow ----
    for (int i = 0; i < nsteps; ++i) {
        const Step &s = plan.steps[static_cast<size_t>(i)];
        for (const Region &r : s.reads) {
            const Buffer &b = plan.buffers[static_cast<size_t>(r.buffer)];
            if (b.kind == BufferKind::parameter || b.kind == BufferKind::input) continue;  // loaded before the start
            std::int64_t points = 0;
            std::vector<ZRange> parts;
            for (const Write &w : writes[static_cast<size_t>(r.buffer)]) {
                if (w.step == i) continue;
                const ZRange part = w.box.intersect(r.box);
                if (part.empty() && !(r.box.rank() == 0 && w.box.rank() == 0)) continue;
                if (order.before(w.step, i)) {
                    points += part.size();
                    parts.push_back(part);
                } else if (!order.before(i, w.step)) {
                    dataflow.fail(step_name(plan, i) + " reads " + r.box.to_string() + " of " + buffer_name(plan, r.buffer) +
                                      " while " + step_name(plan, w.step) + " may be writing it (no dependency orders them)",
                                  s.op);
                }
            }
            const std::int64_t want = r.box.size();
            bool exact = points == want;
            if (exact && parts.size() > 1) {
                for (size_t x = 0; x < parts.size() && exact; ++x)
                    for (size_t y = x + 1; y < parts.size() && exact; ++y) exact = !parts[x].intersects(parts[y]);
            }
            if (!exact) {
                const std::int64_t written = parts.empty() ? 0 : IndexSet::of_ranges(r.box.rank(), parts).count();
                dataflow.fail(step_name(plan, i) + " reads " + r.box.to_string() + " of " + buffer_name(plan, r.buffer) +
                                  ": " + std::to_string(written) + " of its " + std::to_string(want) +
                                  " elements are written before it" +
                                  (points > written ? " (some more than once)" : ""),
                              s.op);
            }
        }
    }

    // ---- races ----
    for (int b = 0; b < nbuf; ++b) {
        const auto &ws = writes[static_cast<size_t>(b)];
        for (size_t x = 0; x < ws.size(); ++x)
            for (size_t y = x + 1; y < ws.size(); ++y)
                if (ws[x].step != ws[y].step && ws[x].box.intersects(ws[y].box) && !order.ordered(ws[x].step, ws[y].step))
                    races.fail(step_name(plan, ws[x].step) + " and " + step_name(plan, ws[y].step) + " may write " +
                                   ws[x].box.intersect(ws[y].box).to_string() + " of " + buffer_name(plan, b) + " at once",
                               plan.steps[static_cast<size_t>(ws[x].step)].op);
    }

    // ---- arena ----
    for (int a = 0; a < nbuf; ++a) {
        const Buffer &A = plan.buffers[static_cast<size_t>(a)];
        if (!A.in_arena()) continue;
        for (int c = a + 1; c < nbuf; ++c) {
            const Buffer &C = plan.buffers[static_cast<size_t>(c)];
            if (!C.in_arena() || C.device != A.device) continue;
            if (!(A.offset < C.offset + C.bytes && C.offset < A.offset + A.bytes)) continue;
            const auto &xa = access[static_cast<size_t>(a)];
            const auto &xc = access[static_cast<size_t>(c)];
            auto all_before = [&](const std::vector<int> &p, const std::vector<int> &q) {
                for (int i : p)
                    for (int j : q)
                        if (!order.before(i, j)) return false;
                return true;
            };
            if (!xa.empty() && !xc.empty() && !all_before(xa, xc) && !all_before(xc, xa))
                arena.fail(buffer_name(plan, a) + " [" + std::to_string(A.offset) + ", " + std::to_string(A.offset + A.bytes) +
                               ") and " + buffer_name(plan, c) + " [" + std::to_string(C.offset) + ", " +
                               std::to_string(C.offset + C.bytes) + ") share arena bytes while both may be in use",
                           A.tensor.value);
        }
    }

    // ---- collectives ----
    for (int i = 0; i < nsteps; ++i) {
        const Step &s = plan.steps[static_cast<size_t>(i)];
        if (s.kind != StepKind::collective) continue;
        // Every participant contributes and receives; a broadcast's root (the step's
        // device) only sends, the others only receive.
        const bool broadcast = s.collective == "broadcast";
        for (int d : s.participants) {
            bool reads = false, writes_here = false;
            for (const Region &r : s.reads) reads = reads || plan.buffers[static_cast<size_t>(r.buffer)].device == d;
            for (const Region &r : s.writes) writes_here = writes_here || plan.buffers[static_cast<size_t>(r.buffer)].device == d;
            const bool root = d == s.device;
            const bool must_read = !broadcast || root, must_write = !broadcast || !root;
            const std::string who = step_name(plan, i) + ": participant " + plan.devices[static_cast<size_t>(d)].name;
            if (must_read && !reads) collectives.fail(who + " contributes nothing", s.op);
            else if (must_write && !writes_here) collectives.fail(who + " receives nothing", s.op);
            else if (broadcast && root && writes_here) collectives.fail(who + " is the root and receives its own data", s.op);
        }
        if (s.reads.empty() || s.writes.empty()) continue;
        if (broadcast) {
            const ZRange &sent = s.reads.front().box;
            if (s.reads.size() != 1)
                collectives.fail(step_name(plan, i) + " broadcasts " + std::to_string(s.reads.size()) + " boxes, not one", s.op);
            for (const Region &r : s.writes)
                if (!same_extents(r.box, sent))
                    collectives.fail(step_name(plan, i) + " delivers " + r.box.to_string() + " for the " + sent.to_string() +
                                         " it sends",
                                     s.op);
        }
        if (s.collective == "all_reduce" || s.collective == "reduce_scatter") {
            // The partials: every index of dim 0 of the partials tensor summed once.
            const Buffer &first = plan.buffers[static_cast<size_t>(s.reads.front().buffer)];
            const Tensor *t = plan.graph.find_tensor(first.tensor);
            Coord covered = 0;
            for (const Region &r : s.reads) covered += r.box.rank() ? r.box.extent(0) : 1;
            if (t && t->range.rank() > 0 && covered != t->range.extent(0))
                collectives.fail(step_name(plan, i) + " sums " + std::to_string(covered) + " of the " +
                                     std::to_string(t->range.extent(0)) + " partials of '" + t->id.value + "'", s.op);
        } else if (s.collective == "all_gather") {
            const ZRange box = s.writes.front().box;
            Coord points = 0;
            for (const Region &r : s.writes)
                if (!(r.box == box)) collectives.fail(step_name(plan, i) + " gathers different boxes on different devices", s.op);
            std::vector<ZRange> pieces;
            for (const Region &r : s.reads) {
                points += r.box.size();
                pieces.push_back(r.box);
            }
            // Reads are in the source tensor's coordinates: compare sizes and disjointness.
            bool disjoint = true;
            for (size_t x = 0; x < pieces.size(); ++x)
                for (size_t y = x + 1; y < pieces.size(); ++y) disjoint = disjoint && !pieces[x].intersects(pieces[y]);
            if (points != box.size() || !disjoint)
                collectives.fail(step_name(plan, i) + "'s pieces (" + std::to_string(points) + " elements) do not tile the " +
                                     std::to_string(box.size()) + " elements it gathers", s.op);
        }
    }

    // ---- outputs ----
    for (const TensorPtr &t : plan.graph.tensors()) {
        if (t->role != TensorRole::output) continue;
        std::vector<ZRange> pieces;
        Coord points = 0;
        for (const OutputPiece &p : plan.outputs) {
            if (p.tensor != t->id) continue;
            if (p.buffer < 0 || p.buffer >= nbuf || plan.buffers[static_cast<size_t>(p.buffer)].tensor != t->id) {
                outputs.fail("an output piece of '" + t->id.value + "' names buffer " + std::to_string(p.buffer) +
                                 ", which does not hold it", t->id.value);
                continue;
            }
            if (!t->range.contains(p.box))
                outputs.fail("output piece " + p.box.to_string() + " lies outside '" + t->id.value + "' " + t->range.to_string(), t->id.value);
            pieces.push_back(p.box);
            points += p.box.size();
            // Written there, whole.
            std::vector<ZRange> written;
            Coord wpoints = 0;
            for (const Write &w : writes[static_cast<size_t>(p.buffer)]) {
                const ZRange part = w.box.intersect(p.box);
                if (!part.empty()) {
                    written.push_back(part);
                    wpoints += part.size();
                }
            }
            if (wpoints < p.box.size() ||
                (!written.empty() && !IndexSet::of_ranges(p.box.rank(), written).equals(IndexSet::of_range(p.box))))
                outputs.fail("output piece " + p.box.to_string() + " of '" + t->id.value + "' on " +
                                 plan.devices[static_cast<size_t>(plan.buffers[static_cast<size_t>(p.buffer)].device)].name +
                                 " is not written whole", t->id.value);
        }
        bool disjoint = true;
        for (size_t x = 0; x < pieces.size(); ++x)
            for (size_t y = x + 1; y < pieces.size(); ++y) disjoint = disjoint && !pieces[x].intersects(pieces[y]);
        if (points != t->range.size() || !disjoint)
            outputs.fail("the output pieces of '" + t->id.value + "' hold " + std::to_string(points) + " elements" +
                             (disjoint ? "" : " (overlapping)") + ", not the " + std::to_string(t->range.size()) +
                             " of its range: it is not assembled exactly", t->id.value);
    }

    schedule.message = std::to_string(nsteps) + " steps on " + std::to_string(ndev) + " devices, dependencies and regions in place";
    dataflow.message = "every element read was written once, before, on its device";
    races.message = "no two unordered steps write the same elements";
    arena.message = "buffers sharing arena bytes are never live together";
    collectives.message = "every participant contributes and receives";
    outputs.message = "outputs assembled exactly";
    cert.checks = {schedule, dataflow, races, arena, collectives, outputs};
    for (CertificateCheck &c : cert.checks)
        if (!c.pass) c.message = c.findings.front();
    return cert;
}

}  // namespace tapestry::plan
