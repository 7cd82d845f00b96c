# Shared by scripts/*.sh: install what is missing, build.
TILEDBFS_PACKAGES=(cmake g++ make pkg-config libfuse3-dev fuse3 libzstd-dev liblz4-dev zlib1g-dev
  libbz2-dev libssl-dev libfmt-dev libgtest-dev nlohmann-json3-dev python3 python3-numpy
  python3-pandas jq attr clang-format libcurl4-openssl-dev libexpat1-dev)

tiledbfs_install_deps() {
  local missing=()
  for p in "${TILEDBFS_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  tiledbfs_install_node
}

# The tests' real clients and servers (tests/node/package.json: s3rver, DuckDB),
# exactly as package-lock.json pins them, into tests/node/node_modules.
tiledbfs_install_node() {
  local dir="$TILEDBFS_ROOT/tests/node"
  if ! command -v npm >/dev/null; then
    # Debian's own Node.js and npm, where the machine has no Node.js of its own.
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
  fi
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
    ! cmp -s "$dir/package-lock.json" "$dir/.installed-lock"; then
    echo "installing npm packages of tests/node (npm ci)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) &&
      cp "$dir/package-lock.json" "$dir/.installed-lock"
  fi
}

# tiledbfs_build BUILD_DIR [cmake args...]
tiledbfs_build() {
  local dir=$1
  shift
  cmake -S "$TILEDBFS_ROOT" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}

# clang and its libFuzzer runtime, for the ASan build (scripts/test.sh --sanitize,
# scripts/fuzz.sh): only the scripts that build it install them.
tiledbfs_install_clang() {
  if ! command -v clang++ >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev \
    2>/dev/null | grep -q "install ok installed"; then
    echo "installing: clang libclang-rt-14-dev"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
  fi
}

# tiledbfs_configure_asan BUILD_DIR [cmake args...]: the one sanitizer build of
# tests, tools and fuzz targets alike: clang, ASan+UBSan, Debug (assertions on)
# at -O1 -g1 (the sanitizers' manuals advise -O1; -g1 gives file:line), every
# library instrumented for libFuzzer's coverage (fuzzer-no-link), the fuzz
# targets libFuzzer binaries. One build serves ctest and scripts/fuzz.sh.
tiledbfs_configure_asan() {
  local dir=$1
  shift
  tiledbfs_install_clang
  # A folder configured with another compiler (GCC, before session 40) starts anew.
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$dir/CMakeCache.txt"; then
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
  cmake -S "$TILEDBFS_ROOT" -B "$dir" -DTILEDBFS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1" \
    -DTILEDBFS_FUZZ_ENGINE=libfuzzer "$@" >/dev/null
}

# tiledbfs_oracle_libs ORACLE_DIR LIB_DIR: the oracle's lib/ may hold libblosc2.so.5 as a
# text file naming its target (a symlink copied as a file), which the loader cannot use.
# Fills LIB_DIR with real symlinks to ORACLE_DIR/lib, for LD_LIBRARY_PATH.
tiledbfs_oracle_libs() {
  local oracle=$1 dir=$2 f n
  mkdir -p "$dir"
  for f in "$oracle"/lib/*; do
    n=$(basename "$f")
    if [ "$(stat -c %s "$f")" -lt 256 ] && ! grep -q $'\x7fELF' "$f" 2>/dev/null; then
      ln -sf "$oracle/lib/$(cat "$f")" "$dir/$n"
    else
      ln -sf "$f" "$dir/$n"
    fi
  done
}
