// Transfers and collectives as element moves (launch/collectives.h).
#include "launch/collectives.h"

#include <algorithm>
#include <vector>

namespace tapestry::launch {
namespace {

class Collective {
public:
    Collective(const plan::Plan &plan, int step, BoxMemory &memory)
        : plan_(plan), step_(step), s_(plan.steps[static_cast<size_t>(step)]), mem_(memory) {}

    Expected<StepOutcome, std::string> run() {
        const bool tree = s_.algorithm == "tree";
        if (tree && s_.collective != "all_reduce")
            return unexpected("algorithm 'tree' is not one " + s_.collective + " runs (ring only)");
        if (!tree && !s_.algorithm.empty() && s_.algorithm != "ring")
            return unexpected("unknown collective algorithm '" + s_.algorithm + "' (known: ring, tree)");
        if (s_.collective == "all_reduce") return all_reduce(tree);
        if (s_.collective == "reduce_scatter") return reduce_scatter();
        if (s_.collective == "all_gather") return all_gather();
        if (s_.collective == "broadcast") return broadcast();
        return unexpected("unknown collective '" + s_.collective + "'");
    }

private:
    int device_of(const plan::Region &r) const { return plan_.buffers[static_cast<size_t>(r.buffer)].device; }
    HostBox box_of(const plan::Region &r) const { return mem_.box_in(r.buffer, r.box); }
    std::string device_text(int dev) const { return "participant " + plan_.devices[static_cast<size_t>(dev)].name; }

    const plan::Region *read_on(int dev) const {
        for (const plan::Region &r : s_.reads)
            if (device_of(r) == dev) return &r;
        return nullptr;
    }
    const plan::Region *write_on(int dev) const {
        for (const plan::Region &r : s_.writes)
            if (device_of(r) == dev) return &r;
        return nullptr;
    }

    // One hop, its bytes counted.
    Expected<std::monostate, std::string> hop(int from, const HostBox &src, int to, const HostBox &dst, std::int64_t lo,
                                              std::int64_t hi, bool add) {
        auto moved = mem_.hop(step_, from, src, to, dst, lo, hi, add);
        if (!moved) return unexpected(moved.error());
        out_.moved_bytes += *moved;
        return std::monostate{};
    }

    // Participant's partials (read region `read`, dims 1.. in T) of output box `z`
    // (Z coordinates), summed over their dim 0 into `dst`; `first`: dst starts empty.
    void add_partials(const plan::Region &read, const ZRange &z, const ZPoint &shift, const HostBox &dst, bool first) {
        ZPoint start = ZPoint::zeros(read.box.rank()), end = ZPoint::zeros(read.box.rank());
        start[0] = read.box.start()[0];
        end[0] = read.box.end()[0];
        for (int d = 1; d < read.box.rank(); ++d) {
            start[d] = z.start()[d - 1] + shift[d - 1];
            end[d] = z.end()[d - 1] + shift[d - 1];
        }
        const HostBox all = mem_.box_in(read.buffer, ZRange(start, end));
        for (std::int64_t k = 0; k < all.shape[0]; ++k) mem_.move_here(step_, all.slice0(k), dst, 0, dst.elements(), !(first && k == 0));
    }

    // T (partials, [parts, …]) dims 1.. minus Z's coordinates.
    Expected<ZPoint, std::string> partial_shift() const {
        if (s_.reads.empty() || s_.writes.empty()) return unexpected(std::string("it reads or writes nothing"));
        const Tensor *t = plan_.graph.find_tensor(plan_.buffers[static_cast<size_t>(s_.reads.front().buffer)].tensor);
        const Tensor *z = plan_.graph.find_tensor(plan_.buffers[static_cast<size_t>(s_.writes.front().buffer)].tensor);
        if (!t || !z || t->range.rank() != z->range.rank() + 1)
            return unexpected(std::string("it does not sum a partials tensor over its dim 0 into one of a rank less"));
        ZPoint shift = ZPoint::zeros(z->range.rank());
        for (int d = 0; d < z->range.rank(); ++d) shift[d] = t->range.start()[d + 1] - z->range.start()[d];
        return shift;
    }

    // Every participant's sum in its own write box, then ring (reduce-scatter and
    // all-gather of n chunks) or tree (a binary reduction to the first participant,
    // then a binary broadcast).
    Expected<StepOutcome, std::string> all_reduce(bool tree) {
        if (s_.reads.empty() || s_.writes.size() != s_.participants.size())
            return unexpected(std::string("an all_reduce writes one box on each participant"));
        auto shift = partial_shift();
        if (!shift) return unexpected(shift.error());
        const ZRange &z = s_.writes.front().box;
        const std::vector<int> &p = s_.participants;
        std::vector<HostBox> w;
        for (int dev : p) {
            const plan::Region *write = write_on(dev);
            const plan::Region *read = read_on(dev);
            if (!write || !read || !(write->box == z))
                return unexpected(device_text(dev) + " does not read its partials and write the summed box");
            w.push_back(box_of(*write));
            if (mem_.local(dev)) add_partials(*read, z, *shift, w.back(), true);
        }
        const int n = static_cast<int>(w.size());
        const std::int64_t count = w.front().elements();
        auto move = [&](int from, int to, std::int64_t lo, std::int64_t hi, bool add) {
            return hop(p[static_cast<size_t>(from)], w[static_cast<size_t>(from)], p[static_cast<size_t>(to)],
                       w[static_cast<size_t>(to)], lo, hi, add);
        };
        if (tree) {
            for (int stride = 1; stride < n; stride *= 2)
                for (int i = 0; i + stride < n; i += 2 * stride)
                    if (auto m = move(i + stride, i, 0, count, true); !m) return unexpected(m.error());
            int top = 1;
            while (top < n) top *= 2;
            for (int stride = top / 2; stride >= 1; stride /= 2)
                for (int i = 0; i + stride < n; i += 2 * stride)
                    if (auto m = move(i, i + stride, 0, count, false); !m) return unexpected(m.error());
            return out_;
        }
        auto chunk = [&](int c, std::int64_t &lo, std::int64_t &hi) {
            lo = count * c / n;
            hi = count * (c + 1) / n;
        };
        for (int k = 0; k < n - 1; ++k)  // reduce-scatter: chunk (i − k) travels i → i+1, added there
            for (int i = 0; i < n; ++i) {
                std::int64_t lo, hi;
                chunk(((i - k) % n + n) % n, lo, hi);
                if (auto m = move(i, (i + 1) % n, lo, hi, true); !m) return unexpected(m.error());
            }
        for (int k = 0; k < n - 1; ++k)  // all-gather: device i holds chunk (i + 1) summed
            for (int i = 0; i < n; ++i) {
                std::int64_t lo, hi;
                chunk(((i + 1 - k) % n + n) % n, lo, hi);
                if (auto m = move(i, (i + 1) % n, lo, hi, false); !m) return unexpected(m.error());
            }
        return out_;
    }

    // Each write's sum travels the ring from the participant after its owner, each
    // device adding its partials, and lands in the owner's box.
    Expected<StepOutcome, std::string> reduce_scatter() {
        auto shift = partial_shift();
        if (!shift) return unexpected(shift.error());
        const std::vector<int> &p = s_.participants;
        const int n = static_cast<int>(p.size());
        for (const plan::Region &write : s_.writes) {
            const int owner = static_cast<int>(std::find(p.begin(), p.end(), device_of(write)) - p.begin());
            if (owner == n) return unexpected(std::string("a write lies on a device that is not a participant"));
            const HostBox dst = box_of(write);
            // The message in flight: dense, the write's dtype (NCCL's staging buffer).
            auto staged = mem_.staging(step_, dst.dtype, dst.elements());
            if (!staged) return unexpected(staged.error());
            const HostBox msg = *staged;
            for (int h = 1; h <= n; ++h) {
                const int dev = p[static_cast<size_t>((owner + h) % n)];
                const plan::Region *read = read_on(dev);
                if (!read) return unexpected(device_text(dev) + " contributes no partials");
                if (h > 1)  // the message arrives from the previous participant
                    if (auto m = hop(p[static_cast<size_t>((owner + h - 1) % n)], msg, dev, msg, 0, msg.elements(), false); !m)
                        return unexpected(m.error());
                if (!mem_.local(dev)) continue;
                if (h < n) {
                    add_partials(*read, write.box, *shift, msg, h == 1);
                } else {
                    mem_.move_here(step_, msg, dst, 0, dst.elements(), false);
                    add_partials(*read, write.box, *shift, dst, false);
                }
            }
        }
        return out_;
    }

    // Each participant's piece into its own box of the gathered tensor, then ring:
    // at step k device i passes piece (i − k) to device i+1.
    Expected<StepOutcome, std::string> all_gather() {
        const std::vector<int> &p = s_.participants;
        const int n = static_cast<int>(p.size());
        if (s_.writes.size() != p.size() || s_.reads.size() != p.size())
            return unexpected(std::string("an all_gather reads one piece and writes the whole box on each participant"));
        ZRange pieces = s_.reads.front().box;
        for (const plan::Region &r : s_.reads) pieces = pieces.bounding(r.box);
        const ZRange &whole = s_.writes.front().box;
        if (!(whole.shape() == pieces.shape())) return unexpected(std::string("its pieces do not tile the box it gathers"));
        const ZPoint back = whole.start() - pieces.start();
        std::vector<const plan::Region *> piece(p.size()), write(p.size());
        for (size_t i = 0; i < p.size(); ++i) {
            piece[i] = read_on(p[i]);
            write[i] = write_on(p[i]);
            if (!piece[i] || !write[i] || !(write[i]->box == whole))
                return unexpected(device_text(p[i]) + " does not contribute a piece and receive the whole box");
        }
        auto place = [&](size_t holder, size_t k) {  // piece k's box in holder's write buffer
            return mem_.box_in(write[holder]->buffer, piece[k]->box.translated(back));
        };
        for (size_t i = 0; i < p.size(); ++i)
            if (mem_.local(p[i])) {
                const HostBox dst = place(i, i);
                mem_.move_here(step_, box_of(*piece[i]), dst, 0, dst.elements(), false);
            }
        for (int k = 0; k < n - 1; ++k)
            for (int i = 0; i < n; ++i) {
                const size_t which = static_cast<size_t>(((i - k) % n + n) % n);
                const size_t to = static_cast<size_t>((i + 1) % n);
                const HostBox src = place(static_cast<size_t>(i), which);
                if (auto m = hop(p[static_cast<size_t>(i)], src, p[to], place(to, which), 0, src.elements(), false); !m)
                    return unexpected(m.error());
            }
        return out_;
    }

    // The root's box along the chain root → next → … (ring), each receiver
    // forwarding what it received.
    Expected<StepOutcome, std::string> broadcast() {
        if (s_.reads.size() != 1) return unexpected(std::string("a broadcast reads one box, on its root"));
        const int root = device_of(s_.reads.front());
        const std::vector<int> &p = s_.participants;
        const size_t at = static_cast<size_t>(std::find(p.begin(), p.end(), root) - p.begin());
        if (at == p.size()) return unexpected(std::string("its root is not a participant"));
        HostBox from = box_of(s_.reads.front());
        int from_dev = root;
        for (size_t h = 1; h < p.size(); ++h) {
            const int dev = p[(at + h) % p.size()];
            const plan::Region *write = write_on(dev);
            if (!write) return unexpected(device_text(dev) + " receives nothing");
            const HostBox to = box_of(*write);
            if (to.elements() != from.elements()) return unexpected(std::string("a receiver's box differs from the root's"));
            if (auto m = hop(from_dev, from, dev, to, 0, to.elements(), false); !m) return unexpected(m.error());
            from = to;
            from_dev = dev;
        }
        return out_;
    }

    const plan::Plan &plan_;
    int step_;
    const plan::Step &s_;
    BoxMemory &mem_;
    StepOutcome out_;
};

}  // namespace

Expected<StepOutcome, std::string> run_transfer(const plan::Plan &plan, int step, BoxMemory &memory) {
    const plan::Step &s = plan.steps[static_cast<size_t>(step)];
    if (s.reads.size() != 1 || s.writes.size() != 1)
        return unexpected("a " + std::string(plan::step_kind_name(s.kind)) + " reads one box and writes one (it has " +
                          std::to_string(s.reads.size()) + " and " + std::to_string(s.writes.size()) + ")");
    const HostBox src = memory.box_in(s.reads[0].buffer, s.reads[0].box);
    const HostBox dst = memory.box_in(s.writes[0].buffer, s.writes[0].box);
    if (src.elements() != dst.elements()) return unexpected(std::string("its read and write boxes differ in size"));
    const int from = plan.buffers[static_cast<size_t>(s.reads[0].buffer)].device;
    const int to = plan.buffers[static_cast<size_t>(s.writes[0].buffer)].device;
    auto moved = memory.hop(step, from, src, to, dst, 0, dst.elements(), false);
    if (!moved) return unexpected(moved.error());
    return StepOutcome{*moved};
}

Expected<StepOutcome, std::string> run_collective(const plan::Plan &plan, int step, BoxMemory &memory) {
    return Collective(plan, step, memory).run();
}

}  // namespace tapestry::launch
