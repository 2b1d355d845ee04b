#!/usr/bin/python3
"""The `docs` test: runs Doxygen with the generated Doxyfile and fails on any warning. Doxygen
writes its warnings to warnings.log (WARN_LOGFILE), so they are printed here, where a failing
test's output shows them.

usage: check_warnings.py DOXYGEN DOXYFILE WARNINGS_LOG
"""
import subprocess
import sys


def main(doxygen, doxyfile, log):
    status = subprocess.run([doxygen, doxyfile], stdout=subprocess.DEVNULL).returncode
    try:
        warnings = open(log).read()
    except FileNotFoundError:
        warnings = ""
    sys.stdout.write(warnings)
    if status != 0 or warnings.strip():
        sys.stdout.write("doxygen exited with %d; the API reference must have no warning\n"
                         % status)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
