// Targets for the commands that plan (`plan`, `targets`, `optimize`): a target by
// name — a file, a target a session keeps, or a built-in one — with the host
// measured on first use and kept in the session; what a session keeps of them
// (targets, calibration measurements).
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "cost/model.h"
#include "cost/target.h"
#include "launch/records.h"
#include "store/session.h"

namespace tapestry::cli {

// A session file not made yet: missing, or empty (the first write makes an empty
// file a session, as it makes a missing one). Reading one finds nothing.
bool new_session_file(const std::string &path);
// Whether the session at `path` could be used — read, and kept in — asked before
// anything runs, so that a long launch, calibration or search does not end by
// failing on it: an existing file must open as a session (read-only, so a studio
// holding it open does not block the question), and a new one needs its folder.
// Empty when it could, else why not ("session x is a folder, not a session file").
std::string session_refusal(const std::string &path);
// Measures the host (progress on stderr when `progress_bar`) and returns its target.
Expected<cost::Target, std::string> measure_host_target(int threads, bool progress_bar);
// The targets a session keeps (user copies and the measured host), by name; none
// for a session that does not exist yet.
Expected<std::vector<store::TargetRecord>, std::string> session_targets(const std::string &session);
// What a session file measured of a target (launch::session_calibration: its
// calibration points and, on a cpu target, the wake); empty without a session.
Expected<cost::Calibration, std::string> session_calibration(const std::string &session, const cost::Target &target);
// Saves a target into a session (origin "measured" or "user"); "" or the error.
std::string keep_in_session(const std::string &session, const cost::Target &t, const std::string &origin);
// A target by name: a file, a target the session keeps, or a built-in one (a
// unique prefix will do). The host is measured when the session has no
// measurement or `remeasure` is set; with a session, the measurement is kept there.
Expected<cost::Target, std::string> resolve_target(const std::string &name, int threads, const std::string &session,
                                                   bool remeasure);

}  // namespace tapestry::cli
