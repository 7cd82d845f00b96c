#!/usr/bin/env bash
# Fails if docs/namespace.md or docs/style.md differs from the team's copy it
# follows (../shared/NAMESPACE.md, ../shared/STYLE.md beside the clone);
# skips (77) where the clone has no ../shared/ beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${TILEDBFS_SHARED_DIR:-../shared}
checked=0 bad=0
for pair in namespace.md:NAMESPACE.md style.md:STYLE.md; do
  ours=docs/${pair%%:*} theirs=$shared/${pair##*:}
  [ -f "$theirs" ] || continue
  checked=1
  if ! cmp -s "$ours" "$theirs"; then
    echo "$ours differs from $theirs (cp $theirs $ours, then commit):"
    diff -u "$ours" "$theirs" | head -n 40 || true
    bad=1
  fi
done
if [ $checked = 0 ]; then
  echo "SKIP: no $shared/NAMESPACE.md or $shared/STYLE.md to compare docs/ with"
  exit 77
fi
exit $bad
