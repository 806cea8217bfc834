// The substitution pass: encode → run_rewrites → extract_greedy → decode, every
// change through the RecordingRewriter, so its log is the stage diff and the nodes
// the extraction keeps are the input's own pointers.
#include "passes/substitute.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "passes/rules.h"

namespace tapestry {

namespace {

std::string cost_text(double c) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", c);
    return buf;
}

}  // namespace

const std::vector<std::string> &substitution_goals() {
    static const std::vector<std::string> goals{"expand", "fuse"};
    return goals;
}

Expected<Stage, std::string> substitute(const Graph &g, const SubstituteOptions &options) {
    const OpLibrary &library = options.library ? *options.library : OpLibrary::standard();
    const auto &goals = substitution_goals();
    if (std::find(goals.begin(), goals.end(), options.goal) == goals.end())
        return unexpected("substitute: unknown goal '" + options.goal + "' (goals: expand, fuse)");
    const std::vector<std::string> names = options.rules.empty() ? default_rewrite_names() : options.rules;
    auto rules = rewrites_by_name(names, library);
    if (!rules) return unexpected("substitute: " + rules.error());

    CostModel model = options.cost;
    model.penalized.clear();
    if (options.goal == "expand")
        for (const Rewrite &r : *rules)
            if (r.direction == Rewrite::Direction::expand) model.penalized.insert(r.root_kind);

    GraphEncoding encoding = encode_graph(g, library);
    const RunReport report = run_rewrites(encoding.egraph, *rules, options.limits);
    const Extraction extraction = extract_greedy(encoding.egraph, model);

    Stage stage;
    stage.pass = "substitute";
    std::string rule_list;
    for (const std::string &n : names) rule_list += (rule_list.empty() ? "" : ",") + n;
    stage.options = "goal=" + options.goal + " rules=" + rule_list;
    stage.input = g;
    stage.graph = g;
    RecordingRewriter rewriter(stage.graph);
    decode_graph(encoding, extraction, rewriter);
    stage.diff = rewriter.take();

    CostModel plain = options.cost;
    plain.penalized.clear();
    std::ostringstream s;
    s << report.iterations << (report.iterations == 1 ? " iteration (" : " iterations (")
      << stop_reason_name(report.stop) << "), " << report.nodes << " e-nodes in " << report.classes
      << " classes, rules fired: ";
    bool any = false;
    for (const std::string &n : names) {
        auto it = report.fired.find(n);
        if (it == report.fired.end() || it->second == 0) continue;
        s << (any ? ", " : "") << n << "×" << it->second;
        any = true;
    }
    if (!any) s << "none";
    s << "; extracted cost " << cost_text(graph_cost(g, library, plain)) << " → "
      << cost_text(graph_cost(stage.graph, library, plain));
    stage.summary = s.str();
    if (options.certify) {
        CertifyOptions c = *options.certify;
        if (!c.library) c.library = &library;
        stage.certificate = certify(g, stage.graph, c);
    }
    return stage;
}

}  // namespace tapestry
