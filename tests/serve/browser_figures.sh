#!/usr/bin/env bash
# The plots in headless Chromium, measured (browser.py figures): egm serve's
# sweep pages and a cell page of the analysis fixture (no training: seconds),
# then the gallery of hard cases (egm_svg_gallery: long names, thirteen
# claims, crowded categories). Each plot is saved as WORK/shots/*.png.
#   browser_figures.sh EGM MAKE_FIXTURE GALLERY WORK   (exit 77 without chromium/chromedriver)
set -u
EGM=$1 MAKE_FIXTURE=$2 GALLERY=$3 WORK=$4
HERE=$(cd "$(dirname "$0")" && pwd)
command -v chromium >/dev/null && command -v chromedriver >/dev/null ||
  { echo "SKIP: no chromium/chromedriver (scripts/test.sh installs them)"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK/shots"
"$MAKE_FIXTURE" "$WORK/fx" >/dev/null || { echo "FAIL: the fixture"; exit 1; }
"$GALLERY" "$WORK/gallery.html" || { echo "FAIL: the gallery"; exit 1; }
"$EGM" serve --db "$WORK/fx/main.sqlite" --port 0 >"$WORK/serve.txt" 2>&1 &
serve_pid=$!
trap 'kill "$serve_pid" 2>/dev/null' EXIT
for _ in $(seq 1 300); do grep -q "^egm serve: http" "$WORK/serve.txt" && break; sleep 0.1; done
URL=$(sed -n 's/^egm serve: \(http[^ ]*\) .*/\1/p' "$WORK/serve.txt")
[ -n "$URL" ] || { echo "FAIL: egm serve printed no URL"; cat "$WORK/serve.txt"; exit 1; }
URL=${URL%/}
/usr/bin/python3 "$HERE/browser.py" figures "$WORK/shots" "$URL/sweep/fixture" "$URL/sweep/one_seed" \
  "$URL/sweep/fixture/cell/ega_mope-s0" "file://$WORK/gallery.html"
