# Shared by scripts/*.sh: install what is missing, build.
TILEDBFS_PACKAGES=(cmake g++ make pkg-config libfuse3-dev fuse3 libzstd-dev liblz4-dev zlib1g-dev
  libbz2-dev libssl-dev libfmt-dev libgtest-dev nlohmann-json3-dev python3 python3-numpy
  python3-pandas jq attr clang-format)

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
}

# tiledbfs_build BUILD_DIR [cmake args...]
tiledbfs_build() {
  local dir=$1
  shift
  cmake -S "$TILEDBFS_ROOT" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}
