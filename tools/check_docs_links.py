#!/usr/bin/env python3
"""Checks that every relative link and anchor in README.md, docs/*.md and docs/results/*.md
resolves.

    python tools/check_docs_links.py            # from the repository root (or anywhere)
    python tools/check_docs_links.py FILE.md ...

A link resolves when its file or directory exists (relative to the page that links it) and,
for ``#anchor``, when the target Markdown page has a heading whose GitHub slug is the anchor
(lower case, punctuation dropped, spaces to hyphens, ``-1``, ``-2`` for repeats). Links to
other schemes (http:, https:, mailto:) are not checked; links inside fenced code blocks and
inline code are ignored. Prints every broken link as ``FILE:LINE: target: reason`` and exits
1 if there is any; standard library only.
"""

import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# [text](target "title") and ![alt](target); the text may hold one level of brackets.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*(?:href|src)=\"([^\"]+)\"", re.IGNORECASE)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _lines_outside_code(text):
    """Yields (line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker[0] * len(marker)
                continue
            if marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
                continue
        if fence is None:
            yield number, line


def _heading_text(raw):
    """The text GitHub renders for a heading: code spans, links and emphasis unwrapped."""
    text = INLINE_CODE.sub(lambda m: m.group(2).strip(), raw)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text


def slug(raw):
    """GitHub's anchor for a heading's text (before de-duplication)."""
    text = _heading_text(raw).strip().lower()
    kept = []
    for char in text:
        if char in " -_":
            kept.append("-" if char == " " else char)
        elif unicodedata.category(char)[0] in "LN":
            kept.append(char)
        # everything else (punctuation, symbols, emphasis markers) is dropped
    return "".join(kept)


def anchors(path, _cache={}):
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 suffixes for repeats."""
    if path not in _cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        seen = {}
        result = set()
        for _, line in _lines_outside_code(text):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
        # explicit <a name="..."> / id="..." anchors count too
        result.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
        _cache[path] = result
    return _cache[path]


def links(text):
    """Yields (line number, target) of every link outside code."""
    for number, line in _lines_outside_code(text):
        stripped = INLINE_CODE.sub("", line)
        for pattern in (INLINE_LINK, HTML_LINK):
            for match in pattern.finditer(stripped):
                yield number, match.group(1)
        match = REFERENCE_DEF.match(stripped)
        if match:
            yield number, match.group(1)


def check_file(page):
    """Returns 'FILE:LINE: target: reason' for every broken link of one page."""
    problems = []
    with open(page, encoding="utf-8") as f:
        text = f.read()
    shown = os.path.relpath(page, ROOT)
    for number, target in links(text):
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        path_part = path_part.split("?", 1)[0]
        resolved = (os.path.normpath(os.path.join(os.path.dirname(page), path_part))
                    if path_part else page)
        if not os.path.exists(resolved):
            problems.append(f"{shown}:{number}: {target}: no such file or directory")
            continue
        if not anchor:
            continue
        if os.path.isdir(resolved) or not resolved.endswith(".md"):
            problems.append(f"{shown}:{number}: {target}: anchor on a non-Markdown target")
            continue
        if anchor not in anchors(resolved):
            problems.append(f"{shown}:{number}: {target}: no heading with anchor "
                            f"'#{anchor}' in {os.path.relpath(resolved, ROOT)}")
    return problems


def default_pages():
    pages = [os.path.join(ROOT, "README.md")]
    docs = os.path.join(ROOT, "docs")
    if os.path.isdir(docs):
        pages += sorted(os.path.join(docs, name) for name in os.listdir(docs)
                        if name.endswith(".md"))
    results = os.path.join(docs, "results")       # the measured runs, one page per study
    if os.path.isdir(results):
        pages += sorted(os.path.join(results, name) for name in os.listdir(results)
                        if name.endswith(".md"))
    return pages


def main(argv):
    pages = [os.path.abspath(p) for p in argv[1:]] or default_pages()
    problems = []
    checked = 0
    for page in pages:
        with open(page, encoding="utf-8") as f:
            checked += sum(1 for _ in links(f.read()))
        problems += check_file(page)
    for problem in problems:
        print(problem)
    print(f"{len(pages)} pages, {checked} links, {len(problems)} broken", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
