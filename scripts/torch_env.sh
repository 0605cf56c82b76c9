# Sourced by setup.sh: makes sure the pinned LibTorch is installed and sets
#   EGM_TORCH_CMAKE_ARGS  the CMake arguments that select it
#   EGM_PYTHON            a python3 with that torch and numpy (the PyTorch reference tests)
#
# egm builds against one LibTorch: PyPI's torch==2.11.0, the CUDA 13.0 build
# GPU clusters run. Its wheel carries LibTorch (headers, the CMake package,
# libtorch_cuda, libc10_cuda) and pulls NCCL and the CUDA runtime as wheels.
# It is installed once per machine into a virtual environment OUTSIDE the
# checkout, keyed by the pinned version, so fresh clones and CI find it again:
#   ${EGM_TORCH_HOME:-${XDG_CACHE_HOME:-~/.cache}/egm/torch-2.11.0}
# (about 4.6 GB; measured 1 min 30 s to download and install here).
# Compiling its CUDA code paths needs a CUDA 13 toolkit (nvcc): /usr/local/cuda,
# or CUDACXX. Without one, egm still builds, CPU only, against the same LibTorch.
#
# EGM_TORCH=system skips all of this: CMake then finds whatever LibTorch
# CMAKE_PREFIX_PATH / Torch_DIR names (a cluster's module, Debian's libtorch-dev).

EGM_TORCH_VERSION=2.11.0
EGM_TORCH=${EGM_TORCH:-pypi}
EGM_TORCH_CMAKE_ARGS=()

if [ "$EGM_TORCH" = pypi ]; then
  EGM_TORCH_HOME=${EGM_TORCH_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/egm/torch-$EGM_TORCH_VERSION}
  if [ ! -f "$EGM_TORCH_HOME/.egm-complete" ]; then
    mkdir -p "$(dirname "$EGM_TORCH_HOME")"
    (
      # One installer at a time per machine (CI and a developer may start together).
      flock 9
      if [ ! -f "$EGM_TORCH_HOME/.egm-complete" ]; then
        if [ -x "$EGM_TORCH_HOME/bin/python" ] && "$EGM_TORCH_HOME/bin/python" -c \
             "import numpy, torch, sys; sys.exit(torch.__version__.split('+')[0] != '$EGM_TORCH_VERSION')" 2>/dev/null; then
          : # a complete environment made by hand (or before the marker): keep it
        elif [ -e "$EGM_TORCH_HOME" ] && [ ! -f "$EGM_TORCH_HOME/pyvenv.cfg" ]; then
          echo "egm setup: $EGM_TORCH_HOME exists and is not a virtual environment; not touching it (set EGM_TORCH_HOME)" >&2
          exit 1
        else
          echo "egm setup: installing torch==$EGM_TORCH_VERSION (CUDA 13.0 LibTorch, ~4.6 GB) into $EGM_TORCH_HOME"
          rm -rf "$EGM_TORCH_HOME"  # an interrupted install of ours
          python3 -m venv "$EGM_TORCH_HOME"
          "$EGM_TORCH_HOME/bin/pip" install --quiet --disable-pip-version-check "torch==$EGM_TORCH_VERSION" numpy
        fi
        touch "$EGM_TORCH_HOME/.egm-complete"
      fi
    ) 9>"$(dirname "$EGM_TORCH_HOME")/.install.lock"
  fi
  EGM_PYTHON="$EGM_TORCH_HOME/bin/python"
  _egm_site=$("$EGM_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  _egm_torch="$_egm_site/torch"
  # torch's own folder first: its lib/ must win over any other libtorch.so on the system.
  EGM_TORCH_CMAKE_ARGS+=("-DCMAKE_PREFIX_PATH=$_egm_torch;$_egm_torch/share/cmake")
  # NCCL from the wheel torch itself loads, so the process has one libnccl.
  if [ -f "$_egm_site/nvidia/nccl/include/nccl.h" ]; then
    EGM_TORCH_CMAKE_ARGS+=("-DNCCL_INCLUDE_DIR=$_egm_site/nvidia/nccl/include"
                           "-DNCCL_LIBRARY=$_egm_site/nvidia/nccl/lib/libnccl.so.2")
  fi
  unset _egm_site _egm_torch
else
  EGM_PYTHON=${EGM_PYTHON:-/usr/bin/python3}
fi
EGM_TORCH_CMAKE_ARGS+=("-DEGM_PYTHON=$EGM_PYTHON")
_egm_nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[ -x "$_egm_nvcc" ] && EGM_TORCH_CMAKE_ARGS+=("-DCMAKE_CUDA_COMPILER=$_egm_nvcc")
unset _egm_nvcc
