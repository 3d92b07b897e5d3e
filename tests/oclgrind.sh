#!/bin/sh
# Runs a test binary under oclgrind (meson suite `oclgrind`) and fails when oclgrind reports
# anything: oclgrind prints its diagnostics (invalid memory accesses, data races, uninitialised
# values, fatal simulator errors) but leaves the program's exit status alone.
#   tests/oclgrind.sh OCLGRIND BINARY [ARGS...]     (OCLGRIND empty or missing: skipped, 77)
# Out-of-bounds accesses are always checked; KILN_OCLGRIND_FLAGS (set, even empty) replaces
# the default "--data-races". Kernels are optimised as drivers build them: the simulator
# interprets the optimised code 2-4 times faster than -cl-opt-disable's (the suite's CPU time
# fell from about 2900 to 1300 s). oclgrind 21.10 stops with a fatal error on two things
# clang's optimiser emits: llvm.abs intrinsics (integer abs: the elementwise and expr suites
# keep -cl-opt-disable, tests/meson.build) and, under --uninitialized, `freeze` instructions.
# --uninitialized itself costs about three times as much and reports vload16 of an
# initialised private array as uninitialised (the column reductions), so it is not in the
# default.
oclgrind=$1
shift
if [ -z "$oclgrind" ] || [ ! -x "$oclgrind" ]; then
  echo "oclgrind not installed: skipping"
  exit 77
fi
log=$(mktemp "${TMPDIR:-/tmp}/kiln-oclgrind-XXXXXX") || exit 1
err=$(mktemp "${TMPDIR:-/tmp}/kiln-oclgrind-XXXXXX") || exit 1
# Reports go to $log; fatal simulator errors only to stderr, kept in $err to be searched.
# shellcheck disable=SC2086 # the flags are words
"$oclgrind" --log "$log" --max-errors 20 \
  ${KILN_OCLGRIND_FLAGS---data-races} "$@" 2>"$err"
rc=$?
cat "$err" >&2
if [ -s "$log" ] || grep -q "OCLGRIND FATAL ERROR" "$err"; then
  echo "oclgrind reported errors:" >&2
  head -c 20000 "$log" >&2
  rc=1
fi
rm -f "$log" "$err"
exit $rc
