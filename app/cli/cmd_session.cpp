// `tapestry session list|launches|searches|export|import|rename|delete`: moves
// projects in and out of a session file (store/session.h, docs/sessions.md) as
// *.tapestry.json, lists the launches and searches it keeps, and renames or
// deletes a project. list, launches, searches and export open the session
// read-only (they work while the studio has it open); import, rename and delete
// open it read-write, waiting up to --wait seconds (default 10) for another
// process that holds it, and are then refused, exit 1.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "run_support.h"
#include "graph/issue.h"
#include "io/project_file.h"
#include "io/tensor_values.h"
#include "plan/simulate.h"
#include "search/front_file.h"
#include "search/session_runs.h"
#include "store/session.h"

namespace tapestry::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct SessionCommandOptions {
    std::string session;
    bool allow_outside_data = false;  // import
    bool json = false;
    // export
    std::string project;
    std::string output;
    int version = 0;
    // import
    std::string file;
    std::string name;
    double wait_seconds = 10;
    // launches
    long long plan = 0;  // 0: every plan
    // searches
    long long search = 0;  // 0: every search run
    std::string export_front;
    // rename, delete
    std::string new_name;
    bool yes = false;
};

int store_failure(const store::StoreError &e) {
    std::cerr << "tapestry: " << e.message << "\n";
    return kExitInvalid;
}

// A portable file name for a project name: "GPT-2 block" → "GPT-2_block".
std::string file_name_for(const std::string &name) {
    std::string s;
    for (char c : name) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                          c == '_' || c == '.';
        s += keep ? c : '_';
    }
    if (s.empty() || s[0] == '.') s.insert(s.begin(), '_');
    return s;
}

int list_command(const SessionCommandOptions &o) {
    auto session = store::Session::open(o.session, store::OpenMode::read_only);
    if (!session) return store_failure(session.error());
    auto projects = (*session)->projects();
    if (!projects) return store_failure(projects.error());
    ordered_json list = ordered_json::array();
    std::vector<std::string> lines;
    for (const store::ProjectInfo &p : *projects) {
        std::string latest_saved;
        int latest_number = 0;
        if (p.latest_version_id != 0) {
            auto versions = (*session)->versions(p.id);
            if (!versions) return store_failure(versions.error());
            if (!versions->empty()) {
                latest_saved = versions->back().saved_at;
                latest_number = versions->back().number;
            }
        }
        // What hangs off its versions: plans (with their launches) and searches.
        auto plans = (*session)->plans(p.id);
        if (!plans) return store_failure(plans.error());
        long long launch_count = 0;
        for (const store::PlanRecord &plan : *plans) {
            auto launches = (*session)->launches(plan.id);
            if (!launches) return store_failure(launches.error());
            launch_count += static_cast<long long>(launches->size());
        }
        auto searches = (*session)->search_runs(p.id);
        if (!searches) return store_failure(searches.error());
        auto file = (*session)->source_file(p.id);
        if (!file) return store_failure(file.error());
        list.push_back(ordered_json{{"id", p.id},
                                    {"name", p.name},
                                    {"versions", p.version_count},
                                    {"latest_version", latest_number},
                                    {"latest_saved_at", latest_saved},
                                    {"plans", plans->size()},
                                    {"launches", launch_count},
                                    {"searches", searches->size()},
                                    {"file", *file}});
        std::string kept;
        if (!plans->empty())
            kept += ", " + plural(static_cast<long long>(plans->size()), "plan") + " (" + plural(launch_count, "launch", "launches") + ")";
        if (!searches->empty()) kept += ", " + plural(static_cast<long long>(searches->size()), "search", "searches");
        if (!file->empty()) kept += "; file " + *file;
        lines.push_back(
            "  " + std::to_string(p.id) + "  " + p.name + "  " + std::to_string(p.version_count) +
            (p.version_count == 1 ? " version" : " versions") +
            (latest_saved.empty() ? "" : ", latest v" + std::to_string(latest_number) + " saved " + latest_saved) + kept);
    }
    if (o.json) {
        std::cout << ordered_json{{"session", o.session},
                                  {"schema_version", (*session)->schema_version()},
                                  {"projects", std::move(list)}}
                         .dump(2)
                  << "\n";
        return kExitOk;
    }
    std::cout << o.session << ": " << projects->size() << (projects->size() == 1 ? " project" : " projects")
              << " (schema " << (*session)->schema_version() << ")\n";
    for (const std::string &line : lines) std::cout << line << "\n";
    return kExitOk;
}

// The project named (or numbered) `wanted`; exit code when there is none or several.
int find_project(const std::vector<store::ProjectInfo> &projects, const std::string &session, const std::string &wanted,
                 store::ProjectInfo &out) {
    std::vector<const store::ProjectInfo *> named;
    for (const store::ProjectInfo &p : projects)
        if (p.name == wanted) named.push_back(&p);
    if (named.size() == 1) {
        out = *named.front();
        return kExitOk;
    }
    if (named.size() > 1) {
        std::cerr << "tapestry: " << session << ": " << named.size() << " projects are named '" << wanted
                  << "'; name one by its id:";
        for (const auto *p : named) std::cerr << " " << p->id;
        std::cerr << "\n";
        return kExitInvalid;
    }
    for (const store::ProjectInfo &p : projects)
        if (std::to_string(p.id) == wanted) {
            out = p;
            return kExitOk;
        }
    std::cerr << "tapestry: " << session << ": no project named '" << wanted << "'";
    if (!projects.empty()) {
        std::cerr << " (it has";
        for (size_t i = 0; i < projects.size(); ++i) std::cerr << (i == 0 ? ": '" : ", '") << projects[i].name << "'";
        std::cerr << ")";
    }
    std::cerr << "\n";
    return kExitInvalid;
}

int export_command(const SessionCommandOptions &o) {
    auto session = store::Session::open(o.session, store::OpenMode::read_only);
    if (!session) return store_failure(session.error());
    auto projects = (*session)->projects();
    if (!projects) return store_failure(projects.error());

    std::vector<store::ProjectInfo> chosen;
    if (!o.project.empty()) {
        store::ProjectInfo p;
        if (int code = find_project(*projects, o.session, o.project, p); code != kExitOk) return code;
        chosen.push_back(p);
    } else {
        chosen = *projects;
        if (o.version != 0) {
            std::cerr << "tapestry: --version needs a PROJECT\n";
            return kExitUsage;
        }
    }

    // -o names a file for one project (a path ending in .json or not a folder),
    // else the folder the projects go to (default: the current folder).
    std::error_code ec;
    const bool output_is_file = chosen.size() == 1 && !o.project.empty() && !o.output.empty() &&
                                (o.output.ends_with(".json") || !fs::is_directory(o.output, ec));
    if (!output_is_file && !o.output.empty()) {
        fs::create_directories(o.output, ec);
        if (ec) {
            std::cerr << "tapestry: " << o.output << ": cannot create the folder: " << ec.message() << "\n";
            return kExitInvalid;
        }
    }
    const fs::path dir = o.output.empty() ? fs::path(".") : fs::path(o.output);

    int exported = 0;
    for (const store::ProjectInfo &p : chosen) {
        if (p.latest_version_id == 0 && o.version == 0) {
            std::cerr << "tapestry: " << o.session << ": project '" << p.name << "' has no saved version; skipped\n";
            if (!o.project.empty()) return kExitInvalid;
            continue;
        }
        store::VersionId version_id = p.latest_version_id;
        int number = 0;
        if (o.version != 0) {
            auto v = (*session)->version_by_number(p.id, o.version);
            if (!v) return store_failure(v.error());
            version_id = v->id;
        }
        auto graph = (*session)->load_version(version_id);
        if (!graph) return store_failure(graph.error());
        auto versions = (*session)->versions(p.id, true);
        if (versions)
            for (const store::VersionInfo &v : *versions)
                if (v.id == version_id) number = v.number;
        const fs::path target = output_is_file ? fs::path(o.output) : dir / (file_name_for(p.name) + ".tapestry.json");
        if (std::string error = save_project_with_values(*graph, target); !error.empty()) {
            std::cerr << "tapestry: " << error << "\n";
            return kExitInvalid;
        }
        std::cout << "exported '" << p.name << "' version " << number << " → " << target.string() << " ("
                  << graph->node_count() << " nodes)\n";
        ++exported;
    }
    if (chosen.empty()) std::cout << o.session << ": no projects to export\n";
    return exported == 0 && !chosen.empty() ? kExitInvalid : kExitOk;
}

int import_command(const SessionCommandOptions &o) {
    LoadResult loaded = load_project(o.file);
    if (loaded.ok()) {
        const std::vector<Issue> value_issues =
            load_tensor_values(loaded.graph, fs::path(o.file).parent_path(), DataPathPolicy{o.allow_outside_data});
        loaded.issues.insert(loaded.issues.end(), value_issues.begin(), value_issues.end());
    }
    for (const Issue &issue : loaded.issues) std::cerr << "tapestry: " << o.file << ": " << format_issue(issue) << "\n";
    if (!loaded.ok()) return kExitInvalid;

    std::string name = o.name;
    if (name.empty()) name = loaded.graph.name;
    if (name.empty()) {
        name = fs::path(o.file).filename().string();
        for (std::string_view suffix : {".json", ".tapestry"})
            if (name.size() > suffix.size() && name.ends_with(suffix)) name.resize(name.size() - suffix.size());
    }

    const auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(o.wait_seconds * 1000));
    auto session = store::Session::open(o.session, store::OpenMode::read_write, wait);
    if (!session) return store_failure(session.error());
    auto project = (*session)->create_project(name);
    if (!project) return store_failure(project.error());
    auto version = (*session)->save_version(*project, loaded.graph, "import");
    if (!version) return store_failure(version.error());
    // The file the project continues: the studio opening it with this session goes on with it.
    const std::string file = fs::absolute(o.file).lexically_normal().string();
    if (auto recorded = (*session)->set_source_file(*project, file); !recorded)
        std::cerr << "warning: " << o.session << ": the project was imported, but not recorded as " << file
                  << "'s: " << recorded.error().message << "\n";
    std::cout << "imported " << o.file << " → " << o.session << ": project '" << name << "' (id " << *project
              << "), version " << version->number << ", " << version->node_count << " nodes\n";
    return kExitOk;
}

// The session opened read-write (waiting --wait seconds for another process
// that holds it) and the project PROJECT names; an exit code when either cannot be had.
int open_for_writing(const SessionCommandOptions &o, std::unique_ptr<store::Session> &session,
                     store::ProjectInfo &project) {
    const auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(o.wait_seconds * 1000));
    auto opened = store::Session::open(o.session, store::OpenMode::read_write, wait);
    if (!opened) return store_failure(opened.error());
    session = std::move(opened).value();
    auto projects = session->projects();
    if (!projects) return store_failure(projects.error());
    return find_project(*projects, o.session, o.project, project);
}

int rename_command(const SessionCommandOptions &o) {
    if (o.new_name.empty()) {
        std::cerr << "tapestry: NEW_NAME: a project needs a name\n";
        return kExitUsage;
    }
    std::unique_ptr<store::Session> session;
    store::ProjectInfo p;
    if (int code = open_for_writing(o, session, p); code != kExitOk) return code;
    if (auto renamed = session->rename_project(p.id, o.new_name); !renamed) return store_failure(renamed.error());
    std::cout << o.session << ": project " << p.id << " '" << p.name << "' is now '" << o.new_name << "'\n";
    return kExitOk;
}

int delete_command(const SessionCommandOptions &o) {
    std::unique_ptr<store::Session> session;
    store::ProjectInfo p;
    if (int code = open_for_writing(o, session, p); code != kExitOk) return code;
    auto plans = session->plans(p.id);
    if (!plans) return store_failure(plans.error());
    auto searches = session->search_runs(p.id);
    if (!searches) return store_failure(searches.error());
    std::string what = plural(p.version_count, "version");
    if (!plans->empty()) what += ", " + plural(static_cast<long long>(plans->size()), "plan") + " with their launches";
    if (!searches->empty()) what += ", " + plural(static_cast<long long>(searches->size()), "search run");
    if (!o.yes) {
        std::cerr << "tapestry: " << o.session << ": deleting project " << p.id << " '" << p.name << "' removes its "
                  << what << "; nothing was deleted (add --yes to delete it)\n";
        return kExitUsage;
    }
    if (auto deleted = session->delete_project(p.id); !deleted) return store_failure(deleted.error());
    std::cout << o.session << ": deleted project " << p.id << " '" << p.name << "' with its " << what << "\n";
    return kExitOk;
}

// A launch's wall time from its measurements (parsed), "—" when they hold none.
// The session read-only and the projects named (PROJECT, or every one); an exit
// code when either cannot be had.
int open_chosen(const SessionCommandOptions &o, std::unique_ptr<store::Session> &session,
                std::vector<store::ProjectInfo> &chosen) {
    auto opened = store::Session::open(o.session, store::OpenMode::read_only);
    if (!opened) return store_failure(opened.error());
    session = std::move(opened).value();
    auto projects = session->projects();
    if (!projects) return store_failure(projects.error());
    chosen = *projects;
    if (!o.project.empty()) {
        store::ProjectInfo one;
        if (int code = find_project(*projects, o.session, o.project, one); code != kExitOk) return code;
        chosen = {one};
    }
    return kExitOk;
}

std::string wall_text(const nlohmann::json &measured) {
    if (!measured.is_object() || !measured.contains("wall_seconds") || !measured["wall_seconds"].is_number()) return "—";
    return plan::seconds_text(measured["wall_seconds"].get<double>());
}

// How the outputs compared, in a word: PASS, FAIL, or "—" when not compared.
std::string outputs_word(const store::LaunchRecord &l) {
    if (l.equivalence.rfind("pass", 0) == 0) return "PASS";
    if (l.equivalence.rfind("fail", 0) == 0) return "FAIL";
    return "—";
}

int launches_command(const SessionCommandOptions &o) {
    std::unique_ptr<store::Session> session;
    std::vector<store::ProjectInfo> chosen;
    if (int code = open_chosen(o, session, chosen); code != kExitOk) return code;
    ordered_json list = ordered_json::array();
    // Per plan: its heading line and its launches as a table (a header row first).
    struct Block {
        std::string heading;
        std::vector<std::vector<std::string>> table;
    };
    std::vector<Block> blocks;
    long long plans_listed = 0, launches_listed = 0;
    bool plan_found = false;
    for (const store::ProjectInfo &p : chosen) {
        auto plans = session->plans(p.id);
        if (!plans) return store_failure(plans.error());
        for (const store::PlanRecord &plan : *plans) {
            if (o.plan != 0 && plan.id != o.plan) continue;
            plan_found = true;
            auto launches = session->launches(plan.id);
            if (!launches) return store_failure(launches.error());
            ++plans_listed;
            launches_listed += static_cast<long long>(launches->size());
            ordered_json jl = ordered_json::array();
            Block &block = blocks.emplace_back();
            block.heading = "  plan " + std::to_string(plan.id) + " of '" + p.name + "': " + plan.target + " × " +
                            std::to_string(plan.devices) + ", " + plan.summary + "; predicted makespan " +
                            plan::seconds_text(plan.makespan_seconds) + ", peak " +
                            human_bytes(static_cast<double>(plan.peak_bytes)) + " (prediction); saved " +
                            plan.created_at;
            if (launches->empty()) block.heading += "\n    not launched";
            else block.table.push_back({"launch", "started", "backend", "status", "wall (measured)", "outputs"});
            // Newest first, as the studio's history.
            for (auto l = launches->rbegin(); l != launches->rend(); ++l) {
                const auto measured = nlohmann::json::parse(l->measurements_json, nullptr, false);
                block.table.push_back({std::to_string(l->id), l->started_at, l->backend,
                                       l->status + (l->error.empty() ? "" : ": " + l->error), wall_text(measured),
                                       outputs_word(*l)});
                jl.push_back(ordered_json{{"id", l->id},
                                          {"started_at", l->started_at},
                                          {"finished_at", l->finished_at},
                                          {"backend", l->backend},
                                          {"status", l->status},
                                          {"error", l->error},
                                          {"equivalence", l->equivalence},
                                          {"measurements", measured.is_discarded() ? nlohmann::json() : measured}});
            }
            list.push_back(ordered_json{{"id", plan.id},
                                        {"project", p.name},
                                        {"project_id", p.id},
                                        {"target", plan.target},
                                        {"devices", plan.devices},
                                        {"summary", plan.summary},
                                        {"predicted_makespan_seconds", plan.makespan_seconds},
                                        {"predicted_peak_bytes", plan.peak_bytes},
                                        {"created_at", plan.created_at},
                                        {"launches", std::move(jl)}});
        }
    }
    if (o.plan != 0 && !plan_found) {
        std::cerr << "tapestry: " << o.session << ": no plan " << o.plan
                  << (o.project.empty() ? std::string() : " in project '" + chosen.front().name + "'") << "\n";
        return kExitInvalid;
    }
    if (o.plan != 0 && !o.output.empty()) {
        auto text = session->load_plan_json(o.plan);
        if (!text) return store_failure(text.error());
        if (!write_output(o.output, *text, o.session)) return kExitInvalid;
    }
    if (o.json) {
        print_json(ordered_json{{"session", o.session}, {"plans", std::move(list)}});
        return kExitOk;
    }
    std::cout << o.session << ": " << plural(plans_listed, "plan") << ", " << plural(launches_listed, "launch", "launches") << "\n";
    for (const Block &block : blocks) {
        std::cout << block.heading << "\n";
        if (!block.table.empty()) print_table(block.table, "    ");
    }
    if (o.plan != 0 && !o.output.empty()) std::cout << "plan " << o.plan << " written to " << o.output << "\n";
    return kExitOk;
}

// A run's settings in words: "8 devices, time · memory · devices, budget 30 s".
std::string settings_text(const search::RunSettings &r) {
    std::string objectives;
    for (search::Objective ob : r.objectives) objectives += (objectives.empty() ? "" : " · ") + std::string(search::objective_name(ob));
    std::string text = plural(r.devices, "device") + (r.nodes > 0 ? " in " + plural(r.nodes, "node") : "") + ", " +
                       objectives;
    if (r.constraints.memory_cap > 0) text += ", memory cap " + human_bytes(r.constraints.memory_cap);
    if (r.constraints.max_time > 0) text += ", max step time " + plan::seconds_text(r.constraints.max_time);
    if (r.options.budget_seconds > 0) text += ", budget " + plan::seconds_text(r.options.budget_seconds);
    if (r.options.max_evaluations > 0) text += ", " + plural(r.options.max_evaluations, "evaluation");
    if (r.warm_start_run > 0) text += ", from search run " + std::to_string(r.warm_start_run) + "'s front";
    return text;
}

int searches_command(const SessionCommandOptions &o) {
    std::unique_ptr<store::Session> session;
    std::vector<store::ProjectInfo> chosen;
    if (int code = open_chosen(o, session, chosen); code != kExitOk) return code;
    ordered_json list = ordered_json::array();
    std::vector<std::string> lines;
    std::vector<std::vector<std::string>> front_table;  // with --search: its front
    std::vector<search::FrontRow> front_rows;
    search::FrontHeader header;
    long long listed = 0;
    for (const store::ProjectInfo &p : chosen) {
        auto runs = session->search_runs(p.id);
        if (!runs) return store_failure(runs.error());
        // Newest first, as the launches are.
        for (auto run = runs->rbegin(); run != runs->rend(); ++run) {
            if (o.search != 0 && run->id != o.search) continue;
            ++listed;
            auto settings = search::parse_settings(run->settings_json);
            const std::string said = settings ? settings_text(*settings) : "settings unreadable: " + settings.error();
            lines.push_back("  search run " + std::to_string(run->id) + " of '" + p.name + "': " + run->target + ", " +
                            said + ", seed " + std::to_string(run->seed) + "; started " + run->started_at + ", " +
                            (run->status == "running" && run->finished_at.empty() ? "never finished (running, or its process died)"
                                                                                    : run->status) +
                            "; " + plural(run->candidates, "plan") + " kept (candidates without a plan are not), " + std::to_string(run->on_front) +
                            " on the front");
            const ordered_json settings_json = ordered_json::parse(run->settings_json, nullptr, false);
            ordered_json jr{{"id", run->id},
                            {"project", p.name},
                            {"project_id", p.id},
                            {"version_id", run->version_id},
                            {"target", run->target},
                            {"settings", settings_json.is_discarded() ? ordered_json(nullptr) : settings_json},
                            {"seed", run->seed},
                            {"started_at", run->started_at},
                            {"finished_at", run->finished_at},
                            {"status", run->status},
                            {"candidates", run->candidates},
                            {"on_front", run->on_front}};
            if (o.search != 0) {
                auto loaded = session->load_search_run(run->id);
                if (!loaded) return store_failure(loaded.error());
                header = {p.name, run->target, settings ? settings->devices : 0, run->seed};
                for (const store::SearchCandidateRecord &c : loaded->candidates)
                    if (c.on_front) front_rows.push_back({c.description, c.key, search::figures_of(c)});
                // As the front is drawn: fastest first.
                std::stable_sort(front_rows.begin(), front_rows.end(), [](const auto &a, const auto &b) {
                    return a.figures.makespan < b.figures.makespan;
                });
                front_table.push_back({"#", "step time", "peak memory", "devices", "communication", "plan"});
                ordered_json jf = ordered_json::array();
                for (size_t i = 0; i < front_rows.size(); ++i) {
                    const search::Figures &f = front_rows[i].figures;
                    front_table.push_back({std::to_string(i), plan::seconds_text(f.makespan),
                                           byte_text(static_cast<std::int64_t>(f.peak)) +
                                               (f.violation > 0 ? " (" + f.violated + ")" : ""),
                                           std::to_string(f.devices), byte_text(static_cast<std::int64_t>(f.comm_bytes)),
                                           front_rows[i].plan});
                    jf.push_back({{"index", i},
                                  {"plan", front_rows[i].plan},
                                  {"key", front_rows[i].key},
                                  {"figures", ordered_json::parse(search::figures_json_text(f))}});
                }
                jr["front"] = std::move(jf);
            }
            list.push_back(std::move(jr));
        }
    }
    if (o.search != 0 && listed == 0) {
        std::cerr << "tapestry: " << o.session << ": no search run " << o.search
                  << (o.project.empty() ? std::string() : " in project '" + chosen.front().name + "'") << "\n";
        return kExitInvalid;
    }
    if (!o.export_front.empty()) {
        const std::string text = front_format(o.export_front) == "csv" ? search::front_csv(front_rows)
                                                                        : search::front_json(header, front_rows);
        if (!write_output(o.export_front, text, o.session)) return kExitInvalid;
    }
    if (o.json) {
        print_json(ordered_json{{"session", o.session},
                                {"label", "figures are predictions of the cost model (not measurements)"},
                                {"searches", std::move(list)}});
        return kExitOk;
    }
    std::cout << o.session << ": " << plural(listed, "search run") << "\n";
    for (const std::string &line : lines) std::cout << line << "\n";
    if (o.search != 0) {
        std::cout << "  its front (predictions of the cost model): " << plural(static_cast<long long>(front_rows.size()), "plan")
                  << "\n";
        if (!front_rows.empty()) print_table(front_table, "    ");
    }
    if (!o.export_front.empty()) std::cout << "front written to " << o.export_front << "\n";
    return kExitOk;
}

}  // namespace

void add_session_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<SessionCommandOptions>();
    auto add_wait = [o](CLI::App *sub) {
        sub->add_option("--wait", o->wait_seconds,
                        "Seconds to wait while another process holds the session (default 10; 0: refuse at once)")
            ->check(CLI::Range(0.0, 3600.0));
    };
    CLI::App *cmd = app.add_subcommand(
        "session", "Move projects in and out of a session file (*.tapestry-session): list, export, import, "
                   "rename, delete; the launches and searches it keeps.");
    cmd->require_subcommand(1);
    cmd->footer(
        "Exit codes: 0 done, 1 the session or project cannot be read or written (the message says why: "
        "damaged, locked, read-only, newer version, not found), 2 usage error.");

    CLI::App *list = cmd->add_subcommand("list", "List the projects of a session: versions and latest save time.");
    list->add_option("SESSION", o->session, "Session file")->required();
    list->add_flag("--json", o->json, "Print {session, schema_version, projects[]} as JSON");
    list->callback([o, &action] { action = [o] { return list_command(*o); }; });

    CLI::App *launches = cmd->add_subcommand(
        "launches", "List the plans a session keeps and their launches (tapestry launch --session, the studio), "
                    "newest first; -o writes a plan back as a plan file.");
    launches->add_option("SESSION", o->session, "Session file")->required();
    launches->add_option("PROJECT", o->project, "Project name or id (default: every project)");
    launches->add_option("--plan", o->plan, "Only this plan (its id, as listed)")->check(CLI::Range(1LL, 1LL << 53));
    checked_output_file(launches->add_option("-o,--output", o->output, "With --plan: write it to FILE (tapestry-plan JSON)"));
    launches->add_flag("--json", o->json, "Print {session, plans[]} as JSON, each plan with its launches");
    launches->callback([o, &action] {
        action = [o] {
            if (!o->output.empty() && o->plan == 0) {
                std::cerr << "tapestry: --output: needs --plan (which plan to write)\n";
                return static_cast<int>(kExitUsage);
            }
            return launches_command(*o);
        };
    });

    CLI::App *searches = cmd->add_subcommand(
        "searches", "List the Pareto-front searches a session keeps (tapestry optimize --session, the studio's "
                    "Optimize dock), newest first; --search shows one's front and --export-front writes it.");
    searches->add_option("SESSION", o->session, "Session file")->required();
    searches->add_option("PROJECT", o->project, "Project name or id (default: every project)");
    searches->add_option("--search", o->search, "Only this search run (its id, as listed), with its front")
        ->check(CLI::Range(1LL, 1LL << 53));
    checked_front_file(searches->add_option("--export-front", o->export_front,
                                            "With --search: write its front (.json, or .csv, as tapestry optimize does)"));
    searches->add_flag("--json", o->json, "Print {session, searches[]} as JSON (with --search, its front too)");
    searches->callback([o, &action] {
        action = [o] {
            if (!o->export_front.empty() && o->search == 0) {
                std::cerr << "tapestry: --export-front: needs --search (which search's front to write)\n";
                return static_cast<int>(kExitUsage);
            }
            return searches_command(*o);
        };
    });

    CLI::App *exporter = cmd->add_subcommand(
        "export", "Write projects of a session as *.tapestry.json (large values as .npy files beside them).");
    exporter->add_option("SESSION", o->session, "Session file")->required();
    exporter->add_option("PROJECT", o->project, "Project name or id (default: every project)");
    exporter->add_option("-o,--output", o->output,
                         "Output file (one project) or folder (default: the current folder, NAME.tapestry.json)");
    exporter->add_option("--version", o->version, "Version number to export (default: the latest)")
        ->check(CLI::Range(1, 1 << 30));
    exporter->callback([o, &action] { action = [o] { return export_command(*o); }; });

    CLI::App *importer = cmd->add_subcommand(
        "import", "Add a project file to a session as a new project (creates the session if missing).");
    importer->add_option("SESSION", o->session, "Session file")->required();
    importer->add_option("FILE", o->file, "Project file (*.tapestry.json)")->required();
    importer->add_option("--name", o->name, "Project name (default: the project's own name)");
    add_allow_outside_data_flag(importer, o->allow_outside_data);
    add_wait(importer);
    importer->callback([o, &action] { action = [o] { return import_command(*o); }; });

    CLI::App *renamer = cmd->add_subcommand("rename", "Rename a project of a session.");
    renamer->add_option("SESSION", o->session, "Session file")->required();
    renamer->add_option("PROJECT", o->project, "Project name or id")->required();
    renamer->add_option("NEW_NAME", o->new_name, "Its new name")->required();
    add_wait(renamer);
    renamer->callback([o, &action] { action = [o] { return rename_command(*o); }; });

    CLI::App *deleter = cmd->add_subcommand(
        "delete", "Delete a project from a session, with its versions, plans and their launches, and search runs; "
                  "without --yes it only says what would go.");
    deleter->add_option("SESSION", o->session, "Session file")->required();
    deleter->add_option("PROJECT", o->project, "Project name or id")->required();
    deleter->add_flag("--yes", o->yes, "Delete it (there is no undo)");
    add_wait(deleter);
    deleter->callback([o, &action] { action = [o] { return delete_command(*o); }; });
}

}  // namespace tapestry::cli
