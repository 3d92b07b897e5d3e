#!/bin/bash
# Session 17: test_cast on the H200 (kiln_copy's new GPU default, one vector per work-item).
# NAMES=castt bash bench/h200/round.sh
source bench/h200/common.sh castt
tests 240 cast
