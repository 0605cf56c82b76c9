#!/usr/bin/env bash
# The function-length counter (scripts/function_lengths.py) on a file whose
# lengths are known (braces in strings, comments, raw strings and character
# literals, a constructor's initializer list, a lambda, a class), then the
# check on egm's own sources: no function of 120 lines or more but those named.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../../scripts/function_lengths.py"
py=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
  echo '#include <string>'
  echo 'namespace x {'
  echo 'struct Holder {'
  echo '  Holder() : a_{1}, b_(2) {'
  echo '    const char* s = "}}}";  // {{{'
  echo "    char c = '{';"
  echo '  }'
  echo '  int a_, b_;'
  echo '  int get() const { return a_; }'
  echo '};'
  echo 'int long_one(int n) {'
  echo '  auto f = [](int k) { return k + 1; };'
  echo '  /* } } } */'
  echo '  std::string r = R"x( } )x";'
  for i in $(seq 1 125); do echo "  n = f(n);  // $i"; done
  echo '  return n;'
  echo '}'
  echo '}  // namespace x'
} >"$work/sample.cpp"

out=$("$py" "$script" --over 1 "$work/sample.cpp")
echo "$out"
grep -qE '^ +131  long_one ' <<<"$out" || { echo "FAIL: long_one should be 131 lines"; exit 1; }
grep -qE '^ +4  Holder::Holder|^ +4  Holder ' <<<"$out" || { echo "FAIL: the constructor should be 4 lines"; exit 1; }
grep -qE '^ +1  get ' <<<"$out" || { echo "FAIL: get should be 1 line"; exit 1; }
grep -q '^3 functions in 1 files' <<<"$out" || { echo "FAIL: 3 functions expected"; exit 1; }
# The check fails on it, and passes when the long one is allowed.
if "$py" "$script" --check 120 "$work/sample.cpp" >/dev/null; then echo "FAIL: --check passed a 131-line function"; exit 1; fi
"$py" "$script" --check 120 --allow long_one "$work/sample.cpp" >/dev/null

# egm's sources: no function of 120 lines or more, none allowed.
"$py" "$script" --check 120
