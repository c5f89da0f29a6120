"""The README and docs/ pages link only to files and headings that exist
(tools/check_docs_links.py), and the README stays a short user's guide."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKER = os.path.join(ROOT, "tools", "check_docs_links.py")


def test_every_readme_and_docs_link_resolves():
    result = subprocess.run([sys.executable, CHECKER], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_checker_reports_a_broken_link_and_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#no-such-heading)\n")
    result = subprocess.run([sys.executable, CHECKER, str(page)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "missing.md" in result.stdout and "no-such-heading" in result.stdout
    assert "#title" not in result.stdout


def test_the_readme_is_at_most_250_lines():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        assert len(f.read().splitlines()) <= 250
