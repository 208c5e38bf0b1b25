"""Reference only: Handbook ships this file and never runs it."""

raise SystemExit("read this script, do not run it from the bundle")
