"""`handbook.inbox_records`, a documented path: the module is `handbook.inbox.records`."""

from handbook.inbox.records import *  # noqa: F403
