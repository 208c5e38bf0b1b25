"""`handbook_build.options`, a documented path: the module is `handbook_build.config.options`."""

from handbook_build.config.options import *  # noqa: F403
