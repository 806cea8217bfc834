#!/usr/bin/env bash
# Installs what is missing, builds into build/, and opens Tapestry Studio on the
# default session (~/.local/share/Tapestry/Tapestry Studio/default.tapestry-session,
# created with the example MLP on first start). Arguments are passed to
# tapestry-studio (a project file, --session FILE, --no-session, --screenshot FILE).
set -euo pipefail
cd "$(dirname "$0")"
source .ci/common.sh

tapestry_install_packages
tapestry_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ "${QT_QPA_PLATFORM:-}" != "offscreen" ]; then
  cat <<MSG
tapestry-studio: no display found (DISPLAY and WAYLAND_DISPLAY are unset), so the
studio window cannot open here. Headless alternatives:
  ./build/app/tapestry show projects/mlp.tapestry.json          # summary in the terminal
  ./build/app/tapestry export projects/mlp.tapestry.json --format svg -o mlp.svg
  xvfb-run -a ./build/app/tapestry-studio --screenshot studio.png   # render the studio to a PNG
MSG
  exit 1
fi
exec ./build/app/tapestry-studio "$@"
