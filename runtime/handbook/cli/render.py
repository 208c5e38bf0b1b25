"""Handler answers for people at a terminal: tables, rendered markdown, hints.

The CLI prints these unless asked for `--json`, which is the handler's dict exactly.
Rich does the layout (and drops colour when the output is not a terminal); it is
imported on first use, so `import handbook` stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..terminal_text import for_terminal

if TYPE_CHECKING:
    from rich.console import Console

SEP = " \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "
"""Between a doc's title and its section's."""


def _consoles() -> tuple[Console, Console]:
    from rich.console import Console

    return Console(), Console(stderr=True)


def _error(answer: dict[str, Any]) -> bool:
    """Print the answer's error, if it has one, to stderr; say whether it had one."""
    error = answer.get("error")
    if not error and answer.get("found") is not False:
        return False
    _, err = _consoles()
    message = error.get("message", error) if isinstance(error, dict) else error
    err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
    for key in ("suggestions", "available_ids"):
        if answer.get(key):
            err.print(
                f"{key.replace('_', ' ')}: {', '.join(answer[key])}", highlight=False, markup=False
            )
    if answer.get("sections") and answer.get("found") is False:
        err.print(
            "sections: " + ", ".join(s["title"] for s in answer["sections"]),
            highlight=False,
            markup=False,
        )
    return True


def _hint(console: Console, answer: dict[str, Any]) -> None:
    if answer.get("hint"):
        console.print(answer["hint"], style="dim", highlight=False, markup=False)


def doc_list(answer: dict[str, Any]) -> None:
    """`list`: one row per doc."""
    from rich.table import Table

    if _error(answer):
        return
    out, _ = _consoles()
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("id", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("title", overflow="fold")
    for doc in answer["docs"]:
        table.add_row(doc["id"], doc.get("kind", ""), doc.get("verified", ""), doc.get("title", ""))
    if answer["docs"]:
        out.print(table)
    out.print(
        f"{answer.get('returned', len(answer['docs']))} of {answer['count']} docs",
        style="dim",
        highlight=False,
    )
    _hint(out, answer)


def doc(answer: dict[str, Any]) -> None:
    """`get`: a header with id, kind, state and revision, then the markdown, rendered."""
    from rich.markdown import Markdown
    from rich.rule import Rule

    if _error(answer):
        return
    out, _ = _consoles()
    meta = answer.get("metadata", {})
    section = answer.get("section")
    title = answer["title"] + (f"{SEP}{section['title']}" if section else "")
    out.print(Rule(title, align="left"))
    facts = [
        answer["id"],
        meta.get("kind", ""),
        meta.get("verified", ""),
        f"revision {answer.get('revision', '')[:12]}",
    ]
    out.print(" · ".join(f for f in facts if f), style="dim", highlight=False, markup=False)
    out.print()
    out.print(Markdown(answer.get("content", "")))
    if not section and len(answer.get("sections", [])) > 1:
        names = ", ".join(f"{s['title']} ({s['chars']:,})" for s in answer["sections"])
        out.print(f"sections: {names}", style="dim", highlight=False, markup=False)
    if not section and answer.get("subsections"):
        names = ", ".join(s["title"] for s in answer["subsections"])
        out.print(f"subsections: {names}", style="dim", highlight=False, markup=False)
    _hint(out, answer)


def hits(answer: dict[str, Any]) -> None:
    """`search`: each hit with its doc (and attached file), section, score and excerpt."""
    if _error(answer):
        return
    out, _ = _consoles()
    for hit in answer["hits"]:
        where = hit["id"] + (f" {hit['resource']}" if hit.get("resource") else "")
        where += f"#{hit['anchor']}" if hit.get("anchor") else ""
        out.print(
            f"[bold]{_escape(hit['title'])}[/bold]"
            + (f"{SEP}{_escape(hit['resource'])}" if hit.get("resource") else "")
            + (f"{SEP}{_escape(hit['section'])}" if hit.get("section") else "")
            + f"  [dim]{_escape(where)}  score {hit['score']}[/dim]",
            highlight=False,
        )
        out.print(f"  {hit.get('excerpt', '')}", highlight=False, markup=False)
    out.print(
        f"{answer.get('returned', len(answer['hits']))} of {answer['count']} matching sections",
        style="dim",
        highlight=False,
    )
    _hint(out, answer)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def collected(answer: dict[str, Any]) -> None:
    """`collect`: each doc (or its matched sections) rendered, then what was left out."""
    from rich.markdown import Markdown
    from rich.rule import Rule

    if _error(answer):
        return
    out, _ = _consoles()
    for item in answer["items"]:
        part = (
            "" if item.get("whole", True) else f" (sections: {', '.join(item.get('sections', []))})"
        )
        out.print(Rule(f"{item['title']}{part}", align="left"))
        out.print(
            f"{item['ref']} · revision {item['revision'][:12]}",
            style="dim",
            highlight=False,
            markup=False,
        )
        out.print(Markdown(item["content"]))
    for omission in answer["omissions"]:
        out.print(
            f"left out {omission.get('id')}: {omission['reason']}"
            + (f" ({omission['detail']})" if omission.get("detail") else ""),
            style="dim",
            highlight=False,
            markup=False,
        )
    out.print(
        f"{len(answer['items'])} docs, {answer['bytes_used']:,} of {answer['budget']:,} bytes"
        + ("; nothing matched" if answer.get("no_match") else ""),
        style="dim",
        highlight=False,
    )


def answer(answer: dict[str, Any]) -> None:
    """`ask`: the evidence state, the quoted answer and its sources."""
    if answer.get("error"):
        _error(answer)
        return
    out, _ = _consoles()
    colour = {"grounded": "green", "insufficient": "yellow"}.get(answer["evidence_state"], "red")
    out.print(f"[bold {colour}]{answer['evidence_state']}[/]", highlight=False)
    out.print(answer["answer"], highlight=False, markup=False)
    for source in answer["sources"]:
        where = source["document_id"] + (f"#{source['anchor']}" if source.get("anchor") else "")
        out.print(
            f"  source: {where} (version {source.get('version')})",
            style="dim",
            highlight=False,
            markup=False,
        )


def briefing(answer: dict[str, Any]) -> None:
    """`brief`: each item with its score's parts, its pedigree state and why to verify."""
    if _error(answer):
        return
    out, _ = _consoles()
    for n, item in enumerate(answer["items"], 1):
        where = item.get("ref", item["id"]) + (f"#{item['anchor']}" if item.get("anchor") else "")
        state = (item.get("pedigree") or {}).get("state", "no reviews")
        out.print(
            f"{n}. [bold]{_escape(item['title'])}[/bold]"
            + (f"{SEP}{_escape(item['section'])}" if item.get("section") else "")
            + f"  [dim]{_escape(where)}  score {item['score']} = relevance {item['relevance']}"
            f" x confidence {item['confidence']} x freshness {item['freshness']}"
            + (" x ref bonus" if item.get("about_ref") else "")
            + f"  ({_escape(state)})[/dim]",
            highlight=False,
        )
        if item.get("verify_first"):
            why = for_terminal(str(item["verify_first"]))  # may quote an agent's record
            out.print(f"  verify first: {why}", style="yellow", markup=False)
        out.print(f"  {item.get('excerpt', '')}", highlight=False, markup=False)
    out.print(f"{answer['returned']} of {answer['count']} docs", style="dim", highlight=False)
    _hint(out, answer)


def resource(answer: dict[str, Any], output: str | None = None) -> None:
    """`resource`: the verified bytes, or a part of the text (a section, or from an
    offset, which says where the rest begins), to stdout (text) or to `output`."""
    import base64

    import click

    if _error(answer):
        return
    text = answer.get("content")
    data = text.encode("utf-8") if text is not None else base64.b64decode(answer["content_base64"])
    if output:
        Path(output).write_bytes(data)
        what = (
            f"{answer['path']} ({answer['bytes']:,} bytes, sha256 {answer['sha256'][:16]}…)"
            if "offset" not in answer
            else f"part of {answer['path']} ({len(data):,} bytes)"
        )
        click.echo(f"wrote {what} to {output}", err=True)
    elif "content" in answer:
        click.echo(answer["content"], nl=False)
    else:
        raise click.UsageError(
            f"{answer['path']} is binary ({answer['media_type']}); write it with -o FILE"
        )
    if "next_offset" in answer:
        click.echo(f"cut: the rest follows with --offset {answer['next_offset']}", err=True)


VIEWS: Mapping[str, Callable[[dict[str, Any]], None]] = {
    "list": doc_list,
    "get": doc,
    "search": hits,
    "collect": collected,
    "ask": answer,
    "brief": briefing,
}


def show(verb: str, result: dict[str, Any], options: Mapping[str, Any]) -> None:
    """The answer of tool `verb` for people; `options` are the command's presentation
    options (where `resource` writes)."""
    if verb == "resource":
        resource(result, options.get("output"))
    else:
        VIEWS.get(verb, _raw)(result)


def _raw(result: dict[str, Any]) -> None:
    import json

    if not _error(result):
        print(json.dumps(result, indent=2, ensure_ascii=False))


def failed(verb: str, result: Mapping[str, Any]) -> bool:
    """Whether the command should exit 1: an error, a miss, or (`ask`) no grounded answer."""
    if result.get("error") or result.get("found") is False:
        return True
    return verb == "ask" and result.get("evidence_state") != "grounded"
