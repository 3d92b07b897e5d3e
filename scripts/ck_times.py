#!/usr/bin/env python3
"""Per-test seconds from Check XML logs (scripts/ck_xml_wrap.sh): each log's total and its
seven longest test ids (a loop test's iterations summed), longest log first.
    python3 scripts/ck_times.py '/tmp/ck/*.xml'"""
import collections
import glob
import sys
import xml.etree.ElementTree as ET

NS = '{http://check.sourceforge.net/ns}'
rows = []
for path in glob.glob(sys.argv[1] if len(sys.argv) > 1 else '*.xml'):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        print(f'{path}: partial (the test did not finish)')
        continue
    per = collections.Counter()
    for t in root.iter(NS + 'test'):
        per[t.find(NS + 'id').text] += float(t.find(NS + 'duration').text)
    rows.append((sum(per.values()), path, per))
for total, path, per in sorted(rows, reverse=True):
    top = ' '.join(f'{i.replace("test_", "")}:{d:.0f}' for i, d in per.most_common(7))
    print(f'{path:40s} {total:6.0f}  {top}')
