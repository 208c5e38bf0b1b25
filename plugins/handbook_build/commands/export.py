"""`handbook export`: a verified bundle written out for tools that do not read bundles.
Like every build command it raises, and `commands.BuildCommand` reports and exits."""

from __future__ import annotations

from pathlib import Path

import click

from handbook.cli.queries import DEFAULT_BUNDLE, key_options
from handbook.skills.export import INDEX, WELL_KNOWN

from .building import BuildCommand, _plural


@click.group(name="export")
def export_group() -> None:
    """Write a verified bundle out in another format."""


@export_group.command(name="skills", cls=BuildCommand)
@click.argument("out", type=click.Path(file_okay=False))
@click.option(
    "--bundle",
    "bundle_path",
    default=DEFAULT_BUNDLE,
    show_default=True,
    metavar="DIR|FILE.tar.gz",
    help="The bundle to export (a folder, or an archive from `handbook pack`).",
)
@key_options
@click.option(
    "--kind", "kinds", multiple=True, metavar="KIND", help="Export only docs of KIND (repeatable)."
)
@click.option("--force", is_flag=True, help="Replace what OUT holds.")
def skills_command(
    out: str,
    bundle_path: str,
    keys: tuple[str, ...],
    allow_unsigned: bool,
    kinds: tuple[str, ...],
    force: bool,
) -> None:
    """Write every doc of a verified bundle as an Agent Skill: OUT/<name>/SKILL.md with
    the doc's attached files beside it, and the discovery index
    OUT/.well-known/agent-skills/index.json (folder docs also as <name>.tar.gz there).

    The same bundle always gives the same bytes. Refused, with nothing written, when two
    docs map to one skill name, or when OUT holds files (unless --force)."""
    from handbook.bundle.archive import unpacked
    from handbook.bundle.local import open_bundle
    from handbook.bundle.trust import TrustPolicy

    from ..tasks.export import export_skills

    trust = TrustPolicy.of(keys, allow_unsigned=allow_unsigned)
    with unpacked(bundle_path, trust) as folder:
        bundle = open_bundle(folder, trust=trust)
        signed = bundle.manifest.signed
        known = sorted({doc.kind for doc in bundle.catalog.docs})
        unknown = [kind for kind in kinds if kind not in known]
        if unknown:
            raise click.BadParameter(
                f"{signed.library} has no doc of kind {', '.join(unknown)} "
                f"(its kinds: {', '.join(known)})",
                param_hint="--kind",
            )
        chosen, written = export_skills(bundle, Path(out), kinds, force)
    archives = sum(1 for skill in chosen.values() if skill.doc.resources)
    click.echo(
        f"exported {signed.library} {signed.version} as {_plural(len(chosen), 'skill')} "
        f"({archives} with attached files), {_plural(written, 'file')} -> {out}"
    )
    click.echo(f"discovery index: {Path(out) / WELL_KNOWN / INDEX}")
