#!/usr/bin/env bash
# Language bindings suite: builds libmemest (Release, installed to a prefix, and ASan+UBSan),
# then
#   C      the cross-language runner + typed-API/bad-input checks under ASan/LSan/UBSan
#   Python the wheel (pip, offline), installed into a fresh venv; pytest against the install;
#          the README's install from the repository root (venv, and the system Python as a user
#          install) and its example
#   Go     go vet + go test (cgo, pkg-config memest)
#   Java   SWIG (bindings/swig/memest.i) + JNI library + the scheduler-style test
#   Julia  Memest.jl's ccall sequence replayed with ctypes (pytest)
#   all    tests/crosslang: the same requests through C, the CLI, Python, Java, Go and Julia's
#          twin must give identical answers.
# Self-contained: run from the repository root as `bash scripts/test.d/20-bindings.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
B=$ROOT/build-bindings
PY=/usr/bin/python3
JOBS=${JOBS:-$(nproc)}
mkdir -p "$B"

echo "-- libmemest (Release + CLI), installed to $B/prefix"
cmake -S . -B "$B/release" -DCMAKE_BUILD_TYPE=Release -DMEMEST_BUILD_TESTS=OFF -DMEMEST_BUILD_CLI=ON > /dev/null
cmake --build "$B/release" -j "$JOBS" > /dev/null
rm -rf "$B/prefix"
cmake --install "$B/release" --prefix "$B/prefix" > /dev/null
PC=$(dirname "$(find "$B/prefix" -name memest.pc | head -1)")
LIBDIR=$(cd "$PC/.." && pwd)
export PKG_CONFIG_PATH="$PC"
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The shared library by its SONAME (libmemest.so.<major>), as a program linked to it loads it.
SONAME=$(objdump -p "$LIBDIR/libmemest.so" | awk '$1 == "SONAME" { print $2 }')
[ -n "$SONAME" ] || { echo "20-bindings: libmemest.so has no SONAME" >&2; exit 1; }
export MEMEST_LIBRARY="$LIBDIR/$SONAME"
CLI="$B/release/bindings/cli/memest"

echo "-- C: cross-language runner under ASan + UBSan + LSan"
cmake -S . -B "$B/asan" -DCMAKE_BUILD_TYPE=Debug -DMEMEST_SANITIZE=ON -DMEMEST_BUILD_TESTS=OFF \
  -DMEMEST_BUILD_CLI=OFF > /dev/null
cmake --build "$B/asan" --target memest_static -j "$JOBS" > /dev/null
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
cc -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -g $SAN -DMEMEST_STATIC \
  -I libmemest/include tests/crosslang/runner.c "$B/asan/libmemest/libmemest.a" -lyaml-cpp -lstdc++ -lm \
  -o "$B/runner-asan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$B/runner-asan" --typed
# The same runner against the installed shared library, found with pkg-config.
cc -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -O2 tests/crosslang/runner.c \
  $(pkg-config --cflags --libs memest) -o "$B/runner"
"$B/runner" --typed

echo "-- Python: wheel, fresh venv, pytest"
# setuptools relinks the extension only when its own sources change: start from a clean tree
# so a rebuilt libmemest is always the one inside the wheel.
rm -rf "$B/wheel" "$B/venv" bindings/python/build bindings/python/memest.egg-info
MEMEST_CMAKE_BUILD_DIR="$B/release" $PY -m pip wheel --no-build-isolation --no-deps --no-index \
  -q -w "$B/wheel" bindings/python
$PY -m venv --system-site-packages "$B/venv"
"$B/venv/bin/python" -m pip install -q --no-index --no-deps "$B"/wheel/memest-*.whl
# MEMEST_CLI: the training-stack tests compare the binding with `memest pretrain` too
(cd "$B" && MEMEST_CLI="$CLI" "$B/venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$ROOT/bindings/python/tests")

echo "-- Python: the README's install from the repository root, and its example"
# As a user runs them from a plain checkout: a fresh venv that sees Debian's pybind11
# (--system-site-packages) and pip install of the root pyproject.toml; then the system Python
# itself, as a user install (Debian 12's PEP 668 asks for --break-system-packages) into a
# throwaway HOME. MEMEST_CMAKE_BUILD_DIR reuses the Release build of the library above.
R="$B/readme"
rm -rf "$R" build-python memest.egg-info && mkdir -p "$R/home"
$PY - "$ROOT/README.md" > "$R/example.py" <<'PYEOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
section = text[text.index("**Python**"):text.index("**Java**")]
blocks = re.findall(r"```python\n(.*?)```", section, re.S)
assert len(blocks) == 1, f"README's Python section: one python example, found {len(blocks)}"
print("import memest, sys; print('memest from', memest.__file__, file=sys.stderr)")
print(blocks[0])
PYEOF
$PY -m venv --system-site-packages "$R/.venv"
MEMEST_CMAKE_BUILD_DIR="$B/release" "$R/.venv/bin/pip" install -q --no-build-isolation --no-index .
(cd "$R" && .venv/bin/python example.py > venv.out 2> venv.err)
grep -q "^memest from $R/.venv/" "$R/venv.err" || { cat "$R/venv.err"; echo "20-bindings: the venv did not use its install" >&2; exit 1; }
rm -rf build-python memest.egg-info
HOME="$R/home" PIP_ROOT_USER_ACTION=ignore MEMEST_CMAKE_BUILD_DIR="$B/release" $PY -m pip install -q --user --break-system-packages \
  --no-build-isolation --no-index .
(cd "$R" && HOME="$R/home" $PY example.py > system.out 2> system.err)
grep -q "^memest from $R/home/" "$R/system.err" || { cat "$R/system.err"; echo "20-bindings: the system Python did not use its user install" >&2; exit 1; }
rm -rf build-python memest.egg-info
cmp "$R/venv.out" "$R/system.out"
grep -q "^PretrainResult: out of memory" "$R/venv.out"
echo "README example: ok ($(wc -l < "$R/venv.out") lines, the same from the venv and the system Python)"

echo "-- Go: go vet, go test"
# cgo does not notice changes to headers outside the package (the installed memest.h):
# a fresh build cache keeps the Go structs in step with the library.
rm -rf "$B/go/cache"
export GOPATH="$B/go/path" GOCACHE="$B/go/cache" GOPROXY=off GOFLAGS= GO111MODULE=on GOTOOLCHAIN=local
(cd bindings/go && go vet ./... && go test -count=1 ./... && go build -o "$B/go/memest-crosslang" ./cmd/memest-crosslang)

echo "-- Java: SWIG, JNI library, test"
JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
rm -rf "$B/java" && mkdir -p "$B/java/src" "$B/java/classes"
swig -java -package org.memest.swig -outdir "$B/java/src" -I"$ROOT/libmemest/include" \
  -o "$B/java/memest_wrap.c" bindings/swig/memest.i
cc -shared -fPIC -O2 -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" "$B/java/memest_wrap.c" \
  $(pkg-config --cflags --libs memest) -Wl,-rpath,"$LIBDIR" -o "$B/java/libmemest_jni.so"
javac -nowarn -d "$B/java/classes" "$B"/java/src/*.java bindings/swig/java/org/memest/*.java \
  bindings/swig/java/test/*.java 2>&1 | { grep -v '^Note:' || true; }
JAVA=(java -ea -Dmemest.jni.library="$B/java/libmemest_jni.so" -cp "$B/java/classes")
"${JAVA[@]}" MemestTest

echo "-- Julia (ccall sequence replayed with ctypes): pytest"
(cd "$B" && $PY -m pytest -p no:cacheprovider -q "$ROOT/bindings/julia/test")

echo "-- cross-language golden test"
$PY tests/crosslang/run.py \
  --front-end "c=$B/runner-asan" \
  --front-end "c-shared=$B/runner" \
  --front-end "cli=stdin:$CLI request" \
  --front-end "python=$B/venv/bin/python $ROOT/tests/crosslang/runner.py" \
  --front-end "java=${JAVA[*]} CrossLang" \
  --front-end "go=$B/go/memest-crosslang" \
  --front-end "julia=$PY $ROOT/bindings/julia/test/memest_jl_twin.py"
