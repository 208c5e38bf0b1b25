"""The rule codes: the one place a code is written. Every finding is made by a rule here
(``rules.FRONTMATTER_MISSING.at(path, 1)``), and the docs and the configuration refer
to the same objects.

A code is a contract. Authors silence or promote rules by code in `mkdocs.yml`, CI
greps for codes, and `docs/reference/rules.md` documents each one under a heading whose
anchor is the rule's `anchor` (a test keeps the two in step). Codes are never reused; a
retired rule keeps its number. The messages live here too, beside their codes, as
`str.format` templates; a rule with several messages names each (``variant``).

``HB0xx`` codes are configuration errors: they stop the run with exit 2 and cannot be
switched off. All others are findings about a file, and their level is configurable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .findings import Finding, Severity

ERROR, WARN, NOTICE = Severity.ERROR, Severity.WARN, Severity.NOTICE


@dataclass(frozen=True, eq=False)  # each rule is one object: equal and hashed by identity
class Rule:
    code: str
    name: str
    severity: Severity
    """The default; the configuration's `rules` key may change it."""
    summary: str
    messages: Mapping[str, str]
    """Variant -> message template; a rule with one message has the variant ""."""

    @property
    def configurable(self) -> bool:
        return not self.code.startswith("HB0")

    @property
    def anchor(self) -> str:
        """The anchor of the rule's heading (``## HB201 frontmatter-missing``) in
        docs/reference/rules.md, as MkDocs makes it."""
        return f"{self.code.lower()}-{self.name}"

    def at(
        self, path: str, line: int, col: int = 1, /, variant: str = "", **fields: object
    ) -> Finding:
        """A finding at the rule's default severity, its message filled from `fields`
        (`apply_levels` adjusts the severity later)."""
        message = self.messages[variant].format(**fields)
        return Finding(path, max(line, 1), max(col, 1), self.code, message, self.severity)


RULES: dict[str, Rule] = {}
"""Code -> rule, in code order."""


def _rule(
    code: str, name: str, severity: Severity, summary: str, message: str = "", /, **variants: str
) -> Rule:
    if code in RULES:
        raise ValueError(f"rule code {code} is defined twice")
    rule = Rule(code, name, severity, summary, {"": message, **variants} if message else variants)
    RULES[code] = rule
    return rule


# -- configuration (exit 2) ------------------------------------------------------------------

CONFIG_INVALID = _rule(
    "HB001",
    "config-invalid",
    ERROR,
    "The handbook configuration is missing, malformed or has a wrong key or value.",
    option="handbook.{key}: {problem}",
    no_file="no such file; pass --config PATH, create {path} or run `handbook init`",
    unreadable="cannot read: {error}",
    yaml="invalid YAML: {problem}",
    toml="invalid TOML: {problem}",
    not_mapping="the configuration must be a mapping of settings",
    no_entry="no `handbook` entry under `plugins:`; add `- handbook:` with `library` and `version`,"
    " or run `handbook init --adopt`",
    no_table="no `[project.plugins.handbook]` table; add one with `library` and `version`,"
    " or run `handbook init --adopt`",
    entry_not_mapping="handbook: must be a mapping of options",
    docs_dir="docs_dir: {path} is not a directory",
)
VALIDATOR_IMPORT = _rule(
    "HB002",
    "validator-import",
    ERROR,
    "A snippet validator named in the configuration cannot be imported.",
    "handbook.snippet_validators.{lang}: {error}; install the module or fix the name",
)

# -- files ------------------------------------------------------------------------------------

NOT_UTF8 = _rule(
    "HB101",
    "not-utf8",
    ERROR,
    "The file is not valid UTF-8.",
    "is not UTF-8 (byte 0x{byte:02x} at offset {offset}); save the file as UTF-8",
)
SYMLINK = _rule(
    "HB102",
    "symlink",
    ERROR,
    "A symlink inside the docs root; docs must be real files.",
    "is a symlink; replace it with the file itself",
    unopenable="cannot be opened: {error}",
)
SPECIAL_FILE = _rule(
    "HB103",
    "special-file",
    ERROR,
    "A FIFO, socket or device file inside the docs root.",
    "is a special file (FIFO, socket or device); remove it from the docs root",
    unopenable="cannot be opened: {error}",
    irregular="is not a regular file",
)
UNSAFE_PATH = _rule(
    "HB104",
    "unsafe-path",
    ERROR,
    "A path that escapes the docs root or is not portable.",
    escape="is a symlink that escapes the docs root; move the file into the docs root",
    unportable="{problem}; rename the file",
    attached="cannot be attached: its path {problem}; rename the file",
)
PATH_COLLISION = _rule(
    "HB105",
    "path-collision",
    ERROR,
    "Two paths that are the same after case folding or Unicode normalization.",
    "collides with {other} after case folding or Unicode normalization; rename one",
)
RESOURCE_TOO_LARGE = _rule(
    "HB106",
    "resource-too-large",
    ERROR,
    "A file attached to a folder doc is over the size limit.",
    "is {size:,} bytes; attached files are limited to {limit:,} (limits.resource_bytes)",
)

# -- frontmatter ------------------------------------------------------------------------------

FRONTMATTER_MISSING = _rule(
    "HB201",
    "frontmatter-missing",
    ERROR,
    "The file does not start with a `---` frontmatter block.",
    "has no frontmatter; start the file with a `---` line, the fields, and a closing `---`",
)
FRONTMATTER_UNCLOSED = _rule(
    "HB202",
    "frontmatter-unclosed",
    ERROR,
    "The frontmatter block is never closed by `---`.",
    "frontmatter is never closed; add a `---` line after the last field",
)
YAML_SYNTAX = _rule(
    "HB203",
    "yaml-syntax",
    ERROR,
    "The frontmatter is not valid YAML.",
    "frontmatter is not valid YAML: {problem}",
)
FRONTMATTER_NOT_MAPPING = _rule(
    "HB204",
    "frontmatter-not-mapping",
    ERROR,
    "The frontmatter is valid YAML but not a mapping of fields.",
    "frontmatter is {what}, not a mapping of fields like `id: ...`",
)
YAML_ALIAS = _rule(
    "HB205",
    "yaml-alias",
    ERROR,
    "The frontmatter uses YAML anchors or aliases.",
    "frontmatter uses a YAML anchor or alias; write the value out",
)
YAML_TAG = _rule(
    "HB206",
    "yaml-tag",
    ERROR,
    "The frontmatter uses an explicit YAML tag.",
    tag="frontmatter uses the YAML tag {tag}; remove it (quote strings instead)",
    number="`{name}: {text}` is not a number YAML can read; quote it",
    type="`{name}` has a value of type {tag}; use a string",
)
FRONTMATTER_TOO_LARGE = _rule(
    "HB207",
    "frontmatter-too-large",
    ERROR,
    "The frontmatter is over 64 KiB or nested too deeply.",
    size="frontmatter is {size:,} bytes; the limit is {limit:,}: move long content into the body",
    depth="frontmatter is nested deeper than {depth} levels",
)
YAML_KEY = _rule(
    "HB208",
    "yaml-key",
    ERROR,
    "A frontmatter key is not a string, or appears twice.",
    collection="a key is a {kind}; keys must be strings",
    not_string="key {key!r} is not a string; quote it",
    twice="key `{key}` appears twice; keep one",
)
YAML_FLOAT = _rule(
    "HB209",
    "yaml-float",
    ERROR,
    "A frontmatter value is a float; quote it.",
    '`{name}: {text}` is read as a float; quote it ("{text}") or use an integer',
)
YAML_BOOL_WORD = _rule(
    "HB210",
    "yaml-bool-word",
    WARN,
    "A YAML 1.1 word (yes/no/on/off) is read as a boolean.",
    "`{name}: {text}` is read as {value}; write true/false, or quote it for the word",
)
YAML_INT_RANGE = _rule(
    "HB211",
    "yaml-int-range",
    ERROR,
    "An integer is beyond ±(2^53-1), which JSON readers cannot hold exactly.",
    "`{name}: {text}` is too large for JSON readers to hold exactly; quote it",
)

# -- fields -----------------------------------------------------------------------------------

FIELD_MISSING = _rule(
    "HB301",
    "field-missing",
    ERROR,
    "A required field is missing or empty.",
    missing="required field `{field}` is missing; add `{field}:` to the frontmatter",
    empty="required field `{field}` is empty",
)
FIELD_TYPE = _rule(
    "HB302",
    "field-type",
    ERROR,
    "A field has the wrong type or format.",
    string="`{field}` must be a string, not {type}; quote it",
    strings="`{field}` must be a list of strings, like `{field}: [a, b]`",
    lang="`lang` must be a language tag like en, de or pt-BR, not {value!r}",
    date="`effective_date` must be a date like 2026-01-31, not {value!r}",
    no_such_date="`{name}: {text}` is not a real date ({error}); fix it or quote it",
)
ID_PATTERN = _rule(
    "HB303",
    "id-pattern",
    ERROR,
    "The id does not match the id pattern.",
    "id {id!r} must be lowercase dotted words like `device.acme.c100` (letters, digits, `_`, `-`)",
)
ID_DUPLICATE = _rule(
    "HB304",
    "id-duplicate",
    ERROR,
    "Two docs share an id.",
    "id `{id}` is already used{where} by {first}; ids must be unique per language",
)
VOCAB = _rule(
    "HB305",
    "vocab",
    ERROR,
    "A value is outside the library's vocabulary for its field.",
    "`{field}: {text}` is not in the vocabulary; allowed: {allowed}",
)
SUMMARY_LENGTH = _rule(
    "HB306",
    "summary-length",
    ERROR,
    "The summary is longer than the limit.",
    "summary has {chars:,} characters; the limit is {limit:,}: shorten it",
)
FIELD_NAME = _rule(
    "HB307",
    "field-name",
    ERROR,
    "A field's name cannot be offered to agents as a filter.",
    reserved="field `{name}` is named like a parameter of the agent tools ({reserved}); rename it",
    not_identifier="field `{name}` cannot be a filter agents pass: use letters, digits and `_` "
    "(dashes, dots and spaces become `_`)",
    collision="fields `{name}` and `{other}` are both filtered as `{normalised}`; rename one",
)
FIELD_NAME_NORMALISED = _rule(
    "HB308",
    "field-name-normalised",
    NOTICE,
    "A field's name is offered to agents as a filter under its normalised form.",
    "field `{name}` is filtered as `{normalised}` (agents' tool parameters take no `-`, `.` or spaces)",
)

# -- body -------------------------------------------------------------------------------------

BODY_LONG = _rule(
    "HB401",
    "body-long",
    WARN,
    "The body is over the warning limit.",
    "body has {chars:,} characters, over the {limit:,} warning limit: consider splitting it",
)
BODY_TOO_LONG = _rule(
    "HB402",
    "body-too-long",
    ERROR,
    "The body is over the hard limit.",
    "body has {chars:,} characters; the limit is {limit:,}: split the doc",
    file="file has {chars:,} characters, far over the {limit:,} limit; it is not parsed: "
    "split the doc",
)
UNSAFE_HTML = _rule(
    "HB403",
    "unsafe-html",
    ERROR,
    "The body holds script, or HTML that sends the page elsewhere: a `<script>` element, an "
    "event handler, a `javascript:` URL, a `<base>` or a `<meta http-equiv>`.",
    script="`<script>` element: it runs on every reader's page; remove it "
    "(a site-wide script belongs in mkdocs.yml's `extra_javascript`)",
    base="`<base>` element: it sends every relative URL of the page, the site's own scripts "
    "included, to the address it names; remove it and write full addresses where you need them",
    pragma="`<meta http-equiv>` element: it acts on the reader's whole page (`refresh` sends the "
    "reader to another address); remove it and link to the address instead",
    handler="event handler `{name}` {where}: it runs script on the reader's page; "
    "remove the attribute",
    url="`{scheme}` URL in {place}: following it runs script; "
    "link to an http(s) or relative address instead",
)
_PERSONAL = (
    ": every reader and agent would get it; remove it, use an example, or list it under `pii.allow`"
)
PERSONAL_DATA = _rule(
    "HB404",
    "personal-data",
    WARN,
    "The doc holds personal data: an e-mail address, a phone number, an IBAN or a payment "
    "card number.",
    email="e-mail address {shown}" + _PERSONAL,
    phone="phone number {shown}" + _PERSONAL,
    iban="IBAN {shown} (its checksum is valid)" + _PERSONAL,
    card="payment card number {shown} (it passes the Luhn check)" + _PERSONAL,
)

_ROTATE = (
    ": everyone who reads the docs, the site, the bundle or the search index gets it; "
    "remove it from the URL (write a placeholder such as `${{PASSWORD}}`) and rotate it, "
    "since the repository's history keeps it"
)
CREDENTIALS_IN_URL = _rule(
    "HB405",
    "credentials-in-url",
    ERROR,
    "A URL carries a secret: a password (`https://user:password@host/…`) or an access token "
    "as its user name.",
    password="URL {shown} holds a password" + _ROTATE,
    token="URL {shown} holds an access token as its user name" + _ROTATE,
)

# -- snippets ---------------------------------------------------------------------------------

SNIPPET_INVALID = _rule(
    "HB501",
    "snippet-invalid",
    ERROR,
    "A fenced snippet fails its language's validator.",
    "{lang} snippet: {problem}",
)
SNIPPET_VALIDATOR_CRASH = _rule(
    "HB502",
    "snippet-validator-crash",
    ERROR,
    "A snippet validator raised instead of returning errors.",
    "{lang} validator crashed: {error}",
)

# -- includes ---------------------------------------------------------------------------------

INCLUDE_FAILED = _rule(
    "HB511",
    "include-failed",
    ERROR,
    "An include (`--8<--` and the like) that the site's include extension cannot expand.",
    "`{text}` is not expanded: {error}; fix the include, or add the file or section it names",
    page="the include extensions failed on this page: {error}; its includes are not expanded",
    appended="what the include extensions add to every page is missing: {error}; "
    "fix their options in mkdocs.yml (such as `auto_append`)",
    unavailable="`{text}` is left as written: the markdown extension {extension} is not "
    "installed; install it where Handbook runs",
    refused="`{text}` is left as written: the markdown extension {extension} refuses its "
    "options ({error}); fix them in mkdocs.yml",
    too_long="includes make the body {chars:,} characters, far over the {limit:,} limit; "
    "they are not expanded: include less",
    private_key="`{text}` brings in a private key, which would be published; the includes "
    "are not expanded: never include a key file",
)

RENDER_FAILED = _rule(
    "HB512",
    "render-failed",
    WARN,
    "Text the site makes with its plugins or at render time (mkdocs-include-markdown, "
    "mkdocs-macros, mkdocstrings, markdown-exec) that Handbook cannot make.",
    missing_plugin="the plugin `{plugin}` that the site enables is not installed here: pages "
    "get none of its text; install it where Handbook runs",
    extension="the markdown extension `{extension}` cannot be loaded here ({error}): text made "
    "at render time is made without it; install it or fix its options",
    setup="the site's plugins cannot be loaded ({error}): no plugin runs and text made at "
    "render time is left as written; fix the configuration or install what it names",
    raised="{error}: the page is left as written, without the text its plugins make",
    unavailable="`{text}` is left as written: the plugin `{plugin}` {why}",
    autodoc="`{text}` is left as written, agents do not get the documentation it renders: {error}",
    exec="`{text}` is left as written, agents do not get the output of its code: {error}",
    too_long="the page's made text is {chars:,} characters, far over the {limit:,} limit; "
    "it is left as written",
    private_key="the page's made text holds a private key, which would be published; it is "
    "left as written",
)
INVENTORIES_SKIPPED = _rule(
    "HB513",
    "inventories-skipped",
    NOTICE,
    "mkdocstrings inventories are not downloaded: a build is offline.",
    "{count} inventory URL(s) of mkdocstrings' handlers are not fetched (builds are "
    "offline): cross-references to those projects are plain text in agent text",
)

# -- adoption: what a page lacks, derived -------------------------------------------------------

ID_DERIVED = _rule(
    "HB601",
    "id-derived",
    NOTICE,
    "A page has no `id`: it is derived from the page's path (or a skill's `name`).",
    path="id `{id}` derived from the path",
    skill="id `{id}` derived from the skill's `name`",
)
TITLE_DERIVED = _rule(
    "HB602",
    "title-derived",
    NOTICE,
    "A page has no `title`: it is taken from its first heading, the nav, or its file name.",
    heading="title {title!r} taken from the first heading",
    nav="title {title!r} taken from the nav",
    file="title {title!r} made from the file name",
)
SUMMARY_DERIVED = _rule(
    "HB603",
    "summary-derived",
    NOTICE,
    "A page has no `summary`: it is taken from `description`, else its first paragraph.",
    description="summary taken from `description`{cut}",
    paragraph="summary taken from the first paragraph{cut}",
    title="summary taken from the title: the page has no paragraph",
)
KIND_DERIVED = _rule(
    "HB604",
    "kind-derived",
    NOTICE,
    "A page has no `kind`: it comes from the `adopt.kinds` patterns, else the default kind.",
    pattern="kind `{kind}` from the pattern `{pattern}`",
    default="kind `{kind}`, the default kind",
    skill="kind `skill`: a folder with a SKILL.md",
)
ID_DERIVED_TWICE = _rule(
    "HB605",
    "id-derived-twice",
    WARN,
    "Two pages' paths give the same id; the later one is served under another.",
    "id `{id}` is also derived for {first}; this page is served as `{served}`: "
    "give it an id, or pin every id with `handbook adopt --write`",
)


# -- Agent Skills (the specification's rules, for every SKILL.md) ------------------------------

SKILL_NAME = _rule(
    "HB701",
    "skill-name",
    ERROR,
    "A skill's `name` is missing, malformed or not its folder's name.",
    missing="a skill needs a `name`: its folder's name, `{folder}`",
    not_text="`name` must be text, not {type}",
    long="`name` has {chars} characters; the Agent Skills limit is 64",
    grammar="`name` {name!r} may hold only a-z, 0-9 and single hyphens inside a word "
    "(not at either end): try `{suggest}`",
    folder="`name` {name!r} is not its folder's name `{folder}`: rename one to match",
)
SKILL_DESCRIPTION = _rule(
    "HB702",
    "skill-description",
    ERROR,
    "A skill's `description` is missing, empty or over 1,024 characters.",
    missing="a skill needs a `description`: what it does and when to use it",
    empty="`description` is empty: say what the skill does and when to use it",
    not_text="`description` must be text, not {type}",
    long="`description` has {chars:,} characters; the Agent Skills limit is 1,024",
)
SKILL_COMPATIBILITY = _rule(
    "HB703",
    "skill-compatibility",
    ERROR,
    "A skill's `compatibility` is not text of 1 to 500 characters.",
    not_text="`compatibility` must be text, not {type}",
    empty="`compatibility` is empty: leave it out unless the skill has requirements",
    long="`compatibility` has {chars:,} characters; the Agent Skills limit is 500",
)
SKILL_METADATA = _rule(
    "HB704",
    "skill-metadata",
    ERROR,
    "A skill's `metadata` is not a map of text keys to text values.",
    not_map="`metadata` must be a map of keys to text values, not {type}",
    value="`metadata.{key}` must be text, not {type}: quote it",
)
SKILL_ALLOWED_TOOLS = _rule(
    "HB705",
    "skill-allowed-tools",
    WARN,
    "A skill's `allowed-tools` (experimental in the specification) is not one line of "
    "space-separated tool names.",
    "`allowed-tools` must be one line of space-separated tool names, not {type}",
)
SKILL_BODY_LONG = _rule(
    "HB706",
    "skill-body-long",
    WARN,
    "A skill's body is over the specification's recommended 500 lines or about 5,000 tokens.",
    "the skill's body has {lines:,} lines and about {tokens:,} tokens; the Agent Skills "
    "specification recommends under 500 lines and 5,000 tokens: move detail into "
    "`references/` files",
)


# -- pedigree: reviews, invalidations and the fields they rely on -------------------------------

REVIEW_INVALID = _rule(
    "HB801",
    "review-invalid",
    ERROR,
    "A review or invalidation file cannot be used: unreadable, malformed, misnamed or of "
    "another library.",
    "{problem}; fix the record, or remove the file",
    name="the file is named {name}, but the record's id is {id}: a record is kept as "
    "<its id>.json (rename it, or write it again with `handbook review`)",
    library="the record is about library {library!r}, not {expected!r}; remove the file",
    large="the file has {size:,} bytes; a record has at most {limit:,}",
)
REVIEW_UNVERIFIED = _rule(
    "HB802",
    "review-unverified",
    ERROR,
    "A record's signature does not verify with a declared reviewer's key; it is left out.",
    unknown="{problem}; declare the reviewer under `reviews.reviewers`, or remove the file",
    forged="{problem}: the file was changed after it was signed, or signed by another key; "
    "sign it again with `handbook review`, or remove the file",
)
REVIEW_UNKNOWN_DOC = _rule(
    "HB803",
    "review-unknown-doc",
    ERROR,
    "A review names a doc (or a section of it) that the library does not have.",
    doc="reviews doc {doc!r}, which the library does not have; remove the file",
    section="reviews section {section!r} of {doc}, which its current revision does not have",
)
SELF_REVIEW = _rule(
    "HB804",
    "self-review",
    WARN,
    "A review by one of the doc's owners: it is kept and shown, and never counts.",
    "{reviewer} reviews {doc}, which names them in `owners`; a review must come from "
    "someone else to count",
)
APPROVALS_MISSING = _rule(
    "HB805",
    "approvals-missing",
    WARN,
    "A protected doc has fewer approvals of its current revision than the policy requires.",
    "{doc} is protected and has {approvals} of the {required} approvals its current revision "
    "needs{outcome}: ask reviewers for `handbook review {doc} --verdict approve`",
)
PEDIGREE_FIELD = _rule(
    "HB806",
    "pedigree-field",
    ERROR,
    "`owners`, `about`, `retired` or `superseded_by` has a wrong value.",
    owners="`owners` must list names of declared reviewers; {name!r} is not one",
    owners_type="`owners` must be a list of reviewer names, like `owners: [alice]`",
    about="`about` must list URIs (scheme:rest, like `urn:device:acme-ac200` or "
    "`https://…`); {value!r} is not one",
    retired="`retired` must be true or the reason, not {type}",
    successor="`superseded_by` names {successor!r}, which the library does not have",
    self_successor="`superseded_by` names the doc itself",
)


# -- audiences: who may read which docs ----------------------------------------------------------

AUDIENCE_UNKNOWN = _rule(
    "HB901",
    "audience-unknown",
    ERROR,
    "A doc's `audience` is not one the library declares under `audiences.include`.",
    "audience {value!r} is not declared; declared: {declared}",
    undeclared="`audience` is set, but the library declares no audiences: add `audiences:` "
    "to its configuration, or remove the field",
)
AUDIENCE_LINK = _rule(
    "HB902",
    "audience-link",
    ERROR,
    "A doc links to a doc some of its readers may not read: the link would leak it.",
    "links to {target} (audience {narrower}), which readers of {audience} may not read; "
    "link to a doc of a wider audience, or narrow this doc's audience",
)
