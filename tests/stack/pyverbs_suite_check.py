# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Reads the output of rdma-core's `run_tests.py -v` and judges it.

    python3 pyverbs_suite_check.py OUTPUT KNOWN

Prints the counts (run, passed, skipped, failed, errors), every skip
reason with its number of tests, then each failure and error with the
last line of its traceback.  A failure or error is forgiven only when
KNOWN lists its test with a text that its traceback contains (a test of
rdma-core that is wrong on any device, the reason given there).  Exit
status: 0 when nothing else failed, 1 otherwise (and when no summary
line is found: the suite did not finish).
"""
import collections
import re
import sys


def load_known(path):
    known = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            test, text, why = (p.strip() for p in line.split('|', 2))
            known.append((test, text, why))
    return known


def main():
    out = open(sys.argv[1], encoding='utf-8', errors='replace').read()
    known = load_known(sys.argv[2])
    ran = re.search(r'^Ran (\d+) tests? in ([\d.]+)s', out, re.M)
    end = re.search(r'^(OK|FAILED)\b(.*)$', out, re.M)
    if not ran or not end:
        print('FAIL: the suite printed no summary (it did not finish)')
        return 1
    run = int(ran.group(1))
    skips = collections.Counter(
        m.group(1) for m in re.finditer(r"(?:\.\.\. |^)skipped '(.*)'$", out, re.M))
    # The tracebacks: "ERROR: name (id)" / "FAIL: name (id)", a line of
    # dashes, the traceback up to the next line of = or -.
    bad = []
    for m in re.finditer(r'^(ERROR|FAIL): (.*)\n(?:.*\n)*?-{40,}\n'
                         r'((?:(?!={40,}|-{40,}).*\n)*)', out, re.M):
        bad.append((m.group(1), m.group(2).strip(), m.group(3)))
    errors = sum(1 for b in bad if b[0] == 'ERROR')
    fails = len(bad) - errors
    nskip = sum(skips.values())
    expected = re.search(r'expected failures=(\d+)', end.group(2))
    xfail = int(expected.group(1)) if expected else 0
    print(f'rdma-core pyverbs suite: {run} run, {run - nskip - len(bad) - xfail}'
          f' passed, {nskip} skipped, {fails} failed, {errors} errors'
          f' ({ran.group(2)} s)')
    for reason, n in sorted(skips.items(), key=lambda x: (-x[1], x[0])):
        print(f'  skipped {n:3d}: {reason}')
    status = 0
    for kind, test, tb in bad:
        last = [l for l in tb.splitlines() if l.strip()]
        last = last[-1].strip() if last else '?'
        why = next((k[2] for k in known
                    if test.startswith(k[0]) and k[1] in tb), None)
        if why:
            print(f'  known {kind}: {test}: {last}\n    (a test bug: {why})')
        else:
            print(f'FAIL: {kind}: {test}: {last}')
            status = 1
    if end.group(1) == 'FAILED' and not bad:
        print('FAIL: the suite says FAILED but no failure was found in it')
        status = 1
    return status


if __name__ == '__main__':
    sys.exit(main())
