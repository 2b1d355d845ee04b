#!/usr/bin/python3
"""The `docs-links` test: every relative link in the Markdown pages given (README.md, docs/*.md)
must name a file or directory of the repository, and a `#fragment` a heading of that page (GitHub's
anchors: lower case, punctuation dropped, spaces to hyphens). Links to web addresses (`scheme:`)
and inside code (fenced blocks, `inline code`) are not checked. Prints each dead link as
FILE:LINE: TARGET: what is wrong. With --index INDEX.md, every other page must also be linked from
INDEX.md (the README lists every page of docs/).

usage: check_links.py [--index INDEX.md] PAGE.md|DIRECTORY...   (a directory: every *.md in it)
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """(line number, line) of the page outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchor(heading):
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    heading = heading.strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        with open(path, encoding="utf-8") as page:
            for _, line in prose_lines(page.read()):
                match = HEADING.match(line)
                if match:
                    base = anchor(match.group(1))
                    name, n = base, 1
                    while name in found:  # GitHub numbers repeated headings: name-1, name-2...
                        name, n = "%s-%d" % (base, n), n + 1
                    found.add(name)
        cache[path] = found
    return cache[path]


def relative_links(page):
    """(line number, target, the path it names) of each relative link of the page."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    for number, line in prose_lines(text):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            target = match.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # https:, mailto: ...
            path = target.partition("#")[0]
            yield number, target, os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page


def dead_links(page):
    for number, target, resolved in relative_links(page):
        fragment = target.partition("#")[2]
        if not os.path.exists(resolved):
            yield number, target, "no such file (%s)" % resolved
        elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
            yield number, target, "no heading #%s in %s" % (fragment, resolved)


def main(arguments):
    index = None
    if arguments[:1] == ["--index"] and len(arguments) > 1:
        index, arguments = arguments[1], arguments[2:]
    pages = []
    for argument in arguments:
        pages += sorted(glob.glob(os.path.join(argument, "*.md"))) if os.path.isdir(argument) else [argument]
    if not pages:
        sys.stderr.write(__doc__)
        return 2
    dead = 0
    for page in pages:
        for number, target, why in dead_links(page):
            print("%s:%d: %s: %s" % (page, number, target, why))
            dead += 1
    if index:
        linked = {resolved for _, _, resolved in relative_links(index)}
        for page in pages:
            if os.path.normpath(page) != os.path.normpath(index) and os.path.normpath(page) not in linked:
                print("%s: not linked from %s (add a line for it)" % (page, index))
                dead += 1
    if dead:
        print("%d problem(s)" % dead)
        return 1
    print("%d pages, every relative link resolves" % len(pages))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
