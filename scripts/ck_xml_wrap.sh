#!/bin/sh
# meson test wrapper that gives each test binary its own Check XML log, for per-test times:
#   CK_XML_DIR=/tmp/ck meson test -C build --wrapper "$PWD/scripts/ck_xml_wrap.sh"
#   python3 scripts/ck_times.py '/tmp/ck/*.xml'
# oclgrind runs (tests/oclgrind.sh OCLGRIND BINARY) are named oclgrind_<binary>.
n=$(basename "$1")
case "$n" in oclgrind.sh) n=oclgrind_$(basename "$3") ;; esac
dir=${CK_XML_DIR:-/tmp/ck}
mkdir -p "$dir"
CK_XML_LOG_FILE_NAME=$dir/$n-$$.xml exec "$@"
