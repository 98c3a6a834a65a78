#!/bin/sh
# cli_check.sh RC PATTERN... -- CMD [ARGS...]
# Run CMD; pass when it exits with RC and its output (stdout and stderr together) matches every
# extended regex PATTERN (a PATTERN starting with '!' must not match).
want=$1
shift
n=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  n=$((n + 1))
  eval "pat_$n=\$1"
  shift
done
[ "$1" = "--" ] || { echo "cli_check.sh: missing --" >&2; exit 2; }
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" != "$want" ]; then
  echo "FAIL: exit status $rc, expected $want: $*" >&2
  exit 1
fi
i=1
while [ $i -le $n ]; do
  eval "p=\$pat_$i"
  case $p in
  !*)
    if printf '%s\n' "$out" | grep -Eq -e "${p#!}"; then
      echo "FAIL: output matches '${p#!}'" >&2
      exit 1
    fi
    ;;
  *)
    if ! printf '%s\n' "$out" | grep -Eq -e "$p"; then
      echo "FAIL: output does not match '$p'" >&2
      exit 1
    fi
    ;;
  esac
  i=$((i + 1))
done
echo "PASS"
