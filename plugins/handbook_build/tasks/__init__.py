"""What the commands do, apart from the command line: release, pack, diff, export,
scaffold, install, adopt a site, pin derived fields (rank 6)."""
