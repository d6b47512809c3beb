# What a host agent's tools/browser_supervisor.py becomes (DESIGN.md "Python:
# the spec's own API, in-process"): the one line below, nothing else. The
# host-test plugin (hermes_host.py) installs this file as that module.
from cdp_supervisor.hermes import *  # noqa: F401,F403
