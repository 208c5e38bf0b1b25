"""`handbook_build.snippets`, a documented path: the module is `handbook_build.checks.snippets`."""

from handbook_build.checks.snippets import *  # noqa: F403
