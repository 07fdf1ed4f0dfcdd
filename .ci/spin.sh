#!/usr/bin/env bash
# Checks every Promela model in the repository exhaustively with spin.
#   NAME.pml         must verify with no errors (safety and, where the model has them,
#                    the ltl properties / progress labels it declares);
#   NAME.broken.pml  is a deliberately broken variant: spin must report an error, so the
#                    model can be seen to fail.
# A model may start with a line "// spin-flags: ..." giving extra pan run flags
# (e.g. "-a" for acceptance cycles with an ltl claim, "-l" for non-progress cycles) and
# "// cc-flags: ..." for extra compile flags (e.g. -DNFAIR=3).
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t models < <(git ls-files '*.pml' 2>/dev/null || find . -name '*.pml')
[ ${#models[@]} -gt 0 ] || { echo "no spin models found"; exit 1; }
for model in "${models[@]}"; do
  name=$(basename "$model")
  runflags=$(sed -nE 's@^// spin-flags: *(.*)@\1@p' "$model" | head -1)
  ccflags=$(sed -nE 's@^// cc-flags: *(.*)@\1@p' "$model" | head -1)
  dir="$work/${model//\//_}"
  mkdir -p "$dir"; cp "$model" "$dir/model.pml"
  (
    cd "$dir"
    spin -a model.pml >/dev/null
    gcc -O2 -w $ccflags -o pan pan.c
    ./pan -m1000000 $runflags > out.txt 2>&1 || true
  )
  errors=$(sed -nE 's/.*errors: ([0-9]+).*/\1/p' "$dir/out.txt" | head -1)
  states=$(sed -nE 's/^ *([0-9.e+]+) states, stored.*/\1/p' "$dir/out.txt" | head -1)
  depth_warn=$(grep -c "max search depth too small" "$dir/out.txt" || true)
  if [ -z "$errors" ]; then
    echo "FAIL $model: spin produced no verdict"; cat "$dir/out.txt"; fail=1; continue
  fi
  case "$name" in
    *.broken.pml)
      if [ "$errors" -gt 0 ]; then echo "ok   $model: broken variant rejected ($errors error(s), $states states)"
      else echo "FAIL $model: broken variant was NOT rejected"; cat "$dir/out.txt"; fail=1; fi ;;
    *)
      if [ "$errors" -eq 0 ] && [ "$depth_warn" -eq 0 ]; then echo "ok   $model: verified ($states states)"
      else echo "FAIL $model: $errors error(s), depth warnings $depth_warn"; cat "$dir/out.txt"; fail=1; fi ;;
  esac
done
exit $fail
