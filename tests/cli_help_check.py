#!/usr/bin/env python3
"""cli_help_check.py NCCLSCOPE SRC - one command-line convention across the verbs (docs/cli.md):

- every option a verb accepts (the getopt_long table of src/cli/VERB.c, the shared filters
  included) is in its --help, which fits 80 columns, starts with "usage: ncclscope VERB" and has an
  examples section that runs the verb, and the exit statuses;
- an option a verb lacks, a short option it lacks and an option without its value are the
  project's usage error in one format ("ncclscope VERB: error: ...", then "Try 'ncclscope VERB
  --help'.", status 2), never getopt's own message;
- the top-level help fits 80 columns, lists every verb and says what export writes."""
import os, re, subprocess, sys

ncs, src = sys.argv[1:3]
VERBS = ["record", "dump", "demo", "export", "report", "diff", "diagnose", "trigger"]
FILTERS = ["comm", "rank", "from", "to", "range", "tag"]
fails = []


def run(*args):
    p = subprocess.run([ncs, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def options(verb):
    """the long options of the verb's getopt_long table(s)"""
    text = open(os.path.join(src, "src", "cli", verb + ".c")).read()
    names = set()
    for block in re.findall(r"struct option \w+\[\] = \{(.*?)\};", text, re.S):
        names.update(re.findall(r'\{"([a-z][a-z0-9-]*)",', block))
        if "NCS_FILTER_OPTIONS" in block:
            names.update(FILTERS)
    return names


for verb in VERBS:
    rc, out, err = run(verb, "--help")
    if rc != 0:
        fails.append("%s --help exited %d" % (verb, rc))
        continue
    lines = out.splitlines()
    if not lines or not lines[0].startswith("usage: ncclscope %s" % verb):
        fails.append("%s --help does not start with 'usage: ncclscope %s'" % (verb, verb))
    for l in lines:
        if len(l) > 80:
            fails.append("%s --help: a line of %d columns: %r" % (verb, len(l), l))
    if "examples:" not in lines:
        fails.append("%s --help has no examples section" % verb)
    else:
        ex = lines[lines.index("examples:") + 1:]
        ex = ex[:ex.index("")] if "" in ex else ex
        if not any(("ncclscope %s" % verb) in l for l in ex):
            fails.append("%s --help: no example runs the verb" % verb)
    if "exit status" not in out:
        fails.append("%s --help does not give the exit statuses" % verb)
    opts = options(verb)
    if len(opts) < 2:
        fails.append("%s: found no option table in src/cli/%s.c" % (verb, verb))
    for o in sorted(opts):
        if not re.search(r"--%s\b" % re.escape(o), out):
            fails.append("%s --help does not list --%s" % (verb, o))
    # errors: the project's, in one format
    for bad, want in (("--no-such-flag", "unknown option '--no-such-flag'"),
                      ("-Z", "unknown option '-Z'")):
        rc, out2, err = run(verb, bad, "x") if verb != "record" else run(verb, bad, "--", "true")
        if rc != 2:
            fails.append("%s %s exited %d, not 2" % (verb, bad, rc))
        if not err.startswith("ncclscope %s: error: %s" % (verb, want)):
            fails.append("%s %s: %r is not 'ncclscope %s: error: %s'" % (verb, bad, err[:120], verb, want))
        if "Try 'ncclscope %s --help'." % verb not in err:
            fails.append("%s %s: no \"Try 'ncclscope %s --help'.\"" % (verb, bad, verb))
        if re.search(r"invalid option|unrecognized option|requires an argument", err):
            fails.append("%s %s: getopt's own message: %r" % (verb, bad, err))
    # an option without its value (the verb's first option that takes one)
    text = open(os.path.join(src, "src", "cli", verb + ".c")).read()
    req = re.findall(r'\{"([a-z][a-z-]*)", (?:required_argument|1),', text)
    if req:
        rc, _, err = run(verb, "--" + req[0])
        if rc != 2 or "ncclscope %s: error: option '--%s' needs a value" % (verb, req[0]) not in err:
            fails.append("%s --%s without a value: %d %r" % (verb, req[0], rc, err[:160]))

rc, out, err = run("--help")
for l in out.splitlines():
    if len(l) > 80:
        fails.append("ncclscope --help: a line of %d columns" % len(l))
for verb in VERBS:
    if not re.search(r"^  %s " % verb, out, re.M):
        fails.append("ncclscope --help does not list %s" % verb)
if not re.search(r"export +.*Perfetto, Chrome JSON, SQLite or OTF2", out):
    fails.append("ncclscope --help does not say export writes Perfetto, Chrome JSON, SQLite and OTF2")
rc, _, err = run("--frob")
if rc != 2 or not err.startswith("ncclscope: error: unknown option '--frob'"):
    fails.append("ncclscope --frob: %d %r" % (rc, err))

for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print("cli help check: ok (%d verbs)" % len(VERBS))
