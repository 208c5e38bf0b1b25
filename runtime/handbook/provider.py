"""`handbook.provider`, a documented path: the module is `handbook.libraries.provider`."""

from handbook.libraries.provider import *  # noqa: F403
