// DOT export, rendering and layout through Graphviz's C library (gvc/cgraph).
// Graphviz keeps global state (error handlers, the lexer, plugin tables) and is
// not thread-safe, so every call into it is made while holding one process-wide
// mutex, and one GVC_t context lives for the whole process.
#include "io/graphviz.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>

#include "graph/resolve.h"

namespace tapestry {
namespace {

// ---------------------------------------------------------------------------
// The one place that talks to Graphviz.

std::mutex &graphviz_mutex() {
    static std::mutex m;
    return m;
}

// Messages Graphviz reports through agerr while the mutex is held.
std::string &graphviz_messages() {
    static std::string text;
    return text;
}

int capture_graphviz_message(char *message) {
    if (message) graphviz_messages() += message;
    return 0;
}

// The process-wide context, created on first use. Caller holds the mutex.
// gvContext() loads the plugins listed in the installed config (Debian:
// /usr/lib/x86_64-linux-gnu/graphviz/config6a): dot layout, core (svg, dot),
// cairo and gd (png).
GVC_t *graphviz_context() {
    static GVC_t *context = nullptr;
    if (!context) {
        agseterrf(&capture_graphviz_message);
        agseterr(AGWARN);
        context = gvContext();
    }
    return context;
}

// Graphviz's messages since the last call, errors first, trimmed to one line each.
std::string take_graphviz_errors() {
    std::string all;
    all.swap(graphviz_messages());
    std::istringstream in(all);
    std::string line, errors, warnings;
    while (std::getline(in, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty()) continue;
        std::string &dest = line.rfind("Warning", 0) == 0 ? warnings : errors;
        dest += (dest.empty() ? "" : "; ") + line;
    }
    if (!errors.empty()) return errors;
    return warnings;
}

// ---------------------------------------------------------------------------
// Text helpers.

// Valid UTF-8 with control characters replaced, so that expat (which parses
// Graphviz's HTML labels) never rejects a label built from user strings.
std::string clean_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
            ++i;
            continue;
        }
        int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
        for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) >> 6) == 0x2;
        if (ok) {
            out.append(s.substr(i, static_cast<size_t>(len)));
            i += static_cast<size_t>(len);
        } else {
            out += "\xEF\xBF\xBD";  // U+FFFD
            ++i;
        }
    }
    return out;
}

// Text for an HTML-like label: entities for the five XML specials.
std::string html(std::string_view s) {
    std::string out;
    for (char c : clean_utf8(s)) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// A DOT identifier built from a user id: letters and digits stay, everything else
// becomes _XX (hex), '_' becomes "__" — injective, and safe inside quotes.
std::string dot_id(std::string_view prefix, std::string_view id) {
    static const char *hex = "0123456789abcdef";
    std::string out(prefix);
    for (char ch : id) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            out += ch;
        } else if (c == '_') {
            out += "__";
        } else {
            out += '_';
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    return '"' + out + '"';
}

std::string tensor_node(const TensorId &id) { return dot_id("tensor_", id.value); }
std::string op_node(const OpId &id) { return dot_id("op_", id.value); }
std::string projection_node(const OpId &id) { return dot_id("projections_", id.value); }
std::string cluster_name(const OpId &id) { return dot_id("cluster_op_", id.value); }
std::string shard_node(const OpId &op, size_t index) {
    return dot_id("shard_" + std::to_string(index) + "_", op.value);
}

std::string shape_text(const ZPoint &shape) {
    std::string s = "\xE2\x80\x96";  // ‖
    for (int d = 0; d < shape.rank(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "\xE2\x80\x96";
}

// ---------------------------------------------------------------------------
// Colours: Tapestry's palette, assigned by greedy colouring of the
// tensor/operation adjacency graph (plus tensors sharing an operation) so that
// neighbours differ.

constexpr const char *kPalette[] = {"#f43143", "#01be5e", "#088ce4", "#7a50f0", "#a938bc", "#e6518f", "#455d75"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

// `colour` mixed with white; amount 0 = colour, 1 = white.
std::string tint(const std::string &colour, double amount) {
    unsigned r = 0, g = 0, b = 0;
    std::sscanf(colour.c_str(), "#%02x%02x%02x", &r, &g, &b);
    auto mix = [&](unsigned v) { return static_cast<unsigned>(v + (255.0 - v) * amount + 0.5); };
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(r) & 0xff, mix(g) & 0xff, mix(b) & 0xff);
    return buf;
}

struct Colours {
    std::map<TensorId, std::string> tensor;
    std::map<OpId, std::string> op;
};

Colours colour_graph(const Graph &g) {
    // Nodes: tensors 0..T-1, then operations T..T+O-1.
    const size_t nt = g.tensors().size();
    std::vector<std::set<size_t>> adjacent(nt + g.operations().size());
    for (size_t o = 0; o < g.operations().size(); ++o) {
        const Operation &op = *g.operations()[o];
        auto link = [&](const TensorId &t) {
            const int ti = g.tensor_index(t);
            if (ti < 0) return;
            adjacent[nt + o].insert(static_cast<size_t>(ti));
            adjacent[static_cast<size_t>(ti)].insert(nt + o);
        };
        std::vector<size_t> touched;
        for (const std::vector<TensorId> &list : {op.input_tensors(), op.output_tensors()})
            for (const TensorId &t : list) {
                link(t);
                if (const int ti = g.tensor_index(t); ti >= 0) touched.push_back(static_cast<size_t>(ti));
            }
        // Tensors meeting at one operation are neighbours too, so that the ribbons
        // entering and leaving an operation can be told apart.
        for (size_t a : touched)
            for (size_t b : touched)
                if (a != b) adjacent[a].insert(b);
    }
    // Colour in graph order, operations interleaved after the tensors they read,
    // which is the order a reader meets them.
    std::vector<int> colour(adjacent.size(), -1);
    auto pick = [&](size_t node) {
        std::vector<int> used(kPaletteSize, 0);
        for (size_t n : adjacent[node])
            if (colour[n] >= 0) ++used[static_cast<size_t>(colour[n])];
        // The first free colour; when every colour is taken, the least used.
        size_t best = 0;
        for (size_t c = 0; c < kPaletteSize; ++c)
            if (used[c] < used[best]) best = c;
        for (size_t c = 0; c < kPaletteSize; ++c)
            if (used[c] == 0) {
                best = c;
                break;
            }
        colour[node] = static_cast<int>(best);
    };
    for (size_t o = 0; o < g.operations().size(); ++o) {
        for (const TensorId &t : g.operations()[o]->input_tensors()) {
            const int ti = g.tensor_index(t);
            if (ti >= 0 && colour[static_cast<size_t>(ti)] < 0) pick(static_cast<size_t>(ti));
        }
        pick(nt + o);
        for (const TensorId &t : g.operations()[o]->output_tensors()) {
            const int ti = g.tensor_index(t);
            if (ti >= 0 && colour[static_cast<size_t>(ti)] < 0) pick(static_cast<size_t>(ti));
        }
    }
    for (size_t t = 0; t < nt; ++t)
        if (colour[t] < 0) pick(t);

    Colours out;
    for (size_t t = 0; t < nt; ++t) out.tensor[g.tensors()[t]->id] = kPalette[colour[t]];
    for (size_t o = 0; o < g.operations().size(); ++o)
        out.op[g.operations()[o]->id] = kPalette[colour[nt + o]];
    return out;
}

// ---------------------------------------------------------------------------
// Labels.

constexpr const char *kTitleColour = "#0f7b83";  // teal titles, as Tapestry's
constexpr const char *kAliasGradient = "#C5E8EE:#E9C5EF";
constexpr const char *kErrorColour = "#d00000";

std::string title_row(const char *title, int colspan) {
    return "<TR><TD COLSPAN=\"" + std::to_string(colspan) + "\" ALIGN=\"LEFT\"><FONT POINT-SIZE=\"16\" COLOR=\"" +
           kTitleColour + "\"><B>" + title + "</B></FONT></TD></TR>";
}

std::string key_value_row(const std::string &key, const std::string &value_html, int value_span = 1) {
    return "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"#555555\">" + html(key) + "</FONT></TD><TD ALIGN=\"LEFT\" COLSPAN=\"" +
           std::to_string(value_span) + "\">" + value_html + "</TD></TR>";
}

// Name (in quotes) and id (on the alias gradient), or just the id when they agree.
std::string name_rows(const std::string &name, const std::string &id, int colspan) {
    const std::string span = std::to_string(colspan);
    std::string rows;
    if (!name.empty() && name != id)
        rows += "<TR><TD COLSPAN=\"" + span + "\" ALIGN=\"LEFT\">&quot;" + html(name) + "&quot;</TD></TR>";
    rows += "<TR><TD COLSPAN=\"" + span + "\" BGCOLOR=\"" + kAliasGradient + "\">\xC2\xAB" + html(id) +
            "\xC2\xBB</TD></TR>";
    return rows;
}

std::string tensor_label(const Tensor &t) {
    std::string s = "<<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"2\">";
    s += title_row("Tensor", 2);
    s += name_rows(t.name, t.id.value, 2);
    s += key_value_row("dtype", std::string(dtype_name(t.dtype)));
    s += key_value_row("range", html(t.range.to_string()));
    s += key_value_row("shape", html(shape_text(t.shape())));
    s += key_value_row("role", std::string(role_name(t.role)));
    if (t.data) s += key_value_row("data", html(*t.data));
    s += "</TABLE>>";
    return s;
}

std::string selection_text(const Graph &g, const TensorSelection &sel) {
    const Tensor *t = g.find_tensor(sel.tensor);
    std::string s = sel.tensor.value;
    if (!t || t->range != sel.range) s += " " + sel.range.to_string();
    return s;
}

// Port rows of an operation: key (rowspan) | port | selections.
std::string port_rows(const Graph &g, const char *key, const std::vector<PortBinding> &ports) {
    std::vector<std::pair<std::string, std::string>> rows;
    for (const PortBinding &p : ports) {
        if (p.selections.empty()) rows.emplace_back(p.name, "(none)");
        for (size_t i = 0; i < p.selections.size(); ++i) {
            const std::string port = p.selections.size() > 1 ? p.name + "[" + std::to_string(i) + "]" : p.name;
            rows.emplace_back(port, selection_text(g, p.selections[i]));
        }
    }
    if (rows.empty()) return "";
    std::string s;
    for (size_t i = 0; i < rows.size(); ++i) {
        s += "<TR>";
        if (i == 0)
            s += "<TD ROWSPAN=\"" + std::to_string(rows.size()) +
                 "\" ALIGN=\"LEFT\" VALIGN=\"TOP\"><FONT COLOR=\"#555555\">" + key + "</FONT></TD>";
        s += "<TD ALIGN=\"LEFT\"><B>" + html(rows[i].first) + "</B></TD><TD ALIGN=\"LEFT\">" + html(rows[i].second) +
             "</TD></TR>";
    }
    return s;
}

std::string operation_label(const Graph &g, const Operation &op,
                            const Expected<Derivation, DerivationError> &resolved) {
    std::string s = "<<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"2\">";
    s += title_row("Operation", 3);
    s += "<TR><TD COLSPAN=\"3\" ALIGN=\"LEFT\"><FONT POINT-SIZE=\"14\"><B>" + html(op.kind) + "</B></FONT></TD></TR>";
    s += name_rows(op.name, op.id.value, 3);
    if (resolved) s += key_value_row("index", html(resolved->signature.index_space.to_string()), 2);
    for (const auto &[name, value] : op.params.values()) s += key_value_row(name, html(param_to_string(value)), 2);
    s += port_rows(g, "in", op.inputs);
    s += port_rows(g, "out", op.outputs);
    if (!resolved) {
        const DerivationError &e = resolved.error();
        std::string where = e.field.empty() ? "" : e.field + ": ";
        s += "<TR><TD COLSPAN=\"3\" ALIGN=\"LEFT\"><FONT COLOR=\"" + std::string(kErrorColour) + "\">" +
             html(e.code) + " " + html(where + e.message) + "</FONT></TD></TR>";
    }
    s += "</TABLE>>";
    return s;
}

// An augmented matrix [A | b | window], one line per tensor dim, columns aligned
// with non-breaking spaces (HTML labels collapse nothing, but fonts vary).
std::string augmented_matrix(const IndexProjection &p) {
    const ZMatrix &a = p.map().matrix();
    const int rows = a.rows(), cols = a.cols();
    std::vector<size_t> width(static_cast<size_t>(cols) + 2, 1);
    auto cell = [&](int r, int c) -> Coord {
        if (c < cols) return a.at(r, c);
        if (c == cols) return p.map().offset()[r];
        return p.window()[r];
    };
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols + 2; ++c)
            width[static_cast<size_t>(c)] = std::max(width[static_cast<size_t>(c)], std::to_string(cell(r, c)).size());
    if (rows == 0) return "[ ]";
    std::string s;
    for (int r = 0; r < rows; ++r) {
        if (r) s += "<BR ALIGN=\"LEFT\"/>";
        s += "[";
        for (int c = 0; c < cols + 2; ++c) {
            if (c == cols || c == cols + 1) s += " |";
            if (c > 0) s += " ";
            const std::string v = std::to_string(cell(r, c));
            for (size_t k = v.size(); k < width[static_cast<size_t>(c)]; ++k) s += "&#160;";
            s += v;
        }
        s += "]";
    }
    return s + "<BR ALIGN=\"LEFT\"/>";
}

std::string projection_label(const Operation &op, const Derivation &d) {
    std::string s = "<<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"3\" COLOR=\"#2a7f62\">";
    s += "<TR><TD COLSPAN=\"2\" BORDER=\"0\" ALIGN=\"LEFT\"><FONT POINT-SIZE=\"14\" COLOR=\"" + std::string(kTitleColour) +
         "\"><B>IPFSignature</B></FONT> " + html(op.kind) + " \xC2\xAB" + html(op.id.value) + "\xC2\xBB</TD></TR>";
    s += "<TR><TD BORDER=\"0\" ALIGN=\"LEFT\">index</TD><TD BORDER=\"0\" ALIGN=\"LEFT\">" +
         html(d.signature.index_space.to_string()) + "</TD></TR>";
    s += "<TR><TD BORDER=\"0\" ALIGN=\"LEFT\"><I>port</I></TD><TD BORDER=\"0\" ALIGN=\"LEFT\"><I>[A | b | window]</I></TD></TR>";
    auto ports = [&](const char *dir, const std::vector<PortProjections> &list) {
        for (const PortProjections &pp : list)
            for (size_t i = 0; i < pp.operands.size(); ++i) {
                std::string name = std::string(dir) + " " + pp.port;
                if (pp.operands.size() > 1) name += "[" + std::to_string(i) + "]";
                if (pp.operands[i].clipped) name += " (clipped)";
                s += "<TR><TD ALIGN=\"LEFT\" VALIGN=\"TOP\"><B>" + html(name) +
                     "</B></TD><TD ALIGN=\"LEFT\" BALIGN=\"LEFT\"><FONT FACE=\"Courier\" COLOR=\"#1a4fb5\">" +
                     augmented_matrix(pp.operands[i].projection) + "</FONT></TD></TR>";
            }
    };
    ports("in", d.signature.inputs);
    ports("out", d.signature.outputs);
    s += "</TABLE>>";
    return s;
}

std::string shard_label(const Graph &g, const Operation &op, const Shard &shard, const Derivation *resolved) {
    std::string s = "<<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">";
    s += title_row("Shard", 3);
    s += "<TR><TD COLSPAN=\"3\" BGCOLOR=\"" + std::string(kAliasGradient) + "\">\xC2\xAB" + html(shard.id.value) +
         "\xC2\xBB</TD></TR>";
    s += key_value_row("index", html(shard.index.to_string()), 2);
    s += key_value_row("device", shard.device.empty() ? "<I>unplaced</I>" : html(shard.device), 2);
    // The selections it reads and writes: as stated, else derived from the projections.
    std::vector<PortBinding> inputs = shard.inputs, outputs = shard.outputs;
    if (inputs.empty() && outputs.empty() && resolved) {
        ShardSelections derived = derive_shard_selections(g, op, resolved->signature, shard.index);
        inputs = std::move(derived.inputs);
        outputs = std::move(derived.outputs);
    }
    auto rows = [&](const char *key, const std::vector<PortBinding> &ports) {
        std::vector<std::pair<std::string, std::string>> lines;
        for (const PortBinding &p : ports)
            for (size_t i = 0; i < p.selections.size(); ++i)
                lines.emplace_back(p.selections.size() > 1 ? p.name + "[" + std::to_string(i) + "]" : p.name,
                                   p.selections[i].tensor.value + " " + p.selections[i].range.to_string());
        for (size_t i = 0; i < lines.size(); ++i) {
            s += "<TR>";
            if (i == 0)
                s += "<TD ROWSPAN=\"" + std::to_string(lines.size()) + "\" ALIGN=\"LEFT\" VALIGN=\"TOP\">" + key + "</TD>";
            s += "<TD ALIGN=\"LEFT\">" + html(lines[i].first) + "</TD><TD ALIGN=\"LEFT\">" + html(lines[i].second) +
                 "</TD></TR>";
        }
    };
    rows("in", inputs);
    rows("out", outputs);
    s += "</TABLE>>";
    return s;
}

}  // namespace

// ---------------------------------------------------------------------------

std::string to_dot(const Graph &g, const SignatureSource &lib, const DrawOptions &options) {
    const Colours colours = colour_graph(g);
    const std::string rankdir = options.rankdir == "LR" ? "LR" : "TB";
    std::ostringstream out;
    out << "digraph tapestry {\n";
    out << "  graph [newrank=true, rankdir=" << rankdir
        << ", ranksep=0.6, nodesep=0.35, bgcolor=\"#E2E2E2\", fontname=\"Helvetica\", fontsize=20, labelloc=t";
    if (!g.name.empty()) out << ", label=<<B>" << html(g.name) << "</B>>";
    out << "];\n";
    out << "  node [fontname=\"Helvetica\", fontsize=11, penwidth=1.5];\n";
    out << "  edge [fontname=\"Helvetica\", fontsize=10, penwidth=5, arrowsize=0.6];\n\n";

    out << "  // tensors\n";
    for (const TensorPtr &tp : g.tensors()) {
        const Tensor &t = *tp;
        const std::string &c = colours.tensor.at(t.id);
        out << "  " << tensor_node(t.id) << " [shape=box3d, style=filled, gradientangle=315, color=\"" << c
            << "\", fillcolor=\"" << tint(c, 0.55) << ":" << tint(c, 0.92) << "\", label=" << tensor_label(t)
            << "];\n";
    }

    out << "\n  // operations\n";
    for (const OpPtr &opp : g.operations()) {
        const Operation &op = *opp;
        const std::string &c = colours.op.at(op.id);
        const Expected<Derivation, DerivationError> resolved = resolve(g, op, lib);
        const bool clustered = options.show_shards && !op.shards.empty();
        const char *indent = clustered ? "    " : "  ";
        if (clustered) {
            out << "  subgraph " << cluster_name(op.id) << " {\n";
            out << "    style=\"dashed,bold,rounded,filled\"; color=\"" << c << "\"; fillcolor=\"" << tint(c, 0.75)
                << ":" << tint(c, 0.93) << "\"; gradientangle=270; fontsize=14;\n";
            out << "    label=<Operation [" << html(op.kind) << "] : &quot;" << html(op.name.empty() ? op.id.value : op.name)
                << "&quot;>;\n";
        }
        out << indent << op_node(op.id) << " [shape=tab, style=filled, gradientangle=315, fillcolor=\""
            << tint(c, 0.6) << ":" << tint(c, 0.92) << "\"";
        if (resolved)
            out << ", color=\"" << c << "\"";
        else
            out << ", color=\"" << kErrorColour << "\", penwidth=4";
        out << ", label=" << operation_label(g, op, resolved) << "];\n";
        if (clustered) {
            for (size_t i = 0; i < op.shards.size(); ++i) {
                out << "    " << shard_node(op.id, i) << " [shape=note, style=filled, fillcolor=\"" << tint(c, 0.85)
                    << "\", color=\"" << c << "\", label="
                    << shard_label(g, op, op.shards[i], resolved ? &resolved.value() : nullptr) << "];\n";
                out << "    " << op_node(op.id) << " -> " << shard_node(op.id, i)
                    << " [style=dotted, penwidth=2, arrowhead=none, color=\"" << c << "\"];\n";
            }
            out << "  }\n";
        }
        if (options.show_projections && resolved) {
            out << "  " << projection_node(op.id)
                << " [shape=component, style=filled, fillcolor=\"#45eebf\", margin=\"0.1,0.05\", label="
                << projection_label(op, resolved.value()) << "];\n";
            out << "  " << op_node(op.id) << " -> " << projection_node(op.id)
                << " [dir=none, penwidth=1.5, color=\"black:white:black\"];\n";
            out << "  { rank=same; " << op_node(op.id) << "; " << projection_node(op.id) << "; }\n";
        }
    }

    out << "\n  // selections\n";
    auto edge_label = [&](const PortBinding &p, size_t i) {
        std::string label = p.selections.size() > 1 ? p.name + "[" + std::to_string(i) + "]" : p.name;
        const TensorSelection &sel = p.selections[i];
        const Tensor *t = g.find_tensor(sel.tensor);
        if (t && t->range != sel.range) label += "\n" + sel.range.to_string();
        return label;
    };
    auto edge_colour = [&](const TensorId &t) {
        auto it = colours.tensor.find(t);
        return it == colours.tensor.end() ? std::string("#808080") : it->second;
    };
    for (const OpPtr &opp : g.operations()) {
        const Operation &op = *opp;
        for (const PortBinding &p : op.inputs)
            for (size_t i = 0; i < p.selections.size(); ++i) {
                const TensorId &t = p.selections[i].tensor;
                if (!g.find_tensor(t)) continue;  // dangling reference: validation reports it
                out << "  " << tensor_node(t) << " -> " << op_node(op.id) << " [color=\"" << edge_colour(t)
                    << "C0\", label=<" << html(edge_label(p, i)) << ">];\n";
            }
        for (const PortBinding &p : op.outputs)
            for (size_t i = 0; i < p.selections.size(); ++i) {
                const TensorId &t = p.selections[i].tensor;
                if (!g.find_tensor(t)) continue;
                out << "  " << op_node(op.id) << " -> " << tensor_node(t) << " [color=\"" << edge_colour(t)
                    << "\", label=<" << html(edge_label(p, i)) << ">];\n";
            }
    }
    out << "}\n";
    return out.str();
}

Expected<std::string, std::string> render_dot(const std::string &dot, const std::string &format) {
    if (format.empty()) return unexpected(std::string("no output format given"));
    std::lock_guard<std::mutex> lock(graphviz_mutex());
    GVC_t *gvc = graphviz_context();
    if (!gvc) return unexpected(std::string("Graphviz could not be initialised"));
    graphviz_messages().clear();
    agreseterrors();

    Agraph_t *graph = agmemread(dot.c_str());
    if (!graph) {
        std::string why = take_graphviz_errors();
        return unexpected("Graphviz could not read the DOT text: " + (why.empty() ? std::string("syntax error") : why));
    }
    if (gvLayout(gvc, graph, "dot") != 0) {
        std::string why = take_graphviz_errors();
        agclose(graph);
        return unexpected("Graphviz layout failed: " + (why.empty() ? std::string("unknown error") : why));
    }
    char *data = nullptr;
    unsigned int length = 0;
    const int rc = gvRenderData(gvc, graph, format.c_str(), &data, &length);
    std::string result;
    if (rc == 0 && data) result.assign(data, length);
    if (data) gvFreeRenderData(data);
    gvFreeLayout(gvc, graph);
    agclose(graph);
    if (rc != 0) {
        std::string why = take_graphviz_errors();
        return unexpected("Graphviz cannot render format '" + format + "'" + (why.empty() ? "" : ": " + why));
    }
    graphviz_messages().clear();
    return result;
}

namespace {

// Display size of a node's label in points, from the text the studio draws:
// Helvetica at 11pt averages about 6.2pt per character.
std::pair<double, double> estimated_size(const std::vector<std::string> &lines) {
    size_t longest = 0;
    for (const std::string &line : lines) {
        size_t chars = 0;
        for (char c : line)
            if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++chars;  // count code points
        longest = std::max(longest, chars);
    }
    const double width = std::max(54.0, static_cast<double>(longest) * 6.2 + 20.0);
    const double height = std::max(28.0, static_cast<double>(lines.size()) * 14.0 + 12.0);
    return {width, height};
}

void set_attr(void *object, const char *name, const std::string &value) {
    agsafeset(object, const_cast<char *>(name), const_cast<char *>(value.c_str()), const_cast<char *>(""));
}

}  // namespace

Expected<Layout, std::string> layout_graph(const Graph &g, const std::function<bool()> &cancelled) {
    auto is_cancelled = [&] { return cancelled && cancelled(); };
    if (is_cancelled()) return unexpected(std::string("cancelled"));

    std::lock_guard<std::mutex> lock(graphviz_mutex());
    GVC_t *gvc = graphviz_context();
    if (!gvc) return unexpected(std::string("Graphviz could not be initialised"));
    graphviz_messages().clear();

    char graph_name[] = "layout";
    Agraph_t *graph = agopen(graph_name, Agdirected, nullptr);
    if (!graph) return unexpected(std::string("Graphviz could not create a graph"));
    // Closing the graph on every exit path, layout first when there is one.
    bool laid_out = false;
    struct Closer {
        GVC_t *gvc;
        Agraph_t *graph;
        bool &laid_out;
        ~Closer() {
            if (laid_out) gvFreeLayout(gvc, graph);
            agclose(graph);
        }
    } closer{gvc, graph, laid_out};

    auto graph_attr = [&](const char *name, const char *value) {
        agattr(graph, AGRAPH, const_cast<char *>(name), const_cast<char *>(value));
    };
    graph_attr("rankdir", "TB");
    graph_attr("newrank", "true");
    graph_attr("ranksep", "0.5");
    graph_attr("nodesep", "0.3");
    agattr(graph, AGNODE, const_cast<char *>("shape"), const_cast<char *>("box"));
    agattr(graph, AGNODE, const_cast<char *>("fixedsize"), const_cast<char *>("true"));
    agattr(graph, AGNODE, const_cast<char *>("label"), const_cast<char *>(""));
    agattr(graph, AGNODE, const_cast<char *>("width"), const_cast<char *>("0.75"));
    agattr(graph, AGNODE, const_cast<char *>("height"), const_cast<char *>("0.5"));
    // The studio draws its own arrowheads at the end of each spline.
    agattr(graph, AGEDGE, const_cast<char *>("arrowhead"), const_cast<char *>("none"));

    // Graphviz node names are prefixed by kind, so a tensor and an operation that
    // share an id (an invalid file) still get two nodes.
    std::vector<std::pair<Agnode_t *, std::string>> nodes;
    std::map<std::string, Agnode_t *> tensor_nodes;
    nodes.reserve(g.node_count());
    auto add_node = [&](const std::string &name, const std::string &id, const std::vector<std::string> &lines,
                        const char *shape) {
        Agnode_t *n = agnode(graph, const_cast<char *>(name.c_str()), 1);
        const auto [w, h] = estimated_size(lines);
        set_attr(n, "width", std::to_string(w / 72.0));
        set_attr(n, "height", std::to_string(h / 72.0));
        set_attr(n, "shape", shape);
        nodes.emplace_back(n, id);
        return n;
    };
    // Nodes are created in data-flow order (an operation's inputs, the operation,
    // its outputs): dot's crossing minimisation starts from creation order, and a
    // good start makes large layouts several times faster than tensors-then-ops.
    auto tensor_node_of = [&](const TensorId &id) -> Agnode_t * {
        auto it = tensor_nodes.find(id.value);
        if (it != tensor_nodes.end()) return it->second;
        const Tensor *t = g.find_tensor(id);
        if (!t) return nullptr;  // a dangling reference: validation reports it
        const std::string dims = std::string(dtype_name(t->dtype)) + " " + shape_text(t->shape());
        Agnode_t *n = add_node("t:" + t->id.value, t->id.value, {t->name, dims}, "box");
        tensor_nodes.emplace(t->id.value, n);
        return n;
    };
    for (const OpPtr &op : g.operations()) {
        std::vector<Agnode_t *> inputs;
        for (const TensorId &t : op->input_tensors()) inputs.push_back(tensor_node_of(t));
        Agnode_t *n = add_node("o:" + op->id.value, op->id.value, {op->kind, op->name}, "ellipse");
        for (Agnode_t *in : inputs)
            if (in) agedge(graph, in, n, nullptr, 1);
        for (const TensorId &t : op->output_tensors())
            if (Agnode_t *out = tensor_node_of(t)) agedge(graph, n, out, nullptr, 1);
    }
    for (const TensorPtr &t : g.tensors()) tensor_node_of(t->id);
    // Report nodes in the graph's order: tensors, then operations.
    {
        std::vector<std::pair<Agnode_t *, std::string>> ordered;
        ordered.reserve(nodes.size());
        for (const TensorPtr &t : g.tensors()) ordered.emplace_back(tensor_nodes.at(t->id.value), t->id.value);
        for (const auto &[n, id] : nodes)
            if (!tensor_nodes.count(id) || tensor_nodes.at(id) != n) ordered.emplace_back(n, id);
        nodes = std::move(ordered);
    }
    if (is_cancelled()) return unexpected(std::string("cancelled"));

    if (gvLayout(gvc, graph, "dot") != 0) {
        std::string why = take_graphviz_errors();
        return unexpected("Graphviz layout failed: " + (why.empty() ? std::string("unknown error") : why));
    }
    laid_out = true;
    if (is_cancelled()) return unexpected(std::string("cancelled"));

    // Read back, flipping y so that it grows downward from the top of the drawing.
    const boxf bb = GD_bb(graph);
    auto to_screen = [&](pointf p) { return std::pair<double, double>{p.x - bb.LL.x, bb.UR.y - p.y}; };
    Layout layout;
    layout.width = bb.UR.x - bb.LL.x;
    layout.height = bb.UR.y - bb.LL.y;
    layout.nodes.reserve(nodes.size());
    std::map<Agnode_t *, const std::string *> ids;
    for (const auto &[n, id] : nodes) {
        const auto [x, y] = to_screen(ND_coord(n));
        layout.nodes.push_back(NodeBox{id, x, y, ND_width(n) * 72.0, ND_height(n) * 72.0});
        ids[n] = &id;
    }
    for (const auto &[n, id] : nodes) {
        for (Agedge_t *e = agfstout(graph, n); e; e = agnxtout(graph, e)) {
            EdgePath path;
            path.from = *ids.at(agtail(e));
            path.to = *ids.at(aghead(e));
            if (const splines *spl = ED_spl(e)) {
                for (int b = 0; b < spl->size; ++b) {
                    const bezier &bz = spl->list[b];
                    for (int i = 0; i < bz.size; ++i) path.points.push_back(to_screen(bz.list[i]));
                }
            }
            layout.edges.push_back(std::move(path));
        }
        if (is_cancelled()) return unexpected(std::string("cancelled"));
    }
    graphviz_messages().clear();
    return layout;
}

}  // namespace tapestry
