"""`handbook.rpc`, a documented path: the module is `handbook.serve.rpc`."""

from handbook.serve.rpc import *  # noqa: F403
