// Hand baselines (docs/plans.md), built through the same passes, compiler and
// cost model as any plan:
//  * dp: data parallel — the batch (index dim 0 of the first operation,
//    propagated) split over every device, parameters replicated;
//  * tp: Megatron-style tensor parallel — linears/matmuls alternately
//    column-parallel (output features split) and row-parallel (contraction split:
//    partials and one all-reduce per pair), attention split by heads;
//  * pp: a layer-wise pipeline — operations cut into one stage per device by
//    FLOPs, the batch cut into micro-batches flowing through them;
//  * dp×tp: tp groups of consecutive devices (one node), dp groups over them.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "ops/fusion.h"
#include "passes/shard.h"
#include "passes/stage.h"

namespace tapestry::plan {

enum class Baseline { dp, tp, pp, dp_tp };
// "dp", "tp", "pp", "dp×tp" (or "dpxtp", "dp_tp").
Expected<Baseline, std::string> parse_baseline(const std::string &text);
const char *baseline_name(Baseline b);

struct BaselineOptions {
    Baseline kind = Baseline::dp;
    std::vector<std::string> devices;  // device names, in cluster order
    int tp = 0;              // dp×tp: the tensor-parallel degree (0: the devices of one node, at most 8)
    int devices_per_node = 8;
    int micro_batches = 0;   // pp: 0 = as many as stages (capped by the batch)
    bool certify = true;     // certify each stage against the input graph
};

// The stages (shard, then place) the baseline applies to `g`, certified. Errors
// name the baseline and why it does not fit: "dp on 16 devices: the batch (dim 0
// of 'ln_1', extent 8) cannot be split 16 ways".
Expected<std::vector<Stage>, std::string> baseline_stages(const Graph &g, const BaselineOptions &options);

// The shard specs of the batch split (dim 0 of the first operation into `parts`,
// stated for every operation the split propagates to) and of Megatron tensor
// parallelism (linears and matmuls alternately column- and row-parallel, attention
// by heads) — the specs the dp, dp×tp and tp baselines apply; the search starts
// from them. `who` prefixes errors ("dp on 16 devices").
Expected<std::vector<ShardSpec>, std::string> batch_specs(const Graph &g, int parts, const std::string &who);
Expected<std::vector<ShardSpec>, std::string> tensor_specs(const Graph &g, int parts, const std::string &who);

// `g` with every operation's shards dropped: what a baseline or the search starts
// from, as each decides the whole sharding.
Graph without_shards(const Graph &g);

}  // namespace tapestry::plan
