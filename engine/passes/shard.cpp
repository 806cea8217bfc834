// The sharding pass: parse specs, check them against the op's index space, and
// replace each named op by one whose shards split the chosen dim. Every change
// goes through the RecordingRewriter, so its log is the stage diff and untouched
// nodes keep their pointers.
#include "passes/shard.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "graph/delta.h"
#include "graph/resolve.h"
#include "ops/library.h"
#include "passes/monoid_split.h"
#include "passes/movement.h"
#include "passes/propagate.h"

namespace tapestry {
namespace {

std::optional<std::int64_t> parse_int(const std::string &s) {
    std::int64_t v = 0;
    const char *end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, v);
    if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return v;
}

std::string join_sizes(const std::vector<Coord> &sizes) {
    std::string out;
    for (size_t i = 0; i < sizes.size(); ++i) out += (i ? "+" : "") + std::to_string(sizes[i]);
    return out;
}

// The sizes a piece of extent `extent` is split into, or an error naming the spec.
Expected<std::vector<Coord>, std::string> part_sizes(const ShardSpec &spec, Coord extent, const std::string &where) {
    const std::string prefix = "shard spec '" + spec.text + "': ";
    if (!spec.sizes.empty()) {
        const Coord sum = std::accumulate(spec.sizes.begin(), spec.sizes.end(), Coord{0});
        if (sum != extent)
            return unexpected(prefix + "sizes " + join_sizes(spec.sizes) + " sum to " + std::to_string(sum) + ", but " +
                              where + " has extent " + std::to_string(extent));
        return spec.sizes;
    }
    if (spec.count > extent)
        return unexpected(prefix + "cannot split " + where + " (extent " + std::to_string(extent) + ") into " +
                          std::to_string(spec.count) + " parts");
    std::vector<Coord> sizes;
    for (int p = 0; p < spec.count; ++p) sizes.push_back(extent / spec.count + (p < extent % spec.count ? 1 : 0));
    return sizes;
}

std::vector<ZRange> cut(const ZRange &r, int dim, const std::vector<Coord> &sizes) {
    std::vector<ZRange> out;
    Coord pos = r.start()[dim];
    for (Coord size : sizes) {
        ZPoint start = r.start(), end = r.end();
        start[dim] = pos;
        end[dim] = pos + size;
        out.emplace_back(start, end);
        pos += size;
    }
    return out;
}

struct Applied {
    std::string text;  // "fc1 dim 0 → 4 shards (128 each)"
};

Expected<Applied, std::string> apply_spec(RecordingRewriter &rw, const ShardSpec &spec, const SignatureSource &lib) {
    const std::string prefix = "shard spec '" + spec.text + "': ";
    const Graph &g = rw.graph();
    const OpPtr op = g.op_ptr(spec.op);
    if (!op) {
        // An earlier spec may have split this op's contraction (passes/monoid_split.h).
        const std::string &name = spec.op.value;
        std::string hint;
        if (g.find_op(OpId(name + ".reduce")))
            hint = " (an earlier spec split its contraction: name '" + name +
                   (g.find_op(OpId(name + ".partial")) ? ".partial'" : ".partial.0' …") + " or '" + name + ".reduce')";
        return unexpected(prefix + "unknown operation '" + name + "'" + hint);
    }
    auto derived = resolve(g, *op, lib);
    if (!derived)
        return unexpected(prefix + "operation '" + op->id.value + "' does not resolve: " + derived.error().message);
    const Signature &sig = derived->signature;
    const ZRange &space = sig.index_space;
    if (spec.dim < 0 || spec.dim >= space.rank()) {
        // Contractions (matmul's k, linear's in, reduced axes) are named by the dims
        // past the index dims; they split through the monoid rewrite (passes/monoid_split.h).
        const std::vector<Contraction> contractions = contractions_of(g, *op, lib);
        std::string named;
        for (const Contraction &c : contractions) {
            if (spec.dim == c.dim) {
                auto split = split_contraction(rw, spec, lib);
                if (!split) return unexpected(split.error());
                return Applied{*split};
            }
            named += (named.empty() ? "" : ", ") + c.name + " as dim " + std::to_string(c.dim);
        }
        return unexpected(prefix + "dim " + std::to_string(spec.dim) + " is out of range: '" + op->id.value +
                          "' has a " + std::to_string(space.rank()) + "-dim index space " + range_text(space) +
                          (named.empty() ? std::string()
                                         : (contractions.size() == 1 ? " and its contraction " : " and its contractions ") +
                                               named));
    }
    if (sig.is_reduction_dim(spec.dim))
        return unexpected(prefix + "dim " + std::to_string(spec.dim) + " of " + op->id.value +
                          " is a reduction with no monoid split for kind '" + op->kind + "' (contractions of matmul/linear and the reduced axes of reduce_* split)");

    Operation next = *op;
    next.shards.clear();
    std::vector<Coord> first_sizes;
    const std::string dim_name = "dim " + std::to_string(spec.dim) + " of '" + op->id.value + "'";
    if (op->shards.empty()) {
        auto sizes = part_sizes(spec, space.extent(spec.dim), dim_name);
        if (!sizes) return unexpected(sizes.error());
        first_sizes = sizes.value();
        const auto ranges = cut(space, spec.dim, first_sizes);
        for (size_t k = 0; k < ranges.size(); ++k)
            next.shards.push_back(Shard{ShardId(op->id.value + "/" + std::to_string(k)), ranges[k], "", {}, {}});
    } else {
        for (const Shard &parent : op->shards) {
            if (parent.index.rank() != space.rank())
                return unexpected(prefix + "shard '" + parent.id.value + "' of '" + op->id.value +
                                  "' has index range of the wrong rank " + parent.index.to_string());
            auto sizes = part_sizes(spec, parent.index.extent(spec.dim),
                                    "dim " + std::to_string(spec.dim) + " of shard '" + parent.id.value + "'");
            if (!sizes) return unexpected(sizes.error());
            if (first_sizes.empty()) first_sizes = sizes.value();
            const auto ranges = cut(parent.index, spec.dim, sizes.value());
            const bool stated = !parent.inputs.empty() || !parent.outputs.empty();
            for (size_t j = 0; j < ranges.size(); ++j) {
                Shard s{ShardId(parent.id.value + "." + std::to_string(j)), ranges[j], parent.device, {}, {}};
                if (stated) {  // keep a file that states shard selections consistent
                    ShardSelections sel = derive_shard_selections(g, *op, sig, ranges[j]);
                    s.inputs = std::move(sel.inputs);
                    s.outputs = std::move(sel.outputs);
                }
                next.shards.push_back(std::move(s));
            }
        }
    }
    const size_t before = op->shards.size();
    const size_t after = next.shards.size();
    rw.put_op(std::move(next));

    std::string text = op->id.value + " dim " + std::to_string(spec.dim) + " into " +
                       std::to_string(spec.sizes.empty() ? spec.count : static_cast<int>(spec.sizes.size()));
    if (!spec.sizes.empty())
        text += " (" + join_sizes(spec.sizes) + ")";
    else if (std::all_of(first_sizes.begin(), first_sizes.end(), [&](Coord s) { return s == first_sizes.front(); }))
        text += " (" + std::to_string(first_sizes.front()) + " each)";
    else
        text += " (" + join_sizes(first_sizes) + ")";
    if (before > 0) text += ", product with its " + std::to_string(before) + " shards";
    text += ": " + std::to_string(after) + (after == 1 ? " shard" : " shards");
    return Applied{text};
}

}  // namespace

Expected<ShardSpec, std::string> parse_shard_spec(const std::string &text) {
    const std::string prefix = "shard spec '" + text + "': ";
    const size_t eq = text.find('=');
    const size_t colon = eq == std::string::npos ? text.rfind(':') : text.rfind(':', eq);
    if (eq == std::string::npos || colon == std::string::npos || colon == 0)
        return unexpected(prefix + "expected op:dim=parts, e.g. fc1:0=4 or fc1:0=3+5+2");
    ShardSpec spec;
    spec.text = text;
    spec.op = OpId(text.substr(0, colon));
    const std::string dim = text.substr(colon + 1, eq - colon - 1);
    auto d = parse_int(dim);
    if (!d || *d < 0 || *d > 1024)
        return unexpected(prefix + "dim '" + dim + "' is not a dimension number (dims are numbered from 0)");
    spec.dim = static_cast<int>(*d);
    const std::string parts = text.substr(eq + 1);
    if (parts.find('+') == std::string::npos) {
        auto n = parse_int(parts);
        if (!n || *n < 1 || *n > 65536)
            return unexpected(prefix + "part count '" + parts + "' is not a whole number 1 … 65536");
        spec.count = static_cast<int>(*n);
        return spec;
    }
    size_t pos = 0;
    while (true) {
        const size_t plus = parts.find('+', pos);
        const std::string piece = parts.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
        auto n = parse_int(piece);
        if (!n || *n < 1 || *n > kMaxCoordinate)
            return unexpected(prefix + "size '" + piece + "' is not a whole number 1 … " + std::to_string(kMaxCoordinate));
        spec.sizes.push_back(*n);
        if (plus == std::string::npos) break;
        pos = plus + 1;
    }
    return spec;
}

Expected<ShardOptions, std::string> parse_shard_options(const std::vector<std::string> &specs) {
    ShardOptions options;
    for (const std::string &text : specs) {
        auto spec = parse_shard_spec(text);
        if (!spec) return unexpected(spec.error());
        options.specs.push_back(std::move(spec).value());
    }
    return options;
}

Expected<Stage, std::string> shard(const Graph &g, const ShardOptions &options) {
    const SignatureSource &lib = options.library ? *options.library : OpLibrary::standard();
    Stage stage;
    stage.pass = "shard";
    stage.input = g;
    Graph out = g;
    RecordingRewriter rw(out);
    std::vector<std::pair<std::string, std::string>> done;  // (op, what happened to it)
    for (const ShardSpec &spec : options.specs) {
        stage.options += (stage.options.empty() ? "" : " ") + spec.text;
        auto applied = apply_spec(rw, spec, lib);
        if (!applied) return unexpected(applied.error());
        const std::string &text = applied->text;
        const bool prefixed = text.rfind(spec.op.value + " ", 0) == 0;
        done.emplace_back(prefixed ? spec.op.value : std::string(),
                          prefixed ? text.substr(spec.op.value.size() + 1) : text);
    }
    // One clause per spec while the line stays readable; beyond that, specs that did
    // the same thing are counted together ("312 ops dim 0 into 4 (2 each): 4 shards
    // (b0_ln_1 … b23_residual_2)").
    std::string summary;
    if (done.size() <= 6) {
        for (const auto &[op, what] : done) summary += (summary.empty() ? "" : "; ") + (op.empty() ? what : op + " " + what);
    } else {
        std::vector<std::pair<std::string, std::vector<std::string>>> groups;
        for (const auto &entry : done) {
            auto it = std::find_if(groups.begin(), groups.end(),
                                   [&entry](const auto &grp) { return grp.first == entry.second; });
            if (it == groups.end()) groups.push_back({entry.second, {entry.first}});
            else it->second.push_back(entry.first);
        }
        for (const auto &[what, ops] : groups) {
            std::string clause;
            if (ops.size() == 1) clause = ops[0].empty() ? what : ops[0] + " " + what;
            else clause = std::to_string(ops.size()) + " ops " + what + " (" + ops.front() + " … " + ops.back() + ")";
            summary += (summary.empty() ? "" : "; ") + clause;
        }
    }
    stage.summary = summary.empty() ? "nothing to shard" : "split " + summary;
    if (options.propagate) {
        const size_t n = propagate_shardings(rw, lib).size();
        if (n > 0) stage.summary += "; propagated to " + std::to_string(n) + (n == 1 ? " op" : " ops");
    }
    if (options.movement) {
        insert_data_movement(rw, lib, options.movement_memo);
        if (options.describe_movement) {
            const std::vector<Transfer> moves = data_movement(rw.graph(), lib);
            if (!moves.empty()) stage.summary += "; " + movement_summary(moves);
        }
    }
    stage.diff = rw.take();
    stage.graph = std::move(out);
    if (options.certify) stage.certificate = certify(g, stage.graph, *options.certify);
    return stage;
}

}  // namespace tapestry
