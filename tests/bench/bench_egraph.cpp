// E-graph size and time per rule set (issue 5): the GPT-2 block of projects/ and a
// stack of 24 such blocks, each through encode → run_rewrites → extract_greedy →
// decode. The baseline of each row is encoding the same graph (graph → e-graph), so
// the ratio column says how much saturation costs over just building the e-graph.
//
//   bench_egraph [--project PATH] [--layers N] [--runs N]   (run from the repository root,
//   or set TAPESTRY_SOURCE_DIR)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/project_file.h"
#include "passes/rules.h"
#include "passes/substitute.h"

using namespace tapestry;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// `layers` copies of the block, layer L's input the output of layer L − 1. Parameters
// and intermediates are renamed "lL.id"; the first input and the last output keep
// their roles.
Graph stack(const Graph &block, int layers) {
    TensorId in, out;
    for (const TensorPtr &t : block.tensors()) {
        if (t->role == TensorRole::input) in = t->id;
        if (t->role == TensorRole::output) out = t->id;
    }
    Graph g;
    g.name = block.name + " x" + std::to_string(layers);
    auto rename = [&](const TensorId &id, int l) {
        if (id == in) return l == 0 ? id : TensorId("l" + std::to_string(l - 1) + "." + out.value);
        return TensorId("l" + std::to_string(l) + "." + id.value);
    };
    for (int l = 0; l < layers; ++l) {
        for (const TensorPtr &t : block.tensors()) {
            if (t->id == in && l > 0) continue;
            Tensor c = *t;
            c.id = rename(t->id, l);
            c.name = c.id.value;
            if (t->id == out && l + 1 < layers) c.role = TensorRole::intermediate;
            g.put_tensor(std::move(c));
        }
        for (const OpPtr &op : block.operations()) {
            Operation c = *op;
            c.id = OpId("l" + std::to_string(l) + "." + op->id.value);
            c.name = c.id.value;
            c.shards.clear();
            for (auto *ports : {&c.inputs, &c.outputs})
                for (PortBinding &p : *ports)
                    for (TensorSelection &s : p.selections) s.tensor = rename(s.tensor, l);
            g.put_op(std::move(c));
        }
    }
    return g;
}

struct RuleSet {
    const char *name;
    std::vector<std::string> rules;
    const char *goal;
};

}  // namespace

int main(int argc, char **argv) {
    const char *root = std::getenv("TAPESTRY_SOURCE_DIR");
    std::string project = std::string(root ? root : ".") + "/projects/gpt2_block.tapestry.json";
    int layers = 24, runs = 3;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--project") && i + 1 < argc) project = argv[++i];
        else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc) layers = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: bench_egraph [--project PATH] [--layers N] [--runs N]\n");
            return 2;
        }
    }
    LoadResult r = load_project(project);
    if (!r.ok()) {
        std::fprintf(stderr, "bench_egraph: %s does not load\n", project.c_str());
        return 1;
    }
    const std::vector<RuleSet> sets{
        {"default (expand)", {}, "expand"},
        {"linear split+fuse", {"linear-split", "linear-fuse"}, "fuse"},
        {"norms both ways", {"layernorm-expand", "layernorm-fuse", "rmsnorm-expand", "rmsnorm-fuse"}, "fuse"},
        {"k-split", {"matmul-ksplit", "linear-split"}, "expand"},
        {"all (no assoc/comm)",
         {"linear-split", "linear-fuse", "attention-expand", "layernorm-expand", "layernorm-fuse", "transpose-transpose",
          "reshape-reshape", "matmul-ksplit"},
         "expand"},
        {"all + assoc/comm", {}, "expand"},
    };
    std::vector<std::string> everything;
    for (const Rewrite &w : standard_rewrites())
        if (std::find(everything.begin(), everything.end(), w.name) == everything.end()) everything.push_back(w.name);

    std::printf("e-graph size and time per rule set (median of %d runs; baseline: encoding the graph)\n", runs);
    std::printf("%-12s %-22s %5s %-16s %8s %8s %10s %10s %8s %s\n", "graph", "rule set", "iters", "stopped by",
                "classes", "e-nodes", "encode ms", "total ms", "ratio", "summary");
    for (const auto &[label, g] : {std::pair<std::string, Graph>{"gpt2 block", r.graph},
                                   std::pair<std::string, Graph>{std::to_string(layers) + " blocks", stack(r.graph, layers)}}) {
        for (const RuleSet &set : sets) {
            std::vector<std::string> names = set.rules;
            if (std::string(set.name) == "all + assoc/comm") names = everything;
            if (names.empty()) names = default_rewrite_names();
            auto rules = rewrites_by_name(names);
            if (!rules) {
                std::fprintf(stderr, "bench_egraph: %s\n", rules.error().c_str());
                return 1;
            }
            std::vector<double> encode_times, total_times;
            RunReport report;
            std::string summary;
            for (int k = 0; k < runs; ++k) {
                auto t0 = std::chrono::steady_clock::now();
                GraphEncoding enc = encode_graph(g);
                encode_times.push_back(seconds_since(t0));
                auto t1 = std::chrono::steady_clock::now();
                SubstituteOptions o;
                o.rules = names;
                o.goal = set.goal;
                auto stage = substitute(g, o);
                total_times.push_back(seconds_since(t1));
                if (!stage) {
                    std::fprintf(stderr, "bench_egraph: %s\n", stage.error().c_str());
                    return 1;
                }
                summary = stage->summary;
                report = run_rewrites(enc.egraph, *rules, SubstituteOptions{}.limits);
            }
            std::sort(encode_times.begin(), encode_times.end());
            std::sort(total_times.begin(), total_times.end());
            const double enc = encode_times[encode_times.size() / 2], tot = total_times[total_times.size() / 2];
            const auto cost = summary.find("extracted cost");
            std::printf("%-12s %-22s %5d %-16s %8zu %8zu %10.2f %10.2f %8.1f %s\n", label.c_str(), set.name,
                        report.iterations, stop_reason_name(report.stop).c_str(), report.classes, report.nodes,
                        enc * 1e3, tot * 1e3, tot / std::max(enc, 1e-9),
                        cost == std::string::npos ? "" : summary.substr(cost).c_str());
        }
    }
    return 0;
}
