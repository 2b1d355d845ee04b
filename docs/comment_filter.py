#!/usr/bin/python3
"""Doxygen INPUT_FILTER for Bypass's headers, which document with plain // comments (the project's
style). What the comments already say becomes Doxygen documentation:
  - a comment block on its own lines documents what follows it (/// ...);
  - a comment after a declaration on the same line documents that declaration (///< ...);
  - the file's opening comment documents the class it names first ("// Messenger: ...") and the file.
"""
import re
import sys

COMMENT = re.compile(r"^(\s*)//(?: (.*)|$)")
TRAILING = re.compile(r"^([^\"]*?[;,{}])(\s+)// (.*)$")
TYPE_START = re.compile(r"^\s*(?:template\s*<.*>\s*)?(?:class|struct|enum(?:\s+class)?|union)\s+(\w+)")


def main(path):
    lines = open(path).read().split("\n")
    out = []
    i = 0
    n = len(lines)
    # The opening comment (before any code) is held back for the class it names.
    head = []
    while i < n and COMMENT.match(lines[i]):
        head.append(COMMENT.match(lines[i]).group(2) or "")
        i += 1
    head_name = re.match(r"^(\w+)", head[0]).group(1) if head and re.match(r"^\w+", head[0]) else None
    if head:
        out.append("/// @file")
        out.extend("/// " + text for text in head)
    head_used = False
    while i < n:
        line = lines[i]
        m = COMMENT.match(line)
        if m:
            block = []
            while i < n and COMMENT.match(lines[i]):
                mm = COMMENT.match(lines[i])
                block.append((mm.group(1), mm.group(2) or ""))
                i += 1
            for indent, text in block:
                out.append(indent + "/// " + text)
            continue
        t = TYPE_START.match(line)
        if t and head_name and not head_used and t.group(1) == head_name and not line.rstrip().endswith(";"):
            out.extend("/// " + text for text in head)
            head_used = True
        out.append(filter_trailing(line))
        i += 1
    sys.stdout.write("\n".join(out))


def filter_trailing(line):
    m = TRAILING.match(line)
    if m and not COMMENT.match(line):
        return m.group(1) + m.group(2) + "///< " + m.group(3)
    return line


if __name__ == "__main__":
    main(sys.argv[1])
