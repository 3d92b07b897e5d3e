#!/bin/sh
# Runs a test binary under oclgrind (meson suite `oclgrind`) and fails when oclgrind reports
# anything: oclgrind prints its diagnostics (out-of-bounds accesses, data races, uninitialised
# values, fatal simulator errors) but leaves the program's exit status alone.
#   tests/oclgrind.sh OCLGRIND BINARY [ARGS...]     (OCLGRIND empty: skipped, exit 77)
# -cl-opt-disable: with optimisation on, clang emits `freeze` instructions that oclgrind
# 21.10's --uninitialized checker rejects with a fatal error.
oclgrind=$1
shift
if [ -z "$oclgrind" ] || [ ! -x "$oclgrind" ]; then
  echo "oclgrind not installed: skipping"
  exit 77
fi
log=$(mktemp "${TMPDIR:-/tmp}/kiln-oclgrind-XXXXXX") || exit 1
"$oclgrind" --log "$log" --max-errors 20 --data-races --uninitialized \
  --build-options -cl-opt-disable "$@"
rc=$?
if [ -s "$log" ]; then
  echo "oclgrind reported errors:" >&2
  head -c 20000 "$log" >&2
  rc=1
fi
rm -f "$log"
exit $rc
