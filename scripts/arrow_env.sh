# Sourced by setup.sh: makes sure the pinned Apache Arrow C++ libraries are
# installed and sets
#   EGM_ARROW_CMAKE_ARGS  the CMake arguments that select them (and the python below)
#   EGM_NOTEBOOK_PYTHON   a python3 with pyarrow and, when EGM_ARROW_TEST_PACKAGES=1,
#                         the notebook packages the export and notebook tests read with
#
# `egm export --format parquet` writes through Arrow's C++ Parquet writer. PyPI's
# pyarrow wheel carries it, as the torch wheel carries LibTorch: its headers
# (pyarrow/include), libarrow.so.2600 and libparquet.so.2600 (their other
# dependencies linked in). It is installed once per machine into a virtual
# environment OUTSIDE the checkout, keyed by the pinned version (about 170 MB):
#   ${EGM_ARROW_HOME:-${XDG_CACHE_HOME:-~/.cache}/egm/pyarrow-26.0.1}
# Arrow 26's headers need C++20: only src/export/parquet_sink.cpp sees them
# (src/export/README.md).
#
# The test packages (pandas, Polars, DuckDB with its SQLite scanner, TensorBoard's
# event reader) go into the same environment, pinned, once per set of pins: the
# tests read egm's database and exports with them as a researcher's notebook would.
# statsmodels and scipy: the independent implementation `egm plan` is checked
# against (tests/analysis/check_plan_statsmodels.py).

EGM_ARROW_VERSION=26.0.1
EGM_ARROW_TEST_PINS=(pandas==3.1.1 polars==2.1.0 duckdb==1.5.5 duckdb-extension-sqlite-scanner==1.5.5
                     tensorboard==2.21.0 statsmodels==0.15.0 scipy==1.17.1)
EGM_ARROW_HOME=${EGM_ARROW_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/egm/pyarrow-$EGM_ARROW_VERSION}
EGM_ARROW_CMAKE_ARGS=()

_egm_arrow_test_marker="$EGM_ARROW_HOME/.egm-test-$(printf '%s\n' "${EGM_ARROW_TEST_PINS[@]}" | sha256sum | cut -c1-12)"
if [ ! -f "$EGM_ARROW_HOME/.egm-complete" ] ||
   { [ "${EGM_ARROW_TEST_PACKAGES:-0}" = 1 ] && [ ! -f "$_egm_arrow_test_marker" ]; }; then
  mkdir -p "$(dirname "$EGM_ARROW_HOME")"
  (
    # One installer at a time per machine (CI and a developer may start together).
    flock 9
    if [ ! -f "$EGM_ARROW_HOME/.egm-complete" ]; then
      if [ -e "$EGM_ARROW_HOME" ] && [ ! -f "$EGM_ARROW_HOME/pyvenv.cfg" ]; then
        echo "egm setup: $EGM_ARROW_HOME exists and is not a virtual environment; not touching it (set EGM_ARROW_HOME)" >&2
        exit 1
      fi
      echo "egm setup: installing pyarrow==$EGM_ARROW_VERSION (Arrow C++ and its Parquet writer, ~170 MB) into $EGM_ARROW_HOME"
      rm -rf "$EGM_ARROW_HOME"  # an interrupted install of ours
      python3 -m venv "$EGM_ARROW_HOME"
      "$EGM_ARROW_HOME/bin/pip" install --quiet --disable-pip-version-check "pyarrow==$EGM_ARROW_VERSION"
      touch "$EGM_ARROW_HOME/.egm-complete"
    fi
    if [ "${EGM_ARROW_TEST_PACKAGES:-0}" = 1 ] && [ ! -f "$_egm_arrow_test_marker" ]; then
      echo "egm setup: installing the notebook test packages (${EGM_ARROW_TEST_PINS[*]}) into $EGM_ARROW_HOME"
      "$EGM_ARROW_HOME/bin/pip" install --quiet --disable-pip-version-check "pyarrow==$EGM_ARROW_VERSION" \
        "${EGM_ARROW_TEST_PINS[@]}"
      touch "$_egm_arrow_test_marker"
    fi
  ) 9>"$(dirname "$EGM_ARROW_HOME")/.install.lock"
fi
EGM_NOTEBOOK_PYTHON="$EGM_ARROW_HOME/bin/python"
_egm_pyarrow=$("$EGM_NOTEBOOK_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/pyarrow
EGM_ARROW_CMAKE_ARGS+=("-DEGM_ARROW_DIR=$_egm_pyarrow" "-DEGM_NOTEBOOK_PYTHON=$EGM_NOTEBOOK_PYTHON")
unset _egm_pyarrow _egm_arrow_test_marker
