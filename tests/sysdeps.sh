#!/bin/sh
# `make sysdeps`: the system packages the tests use, the one step that installs outside the
# project (everything else `make deps` installs goes into the project's own virtualenvs and
# node_modules). Each is checked by what the tests need of it, so a machine that has it some
# other way (a NodeSource Node, a git under /usr/local) is left alone. What is missing is
# installed with apt-get when this runs as root; otherwise the exact command is printed and
# this fails, so `make deps` stops before anything that would fail later for want of it.
#
#   make            runs the rest of `make deps` and the gate
#   python3         /usr/bin/python3: a box sees /usr, not a python under $HOME, so the
#   python3-venv      project's virtualenvs are made from it
#   nodejs, npm     the MCP inspector's CLI and the npm MCP servers (tests/node)
#   chromium,       Selenium drives the approvals page in headless Chromium
#   chromium-driver   (crates/boxmaker/tests/approvals.rs)
#   iproute2,       the egress tests build a network of their own (`ip`), a CA (openssl),
#   openssl, curl     and run curl in boxes (crates/boxmaker/tests/egress*.rs)
#   git             mcp-server-git runs it in a box (/usr/bin or /usr/local/bin)
#   postgresql      the fleet's shared store: the tests start a cluster of their own
#                     (initdb, pg_ctl from /usr/lib/postgresql/N/bin; crates/testkit/src/pg.rs)
set -u
APT_GET=${APT_GET:-apt-get}
need=""

missing() { need="$need $*"; }
on_path() { command -v "$1" >/dev/null 2>&1; }

on_path make || missing make
[ -x /usr/bin/python3 ] || missing python3
if on_path dpkg; then
    # Debian and Ubuntu ship venv's pip apart from python3.
    dpkg -s python3-venv >/dev/null 2>&1 || missing python3-venv
elif [ -x /usr/bin/python3 ]; then
    /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing python3-venv
fi
on_path npm || missing nodejs npm
[ -x /usr/bin/chromium ] || missing chromium
[ -x /usr/bin/chromedriver ] || missing chromium-driver
on_path ip || missing iproute2
on_path openssl || missing openssl
on_path curl || missing curl
[ -x /usr/bin/git ] || [ -x /usr/local/bin/git ] || missing git
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing postgresql

[ -z "$need" ] && exit 0
need=${need# }
command="apt-get install -y $need"
if [ "$(id -u)" = 0 ] && on_path "$APT_GET"; then
    echo "sysdeps: installing $need"
    "$APT_GET" update -qq && DEBIAN_FRONTEND=noninteractive "$APT_GET" install -y -qq $need
    exit $?
fi
if on_path apt-get; then
    echo "sysdeps: missing system packages: $need. Install them, then run \`make deps\` again:" >&2
    echo "    sudo $command" >&2
else
    echo "sysdeps: missing system packages (Debian names): $need. No apt-get here: install them" \
         "with this system's package manager, then run \`make deps\` again." >&2
fi
exit 1
