"""MkDocs hook: the command-line page's `<!-- paragrad commands -->` marker becomes the help of
every `paragrad` command, generated from the argparse parsers the CLI itself uses, so the page
can't drift from the flags."""
from __future__ import annotations

import os

MARKER = "<!-- paragrad commands -->"


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    from paragrad.cli import build_parser
    os.environ["COLUMNS"] = "80"            # (argparse wraps to the terminal's width: the page's)
    parser, commands = build_parser()
    sections = [f"```text\n{parser.format_help()}```"]
    for name, command in commands.items():
        sections.append(f"## paragrad {name}\n\n```text\n{command.format_help()}```")
    return markdown.replace(MARKER, "\n\n".join(sections))
