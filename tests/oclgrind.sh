#!/bin/sh
# Runs a test binary under oclgrind (meson suite `oclgrind`) and fails when oclgrind reports
# anything: oclgrind prints its diagnostics (invalid memory accesses, data races, uninitialised
# values, fatal simulator errors) but leaves the program's exit status alone.
#   tests/oclgrind.sh OCLGRIND BINARY [ARGS...]     (OCLGRIND empty or missing: skipped, 77)
# Out-of-bounds accesses are always checked. KILN_OCLGRIND_FLAGS replaces the default
# checks, --data-races. The deeper run (about four times slower, over CI's budget):
#   KILN_OCLGRIND_FLAGS="--data-races --uninitialized --build-options -cl-opt-disable"
# (-cl-opt-disable because oclgrind 21.10's --uninitialized stops with a fatal error on the
# `freeze` instructions clang's optimiser emits.)
oclgrind=$1
shift
if [ -z "$oclgrind" ] || [ ! -x "$oclgrind" ]; then
  echo "oclgrind not installed: skipping"
  exit 77
fi
log=$(mktemp "${TMPDIR:-/tmp}/kiln-oclgrind-XXXXXX") || exit 1
# shellcheck disable=SC2086 # the flags are words
"$oclgrind" --log "$log" --max-errors 20 ${KILN_OCLGRIND_FLAGS:---data-races} "$@"
rc=$?
if [ -s "$log" ]; then
  echo "oclgrind reported errors:" >&2
  head -c 20000 "$log" >&2
  rc=1
fi
rm -f "$log"
exit $rc
