// DOT export, rendering and layout through Graphviz's C library (gvc/cgraph).
// Graphviz keeps global state (error handlers, the lexer, plugin tables) and is
// not thread-safe, so every call into it is made while holding one process-wide
// mutex, and one GVC_t context lives for the whole process.
#include "io/graphviz.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

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

// The most characters (bytes) of one piece of text a label shows: a name of ten
// million characters would take Graphviz minutes to lay out and no one can read it.
constexpr size_t kLabelTextLimit = 200;

// `s` cut to kLabelTextLimit bytes at a UTF-8 boundary, with "…" where it was cut.
std::string_view label_text(std::string_view s, bool &cut) {
    cut = s.size() > kLabelTextLimit;
    if (!cut) return s;
    size_t n = kLabelTextLimit;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside a character
    return s.substr(0, n);
}

// Text for an HTML-like label: entities for the five XML specials; long text cut.
std::string html(std::string_view text) {
    bool cut = false;
    const std::string_view s = label_text(text, cut);
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
    if (cut) out += "\xE2\x80\xA6";  // …
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
    // A shard whose index range does not fit its operation's index space (an
    // invalid file: validation says so) is drawn, but nothing is derived from it.
    if (resolved && shard.index.rank() != resolved->signature.index_space.rank()) {
        s += "<TR><TD COLSPAN=\"3\" ALIGN=\"LEFT\"><FONT COLOR=\"" + std::string(kErrorColour) + "\">index of rank " +
             std::to_string(shard.index.rank()) + " in an index space of rank " +
             std::to_string(resolved->signature.index_space.rank()) + "</FONT></TD></TR>";
        resolved = nullptr;
    }
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
        const bool marked = options.marked.count(t.id.value) > 0;
        out << "  " << tensor_node(t.id) << " [shape=box3d, style=filled, gradientangle=315, color=\""
            << (marked ? kErrorColour : c) << (marked ? "\", penwidth=4" : "\"") << ", fillcolor=\"" << tint(c, 0.55) << ":" << tint(c, 0.92) << "\", label=" << tensor_label(t)
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
        if (resolved && !options.marked.count(op.id.value))
            out << ", color=\"" << c << "\"";
        else
            out << ", color=\"" << kErrorColour << "\", penwidth=4";
        out << ", label=" << operation_label(g, op, resolved) << "];\n";
        if (clustered) {
            for (size_t i = 0; i < op.shards.size(); ++i) {
                const Shard &shard = op.shards[i];
                const bool bad = options.marked.count(shard.id.value) > 0 ||
                                 (resolved && shard.index.rank() != resolved->signature.index_space.rank());
                out << "    " << shard_node(op.id, i) << " [shape=note, style=filled, fillcolor=\"" << tint(c, 0.85)
                    << "\", color=\"" << (bad ? kErrorColour : c) << (bad ? "\", penwidth=4" : "\"") << ", label="
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

// ---------------------------------------------------------------------------
// Layout in pieces. dot's cost grows much faster than linearly in the size of
// what it lays out (crossing minimisation over long ranks, network simplex over
// the whole graph), so:
//  * each weakly connected component of the tensor/operation graph is laid out
//    on its own, and the drawings are packed in rows afterwards;
//  * a big component is cut into segments at tensors that every path through it
//    passes (a transformer's residual stream between blocks, a chain's
//    activations): each segment is laid out on its own with the cut tensor alone
//    on its bottom rank, the next segment with it alone on its top rank, and the
//    segments are stacked so that the two drawings of the cut tensor coincide;
//  * what is still big after that gets capped network simplex and crossing
//    minimisation.
// The cost is then about linear in the number of nodes. Small graphs (the
// studio's examples) are one piece laid out exactly as before.

// Nodes are numbered tensors 0..T-1 (graph order), then operations T..T+O-1,
// which is also the order the layout reports them in.

// Components with more nodes than this are cut into segments of at least
// kSegmentNodes nodes, where they can be cut.
constexpr size_t kSplitAbove = 1000;
constexpr size_t kSegmentNodes = 400;

// Weakly connected components: per component, its node numbers ascending;
// components in order of their first node.
std::vector<std::vector<size_t>> connected_components(const Graph &g) {
    const size_t nt = g.tensors().size(), n = g.node_count();
    std::vector<size_t> parent(n);
    for (size_t i = 0; i < n; ++i) parent[i] = i;
    auto find = [&](size_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    };
    for (size_t o = 0; o < g.operations().size(); ++o) {
        const Operation &op = *g.operations()[o];
        for (const std::vector<TensorId> &list : {op.input_tensors(), op.output_tensors()})
            for (const TensorId &t : list) {
                const int ti = g.tensor_index(t);
                if (ti < 0) continue;  // a dangling reference: no node, no edge
                const size_t a = find(static_cast<size_t>(ti)), b = find(nt + o);
                if (a != b) parent[std::max(a, b)] = std::min(a, b);
            }
    }
    std::vector<std::vector<size_t>> out;
    std::vector<size_t> slot(n, SIZE_MAX);
    for (size_t i = 0; i < n; ++i) {
        const size_t root = find(i);
        if (slot[root] == SIZE_MAX) {
            slot[root] = out.size();
            out.emplace_back();
        }
        out[slot[root]].push_back(i);
    }
    return out;
}

// The order in which a piece creates its Graphviz nodes, and the sequence in
// which a component is cut: per operation in graph order, its inputs not yet
// seen, the operation, its outputs not yet seen; then tensors no operation uses.
// dot's crossing minimisation starts from creation order, and this data-flow
// order makes large layouts several times faster than tensors-then-operations.
std::vector<size_t> creation_order(const Graph &g, const std::vector<size_t> &members) {
    const size_t nt = g.tensors().size();
    std::vector<size_t> order;
    order.reserve(members.size());
    std::unordered_map<size_t, bool> seen;
    seen.reserve(members.size());
    auto tensor = [&](const TensorId &id) {
        const int ti = g.tensor_index(id);
        if (ti >= 0 && seen.emplace(static_cast<size_t>(ti), true).second) order.push_back(static_cast<size_t>(ti));
    };
    for (size_t number : members) {
        if (number < nt) continue;
        const Operation &op = *g.operations()[number - nt];
        for (const TensorId &t : op.input_tensors()) tensor(t);
        order.push_back(number);
        for (const TensorId &t : op.output_tensors()) tensor(t);
    }
    for (size_t number : members)
        if (number < nt && seen.emplace(number, true).second) order.push_back(number);
    return order;
}

// Positions in `sequence` where it can be cut: tensors such that no edge jumps
// over them (every edge lies within the part before or the part after, the
// tensor included) and whose edges come in from before and go out to after.
// With `hubs`, tensors read by kHubConsumers or more operations (one attention
// mask or encoder output read by every block) are put there and their edges do
// not count: all but the first to each hub are drawn by layout_graph, not by dot
// (dot's spline routing of many long edges takes minutes). Segments
// are chosen greedily, each at least `segment_nodes` long and the last at least
// half that. Returns the cut positions, ascending.
constexpr size_t kHubConsumers = 3;

std::vector<size_t> cut_positions(const Graph &g, const std::vector<size_t> &sequence, size_t segment_nodes,
                                  std::unordered_set<size_t> *hubs) {
    const size_t nt = g.tensors().size(), m = sequence.size();
    std::unordered_map<size_t, size_t> pos;
    pos.reserve(m);
    for (size_t i = 0; i < m; ++i) pos.emplace(sequence[i], i);
    std::unordered_map<size_t, size_t> reads;  // tensor → edges into operations
    if (hubs)
        for (size_t number : sequence)
            if (number >= nt)
                for (const TensorId &t : g.operations()[number - nt]->input_tensors())
                    if (const int ti = g.tensor_index(t); ti >= 0)
                        if (++reads[static_cast<size_t>(ti)] == kHubConsumers) hubs->insert(static_cast<size_t>(ti));
    std::vector<char> wrong_way(m, 0);  // an edge comes in from after or goes out to before
    std::vector<long> cover(m + 1, 0);  // difference array of edges jumping over a position
    auto edge = [&](size_t from, size_t to) {
        const size_t a = pos.at(from), b = pos.at(to);
        if (a > b) {
            wrong_way[a] = 1;
            wrong_way[b] = 1;
        }
        const size_t lo = std::min(a, b), hi = std::max(a, b);
        if (hi > lo + 1) {
            ++cover[lo + 1];
            --cover[hi];
        }
    };
    for (size_t i = 0; i < m; ++i) {
        if (sequence[i] < nt) continue;
        const Operation &op = *g.operations()[sequence[i] - nt];
        for (const TensorId &t : op.input_tensors())
            if (const int ti = g.tensor_index(t); ti >= 0) {
                if (hubs && hubs->count(static_cast<size_t>(ti))) continue;
                edge(static_cast<size_t>(ti), sequence[i]);
            }
        for (const TensorId &t : op.output_tensors())
            if (const int ti = g.tensor_index(t); ti >= 0) edge(sequence[i], static_cast<size_t>(ti));
    }
    std::vector<size_t> cuts;
    size_t start = 0;
    long jumping = 0;
    for (size_t k = 0; k < m; ++k) {
        jumping += cover[k];
        const bool can_cut = jumping == 0 && !wrong_way[k] && sequence[k] < nt && k > 0 && k + 1 < m &&
                             !(hubs && hubs->count(sequence[k]));
        if (can_cut && k - start >= segment_nodes && m - 1 - k >= segment_nodes / 2) {
            cuts.push_back(k);
            start = k;
        }
    }
    return cuts;
}

// dot's effort for a piece of `nodes` nodes. Pieces up to kCapAbove nodes get
// dot's defaults. Bigger ones (components that could not be cut) get the
// coordinate phase's network simplex capped at 2 (above 8,000 nodes 1)
// iterations per node and crossing minimisation at half its default tries:
// measured on 25 residual chains joined by one operation (5,027 nodes), the cap
// takes that layout from about 6.6 s to about 4 s with no crossings added;
// tighter caps (0.2 iterations per node) were faster but tangled the drawing
// (tens of thousands of crossings). remincross only matters with clusters,
// which the layout graph has none of.
constexpr size_t kCapAbove = 2000;

std::vector<std::pair<const char *, const char *>> effort_attributes(size_t nodes) {
    if (nodes <= kCapAbove) return {};
    return {{"nslimit", nodes > 8000 ? "1" : "2"}, {"mclimit", "0.5"}};
}

// A piece's own Graphviz graph, closed (layout first) on every exit path.
struct PieceGraph {
    GVC_t *gvc = nullptr;
    Agraph_t *graph = nullptr;
    bool laid_out = false;
    PieceGraph(GVC_t *context, Agraph_t *g) : gvc(context), graph(g) {}
    PieceGraph(const PieceGraph &) = delete;
    PieceGraph &operator=(const PieceGraph &) = delete;
    ~PieceGraph() {
        if (!graph) return;
        if (laid_out) gvFreeLayout(gvc, graph);
        agclose(graph);
    }
};

// What laying out one piece gives: its nodes' boxes and out-edges, in the
// piece's own coordinates (origin at the top-left of its bounding box, y down).
struct Piece {
    double width = 0, height = 0;
    std::vector<size_t> nodes;        // node numbers, in creation order
    std::vector<NodeBox> boxes;       // per entry of `nodes` (ids left empty)
    std::vector<std::vector<EdgePath>> out_edges;  // per entry of `nodes`, ids filled in
    std::vector<std::pair<size_t, size_t>> outside;  // edges (from, to) left to the caller
};

// Lays out the nodes `sequence` (in creation order, closed under edges except
// at the cut tensors `top` / `bottom`, SIZE_MAX for none), which dot puts alone
// on the first / last rank. Polls `cancelled` after building and after layout.
Expected<Piece, std::string> layout_piece(GVC_t *gvc, const Graph &g, const std::vector<size_t> &sequence, size_t top,
                                          size_t bottom, const std::unordered_set<size_t> &hubs,
                                          const std::vector<std::string> &ids,
                                          const std::function<bool()> &is_cancelled) {
    const size_t nt = g.tensors().size();
    char graph_name[] = "layout";
    PieceGraph piece_graph(gvc, agopen(graph_name, Agdirected, nullptr));
    Agraph_t *graph = piece_graph.graph;
    if (!graph) return unexpected(std::string("Graphviz could not create a graph"));

    auto graph_attr = [&](const char *name, const char *value) {
        agattr(graph, AGRAPH, const_cast<char *>(name), const_cast<char *>(value));
    };
    graph_attr("rankdir", "TB");
    // newrank's global ranking does not keep rank=source / rank=sink exclusive;
    // the classic ranking does, and a cut tensor must be alone on its rank.
    // (Graphviz 2.43 takes newrank=false for true: the attribute must be absent.)
    const bool segment = top != SIZE_MAX || bottom != SIZE_MAX;
    if (!segment) graph_attr("newrank", "true");
    graph_attr("ranksep", "0.5");
    graph_attr("nodesep", "0.3");
    for (const auto &[name, value] : effort_attributes(sequence.size())) graph_attr(name, value);
    agattr(graph, AGNODE, const_cast<char *>("shape"), const_cast<char *>("box"));
    agattr(graph, AGNODE, const_cast<char *>("fixedsize"), const_cast<char *>("true"));
    agattr(graph, AGNODE, const_cast<char *>("label"), const_cast<char *>(""));
    agattr(graph, AGNODE, const_cast<char *>("width"), const_cast<char *>("0.75"));
    agattr(graph, AGNODE, const_cast<char *>("height"), const_cast<char *>("0.5"));
    // The studio draws its own arrowheads at the end of each spline.
    agattr(graph, AGEDGE, const_cast<char *>("arrowhead"), const_cast<char *>("none"));

    // Graphviz node names are prefixed by kind, so a tensor and an operation that
    // share an id (an invalid file) still get two nodes.
    Piece piece;
    piece.nodes = sequence;
    std::vector<Agnode_t *> agnodes(sequence.size(), nullptr);
    std::unordered_map<size_t, size_t> slot;  // node number → index in sequence
    std::unordered_map<Agnode_t *, size_t> number_of;
    slot.reserve(sequence.size());
    number_of.reserve(sequence.size());
    for (size_t i = 0; i < sequence.size(); ++i) slot.emplace(sequence[i], i);
    auto node_of = [&](size_t number) -> Agnode_t * {
        const size_t i = slot.at(number);
        if (agnodes[i]) return agnodes[i];
        std::vector<std::string> lines;
        std::string name;
        const char *shape = "box";
        if (number < nt) {
            const Tensor &t = *g.tensors()[number];
            lines = {t.name, std::string(dtype_name(t.dtype)) + " " + shape_text(t.shape())};
            name = "t:" + t.id.value;
        } else {
            const Operation &op = *g.operations()[number - nt];
            lines = {op.kind, op.name};
            name = "o:" + op.id.value;
            shape = "ellipse";
        }
        Agnode_t *node = agnode(graph, const_cast<char *>(name.c_str()), 1);
        const auto [w, h] = estimated_size(lines);
        set_attr(node, "width", std::to_string(w / 72.0));
        set_attr(node, "height", std::to_string(h / 72.0));
        set_attr(node, "shape", shape);
        agnodes[i] = node;
        number_of.emplace(node, number);
        return node;
    };
    // A hub's edges after its first, and so every edge from outside the piece,
    // are not dot's: the caller draws them.
    std::unordered_set<size_t> hubs_seen;
    auto tensor_node = [&](const TensorId &id, size_t op, bool input) -> Agnode_t * {
        const int ti = g.tensor_index(id);
        if (ti < 0) return nullptr;  // dangling: validation reports it
        const size_t number = static_cast<size_t>(ti);
        if (!slot.count(number) || (input && hubs.count(number) && !hubs_seen.insert(number).second)) {
            piece.outside.emplace_back(input ? number : op, input ? op : number);
            return nullptr;
        }
        return node_of(number);
    };
    for (size_t number : sequence) {
        if (number < nt) continue;
        const Operation &op = *g.operations()[number - nt];
        std::vector<Agnode_t *> inputs;
        for (const TensorId &t : op.input_tensors()) inputs.push_back(tensor_node(t, number, true));
        Agnode_t *node = node_of(number);
        for (Agnode_t *in : inputs)
            if (in) agedge(graph, in, node, nullptr, 1);
        for (const TensorId &t : op.output_tensors())
            if (Agnode_t *out = tensor_node(t, number, false)) agedge(graph, node, out, nullptr, 1);
    }
    for (size_t number : sequence) node_of(number);
    auto alone_on_rank = [&](size_t number, const char *rank) {
        std::string name = std::string("rank_") + rank;
        Agraph_t *sub = agsubg(graph, const_cast<char *>(name.c_str()), 1);
        set_attr(sub, "rank", rank);
        agsubnode(sub, node_of(number), 1);
    };
    if (top != SIZE_MAX) alone_on_rank(top, "source");
    if (bottom != SIZE_MAX) alone_on_rank(bottom, "sink");
    if (is_cancelled()) return unexpected(std::string("cancelled"));

    if (gvLayout(gvc, graph, "dot") != 0) {
        std::string why = take_graphviz_errors();
        return unexpected("Graphviz layout failed: " + (why.empty() ? std::string("unknown error") : why));
    }
    piece_graph.laid_out = true;
    if (is_cancelled()) return unexpected(std::string("cancelled"));

    // Read back, flipping y so that it grows downward from the top of the drawing.
    const boxf bb = GD_bb(graph);
    auto to_local = [&](pointf p) { return std::pair<double, double>{p.x - bb.LL.x, bb.UR.y - p.y}; };
    piece.width = bb.UR.x - bb.LL.x;
    piece.height = bb.UR.y - bb.LL.y;
    piece.boxes.resize(sequence.size());
    piece.out_edges.resize(sequence.size());
    for (size_t i = 0; i < sequence.size(); ++i) {
        Agnode_t *node = agnodes[i];
        const auto [x, y] = to_local(ND_coord(node));
        piece.boxes[i] = NodeBox{{}, x, y, ND_width(node) * 72.0, ND_height(node) * 72.0};
        for (Agedge_t *e = agfstout(graph, node); e; e = agnxtout(graph, e)) {
            EdgePath path;
            path.from = ids[sequence[i]];
            path.to = ids[number_of.at(aghead(e))];
            if (const splines *spl = ED_spl(e)) {
                for (int b = 0; b < spl->size; ++b) {
                    const bezier &bz = spl->list[b];
                    for (int k = 0; k < bz.size; ++k) path.points.push_back(to_local(bz.list[k]));
                }
            }
            piece.out_edges[i].push_back(std::move(path));
        }
    }
    return piece;
}

// True when the node at `index` of the piece is alone on its row: no other box
// of the piece reaches into its band of y.
bool alone_on_row(const Piece &piece, size_t index) {
    const NodeBox &a = piece.boxes[index];
    for (size_t i = 0; i < piece.boxes.size(); ++i) {
        const NodeBox &b = piece.boxes[i];
        if (i != index && std::abs(a.y - b.y) < (a.height + b.height) / 2) return false;
    }
    return true;
}

void translate(NodeBox &box, std::vector<EdgePath> &edges, double dx, double dy) {
    box.x += dx;
    box.y += dy;
    for (EdgePath &path : edges)
        for (auto &[px, py] : path.points) {
            px += dx;
            py += dy;
        }
}

// One component laid out, in its own coordinates (origin top-left, y down).
struct PlacedComponent {
    double width = 0, height = 0;
    std::vector<size_t> nodes;
};

}  // namespace

Expected<Layout, std::string> layout_graph(const Graph &g, const std::function<bool()> &cancelled) {
    auto is_cancelled = [&] { return cancelled && cancelled(); };
    if (is_cancelled()) return unexpected(std::string("cancelled"));

    const size_t nt = g.tensors().size(), n = g.node_count();
    std::vector<std::string> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = i < nt ? g.tensors()[i]->id.value : g.operations()[i - nt]->id.value;
    const std::vector<std::vector<size_t>> components = connected_components(g);

    // Results by node number, in component coordinates until packed.
    std::vector<NodeBox> boxes(n);
    std::vector<std::vector<EdgePath>> out_edges(n);
    std::vector<PlacedComponent> placed;
    placed.reserve(components.size());

    std::lock_guard<std::mutex> lock(graphviz_mutex());
    GVC_t *gvc = graphviz_context();
    if (!gvc) return unexpected(std::string("Graphviz could not be initialised"));
    graphviz_messages().clear();

    for (const std::vector<size_t> &members : components) {
        const std::vector<size_t> sequence = creation_order(g, members);
        std::vector<size_t> cuts;
        std::unordered_set<size_t> hubs;
        if (sequence.size() > kSplitAbove) {
            cuts = cut_positions(g, sequence, kSegmentNodes, nullptr);
            if (cuts.empty()) cuts = cut_positions(g, sequence, kSegmentNodes, &hubs);
            if (cuts.empty()) hubs.clear();
        }

        // Segments [start, end] of the sequence, consecutive ones sharing their
        // cut tensor; stacked so that the cut tensor's two drawings coincide.
        // Should a cut tensor not come out alone on its row (dot's rank=source /
        // sink make it so), the component is laid out whole instead.
        bool whole = cuts.empty();
        const std::unordered_set<size_t> no_hubs;
        for (int attempt = 0; attempt < 2; ++attempt) {
            std::vector<size_t> bounds{0};
            if (!whole) bounds.insert(bounds.end(), cuts.begin(), cuts.end());
            bounds.push_back(sequence.size() - 1);
            double min_x = 0, max_x = 0, max_y = 0;
            bool stacked = true;
            std::vector<std::pair<size_t, size_t>> outside;  // edges between pieces
            for (size_t s = 0; s + 1 < bounds.size(); ++s) {
                const size_t first = bounds[s], last = bounds[s + 1];
                const std::vector<size_t> part(sequence.begin() + static_cast<long>(first),
                                               sequence.begin() + static_cast<long>(last) + 1);
                const size_t top = s > 0 ? part.front() : SIZE_MAX;
                const size_t bottom = s + 2 < bounds.size() ? part.back() : SIZE_MAX;
                auto piece = layout_piece(gvc, g, part, top, bottom, whole ? no_hubs : hubs, ids, is_cancelled);
                if (!piece) return unexpected(piece.error());
                if ((top != SIZE_MAX && !alone_on_row(*piece, 0)) ||
                    (bottom != SIZE_MAX && !alone_on_row(*piece, part.size() - 1))) {
                    stacked = false;
                    break;
                }
                // The offset that puts this piece's drawing of the top cut tensor on
                // the previous piece's.
                double dx = 0, dy = 0;
                if (top != SIZE_MAX) {
                    dx = boxes[top].x - piece->boxes[0].x;
                    dy = boxes[top].y - piece->boxes[0].y;
                }
                for (size_t i = 0; i < part.size(); ++i) {
                    const size_t number = part[i];
                    NodeBox box = piece->boxes[i];
                    box.id = ids[number];
                    translate(box, piece->out_edges[i], dx, dy);
                    if (number != top) boxes[number] = std::move(box);
                    for (EdgePath &path : piece->out_edges[i]) out_edges[number].push_back(std::move(path));
                }
                outside.insert(outside.end(), piece->outside.begin(), piece->outside.end());
                min_x = std::min(min_x, dx);
                max_x = std::max(max_x, dx + piece->width);
                max_y = std::max(max_y, dy + piece->height);
            }
            if (!stacked) {
                for (size_t number : members) out_edges[number].clear();
                whole = true;
                continue;
            }
            // A hub's other edges run as a bus: down from the hub to half a rank
            // gap below it, right to a lane past the drawing, down the lane to half
            // a rank gap above the head, left over the head and down into it. The
            // horizontal runs lie between ranks, so they cross edges, not nodes.
            std::map<size_t, double> lanes;  // hub → x of its lane
            for (const auto &[from, to] : outside) {
                if (!lanes.count(from)) lanes.emplace(from, max_x + 18.0 * static_cast<double>(lanes.size() + 1));
                const NodeBox &a = boxes[from], &b = boxes[to];
                const double lane = lanes.at(from), gap = 18.0;  // half of ranksep
                const std::vector<std::pair<double, double>> corners{
                    {a.x, a.y + a.height / 2},  {a.x, a.y + a.height / 2 + gap}, {lane, a.y + a.height / 2 + gap},
                    {lane, b.y - b.height / 2 - gap}, {b.x, b.y - b.height / 2 - gap}, {b.x, b.y - b.height / 2}};
                EdgePath path{ids[from], ids[to], {corners.front()}};
                for (size_t c = 1; c < corners.size(); ++c) {
                    const auto [x0, y0] = corners[c - 1];
                    const auto [x1, y1] = corners[c];
                    for (int k = 1; k <= 3; ++k) path.points.emplace_back(x0 + (x1 - x0) * k / 3.0, y0 + (y1 - y0) * k / 3.0);
                }
                out_edges[from].push_back(std::move(path));
            }
            if (!lanes.empty()) max_x += 18.0 * static_cast<double>(lanes.size() + 1);
            for (size_t number : members) translate(boxes[number], out_edges[number], -min_x, 0);
            placed.push_back(PlacedComponent{max_x - min_x, max_y, members});
            break;
        }
    }
    graphviz_messages().clear();

    // Pack the components in rows ("shelves"), tallest first (ties in graph
    // order), each row as wide as a drawing of the whole area at about 16:10
    // would be, or the widest component. One component stays where dot put it.
    constexpr double kGap = 36.0;  // points between components (half an inch)
    constexpr double kAspect = 1.6;
    std::vector<size_t> order(placed.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return placed[a].height > placed[b].height; });
    double area = 0, widest = 0;
    for (const PlacedComponent &pc : placed) {
        area += (pc.width + kGap) * (pc.height + kGap);
        widest = std::max(widest, pc.width);
    }
    const double row_width = std::max(widest, std::sqrt(area * kAspect));
    Layout layout;
    double x = 0, y = 0, row_height = 0;
    for (size_t index : order) {
        const PlacedComponent &pc = placed[index];
        if (x > 0 && x + pc.width > row_width) {  // start a new row
            y += row_height + kGap;
            x = 0;
            row_height = 0;
        }
        for (size_t number : pc.nodes) translate(boxes[number], out_edges[number], x, y);
        layout.width = std::max(layout.width, x + pc.width);
        layout.height = std::max(layout.height, y + pc.height);
        row_height = std::max(row_height, pc.height);
        x += pc.width + kGap;
    }

    // Nodes in the graph's order (tensors, then operations); each node's
    // out-edges after one another, in the order they were created.
    layout.nodes = std::move(boxes);
    for (std::vector<EdgePath> &edges : out_edges)
        for (EdgePath &path : edges) layout.edges.push_back(std::move(path));
    return layout;
}

}  // namespace tapestry
