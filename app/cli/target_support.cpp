// Targets for the commands that plan (see target_support.h).
#include "target_support.h"

#include <filesystem>

#include "launch/host_target.h"
#include "launch/records.h"
#include "run_support.h"

namespace tapestry::cli {

namespace fs = std::filesystem;

bool new_session_file(const std::string &path) {
    std::error_code ec;
    return !fs::exists(path, ec) || (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0);
}

std::string session_refusal(const std::string &path) {
    if (!new_session_file(path)) {
        auto s = store::Session::open(path, store::OpenMode::read_only);
        return s ? std::string() : s.error().message;
    }
    std::error_code ec;
    const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    if (!fs::is_directory(folder, ec))
        return "cannot make the session " + path + ": the folder " + folder.string() + " does not exist";
    return {};
}

// Measures the host (progress on stderr) and returns its target.
Expected<cost::Target, std::string> measure_host_target(int threads, bool progress_bar) {
    ProgressBar bar(progress_bar);
    auto t = launch::measure_host_target(threads, [&](double f, const std::string &what) {
        bar.update("measuring host: " + what, static_cast<int>(f * 100), 100);
        return true;
    });
    bar.clear();
    if (!t) return unexpected("measuring the host: " + t.error());
    return t;
}

// The targets a session keeps (user copies and the measured host), by name.
Expected<std::vector<store::TargetRecord>, std::string> session_targets(const std::string &session) {
    // A new session keeps none yet.
    if (session.empty() || new_session_file(session))
        return std::vector<store::TargetRecord>{};
    auto s = store::Session::open(session, store::OpenMode::read_only);
    if (!s) return unexpected(s.error().message);
    auto t = (*s)->targets();
    if (!t) return unexpected(t.error().message);
    return std::move(t).value();
}

// What a session file measured of a target (see target_support.h).
Expected<cost::Calibration, std::string> session_calibration(const std::string &session, const cost::Target &target) {
    if (session.empty() || new_session_file(session)) return cost::Calibration{};
    auto s = store::Session::open(session, store::OpenMode::read_only);
    if (!s) return unexpected(s.error().message);
    return launch::session_calibration(**s, target);
}

// Saves a target into a session (origin "measured" or "user").
std::string keep_in_session(const std::string &session, const cost::Target &t, const std::string &origin) {
    auto s = store::Session::open(session, store::OpenMode::read_write, std::chrono::seconds(10));
    if (!s) return s.error().message;
    auto saved = (*s)->save_target(t.name, origin, cost::target_json(t));
    return saved ? "" : saved.error().message;
}

// A target by name: a file, a target the session keeps, or a built-in one (a
// unique prefix will do). The host is measured when neither the session has a
// measurement nor `remeasure` is off; with a session, the measurement is kept there.
Expected<cost::Target, std::string> resolve_target(const std::string &name, int threads, const std::string &session,
                                                   bool remeasure) {
    if (fs::exists(name) && !fs::is_directory(name)) return cost::load_target(name);
    auto kept = session_targets(session);
    if (!kept) return unexpected(kept.error());
    auto t = cost::builtin_target(name);
    const std::string wanted = t ? t->name : name;
    if (!remeasure)
        for (const store::TargetRecord &r : *kept)
            if (r.name == wanted) {
                auto parsed = cost::parse_target(r.target_json, session + " (target " + r.name + ")");
                // A host measured before targets kept their core count is measured again.
                if (parsed && r.origin == "measured" && parsed->kind == "cpu" && !parsed->device.cores.present) break;
                if (parsed) parsed->origin = "session";
                return parsed;
            }
    if (!t) return t;
    if (t->missing_figures().empty() || t->kind != "cpu") return t;
    auto measured = measure_host_target(threads, true);
    if (measured && !session.empty())
        if (std::string e = keep_in_session(session, *measured, "measured"); !e.empty())
            return unexpected("keeping the measurement in " + session + ": " + e);
    return measured;
}

}  // namespace tapestry::cli
