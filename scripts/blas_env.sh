# Sourced by quick.sh and test.sh: picks OpenBLAS's kernels from the CPU's flags
# when OPENBLAS_CORETYPE is unset. Under a hypervisor OpenBLAS often fails to
# recognise the CPU model and falls back to its generic "Prescott" kernels,
# halving the matrix-product rate (measured: results/BENCHMARKS.md; `egm bench`
# prints which kernels are in use, and egm warns when they are the generic ones).
# mpirun passes the variable on to every rank it starts on this machine.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -r /proc/cpuinfo ]; then
  _egm_flags=$(grep -m1 '^flags' /proc/cpuinfo)
  case " $_egm_flags " in
    *" avx512f "*" avx512bw "*|*" avx512bw "*" avx512f "*) export OPENBLAS_CORETYPE=SkylakeX ;;
    *" avx2 "*) export OPENBLAS_CORETYPE=Haswell ;;
  esac
  unset _egm_flags
fi
