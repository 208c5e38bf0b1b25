"""Generate a synthetic Handbook library: an ``mkdocs.yml`` and N docs.

Why synthetic: the real corpus (msdocs-10k) has one fixed size and is not in every
checkout. A generator gives any size, the same bytes for the same seed, and docs that
are valid by construction, so a benchmark can insist on zero errors and time nothing
but the work of checking.

The docs imitate the plant-floor example (``examples/plant-floor``): device register
maps, protocol notes, guides, troubleshooting and reference pages for fictional
vendors, with tables, lists, ``###`` subsections and fenced yaml/json/toml snippets
that parse. Body sizes follow a log-normal curve (median about 2k characters, a tail
to about 10k) and stay under the 12,000-character warning limit.

    python bench/synth.py OUT_DIR --docs N [--seed S]

Only the standard library is used, and every random choice comes from one
``random.Random(seed)``, so the output depends on nothing but the arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

MARKER = ".handbook-synth"
"""Written into the docs folder, so `generate` may replace a folder it made (and only
such a folder). Dot-files are skipped by `handbook check`."""

BODY_MEDIAN, BODY_SIGMA = 1_000, 0.8
"""The log-normal size *target* of a body. Bodies are built from whole sections, and
every doc has a floor of sections, so they overshoot it: measured over 10,000 docs the
median body is about 2,100 characters, the 99th percentile 7,200 and the largest 11,000."""
BODY_MIN, BODY_TARGET_MAX, BODY_MAX = 400, 10_000, 11_500
"""A body never exceeds BODY_MAX, safely under the 12,000-character warning limit."""
DASH = "\u2013"
"""An en dash, as manuals print in empty table cells: keeps some non-ASCII in the text."""
SUMMARY_MAX = 250

VENDORS = {
    "acme": ("Acme", ["AC", "AX"]),
    "voltra": ("Voltra", ["EM", "VM"]),
    "northwind": ("Northwind", ["NW", "NF"]),
    "kestrel": ("Kestrel Controls", ["KC", "KP"]),
    "baltic": ("Baltic Drives", ["BD", "BX"]),
    "orbis": ("Orbis Metering", ["OM", "OF"]),
    "halden": ("Halden", ["HL", "HB"]),
    "tamarack": ("Tamarack", ["TR", "TG"]),
}
EQUIPMENT = {
    "air_compressor": "air compressor",
    "energy_meter": "energy meter",
    "plc": "PLC",
    "gateway": "gateway",
    "vfd": "variable frequency drive",
    "chiller": "chiller",
    "flow_meter": "flow meter",
    "boiler": "boiler",
}
PROTOCOLS = {
    "modbus": "Modbus TCP",
    "mqtt": "MQTT",
    "opcua": "OPC UA",
    "bacnet": "BACnet/IP",
    "profinet": "PROFINET",
}
KINDS = {
    # kind: (folder, share of the library)
    "device": ("devices", 0.55),
    "troubleshooting": ("troubleshooting", 0.15),
    "guide": ("guides", 0.15),
    "reference": ("reference", 0.10),
    "protocol": ("protocols", 0.05),
}
VERIFIED = {"verified": 0.3, "field_tested": 0.2, "unverified": 0.5}

WORDS = [
    "address",
    "adapter",
    "alarm",
    "analog",
    "baud",
    "buffer",
    "byte",
    "cable",
    "calibration",
    "channel",
    "checksum",
    "client",
    "coil",
    "collector",
    "commissioning",
    "connection",
    "controller",
    "counter",
    "current",
    "cycle",
    "data",
    "deadband",
    "default",
    "device",
    "diagnostic",
    "display",
    "drift",
    "driver",
    "energy",
    "endpoint",
    "error",
    "fault",
    "field",
    "filter",
    "firmware",
    "flow",
    "frame",
    "frequency",
    "gateway",
    "handshake",
    "header",
    "heartbeat",
    "holding",
    "host",
    "input",
    "interval",
    "latency",
    "limit",
    "link",
    "load",
    "log",
    "loop",
    "map",
    "measurement",
    "meter",
    "mode",
    "module",
    "network",
    "node",
    "offset",
    "order",
    "output",
    "packet",
    "panel",
    "parity",
    "payload",
    "phase",
    "poll",
    "port",
    "power",
    "pressure",
    "profile",
    "pulse",
    "queue",
    "range",
    "rate",
    "reading",
    "register",
    "relay",
    "request",
    "reset",
    "response",
    "retry",
    "sample",
    "scale",
    "sensor",
    "serial",
    "server",
    "session",
    "setpoint",
    "signal",
    "site",
    "slave",
    "socket",
    "speed",
    "state",
    "status",
    "subnet",
    "switch",
    "tag",
    "temperature",
    "terminal",
    "threshold",
    "timeout",
    "timestamp",
    "topic",
    "transport",
    "trend",
    "unit",
    "value",
    "voltage",
    "watchdog",
    "wiring",
    "word",
]
VERBS = [
    "check",
    "confirm",
    "read",
    "write",
    "poll",
    "restart",
    "replace",
    "verify",
    "record",
    "compare",
    "set",
    "clear",
]

QUANTITIES = [
    # (name, unit, type)
    ("discharge_pressure", "bar", "uint16"),
    ("discharge_temperature", "degC", "int16"),
    ("running_hours", "h", "uint32"),
    ("load_state", "", "uint16"),
    ("active_power", "kW", "int32"),
    ("energy_import", "kWh", "uint32"),
    ("voltage_l1", "V", "uint16"),
    ("current_l1", "A", "uint16"),
    ("frequency", "Hz", "uint16"),
    ("flow_rate", "m3/h", "uint32"),
    ("motor_speed", "rpm", "uint16"),
    ("supply_temperature", "degC", "int16"),
    ("alarm_word", "", "uint16"),
    ("serial_number", "", "uint32"),
    ("firmware_version", "", "uint16"),
]
SCALES = [1, 0.1, 0.01, 0.001]
PORTS = {"modbus": 502, "mqtt": 1883, "opcua": 4840, "bacnet": 47808, "profinet": 34964}

SECTIONS = {
    "device": [
        "Overview",
        "Wiring",
        "Firmware",
        "Pitfalls",
        "Alarms",
        "Maintenance",
        "Calibration",
        "Diagnostics",
        "Network settings",
        "Scaling and units",
        "Known issues",
        "Change history",
    ],
    "protocol": [
        "Data model",
        "Addressing",
        "Byte and word order",
        "Timing",
        "Security",
        "Error codes",
        "Pitfalls",
        "Tools",
    ],
    "guide": [
        "Before you go on site",
        "On site",
        "Handover",
        "Checklist",
        "Rollback",
        "Who to call",
        "Records to keep",
    ],
    "troubleshooting": ["Symptoms", "Likely causes", "Checks", "Fix", "Prevention", "Escalation"],
    "reference": ["Scope", "Definitions", "Values", "Limits", "Examples", "See also"],
}
YAML_WORDS = {"yes", "no", "true", "false", "on", "off", "null", "y", "n"}
_PLAIN_BLOCK = re.compile(r"^[A-Za-z][A-Za-z0-9 _.,;()/'-]*$")
_PLAIN_FLOW = re.compile(r"^[A-Za-z][A-Za-z0-9 _./-]*$")


# -- frontmatter ---------------------------------------------------------------------------


def _scalar(value: str, flow: bool = False) -> str:
    """Plain when YAML reads it back as the same string, else double-quoted. JSON's
    escaping is valid in YAML double quotes, so `json.dumps` is a safe quoter."""
    plain = (_PLAIN_FLOW if flow else _PLAIN_BLOCK).match(value)
    if plain and not value.endswith(" ") and value.lower() not in YAML_WORDS:
        return value
    return json.dumps(value)


def _frontmatter(fields: dict[str, str | list[str]]) -> str:
    lines = ["---"]
    for key, value in fields.items():
        if isinstance(value, list):
            lines.append(f"{key}: [{', '.join(_scalar(v, flow=True) for v in value)}]")
        elif key == "effective_date":
            lines.append(f"{key}: {value}")  # a bare YAML date, as authors write it
        else:
            lines.append(f"{key}: {_scalar(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


# -- prose, tables, snippets ---------------------------------------------------------------


def _sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(6, 18))
    if rng.random() < 0.25:
        i = rng.randrange(len(words))
        words[i] = f"`{words[i]}_{rng.choice(WORDS)}`"
    elif rng.random() < 0.1:
        i = rng.randrange(len(words))
        words[i] = f"**{words[i]}**"
    text = " ".join(words)
    return text[0].upper() + text[1:] + ("?" if rng.random() < 0.05 else ".")


def _paragraph(rng: random.Random) -> str:
    text = " ".join(_sentence(rng) for _ in range(rng.randint(2, 5)))
    return textwrap.fill(text, width=88, break_on_hyphens=False)


def _bullets(rng: random.Random) -> str:
    numbered = rng.random() < 0.3
    items = []
    for i in range(rng.randint(3, 6)):
        mark = f"{i + 1}." if numbered else "-"
        verb = rng.choice(VERBS).capitalize()
        items.append(f"{mark} {verb} the {rng.choice(WORDS)} {rng.choice(WORDS)}: {_sentence(rng)}")
    return "\n".join(items)


def _table(rng: random.Random) -> str:
    columns = rng.sample(
        ["setting", "value", "default", "unit", "range", "notes", "since"], rng.randint(3, 5)
    )
    rows = []
    for _ in range(rng.randint(3, 8)):
        rows.append([_cell(rng, col) for col in columns])
    return _render_table(columns, rows)


def _cell(rng: random.Random, column: str) -> str:
    if column in ("value", "default"):
        return str(rng.randint(0, 9999))
    if column == "range":
        return f"{rng.randint(0, 99)}{DASH}{rng.randint(100, 9999)}"
    if column == "unit":
        return rng.choice(["s", "ms", "bar", "V", "A", "kW", DASH])
    if column == "since":
        return f"v{rng.randint(1, 4)}.{rng.randint(0, 9)}"
    return " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))


def _render_table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class Device:
    vendor: str
    vendor_slug: str
    model: str
    model_slug: str
    equipment: str
    protocol: str
    registers: list[dict[str, str | int | float]] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return f"{self.vendor_slug}-{self.model_slug}"


def _registers(rng: random.Random) -> list[dict[str, str | int | float]]:
    registers: list[dict[str, str | int | float]] = []
    address = 0
    for name, unit, kind in rng.sample(QUANTITIES, rng.randint(3, 9)):
        register: dict[str, str | int | float] = {"name": name, "address": address, "type": kind}
        if unit:
            register |= {"scale": rng.choice(SCALES), "unit": unit}
        registers.append(register)
        address += (2 if kind.endswith("32") else 1) + rng.choice([0, 0, 0, 1, 5])
    return registers


def _register_table(device: Device) -> str:
    rows = [
        [
            str(r["name"]).replace("_", " "),
            str(40001 + int(r["address"])),
            str(r["address"]),
            str(r["type"]),
            str(r.get("scale", DASH)),
            str(r.get("unit", DASH)),
        ]
        for r in device.registers
    ]
    return _render_table(
        ["quantity", "document address", "protocol address", "type", "scale", "unit"], rows
    )


def _collector_config(rng: random.Random, device: Device) -> dict[str, object]:
    return {
        "device": device.slug,
        "transport": device.protocol,
        "host": f"192.0.2.{rng.randint(2, 254)}",
        "port": PORTS[device.protocol],
        "unit_id": rng.randint(1, 247),
        "poll_s": rng.choice([1, 2, 5, 10, 30]),
        "registers": device.registers,
    }


def _yaml(data: dict[str, object]) -> str:
    """Block YAML for the flat configs generated here: scalars and lists of flat maps."""
    lines = []
    for key, value in data.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            for item in value:
                pairs = ", ".join(f"{k}: {_yaml_value(v)}" for k, v in item.items())
                lines.append(f"  - {{{pairs}}}")
        else:
            lines.append(f"{key}: {_yaml_value(value)}")
    return "\n".join(lines)


def _yaml_value(value: object) -> str:
    return _scalar(value, flow=True) if isinstance(value, str) else json.dumps(value)


def _toml(data: dict[str, object]) -> str:
    """TOML with the scalars in one table and each list as an array of tables. JSON
    strings and numbers are valid TOML basic strings and numbers."""
    lines = ["[collector]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, list)]
    for key, value in data.items():
        if isinstance(value, list):
            for item in value:
                lines += ["", f"[[{key}]]"] + [f"{k} = {json.dumps(v)}" for k, v in item.items()]
    return "\n".join(lines)


def _fence(lang: str, text: str) -> str:
    return f"```{lang}\n{text}\n```"


def _snippet(rng: random.Random, device: Device | None) -> str:
    """One fenced snippet; yaml/json/toml ones parse, the others are not validated."""
    if device is None:
        device = _device(rng, set())
    lang = rng.choices(["yaml", "json", "toml", "text", "bash"], weights=[5, 3, 2, 1, 1])[0]
    config = _collector_config(rng, device)
    if lang == "yaml":
        return _fence("yaml", _yaml(config))
    if lang == "json":
        return _fence("json", json.dumps(config, indent=2))
    if lang == "toml":
        return _fence("toml", _toml(config))
    if lang == "bash":
        return _fence(
            "bash",
            f"handbook-collector poll --host {config['host']} --port {config['port']} --unit {config['unit_id']}",
        )
    log = [
        f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T0{rng.randint(0, 9)}:{rng.randint(10, 59)}:00Z "
        f"{rng.choice(['INFO', 'WARN', 'ERROR'])} {_sentence(rng)}"
        for _ in range(rng.randint(2, 6))
    ]
    return _fence("text", "\n".join(log))


# -- docs ----------------------------------------------------------------------------------


def _device(rng: random.Random, used: set[str]) -> Device:
    while True:
        vendor_slug = rng.choice(list(VENDORS))
        vendor, prefixes = VENDORS[vendor_slug]
        prefix, number = rng.choice(prefixes), rng.randint(100, 9999)
        model_slug = f"{prefix.lower()}{number}"
        if f"{vendor_slug}.{model_slug}" not in used:
            used.add(f"{vendor_slug}.{model_slug}")
            break
    device = Device(
        vendor,
        vendor_slug,
        f"{prefix}-{number}",
        model_slug,
        rng.choice(list(EQUIPMENT)),
        rng.choice(list(PROTOCOLS)),
    )
    device.registers = _registers(rng)
    return device


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;") + "."


@dataclass
class Page:
    path: str
    text: str


def _topic_title(rng: random.Random, kind: str) -> tuple[str, str, str]:
    """A title for a non-device doc, with its equipment type and protocol."""
    equipment, protocol = rng.choice(list(EQUIPMENT)), rng.choice(list(PROTOCOLS))
    eq, proto, word = EQUIPMENT[equipment], PROTOCOLS[protocol], rng.choice(WORDS)
    title = {
        "protocol": f"{proto}: {word} {rng.choice(WORDS)}",
        "guide": f"{rng.choice(VERBS).capitalize()} the {word} of a {eq} over {proto}",
        "troubleshooting": (
            f"{eq.capitalize()} {word} {rng.choice(['errors', 'drops', 'timeouts', 'stalls'])} "
            f"over {proto}"
        ),
        "reference": f"{word.capitalize()} {rng.choice(WORDS)} values for {eq}s",
    }[kind]
    return title, equipment, protocol


def _page(rng: random.Random, used: set[str]) -> Page:
    kind = rng.choices(list(KINDS), weights=[share for _, share in KINDS.values()])[0]
    folder = KINDS[kind][0]
    verified = rng.choices(list(VERIFIED), weights=list(VERIFIED.values()))[0]
    device = None
    if kind == "device":
        device = _device(rng, used)
        doc_id = f"device.{device.vendor_slug}.{device.model_slug}"
        path = f"{folder}/{device.vendor_slug}/{device.model_slug}.md"
        title = f"{device.vendor} {device.model} {EQUIPMENT[device.equipment]} (synthetic)"
        summary = (
            f"Register map, connection defaults and a collector snippet for the synthetic "
            f"{device.vendor} {device.model} {EQUIPMENT[device.equipment]} over {PROTOCOLS[device.protocol]}. "
            + _sentence(rng)
        )
        equipment, protocol = device.equipment, device.protocol
        keywords = [
            device.model_slug,
            device.model,
            EQUIPMENT[device.equipment],
            device.protocol,
            device.vendor_slug,
        ]
        aliases = [
            device.model.replace("-", ""),
            f"{device.vendor} {device.model.replace('-', ' ')}",
        ]
    else:
        title, equipment, protocol = _topic_title(rng, kind)
        base = _slug(title)
        slug, n = base, 1
        while f"{kind}.{slug}" in used:
            n += 1
            slug = f"{base}-{n}"
        used.add(f"{kind}.{slug}")
        doc_id, path = f"{kind}.{slug}", f"{folder}/{slug}.md"
        summary = f"{title}: {_sentence(rng)} {_sentence(rng)}"
        keywords = [protocol, equipment.replace("_", " "), kind]
        aliases = [title.split(":")[0]] if rng.random() < 0.3 else []
    keywords += rng.sample(WORDS, rng.randint(1, 5))
    fields: dict[str, str | list[str]] = {
        "id": doc_id,
        "title": title,
        "kind": kind,
        "summary": _shorten(summary, SUMMARY_MAX),
        "protocol": protocol,
        "equipment_type": equipment,
    }
    if device is not None:
        fields |= {"vendor": device.vendor, "model": device.model}
    fields["keywords"] = list(dict.fromkeys(keywords))
    if aliases:
        fields["aliases"] = aliases
    fields["verified"] = verified
    if rng.random() < 0.3:
        fields["version"] = f"{rng.randint(1, 4)}.{rng.randint(0, 12)}"
    if kind == "guide" and rng.random() < 0.7:
        fields["effective_date"] = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return Page(path, _frontmatter(fields) + _body(rng, kind, title, device))


def _block(rng: random.Random, device: Device | None) -> str:
    roll = rng.random()
    if roll < 0.55:
        return _paragraph(rng)
    if roll < 0.75:
        return _bullets(rng)
    if roll < 0.9:
        return _table(rng)
    return _snippet(rng, device)


def _section(rng: random.Random, title: str, device: Device | None) -> str:
    blocks = [f"## {title}"] + [_block(rng, device) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.25:
        for _ in range(rng.randint(1, 2)):
            blocks.append(f"### {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}")
            blocks += [_block(rng, device) for _ in range(rng.randint(1, 2))]
    return "\n\n".join(blocks)


def _body(rng: random.Random, kind: str, title: str, device: Device | None) -> str:
    target = min(
        max(int(rng.lognormvariate(math.log(BODY_MEDIAN), BODY_SIGMA)), BODY_MIN), BODY_TARGET_MAX
    )
    parts = [f"# {title}", _paragraph(rng)]
    if device is not None:
        parts.append(f"## Connection defaults\n\n{_table(rng)}")
        parts.append(f"## Register map\n\n{_paragraph(rng)}\n\n{_register_table(device)}")
    closing = []
    if device is not None:
        closing.append(
            f"## Collector snippet\n\n{_fence('yaml', _yaml(_collector_config(rng, device)))}"
        )
    titles = rng.sample(SECTIONS[kind], len(SECTIONS[kind]))
    size = sum(len(p) + 2 for p in parts + closing)
    sections, min_sections = 0, (0 if device else 2)
    while size < target or sections < min_sections:
        name = titles.pop() if titles else f"Notes on the {rng.choice(WORDS)} {rng.choice(WORDS)}"
        section = _section(rng, name, device)
        if size + len(section) + 2 > BODY_MAX:
            if sections >= min_sections:
                break
            continue  # too big a draw for the room left; draw another
        parts.append(section)
        size += len(section) + 2
        sections += 1
    body = "\n\n".join(parts + closing) + "\n"
    assert len(body) <= BODY_MAX, (title, len(body))
    return body


# -- the library ---------------------------------------------------------------------------


def _mkdocs_yml(docs: int, seed: int) -> str:
    return f"""site_name: Synthetic handbook ({docs} docs, seed {seed})
site_description: Generated by bench/synth.py for benchmarks; every vendor and device is fictional.
docs_dir: docs
site_dir: site
theme:
  name: material
plugins:
  - search
  - handbook:
      library: synthetic
      version: 1.0.0
      vocab:
        kind: [{", ".join(KINDS)}]
        equipment_type: [{", ".join(EQUIPMENT)}]
        protocol: [{", ".join(PROTOCOLS)}]
"""


def generate(out: Path, docs: int, seed: int = 0) -> Path:
    """Write the library into `out` and return its mkdocs.yml. A docs folder left by an
    earlier run is replaced, so stale files never change the count; any other
    non-empty docs folder is refused rather than deleted."""
    out = Path(out)
    docs_dir = out / "docs"
    if docs_dir.exists():
        if not (docs_dir / MARKER).exists() and any(docs_dir.iterdir()):
            raise FileExistsError(
                f"{docs_dir} exists and was not made by bench/synth.py; choose another OUT_DIR"
            )
        shutil.rmtree(docs_dir)
    rng = random.Random(seed)
    used: set[str] = set()
    pages = [_page(rng, used) for _ in range(docs)]
    for folder in sorted({str(Path(p.path).parent) for p in pages}):
        (docs_dir / folder).mkdir(parents=True, exist_ok=True)
    docs_dir.mkdir(parents=True, exist_ok=True)
    for page in pages:
        (docs_dir / page.path).write_text(page.text, encoding="utf-8", newline="\n")
    (docs_dir / MARKER).write_text(f"docs={docs} seed={seed}\n", encoding="utf-8")
    config = out / "mkdocs.yml"
    config.write_text(_mkdocs_yml(docs, seed), encoding="utf-8", newline="\n")
    return config


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, metavar="OUT_DIR")
    parser.add_argument("--docs", type=int, required=True, metavar="N")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    args = parser.parse_args(argv)
    if args.docs < 1:
        parser.error("--docs must be at least 1")
    config = generate(args.out, args.docs, args.seed)
    print(
        f"wrote {args.docs} docs under {config.parent / 'docs'}; check with: handbook check --config {config}"
    )


if __name__ == "__main__":
    main()
