#!/usr/bin/env bash
# Fails if a tracked C++ file is not formatted as .clang-format says (docs/style.md 10).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "SKIP: clang-format is not installed"
  exit 77
fi
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run clang-format -i $f)"
    bad=1
  fi
done < <(git ls-files '*.cc' '*.h' 2>/dev/null || find core fusefs tools tests -name '*.cc' -o -name '*.h')
exit $bad
