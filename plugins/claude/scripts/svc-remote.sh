#!/bin/sh
# svc's Claude Code hook (UserPromptSubmit and Stop): hands the hook's JSON on stdin to `svc remote-hook claude`,
# which answers within a fraction of a second and always exits 0 (docs/agents.md "Sticky REMOTE").
# SVC_NODE is the node that runs svc (svc setup writes it into the hook entry); this folder sits in svc's package,
# two levels below the package root, beside bin/svc.js.
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd) || exit 0
exec "${SVC_NODE:-node}" "$here/../../../bin/svc.js" remote-hook claude
